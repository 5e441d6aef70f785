"""What the LangGraph fault checks share: a plan of checkpoint and write operations whose
every value names its writer and step, running one operation either half of the interface,
and judging a read-back against the operations that were acknowledged.

A plan is a list of ``Op``: a ``put`` of a checkpoint (its parent the writer's previous one) or
a ``writes`` of a task's pending writes to the checkpoint the writer put just before. The
judge reads every thread of the plan through ``list`` and demands: every acknowledged
checkpoint and write is there with its values; nothing is there that the plan did not put in
that thread, on that checkpoint (foreign); an operation that was not acknowledged may be there
or not, but never half of it (torn).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from arib.checks.langgraph._saver import call, config, listing, make_checkpoint

# what one checkpoint looks like when read back: its channel values and its writes
Seen = dict[str, dict[str, tuple[dict[str, Any], set[tuple[str, str, Any]]]]]


@dataclass(frozen=True)
class Op:
    """One operation of a plan: a checkpoint put, or a task's writes to a checkpoint."""

    kind: str  # "put" | "writes"
    thread: str
    checkpoint_id: str
    parent: str | None = None
    checkpoint: Mapping[str, Any] = field(default_factory=dict)
    metadata: Mapping[str, Any] = field(default_factory=dict)
    versions: Mapping[str, Any] = field(default_factory=dict)
    task_id: str = ""
    writes: tuple[tuple[str, Any], ...] = ()

    @property
    def label(self) -> str:
        """How the op is named in logs and samples."""
        if self.kind == "put":
            return f"put {self.thread}/{self.checkpoint_id} (parent {self.parent})"
        return (f"put_writes {self.thread}/{self.checkpoint_id} task {self.task_id} "
                f"x{len(self.writes)}")

    def triples(self) -> set[tuple[str, str, Any]]:
        """The writes as a reader gets them back: (task id, channel, value)."""
        return {(self.task_id, ch, value) for ch, value in self.writes}

    async def run(self, saver: Any) -> None:
        """Run the op through the half of the interface the saver's lane serves."""
        if self.kind == "put":
            await call(saver, "put", config(self.thread, "", self.parent), dict(self.checkpoint),
                       dict(self.metadata), dict(self.versions))
        else:
            await call(saver, "put_writes", config(self.thread, "", self.checkpoint_id),
                       list(self.writes), self.task_id)

    def run_sync(self, saver: Any) -> None:
        """Run the op through the sync half (from a worker thread)."""
        if self.kind == "put":
            saver.put(config(self.thread, "", self.parent), dict(self.checkpoint),
                      dict(self.metadata), dict(self.versions))
        else:
            saver.put_writes(config(self.thread, "", self.checkpoint_id), list(self.writes),
                             self.task_id)


def writer_plan(saver: Any, seed: int, writer: int, thread: str, steps: int,
                width: int = 2, tag: str = "", *, history: bool = True,
                listed: bool = False) -> list[Op]:
    """``steps`` times: put a checkpoint (child of the writer's previous), then ``width``
    writes of one task to it; every id and value names the seed, writer and step.
    ``history``: as in ``make_checkpoint`` (False for a check that judges a saver keeping
    only each thread's latest checkpoint with ``judge(..., latest_only=True)``). ``listed``:
    each checkpoint also holds a channel ``log``, the list of the values so far (as a
    messages channel does): a value that is no primitive, which the PostgreSQL savers keep in
    their blobs table, not inline."""
    ops: list[Op] = []
    previous: dict[str, Any] | None = None
    parent: str | None = None
    log: list[str] = []
    for step in range(steps):
        value = f"{tag or f'{seed:x}'}-w{writer}-s{step}"
        values: dict[str, Any] = {"value": value, f"w{writer}": step}
        if listed:
            log = [*log, value]
            values["log"] = log
        cp, versions = make_checkpoint(saver, seed, step, values, previous, writer=writer + 1,
                                       history=history)
        ops.append(Op("put", thread, cp["id"], parent, cp,
                      {"source": "loop", "step": step, "writer": writer}, versions))
        ops.append(Op("writes", thread, cp["id"], task_id=f"task-{value}",
                      writes=tuple((f"ch{i}", f"{value}-{i}") for i in range(width))))
        previous, parent = cp, cp["id"]
    return ops


def plan_length(steps: int) -> int:
    """The number of ops in a ``writer_plan`` of ``steps`` steps (a put and its writes each)."""
    return 2 * steps


async def read_threads(saver: Any, threads: Iterable[str]) -> Seen:
    """Every checkpoint of each thread (namespace ''), with its values and writes."""
    seen: Seen = {}
    for thread in sorted(set(threads)):
        got: dict[str, tuple[dict[str, Any], set[tuple[str, str, Any]]]] = {}
        for item in await listing(saver, config(thread)):
            got[item.checkpoint["id"]] = (
                dict(item.checkpoint.get("channel_values", {})),
                {tuple(w) for w in (item.pending_writes or [])})  # type: ignore[misc]
        seen[thread] = got
    return seen


@dataclass
class ReadBack:
    """What a read-back shows against the acknowledged ops."""

    lost: int = 0
    foreign: int = 0
    torn: int = 0
    notes: list[str] = field(default_factory=list)

    @property
    def bad(self) -> bool:
        """Whether anything acknowledged is missing or anything foreign or torn is there."""
        return bool(self.lost or self.foreign or self.torn)


def latest_of(plan: Sequence[Op], acked: Iterable[int]) -> tuple[list[Op], set[int]]:
    """What a saver keeping only each thread's latest checkpoint must still show of ``plan``:
    per thread the acknowledged put with the greatest checkpoint id (the latest, the ids
    sorting by step) and the writes put on it, as (ops, acknowledged indexes into them)."""
    done = set(acked)
    latest: dict[str, str] = {}
    for n, op in enumerate(plan):
        if op.kind == "put" and n in done and op.checkpoint_id > latest.get(op.thread, ""):
            latest[op.thread] = op.checkpoint_id
    kept = [(n, op) for n, op in enumerate(plan) if latest.get(op.thread) == op.checkpoint_id]
    return [op for _, op in kept], {k for k, (n, _) in enumerate(kept) if n in done}


def judge(plan: Sequence[Op], acked: Iterable[int], seen: Seen, *,
          latest_only: bool = False) -> ReadBack:
    """Acknowledged ops (indexes into ``plan``) must be read back whole; nothing the plan did
    not put there may be; an unacknowledged op may be absent, never half there.
    ``latest_only``: the saver keeps each thread's latest checkpoint only (``latest_of``)."""
    if latest_only:
        plan, acked = latest_of(plan, acked)
    done = set(acked)
    puts = {(op.thread, op.checkpoint_id): op for op in plan if op.kind == "put"}
    planned_writes: dict[tuple[str, str], set[tuple[str, str, Any]]] = {}
    for op in plan:
        if op.kind == "writes":
            planned_writes.setdefault((op.thread, op.checkpoint_id), set()).update(op.triples())
    out = ReadBack()
    for n, op in enumerate(plan):
        got = seen.get(op.thread, {}).get(op.checkpoint_id)
        if op.kind == "put":
            if got is None:
                if n in done:
                    out.lost += 1
                    out.notes.append(f"acknowledged {op.label} is missing")
                continue
            if got[0] != dict(op.checkpoint["channel_values"]):
                out.foreign += 1
                out.notes.append(f"{op.label} reads back other values: {got[0]!r:.120}")
            continue
        have = op.triples() & (got[1] if got else set())
        if n in done and len(have) < len(op.writes):
            out.lost += len(op.writes) - len(have)
            out.notes.append(f"acknowledged {op.label}: {len(op.writes) - len(have)} of its "
                             f"writes missing")
        elif n not in done and 0 < len(have) < len(op.writes):
            out.torn += 1
            out.notes.append(f"unacknowledged {op.label} is half there: {len(have)}/"
                             f"{len(op.writes)} writes")
    for thread, checkpoints in seen.items():
        for cp_id, (_, writes) in checkpoints.items():
            if (thread, cp_id) not in puts:
                out.foreign += 1
                out.notes.append(f"{thread}/{cp_id} was never put in that thread")
            extra = writes - planned_writes.get((thread, cp_id), set())
            if extra:
                out.foreign += len(extra)
                out.notes.append(f"{thread}/{cp_id} has writes never put on it: "
                                 f"{sorted(map(str, extra))[:2]}")
    return out
