"""The harness core as mutmut judges it: exact JSON shapes, defaults, counters, admission parts.

These tests pin behaviour that ``nox -s mutmut_self`` showed unpinned: the field names and
defaults of every result document, counters added field by field, the status of one rerun,
and the pure parts of admission (options, child outcomes as findings, cache keys, statuses,
evidence, names).
"""

from __future__ import annotations

import dataclasses
import importlib
from typing import Any

import pytest

import arib.admission as admission
import arib.caches.keys as keys
import arib.judging as judging
from arib.admission import AdmissionConfig, _as_finding, _Job, _options
from arib.caches.verdicts import AdmissionCache
from arib.checks.registry import validate_module
from arib.execute import derive_seed
from arib.ground.child import ChildOutcome, ChildStatus
from arib.ground.keys import MutantKey
from arib.ground.model import (
    Admission,
    Counts,
    Finding,
    MutantKind,
    MutantResult,
    MutantStatus,
    Trial,
    Verdict,
    mutant_status,
)
from arib.mutants.base import MutantSpec
from arib.mutants.registry import get_mutant
from arib.targets.openai_agents.reference import REFERENCE

H, V, N, E = Verdict.HELD, Verdict.VIOLATED, Verdict.NOT_APPLICABLE, Verdict.ERROR
FINDING_KEYS = {
    "invariant_id", "invariant", "fault", "target", "sdk_version", "python_version", "verdict",
    "trials", "violating_trials", "counts", "seeds", "duration_s", "params", "samples", "modes",
    "reason", "traceback", "replay", "ops", "service_version", "violation_modes", "timed_out",
}


def full_finding(**kw: Any) -> Finding:
    """A finding with every optional field set to a distinctive value."""
    base: dict[str, Any] = dict(
        invariant_id="ARIB-X-001", invariant="inv", fault="fault", target="lane",
        sdk_version="0.24.0", python_version="3.12.1", verdict=V, trials=3,
        violating_trials=2, counts=Counts(1, 2, 3, 4), seeds=(11, 12, 13), duration_s=1.5,
        params={"writers": 4, "loop": "asyncio"}, samples=("s1", "s2"),
        modes={"lossy": 2, "exact": 1}, reason="why", traceback="tb", replay="cmd",
        ops=("op1", "op2"), service_version="redis 7.2", violation_modes={"lossy": 2},
    )
    base.update(kw)
    return Finding(**base)


def minimal(document: dict[str, Any], keep: set[str]) -> dict[str, Any]:
    return {k: v for k, v in document.items() if k in keep}


# --- Counts -----------------------------------------------------------------------------


def test_counts_add_every_field_separately():
    assert Counts(1, 0, 0, 0) + Counts(2, 0, 0, 0) == Counts(3, 0, 0, 0)
    assert Counts(0, 5, 0, 0) + Counts(0, 2, 0, 0) == Counts(0, 7, 0, 0)
    assert Counts(0, 0, 5, 0) + Counts(0, 0, 2, 0) == Counts(0, 0, 7, 0)
    assert Counts(0, 0, 0, 5) + Counts(0, 0, 0, 2) == Counts(0, 0, 0, 7)
    assert Counts(0, 0, 0, 0, 5) + Counts(0, 0, 0, 0, 2) == Counts(0, 0, 0, 0, 7)


def test_counts_json_names_every_counter():
    assert Counts(1, 2, 3, 4, 5).to_json() == {"lost": 1, "duplicated": 2, "foreign": 3,
                                               "wrong_result": 4, "raised": 5, "errors": 9}


def test_counts_from_json_defaults_missing_counters_to_zero():
    assert Counts.from_json({}) == Counts()
    assert Counts.from_json({"duplicated": "2"}) == Counts(duplicated=2)
    assert Counts.from_json(Counts(5, 6, 7, 8, 9).to_json()) == Counts(5, 6, 7, 8, 9)


# --- Trial ------------------------------------------------------------------------------


def test_trial_json_shape_and_round_trip():
    trial = Trial(2, 99, True, Counts(lost=1), "lossy", "sample", ("a", "b"))
    assert trial.to_json() == {
        "index": 2, "seed": 99, "violated": True,
        "counts": {"lost": 1, "duplicated": 0, "foreign": 0, "wrong_result": 0, "raised": 0,
                   "errors": 0},
        "mode": "lossy", "sample": "sample", "ops": ["a", "b"], "schedule": None,
    }
    assert Trial.from_json(trial.to_json()) == trial


def test_trial_from_minimal_json_uses_defaults():
    trial = Trial.from_json({"index": "1", "seed": "7", "violated": 0})
    assert trial == Trial(1, 7, False)
    assert trial.counts == Counts() and trial.mode is None and trial.sample is None
    assert trial.ops == ()


# --- Finding ----------------------------------------------------------------------------


def test_finding_json_has_exactly_the_schema_fields():
    document = full_finding().to_json()
    assert set(document) == FINDING_KEYS
    assert document["params"] == {"writers": 4, "loop": "asyncio"}
    assert document["reason"] == "why"
    assert document["traceback"] == "tb"
    assert document["service_version"] == "redis 7.2"
    assert document["counts"] == {"lost": 1, "duplicated": 2, "foreign": 3, "wrong_result": 4,
                                  "raised": 0, "errors": 4}
    assert document["seeds"] == [11, 12, 13] and document["ops"] == ["op1", "op2"]
    assert document["samples"] == ["s1", "s2"] and document["modes"] == {"lossy": 2, "exact": 1}
    assert document["violation_modes"] == {"lossy": 2}  # the violating trials' alone


def test_finding_duration_is_rounded_to_four_places():
    assert full_finding(duration_s=0.123456).to_json()["duration_s"] == 0.1235


def test_finding_round_trip_keeps_every_optional_field():
    finding = full_finding()
    back = Finding.from_json(finding.to_json())
    assert back == finding
    assert (back.reason, back.traceback, back.service_version) == ("why", "tb", "redis 7.2")
    assert back.params == {"writers": 4, "loop": "asyncio"}


def test_finding_from_minimal_json_uses_defaults():
    required = {"invariant_id", "invariant", "fault", "target", "sdk_version", "python_version",
                "verdict", "trials", "violating_trials", "counts", "seeds", "duration_s"}
    back = Finding.from_json(minimal(full_finding().to_json(), required))
    assert back.params == {} and back.samples == () and back.modes == {} and back.ops == ()
    assert back.violation_modes == {}  # files written before it was recorded
    assert back.reason is None and back.traceback is None and back.replay is None
    assert back.service_version is None
    assert back.verdict is V and back.counts == Counts(1, 2, 3, 4)


# --- MutantResult and Admission ---------------------------------------------------------


def full_result(**kw: Any) -> MutantResult:
    base: dict[str, Any] = dict(
        check_id="ARIB-X-001", mutant_id="m-1", kind=MutantKind.GENERATED, target="lane",
        description="drops a write", status=MutantStatus.FLAKY, runs=(V, H), expected=N,
        evidence="ev", diff="-a\n+b", duration_s=2.123456, cached=True, judgeable=False,
    )
    base.update(kw)
    return MutantResult(**base)


def test_mutant_result_json_shape():
    assert full_result().to_json() == {
        "check_id": "ARIB-X-001", "mutant_id": "m-1", "kind": "generated", "target": "lane",
        "description": "drops a write", "status": "flaky", "runs": ["violated", "held"],
        "expected": "not_applicable", "evidence": "ev", "diff": "-a\n+b",
        "duration_s": 2.1235, "cached": True, "judgeable": False,
    }


def test_mutant_result_round_trip():
    result = full_result(duration_s=2.5)
    assert MutantResult.from_json(result.to_json()) == result


def test_mutant_result_from_minimal_json_uses_defaults():
    document = minimal(full_result().to_json(), {"check_id", "mutant_id", "kind", "target",
                                                 "description", "status", "runs"})
    back = MutantResult.from_json(document)
    assert back == full_result(expected=V, evidence=None, diff=None, duration_s=0.0,
                               cached=False, judgeable=True)
    assert back.runs == (V, H) and back.kind is MutantKind.GENERATED


def test_admission_json_shape():
    result = full_result()
    doc = Admission("ARIB-X-001", False, ("r1", "r2"), (H, H), (result,), 3.987654).to_json()
    assert doc == {
        "check_id": "ARIB-X-001", "admitted": False, "reasons": ["r1", "r2"],
        "clean": ["held", "held"], "results": [result.to_json()], "duration_s": 3.9877,
    }


# --- mutant_status ----------------------------------------------------------------------


@pytest.mark.parametrize("runs, status", [
    ([E], MutantStatus.ERROR),
    ([H], MutantStatus.SURVIVED),
    ([V], MutantStatus.KILLED),
])
def test_one_rerun_without_timeouts(runs, status):
    assert mutant_status(runs) is status


def test_a_timeout_is_never_an_error_nor_a_kill():
    assert mutant_status([E], V, timeouts=1) is MutantStatus.TIMEOUT
    assert mutant_status([E, E], V, timeouts=1) is MutantStatus.TIMEOUT  # a hang was seen
    assert mutant_status([E, H], V, timeouts=1) is MutantStatus.TIMEOUT
    assert mutant_status([E, V], V, timeouts=1) is MutantStatus.FLAKY  # a kill, not repeated
    assert mutant_status([E, E], V, timeouts=0) is MutantStatus.ERROR


# --- admission: pure parts --------------------------------------------------------------


@pytest.fixture(scope="module")
def conc():
    # Validated on its own, so that a check elsewhere in checks/ cannot break these tests.
    return validate_module(importlib.import_module("arib.checks.openai_agents.conc_001"))


def cfg(**kw: Any) -> AdmissionConfig:
    return AdmissionConfig(cache=AdmissionCache(None), quiet=True, **kw)


def test_options_run_admission_on_the_fast_tmpdir(conc, monkeypatch):
    monkeypatch.setattr(admission, "fast_tmpdir", lambda: "/somewhere/fast")
    assert _options(conc, cfg(), 0, True).tmpdir == "/somewhere/fast"


def test_options_resolve_params_seed_and_early_stop(conc):
    config = cfg(run_seed=5, params={"ARIB-CONC-001": {"writers": 3}})
    opts = _options(conc, config, 2, True)
    trials = next(p.default for p in conc.params if p.name == "trials")
    assert opts.params == {"writers": 3, "appends": 25, "trials": trials}
    assert opts.run_seed == derive_seed(5, "admission", 2)
    assert opts.run_seed != derive_seed(5, "admission", 1)
    assert opts.stop_on_violation is True
    assert _options(conc, cfg(), 0, False).stop_on_violation is False
    assert _options(conc, cfg(), 0, False).params == {"writers": 8, "appends": 25, "trials": trials}


def test_options_pass_the_service_urls_on(conc):
    urls = {"redis": "redis://127.0.0.1:6390/0"}
    assert _options(conc, cfg(services=urls), 0, False).services == urls
    assert _options(conc, cfg(), 0, False).services == {}


def test_gates_run_on_the_active_familys_reference():
    assert admission._reference() is REFERENCE


def test_gates_and_clean_bases_verify_the_lanes_claims(conc):
    assert _options(conc, cfg(), 0, True).verify_claims is True
    assert _options(conc, cfg(), 0, False).verify_claims is True


def test_a_mutant_is_told_apart_by_lane_and_id():
    mutant = get_mutant("reference_lost_update")
    twin = dataclasses.replace(mutant, target="reference-twin")
    assert mutant.key == dataclasses.replace(mutant).key
    assert mutant.key != twin.key
    assert mutant.key != dataclasses.replace(mutant, id="m-x").key
    assert mutant.key == MutantKey("reference", mutant.id)
    assert str(mutant.key) == f"reference:{mutant.id}"


def test_a_job_is_gathered_by_check_role_and_its_mutant_on_a_lane_or_its_lane(conc):
    mutant = get_mutant("reference_lost_update")
    twin = dataclasses.replace(mutant, target="reference-twin")
    assert admission._slot(_Job(conc, REFERENCE, None, 0, "clean")) == (
        conc.id, "clean", REFERENCE.name)
    assert admission._slot(_Job(conc, REFERENCE, mutant, 2, "forced")) == (
        conc.id, "forced", MutantKey(REFERENCE.name, mutant.id))
    assert admission._slot(_Job(conc, REFERENCE, twin, 2, "forced")) != admission._slot(
        _Job(conc, REFERENCE, mutant, 2, "forced"))


def test_ok_child_outcome_is_its_finding(conc):
    job = _Job(conc, REFERENCE, None, 0, "clean")
    finding = full_finding()
    assert _as_finding(job, ChildOutcome(ChildStatus.OK, finding), cfg()) is finding


@pytest.mark.parametrize("status, reason", [
    (ChildStatus.TIMEOUT, "child killed at its hard time limit (60.0s + grace)"),
    (ChildStatus.CRASH, "child crashed: died of SIGSEGV"),
    (ChildStatus.RAISED, "child raised out of the harness"),
])
def test_failed_child_outcome_is_an_error_finding(conc, status, reason):
    job = _Job(conc, REFERENCE, None, 1, "base")
    outcome = ChildOutcome(status, detail="died of SIGSEGV", duration_s=4.5)
    finding = _as_finding(job, outcome, cfg(run_seed=3, params={"ARIB-CONC-001": {"trials": 1}}))
    assert finding.verdict is E
    assert finding.reason == reason
    assert finding.traceback == "died of SIGSEGV"
    assert finding.duration_s == 4.5
    assert finding.target == REFERENCE.name and finding.invariant_id == conc.id
    assert finding.params["run_seed"] == derive_seed(3, "admission", 1)
    assert finding.params["trials"] == 1
    assert finding.timed_out is (status is ChildStatus.TIMEOUT) and finding.modes == {}


def test_failed_child_without_detail_has_no_traceback(conc):
    job = _Job(conc, REFERENCE, None, 0, "clean")
    finding = _as_finding(job, ChildOutcome(ChildStatus.RAISED), cfg())
    assert finding.traceback is None


def test_paired_mutants_are_named_ones_then_generated(conc, monkeypatch):
    import arib.mutants.pool

    extra = dataclasses.replace(get_mutant("reference_lost_update"), id="m-extra", name="x")
    plain, none = admission.paired_mutants(conc, cfg(generated=False))
    assert [m.name for m in plain] == list(conc.mutants) and none == ()
    monkeypatch.setattr(arib.mutants.pool, "generated_for_selectors",
                        lambda selectors, sdk: ((extra,), (f"bad {selectors[0]!r} on {sdk}",)))
    both, problems = admission.paired_mutants(conc, cfg(generated=True))
    assert [m.name for m in both] == [*conc.mutants, "x"]
    assert problems == (f"bad {conc.generated[0]!r} on {admission.sdk_version()}",)


# The cache key must change whenever anything that can change the outcome changes.
# The mutant is of SQLiteSession, so its module and the reference adapter are told apart.
KEY_SOURCES = ("arib.checks.openai_agents.conc_001", "arib.checks.base", "arib.checks.common",
               "arib.execute", "agents.memory.sqlite_session", "arib.targets.base",
               "arib.targets.openai_agents.sdk",
               "arib.targets.openai_agents.reference")


@pytest.fixture()
def fake_sources(monkeypatch):
    edited: set[str] = set()

    def source_hash(*modules: str) -> str:
        return "|".join(m + ("*" if m in edited else "") for m in modules)

    monkeypatch.setattr(keys, "source_hash", source_hash)
    return edited


def key(check: Any, mutant: MutantSpec, **config: Any) -> str:
    return admission._mutant_key(check, mutant, cfg(**config))


@pytest.mark.parametrize("module", KEY_SOURCES)
def test_cache_key_follows_every_source(conc, fake_sources, module):
    mutant = get_mutant("sqlite_drops_every_tenth_append")
    before = key(conc, mutant)
    fake_sources.add(module)
    assert key(conc, mutant) != before


def test_cache_key_is_admissions_and_follows_the_time_rule(conc, monkeypatch):
    monkeypatch.setattr(keys, "cache_key", lambda **fields: fields)
    mutant = get_mutant("reference_lost_update")
    fields: Any = key(conc, mutant, reruns=4, run_seed=7)
    assert fields["kind"] == "admission" and fields["limit"] == judging.TIME_RULE
    assert (fields["lane"], fields["reruns"], fields["seed"]) == ("reference", 4, 7)


def test_cache_key_follows_runs_versions_and_mutant(conc, fake_sources, monkeypatch):
    mutant = get_mutant("reference_lost_update")
    base = key(conc, mutant)
    assert key(conc, mutant) == base
    assert key(conc, mutant, reruns=4) != base
    assert key(conc, mutant, run_seed=1) != base
    assert key(conc, mutant, params={"ARIB-CONC-001": {"writers": 2}}) != base
    assert key(conc, get_mutant("reference_corrupts_content")) != base
    assert key(conc, dataclasses.replace(mutant, id="m-other")) != base
    # Lanes built on one module share mutant ids; each lane's result is its own.
    assert key(conc, dataclasses.replace(mutant, target="sqlite-file")) != base
    assert key(conc, dataclasses.replace(mutant, replacement="other")) != base
    generated = dataclasses.replace(mutant, source="x = 1\n")
    assert key(conc, dataclasses.replace(generated, source="x = 2\n")) != key(conc, generated)
    assert key(conc, dataclasses.replace(generated, replacement="r")) == key(conc, generated)
    with monkeypatch.context() as patch:
        patch.setattr(keys, "python_version", lambda: "9.9.9")
        assert key(conc, mutant) != base
    with monkeypatch.context() as patch:
        patch.setattr(keys, "sdk_version", lambda: "9.9.9")
        assert key(conc, mutant) != base
    assert key(conc, mutant) == base


def timed_out() -> Finding:
    return full_finding(verdict=E, modes={}, timed_out=True)


def test_status_of_timeouts(conc):
    hang = dataclasses.replace(conc, hang_invariant=True)
    assert judging.run_status(hang, V, [timed_out(), timed_out()]) is MutantStatus.KILLED
    assert judging.run_status(conc, V, [timed_out(), timed_out()]) is MutantStatus.TIMEOUT
    assert judging.run_status(hang, V, [timed_out(), full_finding(verdict=E)]) is (
        MutantStatus.ERROR)
    assert judging.run_status(hang, V, [timed_out(), full_finding()]) is MutantStatus.KILLED
    assert judging.run_status(hang, V, [full_finding(), full_finding()]) is (
        MutantStatus.KILLED)


def test_status_uses_the_mutants_expected_verdict(conc):
    na = full_finding(verdict=N)
    assert judging.run_status(conc, N, [na, na]) is MutantStatus.KILLED
    assert judging.run_status(conc, N, [full_finding(), full_finding()]) is (
        MutantStatus.SURVIVED)


def test_evidence_of_the_first_finding():
    first = full_finding(samples=("s1", "s2"))
    text = judging.evidence([first, full_finding(reason="second")])
    assert text == ("verdict violated; 2/3 trials violated; lost 1, duplicated 2, foreign 3, "
                    "wrong_result 4; modes lossy=2, exact=1; why; s1")


def test_evidence_leaves_out_what_is_empty():
    quiet = full_finding(verdict=H, violating_trials=0, counts=Counts(duplicated=2), modes={},
                         reason=None, samples=())
    assert judging.evidence([quiet]) == "verdict held; duplicated 2"
    bare = full_finding(verdict=H, violating_trials=0, counts=Counts(), modes={"exact": 3},
                        reason=None, samples=())
    assert judging.evidence([bare]) == "verdict held; modes exact=3"
    assert judging.evidence([]) == ""


def test_evidence_is_capped_at_600_characters():
    text = judging.evidence([full_finding(reason=None, samples=("x" * 1000,))])
    assert len(text) == 600 and text.startswith("verdict violated; ")


def test_get_name_prefers_the_name_then_the_id():
    named = get_mutant("reference_lost_update")
    unnamed = dataclasses.replace(named, id="m-unnamed", name="")
    pool = [named, unnamed]
    assert admission.get_name(named.id, pool) == "reference_lost_update"
    assert admission.get_name("m-unnamed", pool) == "m-unnamed"
    assert admission.get_name("m-elsewhere", pool) == "m-elsewhere"


def test_mutant_timeout_scales_from_the_clean_run_and_is_bounded(conc):
    assert (judging.MIN_MUTANT_TIMEOUT_S, judging.TIMEOUT_FACTOR) == (1.0, 10.0)
    assert judging.mutant_timeout(conc, 0.01) == 1.0  # never below the floor
    assert judging.mutant_timeout(conc, 0.2) == 2.0
    assert judging.mutant_timeout(conc, 0.5) == 5.0  # ten times the clean run
    assert judging.mutant_timeout(conc, 1.0) == 10.0
    assert judging.mutant_timeout(conc, 100.0) == conc.timeout_s == 60.0  # at most the check's
