"""Fault steps on one session: cancellation, close, redelivery and a killed writer process.

Each step injects the fault one check injects and records outcome classes (see
``arib.checks.parity.faultkit``). Its docstring says which check, what is compared and why the
record is free of legitimate nondeterminism. Items are fixed per step, so equal behaviour gives
equal records on every lane.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from functools import partial
from typing import Any, ClassVar

from arib.checks import _forked
from arib.checks.base import race, race_threads
from arib.checks.openai_agents.parity.steps import StepSpec, WorkflowContext
from arib.checks.parity.faultkit import (
    StoreAccess,
    batch_state,
    bounded,
    interrupt,
    outcome,
    read,
    spread,
)

FORK_TIMEOUT_S = 20.0


def _store(ctx: WorkflowContext) -> StoreAccess:
    if not isinstance(ctx.store, StoreAccess):
        raise RuntimeError("a fault step needs the runner's StoreAccess (ctx.store)")
    return ctx.store


def _items(tag: str, size: int) -> list[dict[str, Any]]:
    return [
        {"role": "assistant" if i % 2 else "user", "content": f"{tag} {i}"} for i in range(size)
    ]


def _final(before: Any, batch: list[Any], after: Any, items: list[Any] | None, how: str) -> str:
    """The state after the retry: ``in_order`` (before, the batch once, after) or its class."""
    if items is None:
        return how
    if items == [before, *batch, after]:
        return "in_order"
    return f"batch_{batch_state(batch, items)}"


@dataclass(frozen=True)
class CancelledWrite(StepSpec):
    """ARIB-CANCEL-001's fault: ``add_items(batch)`` cancelled at its k-th suspension.

    An uncancelled call on a warm session counts its suspensions n; then for up to ``points``
    k spread over 1..n (always the first and the last), each on a fresh store: a warm session
    (one item written and read), the batch written and cancelled at suspension k, the caller
    reads, retries when it saw the batch absent, appends one more item and reads again.

    Compared: the *set* of classes ``<call>|<what the caller saw>|<final state>`` over the
    points, e.g. ``cancelled|absent|in_order`` (rolled back) or ``cancelled|present|in_order``
    (kept). n itself is not compared: how often a backend suspends is its own business, and
    the set is equal whenever two backends do the same at their first and last suspension
    and everywhere in between. Two lanes that keep and roll back a cancelled write differ, even
    though each keeps ARIB-CANCEL-001.
    """

    size: int = 3
    points: int = 5
    kind: ClassVar[str] = "cancelled_write"

    async def run(self, ctx: WorkflowContext) -> None:
        """Cancel add_items at spread suspensions and record the outcome classes."""
        store = _store(ctx)
        before = {"role": "user", "content": "cancel: before"}
        batch = _items("cancel: batch", self.size)
        after = {"role": "user", "content": "cancel: after"}

        async def warm() -> Any:
            session = (await store.new_store()).session
            await session.add_items([before])
            await session.get_items()
            return session

        probe_session = await warm()
        probe = await interrupt(lambda: probe_session.add_items(batch), 0)
        ctx.record("uncancelled", [{"call": probe.outcome}])
        classes: set[str] = set()
        for k in spread(probe.suspensions, self.points):
            session = await warm()
            call = await interrupt(partial(session.add_items, batch), k)
            seen, how = await read(session)
            view = batch_state(batch, seen) if seen is not None else how
            if view == "absent":
                await bounded(partial(session.add_items, batch))
            await bounded(partial(session.add_items, [after]))
            final = _final(before, batch, after, *await read(session))
            classes.add(f"{call.outcome if call.fired else 'returned'}|{view}|{final}")
        ctx.record("outcome_classes", sorted(classes))


@dataclass(frozen=True)
class CloseRacesWrite(StepSpec):
    """A close that races a write in flight: ``close()`` at the k-th suspension of add_items.

    For up to ``points`` k spread over the write's suspensions, each on a fresh store, the
    lane's own ``close()`` is called (an async close as a task of its own, racing) while the
    write waits there; then a fresh instance reads the store.

    Compared: the set of classes ``settled`` (the write returned and its batch is wholly
    there, or it raised and the batch is wholly absent), ``silent_drop`` (returned, absent),
    ``raise_but_committed``, ``partial``, ``duplicated``, ``hung``; and whether close() itself
    returned or raised. Which of the two settled outcomes a lane reaches depends on whether its
    worker thread or the close gets the connection first, a legitimate race, so they are one
    class; a write lost or half-written under a close is a class of its own. Abstains where
    there is no close() or the store cannot be opened by a second instance.
    """

    size: int = 3
    points: int = 3
    kind: ClassVar[str] = "close_races_write"

    async def run(self, ctx: WorkflowContext) -> None:
        """Close the session at spread suspensions of a write and record the classes."""
        store = _store(ctx)
        store.closer(ctx.session)  # abstains up front when there is no close()
        batch = _items("close race: batch", self.size)
        handle = await store.new_store()
        await store.reopen(handle)  # abstains up front for a store in process memory
        await handle.session.get_items()
        probe = await interrupt(lambda: handle.session.add_items(batch), 0)
        classes: set[str] = set()
        for k in spread(probe.suspensions, self.points):
            handle = await store.new_store()
            session = handle.session
            await session.get_items()
            closes: list[str] = []

            def close(s: Any = session, out: list[str] = closes) -> Any:
                try:
                    result = store.closer(s)()
                except Exception as exc:  # noqa: BLE001 - close's own failure is evidence
                    out.append(outcome(exc))
                    return None
                out.append("returned")
                return result

            call = await interrupt(partial(session.add_items, batch), k, close)
            seen, how = await read((await store.reopen(handle)).session)
            state = batch_state(batch, seen) if seen is not None else f"fresh_read_{how}"
            returned = call.outcome == "returned"
            if state == "present" and returned or state == "absent" and not returned:
                settled = "settled"
            elif state == "absent":
                settled = "silent_drop"
            elif state == "present":
                settled = "raise_but_committed"
            else:
                settled = state
            classes.add(f"{settled}|close_{closes[0] if closes else 'not_reached'}")
        ctx.record("outcome_classes", sorted(classes))


@dataclass(frozen=True)
class WritesAfterClose(StepSpec):
    """ARIB-CONC-003's fault: every kind of write on a closed session.

    Two items are written, the session is closed, then ``add_items([item])``,
    ``add_items([])``, ``pop_item()`` and ``clear_session()`` are called on it, each judged by a
    fresh instance's read before and after. Compared, per write and in order: its outcome
    class and whether the store changed (``loud_refusal`` = raised, unchanged). No race: one
    task, so the record is deterministic. Abstains without close(), with a close documented as
    non-terminal, or with a store a second instance cannot open.
    """

    kind: ClassVar[str] = "writes_after_close"

    async def run(self, ctx: WorkflowContext) -> None:
        """Close the session, try each kind of write on it and record each one's mode."""
        store = _store(ctx)
        store.terminal_closer(ctx.session)
        session = ctx.session
        await session.add_items(_items("after close: kept", 2))
        fresh = (await store.reopen()).session
        ctx.record("close", [{"close": await store.close(session)}])
        writes = (
            ("add", lambda: session.add_items([{"role": "user", "content": "after close"}])),
            ("add([])", lambda: session.add_items([])),
            ("pop", session.pop_item),
            ("clear", session.clear_session),
        )
        rows = []
        for name, call in writes:
            before, _ = await read(fresh)
            _, how = await bounded(call)
            now, _ = await read(fresh)
            changed = now != before
            mode = {
                (True, False): "loud_refusal",
                (False, False): "silent_drop",
                (False, True): "silent_commit",
                (True, True): "raise_but_committed",
            }[(how != "returned", changed)]
            rows.append({"write": name, "call": how, "mode": mode})
        ctx.record("writes", rows)
        ctx.record("kept_before_close", await read(fresh))


@dataclass(frozen=True)
class ConcurrentClose(StepSpec):
    """ARIB-CONC-002's fault: ``closers`` close() calls released together, then reads.

    Async closes race as tasks, sync ones in threads released by one barrier. Compared: the
    sorted multiset of the closes' outcome classes, and of ``probes`` reads released together
    afterwards (each must be refused). Sorted, because which close comes first is the race.
    """

    closers: int = 4
    probes: int = 3
    kind: ClassVar[str] = "concurrent_close"

    async def run(self, ctx: WorkflowContext) -> None:
        """Release the closes together, then the reads, and record their sorted outcomes."""
        store = _store(ctx)
        store.terminal_closer(ctx.session)  # abstains without a terminal close()
        session = ctx.session
        await session.add_items(_items("closers: item", 1))
        await session.get_items()
        close = store.closer(session)
        if store.target.claims.close_is_async:
            raced = await race([close for _ in range(self.closers)])
        else:
            raced = await race_threads([close for _ in range(self.closers)])
        probes = await race([session.get_items for _ in range(self.probes)])
        ctx.record("closes", sorted(outcome(e) for e in raced))
        ctx.record("reads_after", sorted(outcome(e) for e in probes))


@dataclass(frozen=True)
class Redelivery(StepSpec):
    """ARIB-REPLAY-001's fault: the same batch (items with ids) delivered twice.

    Compared: the full reads after the first and the second delivery. No race: deterministic.
    A store that keeps items with ids once and one that stores the redelivery again differ.
    """

    kind: ClassVar[str] = "redelivery"

    async def run(self, ctx: WorkflowContext) -> None:
        """Add the same batch twice, reading after each delivery."""
        batch = [
            {
                "id": "msg_redeliver_1",
                "type": "message",
                "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": "once", "annotations": []}],
            },
            {
                "id": "fc_redeliver_1",
                "type": "function_call",
                "call_id": "call_redeliver_1",
                "name": "add",
                "arguments": '{"a":1,"b":2}',
                "status": "completed",
            },
        ]
        await ctx.session.add_items(list(batch))
        await ctx.read()
        await ctx.session.add_items(list(batch))
        await ctx.read()


def forked_writer(
    target: Any, build: Any, batches: list[list[dict[str, Any]]], *, wait_go: bool = False
) -> _forked.Body:
    """The body of a forked writer process: open an instance on the store of ``build``,
    (wait for the parent's go when asked,) append each batch and acknowledge each (``ack``
    or ``error`` with its outcome class), report ``done`` with the failures, then stay until
    killed or until the parent is gone."""

    async def body(channel: _forked.Channel) -> None:
        try:
            handle = await target.build(build)
            await handle.session.get_items()
        except Exception as exc:  # noqa: BLE001 - reported to the parent as evidence
            channel.send({"open": outcome(exc)})
            return
        channel.send({"ready": True})
        if wait_go and not await channel.wait_go(FORK_TIMEOUT_S):
            return
        failed = []
        for n, batch in enumerate(batches):
            _, how = await bounded(partial(handle.session.add_items, list(batch)))
            if how == "returned":
                channel.send({"ack": n})
            else:
                failed.append(how)
                channel.send({"error": n, "what": how})
        channel.send({"done": failed})
        await channel.receive(3600)

    return body


@dataclass(frozen=True)
class WriterKilled(StepSpec):
    """ARIB-DUR-001's fault: a writer process killed (SIGKILL) after ``kill_after`` acks.

    A forked process opens its own instance on a fresh store (nothing of it open here) and
    appends ``appends`` batches of ``size`` items, acknowledging each; after ``kill_after``
    acknowledgements it is killed mid-stream and a fresh instance reads the store. Compared:
    whether every acknowledged batch is there exactly once and in order, and the class of the
    batch that may have been in flight: ``whole_or_absent`` (which of the two is a race
    between the kill and the commit) or ``torn``; and the classes of any errors. Abstains for a
    store in process memory (no store outlives its process).
    """

    appends: int = 8
    size: int = 2
    kill_after: int = 3
    kind: ClassVar[str] = "writer_killed"

    async def run(self, ctx: WorkflowContext) -> None:
        """Kill a forked writer after its acks and record what a fresh read kept."""
        store = _store(ctx)
        await store.reopen()  # abstains for a store in process memory
        batches = [_items(f"killed writer: {n}", self.size) for n in range(self.appends)]
        build = store.fork_context()
        worker = _forked.fork_worker("parity-writer", forked_writer(store.target, build, batches))
        acks: set[int] = set()
        problems: list[str] = []
        try:
            deadline = time.monotonic() + FORK_TIMEOUT_S
            while len(acks) < self.kill_after:
                message = await _forked.next_message(worker, deadline)
                if message is None:
                    problems.append("writer_stopped")
                    break
                if "ack" in message:
                    acks.add(int(message["ack"]))
                elif "open" in message or "error" in message:
                    problems.append(str(message.get("open") or message.get("what")))
                    break
            _forked.kill(worker)
            acks.update(int(m["ack"]) for m in _forked.drain_after_exit(worker) if "ack" in m)
        finally:
            _forked.reap([worker])
        seen, how = await read((await store.open_built(build)).session)
        acked = sorted(acks)
        expected = [item for n in acked for item in batches[n]]
        flight = batches[max(acked) + 1] if acked and max(acked) + 1 < len(batches) else []
        if seen is None:
            ctx.record("after_kill", [{"read": how, "problems": problems}])
            return
        rest = seen[len(expected):] if seen[: len(expected)] == expected else None
        ctx.record(
            "after_kill",
            [
                {
                    "acked_kept_in_order": rest is not None,
                    "in_flight": (
                        "whole_or_absent"
                        if rest is not None and rest in ([], flight)
                        else "torn_or_foreign"
                    ),
                    "acked_at_least": len(acked) >= self.kill_after,
                    "problems": problems,
                }
            ],
        )
