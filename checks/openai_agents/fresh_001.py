"""ARIB-FRESH-001: a session on a store nobody has written to answers as an empty session.

Agent code often calls something other than ``add_items`` first on a brand-new conversation:
``pop_item()`` behind an "undo" button, ``clear_session()`` behind "reset", a ``limit`` read
to build the first prompt. Backends that create their tables or keys lazily must do so (or
answer as empty) for every first call, not only for the first write -- also when several
instances make their first calls on the new store at once (workers of one server picking up
the same new conversation). Invariant, per first call on a store nothing was written to:

- ``get_items()`` and ``get_items(limit=k)`` return ``[]``; ``pop_item()`` returns None;
  ``clear_session()`` returns; none raises;
- afterwards the store works: an append through one instance is read back through each.

The fault: for each kind of first call, a store of its own (a new folder, table pair or key
prefix of this trial) whose very first call is that one; then one more new store where
``instances`` instances make their different first calls released together.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from arib.checks.base import CheckSpec, NotApplicable, Param, Selector, TrialContext, describe, race
from arib.checks.common import canonical, read_items, trials_param
from arib.ground.model import Counts, Trial
from arib.ground.shorten import join_within

FIRST_CALLS: tuple[str, ...] = ("pop_item()", "clear_session()", "get_items()",
                                "get_items(limit=2)")


def first_call(session: Any, kind: str, answers: dict[str, Any]) -> Callable[[], Awaitable[None]]:
    """The call ``kind`` on ``session``; its answer is kept in ``answers[kind]``."""
    async def call() -> None:
        if kind == "pop_item()":
            answers[kind] = await session.pop_item()
        elif kind == "clear_session()":
            answers[kind] = await session.clear_session()
        elif kind == "get_items()":
            answers[kind] = await read_items(session)
        else:
            answers[kind] = await read_items(session, 2)
    return call


def answer_problem(kind: str, answer: Any) -> str | None:
    """Why ``answer`` is not what a first call ``kind`` on an empty session returns."""
    empty: list[Any] | None = [] if kind.startswith("get_items") else None
    if answer == empty and type(answer) is type(empty):
        return None
    return f"first call {kind} on a new store returned {answer!r:.80}, not {empty!r}"


async def run_trial(ctx: TrialContext) -> Trial:
    """One trial: first calls of each kind on new stores, alone and together; all see empty."""
    instances = ctx.params["instances"]
    problems: list[str] = []
    raised = 0  # how many of the problems are calls that raised
    order = list(FIRST_CALLS)
    ctx.rng.shuffle(order)
    sessions: list[Any] = []
    for n, kind in enumerate(order):
        root = ctx.build.root / f"alone-{n}"
        root.mkdir()
        ctx.log(f"new store {root.name}: open one instance; its first call: {kind}")
        answers: dict[str, Any] = {}
        try:
            session = (await ctx.open_with(root=root)).session
            await first_call(session, kind, answers)()
            problem = answer_problem(kind, answers.get(kind))
        except NotApplicable:
            raise  # no second instance can open this store: the check abstains
        except Exception as exc:  # noqa: BLE001 - a first call that raises is the evidence
            session, problem = None, f"first call {kind} on a new store raised {describe(exc)}"
            raised += 1
        if problem:
            problems.append(problem)
        if session is not None:
            sessions.append(session)
    root = ctx.build.root / "together"
    root.mkdir()
    kinds = [order[i % len(order)] for i in range(instances)]
    ctx.log(f"new store {root.name}: open {instances} instances; first calls {kinds} "
            f"released together")
    try:
        crowd = [(await ctx.open_with(root=root)).session for _ in range(instances)]
    except NotApplicable:
        raise  # no second instance can open this store: the check abstains
    except Exception as exc:  # noqa: BLE001 - a store that cannot be opened is evidence
        return Trial(ctx.index, ctx.seed, True, Counts(raised=1), mode="open_failed",
                     sample=f"opening an instance raised {describe(exc)}", ops=tuple(ctx.ops))
    results: list[dict[str, Any]] = [{} for _ in crowd]
    failures = await race([first_call(s, k, results[i])
                           for i, (s, k) in enumerate(zip(crowd, kinds, strict=True))])
    for kind, answers, failure in zip(kinds, results, failures, strict=True):
        problem = (f"first call {kind} (with {instances - 1} others at once) raised "
                   f"{describe(failure)}" if failure is not None
                   else answer_problem(kind, answers.get(kind)))
        if problem:
            problems.append(problem)
            raised += failure is not None
    item = {"role": "user", "content": f"{ctx.seed:x} first write"}
    ctx.log("add_items([1 item]) through the first instance; get_items() through each")
    try:
        await crowd[0].add_items([item])
        for n, session in enumerate(crowd):
            seen = [canonical(i) for i in await read_items(session)]
            if seen != [canonical(item)]:
                problems.append(f"after the first write instance {n} reads {len(seen)} items")
                break
    except Exception as exc:  # noqa: BLE001 - a store unusable after its first calls
        problems.append(f"the first write or read after the first calls raised "
                        f"{describe(exc)}")
        raised += 1
    mode = "empty" if not problems else ("raised" if "raised" in problems[0] else "not_empty")
    return Trial(ctx.index, ctx.seed, bool(problems),
                 Counts(wrong_result=len(problems) - raised, raised=raised), mode=mode,
                 sample=join_within(problems[:2], 400) or None, ops=tuple(ctx.ops))


CHECK = CheckSpec(
    id="ARIB-FRESH-001",
    invariant="on a store nothing was written to, every first call of a session answers (does "
    "not hang) as an empty session (get_items gives [], pop_item None, clear_session "
    "returns), raising nothing, also when several instances make their first calls at once; "
    "then the store works",
    fault="for each kind of first call a new store whose very first call is that one; then a "
    "new store where several instances make different first calls released together",
    params=(
        Param("instances", 4, 1, 32, "instances making their first calls together"),
        trials_param(2),
    ),
    run_trial=run_trial,
    mutants=(
        "reference_pop_on_new_store_raises",
        "postgres_pop_before_tables_exist",
    ),
    generated=(
        Selector("reference", "ReferenceSession.pop_item", "drop_await"),
        Selector("sqlalchemy-postgres", "SQLAlchemySession.pop_item", "drop_await"),
    ),
    timeout_s=90.0,
    hang_invariant=True,
)
