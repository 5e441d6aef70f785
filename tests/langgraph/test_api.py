"""The LangGraph API checks ARIB-CKPT-008..014: each holds on our reference, is violated by its
hand-written mutants (on the reference and on a real saver lane where the clean saver holds)
with a replay, abstains where the release or the saver does not offer the API, and the pure
parts (the expected delta history, langgraph's reading of a pre-v4 checkpoint) are right."""

from __future__ import annotations

from collections.abc import Mapping

import pytest

from arib.checks.langgraph.ckpt_010 import Node, expected_history
from arib.checks.langgraph.ckpt_014 import TASKS, migrated
from arib.ground.model import Verdict
from arib.targets.langgraph.lanes import LANES, REFERENCE
from tests.checkrun import forced_broken_finding, run_small
from tests.langgraph.conftest import HAVE_POSTGRES

SMALL: dict[str, dict[str, int]] = {
    "ARIB-CKPT-008": {"trials": 1, "steps": 2},
    "ARIB-CKPT-009": {"trials": 1, "steps": 2},
    "ARIB-CKPT-010": {"trials": 1, "steps": 6},
    "ARIB-CKPT-011": {"trials": 1, "steps": 2},
    "ARIB-CKPT-012": {"trials": 1},
    "ARIB-CKPT-013": {"trials": 1, "steps": 1},
    "ARIB-CKPT-014": {"trials": 1},
}
LANE = {lane.name: lane for lane in LANES}


@pytest.mark.parametrize("check_id", sorted(SMALL))
def test_holds_on_the_reference(check_id: str) -> None:
    finding = run_small(check_id, SMALL[check_id], lane=REFERENCE)
    assert finding.verdict is Verdict.HELD, (finding.samples, finding.reason)
    assert finding.trials == 1 and finding.violating_trials == 0


@pytest.mark.parametrize(("check_id", "mutant", "mode", "needle"), [
    ("ARIB-CKPT-008", "lg_api_reference_alist_drops_limit", "wrong",
     "list limit=1: sync half as the async half gives it"),
    ("ARIB-CKPT-009", "lg_api_reference_sync_read_waits_on_loop", "hung",
     "neither answered nor refused"),
    ("ARIB-CKPT-010", "lg_api_reference_delta_latest_empty", "lost",
     "a config naming no checkpoint (the latest)"),
    ("ARIB-CKPT-011", "lg_api_reference_prune_keeps_oldest", "lost", "after keep_latest"),
    ("ARIB-CKPT-011", "lg_api_reference_prune_ignores_delta", "lost", "DeltaChannel thread"),
    ("ARIB-CKPT-012", "lg_api_reference_tables_on_first_write", "raised", "no such table"),
    ("ARIB-CKPT-013", "lg_api_reference_delete_unknown_raises", "raised", "KeyError"),
    ("ARIB-CKPT-014", "lg_api_reference_sends_not_migrated", "lost", "sends of the v1 child"),
])
def test_hand_written_reference_mutant_is_violated(check_id: str, mutant: str, mode: str,
                                                   needle: str) -> None:
    finding = run_small(check_id, SMALL[check_id], mutant, lane=REFERENCE)
    assert finding.verdict is Verdict.VIOLATED, (finding.samples, finding.reason)
    assert finding.violating_trials == finding.trials == 1
    assert mode in finding.modes, finding.modes
    assert any(needle in sample for sample in finding.samples), finding.samples
    assert finding.ops and finding.replay and f"--mutant {mutant}" in finding.replay


@pytest.mark.parametrize("check_id", sorted(SMALL))
def test_the_forced_broken_reference_is_violated_with_its_evidence(check_id: str) -> None:
    finding = forced_broken_finding(check_id, SMALL[check_id], REFERENCE)
    assert finding.verdict is Verdict.VIOLATED and "raised" in finding.modes, finding.modes
    assert any("forced-broken mutant" in sample for sample in finding.samples)


@pytest.mark.parametrize(("check_id", "lane", "mutant", "mode"), [
    ("ARIB-CKPT-008", "lg-async-sqlite-file", "lg_api_async_sqlite_list_drops_filter", "wrong"),
    ("ARIB-CKPT-008", "lg-sqlite-file", "lg_api_sqlite_aput_pretends", "wrong"),
    ("ARIB-CKPT-009", "lg-async-sqlite-file", "lg_api_async_sqlite_get_tuple_unguarded",
     "hung"),
    ("ARIB-CKPT-010", "lg-async-sqlite-file", "lg_api_async_sqlite_delta_walks_ids",
     "foreign"),
    ("ARIB-CKPT-012", "lg-async-sqlite-file", "lg_api_async_sqlite_setup_skips_migration",
     "raised"),
])
def test_hand_written_saver_mutant_is_violated_where_the_clean_saver_holds(
        check_id: str, lane: str, mutant: str, mode: str) -> None:
    clean = run_small(check_id, SMALL[check_id], lane=LANE[lane])
    assert clean.verdict is Verdict.HELD, clean.samples
    finding = run_small(check_id, SMALL[check_id], mutant, lane=LANE[lane])
    assert finding.verdict is Verdict.VIOLATED and mode in finding.modes, finding.modes
    assert finding.ops and finding.replay and "--mutant" in finding.replay


@pytest.mark.slow
@pytest.mark.skipif(not HAVE_POSTGRES, reason="PostgreSQL server binaries not installed")
def test_the_postgres_saver_mutant_is_violated_where_the_clean_saver_holds(
        services: Mapping[str, str]) -> None:
    lane = LANE["lg-async-postgres"]
    clean = run_small("ARIB-CKPT-014", SMALL["ARIB-CKPT-014"], lane=lane, services=services)
    assert clean.verdict is Verdict.HELD, clean.samples
    finding = run_small("ARIB-CKPT-014", SMALL["ARIB-CKPT-014"],
                        "lg_api_async_postgres_sends_of_v4", lane=lane, services=services)
    assert finding.verdict is Verdict.VIOLATED and "foreign" in finding.modes, finding.samples


@pytest.mark.slow
@pytest.mark.skipif(not HAVE_POSTGRES, reason="PostgreSQL server binaries not installed")
@pytest.mark.parametrize("lane", ["lg-postgres-pipeline", "lg-async-shallow-postgres"])
def test_fresh_stores_and_a_pool_hold_on_postgres_lanes(lane: str,
                                                       services: Mapping[str, str]) -> None:
    # ARIB-CKPT-012 opens several stores in a trial (on a pipelined lane, each disposed of
    # before the next: an open one stalls the next one's setup()) and a saver on a pool.
    finding = run_small("ARIB-CKPT-012", SMALL["ARIB-CKPT-012"], lane=LANE[lane],
                        services=services)
    assert finding.verdict is Verdict.HELD, (finding.samples, finding.reason)


@pytest.mark.parametrize(("check_id", "lane", "reason"), [
    ("ARIB-CKPT-011", "lg-memory", "prune() raises NotImplementedError"),
    ("ARIB-CKPT-011", "lg-async-sqlite-file", "prune() raises NotImplementedError"),
    ("ARIB-CKPT-014", "lg-sqlite-file", "never kept a checkpoint's pending sends"),
])
def test_abstains_where_the_saver_does_not_offer_it(check_id: str, lane: str,
                                                     reason: str) -> None:
    finding = run_small(check_id, SMALL[check_id], lane=LANE[lane])
    assert finding.verdict is Verdict.NOT_APPLICABLE, (finding.verdict, finding.samples)
    assert reason in (finding.reason or "")


def test_delta_history_abstains_on_a_release_without_it(monkeypatch: pytest.MonkeyPatch
                                                         ) -> None:
    from langgraph.checkpoint.base import BaseCheckpointSaver

    # The check runs in a forked child, which inherits the patched class.
    monkeypatch.setattr(BaseCheckpointSaver, "get_delta_channel_history", None)
    finding = run_small("ARIB-CKPT-010", SMALL["ARIB-CKPT-010"], lane=REFERENCE)
    assert finding.verdict is Verdict.NOT_APPLICABLE, (finding.verdict, finding.samples)
    assert "no get_delta_channel_history()" in (finding.reason or "")


def test_async_sqlite_fails_a_delete_as_the_first_call_on_a_fresh_store() -> None:
    # A defect of langgraph-checkpoint-sqlite 3.1.2 that ARIB-CKPT-013 finds: adelete_thread
    # runs no setup(), so on a store no other call has touched its table does not exist.
    finding = run_small("ARIB-CKPT-013", SMALL["ARIB-CKPT-013"],
                        lane=LANE["lg-async-sqlite-file"])
    assert finding.verdict is Verdict.VIOLATED, finding.samples
    assert any("no such table" in sample for sample in finding.samples), finding.samples


def _chain() -> dict[str, Node]:
    """root <- a (value of d) <- b <- c, with writes of d and p on each; x forks from a."""
    nodes: dict[str, Node] = {}
    parents = {"root": None, "a": "root", "b": "a", "c": "b", "x": "a"}
    for cid, parent in parents.items():
        values = {"d": ["seed-a"]} if cid == "a" else {}
        nodes[cid] = Node(cid, parent, values, {}, [("t", "d", f"d-{cid}"), ("t", "p", cid)])
    return nodes


@pytest.mark.parametrize(("target", "channel", "writes", "seed"), [
    ("c", "d", ["d-a", "d-b"], ["seed-a"]),  # back to the seed's ancestor, its writes included
    ("c", "p", ["root", "a", "b"], None),  # no value anywhere: back to the root, no seed
    ("x", "d", ["d-a"], ["seed-a"]),  # a fork's parent chain only
    ("a", "d", ["d-root"], None),  # the target's own value and writes are not its history
    (None, "d", [], None),  # a missing checkpoint
])
def test_expected_history_follows_the_parent_chain_to_the_seed(
        target: str | None, channel: str, writes: list[str], seed: list[str] | None) -> None:
    got = expected_history(_chain(), target, (channel,))[channel]
    assert [value for _, _, value in got["writes"]] == writes
    assert got.get("seed") == seed


def test_a_pre_v4_checkpoint_is_read_as_langgraph_migrates_it() -> None:
    old = {"v": 1, "channel_values": {"a": 1}, "channel_versions": {"a": 3},
           "pending_sends": ["s1", "s2"]}
    assert migrated(old)["channel_values"] == {"a": 1, TASKS: ["s1", "s2"]}
    assert migrated(old)["channel_versions"][TASKS] == 3
    assert old["pending_sends"] == ["s1", "s2"]  # the checkpoint read is not changed
    v4 = {**old, "v": 4}
    assert TASKS not in migrated(v4)["channel_values"]
    assert TASKS not in migrated({**old, "pending_sends": []})["channel_values"]
