"""Redis: start a throwaway redis-server, or probe the one that ``REDIS_URL`` names."""

from __future__ import annotations

import signal
import ssl

from arib.ground.binaries import ServerBinary
from arib.ground.errors import ServiceError
from arib.ground.services.info import HOST, ServiceInfo
from arib.ground.services.launcher import Launcher, new_password, write_private
from arib.ground.services.redis_probe import redis_probe
from arib.ground.services.urls import mask_url, parse_redis_url


def start_redis(launcher: Launcher, binary: ServerBinary, port: int) -> ServiceInfo | None:
    """Run redis-server on ``port`` with a random password; None when the port was taken."""
    root = launcher.make_folder("arib-redis-")
    password = new_password()
    # The settings, the password among them, go in a file of the private folder: a
    # command line is visible to every user (ps).
    config = root / "redis.conf"
    write_private(config, "".join(f"{key} {value}\n" for key, value in {
        "port": port, "bind": HOST, "save": '""', "appendonly": "no", "dir": f'"{root}"',
        "daemonize": "no", "protected-mode": "yes", "requirepass": password,
    }.items()))
    server = launcher.spawn("redis", [binary.path, str(config)], root, port, signal.SIGTERM)
    url = f"redis://:{password}@{HOST}:{port}/0"

    def ready() -> str | None:
        fields = redis_probe(url, timeout=0.5)
        # The server answering must be ours, not another one that holds the port.
        if fields.get("process_id") != str(server.process.pid):
            return None
        return fields.get("redis_version", "unknown")

    version = launcher.wait_ready(server, ready)
    if version is None:
        return None
    return ServiceInfo(
        "redis", url, version, external=False, pid=server.process.pid, port=port,
        root=str(root), binary=binary,
        settings={"save": "", "appendonly": "no", "auth": "requirepass (random per run)"},
    )


def external_redis(value: str, var: str) -> ServiceInfo:
    """The Redis server that ``value`` (the variable ``var``) names, validated and PINGed."""
    parts = parse_redis_url(value, var)
    url = value.strip()
    try:
        fields = redis_probe(url, timeout=3.0)
    except (OSError, RuntimeError, ssl.SSLError) as exc:
        raise ServiceError(
            f"{var}={mask_url(url)!r} names a Redis server that does not answer PING "
            f"({exc}); the rule: an existing server named by {var} must accept "
            f"connections; fix: start that server, correct {var}, or unset it to let "
            f"the bench start a throwaway redis-server"
        ) from exc
    version = fields.get("redis_version", "unknown")
    return ServiceInfo(
        "redis", url, version, external=True, pid=None, host=parts.hostname or HOST,
        port=parts.port or 6379,
    )
