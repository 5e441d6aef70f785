"""Trivial Compiler Equivalence: before/after source tables of equivalent, duplicate and
different mutants, and the unit a qualified name compiles to."""

from __future__ import annotations

import pytest

from arib.ground.model import MutantKind, MutantStatus
from arib.mutants.base import MutantSpec, mutant_id
from arib.mutants.equivalence import classify, shape, unit_codes, unit_name

ORIGINAL = '''\
from __future__ import annotations


def helper(x):
    return x + 1


class Store:
    @property
    def size(self):
        return len(self.items)

    @size.setter
    def size(self, value):
        self.limit = value

    async def add(self, item):
        """Add one item."""
        if len(self.items) < self.limit:
            self.items.append(item)
        return 2

    async def read(self):
        def query():
            return [i for i in self.items if i]

        return query()
'''


def mutant(qualname: str, before: str, after: str) -> MutantSpec:
    """A generated-like mutant of ORIGINAL that replaces ``before`` by ``after`` once."""
    assert ORIGINAL.count(before) == 1, before
    return MutantSpec(mutant_id("store", qualname, "test", before, after), MutantKind.GENERATED,
                      "lane", "store", qualname, "test", before, after, f"{before} -> {after}",
                      source=ORIGINAL.replace(before, after))


# (qualified name, before, after, expected status or None when it must be judged)
TABLE = [
    # only layout, comments or redundant parentheses change: the same bytecode
    ("Store.add", "if len(self.items) < self.limit:", "if (len(self.items) < self.limit):",
     MutantStatus.EQUIVALENT),
    ("Store.add", "        return 2\n", "        # a comment\n\n        return 2\n",
     MutantStatus.EQUIVALENT),
    # constant folding: 1 + 1 compiles to 2
    ("Store.add", "return 2", "return 1 + 1", MutantStatus.EQUIVALENT),
    # a change in a nested function is compared through the method's code object
    ("Store.read.<locals>.query", "if i]", "if (i)]", MutantStatus.EQUIVALENT),
    # the setter, not the getter of the same name, is what changes
    ("Store.size", "self.limit = value", "self.limit = (value)", MutantStatus.EQUIVALENT),
    # a module-level helper
    ("helper", "return x + 1", "return (x + 1)", MutantStatus.EQUIVALENT),
    # real changes
    ("Store.add", "len(self.items) < self.limit", "len(self.items) >= self.limit", None),
    ("Store.add", "return 2", "return 2.0", None),  # 2 == 2.0 in Python, not in bytecode
    ("Store.add", "return 2", "return True", None),
    ("Store.read.<locals>.query", "if i]", "if not i]", None),
    ("Store.size", "self.limit = value", "self.limit = -value", None),
    ("helper", "return x + 1", "return x - 1", None),
]


@pytest.mark.parametrize("qualname, before, after, expected", TABLE,
                         ids=[f"{q}:{a.strip()[:24]}" for q, _, a, _ in TABLE])
def test_bytecode_identical_mutants_are_equivalent(qualname: str, before: str, after: str,
                                                   expected: MutantStatus | None) -> None:
    m = mutant(qualname, before, after)
    found = classify(ORIGINAL, [m]).get(m.id)
    if expected is None:
        assert found is None
    else:
        assert found is not None and found.status is expected
        assert found.reason.startswith("bytecode-identical")
        assert unit_name(qualname) in found.reason


def test_identical_mutants_are_duplicates_of_the_first_by_id() -> None:
    a = mutant("Store.add", "len(self.items) < self.limit", "len(self.items) >= self.limit")
    b = mutant("Store.add", "len(self.items) < self.limit", "(len(self.items) >= self.limit)")
    c = mutant("Store.add", "if len(self.items) < self.limit:",
               "if not len(self.items) < self.limit:")
    d = mutant("Store.read.<locals>.query", "if i]", "if not i]")
    found = classify(ORIGINAL, [a, b, c, d])
    first, second = sorted([a.id, b.id])
    assert set(found) == {second}
    assert found[second].status is MutantStatus.DUPLICATE
    assert found[second].of == first
    assert first in found[second].reason


def test_a_mutant_of_another_unit_is_never_its_duplicate() -> None:
    # The same change text in two units: the units are compared apart.
    a = mutant("Store.size", "self.limit = value", "self.limit = -value")
    b = mutant("helper", "return x + 1", "return x - 1")
    assert classify(ORIGINAL, [a, b]) == {}


def test_units_are_found_by_qualified_name() -> None:
    code = compile(ORIGINAL, "<store>", "exec", dont_inherit=True)
    assert [c.co_name for c in unit_codes(code, "Store.size")] == ["size", "size"]
    assert [c.co_name for c in unit_codes(code, "Store.add")] == ["add"]
    assert [c.co_name for c in unit_codes(code, "helper")] == ["helper"]
    assert unit_codes(code, "Store.missing") == ()
    assert unit_name("Store.read.<locals>.query") == "Store.read"
    assert unit_name("helper") == "helper"


def test_the_shape_ignores_lines_and_file_names_only() -> None:
    one = compile("def f(x):\n    return x + 1\n", "a.py", "exec").co_consts[0]
    two = compile("\n\n\ndef f(x):\n    return x + 1\n", "b.py", "exec").co_consts[0]
    other = compile("def f(y):\n    return y + 1\n", "a.py", "exec").co_consts[0]
    assert shape(one) == shape(two)
    assert shape(one) != shape(other)  # a renamed local is another program to the compiler


def test_unfindable_or_uncompilable_mutants_are_judged() -> None:
    lost = mutant("Store.nothing", "return 2", "return 3")
    broken = MutantSpec("m-000000000001", MutantKind.GENERATED, "lane", "store", "Store.add",
                        "test", "x", "y", "d", source="def (:\n")
    handwritten = MutantSpec("m-000000000002", MutantKind.HANDWRITTEN, "lane", "store",
                             "Store.add", "handwritten", "x", "y", "d")
    assert classify(ORIGINAL, [lost, broken, handwritten]) == {}
