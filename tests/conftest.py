"""Shared fixtures: tracing off, a throwaway admission cache, small check parameters."""

from __future__ import annotations

import os
import signal
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest

os.environ.setdefault("OPENAI_AGENTS_DISABLE_TRACING", "1")


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("ARIB_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.chdir(tmp_path)


@pytest.fixture(autouse=True)
def _stop_signals_not_ignored():
    """Each test starts with SIGINT, SIGTERM and SIGHUP at Python's defaults.

    A shell that starts a command in the background without job control (``cmd &``) starts
    it with SIGINT ignored, and an ignored stop signal stays ignored by design (see
    ``test_an_ignored_sighup_stays_ignored``); the tests that stop a run or a server with a
    signal, here or in a process they start (which inherits what is ignored), are about the
    other case.
    """
    defaults = {signal.SIGINT: signal.default_int_handler, signal.SIGTERM: signal.SIG_DFL,
                signal.SIGHUP: signal.SIG_DFL}
    saved = {signum: signal.getsignal(signum) for signum in defaults}
    for signum, handler in defaults.items():
        if saved[signum] is signal.SIG_IGN:
            signal.signal(signum, handler)
    yield
    for signum, handler in saved.items():
        signal.signal(signum, handler)


@pytest.fixture
def private_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The temporary folder of this test (what $TMPDIR would be); the run's folders go at end."""
    from arib.ground import scratch

    base = tmp_path / "tmp"
    base.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(base))
    yield base
    scratch.cleanup()


@pytest.fixture(scope="module")
def redis_services() -> Iterator[Mapping[str, str]]:
    """The service URLs of one throwaway redis-server per test module (none if it cannot run)."""
    from arib.ground.services import ServiceManager
    from tests.checkrun import HAVE_REDIS

    with ServiceManager(environ={}) as manager:
        if HAVE_REDIS:
            manager.start("redis")
        yield dict(manager.services)
