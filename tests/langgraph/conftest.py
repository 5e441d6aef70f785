"""The LangGraph family's tests run in its locked environment (`nox -s langgraph`); run
elsewhere they fail at once, naming the fix, rather than skip."""

from __future__ import annotations

import importlib
import os
from collections.abc import Iterator, Mapping

import pytest

from arib.ground.services import ServiceManager

try:
    importlib.import_module("langgraph.checkpoint.sqlite")
except ImportError:
    raise pytest.UsageError(
        "tests/langgraph needs the LangGraph family's environment (langgraph-checkpoint, "
        "-sqlite, -postgres); run them with `nox -s langgraph`, or install "
        "harness/locks/langgraph/langgraph-<version>.txt") from None

os.environ.setdefault("OPENAI_AGENTS_DISABLE_TRACING", "1")


@pytest.fixture(autouse=True)
def _langgraph_family(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every test here measures the LangGraph family (children inherit it)."""
    monkeypatch.setenv("ARIB_FAMILY", "langgraph")


# Whether a PostgreSQL server can run here (system or embedded binaries).
HAVE_POSTGRES = ServiceManager(environ={}).availability("postgres") is None


@pytest.fixture(scope="module")
def services() -> Iterator[Mapping[str, str]]:
    """One throwaway PostgreSQL for a test module (none when its binaries are missing)."""
    with ServiceManager(environ={}) as manager:
        if HAVE_POSTGRES:
            manager.start("postgres")
        yield dict(manager.services)
