"""What the service layer hands out: the server a lane can use, or why it cannot be measured."""

from __future__ import annotations

import importlib.util
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from arib.ground.binaries import ServerBinary
from arib.ground.errors import UnknownNameError
from arib.ground.services.urls import mask_url

SERVICES = ("redis", "postgres", "mysql")
ENV_VARS = {"redis": "REDIS_URL", "postgres": "POSTGRES_URL", "mysql": "MYSQL_URL"}
HOST = "127.0.0.1"
# Python packages each service or lane dependency needs: import name -> pip name.
DRIVERS: dict[str, tuple[str, str]] = {
    "redis": ("redis", "redis"),
    "postgres": ("asyncpg", "asyncpg"),
    "mysql": ("pymysql", "pymysql"),
    "asyncpg": ("asyncpg", "asyncpg"),
    "cryptography": ("cryptography", "cryptography"),
    "mongodb": ("pymongo", "pymongo"),
    "dapr": ("dapr", "dapr"),
}


@dataclass(frozen=True)
class ServiceInfo:
    """A server a lane can use: where it is, what version, and whether the bench owns it."""

    name: str
    url: str
    version: str
    external: bool
    pid: int | None
    host: str = HOST
    port: int = 0
    root: str | None = None
    settings: Mapping[str, str] = field(default_factory=dict)
    # The program that runs it (None for a server named by REDIS_URL / POSTGRES_URL).
    binary: ServerBinary | None = None

    def to_json(self) -> dict[str, Any]:
        """The JSON form of this service, its URL's password masked."""
        return {
            "name": self.name,
            "url": mask_url(self.url),
            "version": self.version,
            "external": self.external,
            "pid": self.pid,
            "host": self.host,
            "port": self.port,
            "root": self.root,
            "settings": dict(self.settings),
            "binary": self.binary.to_json() if self.binary is not None else None,
        }


@dataclass(frozen=True)
class NotMeasured:
    """A lane or service that cannot be measured here, and why (with the fix)."""

    name: str
    reason: str

    def to_json(self) -> dict[str, str]:
        """The JSON form of this record."""
        return {"name": self.name, "reason": self.reason}


def missing_python_driver(name: str) -> NotMeasured | None:
    """NotMeasured when the Python package that ``name`` needs is not importable."""
    if name not in DRIVERS:
        raise UnknownNameError(
            f"unknown driver or service {name!r}: use one of {', '.join(sorted(DRIVERS))}"
        )
    module, pip_name = DRIVERS[name]
    if importlib.util.find_spec(module) is None:
        return NotMeasured(name, f"not measured: {pip_name} not installed (pip install {pip_name})")
    return None
