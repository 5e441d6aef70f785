"""The Redis readiness probe: PING and INFO over raw RESP2, with no client library."""

from __future__ import annotations

import socket
import ssl
from typing import Any
from urllib.parse import unquote, urlsplit

from harness.ground.services.info import HOST


def _resp_encode(*args: str) -> bytes:
    out = [f"*{len(args)}\r\n".encode()]
    for arg in args:
        raw = arg.encode()
        out.append(b"$%d\r\n%s\r\n" % (len(raw), raw))
    return b"".join(out)


def _resp_read(stream: Any) -> Any:
    """Read one RESP2 reply; an error reply is returned as an Exception instance."""
    line = stream.readline()
    if not line.endswith(b"\r\n"):
        raise ConnectionError("connection closed mid-reply")
    kind, body = line[:1], line[1:-2]
    if kind == b"+":
        return body.decode()
    if kind == b"-":
        return RuntimeError(body.decode())
    if kind == b":":
        return int(body)
    if kind == b"$":
        size = int(body)
        if size < 0:
            return None
        data = stream.read(size + 2)
        return data[:-2].decode()
    if kind == b"*":
        return [_resp_read(stream) for _ in range(int(body))]
    raise ConnectionError(f"not a RESP reply: {line[:40]!r}")


def redis_probe(url: str, timeout: float = 2.0) -> dict[str, str]:
    """PING a Redis server with raw RESP (no client library); returns its INFO server fields.

    Raises OSError when the server cannot be reached and RuntimeError when it answers with an
    error (e.g. NOAUTH).
    """
    parts = urlsplit(url)
    host, port = parts.hostname or HOST, parts.port or 6379
    raw = socket.create_connection((host, port), timeout=timeout)
    sock: socket.socket = raw
    if parts.scheme == "rediss":
        sock = ssl.create_default_context().wrap_socket(raw, server_hostname=host)
    with sock, sock.makefile("rb") as stream:
        if parts.password:
            user = unquote(parts.username) if parts.username else None
            auth = ("AUTH", user, unquote(parts.password)) if user else (
                "AUTH", unquote(parts.password))
            sock.sendall(_resp_encode(*auth))
            reply = _resp_read(stream)
            if isinstance(reply, Exception):
                raise reply
        sock.sendall(_resp_encode("PING"))
        reply = _resp_read(stream)
        if isinstance(reply, Exception):
            raise reply
        if reply != "PONG":
            raise RuntimeError(f"PING answered {reply!r}, not 'PONG'")
        sock.sendall(_resp_encode("INFO", "server"))
        info = _resp_read(stream)
        if isinstance(info, Exception):
            raise info
    fields: dict[str, str] = {}
    for row in str(info).splitlines():
        key, sep, value = row.partition(":")
        if sep:
            fields[key.strip()] = value.strip()
    return fields
