"""Generated mutants kept across runs (arib.caches.generation): a kept report loads back
equal, swaps included; an entry that fails to load is generated again and counted; a changed
module source is another key; nothing is kept without a cache folder."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from arib.caches.generation import (
    GenerationStore,
    _splice,
    _unsplice,
    generation_cache,
    generation_key,
    same,
)
from arib.ground.model import MutantKind
from arib.ground.sources import installed_source
from arib.mutants import pool
from arib.mutants.generate import GenerationReport, generate
from arib.targets.openai_agents.sdk import SQLITE_FILE, SQLITE_MEMORY

MODULE, BACKEND = SQLITE_FILE.module, SQLITE_FILE.backend


@pytest.fixture(scope="module")
def source() -> str:
    return installed_source(MODULE)[1]


@pytest.fixture(scope="module")
def report() -> GenerationReport:
    return generate(SQLITE_FILE)


@pytest.fixture
def fresh_pool() -> Iterator[None]:
    """The pool with nothing generated yet in this process, and no store after the test."""
    pool.reset()
    yield
    pool.reset()


@pytest.mark.parametrize(("base", "text"), [
    ("", ""), ("abc", "abc"), ("abc", "abXc"), ("abc", ""), ("", "x"), ("aaaa", "aa"),
    ("aa", "aaaa"), ("xay", "xby"), ("abcabc", "abc"), ("line\n", "line\nmore\n"),
    ("é\u2028x", "éyx"), ("a\U0001d11eb", "a\U0001d120b"), ("\x00\n", "\x00\r\n"),
])
def test_a_splice_gives_back_the_text(base: str, text: str) -> None:
    splice = _splice(base, text)
    assert _unsplice(base, splice) == text
    assert len(splice[2]) <= len(text)


@pytest.mark.parametrize(("splice", "rule"), [
    ([2, 2, ""], "does not fit"), ([0, 0, None], "expected a string"),
    ([True, 0, ""], "expected an integer"), (["1", 0, ""], "expected an integer"),
    ([0, 0], "a splice is"), ("abc", "a splice is"),
])
def test_a_splice_that_does_not_fit_is_refused(splice: object, rule: str) -> None:
    with pytest.raises(ValueError, match=rule):
        _unsplice("abc", splice)


def test_a_kept_report_loads_back_equal_swaps_included(tmp_path: Path, source: str,
                                                       report: GenerationReport) -> None:
    store = GenerationStore(tmp_path)
    assert store.load(MODULE, BACKEND, source) is None  # nothing kept yet
    assert store.keep(MODULE, BACKEND, source, report)
    again = GenerationStore(tmp_path).load(MODULE, BACKEND, source)
    assert again is not None and same(again, report)
    assert [m.swap for m in again.mutants] == [m.swap for m in report.mutants]
    assert all(m.source for m in again.mutants)
    assert store.counts == {"hit": 0, "miss": 1, "unreadable": 0, "contradicted": 0}
    assert store.kept == 1
    assert "0 of 1 module(s) from the cache, 1 generated" in store.describe()


def test_another_source_or_generator_input_is_another_key(source: str) -> None:
    key = generation_key(MODULE, BACKEND, source)
    assert key == generation_key(MODULE, BACKEND, source)
    assert key != generation_key(MODULE, BACKEND, source + "\n# edited\n")
    assert key != generation_key(MODULE, "OtherClass", source)
    assert key != generation_key("other.module", BACKEND, source)


@pytest.mark.parametrize("garbage", [b"{not json", b"\xff\xfe\x00", b'{"format": 99}',
                                     b'{"format": 1}', b"[]"])
def test_an_entry_that_fails_to_load_is_generated_again_and_counted(
        tmp_path: Path, source: str, report: GenerationReport, garbage: bytes) -> None:
    store = GenerationStore(tmp_path)
    assert store.keep(MODULE, BACKEND, source, report)
    (entry,) = (tmp_path / "generated").iterdir()
    entry.write_bytes(garbage)
    assert store.load(MODULE, BACKEND, source) is None
    assert store.counts["unreadable"] == 1
    assert "1 generated (1 unreadable, generated again)" in store.describe()


def test_an_entry_of_another_module_is_not_trusted(tmp_path: Path, source: str,
                                                   report: GenerationReport) -> None:
    store = GenerationStore(tmp_path)
    assert store.keep(MODULE, BACKEND, source, report)
    (entry,) = (tmp_path / "generated").iterdir()
    entry.write_text(entry.read_text().replace(f'"module": "{MODULE}"', '"module": "x.y"'))
    assert store.load(MODULE, BACKEND, source) is None
    assert store.counts["unreadable"] == 1


def test_an_entry_whose_fields_have_the_wrong_type_is_not_trusted(
        tmp_path: Path, source: str, report: GenerationReport) -> None:
    store = GenerationStore(tmp_path)
    assert store.keep(MODULE, BACKEND, source, report)
    (entry,) = (tmp_path / "generated").iterdir()
    data = json.loads(entry.read_text())
    data["mutants"][0]["swap"]["flags"] = "0"
    entry.write_text(json.dumps(data))
    assert store.load(MODULE, BACKEND, source) is None
    assert store.counts["unreadable"] == 1


def test_a_folder_that_cannot_be_written_keeps_nothing_and_raises_nothing(
        tmp_path: Path, source: str, report: GenerationReport) -> None:
    (tmp_path / "generated").write_text("a file where the folder should be")
    store = GenerationStore(tmp_path)
    assert not store.keep(MODULE, BACKEND, source, report)
    assert store.kept == 0


def test_without_a_cache_folder_nothing_is_kept(source: str, report: GenerationReport) -> None:
    store = GenerationStore(None)
    assert not store.keep(MODULE, BACKEND, source, report)
    assert store.load(MODULE, BACKEND, source) is None
    assert "no cache" in store.describe()


def test_a_report_that_is_not_all_generated_edits_is_not_kept(
        tmp_path: Path, source: str, report: GenerationReport) -> None:
    odd = GenerationReport(report.target, report.module,
                           (*report.mutants, dataclasses.replace(
                               report.mutants[0], kind=MutantKind.HANDWRITTEN)),
                           report.dropped_noncompiling, report.dropped_details,
                           report.sites_by_operator)
    assert not GenerationStore(tmp_path).keep(MODULE, BACKEND, source, odd)
    assert not (tmp_path / "generated").exists()


def test_the_pool_keeps_once_then_loads_for_every_lane_of_the_module(
        tmp_path: Path, report: GenerationReport, fresh_pool: None) -> None:
    store = GenerationStore(tmp_path)
    pool.use_store(store)
    assert pool.generated_for_lane(SQLITE_FILE.name) == report
    assert store.counts["miss"] == 1 and store.kept == 1
    in_memory = pool.generated_for_lane(SQLITE_MEMORY.name)  # same module: not looked up
    assert store.counts["miss"] == 1 and in_memory.target == SQLITE_MEMORY.name
    pool.generated_for_lane.cache_clear()
    pool._BY_MODULE.clear()  # a new run
    again = pool.generated_for_lane(SQLITE_FILE.name)
    assert store.counts["hit"] == 1 and same(again, report)
    pool.reset()
    pool.use_store(store)  # a new run that asks for the other lane first
    assert same(pool.generated_for_lane(SQLITE_MEMORY.name), generate(SQLITE_MEMORY))
    assert store.counts["hit"] == 2


def test_the_commands_block_puts_the_previous_store_back(tmp_path: Path,
                                                         fresh_pool: None) -> None:
    before = GenerationStore(tmp_path)
    pool.use_store(before)
    with generation_cache(no_cache=True) as store:
        assert pool.use_store(store) is store and store.root is None
    assert pool.use_store(None) is before
