"""The generator on the installed SQLiteSession source, the import hook, and read-only-ness."""

from __future__ import annotations

import hashlib
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import agents
import agents.extensions.memory.advanced_sqlite_session  # noqa: F401 - a dependent to re-import
import agents.memory.sqlite_session
import libcst as cst
import pytest

from arib.caches.generation import same
from arib.checks.base import Selector
from arib.ground.child import ChildStatus, run_jobs
from arib.ground.errors import MutantDefinitionError, UnknownNameError
from arib.ground.model import MutantKind
from arib.ground.sources import installed_source
from arib.mutants.base import MutantSpec, mutant_id
from arib.mutants.generate import (
    GenerationReport,
    generate,
    generate_from_source,
    select,
)
from arib.mutants.operators import OPERATORS, Operator
from arib.mutants.pool import generated_for_lane, retarget
from arib.targets.openai_agents.sdk import SQLITE_FILE, SQLITE_MEMORY, SQLITE_MODULE

# Every operator the brief requires, with whether SQLiteSession 0.24.0 has a site for it.
EXPECTED_IN_SQLITE = {
    "drop_lock", "drop_await", "drop_commit", "drop_rollback", "drop_closed_guard",
    "swap_order", "widen_session_filter", "insert_conflict", "flip_comparison",
    "early_return", "single_attempt_loop",
}
PACKAGE_DIR = Path(agents.__file__).parent


def _snapshot() -> dict[str, tuple[int, int, str]]:
    """Size, mtime and content hash of every file of the installed agents package."""
    out = {}
    for root, _, files in os.walk(PACKAGE_DIR):
        for name in files:
            path = Path(root, name)
            st = path.stat()
            out[str(path)] = (st.st_size, st.st_mtime_ns,
                              hashlib.sha256(path.read_bytes()).hexdigest())
    return out


@pytest.fixture(scope="module")
def site_before() -> dict[str, tuple[int, int, str]]:
    return _snapshot()


@pytest.fixture(scope="module")
def report(site_before: Any) -> GenerationReport:
    return generate(SQLITE_FILE)


@pytest.fixture(scope="module")
def source() -> str:
    return installed_source(SQLITE_MODULE)[1]


def test_every_required_operator_with_a_site_yields_mutants(report: GenerationReport) -> None:
    zero = report.zero_site_operators()
    print(f"\noperators with zero sites in {SQLITE_MODULE}: {', '.join(zero) or 'none'}")
    print(f"sites: {report.sites_by_operator}")
    by_op = report.mutants_by_operator()
    for name, sites in report.sites_by_operator.items():
        assert (by_op[name] > 0) == (sites > 0), name
    assert EXPECTED_IN_SQLITE <= {n for n, k in by_op.items() if k > 0}
    assert set(report.sites_by_operator) == set(OPERATORS)
    assert report.dropped_noncompiling == 0, report.dropped_details


def test_mutants_are_well_formed(report: GenerationReport, source: str) -> None:
    ids = [m.id for m in report.mutants]
    assert len(ids) == len(set(ids))
    qualnames = {m.qualname for m in report.mutants}
    assert "SQLiteSession.add_items" in qualnames
    assert "SQLiteSession.add_items.<locals>._add_items_sync" in qualnames
    for m in report.mutants:
        assert m.kind is MutantKind.GENERATED
        assert (m.target, m.module) == ("sqlite-file", SQLITE_MODULE)
        assert m.source is not None and m.source != source
        assert m.original != m.replacement
        assert m.description.startswith(m.qualname + ": ")
    first = report.mutants[0]
    assert first.id == mutant_id(first.module, first.qualname, first.operator, first.original,
                                 first.replacement)
    for m in report.mutants[::15]:  # the full mutated module compiles, not only the method
        assert m.source is not None
        compile(m.source, "<mutant>", "exec")
    json = report.to_json()
    assert json["dropped_noncompiling"] == 0 and len(json["mutants"]) == len(report.mutants)


def test_lanes_on_one_module_share_one_generation_each_on_its_own_lane(
        report: GenerationReport) -> None:
    assert SQLITE_MEMORY.module == SQLITE_FILE.module
    in_file = generated_for_lane(SQLITE_FILE.name)
    in_memory = generated_for_lane(SQLITE_MEMORY.name)
    assert same(in_file, report)  # what generate() gives for the lane itself, swaps included
    assert same(in_memory, generate(SQLITE_MEMORY))
    assert in_memory.target == SQLITE_MEMORY.name
    assert {m.target for m in in_memory.mutants} == {SQLITE_MEMORY.name}
    assert [m.id for m in in_memory.mutants] == [m.id for m in in_file.mutants]
    assert retarget(in_memory, SQLITE_FILE.name) == in_file
    assert retarget(in_file, SQLITE_FILE.name) is in_file


def test_ids_are_stable_across_runs_and_unrelated_edits(report: GenerationReport,
                                                        source: str) -> None:
    again = generate_from_source(source, SQLITE_MODULE, "sqlite-file", "SQLiteSession")
    assert [m.id for m in again.mutants] == [m.id for m in report.mutants]

    head, rest = source.split("\n", 1)  # keep ``from __future__`` the first statement
    edited = f"{head}\n\n\ndef _unrelated_helper():\n    pass\n\n{rest}"
    shifted = generate_from_source(edited, SQLITE_MODULE, "sqlite-file", "SQLiteSession")
    assert [m.id for m in shifted.mutants] == [m.id for m in report.mutants]
    assert shifted.mutants[0].source != report.mutants[0].source  # the lines did move


def test_identical_sites_in_one_qualname_get_distinct_ids() -> None:
    text = (
        "class S:\n"
        "    def f(self, conn):\n"
        "        conn.commit()\n"
        "        conn.commit()\n"
        "    def g(self, conn):\n"
        "        conn.commit()\n"
    )
    rep = generate_from_source(text, "m", "lane", "S", ["drop_commit"])
    assert [m.qualname for m in rep.mutants] == ["S.f", "S.f", "S.g"]
    assert len({m.id for m in rep.mutants}) == 3
    # an edit in S.f leaves S.g's id alone
    edited = text.replace("        conn.commit()\n    def g", "        conn.commit()\n"
                          "        conn.close()\n    def g")
    assert generate_from_source(edited, "m", "lane", "S", ["drop_commit"]).mutants[2].id \
        == rep.mutants[2].id


def test_a_method_not_found_verbatim_falls_back_to_the_whole_module() -> None:
    # the same method text twice: the splice cannot tell them apart, the fallback can
    method = "    def f(self, conn):\n        conn.commit()\n"
    text = f"class A:\n{method}\n\nclass S:\n{method}"
    (mutant,) = generate_from_source(text, "m", "lane", "S", ["drop_commit"]).mutants
    assert mutant.source == f"class A:\n{method}\n\nclass S:\n    def f(self, conn):\n" \
        "        pass\n"


def _make_sync(node: cst.CSTNode) -> list[Any]:
    """async def f(): await x -> def f(): await x (does not compile)"""
    if isinstance(node, cst.FunctionDef) and node.asynchronous is not None:
        return [node.with_changes(asynchronous=None)]
    return []


def test_a_noncompiling_mutation_is_dropped_and_counted(source: str,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(OPERATORS, "broken_sync", Operator("broken_sync", _make_sync,
                                                           "deliberately broken"))
    rep = generate_from_source(source, SQLITE_MODULE, "sqlite-file", "SQLiteSession",
                               ["broken_sync"])
    sites = rep.sites_by_operator["broken_sync"]
    assert rep.dropped_noncompiling > 0
    assert rep.dropped_noncompiling + len(rep.mutants) == sites
    assert len(rep.dropped_details) == rep.dropped_noncompiling
    assert all("SyntaxError" in d and "broken_sync" in d for d in rep.dropped_details)


def test_unknown_operator_and_missing_class_are_named(source: str) -> None:
    with pytest.raises(UnknownNameError, match="no_such_op"):
        generate_from_source(source, SQLITE_MODULE, "sqlite-file", "SQLiteSession",
                             ["no_such_op"])
    with pytest.raises(MutantDefinitionError, match="NoSuchSession"):
        generate_from_source(source, SQLITE_MODULE, "sqlite-file", "NoSuchSession")


def test_select_filters_by_globs_and_names_an_empty_selector(report: GenerationReport) -> None:
    chosen = select(report.mutants, Selector("sqlite-file", "SQLiteSession.add_items*",
                                             "drop_*"))
    assert chosen and all(m.qualname.startswith("SQLiteSession.add_items")
                          and m.operator.startswith("drop_") for m in chosen)
    assert len(select(report.mutants, Selector("sqlite-file"))) == len(report.mutants)
    with pytest.raises(MutantDefinitionError, match=r"operator='nope'.*matches no"):
        select(report.mutants, Selector("sqlite-file", "*", "nope"))
    with pytest.raises(MutantDefinitionError, match="no generated mutant has target"):
        select(report.mutants, Selector("redis", "*", "*"))


def _pick(report: GenerationReport, qualname: str, operator: str) -> MutantSpec:
    (m,) = [m for m in report.mutants if m.qualname == qualname and m.operator == operator]
    return m


def _roundtrip(mutant: MutantSpec | None, root: str) -> dict[str, Any]:
    """In a child: install the mutant, then add one item, read it back, inspect the classes."""
    import asyncio
    import importlib
    import inspect
    import linecache

    if mutant is not None:
        mutant.apply()
    from agents.memory import sqlite_session

    module = importlib.import_module(SQLITE_MODULE)
    cls = module.SQLiteSession
    advanced = importlib.import_module("agents.extensions.memory.advanced_sqlite_session")

    async def run() -> list[Any]:
        session = cls("s", db_path=os.path.join(root, f"{os.getpid()}.db"))
        await session.add_items([{"role": "user", "content": "hi"}])
        items = await session.get_items()
        session.close()
        return items

    return {
        "items": asyncio.run(run()),
        "same_class": sqlite_session.SQLiteSession is cls,
        "package_class": importlib.import_module("agents.memory").SQLiteSession is cls,
        "subclass_base": advanced.AdvancedSQLiteSession.__mro__[1] is cls,
        "file": module.__file__,
        "code_file": cls.add_items.__code__.co_filename,
        "getsource": inspect.getsource(cls.add_items),
        # pop_item sits below the inserted line: only the mutated text has it at this line
        "pop_line": linecache.getline(cls.pop_item.__code__.co_filename,
                                      cls.pop_item.__code__.co_firstlineno),
    }


def test_hook_serves_the_mutated_module_in_a_forked_child(report: GenerationReport,
                                                          tmp_path: Path) -> None:
    mutant = _pick(report, "SQLiteSession.add_items", "early_return")
    clean, mutated = run_jobs([lambda: _roundtrip(None, str(tmp_path)),
                               lambda: _roundtrip(mutant, str(tmp_path))],
                              workers=2, timeout_s=60)
    assert clean.status is ChildStatus.OK, clean.detail
    assert mutated.status is ChildStatus.OK, mutated.detail
    assert clean.value["items"] == [{"role": "user", "content": "hi"}]
    assert mutated.value["items"] == []  # add_items returned before writing
    real = agents.memory.sqlite_session.__file__
    assert mutated.value["file"] == real
    assert mutated.value["code_file"] == f"<mutant {real}>"
    assert clean.value["code_file"] == real
    assert "return\n" in mutated.value["getsource"]
    assert "async def pop_item" in mutated.value["pop_line"]
    assert mutated.value["same_class"] and mutated.value["package_class"]
    assert mutated.value["subclass_base"]
    # the parent process is untouched
    assert sys.modules[SQLITE_MODULE] is agents.memory.sqlite_session
    assert not any(type(f).__name__ == "MutantFinder" for f in sys.meta_path)


def test_nothing_under_site_packages_changed(site_before: dict[str, Any]) -> None:
    assert _snapshot() == site_before


@pytest.fixture(autouse=True)
def _no_leftover_finder() -> Iterator[None]:
    yield
    assert not any(type(f).__name__ == "MutantFinder" for f in sys.meta_path)


def test_prepare_scans_dependents_once_for_every_child(report: GenerationReport,
                                                       tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    from arib.mutants import hook

    scans: list[str] = []
    real_scan = hook._scan_dependents
    monkeypatch.setattr(hook, "_DEPENDENTS", {})
    monkeypatch.setattr(hook, "_scan_dependents",
                        lambda name: scans.append(name) or real_scan(name))
    hook.prepare(SQLITE_MODULE)
    assert scans == [SQLITE_MODULE]
    reimport, _ = hook._dependents(SQLITE_MODULE)
    assert "agents.extensions.memory.advanced_sqlite_session" in reimport
    mutant = _pick(report, "SQLiteSession.add_items", "early_return")
    (outcome,) = run_jobs([lambda: (_roundtrip(mutant, str(tmp_path)), list(scans))],
                          workers=1, timeout_s=60)
    assert outcome.status is ChildStatus.OK, outcome.detail
    roundtrip, child_scans = outcome.value
    assert roundtrip["items"] == [] and child_scans == [SQLITE_MODULE]  # no scan in the child


def test_an_id_names_the_projects_modules_relative_to_the_import_root() -> None:
    # ids made before the import root was ``arib`` and before openai-agents' modules had a
    # folder of their own (results, baselines, survivors) still match
    old = mutant_id("targets.reference", "ReferenceSession.pop_item", "handwritten", "f",
                    "def f():\n    from targets.reference import X\n")
    new = mutant_id("arib.targets.openai_agents.reference", "ReferenceSession.pop_item",
                    "handwritten", "f",
                    "def f():\n    from arib.targets.openai_agents.reference import X\n")
    assert old == new == "m-" + hashlib.sha256("\x1f".join((
        "targets.reference", "ReferenceSession.pop_item", "handwritten", "f",
        "def f():\n    from targets.reference import X\n")).encode()).hexdigest()[:12]
    assert mutant_id("agents.x", "q", "o", "a", "b") != mutant_id("agents.y", "q", "o", "a", "b")
    assert (mutant_id("m", "q", "handwritten", "f", "from arib.targets.openai_agents import x\n")
            == mutant_id("m", "q", "handwritten", "f", "from targets import x\n"))
    # LangGraph's folder is part of its ids, as it always was
    assert (mutant_id("arib.targets.langgraph.reference", "q", "o", "a", "b")
            != mutant_id("targets.reference", "q", "o", "a", "b"))
