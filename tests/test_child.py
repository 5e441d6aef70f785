"""Forked children: results come back; hangs, crashes and exits are contained."""

from __future__ import annotations

import ctypes
import faulthandler
import os
import time

from harness.child import ChildStatus, run_jobs, run_one


def test_value_comes_back():
    outcome = run_one(lambda: {"answer": 42}, timeout_s=10)
    assert outcome.status is ChildStatus.OK and outcome.value == {"answer": 42}


def test_exception_is_reported_with_traceback():
    def boom():
        raise ValueError("inside the child")

    outcome = run_one(boom, timeout_s=10)
    assert outcome.status is ChildStatus.RAISED and "inside the child" in outcome.detail


def test_hang_is_killed_at_timeout():
    started = time.perf_counter()
    outcome = run_one(lambda: time.sleep(60), timeout_s=0.5)
    assert outcome.status is ChildStatus.TIMEOUT
    assert time.perf_counter() - started < 10


def test_os_exit_is_a_crash():
    outcome = run_one(lambda: os._exit(3), timeout_s=10)
    assert outcome.status is ChildStatus.CRASH and "status 3" in outcome.detail


def _segfault() -> None:
    faulthandler.disable()  # keep pytest's fault dump out of the log; the status says enough
    ctypes.string_at(0)


def test_segfault_is_a_crash():
    outcome = run_one(_segfault, timeout_s=10)
    assert outcome.status is ChildStatus.CRASH and "SIGSEGV" in outcome.detail


def test_many_jobs_in_parallel_keep_order():
    outcomes = run_jobs([lambda i=i: i * i for i in range(7)], workers=3, timeout_s=10)
    assert [o.value for o in outcomes] == [i * i for i in range(7)]


def test_large_result_is_read_whole():
    outcome = run_one(lambda: "x" * 2_000_000, timeout_s=10)
    assert outcome.status is ChildStatus.OK and len(outcome.value) == 2_000_000
