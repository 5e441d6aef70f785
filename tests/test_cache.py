"""harness/caches/verdicts.py: the verdict cache, its lookups counted, and the killers' hints."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from arib.caches.verdicts import AdmissionCache, Lookup, contradiction
from arib.ground.model import MutantKind, MutantResult, MutantStatus, Verdict


def result() -> MutantResult:
    return MutantResult("ARIB-CONC-001", "m-1", MutantKind.GENERATED, "reference", "d",
                        MutantStatus.KILLED, (Verdict.VIOLATED,), Verdict.VIOLATED, None, None,
                        0.5)


def proof(*verdicts: str) -> list[dict[str, object]]:
    """The evidence of reruns with these verdicts (a violated one with its violating trial)."""
    return [{"verdict": v, "trials": 1, "violating_trials": int(v == "violated"), "modes": {},
             "counts": {}, "sample": "lost 1" if v == "violated" else ""}
            for v in verdicts or ("violated",)]


def put(cache: AdmissionCache, key: str, value: MutantResult | None = None) -> None:
    cache.put(key, value or result(), proof(*(v.value for v in (value or result()).runs)),
              False)


def test_lookups_are_counted_as_hits_misses_and_unreadable(tmp_path: Path) -> None:
    cache = AdmissionCache(tmp_path)
    assert cache.lookup("k") == (None, Lookup.MISS)
    put(cache, "k")
    assert cache.lookup("k") == (result(), Lookup.HIT)
    (tmp_path / "torn.json").write_text('{"check_id": "ARIB-CONC-')
    (tmp_path / "alien.json").write_text('["not", "a", "result"]')
    assert cache.lookup("torn") == (None, Lookup.UNREADABLE)
    assert cache.get("alien") is None
    (tmp_path / "binary.json").write_bytes(b"\xff\xfe{")  # not UTF-8: no crash
    assert cache.lookup("binary") == (None, Lookup.UNREADABLE)
    assert cache.counts == {"hit": 1, "miss": 1, "unreadable": 3, "contradicted": 0,
                            "verified": 0, "agreed": 0}


def test_an_unreadable_entry_is_replaced_by_the_next_result(tmp_path: Path) -> None:
    cache = AdmissionCache(tmp_path)
    (tmp_path / "k.json").write_text("{")
    assert cache.lookup("k")[1] is Lookup.UNREADABLE
    put(cache, "k")
    assert cache.lookup("k")[1] is Lookup.HIT


def test_no_cache_misses_everything_and_stores_nothing(tmp_path: Path) -> None:
    cache = AdmissionCache(None)
    put(cache, "k")
    cache.remember_killer("h", "ARIB-CONC-001")
    assert cache.lookup("k") == (None, Lookup.MISS) and cache.killer("h") is None


def test_the_killer_of_a_mutant_is_remembered_as_a_hint(tmp_path: Path) -> None:
    cache = AdmissionCache(tmp_path)
    assert cache.killer("h") is None
    cache.remember_killer("h", "ARIB-POP-001")
    assert AdmissionCache(tmp_path).killer("h") == "ARIB-POP-001"  # another run reads it
    cache.remember_killer("h", "ARIB-CONC-001")
    assert cache.killer("h") == "ARIB-CONC-001"
    assert not list(tmp_path.rglob(".*"))  # no temporary file left behind


def test_an_entry_is_read_from_disk_once_a_run_and_written_for_the_next(tmp_path: Path) -> None:
    put(AdmissionCache(tmp_path), "k")
    cache = AdmissionCache(tmp_path)  # another run: reads what the first one wrote
    assert cache.holds("k") and cache.counts["hit"] == 0  # holds() is not a lookup
    (tmp_path / "k.json").write_text("{")  # torn after it was read: this run keeps its copy
    assert cache.lookup("k") == (result(), Lookup.HIT)
    assert AdmissionCache(tmp_path).lookup("k")[1] is Lookup.UNREADABLE  # a new run reads again


def _rewrite(path: Path, **changes: object) -> None:
    entry = json.loads(path.read_text())
    entry.update(changes)
    path.write_text(json.dumps(entry))


@pytest.mark.parametrize(("changes", "why"), [
    ({"status": "survived"}, "status 'survived', but its evidence (violated) gives 'killed'"),
    ({"status": "survived", "runs": ["held"]}, "runs ['held'] are not its evidence's"),
    ({"proof": proof("held"), "runs": ["held"]},
     "status 'killed', but its evidence (held) gives 'survived'"),
    ({"proof": [{"verdict": "violated", "violating_trials": 0}]}, "with 0 violating trial"),
    ({"proof": None}, "keeps no evidence"),
])
def test_an_entry_whose_evidence_contradicts_its_status_is_refused(
        tmp_path: Path, changes: dict[str, object], why: str) -> None:
    put(AdmissionCache(tmp_path), "k")
    _rewrite(tmp_path / "k.json", **changes)
    cache = AdmissionCache(tmp_path)
    assert cache.lookup("k") == (None, Lookup.CONTRADICTED)
    assert not cache.holds("k") and cache.counts["contradicted"] == 1
    assert why in (cache.why_refused("k", False) or "")


def test_an_entry_written_before_entries_kept_their_evidence_is_refused(tmp_path: Path) -> None:
    (tmp_path / "k.json").write_text(json.dumps(result().to_json()))
    assert AdmissionCache(tmp_path).lookup("k")[1] is Lookup.CONTRADICTED


# A rerun that timed out, as the cache's evidence keeps it now, and as entries written before
# ``timed_out`` existed kept it (the old mark: the one mode of an error finding).
TIMED_OUT = [{"verdict": "error", "violating_trials": 0, "modes": {}, "timed_out": True}]
OLD_TIMED_OUT = [{"verdict": "error", "violating_trials": 0, "modes": {"timeout": 1}}]


@pytest.mark.parametrize("timed_out", [TIMED_OUT, OLD_TIMED_OUT], ids=["now", "before"])
def test_a_timeout_is_a_kill_only_where_the_check_says_so(timed_out) -> None:
    killed = dataclasses.replace(result(), runs=(Verdict.ERROR,))
    assert contradiction(killed, timed_out, hang_kills=True) is None
    assert "gives 'timeout'" in (contradiction(killed, timed_out, hang_kills=False) or "")
    error = [{**timed_out[0], "timed_out": False}]  # an error that did not time out
    assert "gives 'error'" in (contradiction(killed, error, hang_kills=True) or "")


def test_an_entry_kept_with_the_old_timeout_mark_is_read_not_refused(tmp_path: Path) -> None:
    timeout = dataclasses.replace(result(), status=MutantStatus.TIMEOUT, runs=(Verdict.ERROR,))
    (tmp_path / "k.json").write_text(json.dumps(
        {**timeout.to_json(), "proof": OLD_TIMED_OUT, "hang_kills": False}))
    found, state = AdmissionCache(tmp_path).lookup("k", False)
    assert state is Lookup.HIT and found is not None and found.status is MutantStatus.TIMEOUT


def test_the_sample_of_hits_re_judged_is_seeded_and_its_share_is_kept(tmp_path: Path) -> None:
    keys = [f"key-{i}" for i in range(4000)]
    some = AdmissionCache(tmp_path, verify=0.03, seed=7)
    picked = [k for k in keys if some.sampled(k)]
    assert 0.02 * len(keys) < len(picked) < 0.04 * len(keys)
    assert picked == [k for k in keys if AdmissionCache(tmp_path, 0.03, 7).sampled(k)]
    assert picked != [k for k in keys if AdmissionCache(tmp_path, 0.03, 8).sampled(k)]
    assert not any(AdmissionCache(tmp_path, verify=0.0).sampled(k) for k in keys)
    assert all(AdmissionCache(tmp_path, verify=1.0).sampled(k) for k in keys)


def test_what_a_run_wrote_is_never_in_its_own_sample_and_unsampled_restores_the_share(
        tmp_path: Path) -> None:
    cache = AdmissionCache(tmp_path, verify=1.0)
    assert cache.sampled("k") and cache.sampled("gate-key")
    put(cache, "k")  # judged by this run: its own sample does not judge it again
    cache.written("gate-key")  # a gate or base this run kept
    assert not cache.sampled("k") and not cache.sampled("gate-key")
    assert AdmissionCache(tmp_path, verify=1.0).sampled("k")  # the next run's sample may
    with cache.unsampled():
        assert cache.verify == 0.0 and not cache.sampled("other")
    assert cache.verify == 1.0 and cache.sampled("other")
    cache.lookup("k")
    cache.checked("a pair", MutantStatus.KILLED, MutantStatus.KILLED)
    cache.reset_counts()
    assert cache.counts == {"hit": 0, "miss": 0, "unreadable": 0, "contradicted": 0,
                            "verified": 0, "agreed": 0}


def test_a_disagreement_is_reported_and_discard_answers_nothing_more(tmp_path: Path) -> None:
    cache = AdmissionCache(tmp_path, verify=1.0)
    put(cache, "k")
    cache.checked("ARIB-CONC-001 on m-1@reference", MutantStatus.KILLED, MutantStatus.KILLED)
    cache.checked("ARIB-CONC-001 on m-2@reference", MutantStatus.KILLED, MutantStatus.SURVIVED)
    assert cache.counts["verified"] == 2 and cache.counts["agreed"] == 1
    assert cache.disagreements == ["ARIB-CONC-001 on m-2@reference: cached killed, judged "
                                   "survived"]
    cache.discard()
    assert cache.lookup("k") == (None, Lookup.MISS)
    line = cache.describe()
    assert "2 hits re-judged (100% sample" in line and "1 disagreed" in line
    assert "discarded for the run and everything judged again" in line
    put(cache, "k2")  # what is judged again is written over the store
    assert AdmissionCache(tmp_path).lookup("k2")[1] is Lookup.HIT


def _flip_every_kill(cache_dir: Path, *, with_evidence: bool) -> int:
    """Make every cached kill a survivor: its status only, or status, runs and evidence alike
    (a well-formed wrong entry); returns how many entries were changed."""
    flipped = 0
    for path in cache_dir.glob("*.json"):
        entry = json.loads(path.read_text())
        if entry.get("status") != "killed":
            continue
        changes: dict[str, object] = {"status": "survived"}
        if with_evidence:
            changes["runs"] = ["held" for _ in entry["runs"]]
            changes["proof"] = [dict(run, verdict="held", violating_trials=0, modes={})
                                for run in entry["proof"]]
        _rewrite(path, **changes)
        flipped += 1
    return flipped


def _scores(out: Path) -> dict[str, object]:
    return {p.name: json.loads(p.read_text())["scores"] for p in sorted(out.glob("*.json"))
            if p.name != "mutation-report.json"}


def test_flipped_entries_are_refused_or_caught_by_re_judging(tmp_path: Path) -> None:
    """The toy survey, warm: entries flipped without their evidence are refused; flipped with
    it, they pass the evidence check and are caught by --verify-cache, which discards the
    store and judges everything again: the scores are the true ones either way."""
    from tests.test_family import harness, install_entry_point

    env = install_entry_point(tmp_path / "env", "toy-notes", "arib_toy:FAMILY")
    survey = ["survey", "--quiet", "--write", "--fail-under", "1"]
    first = harness(env, *survey, "--out", "true")
    assert first.returncode == 0, first.stdout + first.stderr
    truth = _scores(env / "true")
    cache_dir = tmp_path / "cache"  # the ARIB_CACHE_DIR of every test (tests/conftest.py)
    assert _flip_every_kill(cache_dir, with_evidence=False) > 0
    refused = harness(env, *survey, "--out", "refused", "--verify-sample", "0")
    assert refused.returncode == 0, refused.stdout + refused.stderr
    assert "refused (evidence contradicts status, or none)" in refused.stdout
    assert _scores(env / "refused") == truth
    assert _flip_every_kill(cache_dir, with_evidence=True) > 0
    trusted = harness(env, *survey, "--out", "trusted", "--verify-sample", "0")
    assert _scores(env / "trusted") != truth  # a well-formed wrong entry passes its own check
    assert "from the verdict cache (0 cache hit(s) re-judged" in trusted.stdout
    caught = harness(env, *survey, "--out", "caught", "--verify-cache")
    assert caught.returncode == 0, caught.stdout + caught.stderr
    assert "disagreed" in caught.stdout and "everything judged again" in caught.stdout
    assert _scores(env / "caught") == truth
