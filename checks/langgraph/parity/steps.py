"""The steps of graph workflows, the context they run in, and how a lane plays one.

A graph workflow (a ``records.Workflow`` whose steps are these) compiles one reference graph
(``arib.targets.langgraph.graphs.GRAPHS``) with the lane's checkpointer, then runs it:
``Invoke`` (an input, or ``None`` to go on from a checkpoint), ``Resume``
(``Command(resume=...)``), ``Rewind`` (time travel: an earlier checkpoint of the state history,
optionally forked by ``update_state``) and ``History`` (the state history, every checkpoint
tuple of the thread in every namespace with its pending writes, and the current state with its
subgraphs). A lane whose class serves the sync half of the saver interface runs the graph's sync
API (``invoke``, ``stream``, ``get_state_history``, ...) in a worker thread; an async one runs
``ainvoke``, ``astream``, ``aget_state_history``, ... on the lane's event loop.

What a step reads is recorded raw (``replay_hash``) and normalized by ``graph_records``'
written rules (the parity hash). A run that raises where its script does not expect it ends
with ``ok=False`` and the traceback, naming the step: a divergence, never a crash of the gate.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar

import anyio.to_thread

from arib.checks.langgraph.parity.records import GRAPH_RULES, Aliases, normalize, plain
from arib.checks.parity.faultkit import Abstain
from arib.checks.parity.records import (
    Read,
    Workflow,
    WorkflowResult,
    play_steps,
    result_from_reads,
)

SYNC_SUFFIX = "+sync"


def lane_api(lane: str) -> str:
    """Which API of the graph a lane runs: ``sync`` for a ``+sync`` variant or a sync-only
    saver class, else ``async`` (``arib.targets.langgraph.lanes.API``)."""
    from arib.targets.langgraph.lanes import API

    target = lane.partition("@")[0]
    if target.endswith(SYNC_SUFFIX):
        return "sync"
    return "sync" if API.get(target) == "sync" else "async"


@dataclass
class GraphContext:
    """The lane's checkpointer, the API half it runs, the compiled graph and the reads."""

    saver: Any
    api: str
    thread_id: str
    graph: Any = None
    # The config the next run starts from (set by Rewind); None: the thread's latest.
    start: dict[str, Any] | None = None
    reads: list[Read] = field(default_factory=list)
    step_label: str = ""

    @property
    def thread(self) -> dict[str, Any]:
        """The thread's config (its latest checkpoint)."""
        return {"configurable": {"thread_id": self.thread_id}}

    def record(self, what: str, value: Any) -> None:
        """Record ``value`` (as plain JSON) as a read labelled with the step and ``what``."""
        self.reads.append(Read(f"{self.step_label}/{what}", [plain(value)]))

    async def call(self, sync: Callable[[], Any], async_: Callable[[], Awaitable[Any]]) -> Any:
        """``sync()`` in a worker thread on a sync lane, else ``await async_()``."""
        if self.api == "sync":
            return await anyio.to_thread.run_sync(sync)
        return await async_()


class GraphStep:
    """A step of a graph workflow."""

    kind: ClassVar[str] = "step"

    def describe(self) -> dict[str, Any]:
        """The JSON form of this step: its kind and fields."""
        return {"kind": self.kind, **{k: plain(v) for k, v in vars(self).items()}}

    async def run(self, ctx: GraphContext) -> None:
        """Run this step on ``ctx``."""
        raise NotImplementedError


@dataclass(frozen=True)
class Compile(GraphStep):
    """Compile the reference graph ``graph`` with the lane's checkpointer."""

    graph: str
    kind: ClassVar[str] = "compile"

    async def run(self, ctx: GraphContext) -> None:
        from arib.targets.langgraph.graphs import GRAPHS

        ctx.graph = GRAPHS[self.graph]().compile(checkpointer=ctx.saver)


async def _run(ctx: GraphContext, value: Any, stream: bool, expect: str | None) -> None:
    """Run the graph on ``value`` from ``ctx.start`` (or the thread's latest checkpoint) and
    record its output (or its stream of updates); a raise of the class ``expect`` names is
    recorded as the run's outcome, any other propagates."""
    config, ctx.start = ctx.start or ctx.thread, None
    graph = ctx.graph

    async def astream() -> list[Any]:
        return [c async for c in graph.astream(value, config, stream_mode="updates")]

    try:
        if stream:
            out = await ctx.call(
                lambda: list(graph.stream(value, config, stream_mode="updates")), astream
            )
        else:
            out = await ctx.call(
                lambda: graph.invoke(value, config), lambda: graph.ainvoke(value, config)
            )
    except Exception as exc:
        if expect is None or type(exc).__name__ != expect:
            raise
        ctx.record("raised as scripted", exc)
        return
    ctx.record("chunks" if stream else "output", out)


@dataclass(frozen=True)
class Invoke(GraphStep):
    """Run the graph on ``input`` (``None``: go on from the checkpoint); ``stream`` records the
    stream of updates; ``expect`` names an exception class the script raises on purpose."""

    input: Any = None
    stream: bool = False
    expect: str | None = None
    kind: ClassVar[str] = "invoke"

    async def run(self, ctx: GraphContext) -> None:
        await _run(ctx, self.input, self.stream, self.expect)


@dataclass(frozen=True)
class Resume(GraphStep):
    """Resume an interrupted run with ``Command(resume=value)``."""

    value: Any
    stream: bool = False
    kind: ClassVar[str] = "resume"

    async def run(self, ctx: GraphContext) -> None:
        from langgraph.types import Command

        await _run(ctx, Command(resume=self.value), self.stream, None)


async def _history(ctx: GraphContext) -> list[Any]:
    graph, thread = ctx.graph, ctx.thread

    async def ahistory() -> list[Any]:
        return [s async for s in graph.aget_state_history(thread)]

    return list(await ctx.call(lambda: list(graph.get_state_history(thread)), ahistory))


@dataclass(frozen=True)
class Rewind(GraphStep):
    """Time travel: the next run starts from the newest earlier checkpoint whose ``next`` is
    ``(to,)``; with ``update``, from the fork ``update_state`` makes there (as ``as_node``)."""

    to: str
    update: Any = None
    as_node: str | None = None
    kind: ClassVar[str] = "rewind"

    async def run(self, ctx: GraphContext) -> None:
        found = next((s for s in await _history(ctx) if tuple(s.next) == (self.to,)), None)
        from arib.targets.langgraph.lanes import latest_only

        no_history = latest_only(ctx.saver)
        if found is None and no_history:
            raise Abstain(f"{no_history}: travelling back to an earlier checkpoint was never "
                          f"offered there")
        if found is None:
            raise LookupError(f"no checkpoint of the state history has next == ({self.to!r},)")
        ctx.start = found.config
        ctx.record("rewound to", {"step": found.metadata.get("step"), "next": found.next,
                                  "config": found.config})
        if self.update is not None:
            graph, config, update, as_node = ctx.graph, found.config, self.update, self.as_node
            ctx.start = await ctx.call(
                lambda: graph.update_state(config, update, as_node=as_node),
                lambda: graph.aupdate_state(config, update, as_node=as_node),
            )
            ctx.record("forked", ctx.start)


@dataclass(frozen=True)
class History(GraphStep):
    """Record the state history, every checkpoint tuple of the thread in every namespace (with
    its pending writes), and the current state with its subgraphs."""

    kind: ClassVar[str] = "history"

    async def run(self, ctx: GraphContext) -> None:
        from arib.targets.langgraph.lanes import latest_only

        no_history = latest_only(ctx.saver)
        if no_history:  # the runs compare state histories, which such a saver never keeps
            raise Abstain(f"{no_history}: a state history was never offered there")
        graph, saver, thread = ctx.graph, ctx.saver, ctx.thread
        ctx.record("state history", await _history(ctx))

        async def alisting() -> list[Any]:
            return [t async for t in saver.alist(thread)]

        listed = await ctx.call(lambda: list(saver.list(thread)), alisting)
        ctx.record("checkpoints by namespace", by_namespace(listed))
        ctx.record("state", await ctx.call(
            lambda: graph.get_state(thread, subgraphs=True),
            lambda: graph.aget_state(thread, subgraphs=True),
        ))


def by_namespace(listed: list[Any]) -> list[list[Any]]:
    """Checkpoint tuples grouped by namespace, each group in the saver's own order (newest
    first is the contract), the groups ordered by their first checkpoint id, newest first:
    the order of namespaces in an unfiltered listing is no saver's contract."""
    groups: dict[str, list[Any]] = {}
    for item in listed:
        groups.setdefault(item.config["configurable"].get("checkpoint_ns", ""), []).append(item)
    return sorted(
        groups.values(), key=lambda g: g[0].config["configurable"]["checkpoint_id"], reverse=True
    )


async def play_graph(
    workflow: Workflow,
    saver: Any,
    *,
    lane: str,
    case_seed: int | None = None,
    store: Any = None,
) -> WorkflowResult:
    """Play a graph workflow on ``saver`` (the lane's checkpointer), as ``runner.Play``."""
    ctx = GraphContext(saver=saver, api=lane_api(lane), thread_id=f"parity-{workflow.name}")
    started = time.perf_counter()
    error, abstained = await play_steps(workflow, ctx, lane, lambda exc: exc)
    elapsed_ms = (time.perf_counter() - started) * 1000.0
    reads = tuple(ctx.reads)
    aliases = Aliases()
    normalized = tuple(Read(r.label, normalize(r.items, aliases)) for r in reads)
    rules = tuple(rule.id for rule in GRAPH_RULES if rule.id in aliases.applied)
    return result_from_reads(
        workflow, reads, normalized, rules, error=error, elapsed_ms=elapsed_ms,
        case_seed=case_seed, abstained=abstained,
    )
