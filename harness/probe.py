"""Lane probes: before a lane is measured, one instance of it is built and called once the way
the checks call it (the active family's ``probe`` hook), in a forked child under a time limit.

How a probe ends decides whether the lane is measured on that release:

- ``ok``: every call was taken; measured.
- ``raised``: a call the release took failed inside the release's own code (e.g. an
  AsyncSqliteSaver calling ``is_alive()`` on an aiosqlite that has none): measured, because that
  failure is evidence about the release, which the checks judge.
- ``refused``: the traceback ends in a call the harness made (its last frame of the project's
  code is followed by no frame of the family's distributions, or by exactly one, the callee,
  which failed on an argument it was given): arguments the release does not accept, a method or
  module it lacks, another constructor. A harness defect, never a finding: not measured, the
  cause naming the call, and ``tests/langgraph/test_probe_locks.py`` fails on it on every lock.
- ``failed``: the lane could not be built, or the probe crashed or hung: not measured, with the
  cause. ``absent``: no instance of the lane can exist on this release (NotApplicable).

The other lanes go on either way.
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import importlib.metadata
import inspect
import re
import tempfile
import time
import traceback
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio

from arib.ground import scratch
from arib.ground.child import ChildOutcome, ChildStatus, run_jobs
from arib.ground.family import Family, active_family
from arib.ground.package import checkout_root, folder, own_folders
from arib.targets.base import BuildContext, NotApplicable, TargetSpec

# A probe answers in well under a second; past this it is a hang of the release (or ours).
PROBE_TIMEOUT_S = 30.0
# What Python raises when a call's arguments do not bind to the callee's signature.
_BINDING = re.compile(r"unexpected keyword argument|positional argument|keyword-only argument|"
                      r"multiple values for argument|takes no arguments")
BUILD_STEP = "build"  # the step in which the lane's builder makes the instance


class ProbeStatus(str, enum.Enum):
    """How a lane's probe ended (see the module)."""

    OK = "ok"
    RAISED = "raised"
    REFUSED = "refused"
    FAILED = "failed"
    ABSENT = "absent"


@dataclass(frozen=True)
class ProbeResult:
    """One lane's probe: how it ended, the call that failed, what it raised, and where the
    harness made the call a release refused (``rejected_call``, naming the line)."""

    lane: str
    status: ProbeStatus
    step: str | None = None
    error: str | None = None
    traceback: str | None = None
    rejected_call: str | None = None
    duration_s: float = 0.0

    @property
    def measurable(self) -> bool:
        """Whether the lane is measured here: its probe's calls were taken (a failure inside
        the release's own code is the checks' evidence)."""
        return self.status in (ProbeStatus.OK, ProbeStatus.RAISED)

    def reason(self, version: str) -> str:
        """Why the lane is not measured on ``version`` (its not-measured line)."""
        if self.status is ProbeStatus.ABSENT:
            return f"not measured, because no instance of it can exist on {version}: {self.error}"
        what = (f"not measured, because its probe failed on {version} at {self.step}: "
                f"{self.error}")
        if self.rejected_call:
            what += (f"; the call is the harness's own ({self.rejected_call}), which this "
                     f"release does not take: a harness defect, fix that call")
        return what

    def to_json(self) -> dict[str, Any]:
        """The JSON form of this result."""
        return {**dataclasses.asdict(self), "status": self.status.value,
                "duration_s": round(self.duration_s, 3)}


@functools.cache
def release_files(distributions: frozenset[str]) -> frozenset[str]:
    """The installed files of ``distributions`` (absolute paths): the release's own code."""
    found: set[str] = set()
    for name in distributions:
        try:
            dist = importlib.metadata.distribution(name)
        except importlib.metadata.PackageNotFoundError:
            continue
        found.update(str(Path(str(dist.locate_file(f))).resolve()) for f in dist.files or ())
    return frozenset(found)


def _of_release(obj: Any, files: frozenset[str]) -> bool:
    """Whether ``obj``'s class is defined in one of the release's ``files``."""
    try:
        source = inspect.getsourcefile(type(obj))
    except TypeError:  # a built-in type
        return False
    return source is not None and str(Path(source).resolve()) in files


_MISSING = object()


def _argument_of(frame: Any, exc: BaseException) -> bool:
    """Whether ``exc``, raised in the callee's ``frame``, is about an argument the callee was
    given (not ``self``): an AttributeError on that very object, or a TypeError naming the
    argument's type (e.g. ``'NoneType' object is not subscriptable``)."""
    code = frame.f_code
    names = code.co_varnames[:code.co_argcount + code.co_kwonlyargcount]
    given = [frame.f_locals.get(n) for n in names if n not in ("self", "cls")]
    if isinstance(exc, AttributeError):
        obj = getattr(exc, "obj", _MISSING)
        return any(value is obj for value in given)
    return any(f"'{type(value).__name__}'" in str(exc) for value in given)


def rejected_call(exc: BaseException, files: Iterable[str], own: Sequence[str] | None = None
                  ) -> str | None:
    """Where the harness made a call that the release refused, or None.

    ``exc`` is a TypeError or AttributeError whose traceback's last frame of the project's
    code (files under ``own``) is followed by no frame of the release (``files``: the call did
    not bind, an unexpected or missing argument, or the release's object lacks the method) or
    by exactly one, the callee, which failed on an argument it was given (None where the
    release reads a channel); or an ImportError raised by an import in the project's code (a
    module or name the release lacks)."""
    if not isinstance(exc, (TypeError, AttributeError, ImportError)):
        return None
    release = frozenset(files)
    tb = list(traceback.walk_tb(exc.__traceback__))
    frames = traceback.extract_tb(exc.__traceback__)
    mine = own_folders() if own is None else tuple(own)
    ours = [i for i, frame in enumerate(frames) if frame.filename.startswith(mine)]
    if not ours:
        return None
    last = frames[ours[-1]]
    callee = [i for i in range(ours[-1] + 1, len(frames))
              if str(Path(frames[i].filename).resolve()) in release]
    if len(callee) > 1 or (callee and isinstance(exc, ImportError)):
        return None  # deeper in the release, or the release's own import: not our call
    if callee:
        if not _argument_of(tb[callee[0]][0], exc):
            return None  # the callee failed on its own state: evidence about the release
    elif any(not f.filename.startswith("<frozen") for f in frames[ours[-1] + 1:]):
        return None  # raised in code neither ours nor the release's (the import system aside)
    elif isinstance(exc, TypeError):
        if _BINDING.search(str(exc)) is None:
            return None
    elif isinstance(exc, AttributeError):
        if not _of_release(getattr(exc, "obj", None), release):
            return None
    where = f"{_relative(last.filename)}:{last.lineno} in {last.name}"
    code = f": {last.line.strip()}" if last.line else ""
    into = f", into {frames[callee[0]].name}()" if callee else ""
    return f"{where}{code}{into}"


def _relative(filename: str) -> str:
    path = Path(filename)
    root = checkout_root() or Path(folder()).parent
    return str(path.relative_to(root)) if path.is_relative_to(root) else filename


def _ended(lane: TargetSpec, steps: Sequence[str], exc: BaseException, started: float,
           family: Family) -> ProbeResult:
    """The result of a probe that ``exc`` stopped at ``steps[-1]``."""
    step = steps[-1] if steps else None
    error = f"{type(exc).__name__}: {exc}"[:400]
    if isinstance(exc, NotApplicable):
        return ProbeResult(lane.name, ProbeStatus.ABSENT, step, error,
                           duration_s=time.perf_counter() - started)
    refused = rejected_call(exc, release_files(family.distributions))
    status = (ProbeStatus.REFUSED if refused else
              ProbeStatus.FAILED if step in (None, BUILD_STEP) else ProbeStatus.RAISED)
    return ProbeResult(lane.name, status, step, error,
                       "".join(traceback.format_exception(type(exc), exc, exc.__traceback__)),
                       refused, time.perf_counter() - started)


def _run_probe(lane: TargetSpec, services: Mapping[str, str], tmpdir: str | None,
               family: Family) -> ProbeResult:
    """In a child: the family's probe of ``lane`` on a fresh root, as a ProbeResult."""
    hook = family.resolve("probe")
    steps: list[str] = []
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="arib-probe-", dir=scratch.child_folder(tmpdir)
                                     ) as tmp:
        build = BuildContext(Path(tmp), "arib-probe", dict(services))
        try:
            anyio.run(hook, lane, build, steps.append, backend="asyncio")
        except Exception as exc:  # noqa: BLE001 - what the release did is the result
            return _ended(lane, steps, exc, started, family)
    return ProbeResult(lane.name, ProbeStatus.OK, duration_s=time.perf_counter() - started)


def _child_result(lane: TargetSpec, outcome: ChildOutcome) -> ProbeResult:
    if outcome.status is ChildStatus.OK:
        return outcome.value  # type: ignore[no-any-return]
    why = {ChildStatus.TIMEOUT: f"did not end within {PROBE_TIMEOUT_S:g} s (hung)",
           ChildStatus.CRASH: f"its child crashed: {outcome.detail[:300]}",
           ChildStatus.RAISED: f"its child raised: {outcome.detail[-300:]}"}[outcome.status]
    return ProbeResult(lane.name, ProbeStatus.FAILED, "probe", why, outcome.detail or None,
                       None, outcome.duration_s)


def probe_lanes(lanes: Sequence[TargetSpec], services: Mapping[str, str], *,
                workers: int = 2, tmpdir: str | None = None) -> dict[str, ProbeResult]:
    """Each lane's probe by the active family's hook, each in a forked child (``workers`` at
    a time, ``PROBE_TIMEOUT_S`` each); {} for a family without a probe."""
    family = active_family()
    if not family.probe or not lanes:
        return {}
    found: dict[str, ProbeResult] = {}

    def done(index: int, outcome: ChildOutcome) -> None:
        found[lanes[index].name] = _child_result(lanes[index], outcome)

    run_jobs([functools.partial(_run_probe, lane, dict(services), tmpdir, family)
              for lane in lanes], workers=workers, timeout_s=PROBE_TIMEOUT_S, on_done=done)
    return {lane.name: found[lane.name] for lane in lanes if lane.name in found}


@dataclass(frozen=True)
class GateProbe:
    """One check run once, one trial, on the lane whose clean runs gate it in admission: held
    or not applicable there, or what stops every bench of this release at its sanity gate."""

    check_id: str
    lane: str
    verdict: str
    reason: str | None = None

    @property
    def stops_bench(self) -> bool:
        """Whether admission's gate 'clean reference holds' fails on this (the whole bench)."""
        return self.verdict in ("violated", "error")

    def to_json(self) -> dict[str, Any]:
        """The JSON form of this gate probe."""
        return dataclasses.asdict(self)


# A gate probe's run may take its check's own time limit, plus this to end its child.
GATE_GRACE_S = 5.0


def probe_gates(checks: Sequence[Any], services: Mapping[str, str], *, workers: int = 2,
                tmpdir: str | None = None) -> list[GateProbe]:
    """Each check once (one trial) on the lane that gates it (its ``reference``, else the
    family's reference), each in a forked child: the checks whose clean reference run would
    fail admission's first sanity gate on this release, and stop every bench of it there."""
    from arib.execute import RunOptions, child_finding, run_check
    from arib.targets.registry import get_target

    family = active_family()
    lanes = [get_target(c.reference) if c.reference else family.resolve("reference")
             for c in checks]
    opts = [RunOptions(params=c.resolve_params({c.trials_param: 1}), services=dict(services),
                       tmpdir=tmpdir) for c in checks]
    limits = [c.timeout_s + GATE_GRACE_S for c in checks]
    outcomes = run_jobs([functools.partial(run_check, c, lane, o)
                         for c, lane, o in zip(checks, lanes, opts, strict=True)],
                        workers=workers, timeout_s=limits)
    found = []
    for check, lane, o, outcome, limit in zip(checks, lanes, opts, outcomes, limits,
                                              strict=True):
        finding = child_finding(check, lane, o, outcome, limit)
        reason = finding.reason or (finding.samples[0] if finding.samples else None)
        found.append(GateProbe(check.id, lane.name, finding.verdict.value,
                               reason[:400] if reason else None))
    return found


def describe(result: ProbeResult) -> str:
    """One line per lane for the ``probe`` command."""
    if result.status is ProbeStatus.OK:
        return f"{result.lane}: ok ({result.duration_s:.2f}s)"
    if result.status is ProbeStatus.ABSENT:
        return f"{result.lane}: absent: {result.error}"
    if result.status is ProbeStatus.RAISED:
        return (f"{result.lane}: measured; the release raised in its own code at "
                f"{result.step}: {result.error} (evidence the checks judge)")
    line = f"{result.lane}: {result.status.value.upper()} at {result.step}: {result.error}"
    if result.rejected_call:
        line += f"\n  harness defect: the release does not take the call at {result.rejected_call}"
    return line


def cmd_probe(args: Any) -> int:
    """``python -m arib --family NAME probe``: every lane's probe (the reference's too) on
    the installed release, one line each (``--json PATH``, ``-`` for stdout, writes them as
    one document); with ``--gates``, every check once on the lane that gates it. Exit 0 when
    every lane that can run here took every call (and no gate would stop the bench), 4 when a
    probe failed, a gate would stop the bench or no lane was probed, 2 for a family without a
    probe."""
    import json

    from arib.checks.registry import load_checks
    from arib.execute import fast_tmpdir, sdk_version
    from arib.ground.errors import UsageError
    from arib.ground.files import atomic_write_text
    from arib.ground.model import ExitCode
    from arib.ground.services import ServiceManager
    from arib.lanes import prepare_lanes
    from arib.targets.registry import family_lanes, parse_lanes

    family = active_family()
    if not family.probe:
        raise UsageError(f"family {family.name!r} has no lane probe (its Family.probe is "
                         f"empty); its lanes are measured without one")
    lanes = parse_lanes(args.lanes) if args.lanes else family_lanes()  # the reference too
    with ServiceManager() as manager:
        prepared = prepare_lanes(lanes, manager, probe=False)
        results = probe_lanes(prepared.lanes, prepared.services, workers=args.workers,
                              tmpdir=fast_tmpdir())
        gates = probe_gates(load_checks(), prepared.services, workers=args.workers,
                            tmpdir=fast_tmpdir()) if args.gates else []
    version = f"{family.name} {sdk_version()}"
    document = {"kind": "arib-probe", "family": family.name, "version": sdk_version(),
                "lanes": {name: r.to_json() for name, r in results.items()},
                "not_measured": {m.name: m.reason for m in prepared.not_measured},
                "gates": [g.to_json() for g in gates]}
    if args.json == "-":
        print(json.dumps(document, indent=1))
    else:
        print(f"probes on {version}:")
        for result in results.values():
            print(describe(result))
        for missing in prepared.not_measured:
            print(f"{missing.name}: {missing.reason}")
        for gate in gates:
            print(f"gate {gate.check_id} on {gate.lane}: {gate.verdict}"
                  + (f" ({gate.reason})" if gate.stops_bench else ""))
        if args.json:
            atomic_write_text(Path(args.json), json.dumps(document, indent=1) + "\n")
    failed = [r for r in results.values()
              if r.status in (ProbeStatus.REFUSED, ProbeStatus.FAILED)]
    stops = [g for g in gates if g.stops_bench]
    return int(ExitCode.ERROR_OR_NOTHING if failed or stops or not results else ExitCode.OK)
