"""harness/caches/gates.py: admission's passed sanity gates kept and reused like pair verdicts,
run again on any change of their inputs, never kept when they failed."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

import arib.caches.keys as keys
from arib.admission import AdmissionConfig, admit
from arib.caches.gates import GateCache, GateEntry, GateStatus, gate_status
from arib.caches.verdicts import AdmissionCache, Lookup
from arib.checks.registry import get_check
from arib.ground.errors import GateError
from arib.ground.model import CleanBase, Trial, Verdict
from arib.mutants.registry import forced_broken
from arib.targets.base import NotApplicable
from tests.test_admission import roles_run

H, V, NA, E = Verdict.HELD, Verdict.VIOLATED, Verdict.NOT_APPLICABLE, Verdict.ERROR
CHECK_ID = "ARIB-CONC-003"


# -- the store -----------------------------------------------------------------------------

def run(verdict: Verdict) -> dict[str, object]:
    return {"verdict": verdict.value, "violating_trials": int(verdict is V), "trials": 1}


def entry(clean: tuple[Verdict, ...] = (H, H), forced: tuple[Verdict, ...] = (V,),
          proof: dict[str, object] | None = None) -> GateEntry:
    return GateEntry(CleanBase(CHECK_ID, "reference", clean, 0.5), forced, proof or {
        "clean": [run(v) for v in clean], "forced": [run(v) for v in forced]})


@pytest.mark.parametrize("clean,forced,status", [
    ((H, H), (V,), GateStatus.PASSED),
    ((H, V), (V,), GateStatus.FAILED),
    ((H, H), (H,), GateStatus.FAILED),
    ((H, H), (), GateStatus.FAILED),
    ((NA, NA), (V,), GateStatus.NOT_APPLICABLE),
    ((NA, H), (V,), GateStatus.FAILED),
    ((E,), (V,), GateStatus.FAILED),
])
def test_the_gates_pass_only_when_every_clean_run_held_and_the_forced_one_violated(
        clean: tuple[Verdict, ...], forced: tuple[Verdict, ...], status: GateStatus) -> None:
    assert gate_status(clean, forced) is status


def test_a_passed_entry_round_trips_and_is_found_only_for_its_check_and_lane(
        tmp_path: Path) -> None:
    gates = GateCache(AdmissionCache(tmp_path))
    assert GateEntry.from_json(json.loads(json.dumps(entry().to_json()))) == entry()
    gates.write("k", entry())
    assert gates.lookup("k", CHECK_ID, "reference") == (entry(), Lookup.HIT)
    assert gates.lookup("other", CHECK_ID, "reference") == (None, Lookup.MISS)
    assert gates.lookup("k", "ARIB-CONC-001", "reference") == (None, Lookup.UNREADABLE)
    assert gates.lookup("k", CHECK_ID, "sqlite-file") == (None, Lookup.UNREADABLE)
    (tmp_path / "gates" / "bad.json").write_text("{")
    assert gates.lookup("bad", CHECK_ID, "reference") == (None, Lookup.UNREADABLE)
    assert gates.counts == {"hit": 1, "miss": 1, "unreadable": 3, "contradicted": 0}
    gates.remove("k")
    gates.remove("k")  # nothing kept under it any more: nothing happens
    assert gates.lookup("k", CHECK_ID, "reference") == (None, Lookup.MISS)
    assert (tmp_path / "gates" / "bad.json").exists()  # only that key's entry went
    GateCache(AdmissionCache(None)).remove("k")  # no cache: nothing to remove


def test_failed_gates_are_never_kept_and_a_contradicted_entry_is_refused(
        tmp_path: Path) -> None:
    gates = GateCache(AdmissionCache(tmp_path))
    for failed in (entry(clean=(H, V)), entry(forced=(H,)), entry(clean=(NA, NA))):
        gates.write("k", failed)
        assert not (tmp_path / "gates" / "k.json").exists()
    # written by hand (or by a bug): a status its own evidence does not give
    for bad in (entry(clean=(H, V)), entry(proof={"clean": [run(H), run(V)],
                                                  "forced": [run(V)]}),
                entry(proof={"clean": [run(H), run(H)], "forced": [{"verdict": "violated"}]}),
                entry(proof={"clean": [run(H)]})):
        (tmp_path / "gates").mkdir(exist_ok=True)
        (tmp_path / "gates" / "k.json").write_text(json.dumps(bad.to_json()))
        assert gates.lookup("k", CHECK_ID, "reference") == (None, Lookup.CONTRADICTED), bad


def test_no_cache_and_a_discarded_store_answer_nothing(tmp_path: Path) -> None:
    assert GateCache(AdmissionCache(None)).lookup("k", CHECK_ID, "reference")[1] is Lookup.MISS
    GateCache(AdmissionCache(None)).write("k", entry())  # nowhere to write: nothing happens
    verdicts = AdmissionCache(tmp_path)
    GateCache(verdicts).write("k", entry())
    verdicts.discard()
    assert GateCache(verdicts).lookup("k", CHECK_ID, "reference") == (None, Lookup.MISS)


# -- the key ---------------------------------------------------------------------------------

def gate_key(**change: object) -> str:
    from arib.targets.openai_agents.reference import REFERENCE

    parts: dict[str, object] = dict(reruns=3, seed=0, params={"writers": 2}, limit="rule",
                                     runner="arib.admission")
    reference = change.pop("reference", REFERENCE)
    check = change.pop("check", get_check(CHECK_ID))
    parts.update(change)
    return keys.gate_key(check, reference, forced_broken(), **parts)  # type: ignore[arg-type]


@pytest.mark.parametrize("module", [
    "arib.checks.openai_agents.conc_003", "arib.checks.base", "arib.execute",
    "arib.checks.openai_agents._problems", "arib.targets.openai_agents.reference",
    "arib.targets.openai_agents.sdk", "arib.admission"])
def test_the_gate_key_follows_every_source(monkeypatch: pytest.MonkeyPatch, module: str) -> None:
    monkeypatch.setattr(keys, "source_hash", lambda *mods: "|".join(mods))
    plain = gate_key()
    monkeypatch.setattr(keys, "source_hash", lambda *mods: "|".join(
        m + ("*" if m == module else "") for m in mods))
    assert gate_key() != plain


def test_the_gate_key_follows_the_run_and_the_versions(monkeypatch: pytest.MonkeyPatch) -> None:
    from arib.targets.openai_agents.reference import REFERENCE

    before = gate_key()
    assert gate_key() == before
    for change in ({"reruns": 4}, {"seed": 1}, {"params": {"writers": 3}}, {"limit": "20 s"},
                   {"reference": dataclasses.replace(REFERENCE, waits_s=1.0)},
                   {"check": dataclasses.replace(get_check(CHECK_ID), timeout_s=5.0)}):
        assert gate_key(**change) != before, change
    monkeypatch.setattr(keys, "python_version", lambda: "3.99.0")
    assert gate_key() != before
    monkeypatch.undo()
    monkeypatch.setattr(keys, "sdk_version", lambda: "0.0.1")
    assert gate_key() != before
    monkeypatch.undo()
    assert gate_key() != keys.verdict_key(  # the forced mutant's pair key: another store
        "admission", get_check(CHECK_ID), "reference", forced_broken(), reruns=3, seed=0,
        params={"writers": 2}, limit="rule")


# -- admission with the store ------------------------------------------------------------------

def small_check():
    """CONC-003 with one hand-written pair on the reference (its gate lane)."""
    return dataclasses.replace(get_check(CHECK_ID), generated=(),
                               mutants=("reference_silent_drop_after_close",))


def config(tmp_path: Path, verify: float = 0.0, **kw: object) -> AdmissionConfig:
    # verify=0 unless said: the sample is drawn by key, and keys hold the Python version
    root = kw.pop("root", tmp_path / "c")
    return AdmissionConfig(reruns=int(kw.pop("reruns", 1)), workers=2, quiet=True,
                           cache=AdmissionCache(root, verify=verify),  # type: ignore[arg-type]
                           generated=False, **kw)


@pytest.fixture
def roles(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """The roles of the clean-phase children of each admit() pass, recorded in the parent."""
    return roles_run(monkeypatch)


def gate_files(tmp_path: Path) -> list[Path]:
    return sorted((tmp_path / "c" / "gates").glob("*.json"))


def test_an_unchanged_check_runs_no_gate_child_the_second_time(tmp_path: Path,
                                                               roles: list[list[str]]) -> None:
    (first,) = admit([small_check()], config(tmp_path))
    (second,) = admit([small_check()], config(tmp_path))
    assert sorted(roles[0]) == ["clean", "forced"] and roles[1:] == [[]]
    assert len(gate_files(tmp_path)) == 1
    assert first.admitted and second.admitted and not first.gates_cached and second.gates_cached
    assert second.clean == first.clean == (H,)
    assert [(r.status, r.cached) for r in second.results] == [
        (r.status, True) for r in first.results]
    assert second.to_json()["gates_cached"] is True and "gates_cached" not in first.to_json()


@pytest.mark.parametrize("change", ["source", "reference", "seed", "reruns"])
def test_a_change_of_an_input_runs_the_gates_again(tmp_path: Path, roles: list[list[str]],
                                                   monkeypatch: pytest.MonkeyPatch,
                                                   change: str) -> None:
    admit([small_check()], config(tmp_path))
    kw: dict[str, object] = {}
    if change in ("source", "reference"):
        edited = {"source": "arib.checks.openai_agents.conc_003",
                  "reference": "arib.targets.openai_agents.reference"}[change]
        real = keys.source_hash
        monkeypatch.setattr(keys, "source_hash", lambda *mods: real(*mods) + (
            "*" if edited in mods else ""))
    else:
        kw = {"run_seed": 5} if change == "seed" else {"reruns": 2}
    (again,) = admit([small_check()], config(tmp_path, **kw))
    assert roles[1].count("forced") == 1 and roles[1].count("clean") == kw.get("reruns", 1)
    assert not again.gates_cached and again.admitted
    assert len(gate_files(tmp_path)) == 2  # kept under the new key too


@pytest.mark.parametrize("how", ["clean", "forced"])
def test_a_failed_gate_is_never_cached(tmp_path: Path, how: str) -> None:
    async def constant(ctx):  # type: ignore[no-untyped-def]
        return Trial(ctx.index, ctx.seed, how == "clean")  # violated clean, or never violated

    with pytest.raises(GateError):
        admit([dataclasses.replace(small_check(), run_trial=constant)], config(tmp_path))
    assert gate_files(tmp_path) == []


def test_no_cache_runs_the_gates_every_time(tmp_path: Path, roles: list[list[str]]) -> None:
    for _ in range(2):
        (a,) = admit([small_check()], config(tmp_path, root=None))
        assert a.admitted and not a.gates_cached
    assert [sorted(r) for r in roles] == [["clean", "forced"]] * 2
    assert not (tmp_path / "c").exists()


def test_the_sample_re_judges_a_cached_gate_and_counts_its_agreement(
        tmp_path: Path, roles: list[list[str]]) -> None:
    admit([small_check()], config(tmp_path))
    cfg = config(tmp_path, verify=1.0)  # --verify-cache: every hit is judged again
    (a,) = admit([small_check()], cfg)
    assert sorted(roles[1]) == ["clean", "forced"] and not a.gates_cached and a.admitted
    assert cfg.cache.counts["verified"] == 2 and cfg.cache.counts["agreed"] == 2  # pair, gates
    assert not cfg.cache.disagreements and not cfg.cache.discarded


def test_a_re_judged_gate_that_disagrees_discards_the_store_and_everything_runs_again(
        tmp_path: Path, roles: list[list[str]]) -> None:
    admit([small_check()], config(tmp_path))

    async def not_offered(ctx):  # type: ignore[no-untyped-def]
        raise NotApplicable("this SDK's session offers no such protocol (found on the object)")

    # The same key (a test's replaced trial is not in the check's source), judged differently
    # now: a stale entry as the sample sees it.
    changed = dataclasses.replace(small_check(), run_trial=not_offered)
    cfg = config(tmp_path, verify=1.0)
    (a,) = admit([changed], cfg)
    assert cfg.cache.discarded
    assert cfg.cache.disagreements == [
        f"sanity gates of {CHECK_ID}: cached passed, judged not_applicable"]
    assert [sorted(r) for r in roles[1:]] == [["clean", "forced"]] * 2  # the second pass, again
    assert not a.admitted and a.reasons[0].startswith("does not apply")
    # Failed gates: the fresh pass raises, as without a cache.
    cfg = config(tmp_path, verify=1.0)
    with pytest.raises(GateError, match="clean reference holds"):
        admit([dataclasses.replace(small_check(), run_trial=_always_violated)], cfg)
    assert cfg.cache.discarded and "judged failed" in cfg.cache.disagreements[0]


async def _always_violated(ctx):  # type: ignore[no-untyped-def]
    return Trial(ctx.index, ctx.seed, True)
