"""LangGraph's parity workflows: graph runs a fake chat model drives, on every checkpointer
lane (the graphs are ``arib.targets.langgraph.graphs``)."""

from __future__ import annotations

from arib.checks.langgraph.parity.steps import Compile, History, Invoke, Resume, Rewind
from arib.checks.parity.records import Workflow

EDGE = "naïve café e\u0301 Å ﬁ 𝔘𝔫𝔦 👩‍👩‍👧 עברית العربية \u202e rtl \u0007 \\ \" '"


def _user(text: str, message_id: str) -> dict[str, object]:
    return {"messages": [{"role": "user", "content": text, "id": message_id}]}


GRAPH_WORKFLOWS: tuple[Workflow, ...] = (
    Workflow(
        "graph_tool_loop", "tools",
        "a fake chat model calls two tools at once, then one, then answers",
        (Compile("tool_loop"), Invoke(_user("Capitals of France and Japan, and 40+2?", "h-1")),
         History()),
    ),
    Workflow(
        "graph_tool_loop_streamed_unicode", "tools",
        "a streamed tool loop whose tool echoes combining marks, ZWJ emoji, RTL and NUL",
        (Compile("tool_loop_unicode"), Invoke(_user(EDGE, "h-1"), stream=True), History()),
    ),
    Workflow(
        "graph_interrupt_resume", "interrupt",
        "two interrupt() approvals, each resumed with Command(resume=...)",
        (Compile("approvals"), Invoke({"request": "the Q3 report — Ü"}), History(),
         Resume("yes ✓"), Resume({"ok": True, "by": "法務"}, stream=True), History()),
    ),
    Workflow(
        "graph_retry_policy", "retry",
        "a node fails twice and succeeds on its third attempt under a RetryPolicy",
        (Compile("retried"), Invoke({"request": "flaky work"}), History()),
    ),
    Workflow(
        "graph_failed_node_resume", "retry",
        "one of two parallel nodes fails: the run raises with the other's writes pending; "
        "resuming runs only the failed node",
        (Compile("failed_then_resumed"),
         Invoke({"request": "both"}, expect="ScriptedFailure"), History(),
         Invoke(None), History()),
    ),
    Workflow(
        "graph_time_travel_replay", "time-travel",
        "a finished run is replayed from an earlier checkpoint of its state history",
        (Compile("counter"), Invoke({"total": 0, "path": []}), Rewind("ten"), Invoke(None),
         History()),
    ),
    Workflow(
        "graph_time_travel_fork", "time-travel",
        "an earlier checkpoint is forked by update_state(as_node=...) and run from there",
        (Compile("counter"), Invoke({"total": 0, "path": []}),
         Rewind("hundred", update={"total": 1000, "path": ["forked ✂"]}, as_node="ten"),
         Invoke(None), History()),
    ),
    Workflow(
        "graph_subgraph_interrupt", "subgraph",
        "a subgraph interrupts inside its own namespace; the parent resumes it",
        (Compile("nested"), Invoke({"request": "inner job"}), History(), Resume("go ✓"),
         History()),
    ),
    Workflow(
        "graph_send_fan_out", "subgraph",
        "Send() maps four non-ASCII items to parallel worker tasks, reduced in order (not "
        "streamed: parallel tasks stream in the order they finish, which the schedule decides)",
        (Compile("fan_out"), Invoke({"items": ["α", "βγ", "東京", "👩‍👩‍👧"]}), History()),
    ),
    Workflow(
        "graph_large_non_ascii_state", "content",
        "about 350 KiB of mixed-script text written to state over three steps",
        (Compile("large_state"), Invoke({"chunks": [EDGE], "sizes": []}), History()),
    ),
)
