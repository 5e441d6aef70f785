"""The official conformance suite (``langgraph-checkpoint-conformance``) run on our lanes.

A reference run, not one of our checks: per lane, the suite's own ``validate`` runs on savers
built by the lane's builder, each on a fresh root (the suite makes one saver per capability),
and what it reports per capability and per test is kept as an ``OfficialRun``.

The suite calls only the async half of the saver interface (``aput``, ``aget_tuple``, ...). A
lane whose class serves only the sync half (``API`` "sync", e.g. SqliteSaver, whose async
methods raise by design) is bridged the way our checks call it (``arib.checks.langgraph._saver``):
each async method the suite calls runs the saver's own sync method in a worker thread, and the
bridge offers exactly the capabilities whose sync method the class overrides. The run records
which way the saver was called (``Bridge``).
"""

from __future__ import annotations

import enum
import functools
import itertools
import time
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread

from arib.ground.official import SuiteStatus
from arib.targets.base import BuildContext, TargetSpec
from arib.targets.langgraph.lanes import API

SUITE = "langgraph-checkpoint-conformance"
# The saver methods whose async twin (a<name>) the suite calls, one capability each.
METHODS = ("put", "put_writes", "get_tuple", "list", "delete_thread", "delete_for_runs",
           "copy_thread", "prune")
BASE = frozenset({"put", "put_writes", "get_tuple", "list", "delete_thread"})


def suite_version() -> str:
    """The installed version of the official suite, or a sentence saying it is absent."""
    try:
        return metadata.version(SUITE)
    except metadata.PackageNotFoundError:
        return "absent"


class Bridge(str, enum.Enum):
    """How the suite's async calls reach the saver."""

    NATIVE = "native"  # the saver's own async methods
    THREAD = "sync-in-thread"  # the saver's sync methods, each in a worker thread


def bridge_of(lane: TargetSpec) -> Bridge:
    """How the suite reaches the savers of ``lane``: natively unless its class is sync-only."""
    return Bridge.THREAD if API.get(lane.name) == "sync" else Bridge.NATIVE


def _overrides(cls: type, name: str) -> bool:
    from langgraph.checkpoint.base import BaseCheckpointSaver

    return getattr(cls, name, None) is not getattr(BaseCheckpointSaver, name, None)


def thread_bridge(saver: Any) -> Any:
    """A saver whose async methods run ``saver``'s sync ones in a worker thread; it overrides
    only the async methods whose sync twin ``saver``'s class overrides, so that the suite's
    capability detection sees what the class really offers."""
    from langgraph.checkpoint.base import BaseCheckpointSaver

    def forward(name: str) -> Any:
        async def method(self: Any, *args: Any, **kwargs: Any) -> Any:
            return await anyio.to_thread.run_sync(
                functools.partial(getattr(self.inner, name), *args, **kwargs))
        method.__name__ = f"a{name}"
        return method

    async def alist(self: Any, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        items = await anyio.to_thread.run_sync(lambda: list(self.inner.list(*args, **kwargs)))
        for item in items:
            yield item

    def init(self: Any, inner: Any) -> None:
        BaseCheckpointSaver.__init__(self, serde=inner.serde)
        self.inner = inner

    cls = type(saver)
    namespace: dict[str, Any] = {
        "__init__": init,
        "get_next_version": lambda self, current, channel: self.inner.get_next_version(
            current, channel)}
    for name in METHODS:
        if _overrides(cls, name):
            namespace[f"a{name}"] = alist if name == "list" else forward(name)
    bridged = type(f"ThreadBridged{cls.__name__}", (BaseCheckpointSaver,), namespace)
    return bridged(saver)


def exception_line(trace: str | None) -> str | None:
    """The line naming the exception in a formatted traceback (its type and the first line
    of its message), shortened; None for no traceback."""
    if trace is None:
        return None
    lines = trace.strip().splitlines()
    frames = [i for i, line in enumerate(lines) if line.startswith("  File ")]
    after = lines[frames[-1] + 1:] if frames else lines
    found = next((line for line in after if line and not line.startswith(" ")),
                 lines[-1] if lines else "")
    return found[:300]


@dataclass(frozen=True)
class SuiteTest:
    """One official test on one lane: its capability, name, and whether it passed."""

    capability: str
    name: str
    passed: bool
    error: str | None = None  # the suite's message for a failure (first line, shortened)

    @property
    def key(self) -> str:
        """``capability/name``: a test's name across the suite."""
        return f"{self.capability}/{self.name}"

    def to_json(self) -> dict[str, Any]:
        """The JSON form of this test's result."""
        return {"capability": self.capability, "name": self.name, "passed": self.passed,
                "error": self.error}


@dataclass(frozen=True)
class CapabilityOutcome:
    """What the suite reported for one capability on one lane."""

    capability: str
    detected: bool  # the saver's class offers it (the suite's own detection)
    passed: int
    failed: int
    skipped: int
    failing: tuple[str, ...]  # names of the failed tests

    @property
    def base(self) -> bool:
        """Whether the suite counts it among the base capabilities every saver must offer."""
        return self.capability in BASE

    def to_json(self) -> dict[str, Any]:
        """The JSON form of this capability's outcome."""
        return {"capability": self.capability, "base": self.base, "detected": self.detected,
                "passed": self.passed, "failed": self.failed, "skipped": self.skipped,
                "failing": list(self.failing)}


@dataclass(frozen=True)
class OfficialRun:
    """One run of the official suite on one lane of one version."""

    lane: str
    version: str  # the family's version label
    suite_version: str
    bridge: Bridge
    status: SuiteStatus
    conformance_level: str | None  # the suite's own (FULL, BASE+PARTIAL, BASE, NONE)
    capabilities: tuple[CapabilityOutcome, ...]
    tests: tuple[SuiteTest, ...]
    duration_s: float
    error: str | None = None  # why the suite did not run to its end
    stopped_at: str | None = None  # the test at which ``run_suite``'s ``stop_at`` ended it

    @property
    def failing(self) -> frozenset[str]:
        """Keys (``capability/name``) of the tests that failed."""
        return frozenset(t.key for t in self.tests if not t.passed)

    @property
    def passed(self) -> int:
        """How many tests passed."""
        return sum(1 for t in self.tests if t.passed)

    @property
    def failed(self) -> int:
        """How many tests failed."""
        return len(self.tests) - self.passed

    @property
    def skipped(self) -> int:
        """How many capabilities the suite skipped (not detected on the saver's class)."""
        return sum(c.skipped for c in self.capabilities)

    def to_json(self) -> dict[str, Any]:
        """The JSON form of this run."""
        return {"lane": self.lane, "version": self.version, "suite": SUITE,
                "suite_version": self.suite_version, "bridge": self.bridge.value,
                "status": self.status.value, "conformance_level": self.conformance_level,
                "passed": self.passed, "failed": self.failed, "skipped": self.skipped,
                "failing": sorted(self.failing), "error": self.error,
                "stopped_at": self.stopped_at,
                "duration_s": round(self.duration_s, 3),
                "capabilities": [c.to_json() for c in self.capabilities],
                "tests": [t.to_json() for t in self.tests]}


class _Stop(BaseException):
    """Raised by ``run_suite``'s progress callback to end the suite at a ``stop_at`` test."""


async def run_suite(lane: TargetSpec, root: Path, services: Mapping[str, str], version: str,
                    stop_at: Callable[[SuiteTest], bool] | None = None) -> OfficialRun:
    """The official suite's ``validate`` on savers of ``lane``, each built on a fresh folder
    under ``root``; the suite's failure to run becomes an ``error`` run, never an exception.
    ``stop_at``: the run ends at the first test for which it is true (``stopped_at``), as a
    check stops at its first violation; its capabilities are then not summed up."""
    from langgraph.checkpoint.conformance import checkpointer_test, validate
    from langgraph.checkpoint.conformance.report import ProgressCallbacks

    bridge = bridge_of(lane)
    numbers = itertools.count()

    async def factory() -> AsyncIterator[Any]:
        n = next(numbers)
        folder = root / f"official-{n}"
        folder.mkdir(parents=True)
        handle = await lane.build(BuildContext(folder, f"official-{n}", dict(services)))
        try:
            yield thread_bridge(handle.session) if bridge is Bridge.THREAD else handle.session
        finally:
            await handle.dispose()

    tests: list[SuiteTest] = []

    def on_test(capability: str, name: str, passed: bool, error: str | None) -> None:
        tests.append(SuiteTest(capability, name, passed, exception_line(error)))
        if stop_at is not None and stop_at(tests[-1]):
            # Not an Exception: the suite catches those per test, and this ends the run
            # (the suite's own cleanup still disposes of the saver on the way out).
            raise _Stop

    started = time.perf_counter()
    registered = checkpointer_test(name=lane.name)(factory)
    try:
        report = await validate(registered, progress=ProgressCallbacks(on_test_result=on_test))
    except _Stop:
        return OfficialRun(lane.name, version, suite_version(), bridge, SuiteStatus.FAILED,
                           None, (), tuple(tests), time.perf_counter() - started,
                           stopped_at=tests[-1].key)
    except Exception as exc:  # noqa: BLE001 - the suite could not run: a result, not a crash
        return OfficialRun(lane.name, version, suite_version(), bridge, SuiteStatus.ERROR, None,
                           (), tuple(tests), time.perf_counter() - started,
                           f"the suite stopped: {exc!r}"[:600])
    capabilities = tuple(
        CapabilityOutcome(name, r.detected, r.tests_passed, r.tests_failed, r.tests_skipped,
                          tuple(t.name for t in tests if t.capability == name and not t.passed))
        for name, r in report.results.items())
    status = SuiteStatus.FAILED if any(not t.passed for t in tests) else SuiteStatus.PASSED
    return OfficialRun(lane.name, version, suite_version(), bridge, status,
                       report.conformance_level(), capabilities, tuple(tests),
                       time.perf_counter() - started)


def reference_run(lane: TargetSpec, services: Mapping[str, str], tmpdir: str | None,
                  version: str) -> OfficialRun:
    """In a child: the suite on the clean ``lane``, in a private temporary folder."""
    import tempfile

    with tempfile.TemporaryDirectory(prefix="arib-official-", dir=tmpdir) as tmp:
        return anyio.run(run_suite, lane, Path(tmp), services, version, backend="asyncio")


def reference_runs(lanes: Sequence[TargetSpec], services: Mapping[str, str], *,
                   version: str, workers: int = 1, timeout_s: float = 300.0,
                   tmpdir: str | None = None) -> tuple[OfficialRun, ...]:
    """The suite on each clean lane, each in a forked child under ``timeout_s``; a child that
    delivers nothing becomes an ``error`` run naming why."""
    from arib.ground.child import ChildStatus, run_jobs

    jobs = [functools.partial(reference_run, lane, dict(services), tmpdir, version)
            for lane in lanes]
    outcomes = run_jobs(jobs, workers=workers, timeout_s=timeout_s)
    runs = []
    for lane, outcome in zip(lanes, outcomes, strict=True):
        if outcome.status is ChildStatus.OK:
            runs.append(outcome.value)
        else:
            runs.append(OfficialRun(
                lane.name, version, suite_version(), bridge_of(lane), SuiteStatus.ERROR, None,
                (), (), outcome.duration_s,
                f"the suite's child {outcome.status.value} (limit {timeout_s:g} s): "
                f"{outcome.detail[:300]}"))
    return tuple(runs)
