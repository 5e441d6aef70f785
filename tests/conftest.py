"""Shared fixtures: tracing off, a throwaway admission cache, small check parameters."""

from __future__ import annotations

import os

import pytest

os.environ.setdefault("OPENAI_AGENTS_DISABLE_TRACING", "1")


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("ARIB_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.chdir(tmp_path)
