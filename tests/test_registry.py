"""Malformed check modules, unknown names and bad parameters get one clear error each."""

from __future__ import annotations

import sys
import textwrap

import pytest

from arib.checks.registry import check_ids, check_index, file_stem, get_check, load_checks
from arib.ground.errors import (
    CheckDefinitionError,
    ParameterError,
    UnknownNameError,
    UsageError,
)
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


@pytest.mark.parametrize("family", ["arib.checks.openai_agents", "arib.checks.langgraph"])
def test_the_index_lists_the_ids_that_importing_every_check_finds(family):
    # What a run reads instead of importing every check: the file names (checks/registry.py).
    loaded = load_checks(family)
    assert len(loaded) > 30
    assert check_index(family) == {c.id: c.module for c in loaded}
    assert check_ids(family) == frozenset(c.id for c in loaded)


def test_every_check_file_is_named_by_its_id():
    # ARIB-NET-001 is checks/openai_agents/net_001.py: one spelling, found by its id
    for check in load_checks():
        assert check.module.rsplit(".", 1)[-1] == file_stem(check.id), (check.id, check.module)
    assert file_stem("ARIB-LGSTORE-012") == "lgstore_012"


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


def test_the_index_is_read_from_file_names_without_importing_or_opening_a_check(package):
    # A module that would fail on import is listed, not imported: only its own get_check does.
    name = package("lazyidx", {"conc_001": "raise RuntimeError('imported')\n",
                               "_helper": "raise RuntimeError('imported')\n",
                               "pop_002": GOOD.format(id="ARIB-POP-002",
                                                      mutants=("reference_racy_close",))})
    assert check_index(name) == {"ARIB-CONC-001": f"{name}.conc_001",
                                 "ARIB-POP-002": f"{name}.pop_002"}
    assert get_check("ARIB-POP-002", package=name).module == f"{name}.pop_002"
    assert f"{name}.conc_001" not in sys.modules and f"{name}._helper" not in sys.modules
    with pytest.raises(CheckDefinitionError, match="'lazyidx.conc_001' cannot be imported"):
        get_check("ARIB-CONC-001", package=name)


def test_an_unknown_check_id_is_refused_naming_it_and_importing_no_check(package):
    name = package("unknownidx", {"pop_002": "raise RuntimeError('imported')\n"})
    for bad in ("ARIB-POP-003", "pop_002", "ARIB-pop-002", ""):
        with pytest.raises(UnknownNameError) as caught:
            get_check(bad, package=name)
        assert str(caught.value).startswith(f"unknown check id {bad!r}: the rule: ")
        assert "fix: use one of ARIB-POP-002" in str(caught.value)
    assert f"{name}.pop_002" not in sys.modules


def test_a_module_not_named_by_its_id_is_refused(package):
    # Found by its file name, its CHECK says another id: the index would lie, so it is refused.
    text = GOOD.format(id="ARIB-T-009", mutants=("reference_racy_close",))
    name = package("liarid", {"t_001": text})
    with pytest.raises(CheckDefinitionError,
                       match=r"'liarid.t_001' defines check 'ARIB-T-009'.*rename t_001.py to "
                             r"t_009.py, or give its CheckSpec the id ARIB-T-001"):
        get_check("ARIB-T-001", package=name)
    with pytest.raises(CheckDefinitionError, match="'liarid.t_001' defines check 'ARIB-T-009'"):
        load_checks(name)
    # A file name of no id's form is left out of the index and refused by load_checks.
    other = package("oddname", {"helper": GOOD.format(id="ARIB-T-001",
                                                      mutants=("reference_racy_close",))})
    assert check_index(other) == {}
    with pytest.raises(CheckDefinitionError, match="rename helper.py to t_001.py"):
        load_checks(other)


def test_module_without_check(package):
    name = package("nocheck", {"t_001": "X = 1\n"})
    with pytest.raises(CheckDefinitionError, match="defines no CHECK"):
        load_checks(name)


def test_module_without_id(package):
    name = package("noid", {"t_001": GOOD.format(id="", mutants=("reference_racy_close",))})
    with pytest.raises(CheckDefinitionError, match="has id ''"):
        load_checks(name)


def test_module_without_mutants(package):
    name = package("nomut", {"t_001": GOOD.format(id="ARIB-T-001", mutants=())})
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
    name = package("badfault", {"t_001": text.format(id="ARIB-T-001",
                                                 mutants=("reference_racy_close",))})
    with pytest.raises(CheckDefinitionError, match="has parity fault .*fix its parity"):
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
    # a replay names the lane as it was given: its name alone finds nothing
    assert (found.named_by, builtin.named_by) == ("tests.userstore.stores:json_store", "")
    assert get_target(found.named_by).name == "json_store"
    from arib.execute import RunOptions, replay_command

    command = replay_command(get_check("ARIB-POP-001"), found, 7, RunOptions({}), None)
    assert "--lane tests.userstore.stores:json_store --trial-seed 7" in command
    with pytest.raises(UnknownNameError, match="'tests.userstore.stores:nope' cannot be "
                                               "imported"):
        lane_reference("tests.userstore.stores:nope")
    # a class is a lane only when built as Class(root, session_id): this one takes the
    # session id first, and would be handed the root as its id
    with pytest.raises(UsageError, match=r"JsonFileSession is built as JsonFileSession\("
                                         r"session_id, path\); the rule: .*\(root, session_id\)"):
        lane_reference("tests.userstore.stores:JsonFileSession")
