"""What a lane on a server needs of the run: the URL of its service, and a live server."""

from __future__ import annotations

from urllib.parse import urlsplit

from arib.ground.errors import ServiceError
from arib.targets.base import BuildContext


def service_url(ctx: BuildContext, service: str, lane: str) -> str:
    """The URL of ``service`` the run started for ``lane``; ServiceError naming the fix."""
    url = ctx.services.get(service)
    if not url:
        raise ServiceError(
            f"target {lane!r} needs the {service!r} service but BuildContext.services has no "
            f"{service!r} URL (has {sorted(ctx.services)!r}); fix: start it with "
            f"arib.ground.services.ServiceManager().start({service!r}) and pass manager.services"
        )
    return url


def require_tcp(url: str, lane: str, service: str) -> None:
    """Fail the build (not the trial) when the server no longer accepts connections."""
    import socket

    parts = urlsplit(url)
    host, port = parts.hostname or "127.0.0.1", parts.port or 5432
    try:
        with socket.create_connection((host, port), timeout=2.0):
            pass
    except OSError as exc:
        raise ServiceError(
            f"target {lane!r}: the {service} server at {host}:{port} refuses connections "
            f"({type(exc).__name__}: {exc}); the rule: a lane is built only on a live server; "
            f"fix: check that the server is still running (ServiceManager.check({service!r})) "
            f"and restart the run"
        ) from exc
