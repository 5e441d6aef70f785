"""harness/caches/bases.py: a clean base violated in every rerun kept across admissions, so its
lane's mutants are known not judgeable without running it again; anything else runs each time."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

import arib.caches.keys as keys
from arib.admission import AdmissionConfig, admit
from arib.caches.bases import BaseCache, BaseEntry, BasePlan, Judgeability, keepable
from arib.caches.verdicts import AdmissionCache, Lookup
from arib.checks.registry import get_check
from arib.ground.keys import Cell
from arib.ground.model import CleanBase, MutantStatus, Trial, Verdict
from arib.targets.openai_agents.sdk import SQLITE_FILE
from tests.test_gate_cache import run

H, V, NA, E = Verdict.HELD, Verdict.VIOLATED, Verdict.NOT_APPLICABLE, Verdict.ERROR
CHECK_ID = "ARIB-CONC-003"
LANE = "sqlite-file"


def entry(verdicts: tuple[Verdict, ...] = (V, V, V),
          proof: list[dict[str, object]] | None = None) -> BaseEntry:
    return BaseEntry(CleanBase(CHECK_ID, LANE, verdicts, 0.2, reason="lost 1"),
                     proof if proof is not None else [run(v) for v in verdicts])


# -- the store -----------------------------------------------------------------------------

@pytest.mark.parametrize("verdicts,kept", [
    ((V, V, V), True), ((V,), True), ((V, H, V), False), ((H, H, H), False),
    ((NA, NA, NA), False), ((V, E, V), False), ((), False)])
def test_only_a_base_violated_in_every_rerun_is_kept(verdicts: tuple[Verdict, ...],
                                                      kept: bool) -> None:
    assert keepable(CleanBase(CHECK_ID, LANE, verdicts, 0.1)) is kept
    assert (entry(verdicts).contradiction() is None) is kept


def test_a_reused_or_cached_base_is_not_kept_again() -> None:
    for base in (CleanBase(CHECK_ID, LANE, (V, V), 0.1, reused=True),
                 CleanBase(CHECK_ID, LANE, (V, V), 0.1, cached=True)):
        assert not keepable(base)


def test_an_entry_round_trips_and_is_found_only_for_its_cell(
        tmp_path: Path) -> None:
    store = BaseCache(AdmissionCache(tmp_path))
    assert BaseEntry.from_json(json.loads(json.dumps(entry().to_json()))) == dataclasses.replace(
        entry(), proof=tuple(entry().proof))
    base = entry().base
    store.settle("k", base, [], None)  # no findings: its evidence is empty, contradicted
    assert not (tmp_path / "bases" / "k.json").exists()
    atomic = tmp_path / "bases" / "k.json"
    atomic.parent.mkdir()
    atomic.write_text(json.dumps(entry().to_json()))
    found, state = store.lookup("k", CHECK_ID, LANE)
    assert state is Lookup.HIT and found is not None and found.base == entry().base
    assert not found.base.judgeable  # admission marks it reused where it stands in (below)
    assert store.lookup("k", "ARIB-CONC-001", LANE) == (None, Lookup.UNREADABLE)
    assert store.lookup("k", CHECK_ID, "async-sqlite-file") == (None, Lookup.UNREADABLE)
    assert store.lookup("other", CHECK_ID, LANE) == (None, Lookup.MISS)
    (tmp_path / "bases" / "bad.json").write_text("{")
    assert store.lookup("bad", CHECK_ID, LANE) == (None, Lookup.UNREADABLE)
    assert store.counts == {"hit": 1, "miss": 1, "unreadable": 3, "contradicted": 0}


def test_an_entry_whose_evidence_does_not_show_every_rerun_violated_is_refused(
        tmp_path: Path) -> None:
    store = BaseCache(AdmissionCache(tmp_path))
    (tmp_path / "bases").mkdir()
    for bad in (entry((V, H, V)), entry(proof=[run(V), run(V)]),
                entry(proof=[run(V), run(V), {"verdict": "violated"}]),
                entry(proof=[run(V), run(V), run(H)])):
        (tmp_path / "bases" / "k.json").write_text(json.dumps(bad.to_json()))
        assert store.lookup("k", CHECK_ID, LANE) == (None, Lookup.CONTRADICTED), bad


def test_no_cache_and_a_discarded_store_answer_nothing(tmp_path: Path) -> None:
    assert BaseCache(AdmissionCache(None)).lookup("k", CHECK_ID, LANE)[1] is Lookup.MISS
    verdicts = AdmissionCache(tmp_path)
    (tmp_path / "bases").mkdir()
    (tmp_path / "bases" / "k.json").write_text(json.dumps(entry().to_json()))
    verdicts.discard()
    assert BaseCache(verdicts).lookup("k", CHECK_ID, LANE) == (None, Lookup.MISS)


def test_the_plan_runs_a_sampled_hit_again_and_answers_for_the_others(tmp_path: Path) -> None:
    (tmp_path / "bases").mkdir()
    (tmp_path / "bases" / "k.json").write_text(json.dumps(entry().to_json()))
    cell = Cell(CHECK_ID, LANE)
    kept = BasePlan.of(BaseCache(AdmissionCache(tmp_path, verify=0.0)), {cell: "k"})
    assert set(kept.hits) == {cell} and not kept.verifying
    sampled = BasePlan.of(BaseCache(AdmissionCache(tmp_path, verify=1.0)), {cell: "k"})
    assert set(sampled.verifying) == {cell} and not sampled.hits
    assert Judgeability.of(sampled.verifying[cell].base) is Judgeability.NOT_JUDGEABLE


# -- the key ---------------------------------------------------------------------------------

def base_key(**change: object) -> str:
    parts: dict[str, object] = dict(reruns=3, seed=0, params={"trials": 2}, limit="rule",
                                     runner="arib.admission")
    lane = change.pop("lane", SQLITE_FILE)
    parts.update(change)
    return keys.base_key(get_check(CHECK_ID), lane, **parts)  # type: ignore[arg-type]


def test_the_base_key_follows_the_run_the_lane_and_the_sources(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from arib.targets.openai_agents.sdk import ASYNC_SQLITE_FILE

    first = base_key()
    assert base_key() == first
    others = [base_key(reruns=4), base_key(seed=1), base_key(params={"trials": 3}),
              base_key(limit="other"), base_key(runner="arib.judging"),
              base_key(lane=ASYNC_SQLITE_FILE),
              base_key(lane=dataclasses.replace(SQLITE_FILE, description="changed"))]
    assert first not in others and len(set(others)) == len(others)
    real = keys.source_hash
    for module in (SQLITE_FILE.module, "arib.checks.openai_agents.conc_003"):
        monkeypatch.setattr(keys, "source_hash", lambda *mods, m=module: real(*mods) + (
            "*" if m in mods else ""))
        assert base_key() != first, module
    monkeypatch.setattr(keys, "source_hash", real)
    monkeypatch.setattr(keys, "sdk_version", lambda: "0.0.1")
    assert base_key() != first


# -- admission -------------------------------------------------------------------------------

async def _violated_off_the_reference(ctx):  # type: ignore[no-untyped-def]
    # holds on the gates' reference (and its forced mutant raises on every call), violated on
    # every other lane: a real backend that breaks the invariant itself
    if ctx.target.name != "reference":
        return Trial(ctx.index, ctx.seed, True)
    handle = await ctx.open()
    await handle.session.add_items([{"role": "user", "content": "x"}])
    return Trial(ctx.index, ctx.seed, False)


def base_check() -> object:
    """CONC-003 with a pair on the reference and one on sqlite-file, whose base is violated."""
    return dataclasses.replace(
        get_check(CHECK_ID), generated=(), run_trial=_violated_off_the_reference,
        mutants=("reference_silent_drop_after_close", "sqlite_silent_drop_after_close"))


def config(tmp_path: Path, verify: float = 0.0, root: Path | None | str = "c"
           ) -> AdmissionConfig:
    cache = AdmissionCache(tmp_path / root if isinstance(root, str) else root, verify=verify)
    return AdmissionConfig(reruns=1, workers=2, quiet=True, cache=cache, generated=False)


@pytest.fixture
def roles(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    from tests.test_admission import roles_run

    return roles_run(monkeypatch)


def statuses(admission: object) -> list[tuple[str, MutantStatus]]:
    return [(r.target, r.status) for r in admission.results]  # type: ignore[attr-defined]


def test_a_base_violated_every_time_is_run_once_then_kept(tmp_path: Path,
                                                          roles: list[list[str]]) -> None:
    (first,) = admit([base_check()], config(tmp_path))  # type: ignore[list-item]
    (second,) = admit([base_check()], config(tmp_path))  # type: ignore[list-item]
    assert roles[0].count("base") == 3 and roles[1:] == [[]]
    assert len(list((tmp_path / "c" / "bases").glob("*.json"))) == 1
    # the reference's pair is judged as before (this trial never closes: it survives)
    assert statuses(first) == statuses(second) == [
        ("reference", MutantStatus.SURVIVED), (LANE, MutantStatus.NOT_JUDGEABLE)]
    assert first.reasons == second.reasons
    evidence = second.results[1].evidence
    assert "gave violated, violated, violated (an earlier run's, reused" in evidence


def test_no_cache_runs_the_base_every_time(tmp_path: Path, roles: list[list[str]]) -> None:
    for _ in range(2):
        (a,) = admit([base_check()], config(tmp_path, root=None))  # type: ignore[list-item]
        assert statuses(a)[1] == (LANE, MutantStatus.NOT_JUDGEABLE)
    assert [r.count("base") for r in roles] == [3, 3]


def test_the_sample_runs_a_kept_base_again_and_counts_its_agreement(
        tmp_path: Path, roles: list[list[str]]) -> None:
    admit([base_check()], config(tmp_path))  # type: ignore[list-item]
    cfg = config(tmp_path, verify=1.0)
    (a,) = admit([base_check()], cfg)  # type: ignore[list-item]
    assert roles[1].count("base") == 3
    assert not cfg.cache.disagreements and not cfg.cache.discarded
    assert statuses(a)[1] == (LANE, MutantStatus.NOT_JUDGEABLE)


def test_a_kept_base_that_holds_now_discards_the_store_and_everything_runs_again(
        tmp_path: Path, roles: list[list[str]]) -> None:
    admit([base_check()], config(tmp_path))  # type: ignore[list-item]
    # The same key (a test's replaced trial is not in the check's source), holding now: a
    # stale entry as the sample sees it.
    holding = dataclasses.replace(base_check(), run_trial=get_check(CHECK_ID).run_trial,
                                  params=get_check(CHECK_ID).params)  # type: ignore[call-overload]
    cfg = config(tmp_path, verify=1.0)
    (a,) = admit([holding], cfg)
    assert cfg.cache.discarded
    assert f"clean base of {CHECK_ID} on {LANE}: cached not_judgeable, judged judgeable" in (
        cfg.cache.disagreements)
    assert [r.count("base") for r in roles[1:]] == [3, 3]  # the second pass runs it again
    assert statuses(a)[1][0] == LANE and statuses(a)[1][1] is not MutantStatus.NOT_JUDGEABLE
    # what this run contradicted is gone: the next run, unsampled, does not call the lane's
    # mutant not judgeable (its pair, judged on a base that held, comes from the verdicts)
    assert list((tmp_path / "c" / "bases").glob("*.json")) == []
    (again,) = admit([holding], config(tmp_path))
    assert statuses(again)[1] == statuses(a)[1]
