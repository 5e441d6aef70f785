"""harness/cache.py: the verdict cache, its lookups counted, and the killers' hints."""

from __future__ import annotations

from pathlib import Path

from harness.cache import AdmissionCache, Lookup
from harness.ground.model import MutantKind, MutantResult, MutantStatus, Verdict


def result() -> MutantResult:
    return MutantResult("ARIB-CONC-001", "m-1", MutantKind.GENERATED, "reference", "d",
                        MutantStatus.KILLED, (Verdict.VIOLATED,), Verdict.VIOLATED, None, None,
                        0.5)


def test_lookups_are_counted_as_hits_misses_and_unreadable(tmp_path: Path) -> None:
    cache = AdmissionCache(tmp_path)
    assert cache.lookup("k") == (None, Lookup.MISS)
    cache.put("k", result())
    assert cache.lookup("k") == (result(), Lookup.HIT)
    (tmp_path / "torn.json").write_text('{"check_id": "ARIB-CONC-')
    (tmp_path / "alien.json").write_text('["not", "a", "result"]')
    assert cache.lookup("torn") == (None, Lookup.UNREADABLE)
    assert cache.get("alien") is None
    (tmp_path / "binary.json").write_bytes(b"\xff\xfe{")  # not UTF-8: no crash
    assert cache.lookup("binary") == (None, Lookup.UNREADABLE)
    assert cache.counts == {"hit": 1, "miss": 1, "unreadable": 3}


def test_an_unreadable_entry_is_replaced_by_the_next_result(tmp_path: Path) -> None:
    cache = AdmissionCache(tmp_path)
    (tmp_path / "k.json").write_text("{")
    assert cache.lookup("k")[1] is Lookup.UNREADABLE
    cache.put("k", result())
    assert cache.lookup("k")[1] is Lookup.HIT


def test_no_cache_misses_everything_and_stores_nothing(tmp_path: Path) -> None:
    cache = AdmissionCache(None)
    cache.put("k", result())
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
    AdmissionCache(tmp_path).put("k", result())
    cache = AdmissionCache(tmp_path)  # another run: reads what the first one wrote
    assert cache.holds("k") and cache.counts["hit"] == 0  # holds() is not a lookup
    (tmp_path / "k.json").write_text("{")  # torn after it was read: this run keeps its copy
    assert cache.lookup("k") == (result(), Lookup.HIT)
    assert AdmissionCache(tmp_path).lookup("k")[1] is Lookup.UNREADABLE  # a new run reads again
