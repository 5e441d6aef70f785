"""ARIB-CKPT-010: ``get_delta_channel_history`` gives, per channel, the pending writes of the
target's ancestors on its parent chain, oldest first, back to and including the nearest
ancestor that holds a value of the channel (its ``seed``).

A DeltaChannel (langgraph-checkpoint 4.1+) stores its value only now and then; a graph
resuming from a checkpoint rebuilds the channel from this history. A history that misses a
write, takes one from a sibling branch or from the target itself, or stops at the wrong
ancestor rebuilds a different state than the run had, silently.

A thread gets a chain whose channels differ in where their values are: ``d`` has a value
(a list, stored as a blob) at two ancestors only, ``p`` (a string, stored inline) at every
checkpoint, ``e`` never, ``x`` is never written; a fork from an early checkpoint and a chain
with the same ids in a child namespace; and pending writes of two tasks on every checkpoint
(where the release defines ``writes_sort_key``, with task paths ordered against their task
ids); and a long thread (``long`` checkpoints, more than a page of 1024 rows the Postgres
savers read its ancestors in) whose only value is at its root. The history of the latest
(named by id, and by a config naming no checkpoint), of an earlier checkpoint, of the fork's
tip, of the child namespace's tip, of the long thread's tip, of a missing checkpoint and for no
channel at all must be exactly what the parent chain implies: the writes of every ancestor
from the target's parent back to the seed's ancestor (its own writes included, the target's
excluded), oldest first, each checkpoint's in ``writes_sort_key`` order; the seed omitted when
no ancestor holds a value. A saver whose release has no such method abstains.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from arib.checks.base import CheckSpec, Param, Selector, TrialContext
from arib.checks.common import trials_param
from arib.checks.langgraph._contract import Problems, guarded
from arib.checks.langgraph._halves import offers, task_paths
from arib.checks.langgraph._saver import call, channel_argument, checkpoint_id, config, saver_of
from arib.ground.model import Trial
from arib.targets.base import NotApplicable
from arib.targets.langgraph.lanes import latest_only

CHANNELS = ("d", "p", "e", "x")


@dataclass
class Node:
    """One checkpoint the trial put: its id, parent, values and its writes as read back."""

    id: str
    parent: str | None
    values: dict[str, Any]
    versions: dict[str, Any]
    writes: list[tuple[str, str, Any]] = field(default_factory=list)


def expected_history(nodes: Mapping[str, Node], target: str | None,
                     channels: Sequence[str]) -> dict[str, dict[str, Any]]:
    """The history the parent chain implies for ``channels`` at ``target`` (None: missing)."""
    start = nodes.get(target) if target is not None else None
    result: dict[str, dict[str, Any]] = {}
    for ch in channels:
        visited: list[list[tuple[str, str, Any]]] = []
        entry: dict[str, Any] = {}
        at = nodes.get(start.parent) if start is not None and start.parent else None
        while at is not None:
            visited.append([w for w in at.writes if w[1] == ch])
            if ch in at.values:
                entry["seed"] = at.values[ch]
                break
            at = nodes.get(at.parent) if at.parent else None
        entry["writes"] = [w for writes in reversed(visited) for w in writes]
        result[ch] = entry
    return result


def seen_history(got: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """A saver's answer in the form of ``expected_history`` (writes as tuples)."""
    out: dict[str, dict[str, Any]] = {}
    for ch, entry in dict(got).items():
        item: dict[str, Any] = {"writes": [tuple(w) for w in entry.get("writes", [])]}
        if "seed" in entry:
            item["seed"] = entry["seed"]
        out[ch] = item
    return out


class _Thread:
    """Puts the trial's checkpoints and writes on one (thread, namespace), remembering them."""

    def __init__(self, ctx: TrialContext, saver: Any, thread: str, ns: str, tag: str) -> None:
        self.ctx, self.saver, self.thread, self.ns, self.tag = ctx, saver, thread, ns, tag
        self.nodes: dict[str, Node] = {}
        self.paths = task_paths()

    async def put(self, step: int, parent: str | None, seeds: set[int], writer: int = 0,
                  writes: bool = True) -> str:
        prior = self.nodes[parent] if parent else None
        versions = {ch: self.saver.get_next_version(
            prior.versions.get(ch) if prior else None, channel_argument(self.saver, None))
            for ch in ("d", "p", "e")}
        values: dict[str, Any] = {"p": f"{self.tag}p{step}.{writer}"}
        if step in seeds:
            values["d"] = [f"{self.tag}seed{step}.{writer}", step]
        from langgraph.checkpoint.base import empty_checkpoint

        cp = dict(empty_checkpoint())
        cp.update(id=checkpoint_id(self.ctx.seed, step, writer),
                  ts=f"2026-01-01T00:00:{step % 60:02d}.{writer:06d}+00:00",
                  channel_values=values, channel_versions=versions,
                  versions_seen={f"node-{step}": dict(versions)})
        if writes or step in seeds:
            self.ctx.log(f"put ({self.thread!r}, {self.ns!r}) {cp['id']} parent {parent} "
                         f"values {sorted(values)}")
        await call(self.saver, "put", config(self.thread, self.ns, parent), cp,
                   {"step": step}, dict(versions))
        node = Node(str(cp["id"]), parent, values, versions)
        self.nodes[node.id] = node
        if writes:
            await self._writes(node, step, writer)
        return node.id

    async def _writes(self, node: Node, step: int, writer: int) -> None:
        label = f"{self.tag}{step}.{writer}"
        # (task id, task path, writes): task-b's path sorts first where paths order writes
        tasks = [("task-a", "~b" if self.paths else "",
                  [("d", f"d{label}a"), ("p", f"p{label}a"), ("e", f"e{label}a")]),
                 ("task-b", "~a" if self.paths else "",
                  [("d", f"d{label}b0"), ("e", f"e{label}b"), ("d", f"d{label}b1")])]
        for task, path, writes in tasks:
            self.ctx.log(f"put_writes {task} (path {path!r}) on {node.id}")
            args = (writes, task, path) if self.paths else (writes, task)
            await call(self.saver, "put_writes", config(self.thread, self.ns, node.id), *args)
        ordered = sorted(((path, task, idx, ch, value) for task, path, writes in tasks
                          for idx, (ch, value) in enumerate(writes)),
                         key=lambda w: (w[0], w[1], w[2]))
        node.writes = [(task, ch, value) for _, task, _, ch, value in ordered]


async def run_trial(ctx: TrialContext) -> Trial:
    return await guarded(ctx, lambda: _trial(ctx))


async def _trial(ctx: TrialContext) -> Trial:
    steps = ctx.params["steps"]
    saver = saver_of(await ctx.open())
    if not offers(saver, "get_delta_channel_history"):
        raise NotApplicable(f"{type(saver).__name__} has no get_delta_channel_history() in "
                            f"this release (DeltaChannel support came with "
                            f"langgraph-checkpoint 4.1)")
    no_history = latest_only(saver)
    if no_history:
        raise NotApplicable(f"{no_history}: a history of ancestors was never offered there")
    thread = f"t-{ctx.seed:x}"
    seeds = {1, steps - 3}
    root = _Thread(ctx, saver, thread, "", "")
    main: list[str] = []
    for step in range(steps):
        main.append(await root.put(step, main[-1] if main else None, seeds))
    fork = [main[2]]
    for step in (3, 4):
        fork.append(await root.put(step, fork[-1], seeds, writer=1))
    inner = _Thread(ctx, saver, thread, "inner", "in-")
    chain_inner: list[str] = []
    for step in range(steps):
        chain_inner.append(await inner.put(step, chain_inner[-1] if chain_inner else None,
                                           {0}))
    long = ctx.params["long"]
    far = _Thread(ctx, saver, f"long-{ctx.seed:x}", "", "far-")
    chain_far: list[str] = []
    if long:
        ctx.log(f"a thread of {long} checkpoints, its only value of 'd' at its root, writes at "
                f"three of them (the others' puts not logged)")
    for step in range(long):
        chain_far.append(await far.put(step, chain_far[-1] if chain_far else None, {0},
                                       writes=step in (0, long // 2, long - 2)))
    problems = Problems()
    queries: list[tuple[str, dict[str, Any], Mapping[str, Node], str | None,
                        tuple[str, ...]]] = [
        (f"latest {main[-1]} by id", config(thread, "", main[-1]), root.nodes, main[-1],
         CHANNELS),
        ("a config naming no checkpoint (the latest)", config(thread), root.nodes, main[-1],
         CHANNELS),
        (f"earlier {main[3]}", config(thread, "", main[3]), root.nodes, main[3], ("e", "d")),
        (f"fork tip {fork[-1]}", config(thread, "", fork[-1]), root.nodes, fork[-1], CHANNELS),
        (f"child namespace tip {chain_inner[-1]}", config(thread, "inner", chain_inner[-1]),
         inner.nodes, chain_inner[-1], CHANNELS),
        ("a missing checkpoint", config(thread, "", checkpoint_id(ctx.seed, 999)), root.nodes,
         None, CHANNELS),
        ("no channel", config(thread, "", main[-1]), root.nodes, main[-1], ()),
    ]
    if long:
        queries.append((f"the tip of a thread of {long} checkpoints",
                        config(far.thread, "", chain_far[-1]), far.nodes, chain_far[-1],
                        CHANNELS))
    for label, cfg, nodes, target, channels in queries:
        ctx.log(f"get_delta_channel_history {label}: channels {list(channels)}")
        got = await call(saver, "get_delta_channel_history", config=cfg, channels=list(channels))
        want = expected_history(nodes, target, channels)
        seen = seen_history(got)
        if set(seen) != set(want):
            problems.add("wrong", f"history of {label}: channels {sorted(seen)}, asked "
                                  f"{sorted(want)}")
            continue
        for ch in channels:
            w, s = want[ch], seen[ch]
            if w["writes"] != s["writes"]:
                missing = [x for x in w["writes"] if x not in s["writes"]]
                extra = [x for x in s["writes"] if x not in w["writes"]]
                kind = "foreign" if extra else ("lost" if missing else "wrong")
                problems.add(kind, f"history of {label}, channel {ch!r}: writes missing "
                                   f"{missing[:2]!r:.120}, not on its chain {extra[:2]!r:.120}"
                                   + ("" if missing or extra else
                                      f", order {[x[2] for x in s['writes']][:6]!r:.160}"))
            problems.expect(f"history of {label}, channel {ch!r}: seed",
                            w.get("seed", "(no seed)"), s.get("seed", "(no seed)"))
    return problems.trial(ctx, "chain_exact")


CHECK = CheckSpec(
    id="ARIB-CKPT-010",
    invariant="get_delta_channel_history gives each channel's writes along the parent chain, "
              "oldest first, back to the nearest ancestor holding its value (the seed)",
    fault="channels with values at some, every or no ancestor; a fork, a child namespace "
          "with the same ids, two tasks' writes on every checkpoint; the latest, an earlier "
          "checkpoint, a fork's tip, a missing one; the tip of a thread past 1024 checkpoints",
    params=(Param("steps", 7, 6, 40, "checkpoints of the thread's main chain"),
            Param("long", 1100, 0, 5000, "checkpoints of a long thread whose value is at its "
                                         "root, beyond a 1024-row page (0: none)"),
            trials_param(1)),
    run_trial=run_trial,
    mutants=("lg_api_reference_delta_latest_empty", "lg_api_async_sqlite_delta_walks_ids"),
    generated=(
        Selector("lg-memory", "InMemorySaver.get_delta_channel_history", "flip_comparison"),
        Selector("lg-memory", "InMemorySaver.aget_delta_channel_history", "early_return"),
        Selector("lg-sqlite-file", "SqliteSaver.get_delta_channel_history", "flip_comparison"),
        Selector("lg-async-sqlite-file", "AsyncSqliteSaver.aget_delta_channel_history",
                 "early_return"),
    ),
    timeout_s=30.0,
)
