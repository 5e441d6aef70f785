"""The steps of the reference workflows, and the context they run in.

A step is a turn of an agent run with a scripted model (chat, tool calls, a handoff, structured
output, a failing or a cancelled turn and its retry, a turn under a ``SessionSettings`` limit)
or a direct session operation (reads with and without ``limit``, ``pop_item`` undoing a turn,
``clear_session``). ``WorkflowContext.read`` records what the session returned; the digest of
a workflow is taken over those reads (see arib.checks.openai_agents.parity.workflows).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

import anyio
from agents import Agent, RunConfig, Runner, function_tool
from pydantic import BaseModel

from arib.checks.openai_agents.parity.scripted import (
    Block,
    ScriptedFailure,
    ScriptedModel,
    Step,
    function_call,
    message,
    plain,
)
from arib.checks.parity.records import (  # noqa: F401 - re-exported: steps read and digest
    DISPLAY_STRING_LIMIT,
    Read,
    canonical_json,
    digest,
    display,
)

LARGE_CONTENT_BYTES = 200 * 1024


# ---------------------------------------------------------------------------------------------
# Tools, output types and agents used by the steps.

LOOKUP_TABLE = {
    "capital:fr": "Paris",
    "capital:jp": "東京",
    "capital:gr": "Αθήνα",
    "weather:oslo": "snow, −7 °C",
}


@function_tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@function_tool
def lookup(key: str) -> str:
    """Look a fact up in a fixed table."""
    return LOOKUP_TABLE.get(key, f"unknown key {key!r}")


@function_tool
def echo(text: str) -> str:
    """Return the text reversed, so the tool output differs from its input."""
    return text[::-1]


TOOLS = {"add": add, "lookup": lookup, "echo": echo}


class Answer(BaseModel):
    """The structured output of ``StructuredTurn``."""

    answer: str
    confidence: int
    tags: list[str]


# ---------------------------------------------------------------------------------------------
# The context a workflow runs in.


@dataclass
class WorkflowContext:
    """The session under test, the reads recorded so far, and the id counter."""

    session: Any
    reads: list[Read] = field(default_factory=list)
    counters: dict[str, int] = field(default_factory=dict)
    step_label: str = ""
    # Access beyond the session for fault steps (arib.checks.parity.faultkit.StoreAccess).
    store: Any = None

    def next_id(self, prefix: str) -> str:
        """A deterministic id: ``prefix`` and its running number in this workflow."""
        n = self.counters.get(prefix, 0) + 1
        self.counters[prefix] = n
        return f"{prefix}_{n:04d}"

    def record(self, what: str, items: Any) -> None:
        """Record ``items`` as a read labelled with the current step and ``what``."""
        self.reads.append(Read(f"{self.step_label}/{what}", plain(items)))

    async def read(self, limit: int | None = None) -> None:
        """Record ``get_items()`` (or ``get_items(limit=...)``)."""
        if limit is None:
            items = await self.session.get_items()
            self.record("get_items", items)
        else:
            items = await self.session.get_items(limit=limit)
            self.record(f"get_items(limit={limit})", items)

    def model(self, steps: Sequence[Step]) -> ScriptedModel:
        """A scripted model whose every input is recorded as a read."""
        calls = [0]

        def on_input(given: Any) -> None:
            calls[0] += 1
            items = [{"role": "user", "content": given}] if isinstance(given, str) else given
            self.record(f"model_input#{calls[0]}", items)

        return ScriptedModel(steps, on_input=on_input)

    async def run(self, agent: Agent[Any], user: str, *, session_limit: int | None = None) -> Any:
        """One ``Runner.run`` on the session under test, offline."""
        config: dict[str, Any] = {"tracing_disabled": True}
        if session_limit is not None:
            from agents.memory import SessionSettings

            config["session_settings"] = SessionSettings(limit=session_limit)
        return await Runner.run(
            agent, user, session=self.session, run_config=RunConfig(**config), max_turns=6
        )


# ---------------------------------------------------------------------------------------------
# Steps.


@dataclass(frozen=True)
class StepSpec:
    """Base of every step; ``kind`` names it in labels and in generated workflows."""

    kind: ClassVar[str] = "step"
    turn: ClassVar[bool] = False

    async def run(self, ctx: WorkflowContext) -> None:  # pragma: no cover - abstract
        """Run the step on the context's session and record its reads."""
        raise NotImplementedError

    def describe(self) -> str:
        """The step's name in generated workflows: its ``kind``."""
        return self.kind


@dataclass(frozen=True)
class ChatTurn(StepSpec):
    """A plain turn: the user says something, the assistant answers."""

    user: str
    reply: str
    kind: ClassVar[str] = "chat"
    turn: ClassVar[bool] = True

    async def run(self, ctx: WorkflowContext) -> None:
        """Run one chat turn and record the session's reads."""
        model = ctx.model([[message(ctx.next_id("msg"), self.reply)]])
        await ctx.run(Agent(name="assistant", instructions="Be brief.", model=model), self.user)
        await ctx.read()


@dataclass(frozen=True)
class ToolTurn(StepSpec):
    """A turn whose first response calls one or several tools; then a final answer."""

    user: str
    calls: tuple[tuple[str, tuple[tuple[str, Any], ...]], ...]
    reply: str
    kind: ClassVar[str] = "tools"
    turn: ClassVar[bool] = True

    async def run(self, ctx: WorkflowContext) -> None:
        """Run one turn that calls the tools, then answers, and record the session's reads."""
        outputs = [
            function_call(ctx.next_id("fc"), ctx.next_id("call"), name, dict(args))
            for name, args in self.calls
        ]
        model = ctx.model([outputs, [message(ctx.next_id("msg"), self.reply)]])
        tools: list[Any] = [TOOLS[name] for name in sorted({name for name, _ in self.calls})]
        agent = Agent(name="assistant", instructions="Use tools.", model=model, tools=tools)
        await ctx.run(agent, self.user)
        await ctx.read()


@dataclass(frozen=True)
class HandoffTurn(StepSpec):
    """A turn where a triage agent hands off to a billing agent, which answers."""

    user: str
    reply: str
    kind: ClassVar[str] = "handoff"
    turn: ClassVar[bool] = True

    async def run(self, ctx: WorkflowContext) -> None:
        """Run one turn handed off to billing and record the last agent and the reads."""
        model = ctx.model(
            [
                [function_call(ctx.next_id("fc"), ctx.next_id("call"), "transfer_to_billing", {})],
                [message(ctx.next_id("msg"), self.reply)],
            ]
        )
        billing = Agent(name="billing", instructions="Handle billing.", model=model)
        triage = Agent(name="triage", instructions="Route.", model=model, handoffs=[billing])
        result = await ctx.run(triage, self.user)
        ctx.record("last_agent", [{"name": result.last_agent.name}])
        await ctx.read()


@dataclass(frozen=True)
class StructuredTurn(StepSpec):
    """A turn whose agent has an ``output_type``; the final output is recorded too."""

    user: str
    answer: str
    confidence: int
    tags: tuple[str, ...]
    kind: ClassVar[str] = "structured"
    turn: ClassVar[bool] = True

    async def run(self, ctx: WorkflowContext) -> None:
        """Run one structured-output turn and record the final output and the reads."""
        body = {"answer": self.answer, "confidence": self.confidence, "tags": list(self.tags)}
        text = json.dumps(body, ensure_ascii=False)
        model = ctx.model([[message(ctx.next_id("msg"), text)]])
        agent = Agent(name="structured", instructions="Answer.", model=model, output_type=Answer)
        result = await ctx.run(agent, self.user)
        ctx.record("final_output", [plain(result.final_output)])
        await ctx.read()


@dataclass(frozen=True)
class FailingTurn(StepSpec):
    """A turn whose model raises once; the run fails, the session is read, the turn is rerun."""

    user: str
    reply: str
    kind: ClassVar[str] = "raise_retry"
    turn: ClassVar[bool] = True

    async def run(self, ctx: WorkflowContext) -> None:
        """Run a turn whose model raises, record it and the reads, then rerun the turn."""
        model = ctx.model([ScriptedFailure("transient model failure (scripted)")])
        agent = Agent(name="assistant", instructions="Be brief.", model=model)
        try:
            await ctx.run(agent, self.user)
        except ScriptedFailure as exc:
            ctx.record("raised", [{"error": type(exc).__name__, "message": str(exc)}])
        else:
            ctx.record("raised", [{"error": None}])
        await ctx.read()
        retry = ctx.model([[message(ctx.next_id("msg"), self.reply)]])
        await ctx.run(Agent(name="assistant", instructions="Be brief.", model=retry), self.user)
        await ctx.read()


@dataclass(frozen=True)
class CancelledTurn(StepSpec):
    """A turn cancelled while the model is answering (deterministically), then retried."""

    user: str
    reply: str
    kind: ClassVar[str] = "cancel_retry"
    turn: ClassVar[bool] = True

    async def run(self, ctx: WorkflowContext) -> None:
        """Cancel a turn while the model answers, record it and the reads, then rerun."""
        block = Block()
        model = ctx.model([block])
        agent = Agent(name="assistant", instructions="Be brief.", model=model)
        outcome: dict[str, Any] = {"cancelled": False, "finished": False}
        async with anyio.create_task_group() as tg:

            async def turn() -> None:
                try:
                    await ctx.run(agent, self.user)
                    outcome["finished"] = True
                except anyio.get_cancelled_exc_class():
                    outcome["cancelled"] = True
                    raise

            tg.start_soon(turn)
            await block.entered.wait()
            tg.cancel_scope.cancel()
        ctx.record("cancelled", [outcome])
        await ctx.read()
        retry = ctx.model([[message(ctx.next_id("msg"), self.reply)]])
        await ctx.run(Agent(name="assistant", instructions="Be brief.", model=retry), self.user)
        await ctx.read()


@dataclass(frozen=True)
class SettingsTurn(StepSpec):
    """A turn run with ``RunConfig(session_settings=SessionSettings(limit=N))``."""

    user: str
    reply: str
    limit: int
    kind: ClassVar[str] = "settings_limit"
    turn: ClassVar[bool] = True

    async def run(self, ctx: WorkflowContext) -> None:
        """Run one turn with the session limit setting and record the session's reads."""
        model = ctx.model([[message(ctx.next_id("msg"), self.reply)]])
        agent = Agent(name="assistant", instructions="Be brief.", model=model)
        await ctx.run(agent, self.user, session_limit=self.limit)
        await ctx.read()


@dataclass(frozen=True)
class PopTurn(StepSpec):
    """Undo the last turn: ``pop_item`` until a user message came off (or the session is empty)."""

    kind: ClassVar[str] = "pop_turn"
    max_pops: ClassVar[int] = 64

    async def run(self, ctx: WorkflowContext) -> None:
        """Pop items until a user message came off, recording each, then read."""
        for _ in range(self.max_pops):
            item = await ctx.session.pop_item()
            ctx.record("pop_item", [] if item is None else [item])
            if item is None or (isinstance(item, dict) and item.get("role") == "user"):
                break
        await ctx.read()


@dataclass(frozen=True)
class LimitReads(StepSpec):
    """``get_items(limit=...)`` for each limit (0, small, and larger than the history)."""

    limits: tuple[int, ...] = (0, 1, 2, 3, 5, 100)
    kind: ClassVar[str] = "limit_reads"

    async def run(self, ctx: WorkflowContext) -> None:
        """Record a limited read for each of the limits."""
        for limit in self.limits:
            await ctx.read(limit)


@dataclass(frozen=True)
class ClearSession(StepSpec):
    """``clear_session()``, then a read."""

    kind: ClassVar[str] = "clear"

    async def run(self, ctx: WorkflowContext) -> None:
        """Clear the session, then read."""
        await ctx.session.clear_session()
        await ctx.read()


@dataclass(frozen=True)
class DirectAppend(StepSpec):
    """``add_items`` called directly (an application writing history), then a read."""

    items: tuple[tuple[tuple[str, Any], ...], ...]
    kind: ClassVar[str] = "direct_append"

    async def run(self, ctx: WorkflowContext) -> None:
        """Append the items directly, then read."""
        await ctx.session.add_items([dict(item) for item in self.items])
        await ctx.read()


@dataclass(frozen=True)
class SessionDefaultLimit(StepSpec):
    """Set ``session.session_settings = SessionSettings(limit=N)``, read with no limit, reset."""

    limit: int
    kind: ClassVar[str] = "session_default_limit"

    async def run(self, ctx: WorkflowContext) -> None:
        """Read with the session's default limit set, then reset it."""
        from agents.memory import SessionSettings

        ctx.session.session_settings = SessionSettings(limit=self.limit)
        try:
            await ctx.read()
        finally:
            ctx.session.session_settings = SessionSettings()


def large_text(size: int = LARGE_CONTENT_BYTES) -> str:
    """About ``size`` UTF-8 bytes of mixed scripts, deterministic."""
    unit = "Grüße, 世界! Ωμέγα — नमस्ते 🙂 e\u0301 ﷽ \u200d\t\n"
    per = len(unit.encode("utf-8"))
    text = unit * (size // per + 1)
    return text[: size // 2] + "|mid|" + text[size // 2 : size]


@dataclass(frozen=True)
class LargeTurn(StepSpec):
    """A turn with about 200 KiB of non-ASCII user content and a large reply."""

    size: int = LARGE_CONTENT_BYTES
    kind: ClassVar[str] = "large"
    turn: ClassVar[bool] = True

    async def run(self, ctx: WorkflowContext) -> None:
        """Run one turn with large content and record a full and a limit-1 read."""
        text = large_text(self.size)
        model = ctx.model([[message(ctx.next_id("msg"), text[::-1][: self.size // 4])]])
        await ctx.run(Agent(name="assistant", instructions="Echo.", model=model), text)
        await ctx.read()
        await ctx.read(1)
