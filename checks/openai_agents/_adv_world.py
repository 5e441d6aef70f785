"""The store every advanced-API check starts from: a peer session with branches and usage.

Opened before the session under test (so its rows come first in every table, where a query
that ignores the session id finds them first), a peer session on the same store (id
``X + "-peer"``, so ``X`` is a prefix of it) writes seven turns on ``main`` with usage, a
branch ``alt`` from turn 3 with four more turns and usage (the same branch name, turn numbers
and tool names the session under test will use), and a branch ``peer-only`` that the session
under test does not have; the peer is left on ``alt``. It is never cleared while the session
under test is (so the two sessions' clear generations differ). At the end ``check_peer``
verifies that nothing the session under test did reached the peer: items, branches, current
branch, turns, usage and tool usage.
"""

from __future__ import annotations

from dataclasses import dataclass
from random import Random
from typing import Any

from arib.checks.base import TrialContext, describe
from arib.checks.openai_agents._adv_model import MAIN, Catalogue, Entry, Figures, Model
from arib.checks.openai_agents._adv_probe import (
    FAILED,
    Recorder,
    check_items,
    check_listing,
    check_tools,
    check_turns,
    check_usage,
    require,
    run_result,
)
from arib.checks.openai_agents.iso_001 import open_peer
from arib.targets.base import Handle

TOOLS = ("lookup", "ns", "weather")
PEER_ONLY = "peer-only"


async def write_turn(rec: Recorder, session: Any, who: str, model: Model, branch: str,
                     entries: list[Entry], split: bool) -> None:
    """Append one turn (a user message and its responses) as one or two add_items calls."""
    batches = [entries[:1], entries[1:]] if split and len(entries) > 1 else [entries]
    for batch in batches:
        names = ", ".join(e.kind for e in batch)
        if await rec.call(f"{who}.add_items([{names}])", session.add_items,
                          [e.item for e in batch]) is not FAILED:
            model.append(branch, batch)


async def store_usage(rec: Recorder, session: Any, who: str, model: Model, branch: str,
                      figures: Figures) -> None:
    """store_run_usage with a run result carrying ``figures``; the model records it."""
    if await rec.call(f"{who}.store_run_usage(usage {figures.totals()})",
                      session.store_run_usage, run_result(figures)) is not FAILED:
        model.store(branch, figures)


@dataclass
class Peer:
    """The peer session and what it must still hold at the end."""

    session: Any
    model: Model
    current: str = MAIN


async def open_peer_first(ctx: TrialContext, api: tuple[str, ...]) -> Peer:
    """Open the peer before the session under test (so its rows come first in every table);
    abstain if the runtime object lacks ``api``."""
    handle = await open_peer(ctx, ctx.build.session_id + "-peer")
    require(handle.session, api)
    ctx.log(f"peer session {ctx.build.session_id + '-peer'!r} opened first on the store")
    return Peer(handle.session, Model())


async def fill_peer(rec: Recorder, peer: Peer, cat: Catalogue, rng: Random,
                    terms: tuple[str, ...] = ()) -> None:
    """Write the peer's branches, turns and usage (see the module docstring)."""
    session, model = peer.session, peer.model

    async def turns(branch: str, count: int, first: int) -> None:
        for n in range(first, first + count):
            text = f"{cat.tag} peer {branch} q{n} {' '.join(terms)}"
            await write_turn(rec, session, "P", model, branch,
                             [cat.user(text), *cat.responses(rng, TOOLS)], split=n % 2 == 0)
            await store_usage(rec, session, "P", model, branch, Figures.draw(rng))

    await turns(MAIN, 7, 1)
    for name, turn, more in (("alt", 3, 4), (PEER_ONLY, 2, 1)):
        if await rec.call(f"P.create_branch_from_turn({turn}, {name!r})",
                          session.create_branch_from_turn, turn, name) is not FAILED:
            model.create(MAIN, turn, name)
        await turns(name, more, turn)
        if name == "alt":
            await rec.call("P.switch_to_branch('main')", session.switch_to_branch, MAIN)
    if await rec.call("P.switch_to_branch('alt')", session.switch_to_branch,
                      "alt") is not FAILED:
        peer.current = "alt"


async def reopen(ctx: TrialContext, rec: Recorder, handle: Handle, who: str) -> Any:
    """Another instance of the session on the store; an open that raises is evidence."""
    if rec.wedged:
        ctx.log(f"{who} not opened: the store is locked")
        return FAILED
    ctx.log(f"{who} = a new instance of the session")
    try:
        return (await ctx.reopen(handle)).session
    except Exception as exc:  # noqa: BLE001 - a store that cannot be reopened is evidence
        rec.raised += 1
        rec.fail("open_raised", f"opening {who} on the store raised {describe(exc)}")
        rec.wedged = True
        return FAILED


async def check_peer(rec: Recorder, peer: Peer) -> None:
    """Nothing the session under test did reached the peer."""
    for branch in peer.model.branches:
        await check_items(rec, peer.session, peer.model, branch, "P", peer.current)
    await check_listing(rec, peer.session, peer.model, "P", peer.current)
    await check_turns(rec, peer.session, peer.model, peer.current, "P")
    await check_usage(rec, peer.session, peer.model, peer.current, "P", branches=(MAIN,))
    await check_tools(rec, peer.session, peer.model, peer.current, "P")
