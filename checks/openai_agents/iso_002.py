"""ARIB-ISO-002: a session id that extends another with a key suffix stays its own session.

Applications compose session ids (``user42``, ``user42:counter``). A backend that stores a
session under keys derived from its id by appending a suffix (RedisSession keeps ``P:X`` as
the session's metadata, ``P:X:messages`` and ``P:X:counter``) can then lay one session's key
over another's: the metadata key of ``X:counter`` is the counter key of ``X``. RedisSession's
own code says so ("Legacy key names can overlap across session IDs") and checks, under
WATCH and before any side effect, every key it will delete or expire. Agent code relies on
what that gives: both sessions keep working, and neither ever loses an item to the other.

Each trial, on a fresh store: sessions ``X`` and ``X:counter`` (two instances on one store)
append in turns (seeded order and sizes), read, pop once each; X clears while the other holds
items, appends, and the other clears while X holds items; then both append again. Judged
after every step:

- every append and every read of either session is served, and a read returns exactly that
  session's items, in order;
- a pop returns its own session's newest item;
- a clear may be refused (it raises) while the other session's keys overlap its own; a refused
  clear changes nothing, an acknowledged one empties only its own session.
"""

from __future__ import annotations

from typing import Any

from arib.checks.base import CheckSpec, Selector, TrialContext, describe
from arib.checks.common import canonical, label, read_items, trials_param
from arib.checks.openai_agents._stores import open_peer, require_shared_store
from arib.ground.model import Counts, Trial
from arib.ground.shorten import join_within

SUFFIX = ":counter"


class Pair:
    """The two sessions, their models, and what went wrong, in order."""

    def __init__(self, ctx: TrialContext, sessions: dict[str, Any]) -> None:
        self.ctx = ctx
        self.sessions = sessions
        self.model: dict[str, list[Any]] = {name: [] for name in sessions}
        self.problems: list[tuple[str, str]] = []
        self.counts = Counts()

    def note(self, mode: str, text: str, counts: Counts | None = None) -> None:
        """Record a problem of ``mode`` and add its counts."""
        self.problems.append((mode, text))
        self.counts = self.counts + (counts or Counts())

    async def add(self, name: str, items: list[Any]) -> None:
        """Append ``items`` to session ``name``; the model keeps them if the call returned."""
        self.ctx.log(f"{name}.add_items([{', '.join(label(i) for i in items)}])")
        try:
            await self.sessions[name].add_items(items)
        except Exception as exc:  # noqa: BLE001 - an append refused is the evidence
            self.note("append_refused", f"{name}.add_items() raised {describe(exc)}",
                      Counts(raised=1))
            return
        self.model[name].extend(items)

    async def pop(self, name: str) -> None:
        """Pop on session ``name``: it must return that session's newest item."""
        self.ctx.log(f"{name}.pop_item()")
        try:
            popped = await self.sessions[name].pop_item()
        except Exception as exc:  # noqa: BLE001 - a pop refused is the evidence
            self.note("pop_refused", f"{name}.pop_item() raised {describe(exc)}",
                      Counts(raised=1))
            return
        want = self.model[name][-1] if self.model[name] else None
        if (popped is None) != (want is None) or (
                want is not None and canonical(popped) != canonical(want)):
            self.note("pop_wrong", f"{name}.pop_item() returned "
                      f"{label(popped) if popped is not None else None}, not "
                      f"{label(want) if want is not None else None}", Counts(lost=1))
        if want is not None:
            self.model[name].pop()

    async def clear(self, name: str) -> None:
        """Clear session ``name``; a refusal is allowed and changes nothing in the model."""
        self.ctx.log(f"{name}.clear_session()")
        try:
            await self.sessions[name].clear_session()
        except Exception as exc:  # noqa: BLE001 - a refusal the overlap allows
            self.ctx.log(f"  refused: {describe(exc)} (allowed: it must change nothing)")
            return
        self.model[name].clear()

    async def verify(self, after: str) -> None:
        """Each session's read must be exactly its model, in order."""
        for name, session in self.sessions.items():
            self.ctx.log(f"{name}.get_items()")
            try:
                seen = await read_items(session)
            except Exception as exc:  # noqa: BLE001 - a read refused is the evidence
                self.note("read_refused", f"after {after}: {name}.get_items() raised "
                          f"{describe(exc)}", Counts(raised=1))
                continue
            want = self.model[name]
            if [canonical(i) for i in seen] == [canonical(i) for i in want]:
                continue
            theirs = {canonical(i) for other, items in self.model.items() if other != name
                      for i in items}
            mine = {canonical(i) for i in seen}
            foreign = sum(1 for i in seen if canonical(i) in theirs)
            lost = sum(1 for i in want if canonical(i) not in mine)
            self.note("foreign" if foreign else "lost" if lost else "wrong_history",
                      f"after {after}: {name} read {[label(i) for i in seen[:5]]} "
                      f"({len(seen)} items), expected {len(want)}",
                      Counts(lost=lost, foreign=foreign))


async def run_trial(ctx: TrialContext) -> Trial:
    """One trial: X and X:counter append, pop and clear in turn, each judged after every step."""
    first = await ctx.open()
    require_shared_store(first, "ARIB-ISO-002", "a second instance, as another session id, "
                         "on the same store")
    x = ctx.build.session_id
    other = x + SUFFIX
    ctx.log(f"two instances on one store: X={x!r}, Y={other!r}")
    pair = Pair(ctx, {"X": first.session, "Y": (await open_peer(ctx, other)).session})
    tag = f"{ctx.seed:016x}"

    def items(name: str, step: int, n: int) -> list[Any]:
        return [{"role": "user", "content": f"{tag} {name}{step}.{i}"} for i in range(n)]

    order = ["X", "Y"] if ctx.rng.random() < 0.5 else ["Y", "X"]
    for step in range(2):
        for name in order:
            await pair.add(name, items(name, step, ctx.rng.randint(1, 3)))
    await pair.verify("the appends")
    for name in order:
        await pair.pop(name)
    await pair.verify("the pops")
    # Each clears while the other holds items: X (whose id the other extends) first.
    await pair.clear("X")
    await pair.verify("X's clear")
    await pair.add("X", items("X", 5, 2))
    await pair.clear("Y")
    await pair.verify("Y's clear")
    for name in order:
        await pair.add(name, items(name, 9, 2))
    await pair.verify("the last appends")
    violated = bool(pair.problems)
    mode = pair.problems[0][0] if violated else "separate"
    sample = join_within([text for _, text in pair.problems[:3]], 400) if violated else None
    return Trial(ctx.index, ctx.seed, violated, pair.counts, mode=mode,
                 sample=sample or None, ops=tuple(ctx.ops))


CHECK = CheckSpec(
    id="ARIB-ISO-002",
    invariant="sessions X and X:counter on one store (an id that extends another with a key "
    "suffix) each keep exactly their own items: appends, reads and pops of both are served, "
    "and a clear either empties only its own session or is refused and changes nothing",
    fault="two instances on one store with ids X and X + ':counter': appends in turns, reads, "
    "one pop each, a clear of each while the other holds items, appends again",
    params=(trials_param(2),),
    run_trial=run_trial,
    mutants=(
        "reference_clear_takes_suffixed_ids",
        "redis_append_checks_every_key_type",
    ),
    generated=(
        Selector("reference", "ReferenceSession.clear_session", "early_return"),
        Selector("reference", "ReferenceSession.clear_session", "drop_await"),
    ),
    timeout_s=60.0,
)
