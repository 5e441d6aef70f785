"""Forked children: results come back; hangs, crashes and exits are contained."""

from __future__ import annotations

import ctypes
import faulthandler
import os
import signal
import stat
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from arib.ground import owners, proctime, scratch
from arib.ground.child import (
    ChildStatus,
    JobsRefused,
    Watchdog,
    refusing_jobs,
    run_jobs,
    run_one,
)


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


def test_a_stalled_child_does_not_hold_the_only_worker():
    # One worker: the sleeper is started first, stalls (no CPU once a tenth of its 3 s limit
    # has passed), and the quick jobs run beside it instead of waiting for it to end.
    finished: list[int] = []
    jobs = [lambda: time.sleep(1.2)] + [lambda i=i: i for i in range(1, 4)]
    outcomes = run_jobs(jobs, workers=1, timeout_s=3,
                        on_done=lambda index, outcome: finished.append(index))
    assert [o.status for o in outcomes] == [ChildStatus.OK] * 4
    assert finished == [1, 2, 3, 0]


@pytest.mark.parametrize(("share", "expected"), [
    (0.1, [0, 1, 2]),  # a tenth of 30 s is never reached: the sleeper holds the only worker
    (0.0, [1, 2, 0]),  # stalled from STALL_AFTER_S on: the quick jobs run beside it
])
def test_a_short_job_is_judged_stalled_from_its_share_of_the_limit(share, expected):
    finished: list[int] = []
    jobs = [lambda: time.sleep(1.2), lambda: 1, lambda: 2]
    outcomes = run_jobs(jobs, workers=1, timeout_s=30, stall_after_share=share,
                        on_done=lambda index, outcome: finished.append(index))
    assert [o.value for o in outcomes] == [None, 1, 2]
    assert finished == expected


def test_jobs_that_follow_from_a_result_are_queued_at_once_and_numbered_on():
    # Job 0 sleeps; job 1's result brings job 2 (its own limit), which runs and ends while
    # job 0 still sleeps: nothing waits for the first batch to end.
    finished: list[int] = []
    seen: list[tuple[int, object]] = []

    def then(index, outcome):
        seen.append((index, outcome.value))
        return [(lambda: "follow-up", 5.0)] if index == 1 else []

    outcomes = run_jobs([lambda: time.sleep(1.0), lambda: "first"], workers=2, timeout_s=5,
                        on_done=lambda index, outcome: finished.append(index), then=then)
    assert [o.value for o in outcomes] == [None, "first", "follow-up"]
    assert finished == [1, 2, 0]
    assert seen == [(1, "first"), (2, "follow-up"), (0, None)]


def test_the_parent_prepares_each_job_just_before_forking_it():
    # before_fork runs in the parent: what it imports or sets, the job's child inherits.
    prepared: list[int] = []

    def before(index: int) -> None:
        prepared.append(index)
        os.environ["ARIB_TEST_PREPARED"] = str(index)

    try:
        outcomes = run_jobs([lambda: os.environ["ARIB_TEST_PREPARED"]] * 3, workers=1,
                            timeout_s=5, before_fork=before)
    finally:
        os.environ.pop("ARIB_TEST_PREPARED", None)
    assert prepared == [0, 1, 2]
    assert [o.value for o in outcomes] == ["0", "1", "2"]


def test_the_parent_works_while_waiting_once_every_job_is_forked():
    # while_waiting is called once, after the last job was forked, while it still runs.
    calls: list[tuple[int, int]] = []
    started: list[int] = []
    ended: list[int] = []
    outcomes = run_jobs([lambda: time.sleep(0.3), lambda: time.sleep(0.3)], workers=1,
                        timeout_s=5, on_start=started.append,
                        on_done=lambda index, _: ended.append(index),
                        while_waiting=lambda: calls.append((len(started), len(ended))))
    assert [o.status for o in outcomes] == [ChildStatus.OK, ChildStatus.OK]
    assert calls == [(2, 1)]  # the second job forked, the first one done, the second running


def test_a_follow_up_job_has_its_own_time_limit():
    outcomes = run_jobs([lambda: 1], workers=1, timeout_s=5,
                        then=lambda index, _: [(lambda: time.sleep(30), 0.5)] if index == 0
                        else [])
    assert [o.status for o in outcomes] == [ChildStatus.OK, ChildStatus.TIMEOUT]
    assert outcomes[1].duration_s < 5


def test_a_busy_child_keeps_its_worker():
    # A child that computes is not stalled: with one worker the next job waits for it.
    def spin() -> int:
        end = time.perf_counter() + 0.6
        n = 0
        while time.perf_counter() < end:
            n += 1
        return n

    finished: list[int] = []
    run_jobs([spin, lambda: 1], workers=1, timeout_s=2,
             on_done=lambda index, outcome: finished.append(index))
    assert finished == [0, 1]


def _state(pid: int) -> str:
    with open(f"/proc/{pid}/stat", "rb") as handle:
        return handle.read().rsplit(b")", 1)[1].split()[0].decode()


@pytest.mark.skipif(not os.path.isdir("/proc/self/task"), reason="needs Linux /proc")
def test_runnable_tells_a_computing_process_from_a_sleeping_one():
    from arib.ground.child import _runnable

    sleeper = subprocess.Popen(["sleep", "30"])
    try:
        # A loaded machine may take long to exec it, and the loader may wait on the disk (not
        # runnable) before it computes again: wait for three sleeping samples in a row.
        deadline, asleep = time.monotonic() + 30, 0
        while asleep < 3 and time.monotonic() < deadline:
            asleep = asleep + 1 if _state(sleeper.pid) == "S" else 0
            time.sleep(0.05)
        assert asleep == 3, f"sleep never settled asleep (state {_state(sleeper.pid)!r})"
        assert not _runnable(sleeper.pid)  # asleep in nanosleep: waiting, not computing
    finally:
        sleeper.kill()
        sleeper.wait()
    assert _runnable(os.getpid())  # this thread is running while it asks


def test_watchdog_delivers_its_value_when_the_job_cannot_end():
    def stuck() -> str:
        with Watchdog(0.2, lambda: "reported by the watchdog"):
            time.sleep(60)  # a thread the job cannot interrupt
        return "never"

    started = time.perf_counter()
    outcome = run_one(stuck, timeout_s=20)
    assert outcome.status is ChildStatus.OK and outcome.value == "reported by the watchdog"
    assert time.perf_counter() - started < 20


def test_watchdog_cancelled_in_time_changes_nothing():
    def quick() -> str:
        with Watchdog(5.0, lambda: "too early"):
            pass
        time.sleep(0.1)
        return "the job's own value"

    assert run_one(quick, timeout_s=20).value == "the job's own value"


def test_watchdog_outside_a_child_does_nothing():
    with Watchdog(0.0, lambda: 1 / 0):
        time.sleep(0.05)  # no timer thread exists, so nothing fires


# --------------------------------------------------------------------------- temp files and groups


def _gone(pid: int, timeout: float = 10.0) -> bool:
    """True once ``pid`` no longer runs (a zombie waiting for its reaper counts as gone)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            return True
        if state == "Z":
            return True
        time.sleep(0.05)
    return False


def test_a_planted_symlink_at_the_old_stderr_path_is_not_followed(private_tmp: Path) -> None:
    victim = private_tmp.parent / "victim.txt"
    victim.write_text("precious")
    last = int(Path("/proc/sys/kernel/ns_last_pid").read_text())
    planted = range(last + 1, last + 3000)
    for pid in planted:  # where the child's stderr used to go: $TMPDIR/arib-child-<pid>.stderr
        (private_tmp / f"arib-child-{pid}.stderr").symlink_to(victim)

    def noisy() -> int:
        print("noise from the child", file=sys.stderr, flush=True)
        return os.getpid()

    outcome = run_one(noisy, timeout_s=10)
    assert outcome.status is ChildStatus.OK and outcome.value in planted  # a link was there
    assert victim.read_text() == "precious"
    (run_folder,) = private_tmp.glob("arib-run-*")
    assert stat.S_IMODE(run_folder.stat().st_mode) == 0o700


def test_a_killed_child_leaves_no_temporary_files(private_tmp: Path) -> None:
    def litter_then_hang() -> None:
        tempfile.mkdtemp(prefix="arib-")
        with tempfile.NamedTemporaryFile(prefix="arib-", delete=False) as handle:
            handle.write(b"x")
        time.sleep(60)

    outcome = run_one(litter_then_hang, timeout_s=1.5)
    assert outcome.status is ChildStatus.TIMEOUT
    (run_folder,) = private_tmp.glob("arib-run-*")
    assert [p.name for p in run_folder.iterdir()] == [owners.RECORD]  # the killed child's went
    scratch.cleanup()
    assert list(private_tmp.iterdir()) == []


def _fork_grandchild_then_hang(pid_file: Path) -> None:
    grandchild = os.fork()
    if grandchild == 0:
        time.sleep(60)
        os._exit(0)
    pid_file.write_text(str(grandchild))
    time.sleep(60)


def test_a_child_killed_at_its_timeout_takes_what_it_forked_along(tmp_path: Path) -> None:
    pid_file = tmp_path / "grandchild.pid"
    outcome = run_one(lambda: _fork_grandchild_then_hang(pid_file), timeout_s=2)
    assert outcome.status is ChildStatus.TIMEOUT
    assert _gone(int(pid_file.read_text()))


def test_an_interrupted_run_kills_children_and_grandchildren(tmp_path: Path,
                                                               private_tmp: Path) -> None:
    pid_file = tmp_path / "grandchild.pid"
    started: list[int] = []

    def interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGALRM, interrupt)
    try:
        signal.setitimer(signal.ITIMER_REAL, 1.5)
        with pytest.raises(KeyboardInterrupt):
            run_jobs([lambda: _fork_grandchild_then_hang(pid_file)], workers=1, timeout_s=30,
                     on_start=lambda index: started.append(index))
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    assert started == [0]
    assert _gone(int(pid_file.read_text()))
    (run_folder,) = private_tmp.glob("arib-run-*")
    assert [p.name for p in run_folder.iterdir()] == [owners.RECORD]  # only who owns it


def _marks_then_delivers_early(path: str, early: bool) -> str:
    from arib.ground.child import before_result, finish_early

    before_result(lambda: Path(path).write_text("marked"))
    if early:
        finish_early("early")
        raise AssertionError("finish_early returned in a child")
    return "returned"


@pytest.mark.parametrize("early", [True, False])
def test_a_before_result_hook_runs_however_the_result_is_sent(tmp_path: Path,
                                                              early: bool) -> None:
    mark = tmp_path / "mark"
    (out,) = run_jobs([lambda: _marks_then_delivers_early(str(mark), early)], workers=1,
                      timeout_s=30)
    assert out.status is ChildStatus.OK and out.value == ("early" if early else "returned")
    assert mark.read_text() == "marked"


def test_refusing_jobs_forks_nothing_and_says_how_many_were_refused() -> None:
    before = proctime.forks()
    with refusing_jobs():
        assert run_jobs([], workers=1, timeout_s=5) == []  # nothing to run: answered
        with pytest.raises(JobsRefused, match="2 job"):
            run_jobs([lambda: 1, lambda: 2], workers=1, timeout_s=5)
    assert proctime.forks() == before  # refused before any child
    assert [o.value for o in run_jobs([lambda: 3], workers=1, timeout_s=5)] == [3]  # restored
