"""ARIB-COMPACT-001..004: hold on the reference, each hand-written mutant is violated (in a
forked child), the judges decide hand-made cases right, and the checks abstain where the SDK
offers no compaction."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from arib.checks.base import NotApplicable
from arib.checks.common import canonical
from arib.checks.openai_agents import _compaction as shared
from arib.checks.openai_agents.compact_002 import replaced_suffix
from arib.checks.openai_agents.compact_003 import allowed_finals
from arib.checks.openai_agents.compact_004 import (
    encrypted_view,
    expected_compaction,
    reclaim_problem,
)
from arib.checks.registry import get_check
from arib.execute import RunOptions, run_check
from arib.ground.child import run_one
from arib.ground.model import Verdict
from arib.mutants.registry import forced_broken, get_mutant
from arib.targets.openai_agents.reference import REFERENCE
from arib.targets.openai_agents.sdk import ADVANCED_SQLITE_FILE, SQLITE_FILE
from tests.checkrun import run_small

SMALL: dict[str, dict[str, int]] = {
    "ARIB-COMPACT-001": {"trials": 6},
    "ARIB-COMPACT-002": {"trials": 4},
    "ARIB-COMPACT-003": {"trials": 6},
    "ARIB-COMPACT-004": {"trials": 4},
    "ARIB-COMPACT-005": {"trials": 2},
}


def msg(role: str, text: str) -> dict[str, Any]:
    return {"role": role, "content": text}


@pytest.mark.parametrize("check_id", sorted(SMALL))
def test_holds_on_the_reference(check_id: str) -> None:
    finding = run_small(check_id, SMALL[check_id])
    assert finding.verdict is Verdict.HELD, finding.samples
    assert finding.trials == SMALL[check_id]["trials"]
    # Some trials really compacted or raced (a check whose compactions all skip judges nothing).
    assert set(finding.modes) - {"unchanged", "skipped"}, finding.modes


@pytest.mark.parametrize(("check_id", "mutant", "mode"), [
    ("ARIB-COMPACT-001", "reference_compaction_keeps_old_suffix", "wrong_history"),
    ("ARIB-COMPACT-001", "reference_compaction_deletes_peer_rows", "wrong_history"),
    ("ARIB-COMPACT-002", "reference_compaction_swap_in_two_steps", "torn_read"),
    ("ARIB-COMPACT-003", "reference_compaction_unconditional_swap", "lost"),
    ("ARIB-COMPACT-003", "reference_compaction_unconditional_swap", "resurrected"),
    ("ARIB-COMPACT-004", "reference_compaction_prunes_live_rows", "wrong_reclaim"),
    ("ARIB-COMPACT-005", "reference_compaction_keeps_old_suffix", "wrong_history"),
])
def test_hand_written_mutant_is_violated(check_id: str, mutant: str, mode: str) -> None:
    finding = run_small(check_id, SMALL[check_id], mutant)
    assert finding.verdict is Verdict.VIOLATED
    assert mode in finding.modes, finding.modes
    assert finding.ops and finding.replay and "--mutant" in finding.replay


def test_every_check_names_existing_mutants() -> None:
    for check_id in SMALL:
        check = get_check(check_id)
        assert check.generated, check_id
        for name in check.mutants:
            assert get_mutant(name).description


def test_forced_broken_reference_violates_every_compaction_check() -> None:
    forced = forced_broken()
    for check_id in SMALL:
        check = get_check(check_id)
        opts = RunOptions(params=check.resolve_params({"trials": 1}))
        outcome = run_one(lambda c=check, o=opts: run_check(c, REFERENCE, o, forced), 60)
        assert outcome.value is not None, outcome.detail
        assert outcome.value.verdict is Verdict.VIOLATED, (check_id, outcome.value.reason)


# --- abstention -----------------------------------------------------------------------------


def test_abstains_when_the_sdk_has_no_compaction_wrapper(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(shared, "COMPACTION_MODULE", "agents.memory.no_such_module")
    with pytest.raises(NotApplicable, match="no_such_module"):
        shared.compaction_class()


def test_abstains_when_the_sdk_predates_the_suffix_contract(
        monkeypatch: pytest.MonkeyPatch) -> None:
    import agents.memory.session as session_module

    monkeypatch.delattr(session_module, "_CompactionSnapshot")
    with pytest.raises(NotApplicable, match="_CompactionSnapshot"):
        shared.compaction_class()


def test_ttl_check_abstains_without_encrypted_session(monkeypatch: pytest.MonkeyPatch) -> None:
    import arib.checks.openai_agents.compact_004 as c4

    monkeypatch.setattr(c4, "ENCRYPT_MODULE", "agents.extensions.memory.no_such_module")

    class Plain:
        session_id = "x"

    with pytest.raises(NotApplicable, match="EncryptedSession"):
        encrypted_view(Plain())


# --- the documented outcome -----------------------------------------------------------------

H = [msg("user", "q0"), msg("assistant", "a0"), msg("user", "q1"), msg("assistant", "a1")]
T = [msg("user", "new"), msg("assistant", "answer")]
S = H + T


def test_whole_history_compacts_from_the_start_in_the_resolved_mode() -> None:
    for suffix in (True, False):
        exp = shared.expectation(S, len(H), None, "auto", suffix)
        assert (exp.applies, exp.start, exp.mode) == (True, 0, "previous_response_id")
        assert shared.expectation(S, len(H), 4, "input", suffix).mode == "input"


def test_a_window_compacts_from_its_first_user_message_only_on_suffix_stores() -> None:
    # Window of 3: a0, q1, a1 -> the suffix starts at q1 (index 2).
    exp = shared.expectation(S, len(H), 3, "auto", True)
    assert (exp.applies, exp.start, exp.mode) == (True, 2, "input")
    assert shared.expectation(S, len(H), 0, "input", True).start == len(H)
    assert not shared.expectation(S, len(H), 3, "auto", False).applies
    assert not shared.expectation(S, len(H), 3, "previous_response_id", True).applies


def test_request_must_cover_exactly_the_replaced_range() -> None:
    exp = shared.Expectation(True, 2, "input")
    assert shared.request_problem({"input": S[2:]}, exp, S, "r") is None
    assert "replaces" in (shared.request_problem({"input": S[1:]}, exp, S, "r") or "")
    whole = shared.Expectation(True, 0, "previous_response_id")
    assert shared.request_problem({"previous_response_id": "r"}, whole, S, "r") is None
    assert shared.request_problem({"input": S}, whole, S, "r") is not None


def test_with_expired_rows_a_suffix_store_never_sees_the_history_complete() -> None:
    exp = expected_compaction(S, len(H), None, "auto", True)
    assert (exp.applies, exp.start, exp.mode) == (True, 0, "input")
    assert not expected_compaction(S, len(H), None, "previous_response_id", True).applies
    assert expected_compaction(S, len(H), None, "auto", False).mode == "previous_response_id"
    assert not expected_compaction(S, len(H), 2, "auto", False).applies


# --- the judges -----------------------------------------------------------------------------

OUT = [{"type": "compaction", "id": "cmp", "encrypted_content": "x"}]


def test_a_torn_read_is_not_a_replaced_suffix() -> None:
    assert replaced_suffix(S, [*S[:2], *OUT], OUT)
    assert replaced_suffix(S, OUT, OUT)
    assert not replaced_suffix(S, [*S[:2], *S[3:4], *OUT], OUT)  # a retained item lost
    assert not replaced_suffix(S, S[:2], OUT)  # replaced items gone, output missing


def test_a_racing_append_may_only_follow_the_replaced_range() -> None:
    extra = [msg("user", "other")]
    finals = allowed_finals([*S, *extra], S, 2, OUT)
    assert [len(f) for f in finals] == [len(S) + 1, 2 + len(OUT) + 1]
    assert finals[1][-1] == extra[0]
    # A pop took the newest replaced item: only the refusal is allowed.
    assert allowed_finals(S[:-1], S, 2, OUT) == [S[:-1]]
    assert allowed_finals([], S, 0, OUT) == [[]]


def _lab(kind: str, name: str) -> tuple[str, str]:
    return (kind, canonical(msg("user", name)))


def test_reclaim_rules() -> None:
    before = [_lab("expired", "e0"), _lab("expired", "e1"), _lab("unauthenticated", "u"),
              _lab("expired", "e2"), _lab("live", "l0"), _lab("live", "l1")]
    out = [("live", canonical(o)) for o in OUT]
    replaced = [msg("user", "l1")]
    good = [before[2], before[3], before[4], *out]
    assert reclaim_problem(before, good, OUT, replaced) is None
    # An expired row between two kept rows may not go: the kept rows are one run.
    assert reclaim_problem(before, [before[2], before[4], *out], OUT, replaced) is not None
    assert "stopped" in (reclaim_problem(before, [before[1], *before[2:5], *out], OUT,
                                         replaced) or "")
    assert "not expired" in (reclaim_problem(before, [before[3], before[4], *out], OUT,
                                             replaced) or "")
    assert "authenticate" in (reclaim_problem(before, out, OUT,
                                              [msg("user", "l0"), *replaced]) or "")
    assert "exactly" in (reclaim_problem(before, [*before[2:4], *out], OUT, replaced) or "")


# --- the stand-in client ----------------------------------------------------------------------


def test_stand_in_client_records_runs_the_fault_and_answers_like_the_api() -> None:
    ran: list[str] = []

    async def during() -> None:
        ran.append("fault")

    async def main() -> Any:
        client = shared.CompactClient("t", during=during)
        response = await client.responses.compact(model="gpt-4.1", input=S[2:])
        failing = shared.CompactClient("t", fail=True)
        with pytest.raises(shared.CompactFailure):
            await failing.responses.compact(model="gpt-4.1", previous_response_id="r")
        return client, response

    client, response = anyio.run(main)
    assert ran == ["fault"] and client.requests == [{"model": "gpt-4.1", "input": S[2:]}]
    assert response.usage is None and len(response.output) == 3  # q1, new, then the item
    assert response.output[-1].type == "compaction"
    assert client.outputs[0][-1]["id"] == "cmp_t_1"


# --- the real SDK backends (findings, not mutants) ---------------------------------------------


@pytest.mark.slow
def test_compaction_holds_on_sqlite_session() -> None:
    for check_id in SMALL:
        finding = run_small(check_id, SMALL[check_id], lane=SQLITE_FILE)
        assert finding.verdict is Verdict.HELD, (check_id, finding.samples)


@pytest.mark.slow
def test_fallback_replacement_overwrites_a_concurrent_instance_on_advanced_sqlite() -> None:
    # AdvancedSQLiteSession offers no snapshot: the SDK replaces the whole history from a read
    # made after the request, so the other instance's append, pop or clear is overwritten.
    finding = run_small("ARIB-COMPACT-003", SMALL["ARIB-COMPACT-003"],
                        lane=ADVANCED_SQLITE_FILE)
    assert finding.verdict is Verdict.VIOLATED
    assert {"lost", "undone", "resurrected"} & set(finding.modes), finding.modes


def test_compact_001_reads_no_empty_window_of_its_own() -> None:
    # A get_items(0) after the turn is empty whatever the compaction did: it judges nothing of
    # the replaced range, only the limit-0 edge that ARIB-LIMIT-001 and ARIB-WINDOW-001 own. A
    # store whose limit 0 means "no limit" must not show up here through that read (the
    # SessionSettings window of 0 stays: the documented outcome there is to skip).
    finding = run_small("ARIB-COMPACT-001", {"trials": 12}, "reference_limit_zero_means_no_limit")
    assert not [s for s in finding.samples if ".get_items(0)" in s], finding.samples
