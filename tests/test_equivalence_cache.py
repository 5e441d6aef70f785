"""Equivalence classes kept across runs (arib.caches.equivalence): kept classes load back
equal and spare the compiles; an entry that fails to load or does not fit the mutants is
classified again and counted; a changed mutant is another key; no folder keeps nothing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from arib.caches import equivalence as ec
from arib.caches.equivalence import (
    EquivalenceStore,
    classified,
    equivalence_cache,
    equivalence_key,
)
from arib.ground.model import MutantStatus
from arib.mutants import equivalence
from arib.mutants.base import MutantSpec
from tests.test_equivalence import ORIGINAL, mutant

MUTANTS = [
    mutant("Store.add", "return 2", "return 1 + 1"),  # equivalent
    mutant("Store.add", "return 2", "return 3"),
    mutant("Store.add", "if len(self.items) < self.limit:",
           "if (len(self.items) < self.limit):"),  # equivalent
    mutant("Store.add", "        return 2\n", "        return 3\n\n"),  # duplicate of "3"
    mutant("helper", "x + 1", "x - 1"),
]


def _no_compiles(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: object) -> None:
        raise AssertionError("classified again although the entry was kept")

    monkeypatch.setattr(ec, "classify", refuse)


def _entry(root: Path, mutants: list[MutantSpec] = MUTANTS) -> Path:
    return root / "equivalence" / f"{equivalence_key(ORIGINAL, mutants)}.json"


def test_kept_classes_load_back_equal_without_a_compile(tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    expected = equivalence.classify(ORIGINAL, MUTANTS)
    assert {f.status for f in expected.values()} == {MutantStatus.EQUIVALENT,
                                                     MutantStatus.DUPLICATE}
    cold = EquivalenceStore(tmp_path)
    assert cold.classify(ORIGINAL, MUTANTS) == expected
    assert (cold.counts["miss"], cold.kept) == (1, 1) and _entry(tmp_path).is_file()
    _no_compiles(monkeypatch)
    warm = EquivalenceStore(tmp_path)
    assert warm.classify(ORIGINAL, list(reversed(MUTANTS))) == expected  # order is no input
    assert (warm.counts["hit"], warm.kept) == (1, 0)
    assert warm.describe() == "equivalence: 1 of 1 lane(s) from the cache, 0 compared, 0 kept"


@pytest.mark.parametrize("text", [
    "{not json",
    '{"format": 99, "found": []}',
    '{"format": 1}',
    # a mutant id that is not in the set
    '{"format": 1, "found": [{"mutant_id": "m-000000000000", "status": "equivalent", '
    '"reason": "r", "of": null}]}',
    # a status the classifier never gives
    '{"format": 1, "found": [{"mutant_id": "ID", "status": "killed", "reason": "r", '
    '"of": null}]}',
    # a duplicate of itself
    '{"format": 1, "found": [{"mutant_id": "ID", "status": "duplicate", "reason": "r", '
    '"of": "ID"}]}',
    # an equivalent that names a first mutant
    '{"format": 1, "found": [{"mutant_id": "ID", "status": "equivalent", "reason": "r", '
    '"of": "ID"}]}',
])
def test_an_entry_that_fails_to_load_is_classified_again_and_counted(tmp_path: Path,
                                                                     text: str) -> None:
    path = _entry(tmp_path)
    path.parent.mkdir(parents=True)
    path.write_text(text.replace("ID", MUTANTS[1].id), encoding="utf-8")
    store = EquivalenceStore(tmp_path)
    assert store.classify(ORIGINAL, MUTANTS) == equivalence.classify(ORIGINAL, MUTANTS)
    assert store.counts["unreadable"] == 1 and store.kept == 1
    assert "1 unreadable, compared again" in store.describe()
    assert json.loads(path.read_text(encoding="utf-8"))["format"] == 1  # written again


def test_a_changed_mutant_or_module_is_another_key() -> None:
    key = equivalence_key(ORIGINAL, MUTANTS)
    changed = [*MUTANTS[:-1], mutant("helper", "x + 1", "x + 2")]
    assert equivalence_key(ORIGINAL, changed) != key
    assert equivalence_key(ORIGINAL + "\n# more\n", MUTANTS) != key
    assert equivalence_key(ORIGINAL, MUTANTS[:-1]) != key


def test_no_folder_keeps_nothing_and_a_folder_that_cannot_be_written_fails_nothing(
        tmp_path: Path) -> None:
    expected = equivalence.classify(ORIGINAL, MUTANTS)
    none = EquivalenceStore(None)
    assert none.classify(ORIGINAL, MUTANTS) == expected and none.kept == 0
    assert none.describe() == "equivalence: no cache (--no-cache), every module compared"
    blocked = tmp_path / "file"
    blocked.write_text("", encoding="utf-8")  # a file where the folder should be
    store = EquivalenceStore(blocked)
    assert store.classify(ORIGINAL, MUTANTS) == expected and store.kept == 0


def test_the_command_store_is_used_within_its_block_only(tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("arib.caches.equivalence.DEFAULT_DIR", tmp_path)
    with equivalence_cache(no_cache=False) as store:
        classified(ORIGINAL, MUTANTS)
        with equivalence_cache(no_cache=True) as inner:
            classified(ORIGINAL, MUTANTS)
        classified(ORIGINAL, MUTANTS)
    assert (store.counts["miss"], store.counts["hit"], store.kept) == (1, 1, 1)
    assert inner.counts["miss"] == 1 and inner.kept == 0
    _no_compiles(monkeypatch)
    with pytest.raises(AssertionError, match="classified again"):
        classified(ORIGINAL, MUTANTS)  # outside every block: no store, so it compares
