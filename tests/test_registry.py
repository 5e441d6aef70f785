"""Malformed check modules, unknown names and bad parameters get one clear error each."""

from __future__ import annotations

import sys
import textwrap

import pytest

from arib.checks.registry import check_ids, declared_id, declared_ids, get_check, load_checks
from arib.ground.errors import CheckDefinitionError, ParameterError, UnknownNameError
from arib.mutants.registry import get_mutant, handwritten_mutants
from arib.targets.registry import get_target, lane_reference, parse_lanes

GOOD = """
from arib.checks.base import CheckSpec, Param
from arib.ground.model import Trial

async def run_trial(ctx):
    return Trial(ctx.index, ctx.seed, False)

CHECK = CheckSpec(id={id!r}, invariant="i", fault="f",
                  params=(Param("trials", 1, 1, 5, "t"),), run_trial=run_trial,
                  mutants={mutants!r})
"""


def make_package(tmp_path, name, modules):
    pkg = tmp_path / name
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    for mod, text in modules.items():
        (pkg / f"{mod}.py").write_text(textwrap.dedent(text))
    sys.path.insert(0, str(tmp_path))
    return name


@pytest.fixture
def package(tmp_path):
    created = []

    def factory(name, modules):
        created.append(make_package(tmp_path, name, modules))
        return name

    yield factory
    sys.path.remove(str(tmp_path))
    for name in created:
        for mod in [m for m in sys.modules if m == name or m.startswith(name + ".")]:
            del sys.modules[mod]


def test_real_checks_load_sorted_and_unique():
    ids = [c.id for c in load_checks()]
    assert ids == sorted(set(ids))
    assert {"ARIB-CONC-001", "ARIB-CONC-002", "ARIB-CONC-003", "ARIB-REPLAY-001"} <= set(ids)


def test_every_check_module_declares_its_id_in_its_text():
    # What a run reads instead of importing every check (checks/registry.py).
    assert declared_ids() == {c.id: c.module for c in load_checks()}
    assert check_ids() == frozenset(c.id for c in load_checks())


def test_every_check_file_is_named_by_its_id():
    # ARIB-NET-001 is checks/openai_agents/net_001.py: one spelling, found by its id
    for check in load_checks():
        expected = check.id.removeprefix("ARIB-").lower().replace("-", "_")
        assert check.module.rsplit(".", 1)[-1] == expected, (check.id, check.module)


# Distributions a check module must not import at module level (the backends and what only
# generation needs): a run imports them when, and only if, a run of its needs them.
BACKENDS = ("agents", "openai", "pydantic", "sqlalchemy", "redis", "cryptography", "aiosqlite",
            "asyncpg", "libcst")


def test_listing_every_check_imports_no_backend():
    from tests.test_sources import loaded_after

    loaded = loaded_after("from arib.checks.registry import load_checks\nload_checks()\n")
    assert not {m.split(".")[0] for m in loaded} & set(BACKENDS), sorted(
        m for m in loaded if m.split(".")[0] in BACKENDS)


def test_a_run_of_one_check_imports_its_module_only():
    from tests.test_sources import loaded_after

    loaded = loaded_after("from arib.checks.registry import check_ids, get_check\n"
                          "assert len(check_ids()) > 30\n"
                          "get_check('ARIB-CONC-001')\n")
    own = {m for m in loaded
           if m.startswith("arib.checks.") and not m.startswith("arib.checks._")}
    assert own == {"arib.checks.openai_agents", "arib.checks.openai_agents.conc_001",
                   "arib.checks.base", "arib.checks.common", "arib.checks.registry"}


@pytest.mark.parametrize("text, expected", [
    ('CHECK = CheckSpec(\n    id="ARIB-T-001",\n', "ARIB-T-001"),
    ('CHECK_ID = "ARIB-T-002"\n\nCHECK = CheckSpec(\n    id=CHECK_ID,\n', "ARIB-T-002"),
    ('CHECK = CheckSpec(id=make_id(), invariant="i")\n', None),
    ('CHECK = CheckSpec(\n    id=OTHER,\n', None),
    ("X = 1\n", None),
])
def test_the_id_a_module_declares_is_read_from_its_text(tmp_path, text, expected):
    path = tmp_path / "m.py"
    path.write_text(text)
    assert declared_id(path) == expected


def test_a_module_whose_id_is_not_in_its_text_is_found_by_importing_them_all(package):
    text = GOOD.format(id="ARIB-T-001", mutants=("reference_racy_close",))
    name = package("hiddenid", {"a": text.replace("CHECK = CheckSpec(id='ARIB-T-001'",
                                                  "CHECK = CheckSpec(id='ARIB-T-' + '001'")})
    assert declared_ids(name) is None
    assert check_ids(name) == {"ARIB-T-001"}


def test_a_declared_id_its_check_does_not_have_is_refused(package, monkeypatch):
    # The text says ARIB-T-001 (as a scan would read it), the spec says ARIB-T-009.
    name = package("liarid", {"a": GOOD.format(id="ARIB-T-009", mutants=("reference_racy_close",))})
    monkeypatch.setattr("arib.checks.registry.declared_ids",
                        lambda package=None: {"ARIB-T-001": f"{name}.a"})
    with pytest.raises(CheckDefinitionError, match="declares id 'ARIB-T-001' in its source but "
                                                   "its CHECK has id 'ARIB-T-009'"):
        get_check("ARIB-T-001")


def test_module_without_check(package):
    name = package("nocheck", {"a": "X = 1\n"})
    with pytest.raises(CheckDefinitionError, match="defines no CHECK"):
        load_checks(name)


def test_module_without_id(package):
    name = package("noid", {"a": GOOD.format(id="", mutants=("reference_racy_close",))})
    with pytest.raises(CheckDefinitionError, match="has id ''"):
        load_checks(name)


def test_module_without_mutants(package):
    name = package("nomut", {"a": GOOD.format(id="ARIB-T-001", mutants=())})
    with pytest.raises(CheckDefinitionError, match="paired with no hand-written mutant"):
        load_checks(name)


@pytest.mark.parametrize("fault", [
    "ParityFault('fault_x', 'd', 'text', 'no_colon_here')",
    "ParityFault('x', 'd', 'text', 'pkg.mod:Step')",
    "('fault_x', 'd', 'text', 'pkg.mod:Step')",
])
def test_a_malformed_parity_fault_is_refused_naming_it(package, fault):
    text = GOOD.replace("mutants={mutants!r})", "mutants={mutants!r}, parity=(" + fault + ",))")
    text = text.replace("import CheckSpec, Param", "import CheckSpec, Param, ParityFault")
    name = package("badfault", {"a": text.format(id="ARIB-T-001",
                                                 mutants=("reference_racy_close",))})
    with pytest.raises(CheckDefinitionError, match="has parity fault .*fix its parity"):
        load_checks(name)


def test_two_checks_with_one_id(package):
    text = GOOD.format(id="ARIB-T-001", mutants=("reference_racy_close",))
    name = package("dupid", {"a": text, "b": text})
    with pytest.raises(CheckDefinitionError, match="two checks have id 'ARIB-T-001'"):
        load_checks(name)


def test_unknown_check_id():
    with pytest.raises(UnknownNameError, match="unknown check id 'ARIB-NOPE-001'"):
        get_check("ARIB-NOPE-001")


def test_unknown_lane():
    with pytest.raises(UnknownNameError, match="unknown backend lane 'mysql'"):
        get_target("mysql")
    with pytest.raises(UnknownNameError):
        parse_lanes("sqlite-file,nope")


def test_unknown_mutant():
    with pytest.raises(UnknownNameError, match="unknown mutant 'nope'"):
        get_mutant("nope")


@pytest.mark.parametrize("overrides, message", [
    ({"writers": 0}, "out of range"),
    ({"writers": 65}, "out of range"),
    ({"bogus": 1}, "unknown parameter"),
])
def test_bad_parameters(overrides, message):
    with pytest.raises(ParameterError, match=message):
        get_check("ARIB-CONC-001").resolve_params(overrides)


def test_every_paired_mutant_exists_and_names_are_unique():
    names = [m.name for m in handwritten_mutants()]
    assert len(names) == len(set(names))
    for check in load_checks():
        for name in check.mutants:
            assert get_mutant(name).name == name


def test_seed_defect_classes_are_covered():
    descriptions = " ".join(m.description for m in handwritten_mutants())
    for defect in ("racy close", "silent drop after close", "corrupted content",
                   "crash on read", "persist-then-raise after close",
                   "missing close, honestly declared", "false no-close claim"):
        assert defect in descriptions, defect


def test_selectors_are_strict_on_the_pinned_sdk_version() -> None:
    import re
    from pathlib import Path

    from arib.ground.family import get_family
    from arib.mutants.pool import SELECTORS_SDK

    # the version nox's sessions pin (PINNED_SDK, the default family's record) is the one the
    # selectors were written against
    assert get_family("openai-agents").pinned == SELECTORS_SDK
    noxfile = (Path(__file__).resolve().parent.parent / "noxfile.py").read_text()
    assert re.search(r"^PINNED_SDK = DEFAULT\.pinned$", noxfile, re.M)


def test_a_lane_reference_names_a_user_lane_and_a_bad_one_is_refused_naming_it():
    (found, builtin) = parse_lanes("tests.userstore.stores:json_store, reference")
    assert (found.name, found.module, found.backend) == (
        "json_store", "tests.userstore.stores", "JsonFileSession")  # its return annotation
    assert builtin.name == "reference"
    with pytest.raises(UnknownNameError, match="'tests.userstore.stores:nope' cannot be "
                                               "imported"):
        lane_reference("tests.userstore.stores:nope")
    with pytest.raises(UnknownNameError, match="names .*JsonFileSession.*, which is not a lane"):
        lane_reference("tests.userstore.stores:JsonFileSession")
