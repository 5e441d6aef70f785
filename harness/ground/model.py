"""The result types every part of the bench shares: verdicts, findings, mutants, admissions.

Each concept has one frozen dataclass with a ``to_json()``; verdicts and statuses are Enums.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping
from dataclasses import InitVar, dataclass, field
from typing import Any


class Verdict(str, enum.Enum):
    """What a check concluded about one invariant on one target."""

    HELD = "held"
    VIOLATED = "violated"
    NOT_APPLICABLE = "not_applicable"
    ERROR = "error"


class MutantKind(str, enum.Enum):
    """Where a mutant came from."""

    GENERATED = "generated"
    HANDWRITTEN = "handwritten"


class MutantStatus(str, enum.Enum):
    """The outcome of a mutant under a check (or on a lane, over every check), over reruns."""

    # Every rerun gave the expected verdict (violated): the check sees the defect.
    KILLED = "killed"
    # No rerun gave the expected verdict: the check does not see the defect.
    SURVIVED = "survived"
    # Some reruns gave the expected verdict and some did not: a kill that does not repeat.
    FLAKY = "flaky"
    # A rerun ran past its time limit and none was killed; a kill only for a check whose
    # invariant is "does not hang" (CheckSpec.hang_invariant).
    TIMEOUT = "timeout"
    # The harness could not judge the mutant (a crash, a target that could not be built).
    ERROR = "error"
    # Bytecode-identical to the original, or waived by a written reason: nothing to detect.
    EQUIVALENT = "equivalent"
    # Bytecode-identical to another mutant of the same unit: judged once, as that mutant.
    DUPLICATE = "duplicate"
    # No check executes the mutant's changed lines on that lane (measured): not run.
    NO_COVERAGE = "no_coverage"
    # The mutant can never fire on that lane, by the lane's verified claims: not run.
    NOT_APPLICABLE = "not_applicable"
    # The check's clean base already breaks (or cannot judge) the invariant there, so a
    # kill would prove nothing: not run, counted neither for nor against the check.
    NOT_JUDGEABLE = "not_judgeable"
    # Another check already killed the mutant on that lane, and the survey stops a mutant at
    # its first kill: this check was not run on it (counted neither for nor against it).
    NOT_RUN = "not_run"


class ExitCode(enum.IntEnum):
    """Exit codes of every command of the bench."""

    OK = 0
    VIOLATED = 1
    USAGE = 2
    REGRESSION = 3
    ERROR_OR_NOTHING = 4


class Loop(str, enum.Enum):
    """The event loop a run uses: asyncio's own, or uvloop (a check, a bench, a parity lane)."""

    ASYNCIO = "asyncio"
    UVLOOP = "uvloop"

    def backend_options(self) -> dict[str, Any]:
        """``anyio.run`` backend options for this loop."""
        return {"use_uvloop": True} if self is Loop.UVLOOP else {}

    @classmethod
    def parse(cls, text: str) -> Loop:
        """The loop named ``text``; UsageError naming it when it is unknown, or when it is
        uvloop and uvloop is not installed (every command's ``--loop`` and ``--loops``)."""
        import importlib.util

        from arib.ground.errors import UsageError

        try:
            loop = cls(text)
        except ValueError:
            known = ", ".join(m.value for m in cls)
            raise UsageError(f"unknown event loop {text!r}: use one of {known}") from None
        if loop is cls.UVLOOP and importlib.util.find_spec("uvloop") is None:
            raise UsageError("event loop 'uvloop' asked for but uvloop is not installed; "
                             "install uvloop or use asyncio")
        return loop


@dataclass(frozen=True)
class Counts:
    """Violation counters of a finding, summed over its trials.

    ``wrong_result``: calls that returned, with a wrong result (a read that showed the wrong
    items, a pop that returned another item, a refused valid value); ``raised``: calls the
    invariant says must succeed that raised an exception instead. Before the two were told
    apart both were one counter, ``errors``; a check not yet split still passes ``errors=``,
    which is counted as ``wrong_result`` (what it counted most). The JSON form keeps
    ``errors``, their sum, so that readers of the old form read the same total
    (``from_json`` states the rule for files written before the split).
    """

    lost: int = 0
    duplicated: int = 0
    foreign: int = 0
    wrong_result: int = 0
    raised: int = 0
    errors: InitVar[int] = 0  # the old, unsplit counter: added to wrong_result

    def __post_init__(self, errors: int) -> None:
        if errors:
            object.__setattr__(self, "wrong_result", self.wrong_result + errors)

    def __add__(self, other: Counts) -> Counts:
        return Counts(
            self.lost + other.lost,
            self.duplicated + other.duplicated,
            self.foreign + other.foreign,
            self.wrong_result + other.wrong_result,
            self.raised + other.raised,
        )

    @property
    def total(self) -> int:
        """All counters summed."""
        return self.lost + self.duplicated + self.foreign + self.wrong_result + self.raised

    def to_json(self) -> dict[str, int]:
        """The JSON form of these counts; ``errors`` is wrong_result + raised, the one counter
        of the form written before the split (kept for its readers)."""
        return {
            "lost": self.lost,
            "duplicated": self.duplicated,
            "foreign": self.foreign,
            "wrong_result": self.wrong_result,
            "raised": self.raised,
            "errors": self.wrong_result + self.raised,
        }

    def labelled(self) -> dict[str, int]:
        """The counters people see, by the names that say what they count (no ``errors``)."""
        return {k: v for k, v in self.to_json().items() if k != "errors"}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Counts:
        """Counts from their JSON form; a missing counter is 0. The rule for a form written
        before the split (``errors`` and no ``wrong_result``): its ``errors`` is read as
        ``wrong_result``, with ``raised`` 0, since the old form cannot tell them apart."""
        split = "wrong_result" in data or "raised" in data
        return cls(lost=int(data.get("lost", 0)), duplicated=int(data.get("duplicated", 0)),
                   foreign=int(data.get("foreign", 0)),
                   wrong_result=int(data.get("wrong_result" if split else "errors", 0)),
                   raised=int(data.get("raised", 0)) if split else 0)


# ``errors`` is an init-only argument: without its class attribute (the dataclass leaves the
# default there) reading ``counts.errors`` fails loudly instead of giving 0.
delattr(Counts, "errors")


@dataclass(frozen=True)
class Trial:
    """One trial of a check: its seed, whether it broke the invariant, and what it saw."""

    index: int
    seed: int
    violated: bool
    counts: Counts = Counts()
    mode: str | None = None
    sample: str | None = None
    ops: tuple[str, ...] = ()
    # The JSON form of the trial's schedule (arib.ground.schedule.Schedule.to_json) when
    # its actors ran under the scheduler; None for a check that starts no actors.
    schedule: Mapping[str, Any] | None = None

    def to_json(self) -> dict[str, Any]:
        """The JSON form of this trial."""
        return {
            "index": self.index,
            "seed": self.seed,
            "violated": self.violated,
            "counts": self.counts.to_json(),
            "mode": self.mode,
            "sample": self.sample,
            "ops": list(self.ops),
            "schedule": dict(self.schedule) if self.schedule is not None else None,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Trial:
        """A trial from its JSON form."""
        return cls(
            index=int(data["index"]),
            seed=int(data["seed"]),
            violated=bool(data["violated"]),
            counts=Counts.from_json(data.get("counts", {})),
            mode=data.get("mode"),
            sample=data.get("sample"),
            ops=tuple(data.get("ops", ())),
            schedule=data.get("schedule"),
        )


@dataclass(frozen=True)
class Finding:
    """The verdict of one check on one target, with the evidence behind it."""

    invariant_id: str
    invariant: str
    fault: str
    target: str
    sdk_version: str
    python_version: str
    verdict: Verdict
    trials: int
    violating_trials: int
    counts: Counts
    seeds: tuple[int, ...]
    duration_s: float
    params: Mapping[str, Any] = field(default_factory=dict)
    samples: tuple[str, ...] = ()
    modes: Mapping[str, int] = field(default_factory=dict)
    reason: str | None = None
    traceback: str | None = None
    replay: str | None = None
    ops: tuple[str, ...] = ()
    service_version: str | None = None
    # the modes of the violating trials alone (``modes`` counts every trial's): how the cell
    # is violated, which a later version can change while it stays violated
    violation_modes: Mapping[str, int] = field(default_factory=dict)
    # A scheduled check's: the schedule of the trial the replay reruns (its JSON form), and
    # over every trial the decisions taken and how many of them the scheduler controlled.
    schedule: Mapping[str, Any] | None = None
    control: Mapping[str, int] | None = None
    # The run ended at its time limit (a trial past the check's timeout, or a child killed at
    # its hard limit): an outcome of the run, not a mode of its trials; the verdict is error.
    timed_out: bool = False

    def to_json(self) -> dict[str, Any]:
        """The JSON form of this finding (the schedule fields only for a scheduled check)."""
        return {
            "invariant_id": self.invariant_id,
            "invariant": self.invariant,
            "fault": self.fault,
            "target": self.target,
            "sdk_version": self.sdk_version,
            "python_version": self.python_version,
            "verdict": self.verdict.value,
            "trials": self.trials,
            "violating_trials": self.violating_trials,
            "counts": self.counts.to_json(),
            "seeds": list(self.seeds),
            "duration_s": round(self.duration_s, 4),
            "params": dict(self.params),
            "samples": list(self.samples),
            "modes": dict(self.modes),
            "reason": self.reason,
            "traceback": self.traceback,
            "replay": self.replay,
            "ops": list(self.ops),
            "service_version": self.service_version,
            "violation_modes": dict(self.violation_modes),
            "timed_out": self.timed_out,
        } | ({"schedule": dict(self.schedule) if self.schedule is not None else None,
              "control": dict(self.control)} if self.control is not None else {})

    @property
    def controlled_share(self) -> float | None:
        """The share of the decisions the scheduler controlled, over every trial; None for
        a check that starts no actors."""
        if self.control is None:
            return None
        total = self.control.get("decisions", 0)
        return self.control.get("controlled", 0) / total if total else 1.0

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Finding:
        """A finding from its JSON form; one written before ``timed_out`` existed reads as
        timed out when it carries the old mark (``recorded_timeout``), which leaves its modes."""
        timed_out = recorded_timeout(data)
        modes = {k: v for k, v in dict(data.get("modes", {})).items()
                 if not (timed_out and "timed_out" not in data and k == LEGACY_TIMEOUT_MODE)}
        return cls(
            invariant_id=data["invariant_id"],
            invariant=data["invariant"],
            fault=data["fault"],
            target=data["target"],
            sdk_version=data["sdk_version"],
            python_version=data["python_version"],
            verdict=Verdict(data["verdict"]),
            trials=int(data["trials"]),
            violating_trials=int(data["violating_trials"]),
            counts=Counts.from_json(data["counts"]),
            seeds=tuple(int(s) for s in data["seeds"]),
            duration_s=float(data["duration_s"]),
            params=dict(data.get("params", {})),
            samples=tuple(data.get("samples", ())),
            modes=modes,
            reason=data.get("reason"),
            traceback=data.get("traceback"),
            replay=data.get("replay"),
            ops=tuple(data.get("ops", ())),
            service_version=data.get("service_version"),
            violation_modes=dict(data.get("violation_modes", {})),
            schedule=data.get("schedule"),
            control=data.get("control"),
            timed_out=timed_out,
        )

    @property
    def signature(self) -> tuple[str, str, int, Counts]:
        """What must agree between two runs on the same versions."""
        return (self.verdict.value, self.invariant_id, self.violating_trials, self.counts)


# Before ``Finding.timed_out`` existed a timeout was marked as the one mode of an error finding,
# ``modes={"timeout": 1}``: result files and verdict caches written then still carry it.
LEGACY_TIMEOUT_MODE = "timeout"


def recorded_timeout(data: Mapping[str, Any]) -> bool:
    """Whether the JSON form of a finding (or a verdict cache's evidence of one rerun) records
    a timeout: its ``timed_out`` field; without one (written before it existed), an error
    finding marked with the old mode ``timeout``. A form with neither did not time out."""
    if "timed_out" in data:
        return bool(data["timed_out"])
    modes = data.get("modes") or {}
    return data.get("verdict") == Verdict.ERROR.value and bool(modes.get(LEGACY_TIMEOUT_MODE))


@dataclass(frozen=True)
class MutantResult:
    """The status of one paired mutant under one check, over R reruns."""

    check_id: str
    mutant_id: str
    kind: MutantKind
    target: str
    description: str
    status: MutantStatus
    runs: tuple[Verdict, ...]
    expected: Verdict = Verdict.VIOLATED
    evidence: str | None = None
    diff: str | None = None
    duration_s: float = 0.0
    cached: bool = False
    # False when the mutant's clean backend already breaks the invariant on this SDK version
    # (status NOT_JUDGEABLE; kept for result files written before that status existed).
    judgeable: bool = True

    @property
    def rate(self) -> str:
        """How many of its reruns gave the expected verdict, e.g. ``1/3`` (a flaky pair's)."""
        return f"{sum(1 for v in self.runs if v is self.expected)}/{len(self.runs)}"

    def to_json(self) -> dict[str, Any]:
        """The JSON form of this mutant result."""
        return {
            "check_id": self.check_id,
            "mutant_id": self.mutant_id,
            "kind": self.kind.value,
            "target": self.target,
            "description": self.description,
            "status": self.status.value,
            "runs": [v.value for v in self.runs],
            "expected": self.expected.value,
            "evidence": self.evidence,
            "diff": self.diff,
            "duration_s": round(self.duration_s, 4),
            "cached": self.cached,
            "judgeable": self.judgeable,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> MutantResult:
        """A mutant result from its JSON form (older files' missing fields take defaults)."""
        return cls(
            check_id=data["check_id"],
            mutant_id=data["mutant_id"],
            kind=MutantKind(data["kind"]),
            target=data["target"],
            description=data["description"],
            status=MutantStatus(data["status"]),
            runs=tuple(Verdict(v) for v in data["runs"]),
            expected=Verdict(data.get("expected", "violated")),
            evidence=data.get("evidence"),
            diff=data.get("diff"),
            duration_s=float(data.get("duration_s", 0.0)),
            cached=bool(data.get("cached")),
            judgeable=bool(data.get("judgeable", True)),
        )


@dataclass(frozen=True)
class CleanBase:
    """The clean runs of one check on one lane (no mutant): may its mutants be judged there?

    Judgeable only when every rerun held: a check violated (or not judged) on the clean
    backend in any rerun would "kill" every mutant with evidence the mutant did not cause.
    """

    check_id: str
    lane: str
    verdicts: tuple[Verdict, ...]
    duration_s: float  # the longest rerun: the mutants' time limits scale from it
    reason: str | None = None  # what the first rerun that did not hold said
    # Not run: every paired mutant on this lane has a cached result, and a result is cached
    # only when its clean base held under the same inputs (the cache key names them).
    cached: bool = False
    # Not run this time: these are an earlier run's clean reruns, kept because everything they
    # executed is unchanged here (``arib.caches.clean``), or, on a check's gate lane, because
    # its passed sanity gates are kept under a key naming their inputs (``arib.caches.gates``).
    reused: bool = False

    @property
    def judgeable(self) -> bool:
        """Whether every clean rerun held (or a cached result says they did), so mutants may
        be judged on this lane."""
        if self.cached:
            return True
        return bool(self.verdicts) and all(v is Verdict.HELD for v in self.verdicts)

    @property
    def abstains(self) -> bool:
        """Every rerun abstained: the lane never offered the check's contract."""
        return bool(self.verdicts) and all(v is Verdict.NOT_APPLICABLE for v in self.verdicts)

    def describe(self) -> str:
        """E.g. ``clean 'sqlite-file' gave held, violated, held (lost 2)``."""
        if self.cached:
            return f"clean {self.lane!r} not run: every paired mutant's result is cached"
        text = f"clean {self.lane!r} gave {', '.join(v.value for v in self.verdicts)}"
        text += " (an earlier run's, reused: its inputs are unchanged)" if self.reused else ""
        return text + (f" ({self.reason})" if self.reason and not self.judgeable else "")

    def to_json(self) -> dict[str, Any]:
        """The JSON form of these clean runs."""
        return {
            "check_id": self.check_id,
            "lane": self.lane,
            "verdicts": [v.value for v in self.verdicts],
            "judgeable": self.judgeable,
            "duration_s": round(self.duration_s, 4),
            "reason": self.reason,
        } | ({"cached": True} if self.cached else {}) | ({"reused": True} if self.reused else {})

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> CleanBase:
        """Clean runs from their JSON form."""
        return cls(check_id=data["check_id"], lane=data["lane"],
                   verdicts=tuple(Verdict(v) for v in data["verdicts"]),
                   duration_s=float(data["duration_s"]), reason=data.get("reason"),
                   cached=bool(data.get("cached")), reused=bool(data.get("reused")))


@dataclass(frozen=True)
class Admission:
    """Whether a check measures something: its clean runs and its paired mutants."""

    check_id: str
    admitted: bool
    reasons: tuple[str, ...]
    clean: tuple[Verdict, ...]
    results: tuple[MutantResult, ...]
    duration_s: float
    # Its sanity gates were not run: an earlier run's passed gates, kept under a key that
    # names every input they depend on (``arib.caches.gates``); ``clean`` are that run's.
    gates_cached: bool = False

    def to_json(self) -> dict[str, Any]:
        """The JSON form of this admission, its mutant results included."""
        return {
            "check_id": self.check_id,
            "admitted": self.admitted,
            "reasons": list(self.reasons),
            "clean": [v.value for v in self.clean],
            "results": [r.to_json() for r in self.results],
            "duration_s": round(self.duration_s, 4),
        } | ({"gates_cached": True} if self.gates_cached else {})


def merge_verdicts(verdicts: Iterable[Verdict]) -> Verdict:
    """Combine per-trial or per-part verdicts: error beats violated beats held beats n/a."""
    seen = set(verdicts)
    for v in (Verdict.ERROR, Verdict.VIOLATED, Verdict.HELD):
        if v in seen:
            return v
    return Verdict.NOT_APPLICABLE


_VERDICT_EXIT = {
    Verdict.HELD: ExitCode.OK,
    Verdict.VIOLATED: ExitCode.VIOLATED,
    Verdict.ERROR: ExitCode.ERROR_OR_NOTHING,
    Verdict.NOT_APPLICABLE: ExitCode.ERROR_OR_NOTHING,  # nothing was judged
}


def verdict_exit_code(verdict: Verdict) -> ExitCode:
    """Exit code of a merged verdict: 0 held, 1 violated, 4 error or not applicable (nothing)."""
    return _VERDICT_EXIT[verdict]


def exit_code(findings: Iterable[Finding]) -> ExitCode:
    """Exit code of a run: 0 all held/n.a. with one held, 1 violated, 4 error or nothing."""
    return verdict_exit_code(merge_verdicts(f.verdict for f in findings))


def mutant_status(
    runs: Iterable[Verdict], expected: Verdict = Verdict.VIOLATED, timeouts: int = 0,
    hang_kills: bool = False,
) -> MutantStatus:
    """Status of a mutant from its rerun verdicts: killed only when every rerun is expected.

    ``timeouts`` of the ``runs`` ran past their time limit (their verdict is ``error``). A
    timeout is its own status, never a kill, unless ``hang_kills`` (the check's invariant is
    "does not hang") and the expected verdict is ``violated``: then a timeout is a violation.
    """
    verdicts = list(runs)
    if not verdicts:
        return MutantStatus.ERROR
    hits = sum(1 for v in verdicts if v is expected)
    if expected is Verdict.ERROR:
        hits -= timeouts  # a timeout is not the error a claim mutant is expected to give
    if hang_kills and expected is Verdict.VIOLATED:
        hits += timeouts
    if hits == len(verdicts):
        return MutantStatus.KILLED
    if timeouts and hits <= 0:
        return MutantStatus.TIMEOUT
    if expected is not Verdict.ERROR and all(v is Verdict.ERROR for v in verdicts):
        return MutantStatus.ERROR
    if hits <= 0:
        return MutantStatus.SURVIVED
    return MutantStatus.FLAKY
