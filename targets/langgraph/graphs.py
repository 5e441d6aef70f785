"""The LangGraph family's reference graphs: offline ``StateGraph``s the graph parity gate replays.

Every graph is built fresh for each run (``GRAPHS[name]()`` returns an uncompiled builder) so
that its scripted parts (the fake chat model's next answer, a flaky node's attempt counter)
start over. Nothing in a graph reads the clock, a random source or the network: the chat model
is langchain-core's ``FakeMessagesListChatModel`` with scripted answers, every message carries
an explicit id, and retries back off by a fixed interval without jitter. What a run leaves in
the checkpointer (and so its state history) is therefore the same on every lane up to the ids
and timestamps LangGraph itself generates, which the gate normalizes
(``arib.checks.langgraph.parity.steps``).
"""

from __future__ import annotations

import operator
import threading
from collections.abc import Callable
from typing import Annotated, Any, TypedDict

from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
from langchain_core.messages import AIMessage, AnyMessage, BaseMessage, ToolMessage
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.types import RetryPolicy, Send, interrupt

UNICODE_EDGE = "naïve café e\u0301 Å ﬁ 𝔘𝔫𝔦 👩‍👩‍👧 עברית العربية \u202e rtl \u0007 \\ \" ' \x00"
SCRIPTS = ("Grüß dich 👋 ", "東京都の天気は雪 ", "Αθήνα — ", "مرحبا بالعالم ", "Привет, мир! ")
LARGE_CHUNK_CHARS = 40_000
AFTER_TIMEOUT_S = 10.0


class ScriptedFailure(RuntimeError):
    """Raised on purpose by a scripted node; a run expecting it records it, not a divergence."""


class Messages(TypedDict):
    """A conversation: messages merged by id (``add_messages``)."""

    messages: Annotated[list[AnyMessage], add_messages]


class Log(TypedDict, total=False):
    """A request, an answer, and a log every node appends to."""

    request: str
    answer: str
    log: Annotated[list[str], operator.add]


# ---------------------------------------------------------------------------------------------
# Tool loop: a fake chat model asks for tools until it answers.

LOOKUP = {"capital:fr": "Paris", "capital:jp": "東京", "weather:oslo": "snow, −7 °C"}


def _tool(name: str, args: dict[str, Any]) -> str:
    if name == "add":
        return str(int(args["a"]) + int(args["b"]))
    if name == "lookup":
        return LOOKUP.get(str(args["key"]), f"unknown key {args['key']!r}")
    return str(args.get("text", ""))[::-1]


def _call(call_id: str, name: str, **args: Any) -> dict[str, Any]:
    return {"id": call_id, "name": name, "args": args, "type": "tool_call"}


def _tool_loop(answers: list[BaseMessage]) -> StateGraph:
    model = FakeMessagesListChatModel(responses=answers)

    def agent(state: Messages) -> dict[str, Any]:
        return {"messages": [model.invoke(state["messages"])]}

    def tools(state: Messages) -> dict[str, Any]:
        last = state["messages"][-1]
        assert isinstance(last, AIMessage)
        return {
            "messages": [
                ToolMessage(
                    _tool(call["name"], call["args"]),
                    tool_call_id=call["id"],
                    id=f"tool-{call['id']}",
                    name=call["name"],
                )
                for call in last.tool_calls
            ]
        }

    def route(state: Messages) -> str:
        last = state["messages"][-1]
        return "tools" if isinstance(last, AIMessage) and last.tool_calls else END

    graph = StateGraph(Messages)
    graph.add_node("agent", agent)
    graph.add_node("tools", tools)
    graph.add_edge(START, "agent")
    graph.add_conditional_edges("agent", route, ["tools", END])
    graph.add_edge("tools", "agent")
    return graph


def tool_loop() -> StateGraph:
    """Two tool rounds (the first with two calls at once), then a final answer."""
    return _tool_loop(
        [
            AIMessage("", id="ai-1", tool_calls=[
                _call("c1", "lookup", key="capital:fr"), _call("c2", "lookup", key="capital:jp"),
            ]),
            AIMessage("", id="ai-2", tool_calls=[_call("c3", "add", a=40, b=2)]),
            AIMessage("Paris, 東京, 42.", id="ai-3"),
        ]
    )


def tool_loop_unicode() -> StateGraph:
    """A tool echoes the edge-case string (combining marks, ZWJ emoji, RTL, NUL) reversed."""
    return _tool_loop(
        [
            AIMessage("", id="ai-1", tool_calls=[_call("c1", "echo", text=UNICODE_EDGE)]),
            AIMessage(UNICODE_EDGE[::-1], id="ai-2"),
        ]
    )


# ---------------------------------------------------------------------------------------------
# Interrupts and resume.


def approvals() -> StateGraph:
    """Draft, then two human approvals (each an ``interrupt()``), then publish."""

    def draft(state: Log) -> dict[str, Any]:
        return {"answer": f"draft of {state['request']}", "log": ["draft"]}

    def review(state: Log) -> dict[str, Any]:
        verdict = interrupt({"question": "approve the draft?", "draft": state["answer"]})
        return {"log": [f"review: {verdict}"]}

    def legal(state: Log) -> dict[str, Any]:
        verdict = interrupt({"question": "legal ok?", "log": list(state["log"])})
        return {"log": [f"legal: {verdict}"]}

    def publish(state: Log) -> dict[str, Any]:
        return {"answer": state["answer"].upper(), "log": ["published"]}

    graph = StateGraph(Log)
    for name, node in (("draft", draft), ("review", review), ("legal", legal),
                       ("publish", publish)):
        graph.add_node(name, node)
    graph.add_edge(START, "draft")
    graph.add_edge("draft", "review")
    graph.add_edge("review", "legal")
    graph.add_edge("legal", "publish")
    graph.add_edge("publish", END)
    return graph


# ---------------------------------------------------------------------------------------------
# A failed node and its retry.


def _failing(
    times: int, name: str, after: threading.Event | None = None
) -> Any:  # a node: ``(state: Log) -> dict`` (StateGraph's node protocols name the arg)
    attempts = {"n": 0}

    def node(state: Log) -> dict[str, Any]:
        attempts["n"] += 1
        if attempts["n"] <= times:
            if after is not None and not after.wait(AFTER_TIMEOUT_S):
                raise TimeoutError(f"{name}: its sibling did not run within {AFTER_TIMEOUT_S} s")
            raise ScriptedFailure(f"{name} attempt {attempts['n']} fails on purpose")
        return {"log": [f"{name} ok on attempt {attempts['n']}"]}

    return node


def retried() -> StateGraph:
    """A node fails twice and succeeds on its third attempt under a ``RetryPolicy``."""
    graph = StateGraph(Log)
    graph.add_node(
        "flaky", _failing(2, "flaky"),
        retry_policy=RetryPolicy(
            max_attempts=3, initial_interval=0.001, jitter=False, retry_on=ScriptedFailure
        ),
    )
    graph.add_node("after", lambda state: {"log": ["after"]})
    graph.add_edge(START, "flaky")
    graph.add_edge("flaky", "after")
    graph.add_edge("after", END)
    return graph


def failed_then_resumed() -> StateGraph:
    """Two nodes in one step: ``steady`` succeeds and ``fragile`` fails (no retry), so the run
    raises with steady's writes pending; resuming runs only fragile, which now succeeds.

    fragile fails only once steady has run: which of two parallel tasks ends first is the
    schedule's choice, and LangGraph drops a sibling that has not started when a task fails.
    """
    calls = {"steady": 0}
    ran = threading.Event()

    def steady(state: Log) -> dict[str, Any]:
        calls["steady"] += 1
        ran.set()
        return {"log": [f"steady call {calls['steady']}"]}

    graph = StateGraph(Log)
    graph.add_node("steady", steady)
    graph.add_node("fragile", _failing(1, "fragile", after=ran))
    graph.add_node("join", lambda state: {"answer": " | ".join(sorted(state["log"]))})
    graph.add_edge(START, "steady")
    graph.add_edge(START, "fragile")
    graph.add_edge(["steady", "fragile"], "join")
    graph.add_edge("join", END)
    return graph


# ---------------------------------------------------------------------------------------------
# Time travel: a linear counter whose earlier checkpoints are replayed and forked.


class Counter(TypedDict):
    """A running total and the path of nodes that built it."""

    total: int
    path: Annotated[list[str], operator.add]


def counter() -> StateGraph:
    """Three steps add 1, 10 and 100."""
    graph = StateGraph(Counter)
    previous = START
    for name, amount in (("one", 1), ("ten", 10), ("hundred", 100)):
        graph.add_node(name, lambda s, n=name, a=amount: {"total": s["total"] + a, "path": [n]})
        graph.add_edge(previous, name)
        previous = name
    graph.add_edge(previous, END)
    return graph


# ---------------------------------------------------------------------------------------------
# Subgraphs, and a map step with Send.


def _inner() -> Any:
    def plan(state: Log) -> dict[str, Any]:
        return {"log": [f"inner plan for {state['request']}"]}

    def confirm(state: Log) -> dict[str, Any]:
        answer = interrupt({"question": "run the inner plan?", "log": list(state["log"])})
        return {"log": [f"inner confirmed: {answer}"], "answer": f"inner:{answer}"}

    inner = StateGraph(Log)
    inner.add_node("plan", plan)
    inner.add_node("confirm", confirm)
    inner.add_edge(START, "plan")
    inner.add_edge("plan", "confirm")
    inner.add_edge("confirm", END)
    return inner.compile()


def nested() -> StateGraph:
    """A parent whose middle node is a compiled subgraph that interrupts (so the subgraph's
    own checkpoints, in their namespace, are in the checkpointer too)."""
    graph = StateGraph(Log)
    graph.add_node("before", lambda state: {"log": ["outer before"]})
    graph.add_node("child", _inner())
    graph.add_node("after", lambda state: {"log": ["outer after"]})
    graph.add_edge(START, "before")
    graph.add_edge("before", "child")
    graph.add_edge("child", "after")
    graph.add_edge("after", END)
    return graph


class MapState(TypedDict, total=False):
    """Items mapped with ``Send`` and their results, reduced by concatenation."""

    items: list[str]
    results: Annotated[list[str], operator.add]


def fan_out() -> StateGraph:
    """``Send`` one task per item to a worker; the results are concatenated."""

    def split(state: MapState) -> list[Send]:
        return [Send("work", {"items": [item]}) for item in state["items"]]

    graph = StateGraph(MapState)
    graph.add_node("work", lambda s: {"results": [f"{s['items'][0]}→{len(s['items'][0])}"]})
    graph.add_conditional_edges(START, split, ["work"])
    graph.add_edge("work", END)
    return graph


# ---------------------------------------------------------------------------------------------
# Large and non-ASCII state.


class Blob(TypedDict, total=False):
    """Large text chunks appended over several steps."""

    chunks: Annotated[list[str], operator.add]
    sizes: Annotated[list[int], operator.add]


def large_state() -> StateGraph:
    """Three steps each append about 40 000 characters of mixed scripts (about 350 KiB of UTF-8
    in the end state)."""
    graph = StateGraph(Blob)
    previous = START
    for index in range(3):
        name = f"write{index}"

        def write(state: Blob, i: int = index) -> dict[str, Any]:
            seed = SCRIPTS[i % len(SCRIPTS)] + SCRIPTS[(i + 2) % len(SCRIPTS)]
            text = (seed * (LARGE_CHUNK_CHARS // len(seed) + 1))[:LARGE_CHUNK_CHARS]
            return {"chunks": [text], "sizes": [len(text.encode("utf-8"))]}

        graph.add_node(name, write)
        graph.add_edge(previous, name)
        previous = name
    graph.add_edge(previous, END)
    return graph


GRAPHS: dict[str, Callable[[], StateGraph]] = {
    "tool_loop": tool_loop,
    "tool_loop_unicode": tool_loop_unicode,
    "approvals": approvals,
    "retried": retried,
    "failed_then_resumed": failed_then_resumed,
    "counter": counter,
    "nested": nested,
    "fan_out": fan_out,
    "large_state": large_state,
}
