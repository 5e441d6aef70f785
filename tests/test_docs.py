"""The README's table of invariants is generated from the check definitions and up to date."""

from __future__ import annotations

from pathlib import Path

import pytest

from arib.checks.registry import load_checks
from arib.docs import BEGIN, END, render_readme
from arib.ground.errors import UsageError

README = Path(__file__).resolve().parent.parent / "README.md"


def test_readme_table_is_current():
    text = README.read_text()
    assert render_readme(text, load_checks()) == text, "run `python -m arib docs`"


def test_every_check_is_in_the_table():
    text = README.read_text()
    block = text.split(BEGIN, 1)[1].split(END, 1)[0]
    for check in load_checks():
        assert f"| {check.id} | {check.invariant} |" in block


def test_missing_markers_are_named():
    with pytest.raises(UsageError, match="no generated block"):
        render_readme("# nothing here\n", load_checks())


def test_every_operator_is_in_the_table():
    from arib.docs import OPS_BEGIN, OPS_END
    from arib.mutants.operators import OPERATORS

    block = README.read_text().split(OPS_BEGIN, 1)[1].split(OPS_END, 1)[0]
    for name, op in OPERATORS.items():
        assert f"| `{name}` |" in block and op.defect in block
