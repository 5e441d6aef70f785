"""Whether one read showed a thread as it was at one instant (ARIB-LGRUN-001).

The read began after the thread's checkpoints and their writes were all acknowledged (the
``pre`` ops), and while it was held, other calls ran on the thread: late writes to its newest
checkpoint and to its oldest (``late``), then ``delete_thread`` (``delete``). Every call is
stamped (begin, end) on one counter, the read too. What the read shows says, per call, whether
it had happened: a checkpoint shown says the delete had not, a checkpoint missing that it had;
a late writes batch on a shown checkpoint says whether it had happened; a batch shown in part,
or a call both seen and not seen by one read, is ``torn``. The read is a snapshot when one
instant within it explains every call: after the begin of each call it shows, before the end
of each call it does not show. Anything shown that no call put is ``foreign``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from arib.checks.langgraph._faults import Op

Stamp = tuple[int, int]


@dataclass
class Sight:
    """What one read says of the calls: per call, seen (True) or not (False), and problems."""

    seen: dict[str, set[bool]] = field(default_factory=dict)
    torn: list[str] = field(default_factory=list)
    lost: list[str] = field(default_factory=list)
    foreign: list[str] = field(default_factory=list)

    def note(self, call: str, happened: bool) -> None:
        """Record that the read shows ``call`` as happened or not."""
        self.seen.setdefault(call, set()).add(happened)


def _batch(sight: Sight, name: str, op: Op, writes: set[tuple[str, str, Any]],
           call: str | None, happened_if_present: bool) -> None:
    """A writes batch on a shown checkpoint: wholly there, absent, or torn; ``call``: the
    call its presence speaks of (None: nothing could remove it, so absent is lost)."""
    have = len(op.triples() & writes)
    if 0 < have < len(op.writes):
        sight.torn.append(f"{name}: {have} of its {len(op.writes)} writes shown")
    elif call is None:
        if not have:
            sight.lost.append(f"{name} acknowledged before the read is not shown")
    else:
        sight.note(call, happened_if_present if have else not happened_if_present)


def look(shown: Mapping[str, tuple[dict[str, Any], set[tuple[str, str, Any]]]],
         pre: Sequence[Op], late: Mapping[str, Op], delete: bool, expect: Sequence[str]) -> Sight:
    """What a read's checkpoints ``shown`` (id -> (values, writes)) say of the calls.
    ``expect``: the ids of ``pre``'s checkpoints the read would show had nothing been deleted
    (all of them for a listing, the newest for a get; a saver keeping the latest only: it)."""
    sight = Sight()
    puts = {op.checkpoint_id: op for op in pre if op.kind == "put"}
    known: dict[str, set[tuple[str, str, Any]]] = {}
    for op in [*pre, *late.values()]:
        if op.kind == "writes":
            known.setdefault(op.checkpoint_id, set()).update(op.triples())
    gone = "delete" if delete else None
    for cp_id in expect:
        if delete:
            sight.note("delete", cp_id not in shown)
        elif cp_id not in shown:
            sight.lost.append(f"{cp_id} acknowledged before the read is not shown")
    for cp_id, (values, writes) in shown.items():
        put = puts.get(cp_id)
        if put is None:
            sight.foreign.append(f"{cp_id} was never put on this thread")
            continue
        if values != dict(put.checkpoint["channel_values"]):
            sight.torn.append(f"{cp_id} shows other values: {values!r:.80}")
        for op in pre:
            if op.kind == "writes" and op.checkpoint_id == cp_id:
                _batch(sight, f"{cp_id}'s writes of {op.task_id}", op, writes, gone, False)
        for call, op in late.items():
            if op.checkpoint_id == cp_id:
                _batch(sight, f"late {call} on {cp_id}", op, writes, call, True)
        extra = writes - known.get(cp_id, set())
        if extra:
            sight.foreign.append(f"{cp_id} shows writes never put on it: "
                                 f"{sorted(map(str, extra))[:2]}")
    return sight


def verdict(sight: Sight, stamps: Mapping[str, Stamp], read: Stamp) -> tuple[str, str]:
    """(mode, why): ``snapshot`` when one instant within the read explains every call it
    shows or hides, else ``torn``, ``lost``, ``foreign`` or ``not_a_snapshot``."""
    if sight.torn:
        return "torn", sight.torn[0]
    if sight.lost:
        return "lost", sight.lost[0]
    both = sorted(call for call, seen in sight.seen.items() if len(seen) > 1)
    if both:
        return "torn", f"the read shows {both[0]} both as done and as not done"
    if sight.foreign:
        return "foreign", sight.foreign[0]
    shown = [call for call, seen in sight.seen.items() if seen == {True}]
    hidden = [call for call, seen in sight.seen.items() if seen == {False}]
    after = max([read[0], *(stamps[c][0] for c in shown if c in stamps)])
    before = min([read[1], *(stamps[c][1] for c in hidden if c in stamps)])
    if after < before:
        return "snapshot", ""
    late_shown = max((c for c in shown if c in stamps), key=lambda c: stamps[c][0], default="")
    early_hidden = min((c for c in hidden if c in stamps), key=lambda c: stamps[c][1],
                       default="")
    return "not_a_snapshot", (f"it shows {late_shown or 'nothing late'} but not "
                              f"{early_hidden or 'the read itself'}, which had ended before "
                              f"{late_shown or 'it'} began")
