"""The LangGraph family's tests run in its locked environment (`nox -s langgraph`); run
elsewhere they fail at once, naming the fix, rather than skip."""

from __future__ import annotations

import importlib
import os

import pytest

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
