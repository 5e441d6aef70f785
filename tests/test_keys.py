"""arib.caches.keys: admission and the survey key a verdict with one recipe, apart by kind."""

from __future__ import annotations

import pytest

import arib.caches.keys as keys
from arib.checks.registry import get_check
from arib.mutants.registry import get_mutant

PARAMS = {"writers": 2}


def key(kind: str, **extra: object) -> str:
    return keys.verdict_key(kind, get_check("ARIB-CONC-001"), "reference",
                            get_mutant("reference_lost_update"), reruns=3, seed=0,
                            params=PARAMS, limit="rule", **extra)


def test_one_recipe_two_stores() -> None:
    assert key("admission") == key("admission")
    assert key("admission") != key("survey")
    assert key("survey", engine=2) != key("survey", engine=3)


@pytest.mark.parametrize("module", ["arib.checks.openai_agents.conc_001", "arib.checks.base",
                                    "arib.checks.common",
                                    "arib.execute", "arib.checks.openai_agents._problems",
                                    "arib.targets.openai_agents.sdk",
                                    "arib.targets.openai_agents.reference"])
def test_both_kinds_follow_every_source(monkeypatch: pytest.MonkeyPatch, module: str) -> None:
    before = {kind: key(kind) for kind in ("admission", "survey")}
    monkeypatch.setattr(keys, "source_hash", lambda *mods: "|".join(
        m + ("*" if m == module else "") for m in mods))
    edited = {kind: key(kind) for kind in ("admission", "survey")}
    monkeypatch.setattr(keys, "source_hash", lambda *mods: "|".join(mods))
    plain = {kind: key(kind) for kind in ("admission", "survey")}
    assert all(edited[k] != plain[k] for k in before)


def test_every_check_helper_and_target_module_is_listed() -> None:
    helpers, targets = keys.family_sources("openai-agents")
    assert "arib.checks.openai_agents._calls" in helpers
    assert "arib.checks.openai_agents._problems" in helpers
    assert "arib.targets.openai_agents.reference_tables" in targets
    assert "arib.targets.openai_agents.sdk" in targets


# -- keys that name what the check executed (the survey's) --------------------------------

EXECUTED = {"functions": {"agents/memory/store.py": {"<module>": "m1", "Store.add": "a1"}},
            "distributions": {"anyio": "4.0"}}


def named_key(executed: object = EXECUTED, mutant: str = "reference_lost_update",
              lane: object = None) -> str:
    from arib.targets.openai_agents.reference import REFERENCE

    return keys.verdict_key("survey", get_check("ARIB-CONC-001"), "reference",
                            get_mutant(mutant), reruns=1, seed=0, params=PARAMS, limit="rule",
                            executed=executed, lane_spec=lane or REFERENCE)  # type: ignore[arg-type]


def test_a_named_key_is_the_same_on_sdk_versions_whose_executed_code_is_equal(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(keys, "sdk_version", lambda: "0.23.1")
    older = (named_key(), key("survey"))
    monkeypatch.setattr(keys, "sdk_version", lambda: "0.24.0")
    assert named_key() == older[0]  # what ran is the same: reused across the versions
    assert key("survey") != older[1]  # inputs not named: bound to the SDK's version


@pytest.mark.parametrize("change", [
    {"functions": {"agents/memory/store.py": {"<module>": "m1", "Store.add": "a2"}},
     "distributions": {"anyio": "4.0"}},  # an executed function changed
    {"functions": {"agents/memory/store.py": {"<module>": "m2", "Store.add": "a1"}},
     "distributions": {"anyio": "4.0"}},  # the module's own code changed
    {"functions": EXECUTED["functions"], "distributions": {"anyio": "4.1"}},  # a dependency
])
def test_a_named_key_changes_with_anything_that_ran(change: object) -> None:
    assert named_key(change) != named_key()


def test_a_named_key_follows_the_lane_configuration_and_the_mutant() -> None:
    import dataclasses

    from arib.targets.openai_agents.reference import REFERENCE

    assert named_key(lane=dataclasses.replace(REFERENCE, waits_s=REFERENCE.waits_s + 1)) != (
        named_key())
    assert named_key(mutant="reference_corrupts_content") != named_key()


def test_a_generated_mutant_is_named_by_its_function_before_and_after(
        monkeypatch: pytest.MonkeyPatch) -> None:
    import dataclasses

    from arib.ground.model import MutantKind
    from arib.mutants.base import MutantSpec

    module = "class Store:\n    def add(self, x):\n        return x + 1\n\n" \
             "    def pop(self):\n        return None\n"
    spec = MutantSpec("m-1", MutantKind.GENERATED, "reference", "fake.store", "Store.add",
                      "flip", "x + 1", "x - 1", "d", source=module.replace("x + 1", "x - 1"))
    monkeypatch.setattr(keys, "_key_source", lambda name: module)
    named = keys.mutant_source(spec)
    assert set(named) == {"function_before", "function_after"}
    other_pop = module.replace("return None", "return 0")  # another version: pop changed
    monkeypatch.setattr(keys, "_key_source", lambda name: other_pop)
    assert keys.mutant_source(dataclasses.replace(
        spec, source=other_pop.replace("x + 1", "x - 1"))) == named
    changed = module.replace("x + 1", "x + 1 + 0")
    monkeypatch.setattr(keys, "_key_source", lambda name: changed)
    assert keys.mutant_source(dataclasses.replace(
        spec, source=changed.replace("x + 1", "x - 1"))) != named
    handwritten = get_mutant("reference_lost_update")
    assert keys.mutant_source(handwritten) == {"override": handwritten.replacement}


# -- clean runs' keys (arib.caches.clean) -----------------------------------------------

def clean_key(lane: object = None, **changes: object) -> str:
    from arib.targets.openai_agents.reference import REFERENCE

    parts: dict[str, object] = dict(module_digest="d1", reruns=3, seed=0, params=PARAMS,
                                    limit="10 s")
    return keys.clean_key(get_check("ARIB-CONC-001"), lane or REFERENCE,  # type: ignore[arg-type]
                          **{**parts, **changes})  # type: ignore[arg-type]


def test_a_clean_key_names_no_sdk_version_only_what_the_entry_cannot_name_itself(
        monkeypatch: pytest.MonkeyPatch) -> None:
    import dataclasses

    from arib.targets.openai_agents.reference import REFERENCE

    monkeypatch.setattr(keys, "sdk_version", lambda: "0.23.1")
    before = clean_key()
    monkeypatch.setattr(keys, "sdk_version", lambda: "0.24.0")
    assert clean_key() == before  # the entry's named inputs decide across versions
    assert before not in (key("survey"), named_key())
    for change in ({"module_digest": "d2"}, {"reruns": 4}, {"seed": 1}, {"limit": "20 s"},
                   {"params": {"writers": 3}}, {"engine": 3}):
        assert clean_key(**change) != before, change
    assert clean_key(dataclasses.replace(REFERENCE, waits_s=REFERENCE.waits_s + 1)) != before
    assert clean_key(dataclasses.replace(REFERENCE, name="reference-2")) != before
    monkeypatch.setattr(keys, "python_version", lambda: "3.99.0")
    assert clean_key() != before
    monkeypatch.undo()
    assert clean_key() == before
    monkeypatch.setattr(keys, "source_hash", lambda *mods: "|".join(
        m + ("*" if m == "arib.checks.openai_agents.conc_001" else "") for m in mods))
    assert clean_key() != before  # the check's source
