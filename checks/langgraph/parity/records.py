"""What a graph run's reads are made of: LangGraph objects as plain JSON, and the written rules
that make two equal histories give equal digests.

``plain`` turns what a graph and its checkpointer return (messages, interrupts, state
snapshots, tasks, checkpoint tuples, exceptions) into JSON values, keeping every field the
gate compares: values, ``next``, metadata, parent links, pending writes, tasks and interrupts.

``normalize`` applies ``GRAPH_RULES``: LangGraph itself generates checkpoint ids (time-based
UUIDs), task and interrupt ids (hashes of them), timestamps and, in ``InMemorySaver`` and the
SQLite savers, channel versions with a random fraction. None can be equal between two runs, so
each is replaced by a placeholder that keeps its place: ids by ``<id:N>`` numbered in order of
first appearance in the run's reads (so a parent link still names the same checkpoint as its
child's id), timestamps by ``<timestamp>``, versions by their integer part. Pending writes are
grouped by task and the groups ordered by their content: the savers list them by task id,
which is a hash of a run-specific checkpoint id. Within a task, its writes to ordinary
channels are ordered by channel name in the places they hold, a stable sort that keeps the
order of the writes to one channel (their order across channels follows a set's iteration in
LangGraph, so PYTHONHASHSEED); its writes to the special channels of ``WRITES_IDX_MAP`` (one
write each at most per task: a put replaces it) keep their place, except where the installed
release documents no order of pending writes (no ``writes_sort_key``, before
langgraph-checkpoint 4.3): there they come first, by channel name, since InMemorySaver of such
a release returns them as put, and our reference by index.
"""

from __future__ import annotations

import dataclasses
import functools
import re
from collections.abc import Mapping
from typing import Any

from arib.checks.parity.normalize import NormalizationRule
from arib.checks.parity.records import canonical_json

UUID = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
HEX_ID = r"(?<![0-9a-f])[0-9a-f]{32}(?![0-9a-f])"
ID_PATTERN = re.compile(f"{UUID}|{HEX_ID}")
TIMESTAMP_KEYS = frozenset({"ts", "created_at"})
VERSION_KEYS = frozenset({"channel_versions", "versions_seen"})
# Metadata LangGraph copies from the run's config: the same for every lane only by accident.
RUN_KEYS = frozenset({"run_id", "thread_ts", "langgraph_request_id"})

GRAPH_RULES: tuple[NormalizationRule, ...] = (
    NormalizationRule(
        id="graph-ids",
        field="<any string>",
        pattern=ID_PATTERN.pattern,
        reason="checkpoint ids are time-based UUIDs made by LangGraph, task and interrupt ids "
        "hashes of them: replaced by <id:N>, numbered by first appearance in the run's reads, "
        "so parent links and namespaces still name the same checkpoint and task",
    ),
    NormalizationRule(
        id="graph-timestamps",
        field="ts, created_at",
        reason="the wall-clock time a checkpoint was made: replaced by <timestamp>",
    ),
    NormalizationRule(
        id="graph-versions",
        field="channel_versions, versions_seen",
        pattern=r"\d+\.\d+",
        reason="InMemorySaver and the SQLite savers append a random fraction to each channel "
        "version: each version is replaced by its integer part (the counter)",
    ),
    NormalizationRule(
        id="graph-run-metadata",
        field="metadata: " + ", ".join(sorted(RUN_KEYS)),
        reason="run-specific values LangGraph copies from the run's config into checkpoint "
        "metadata: replaced by <run>",
    ),
    NormalizationRule(
        id="graph-pending-writes-order",
        field="pending_writes",
        reason="savers list pending writes ordered by task id, a hash of a run-specific "
        "checkpoint id: writes are grouped by task and the groups ordered by their content; "
        "within a task, writes to ordinary channels are ordered by channel name in their "
        "places, each channel's own order kept (LangGraph applies a task's writes channel by "
        "channel; across channels their order follows a set's iteration, so PYTHONHASHSEED); "
        "where the release documents no order of pending writes (no writes_sort_key), a task's "
        "writes to special channels (WRITES_IDX_MAP: one each at most) come first, by channel "
        "name",
    ),
)


def rules_table() -> list[dict[str, str]]:
    """The graph rules as the report's ``normalization_rules``."""
    return [rule.to_json() for rule in GRAPH_RULES]


# ---------------------------------------------------------------------------------------------
# Plain JSON of LangGraph objects.


def _message(message: Any) -> dict[str, Any]:
    data: dict[str, Any] = {"type": message.type, "content": plain(message.content),
                            "id": message.id, "name": message.name}
    for attr in ("tool_calls", "tool_call_id", "status"):
        if hasattr(message, attr):
            data[attr] = plain(getattr(message, attr))
    return data


def plain(value: Any) -> Any:
    """``value`` as JSON: LangGraph and langchain-core objects by their compared fields."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, bytes):
        return {"bytes": value.hex()}
    if isinstance(value, Mapping):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, BaseException):
        return {"error": type(value).__name__, "message": str(value)}
    kind = type(value).__name__
    if hasattr(value, "type") and hasattr(value, "content") and hasattr(value, "id"):
        return _message(value)
    if kind == "Interrupt":
        return {"interrupt": plain(value.value), "id": plain(getattr(value, "id", None))}
    if kind == "Send":
        return {"send": value.node, "arg": plain(value.arg)}
    if kind == "CheckpointTuple":
        return {
            "config": plain(value.config),
            "checkpoint": plain(value.checkpoint),
            "metadata": plain(value.metadata),
            "parent_config": plain(value.parent_config),
            "pending_writes": [plain(list(w)) for w in value.pending_writes or ()],
        }
    if hasattr(value, "_asdict"):  # StateSnapshot, PregelTask and other named tuples
        return {"_type": kind, **{k: plain(v) for k, v in value._asdict().items()}}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {"_type": kind, **{f.name: plain(getattr(value, f.name))
                                  for f in dataclasses.fields(value)}}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, (set, frozenset)):
        return sorted((plain(v) for v in value), key=canonical_json)
    return {"_type": kind, "repr": re.sub(r" at 0x[0-9a-f]+", "", repr(value))[:500]}


# ---------------------------------------------------------------------------------------------
# Normalization.


def _masked(value: Any) -> str:
    """The canonical JSON of ``value`` with every id masked (an order key blind to ids)."""
    return ID_PATTERN.sub("<id>", canonical_json(value))


@functools.cache
def order_documented() -> bool:
    """Whether the installed release documents the order of a checkpoint's pending writes
    (``writes_sort_key``, langgraph-checkpoint 4.3 on)."""
    import langgraph.checkpoint.base as base

    return hasattr(base, "writes_sort_key")


@functools.cache
def special_channels() -> frozenset[str]:
    """The channels a task writes at most once (``WRITES_IDX_MAP``: each has one fixed index,
    and a put replaces the task's earlier write to it)."""
    from langgraph.checkpoint.base import WRITES_IDX_MAP

    return frozenset(WRITES_IDX_MAP)


def _channel(write: list[Any]) -> str:
    return str(write[1])


def _specials_first(writes: list[Any]) -> list[Any]:
    special = special_channels()
    return [*sorted((w for w in writes if _channel(w) in special), key=_channel),
            *(w for w in writes if _channel(w) not in special)]


def _ordinary_by_channel(writes: list[Any]) -> list[Any]:
    """``writes`` with those to ordinary channels ordered by channel name in the places they
    hold (a stable sort: one channel's writes keep their order); special ones stay put."""
    # Why: LangGraph applies a task's writes channel by channel (pregel apply_writes gathers
    # each channel's values in order and updates each channel once with its own list), so the
    # order of the writes to ONE channel can change the state (a reducer, a Topic of Sends) and
    # is compared, while the order across ordinary channels cannot, and is not stable: it is
    # the order the task put them in (a write's idx), and StateGraph keeps its edges in a set,
    # so a node with two outgoing edges writes branch:to:a and branch:to:b in an order that
    # follows PYTHONHASHSEED (the reference's graph_failed_node_resume took two digests from one
    # process to the next). The special channels keep their place: their index is fixed
    # (WRITES_IDX_MAP), so where writes_sort_key documents the order their place is a saver's
    # contract, and before it _specials_first orders them.
    special = special_channels()
    ordinary = iter(sorted((w for w in writes if _channel(w) not in special), key=_channel))
    return [w if _channel(w) in special else next(ordinary) for w in writes]


def order_writes(writes: list[Any], documented: bool = True) -> list[Any]:
    """Pending writes grouped by task (first field), groups ordered by their id-blind content;
    within a task, the writes to ordinary channels ordered by channel name in their places,
    each channel's own order kept, and, where no order is ``documented``, the writes to
    special channels first, by channel name."""
    groups: dict[str, list[Any]] = {}
    for write in writes:
        groups.setdefault(str(write[0]), []).append(write)
    ordered = [_ordinary_by_channel(group) for group in groups.values()]
    if not documented:
        ordered = [_specials_first(group) for group in ordered]
    return [w for group in sorted(ordered, key=_masked) for w in group]


class Aliases:
    """Run-specific ids and their placeholders, numbered by first appearance."""

    def __init__(self) -> None:
        self.names: dict[str, str] = {}
        self.applied: set[str] = set()  # the ids of the rules that rewrote something

    def sub(self, text: str) -> str:
        """``text`` with every id replaced by its placeholder."""
        return ID_PATTERN.sub(self._alias, text)

    def _alias(self, match: re.Match[str]) -> str:
        self.applied.add("graph-ids")
        return self.names.setdefault(match.group(0), f"<id:{len(self.names) + 1}>")


def normalize(value: Any, aliases: Aliases, key: str | None = None) -> Any:
    """``value`` (plain JSON) with ``GRAPH_RULES`` applied; ``aliases`` carries the ids seen
    so far in the run, so that one id has one placeholder across all of its reads."""
    if isinstance(value, str):
        return aliases.sub(value)
    if isinstance(value, list):
        items = value
        if key == "pending_writes":
            items = order_writes(value, order_documented())
            aliases.applied.add("graph-pending-writes-order")
        return [normalize(v, aliases) for v in items]
    if not isinstance(value, dict):
        return value
    out: dict[str, Any] = {}
    for k, v in sorted(value.items()):  # key order is a saver's own: ids numbered in sorted order
        if k in TIMESTAMP_KEYS and isinstance(v, str):
            out[k] = "<timestamp>"
            aliases.applied.add("graph-timestamps")
        elif k in RUN_KEYS:
            out[k] = "<run>"
            aliases.applied.add("graph-run-metadata")
        elif k in VERSION_KEYS and isinstance(v, dict):
            aliases.applied.add("graph-versions")
            out[k] = {name: _counter(ver) if k == "channel_versions" else
                      {ch: _counter(x) for ch, x in ver.items()} if isinstance(ver, dict) else ver
                      for name, ver in v.items()}
        else:
            out[aliases.sub(k)] = normalize(v, aliases, k)
    return out


def _counter(version: Any) -> Any:
    """A channel version's integer part (``'000…03.0.123'`` -> 3); other values as they are."""
    # The fraction is random.random() formatted by InMemorySaver (f"{h:016}"): below 1e-4 it
    # comes in exponent form ('000…03.4.8e-06'), about once in 10,000 versions.
    if isinstance(version, str) and re.fullmatch(r"\d+(\.\d+)*(e[+-]\d+)?", version):
        return int(version.split(".")[0])
    return version
