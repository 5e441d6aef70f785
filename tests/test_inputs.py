"""harness/caches/inputs.py: what a clean run executed, named as cache-key inputs."""

from __future__ import annotations

from pathlib import Path
from typing import Any
from unittest.mock import ANY

import pytest

from arib.caches.inputs import (
    Executed,
    Installation,
    function_source_hash,
    inputs_unchanged,
    installed_file,
    merge_executed,
    named_inputs,
)

STORE = '''\
"""A backend."""
TABLE = "items"


def helper(x):
    return x + 1


class Store:
    LIMIT = 10

    def add(self, item):
        return helper(item)

    def pop(self):
        return None
'''


def install(root: Path, source: str, *, other: str = "VERSION = 1\n") -> Installation:
    """A site-packages folder with an SDK module and a file of another distribution."""
    (root / "agents").mkdir(parents=True)
    (root / "agents" / "store.py").write_text(source)
    (root / "anyio").mkdir()
    (root / "anyio" / "core.py").write_text(other)
    (root / "anyio" / "_native.so").write_text("")
    (root / "cryptography").mkdir()
    (root / "cryptography" / "_rust.so").write_text("")
    return Installation(
        roots=(f"{root}/",),
        owners={"agents": ("openai-agents",), "anyio": ("anyio",),
                "cryptography": ("cryptography",)},
        versions={"openai-agents": "1.0", "anyio": "4.0", "cryptography": "45.0"},
        requires={"openai-agents": frozenset({"anyio"}), "anyio": frozenset()})


def line_of(source: str, text: str) -> int:
    return next(n for n, line in enumerate(source.splitlines(), 1) if text in line)


def ran(root: Path, source: str, *names: str, extensions: tuple[str, ...] = ()) -> Executed:
    """``Store.add`` and ``helper`` (or ``names``) started, as the recorder writes them."""
    file = str(root / "agents" / "store.py")
    return Executed(frozenset((file, line_of(source, f"def {n}")) for n in names),
                    frozenset(str(root / e) for e in extensions))


def named(tmp: Path, source: str, **kw: object) -> dict[str, object] | None:
    where = install(tmp, source)
    return named_inputs(ran(tmp, source, "add", "helper", **kw), "openai-agents", where)  # type: ignore[arg-type]


def test_the_executed_functions_are_named_by_source_relative_to_site_packages(tmp_path: Path
                                                                              ) -> None:
    got = named(tmp_path, STORE)
    assert got is not None
    assert set(got["functions"]) == {"agents/store.py"}  # type: ignore[call-overload]
    assert set(got["functions"]["agents/store.py"]) == {  # type: ignore[index]
        "<module>", "Store.add", "Store.pop", "helper"}  # a method names its whole class
    assert str(tmp_path) not in repr(got)  # the same key on every machine


def test_a_change_where_nothing_ran_keeps_the_inputs(tmp_path: Path) -> None:
    elsewhere = STORE + "\n\ndef added():\n    pass\n"
    moved = '"""A backend, with a longer docstring."""\n' + STORE.split("\n", 1)[1]
    before = named(tmp_path / "a", STORE)
    assert before == named(tmp_path / "b", elsewhere)  # added never ran
    assert before == named(tmp_path / "c", "\n\n" + STORE)  # lines moved, code the same
    assert before != named(tmp_path / "d", moved)  # the module's own code changed


@pytest.mark.parametrize("edit", [("return x + 1", "return x + 2"),  # an executed function
                                  ("return None", "return 1"),  # a method of its class
                                  ('TABLE = "items"', 'TABLE = "rows"'),  # what it reads
                                  ("LIMIT = 10", "LIMIT = 11")])  # a class attribute
def test_a_change_to_what_ran_or_what_it_reads_changes_the_inputs(tmp_path: Path,
                                                                 edit: tuple[str, str]) -> None:
    assert named(tmp_path / "a", STORE) != named(tmp_path / "b", STORE.replace(*edit))


def test_other_distributions_are_named_by_version(tmp_path: Path) -> None:
    where = install(tmp_path, STORE)
    executed = Executed(frozenset({(str(tmp_path / "anyio" / "core.py"), 1)}), frozenset())
    got = named_inputs(executed, "openai-agents", where)
    assert got == {"functions": {}, "distributions": {"anyio": "4.0"}}
    newer = Installation(where.roots, where.owners, {**where.versions, "anyio": "4.1"},
                         where.requires)
    assert named_inputs(executed, "openai-agents", newer) != got


def test_an_extension_module_counts_only_where_code_that_ran_can_call_it(tmp_path: Path
                                                                         ) -> None:
    got = named(tmp_path, STORE, extensions=("anyio/_native.so", "cryptography/_rust.so"))
    assert got is not None
    # the SDK requires anyio; nothing that ran requires cryptography (another lane loaded it)
    assert got["distributions"] == {"anyio": "4.0"}


def test_what_cannot_be_named_is_none(tmp_path: Path) -> None:
    where = install(tmp_path, STORE)
    stray = tmp_path / "stray.py"
    stray.write_text("def f():\n    pass\n")
    assert named_inputs(None, "openai-agents", where) is None  # the run never ended
    outside = Executed(frozenset({(str(stray), 1)}), frozenset())
    assert named_inputs(outside, "openai-agents", where) is None  # not installed
    (tmp_path / "agents" / "store.py").write_text("def broken(:\n")
    bad = Executed(frozenset({(str(tmp_path / "agents" / "store.py"), 1)}), frozenset())
    assert named_inputs(bad, "openai-agents", where) is None  # does not parse


def test_runs_merge_and_an_unknown_run_makes_the_whole_unknown() -> None:
    a = Executed(frozenset({("f", 1)}), frozenset())
    b = Executed(frozenset({("f", 2)}), frozenset({"x.so"}))
    assert merge_executed([a, b]) == Executed(frozenset({("f", 1), ("f", 2)}),
                                              frozenset({"x.so"}))
    assert merge_executed([a, None]) is None


def test_a_function_is_found_by_qualified_name_with_its_nested_code() -> None:
    nested = STORE.replace("return helper(item)",
                           "def inner():\n            return helper(item)\n"
                           "        return inner()")
    assert function_source_hash(STORE, "Store.add") != function_source_hash(nested, "Store.add")
    assert function_source_hash(nested, "Store.add.<locals>.inner") == function_source_hash(
        nested, "Store.add")
    assert function_source_hash(STORE, "Store.pop") == function_source_hash(
        STORE.replace("return helper(item)", "return item"), "Store.pop")
    assert function_source_hash(STORE, "Store.missing") is None
    assert function_source_hash("def (:", "f") is None


def test_only_installed_files_are_recorded() -> None:
    import anyio

    assert installed_file(str(anyio.__file__)) == "anyio/__init__.py"
    assert installed_file(__file__) is None


@pytest.mark.parametrize("old,new", [("return x + 1", "return x - 1"),  # inside helper
                                     ("def helper(x):", "def helper(x):\n    x = 0"),
                                     ('TABLE = "items"', 'TABLE = "rows"')])  # outside it
def test_a_changed_function_is_hashed_as_if_parsed(old: str, new: str) -> None:
    from arib.caches.inputs import changed_function_hash

    mutated = STORE.replace(old, new)
    assert changed_function_hash(STORE, mutated, "helper") == function_source_hash(
        mutated, "helper")


def test_a_namespace_package_of_several_distributions_names_each_file_by_its_record(
        tmp_path: Path) -> None:
    # langgraph/ holds files of langgraph-checkpoint and of -sqlite: the top-level name alone
    # has two owners; the RECORDs say which file is whose, and both families' components are
    # named by function.
    for rel in ("langgraph/checkpoint/base.py", "langgraph/checkpoint/sqlite/aio.py"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("def put(x):\n    return x\n")
    where = Installation(
        roots=(f"{tmp_path}/",),
        owners={"langgraph": ("langgraph-checkpoint", "langgraph-checkpoint-sqlite")},
        versions={"langgraph-checkpoint": "4.0", "langgraph-checkpoint-sqlite": "3.0"},
        requires={}, files={"langgraph/checkpoint/base.py": "langgraph-checkpoint",
                            "langgraph/checkpoint/sqlite/aio.py": "langgraph-checkpoint-sqlite"})
    executed = Executed(frozenset({(str(tmp_path / "langgraph/checkpoint/base.py"), 1),
                                   (str(tmp_path / "langgraph/checkpoint/sqlite/aio.py"), 1)}),
                        frozenset())
    assert named_inputs(executed, "langgraph-checkpoint", where) == {
        "functions": {"langgraph/checkpoint/base.py": {
            "<module>": ANY, "put": ANY}},
        "distributions": {"langgraph-checkpoint-sqlite": "3.0"}}
    both = named_inputs(executed, ("langgraph-checkpoint", "langgraph-checkpoint-sqlite"),
                        where)
    assert both is not None and both["distributions"] == {}
    assert set(both["functions"]) == {"langgraph/checkpoint/base.py",
                                      "langgraph/checkpoint/sqlite/aio.py"}
    no_record = Installation(where.roots, where.owners, where.versions, where.requires)
    assert named_inputs(executed, "langgraph-checkpoint", no_record) is None  # ambiguous


@pytest.mark.parametrize("edit,holds", [
    (("", ""), True),  # the same code
    (("\n\ndef helper", "\n\n\n\ndef helper"), True),  # lines moved, code the same
    (("class Store", "def added():\n    return 2\n\n\nclass Store"), True),  # not named
    (("    def pop", "    def __len__(self):\n        return 0\n\n    def pop"), False),
    (("    def pop(self):\n        return None\n", ""), False),  # a named method is gone
    (("return x + 1", "return x + 2"), False),  # an executed function
    (("return None", "return 1"), False),  # a method of its class
    (('TABLE = "items"', 'TABLE = "rows"'), False),  # what it reads
])
def test_inputs_named_on_one_installation_hold_on_another_only_if_the_code_is_the_same(
        tmp_path: Path, edit: tuple[str, str], holds: bool) -> None:
    before = named(tmp_path / "a", STORE)
    assert before is not None
    where = install(tmp_path / "b", STORE.replace(*edit))
    assert inputs_unchanged(before, where) is holds


def test_inputs_do_not_hold_where_a_distribution_or_file_differs(tmp_path: Path) -> None:
    where = install(tmp_path / "a", STORE)
    executed = ran(tmp_path / "a", STORE, "add", extensions=("anyio/_native.so",))
    before = named_inputs(executed, "openai-agents", where)
    assert before is not None and before["distributions"] == {"anyio": "4.0"}
    assert inputs_unchanged(before, where)
    newer = Installation(where.roots, where.owners, {**where.versions, "anyio": "4.1"},
                         where.requires)
    assert not inputs_unchanged(before, newer)
    empty = install(tmp_path / "b", STORE)
    (tmp_path / "b" / "agents" / "store.py").unlink()
    assert not inputs_unchanged(before, empty)  # the file is gone
    cases: list[Any] = [{}, {"functions": [], "distributions": {}}, {"functions": None}]
    for malformed in cases:
        assert not inputs_unchanged(malformed, where)


def test_a_name_defined_twice_is_named_by_position_so_neither_definition_hides_the_other(
        tmp_path: Path) -> None:
    prop = ("class Store:\n    @property\n    def size(self):\n        return 1\n\n"
            "    @size.setter\n    def size(self, value):\n        pass\n")
    where = install(tmp_path / "a", prop)
    executed = Executed(frozenset({(str(tmp_path / "a" / "agents" / "store.py"), 2)}),
                        frozenset())
    got = named_inputs(executed, "openai-agents", where)
    assert got is not None
    assert set(got["functions"]["agents/store.py"]) == {"<module>", "Store.size",
                                                        "Store.size#2"}
    getter = install(tmp_path / "b", prop.replace("return 1", "return 2"))
    assert not inputs_unchanged(got, getter)  # the getter changed, the setter did not
    assert inputs_unchanged(got, install(tmp_path / "c", prop))


def test_a_function_span_covers_its_decorators_and_body_exactly() -> None:
    from arib.caches.inputs import function_span

    source = ("import functools\n\n\nclass A:\n    @functools.cache\n    @staticmethod\n"
              "    def f(x):\n        def g():\n            return x\n        return g\n\n"
              "    def h(self):\n        return 1\n\n\ndef top():\n    return 2")
    decorated = ("    @functools.cache\n    @staticmethod\n    def f(x):\n        def g():\n"
                 "            return x\n        return g\n")
    spans = {q: function_span(source, q) for q in ("A.f", "A.f.<locals>.g", "A.h", "top")}
    texts = {q: source[s[0]:s[1]] for q, s in spans.items() if s is not None}
    assert texts == {"A.f": decorated, "A.f.<locals>.g": decorated,
                     "A.h": "    def h(self):\n        return 1\n",
                     "top": "def top():\n    return 2"}  # the last line has no newline
    assert function_span(source, "A.missing") is None
    assert function_span(source, "A") is None  # a class is not a function
