"""ARIB-COMPACT-004: compaction through EncryptedSession reclaims expired items, and only them.

``EncryptedSession`` hides items older than its ttl but leaves them stored; its documentation
promises that a successful automatic compaction "on native SQLite and SQLAlchemy stores
reclaims a contiguous prefix of authenticated expired envelopes". Agent code relies on both
halves: expired data is really removed, and nothing else is. Each trial (fresh store, seed):

1. the lane's store is read through an EncryptedSession (an EncryptedSession lane: the lane's
   class over its wrapped store; another lane: EncryptedSession over the lane's store), with
   the check's own key and a ttl of ``TTL_S``;
2. stored, oldest first and interleaved with a peer session's own expired and live items: a
   seeded run of X's expired envelopes (written as the application wrote them two hours ago:
   the same envelope, an older Fernet timestamp), sometimes an envelope X's key cannot
   authenticate followed by more expired ones, then X's live conversation; every fourth
   trial (from the third) has a single expired envelope, the history whose oldest item just
   expired; the sixth of every eight writes the peer's first row, X's expired rows and X's
   live conversation in three successive clock seconds (stores order by a one-second
   ``created_at``);
3. one agent turn through the compaction wrapper (see arib.checks.openai_agents._compaction), whole
   history or a seeded limit window, seeded mode, encryption inside or outside the wrapper;
4. judged on X's raw rows (each labelled expired, live or unauthenticated) and decrypted view:
   the rows kept before the compact output are one contiguous run of the old rows; what was
   removed before them is only expired rows, and all of the expired run there (the reclaim is
   complete); what was replaced after them holds exactly the live items the compact request
   covered, plus expired rows only (never an unauthenticated row); the view is the kept live
   items then the output. Without a compaction, nothing changes. The peer's raw rows and view
   never change.

On a store private to one instance (``SQLiteSession(":memory:")``) there is no peer and no
fresh instance: the envelope's stored form comes from an item X writes and pops, and every
read goes through X.
"""

from __future__ import annotations

import importlib
import json
import time
from collections.abc import Sequence
from typing import Any

import anyio

from arib.checks.base import CheckSpec, NotApplicable, Param, Selector, TrialContext, describe
from arib.checks.common import canonical, read_items, trials_param
from arib.checks.openai_agents._compaction import (
    MODES,
    OWN_KEY,
    PRELOAD,
    CompactClient,
    Expectation,
    Reads,
    agent_turn,
    compaction_class,
    compose,
    difference,
    expectation,
    history,
    hung,
    is_encrypted,
    is_user,
    offers_suffix,
    pairs_param,
    raised_trial,
    request_problem,
    same,
    turn_items,
    turn_model,
    view,
)
from arib.checks.openai_agents._stores import reader_of
from arib.checks.openai_agents.iso_001 import open_peer
from arib.ground.model import Counts, Trial

ENCRYPT_MODULE = "agents.extensions.memory.encrypt_session"
PEER_PREFIX = "0peer-"
TTL_S = 600
AGE_S = 7200  # how old the expired envelopes are
# Another key: an envelope written with it is one X's key cannot authenticate.
OTHER_KEY = "arib-compaction-some-other-key-public"

Label = tuple[str, str]  # ("expired" | "live" | "unauthenticated", canonical item or envelope)


def encrypted_view(store: Any) -> Any:
    """The lane's store read through an EncryptedSession with the check's key and ttl."""
    if is_encrypted(store):
        return type(store)(store.session_id, store.underlying_session, OWN_KEY, ttl=TTL_S)
    try:
        module = importlib.import_module(ENCRYPT_MODULE)
    except ImportError as exc:
        raise NotApplicable(f"EncryptedSession cannot be imported here ({exc}); the ttl "
                            f"reclaim of compaction is not offered") from exc
    return module.EncryptedSession(store.session_id, store, OWN_KEY, ttl=TTL_S)


class Forger:
    """Writes envelopes as an EncryptedSession with ``enc``'s key did ``AGE_S`` seconds ago."""

    def __init__(self, enc: Any, template: dict[str, Any]) -> None:
        self.enc = enc
        self.template = {k: v for k, v in template.items() if k != "payload"}

    def old(self, item: Any) -> dict[str, Any]:
        """The envelope of ``item`` as written ``AGE_S`` seconds ago (an older Fernet timestamp)."""
        data = json.dumps(item, separators=(",", ":")).encode()
        token = self.enc.cipher.encrypt_at_time(data, int(time.time()) - AGE_S)
        return {**self.template, "payload": token.decode()}


def expected_compaction(stored: Sequence[Any], history_len: int, limit: int | None, mode: str,
                        suffix: bool, single: bool = False) -> Expectation:
    """The documented outcome when expired envelopes stay stored below the live history.

    A store with suffix replacement sees the raw history as incomplete when it holds more
    rows than the snapshot it was asked for (the live window, the turn and one more): it
    compacts a suffix in input mode, or skips in explicit ``previous_response_id`` mode. With
    the whole history sent and a single expired row, the raw history is exactly that
    snapshot: complete. Another store gets EncryptedSession's bounded read, which counts the
    rows it skipped: a whole-history compaction when the whole history was sent, else a skip.
    """
    if not suffix or (single and limit is None):
        return expectation(stored, history_len, limit, mode, False)
    if mode == "previous_response_id":
        return Expectation(False)
    window = 0 if limit is None else history_len - limit
    start = next((i for i in range(window, len(stored)) if is_user(stored[i])), None)
    return Expectation(False) if start is None else Expectation(True, start, "input")


def labels(enc: Any, raw_rows: Sequence[Any]) -> list[Label]:
    """Each raw row as the reclaim rule sees it, with its plaintext where ``enc`` can read it."""
    out: list[Label] = []
    cutoff = int(time.time()) - TTL_S
    for row in raw_rows:
        try:
            token = row["payload"].encode()
            plain = json.loads(enc.cipher.decrypt(token).decode())
            stamp = enc.cipher.extract_timestamp(token)
        except Exception:  # noqa: BLE001 - anything X's key cannot read is kept as is
            out.append(("unauthenticated", canonical(row)))
            continue
        out.append(("expired" if stamp < cutoff else "live", canonical(plain)))
    return out


def reclaim_problem(before: Sequence[Label], after: Sequence[Label], output: Sequence[Any],
                    replaced: Sequence[Any]) -> str | None:
    """Why ``after`` is not ``before`` with a complete expired prefix reclaimed and a suffix
    holding exactly ``replaced`` (plus expired rows) swapped for ``output``; None if it is."""
    out = [("live", canonical(o)) for o in output]
    if len(after) < len(out) or list(after[len(after) - len(out):]) != out:
        return "the raw rows do not end with the compact output"
    kept = list(after[:len(after) - len(out)])
    p = next((i for i in range(len(before) + 1) if list(before[i:i + len(kept)]) == kept), None)
    if p is None:
        return "the rows kept before the output are not one contiguous run of the old rows"
    q = p + len(kept)
    gone = [lab for lab in before[:p] if lab[0] != "expired"]
    if gone:
        return f"the reclaim removed {len(gone)} rows that were not expired ({gone[0][0]})"
    if p < q and before[p][0] == "expired":
        return "the reclaim stopped inside the contiguous run of expired rows"
    tail = before[q:]
    if any(lab[0] == "unauthenticated" for lab in tail):
        return "the replacement removed a row X's key cannot authenticate"
    if [lab[1] for lab in tail if lab[0] == "live"] != [canonical(r) for r in replaced]:
        return "the replaced rows are not exactly the live items the compact request covered"
    return None


async def next_second(ctx: TrialContext) -> None:
    """Wait until the wall clock is in its next second (stores keep a one-second created_at)."""
    ctx.log("wait for the next clock second")
    await anyio.sleep(1.02 - time.time() % 1.0)


async def seed(ctx: TrialContext, enc: Any, peer: Any | None, tag: str, live: list[Any],
               single: bool, later_second: bool) -> list[Label]:
    """Write the raw layout (see the module docstring); the labels of X's rows. ``single``:
    exactly one expired row and no other-key row, so that the whole raw history is one row
    more than the live one, as in a history whose oldest item just expired. ``later_second``:
    the peer's first row, X's expired rows and X's live history are written in three clock
    seconds (stores keep a one-second ``created_at``; in truth they are hours apart). Without
    a peer (a store private to X), the envelope's form comes from an item X writes and pops.
    """
    raw = enc.underlying_session
    if peer is not None:
        await peer.add_items([{"role": "user", "content": f"{tag} peer live 0"}])
        template = (await read_items(peer.underlying_session))[0]
    else:
        ctx.log("X: add_items([probe]); X raw: pop_item() (the envelope's form)")
        await enc.add_items([{"role": "user", "content": f"{tag} probe"}])
        template = await raw.pop_item()
    if later_second:
        await next_second(ctx)
    mine = Forger(enc, template)
    count = 1 if single else ctx.rng.randint(min(12, ctx.params["expired"]),
                                             ctx.params["expired"])
    expired = [{"role": "user", "content": f"{tag} expired {i}"} for i in range(count)]
    layout: list[Label] = []
    # The first run is the longer part, so that it spans several reclaim batches.
    cut = ctx.rng.randint((len(expired) + 1) // 2, len(expired))
    ctx.log(f"X raw: {cut} expired envelopes; peer: one expired")
    await raw.add_items([mine.old(i) for i in expired[:cut]])
    layout += [("expired", canonical(i)) for i in expired[:cut]]
    if peer is not None:
        await peer.underlying_session.add_items(
            [Forger(peer, template).old({"role": "user", "content": f"{tag} peer expired"})])
    if not single and ctx.rng.random() < 0.5:
        stranger = type(enc)(enc.session_id, raw, OTHER_KEY, ttl=TTL_S)
        ctx.log("X raw: one envelope written with another key")
        await stranger.add_items([{"role": "user", "content": f"{tag} other key"}])
        layout.append(("unauthenticated", canonical((await read_items(raw))[-1])))
    ctx.log(f"X raw: {len(expired) - cut} expired envelopes; X: {len(live)} live items; "
            f"peer: one live item")
    await raw.add_items([mine.old(i) for i in expired[cut:]])
    layout += [("expired", canonical(i)) for i in expired[cut:]]
    if later_second:
        await next_second(ctx)
    await enc.add_items(live)
    layout += [("live", canonical(i)) for i in live]
    if peer is not None:
        await peer.add_items([{"role": "user", "content": f"{tag} peer live 1"}])
    return layout


async def run_trial(ctx: TrialContext) -> Trial:
    """One trial: expired, unauthenticated and live rows, one compaction; only expired rows go.

    Long (over 80 lines) on purpose: the trial is one scenario read top to bottom, and its
    concurrent tasks are closures over the trial's state; split up, that state would be
    threaded through every helper.
    """
    compaction_class()
    tag = f"{ctx.seed:016x}"[:10]
    handle = await ctx.open()
    enc = encrypted_view(view(handle.session))
    # The peer's id sorts before X's (as other sessions' ids do in a shared table).
    # A store private to X (SQLiteSession(":memory:")) has no peer and no fresh instance: the
    # turn and the reclaim still run, and every read goes through X.
    peer_id = PEER_PREFIX + ctx.build.session_id
    peer = None if handle.private_store else encrypted_view(
        view((await open_peer(ctx, peer_id)).session))
    mine = history(tag, ctx.rng.randint(2, ctx.params["pairs"]), ctx.rng.random() < 0.3)
    single = ctx.index % 4 == 2
    # With a limit window, the replaced range (and the reclaim's bound) is in the later second.
    later_second = ctx.index % 8 == 5
    try:
        layout = await seed(ctx, enc, peer, tag, mine, single, later_second)
        peer_raw_before = [] if peer is None else await read_items(peer.underlying_session)
        peer_view_before = [] if peer is None else await read_items(peer)
    except NotApplicable:
        raise  # no second instance can open this store: the check abstains
    except Exception as exc:  # noqa: BLE001 - a store that cannot be written shows nothing
        return raised_trial(ctx, "seeding the history", exc)
    limit = None if ctx.index % 2 == 0 else ctx.rng.randrange(0, len(mine))
    # With a single expired row only the resolved mode tells a complete snapshot from not;
    # with the whole history sent, "auto" does too (a complete snapshot chains the response).
    modes = ("auto", "previous_response_id") if single else ("auto", "input") if later_second \
        else MODES
    mode = "auto" if ctx.index % 4 == 0 else ctx.rng.choice(modes)
    outside = ctx.rng.random() < 0.5
    client = CompactClient(tag)
    outer, _ = compose(enc, client, mode, outside)
    text = f"{tag} new question"
    ctx.log(f"Runner.run(turn) on {'encrypted(compaction(store))' if outside else 'compaction'}"
            f"(encrypted(store)), mode={mode!r}, SessionSettings(limit={limit})")
    raised = await agent_turn(outer, turn_model(tag), text, limit)
    stored = mine + turn_items(tag, text)
    layout += [("live", canonical(i)) for i in turn_items(tag, text)]
    exp = expected_compaction(stored, len(mine), limit, mode, offers_suffix(enc), single)
    ctx.log(f"documented outcome: {exp.describe()}; the turn "
            f"{'raised ' + describe(raised) if raised else 'returned'}")
    reads = Reads()
    hung(reads, raised)
    if raised is not None and not reads.kinds:
        reads.note("turn_raised", f"the turn raised {describe(raised)}")
    if exp.applies and len(client.requests) != 1:
        reads.note("not_compacted", f"{len(client.requests)} compact requests where the "
                                    f"documented outcome is to {exp.describe()}")
    elif not exp.applies and client.requests:
        reads.note("wrong_request", "a compact request where the documented outcome is to skip")
    elif exp.applies:
        wrong = request_problem(client.requests[0], exp, stored, f"resp_{tag}_1")
        if wrong:
            reads.note("wrong_request", wrong)
    output = client.outputs[0] if exp.applies and client.outputs and raised is None else []
    start = exp.start
    try:
        fresh = encrypted_view(view(await reader_of(ctx, handle)))
        ctx.log("fresh raw rows; fresh.get_items(); peer raw rows; peer.get_items()")
        after = labels(fresh, await read_items(fresh.underlying_session))
        seen = await read_items(fresh)
        peer_raw_after = [] if peer is None else await read_items(peer.underlying_session)
        peer_view_after = [] if peer is None else await read_items(peer)
    except NotApplicable:
        raise  # no second instance can open this store: the check abstains
    except Exception as exc:  # noqa: BLE001 - a store that cannot be read shows nothing
        return raised_trial(ctx, "reading the store after the turn", exc)
    if output:
        wrong = reclaim_problem(layout, after, output, stored[start:])
        expected_view = stored[:start] + output
    else:
        wrong = None if after == layout else "the raw rows changed without a compaction"
        expected_view = stored
    if wrong:
        reads.note("wrong_reclaim", wrong)
    if not same(seen, expected_view):
        reads.note("wrong_history", f"fresh.get_items(): {difference(expected_view, seen)}")
    if not same(peer_raw_after, peer_raw_before) or not same(peer_view_after,
                                                             peer_view_before):
        reads.note("peer_touched", f"the peer's raw rows went from {len(peer_raw_before)} to "
                                   f"{len(peer_raw_after)}, its view from "
                                   f"{len(peer_view_before)} to {len(peer_view_after)}")
    lost = sum(1 for lab in layout if lab[0] != "expired" and lab not in after
               and lab[1] not in {canonical(i) for i in stored[start:]})
    counts = Counts(lost=lost + max(len(peer_raw_before) - len(peer_raw_after), 0),
                    raised=1 if raised else 0)
    reclaimed = sum(1 for lab in layout if lab[0] == "expired") - sum(
        1 for lab in after if lab[0] == "expired")
    return reads.trial(ctx, counts, f"reclaimed_{'some' if reclaimed else 'none'}" if output
                       else "unchanged")


CHECK = CheckSpec(
    id="ARIB-COMPACT-004",
    invariant="an agent turn's compaction through EncryptedSession ends, and removes, besides "
    "the range it replaced, only expired envelopes, all of the contiguous oldest run of them "
    "and nothing after a row it keeps: never a live item, an envelope its key cannot "
    "authenticate, or a peer session's row",
    fault="a history whose oldest envelopes expired two hours ago (written with an older "
    "Fernet timestamp), sometimes cut by an envelope of another key, interleaved with a peer "
    "session's expired and live rows; one Runner turn through OpenAIResponsesCompactionSession "
    "and EncryptedSession (inside or outside it), whole history or a seeded limit window",
    params=(
        pairs_param(4),
        Param("expired", 24, 2, 500, "at most this many expired envelopes"),
        trials_param(8),
    ),
    run_trial=run_trial,
    mutants=("reference_compaction_prunes_live_rows",),
    generated=(
        Selector("sqlite-file",
                 "SQLiteSession._get_compaction_snapshot.<locals>.replace_suffix.<locals>"
                 ".replace_sync", "widen_session_filter"),
    ),
    timeout_s=60.0,
    hang_invariant=True,
    preload=PRELOAD,
)
