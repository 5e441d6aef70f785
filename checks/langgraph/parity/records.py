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
which is a hash of a run-specific checkpoint id. Within a task, writes are ordered by channel
name, a stable sort that keeps the order of writes to one channel (see ``order_writes``).
"""

from __future__ import annotations

import dataclasses
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
        "within a task, writes are ordered by channel name, keeping the order of writes to one "
        "channel (LangGraph applies a task's writes channel by channel, so only that order "
        "changes the state; across channels it follows a set's iteration, PYTHONHASHSEED, and "
        "before langgraph-checkpoint 4.3 a saver's own choice)",
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


def _by_channel(write: list[Any]) -> str:
    return str(write[1])


def order_writes(writes: list[Any]) -> list[Any]:
    """Pending writes grouped by task (first field), groups ordered by their id-blind content;
    within a task, writes ordered by channel name (second field), each channel's own kept."""
    # Why the order across channels is normalized: LangGraph applies a task's writes channel by
    # channel (pregel apply_writes gathers each channel's values, in order, and updates each
    # channel once with its own list; the special channels, __interrupt__, __resume__,
    # __error__ and the like, are read by task and channel, each written at most once per task
    # since WRITES_IDX_MAP gives it one fixed index), so only the order of the writes to ONE
    # channel can change the state (a reducer, a Topic of Sends). The order across channels
    # carries no meaning and is not stable: StateGraph keeps its edges in a set, so a node
    # with two outgoing edges writes branch:to:a and branch:to:b in an order that follows
    # PYTHONHASHSEED (graph_failed_node_resume's input task took two digests from one process
    # to the next), and before langgraph-checkpoint 4.3 (no writes_sort_key) InMemorySaver
    # returned a task's writes as put, our reference by index. sorted() is stable: writes to
    # one channel keep the saver's order, which is still compared.
    groups: dict[str, list[Any]] = {}
    for write in writes:
        groups.setdefault(str(write[0]), []).append(write)
    ordered = [sorted(group, key=_by_channel) for group in groups.values()]
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
            items = order_writes(value)
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
