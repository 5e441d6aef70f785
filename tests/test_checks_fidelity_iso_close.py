"""ARIB-FIDELITY-001, ARIB-ISO-001 and the strengthened ARIB-CONC-003: hold on the reference,
violated by a hand-written mutant (installed in a forked child), and the CONC-003 mode logic."""

from __future__ import annotations

import pytest

from arib.checks.common import canonical
from arib.checks.openai_agents.conc_003 import MODES, OPS, outcome_mode, trial_mode
from arib.checks.openai_agents.fidelity_001 import shapes
from arib.ground.model import Finding, Verdict
from tests.checkrun import run_small

SMALL = {
    "ARIB-FIDELITY-001": {"trials": 1, "large_kib": 80},
    "ARIB-ISO-001": {"trials": 1, "writers": 1, "appends": 2, "pops": 1, "reads": 1},
    "ARIB-CONC-003": {"trials": 1},
}


def judge(check_id: str, mutant: str | None = None) -> Finding:
    """Run a check with small parameters on the reference, a mutant installed in a child."""
    return run_small(check_id, SMALL[check_id], mutant)


@pytest.mark.parametrize("check_id", sorted(SMALL))
def test_holds_on_the_reference(check_id: str) -> None:
    finding = judge(check_id)
    assert finding.verdict is Verdict.HELD, finding.samples
    assert finding.counts.total == 0


@pytest.mark.parametrize(("check_id", "mutant", "mode_part"), [
    ("ARIB-FIDELITY-001", "reference_nfc_normalizes_text", "altered"),
    ("ARIB-FIDELITY-001", "reference_truncates_long_strings", "altered"),
    ("ARIB-ISO-001", "reference_clear_ignores_session", "leaky"),
    ("ARIB-ISO-001", "reference_pop_ignores_session", "leaky"),
    ("ARIB-CONC-003", "reference_pop_after_close_returns_none", "pop=silent_drop"),
    ("ARIB-CONC-003", "reference_clear_after_close_succeeds", "clear=silent_commit"),
    ("ARIB-CONC-003", "reference_empty_add_skips_closed_check", "add([])=silent_drop"),
    ("ARIB-CONC-003", "reference_pop_after_close_commits_then_raises",
     "pop=raise_but_committed"),
])
def test_hand_written_mutant_is_violated(check_id: str, mutant: str, mode_part: str) -> None:
    finding = judge(check_id, mutant)
    assert finding.verdict is Verdict.VIOLATED
    assert finding.violating_trials == finding.trials == 1
    assert any(mode_part in mode for mode in finding.modes), finding.modes


def test_fidelity_names_the_failed_shape() -> None:
    finding = judge("ARIB-FIDELITY-001", "reference_nfc_normalizes_text")
    assert finding.counts.lost == finding.counts.foreign == 1
    assert "shapes failed: unicode" in finding.samples[0]


def test_fidelity_covers_every_shape_and_tuples_compare_as_lists() -> None:
    items = shapes("t", 1, "x" * 10)
    assert {"user_text", "user_parts", "system_text", "assistant_output", "function_call",
            "function_call_output", "reasoning", "unicode", "numbers_and_literals", "nested",
            "tuple_command", "large"} <= set(items)
    assert len(items["large"]["content"]) == 1024
    command = items["tuple_command"]["action"]["command"]
    assert isinstance(command, tuple)
    as_list = {**items["tuple_command"],
               "action": {**items["tuple_command"]["action"], "command": list(command)}}
    assert canonical(as_list) == canonical(items["tuple_command"])
    assert "\x00" not in canonical(items)


def test_iso_counts_a_foreign_pop_and_the_owner_loss() -> None:
    finding = judge("ARIB-ISO-001", "reference_pop_ignores_session")
    assert finding.counts.foreign >= 1 and finding.counts.lost >= 1
    assert "took B's item" in finding.samples[0] or "took A's item" in finding.samples[0]


@pytest.mark.parametrize(("raised", "changed", "mode"), [
    (True, False, "loud_refusal"),
    (False, False, "silent_drop"),
    (False, True, "silent_commit"),
    (True, True, "raise_but_committed"),
])
def test_outcome_mode_table(raised: bool, changed: bool, mode: str) -> None:
    assert outcome_mode(raised, changed) == mode
    assert mode in MODES


def test_trial_mode_is_loud_only_when_every_write_is() -> None:
    assert trial_mode(dict.fromkeys(OPS, "loud_refusal")) == "loud_refusal"
    mixed = {**dict.fromkeys(OPS, "loud_refusal"), "add([])": "silent_drop"}
    assert trial_mode(mixed) == (
        "add=loud_refusal add([])=silent_drop pop=loud_refusal clear=loud_refusal")
    # A clear that silently empties the store is a commit, not a drop.
    assert outcome_mode(raised=False, changed=True) == "silent_commit"
