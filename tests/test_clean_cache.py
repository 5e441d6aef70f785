"""harness/caches/clean.py: clean runs kept across runs and versions, reused only where what
they executed is unchanged."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from arib.caches.clean import CleanCache, CleanEntry, Reuse, keepable
from arib.caches.inputs import Installation
from arib.ground.model import CleanBase, Verdict

H, V, NA = Verdict.HELD, Verdict.VIOLATED, Verdict.NOT_APPLICABLE
INPUTS = {"functions": {}, "distributions": {"anyio": "4.0"}}
CELL = ("ARIB-ATOM-001", "sqlite-file")


def base(*verdicts: Verdict, cached: bool = False) -> CleanBase:
    return CleanBase("ARIB-ATOM-001", "sqlite-file", verdicts, 0.25, cached=cached)


def where(anyio: str = "4.0") -> Installation:
    return Installation(roots=("/nowhere/",), owners={}, versions={"anyio": anyio},
                        requires={})


def entry(*verdicts: Verdict) -> CleanEntry:
    return CleanEntry(base(*(verdicts or (H, H, H))), frozenset({3, 4, 5, 9}), INPUTS)


def test_an_entry_round_trips_through_json() -> None:
    kept = entry()
    assert CleanEntry.from_json(kept.to_json()) == kept
    reused = CleanBase.from_json({**kept.base.to_json(), "reused": True})
    assert reused.reused and reused.judgeable and "reused" in reused.describe()


@pytest.mark.parametrize("verdicts,cached,keep", [
    ((H, H, H), False, True),
    ((H, V, H), False, False),  # perhaps the machine's load: run again next time
    ((NA, NA, NA), False, False),  # decided from claims the recorder never saw
    ((), False, False),
    ((H, H, H), True, False),  # admission's "not run": nothing ran to keep
])
def test_only_clean_runs_that_all_held_are_kept(verdicts: tuple[Verdict, ...], cached: bool,
                                                keep: bool) -> None:
    assert keepable(base(*verdicts, cached=cached)) is keep


def test_a_kept_entry_is_reused_while_what_it_executed_is_unchanged(tmp_path: Path) -> None:
    keep(tmp_path, entry())
    got, state = CleanCache(tmp_path, where()).lookup("k", *CELL)
    assert state is Reuse.REUSED and got is not None
    assert got == entry()  # as kept: the survey marks the base reused where it stands in
    assert CleanCache(tmp_path, where("4.1")).lookup("k", *CELL) == (None, Reuse.CHANGED)
    assert CleanCache(tmp_path, where()).lookup("other", *CELL) == (None, Reuse.MISSING)
    assert CleanCache(None, where()).lookup("k", *CELL) == (None, Reuse.MISSING)  # --no-cache


def keep(root: Path, kept: CleanEntry) -> None:
    CleanCache(root, where()).settle("k", kept.base, kept)


def test_a_clean_base_that_did_not_hold_is_not_kept_and_its_key_is_never_reused(
        tmp_path: Path) -> None:
    keep(tmp_path, entry())
    flaky = entry(H, V, H)
    keep(tmp_path, flaky)  # the same key measured again (its inputs changed), lost a race
    assert CleanCache(tmp_path, where()).lookup("k", *CELL) == (None, Reuse.UNSTABLE)
    keep(tmp_path, entry())  # a lucky run later does not make it reusable
    assert CleanCache(tmp_path, where()).lookup("k", *CELL) == (None, Reuse.UNSTABLE)
    assert not (tmp_path / "clean" / "k.json").exists()


def test_an_abstention_or_unnamed_inputs_keep_nothing_and_mark_nothing(tmp_path: Path) -> None:
    cache = CleanCache(tmp_path, where())
    cache.settle("k", base(NA, NA, NA), None)
    cache.settle("k", base(H, H, H), None)  # held, but what it executed cannot be named
    assert cache.lookup("k", *CELL) == (None, Reuse.MISSING)
    cache.settle("k", base(H, H, H), entry())
    assert cache.lookup("k", *CELL)[1] is Reuse.REUSED
    CleanCache(None, where()).settle("k", base(H, V, H), None)  # --no-cache: nothing written


@pytest.mark.parametrize("text", ["{", "[]", '{"base": {}, "lines": "", "inputs": {}}',
                                  '{"base": {"check_id": "c", "lane": "l", "verdicts": '
                                  '["held"], "duration_s": 1}, "lines": "1", "inputs": []}'])
def test_an_entry_that_fails_to_load_is_unreadable_and_never_trusted(tmp_path: Path,
                                                                     text: str) -> None:
    (tmp_path / "clean").mkdir()
    (tmp_path / "clean" / "k.json").write_text(text)
    assert CleanCache(tmp_path, where()).lookup("k", *CELL) == (None, Reuse.UNREADABLE)


def test_a_non_utf8_entry_is_unreadable(tmp_path: Path) -> None:
    (tmp_path / "clean").mkdir()
    (tmp_path / "clean" / "k.json").write_bytes(b"\xff\xfe{")
    assert CleanCache(tmp_path, where()).lookup("k", *CELL) == (None, Reuse.UNREADABLE)


@pytest.mark.parametrize("cell", [("ARIB-ATOM-002", "sqlite-file"), ("ARIB-ATOM-001", "lane")])
def test_an_entry_for_another_cell_is_unreadable(tmp_path: Path, cell: tuple[str, str]) -> None:
    keep(tmp_path, entry())
    assert CleanCache(tmp_path, where()).lookup("k", *cell) == (None, Reuse.UNREADABLE)


@pytest.mark.parametrize("stored", [base(H, V, H), base(cached=True), base(NA, NA, NA)])
def test_an_entry_that_could_not_have_been_kept_is_unreadable(tmp_path: Path,
                                                              stored: CleanBase) -> None:
    (tmp_path / "clean").mkdir()
    forged = CleanEntry(stored, frozenset({1}), INPUTS)
    (tmp_path / "clean" / "k.json").write_text(json.dumps(forged.to_json()))
    assert CleanCache(tmp_path, where()).lookup("k", *CELL) == (None, Reuse.UNREADABLE)
