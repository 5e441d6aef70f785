"""The reference workflows: offline openai-agents runs whose every session read is recorded.

A workflow is a named sequence of steps from one pool (``STEP_POOL``); a step is a turn of an
agent run with a scripted model (chat, tool calls, a handoff, structured output, a failing or a
cancelled turn and its retry, a turn under a ``SessionSettings`` limit) or a direct session
operation (reads with and without ``limit``, ``pop_item`` undoing a turn, ``clear_session``).
What the session returned is recorded at every read: each explicit ``get_items``, each
``pop_item`` result, and each input the runner handed the model (which the runner built from its
own ``get_items`` call, so a backend that answers the runner wrongly is caught too).

Ids of model output items come from a per-workflow counter, so a workflow is deterministic and
a step repeated in a generated workflow never reuses an id.

The replay digest is the SHA-256 of the canonical JSON (``sort_keys=True``,
``separators=(",", ":")``, ``ensure_ascii=False``) of every read as ``[label, items]``.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from agents import set_tracing_disabled

from arib.checks.openai_agents.parity.kind import RULES
from arib.checks.openai_agents.parity.steps import (
    CancelledTurn,
    ChatTurn,
    ClearSession,
    DirectAppend,
    FailingTurn,
    HandoffTurn,
    LargeTurn,
    LimitReads,
    PopTurn,
    SessionDefaultLimit,
    SettingsTurn,
    StepSpec,
    StructuredTurn,
    ToolTurn,
    WorkflowContext,
)
from arib.checks.parity.normalize import normalize_reads
from arib.checks.parity.records import (
    Workflow,
    WorkflowResult,
    play_steps,
    result_from_reads,
    workflow_domains,
)

# ---------------------------------------------------------------------------------------------
# The reference pool.

UNICODE_EDGE = "naïve café e\u0301 Å Å ﬁ 𝔘𝔫𝔦 👩‍👩‍👧 עברית العربية \u202e rtl \u0007 \\ \" '"

REFERENCE_WORKFLOWS: tuple[Workflow, ...] = (
    Workflow(
        "chat_multi_turn",
        "chat",
        "three plain turns, a full read after each",
        (
            ChatTurn("Hello!", "Hi, how can I help?"),
            ChatTurn("What is 2+2?", "4."),
            ChatTurn("Thanks.", "You're welcome."),
        ),
    ),
    Workflow(
        "tool_call_single",
        "tools",
        "one function tool call with its output, then a plain turn",
        (
            ToolTurn("Add 2 and 3.", (("add", (("a", 2), ("b", 3))),), "2 + 3 = 5."),
            ChatTurn("And now?", "Nothing else."),
        ),
    ),
    Workflow(
        "tool_calls_parallel",
        "tools",
        "three tool calls in one model response",
        (
            ToolTurn(
                "Capitals of France and Japan, and 40+2?",
                (
                    ("lookup", (("key", "capital:fr"),)),
                    ("lookup", (("key", "capital:jp"),)),
                    ("add", (("a", 40), ("b", 2))),
                ),
                "Paris, 東京, 42.",
            ),
        ),
    ),
    Workflow(
        "handoff_two_agents",
        "handoff",
        "a triage agent hands off to a billing agent",
        (
            ChatTurn("Hi.", "Hello."),
            HandoffTurn("I was charged twice.", "Billing here: refund issued."),
        ),
    ),
    Workflow(
        "structured_output",
        "structured",
        "an agent with output_type returns JSON that is parsed",
        (
            StructuredTurn("Is the sky blue?", "yes", 9, ("sky", "colour")),
            StructuredTurn("Ünïcode?", "ja — ✓", 7, ("ü", "✓")),
        ),
    ),
    Workflow(
        "raise_and_retry",
        "retry",
        "the model raises once, the run fails, the turn is retried",
        (
            ChatTurn("Start.", "Started."),
            FailingTurn("Do the thing.", "Done on retry."),
        ),
    ),
    Workflow(
        "pop_item_undo",
        "correction",
        "two turns, pop_item undoes the last one, a corrected turn follows",
        (
            ChatTurn("Book a flight to Rome.", "Booked Rome."),
            ToolTurn("Add 1 and 1.", (("add", (("a", 1), ("b", 1))),), "2."),
            PopTurn(),
            ChatTurn("Sorry, I meant Milan.", "Booked Milan."),
        ),
    ),
    Workflow(
        "limit_reads_every_turn",
        "limit",
        "get_items(limit=...) for several limits after every turn",
        (
            LimitReads(),
            ChatTurn("One.", "Uno."),
            LimitReads(),
            ToolTurn("Echo abc.", (("echo", (("text", "abc"),)),), "cba."),
            LimitReads(),
            ChatTurn("Two.", "Dos."),
            LimitReads(),
        ),
    ),
    Workflow(
        "session_settings_limit",
        "limit",
        "turns run with SessionSettings(limit=N): the model sees only the latest N items",
        (
            ChatTurn("First.", "1st."),
            ChatTurn("Second.", "2nd."),
            SettingsTurn("Third, limited to 2.", "3rd.", 2),
            SettingsTurn("Fourth, limited to 1.", "4th.", 1),
        ),
    ),
    Workflow(
        "clear_then_continue",
        "clear",
        "clear_session, then the conversation goes on",
        (
            ChatTurn("Remember 7.", "Remembered."),
            ClearSession(),
            LimitReads((1, 3)),
            ChatTurn("What did I say?", "I don't know."),
        ),
    ),
    Workflow(
        "large_non_ascii",
        "content",
        "about 200 KiB of mixed-script content in one turn",
        (ChatTurn("Grüß dich 👋", "Servus!"), LargeTurn()),
    ),
    Workflow(
        "unicode_edge_cases",
        "content",
        "combining marks, ligatures, ZWJ emoji, RTL marks and control characters in tools",
        (
            ToolTurn(UNICODE_EDGE, (("echo", (("text", UNICODE_EDGE),)),), UNICODE_EDGE[::-1]),
            DirectAppend(((("role", "user"), ("content", "\x00 nul and \ud7ff edge")),)),
            ChatTurn("ok?", "ok ✓"),
        ),
    ),
    Workflow(
        "cancelled_turn_retry",
        "cancel",
        "a turn is cancelled while the model answers, then retried",
        (
            ChatTurn("Begin.", "Begun."),
            CancelledTurn("Long task.", "Long task done."),
        ),
    ),
    Workflow(
        "empty_session_edges",
        "edge",
        "reads, pop_item and clear_session on an empty session",
        (LimitReads((0, 1, 5)), PopTurn(), ClearSession(), ChatTurn("Hi.", "Hi.")),
    ),
    Workflow(
        "mixed_support_case",
        "mixed",
        "tools, a handoff, a correction and limit reads in one conversation",
        (
            ToolTurn("Weather in Oslo?", (("lookup", (("key", "weather:oslo"),)),), "Snowy."),
            HandoffTurn("Refund my ticket.", "Refunded."),
            PopTurn(),
            StructuredTurn("Summarise.", "snow; refund pending", 5, ("oslo",)),
            LimitReads((2, 4)),
        ),
    ),
)


# Probes: behaviour the Session protocol leaves unwritten (a negative limit, the session's
# default limit). The first gate runs found the reference backend differing from every SDK
# backend here (on 0.19.2 and 0.24.0); targets/openai_agents/reference.py now follows the SDK
# backends, and these workflows are part of the default pool so that the gate keeps it that way.

PROBE_WORKFLOWS: tuple[Workflow, ...] = (
    Workflow(
        "probe_negative_limit",
        "probe",
        "get_items(limit=-1) and (limit=-2): every item, as SQLite's LIMIT -1 (the SDK "
        "backends keep that on purpose)",
        (
            DirectAppend(tuple((("role", "user"), ("content", f"item {i}")) for i in range(3))),
            LimitReads((-1, -2)),
        ),
    ),
    Workflow(
        "probe_session_default_limit",
        "probe",
        "session.session_settings = SessionSettings(limit=2), then get_items(): the latest "
        "2 items",
        (
            ChatTurn("One.", "Uno."),
            ChatTurn("Two.", "Dos."),
            SessionDefaultLimit(2),
        ),
    ),
)


REFERENCE_WORKFLOWS = REFERENCE_WORKFLOWS + PROBE_WORKFLOWS


def workflow_names() -> tuple[str, ...]:
    """The names of the reference pool's workflows, in order."""
    return tuple(w.name for w in REFERENCE_WORKFLOWS)


def domains(workflows: Sequence[Workflow] = REFERENCE_WORKFLOWS) -> tuple[str, ...]:
    """The sorted distinct domains of ``workflows``."""
    return workflow_domains(workflows)


def step_pool() -> tuple[StepSpec, ...]:
    """Every distinct step of the reference pool, in pool order (generative cases draw on it)."""
    seen: dict[StepSpec, None] = {}
    for workflow in REFERENCE_WORKFLOWS:
        for step in workflow.steps:
            seen.setdefault(step, None)
    return tuple(seen)


# ---------------------------------------------------------------------------------------------
# Running a workflow and its result.


async def run_workflow(
    workflow: Workflow,
    session: Any,
    *,
    lane: str,
    case_seed: int | None = None,
    store: Any = None,
) -> WorkflowResult:
    """Run ``workflow`` on ``session``; a raising step ends it with ok=False and the traceback.

    ``store`` (a ``faultkit.StoreAccess``) is what fault steps use beyond the session; a step
    that raises ``faultkit.Abstain`` ends the workflow as not applicable on this lane.
    """
    set_tracing_disabled(True)
    ctx = WorkflowContext(session=session, store=store)
    started = time.perf_counter()
    error, abstained = await play_steps(
        workflow, ctx, lane,
        lambda exc: [{"error": type(exc).__name__, "message": str(exc)[:500]}])
    elapsed_ms = (time.perf_counter() - started) * 1000.0
    reads = tuple(ctx.reads)
    normalized, rules = normalize_reads(reads, lane=lane, domain=workflow.domain, rules=RULES)
    return result_from_reads(
        workflow, reads, tuple(normalized), rules, error=error, elapsed_ms=elapsed_ms,
        case_seed=case_seed, abstained=abstained,
    )
