"""arib.ground.proctime: the process's age, read from the kernel."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

from arib.ground import proctime
from arib.ground.proctime import process_age_s


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_a_process_age_counts_from_its_start_and_grows():
    first = process_age_s()
    time.sleep(0.05)
    second = process_age_s()
    assert first is not None and second is not None
    assert 0 < first < second
    # A fresh interpreter is younger than this test's process, and young.
    code = "from arib.ground.proctime import process_age_s; print(process_age_s())"
    child = float(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                                 check=True).stdout)
    assert 0 <= child < second
    assert child < 5


def test_no_proc_gives_none(monkeypatch):
    def missing(*args, **kwargs):  # type: ignore[no-untyped-def]
        raise FileNotFoundError("/proc/self/stat")

    monkeypatch.setattr("builtins.open", missing)
    assert process_age_s() is None


def test_the_first_fork_is_recorded_once(monkeypatch):
    monkeypatch.setattr(proctime, "_FIRST_FORK_S", None)
    ages = iter([1.25, 7.5])
    monkeypatch.setattr(proctime, "process_age_s", lambda: next(ages))
    assert proctime.first_fork_s() is None
    proctime.note_first_fork()
    proctime.note_first_fork()
    assert proctime.first_fork_s() == 1.25
    assert proctime.forks() >= 2  # every child counted, not only the first
    proctime.forget_first_fork()  # a new run in the same process counts its own
    assert proctime.forks() == 0
    proctime.note_first_fork()
    assert proctime.first_fork_s() == 7.5 and proctime.forks() == 1
