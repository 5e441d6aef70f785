"""harness.keys: admission and the survey key a verdict with one recipe, apart by kind."""

from __future__ import annotations

import pytest

import harness.keys as keys
from checks.registry import get_check
from mutants.registry import get_mutant

PARAMS = {"writers": 2}


def key(kind: str, **extra: object) -> str:
    return keys.verdict_key(kind, get_check("ARIB-CONC-001"), "reference",
                            get_mutant("reference_lost_update"), reruns=3, seed=0,
                            params=PARAMS, limit="rule", **extra)


def test_one_recipe_two_stores() -> None:
    assert key("admission") == key("admission")
    assert key("admission") != key("survey")
    assert key("survey", engine=2) != key("survey", engine=3)


@pytest.mark.parametrize("module", ["checks.conc_001", "checks.base", "checks.common",
                                    "harness.execute", "checks._problems", "targets.sdk",
                                    "targets.reference"])
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
    assert "checks._calls" in helpers and "checks._problems" in helpers
    assert "targets.reference_tables" in targets
    assert "targets.sdk" in targets
