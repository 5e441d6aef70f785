"""The graph parity gate: reference graph runs, their digests, divergences with evidence, CLI."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from arib.checks.langgraph.parity.kind import GRAPH_KIND
from arib.checks.langgraph.parity.records import Aliases, normalize, order_writes
from arib.checks.langgraph.parity.steps import Compile, History, Invoke, play_graph
from arib.checks.langgraph.parity.workflows import GRAPH_WORKFLOWS
from arib.checks.parity.records import Workflow, WorkflowResult
from arib.cli.main import main
from arib.ground.errors import UnknownNameError
from arib.ground.model import Loop
from arib.parity import KIND
from arib.parity.gate import SCHEMA, check
from arib.parity.options import GateOptions
from arib.runs.results import SCHEMA_DIR
from arib.targets.base import BuildContext
from arib.targets.langgraph import graphs, lanes

BY_NAME = {w.name: w for w in GRAPH_WORKFLOWS}


def play_on_reference(workflow: Workflow, root: Path, lane: str) -> WorkflowResult:
    """One graph workflow on a fresh reference saver, in this process."""

    async def run() -> WorkflowResult:
        root.mkdir(parents=True)
        handle = await lanes.REFERENCE.build(BuildContext(root=root, session_id="t", services={}))
        try:
            return await play_graph(workflow, handle.session, lane=lane)
        finally:
            await handle.dispose()

    return asyncio.run(run())


def options(tmp_path: Path, **kw: Any) -> GateOptions:
    base: dict[str, Any] = {
        "lanes": "lg-memory@asyncio", "loops": (Loop.ASYNCIO,), "cases": 0, "workers": 1,
        "results_dir": tmp_path / "results", "kind": GRAPH_KIND,
    }
    base.update(kw)
    return GateOptions(**base)


def validate(report: dict[str, Any]) -> None:
    schema = json.loads((SCHEMA_DIR / SCHEMA).read_text())
    jsonschema.Draft202012Validator(schema).validate(report)


def lane_file(folder: Path, lane: str) -> dict[str, Any]:
    return json.loads((folder / "lanes" / f"{lane}.json").read_text())  # type: ignore[no-any-return]


def test_the_pool_covers_what_the_issue_asks() -> None:
    assert len(GRAPH_WORKFLOWS) >= 8
    kinds = {type(step).__name__ for w in GRAPH_WORKFLOWS for step in w.steps}
    assert {"Compile", "Invoke", "Resume", "Rewind", "History"} <= kinds
    assert {"tools", "interrupt", "retry", "time-travel", "subgraph", "content"} <= {
        w.domain for w in GRAPH_WORKFLOWS
    }
    every_graph = {s.graph for w in GRAPH_WORKFLOWS for s in w.steps if isinstance(s, Compile)}
    assert every_graph == set(graphs.GRAPHS)


def test_reference_digests_are_stable_across_two_runs_and_normalization_does_real_work(
    tmp_path: Path,
) -> None:
    first = {w.name: play_on_reference(w, tmp_path / "a" / w.name, "lg-reference@asyncio")
             for w in GRAPH_WORKFLOWS}
    second = {w.name: play_on_reference(w, tmp_path / "b" / w.name, "lg-reference@asyncio")
              for w in GRAPH_WORKFLOWS}
    for name, result in first.items():
        assert result.ok, result.error
        assert result.parity_hash == second[name].parity_hash, name
        # the raw reads hold LangGraph's time-based checkpoint ids: never equal between runs
        assert result.replay_hash != second[name].replay_hash, name
        assert "graph-ids" in result.rules_applied
    # the sync API on the same saver class leaves the same history
    sync = play_on_reference(BY_NAME["graph_failed_node_resume"], tmp_path / "s",
                             "lg-reference+sync@asyncio")
    assert sync.parity_hash == first["graph_failed_node_resume"].parity_hash


def test_the_history_records_pending_writes_interrupts_and_parent_links(tmp_path: Path) -> None:
    result = play_on_reference(BY_NAME["graph_failed_node_resume"], tmp_path / "r",
                               "lg-reference@asyncio")
    assert result.reads is not None
    text = json.dumps([r.items for r in result.reads], ensure_ascii=False)
    assert "ScriptedFailure" in text and '"__error__"' in text  # the failed task's write
    assert "steady call 1" in text and "steady call 2" not in text  # steady ran once
    assert '"parent_config": {"configurable": {"checkpoint_id": "<id:' in text
    resumed = play_on_reference(BY_NAME["graph_interrupt_resume"], tmp_path / "i",
                                "lg-reference@asyncio")
    assert resumed.reads is not None
    assert "approve the draft?" in json.dumps([r.items for r in resumed.reads],
                                              ensure_ascii=False)


def test_normalization_numbers_ids_by_first_appearance_and_orders_writes_by_task() -> None:
    a, b = "1f1ed3ce-9a6a-63fe-8002-eb73781ce84e", "1f1ed3ce-9a56-6e15-8001-674046440af2"
    value = {"config": {"checkpoint_id": a}, "parent": {"checkpoint_id": b}, "ts": "2026-01-01",
             "channel_versions": {"x": "00000000000000000000000000000004.0.8888"}}
    out = normalize(value, Aliases())
    assert out == {"config": {"checkpoint_id": "<id:1>"}, "parent": {"checkpoint_id": "<id:2>"},
                   "ts": "<timestamp>", "channel_versions": {"x": 4}}
    # InMemorySaver's random fraction below 1e-4 is formatted in exponent form (seen at cp2.1.2)
    tiny = {"channel_versions": {"x": "00000000000000000000000000000002.4.802184169316881e-06"},
            "versions_seen": {"n": {"x": "00000000000000000000000000000002.4.802184169316881e-06"}}}
    assert normalize(tiny, Aliases()) == {"channel_versions": {"x": 2},
                                          "versions_seen": {"n": {"x": 2}}}
    # groups by task, ordered by content blind to the task ids; a task's writes by channel
    late, early = "ffffffff-0000-0000-0000-000000000000", "00000000-0000-0000-0000-00000000000f"
    writes = [[early, "z", 2], [late, "b", 1], [late, "a", 3]]
    assert order_writes(writes) == [[late, "a", 3], [late, "b", 1], [early, "z", 2]]


def test_where_no_order_is_documented_a_tasks_special_writes_come_first_by_channel() -> None:
    # langgraph-checkpoint before 4.3 documents no order of pending writes: its InMemorySaver
    # returns a task's __interrupt__ and __resume__ as put, our reference by index; each is
    # written at most once per task, so their order says nothing. Other writes keep theirs.
    task = "00000000-0000-0000-0000-00000000000f"
    put = [[task, "__interrupt__", 1], [task, "__resume__", 2], [task, "log", "a"],
           [task, "log", "b"]]
    by_index = [put[1], put[0], put[2], put[3]]
    assert order_writes(put, documented=False) == order_writes(by_index, documented=False) \
        == [put[0], put[1], put[2], put[3]]
    assert order_writes(put) != order_writes(by_index)  # documented (4.3 on): compared as given
    swapped = [put[0], put[1], put[3], put[2]]  # an ordinary channel's order is still compared
    assert order_writes(swapped, documented=False) != order_writes(put, documented=False)


def test_a_tasks_ordinary_writes_are_ordered_by_channel_in_their_places() -> None:
    # LangGraph applies a task's writes channel by channel: across ordinary channels their
    # order says nothing (it follows a set's iteration in StateGraph, so PYTHONHASHSEED); the
    # order within one channel is a reducer's input, and where the special channels sit is the
    # saver's contract once writes_sort_key documents it: both are still compared.
    task = "00000000-0000-0000-0000-00000000000f"
    put = [[task, "request", "both"], [task, "__resume__", 2], [task, "log", "a"],
           [task, "branch:to:steady", None], [task, "__interrupt__", 1], [task, "log", "b"],
           [task, "branch:to:fragile", None]]
    expected = [put[6], put[1], put[3], put[2], put[4], put[5], put[0]]
    assert order_writes(put) == expected
    hashed = [put[3], put[1], put[6], put[0], put[4], put[2], put[5]]  # the specials in place
    assert order_writes(hashed) == expected
    log_swapped = [put[0], put[1], put[5], put[3], put[4], put[2], put[6]]  # log's b before a
    assert order_writes(log_swapped) != expected
    by_index = [put[1], put[4], put[0], put[2], put[3], put[5], put[6]]  # the specials first
    assert order_writes(by_index) != expected
    assert order_writes(put, documented=False) == order_writes(by_index, documented=False) \
        == [put[4], put[1], put[6], put[3], put[2], put[5], put[0]]


# The subprocess of the next test: the reference lane's graph_failed_node_resume in a fresh
# process; it prints the parity hash and the channels of every pending-writes list as the
# saver returned it (what order_writes was given), one JSON object.
HASH_SEED_RUN = """
import asyncio, json, sys, tempfile
from pathlib import Path
from arib.checks.langgraph.parity import records
from arib.checks.langgraph.parity.steps import play_graph
from arib.checks.langgraph.parity.workflows import GRAPH_WORKFLOWS
from arib.targets.base import BuildContext
from arib.targets.langgraph import lanes

given = []
order_writes = records.order_writes
def spy(writes, *args, **kwargs):
    given.append([str(w[1]) for w in writes])
    return order_writes(writes, *args, **kwargs)
records.order_writes = spy
workflow = next(w for w in GRAPH_WORKFLOWS if w.name == "graph_failed_node_resume")

async def run(root):
    handle = await lanes.REFERENCE.build(BuildContext(root=root, session_id="t", services={}))
    try:
        return await play_graph(workflow, handle.session, lane="lg-reference@asyncio")
    finally:
        await handle.dispose()

with tempfile.TemporaryDirectory() as folder:
    result = asyncio.run(run(Path(folder)))
json.dump({"ok": result.ok, "error": result.error, "parity_hash": result.parity_hash,
           "given": given}, sys.stdout)
"""


def test_the_reference_digest_is_one_whatever_the_string_hash_seed(tmp_path: Path) -> None:
    # StateGraph keeps its edges in a set: the input task of graph_failed_node_resume writes
    # branch:to:steady and branch:to:fragile in an order that follows PYTHONHASHSEED, and a
    # lane report reused from another process (parity --reuse) must still match the reference.
    runs = {}
    for seed in ("0", "1", "2", "3"):  # on CPython 3.12 both orders occur among these
        env = {**os.environ, "PYTHONHASHSEED": seed}
        done = subprocess.run([sys.executable, "-c", HASH_SEED_RUN], env=env, cwd=tmp_path,
                              capture_output=True, text=True, timeout=120, check=False)
        assert done.returncode == 0, done.stderr
        runs[seed] = json.loads(done.stdout)
        assert runs[seed]["ok"], runs[seed]["error"]
    # the saver's own order differed between processes: the defect was exercised here
    assert len({json.dumps(run["given"]) for run in runs.values()}) > 1, runs
    assert {run["parity_hash"] for run in runs.values()} == {runs["0"]["parity_hash"]}, {
        seed: run["parity_hash"][:12] for seed, run in runs.items()}


def test_gate_over_the_reference_and_memory_lanes_passes_with_the_sessions_contract(
    tmp_path: Path,
) -> None:
    report, folder = check(options(tmp_path, lanes="lg-memory,lg-sqlite-file@uvloop"))
    assert report["ok"] is True and report["exit_code"] == 0, report["fail_reasons"]
    assert report["kind"] == KIND and report["sdk"]["name"] == "langgraph"
    assert report["reference_lane"] == "lg-reference@asyncio"
    assert [lane["name"] for lane in report["lanes"]] == [
        "lg-reference@asyncio", "lg-memory@asyncio", "lg-sqlite-file@uvloop",
    ]
    assert all(lane["verdict"] == "held" for lane in report["lanes"])
    assert report["workflow_count"] == len(GRAPH_WORKFLOWS)
    assert "langgraph-" in report["history_path"]
    validate(report)
    assert not (tmp_path / "results").exists()
    assert lane_file(folder, "lg-sqlite-file@uvloop")["workflows"][0]["ok"] is True


def _drop(self: Any, *args: Any, **kwargs: Any) -> None:
    return None


async def _adrop(self: Any, *args: Any, **kwargs: Any) -> None:
    return None


def test_a_saver_dropping_pending_writes_diverges_with_evidence(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from langgraph.checkpoint.memory import InMemorySaver

    # Installed here, inherited by the lane's forked child: InMemorySaver keeps no writes.
    monkeypatch.setattr(InMemorySaver, "put_writes", _drop)
    monkeypatch.setattr(InMemorySaver, "aput_writes", _adrop)
    chosen = (BY_NAME["graph_failed_node_resume"], BY_NAME["graph_tool_loop"])
    report, folder = check(options(tmp_path, lanes="lg-memory,lg-async-sqlite-memory",
                                   workflows=chosen))
    assert report["exit_code"] == 1 and report["ok"] is False
    verdicts = {lane["name"]: lane["verdict"] for lane in report["lanes"]}
    assert verdicts == {"lg-reference@asyncio": "held", "lg-memory@asyncio": "violated",
                        "lg-async-sqlite-memory@asyncio": "held"}
    mismatch = next(m for m in report["workflow_mismatches"]
                    if m["workflow"] == "graph_failed_node_resume")
    assert mismatch["differing_lanes"] == ["lg-memory@asyncio"]
    # first seen in the state history: the task results LangGraph rebuilds from pending writes
    diff = mismatch["first_differences"][0]["diff"]
    assert diff and "02.history/state history" in diff
    assert '"steady call 1"' in diff and '+            "result": null,' in diff
    validate(report)


def _explodes() -> Any:
    from langgraph.graph import END, START, StateGraph

    def boom(state: graphs.Log) -> dict[str, Any]:
        raise KeyError("a node nobody scripted to fail")

    graph = StateGraph(graphs.Log)
    graph.add_node("boom", boom)
    graph.add_edge(START, "boom")
    graph.add_edge("boom", END)
    return graph


def test_a_raising_graph_is_a_divergence_with_its_traceback_never_a_crash(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(graphs.GRAPHS, "explodes", _explodes)
    raising = Workflow("graph_explodes", "test", "a node raises unexpectedly",
                       (Compile("explodes"), Invoke({"request": "x"}), History()))
    report, folder = check(options(tmp_path, workflows=(raising, BY_NAME["graph_retry_policy"])))
    # the reference lane itself raised: the gate's failed step (exit 4), with its evidence
    assert report["exit_code"] == 4
    assert report["failed_workflows"] == {"lg-reference@asyncio": ["graph_explodes"],
                                          "lg-memory@asyncio": ["graph_explodes"]}
    assert any("'graph_explodes' raised on lane 'lg-reference@asyncio'" in r
               and "01.invoke" in r for r in report["fail_reasons"])
    error = next(w for w in lane_file(folder, "lg-memory@asyncio")["workflows"]
                 if w["name"] == "graph_explodes")["error"]
    assert "KeyError" in error and "Traceback" in error and "01.invoke" in error
    validate(report)


def test_a_saver_raising_on_one_lane_is_that_lanes_violation(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from langgraph.checkpoint.sqlite import SqliteSaver

    def refuse(self: Any, *args: Any, **kwargs: Any) -> Any:
        raise OSError("disk refused the checkpoint")

    monkeypatch.setattr(SqliteSaver, "put", refuse)
    report, folder = check(options(tmp_path, lanes="lg-sqlite-file,lg-memory",
                                   workflows=(BY_NAME["graph_retry_policy"],)))
    assert report["exit_code"] == 1
    verdicts = {lane["name"]: lane["verdict"] for lane in report["lanes"]}
    assert verdicts["lg-sqlite-file@asyncio"] == "violated"
    assert verdicts["lg-memory@asyncio"] == "held", report["fail_reasons"]
    assert report["failed_workflows"] == {"lg-sqlite-file@asyncio": ["graph_retry_policy"]}
    error = lane_file(folder, "lg-sqlite-file@asyncio")["workflows"][0]["error"]
    assert "disk refused the checkpoint" in error and "Traceback" in error


def test_service_lanes_without_their_server_are_not_measured_with_the_reason(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    pg = dataclasses.replace(lanes.SQLITE_FILE, name="lg-postgres-test", service="postgres")
    monkeypatch.setattr(lanes, "CHECKPOINTER_LANES", (*lanes.CHECKPOINTER_LANES, pg))
    chosen, missing = GateOptions(kind=GRAPH_KIND, cases=0).selection()
    assert "lg-postgres-test" not in {lane.target.name for lane in chosen}
    by_name = {m.name: m.reason for m in missing}
    assert "lg-postgres-test" in by_name
    assert "needs service 'postgres'" in by_name["lg-postgres-test"]
    # every lane left out is one whose server this selection did not start
    assert all(lane.service for lane in lanes.CHECKPOINTER_LANES if lane.name in by_name)
    names = {lane.name for lane in chosen}
    assert {"lg-reference@asyncio", "lg-memory+sync@uvloop", "lg-sqlite-file@uvloop"} <= names
    assert "lg-sqlite-file+sync@asyncio" not in names  # sync-only: no second variant
    with pytest.raises(UnknownNameError, match="'lg-nope'"):
        GateOptions(kind=GRAPH_KIND, cases=0, lanes="lg-nope").selection()


def test_the_command_runs_the_graph_gate_for_the_langgraph_family(tmp_path: Path) -> None:
    out = tmp_path / "report.json"
    code = main(["--family", "langgraph", "parity", "check", "--lanes", "lg-memory@uvloop",
                 "--workers", "1", "--out", str(out)])
    assert code == 0
    report = json.loads(out.read_text())
    assert report["sdk"]["name"] == "langgraph" and report["generative"]["case_count"] == 0
    assert [lane["name"] for lane in report["lanes"]] == ["lg-reference@asyncio",
                                                         "lg-memory@uvloop"]
    assert main(["--family", "langgraph", "parity", "check", "--cases", "3"]) == 2
    assert main(["--family", "langgraph", "parity", "check", "--lanes", "sqlite-file"]) == 2


def test_each_kind_keeps_its_own_results_folder() -> None:
    from arib.checks.openai_agents.parity.kind import AGENT_KIND

    assert AGENT_KIND.folder("0.24.0") == "0.24.0"  # the sessions' folders, as before
    assert GRAPH_KIND.folder("cp4.3.2+sq3.1.2+pg3.2.0") == "langgraph-cp4.3.2+sq3.1.2+pg3.2.0"
