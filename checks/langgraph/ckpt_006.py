"""ARIB-CKPT-006: threads and namespaces are isolated, and a namespace (or thread id) that is a
prefix of another never matches the longer name.

Scopes whose names prefix each other (namespaces "", "a", "a|b", "ab"; threads T and T + "x")
each get a chain whose values and metadata name the scope. Every query scoped to one
(thread, namespace) must see exactly that scope's checkpoints, newest first, whatever its
``limit``, ``before`` or ``filter``; a checkpoint id of another scope names nothing there; the
latest is the scope's own; a listed tuple is the one get_tuple gives (pending writes, put on
each scope's first checkpoint, included); and a thread-wide listing holds that thread's scopes
only.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from arib.checks.base import CheckSpec, Param, Selector, TrialContext
from arib.checks.common import trials_param
from arib.checks.langgraph._contract import (
    Problems,
    Put,
    guarded,
    ids_of,
    put_chain,
    same_as_got,
    thread_config,
)
from arib.checks.langgraph._saver import call, config, listing
from arib.ground.model import Trial

NAMESPACES = ("", "a", "a|b", "ab")


def _scope_meta(thread: str, ns: str) -> Callable[[int], dict[str, Any]]:
    """Metadata naming the scope (so that a filter or a leak shows which scope it reached)."""
    return lambda step: {"scope": f"{thread}/{ns}", "step": step}


async def run_trial(ctx: TrialContext) -> Trial:
    return await guarded(ctx, lambda: _trial(ctx))


async def _trial(ctx: TrialContext) -> Trial:
    steps = ctx.params["steps"]
    saver = (await ctx.open()).session
    base = f"t-{ctx.seed:x}"
    scopes = [(thread, ns) for thread in (base, base + "x") for ns in NAMESPACES]
    order = list(range(len(scopes)))
    ctx.rng.shuffle(order)
    chains: dict[tuple[str, str], list[Put]] = {}
    for writer in order:
        thread, ns = scopes[writer]
        chains[(thread, ns)] = await put_chain(
            ctx, saver, thread, ns, steps, writer=writer, meta=_scope_meta(thread, ns))
    for scope, chain in sorted(chains.items()):
        ctx.log(f"put_writes task-w on {scope!r} {chain[0].id}")
        await call(saver, "put_writes", config(*scope, chain[0].id),
                   [("v", f"{scope[0]}/{scope[1]}")], "task-w")
    problems = Problems()
    for index, (thread, ns) in enumerate(scopes):
        own = [p.id for p in reversed(chains[(thread, ns)])]
        tag = f"{thread}/{ns}"
        foreign_tag = f"{scopes[index - 1][0]}/{scopes[index - 1][1]}"
        foreign_id = chains[scopes[index - 1]][-1].id
        probes: list[tuple[str, dict[str, Any], dict[str, Any], list[str]]] = [
            ("all", config(thread, ns), {}, own),
            ("limit=1", config(thread, ns), {"limit": 1}, own[:1]),
            (f"before {own[0]}", config(thread, ns), {"before": config(thread, ns, own[0])},
             own[1:]),
            ("filter on its own scope", config(thread, ns), {"filter": {"scope": tag}}, own),
            ("filter on another scope", config(thread, ns), {"filter": {"scope": foreign_tag}},
             []),
            (f"its own id {own[-1]}", config(thread, ns, own[-1]), {}, own[-1:]),
            (f"another scope's id {foreign_id}", config(thread, ns, foreign_id), {}, []),
        ]
        for label, cfg, kwargs, want in probes:
            ctx.log(f"list ({thread!r}, {ns!r}) {label}")
            got = await listing(saver, cfg, **kwargs)
            problems.expect(f"list ({thread!r}, {ns!r}) {label}", want, ids_of(got),
                            kind="foreign" if set(ids_of(got)) - set(want) else "lost")
            scopes_seen = sorted({str((t.metadata or {}).get("scope")) for t in got} - {tag})
            if scopes_seen:
                problems.add("foreign", f"list ({thread!r}, {ns!r}) {label} gave metadata of "
                                        f"scope {scopes_seen[:3]!r}")
        for item in await listing(saver, config(thread, ns)):
            await same_as_got(ctx, saver, problems, f"list ({thread!r}, {ns!r})", item)
        ctx.log(f"get_tuple latest of ({thread!r}, {ns!r}), and by another scope's id")
        latest = await call(saver, "get_tuple", config(thread, ns))
        problems.expect(f"latest of ({thread!r}, {ns!r})", (own[0], tag),
                        None if latest is None else
                        (latest.checkpoint["id"], (latest.metadata or {}).get("scope")))
        stray = await call(saver, "get_tuple", config(thread, ns, foreign_id))
        if stray is not None:
            problems.add("foreign", f"get_tuple ({thread!r}, {ns!r}, {foreign_id}) found the "
                                    f"checkpoint of {foreign_tag}")
    for thread in (base, base + "x"):
        ctx.log(f"list thread {thread!r}, every namespace")
        want = sorted(p.id for (t, _), chain in chains.items() if t == thread for p in chain)
        got = await listing(saver, thread_config(thread))
        problems.expect(f"list of thread {thread!r} (ids, sorted)", want,
                        sorted(ids_of(got)), kind="foreign")
    return problems.trial(ctx, "isolated")


CHECK = CheckSpec(
    id="ARIB-CKPT-006",
    invariant="threads and namespaces are isolated: a query scoped to one sees only its "
              "checkpoints, and a prefix of a name never matches the longer name",
    fault="namespaces '', 'a', 'a|b', 'ab' on threads T and T+'x', put in a shuffled order; "
          "every scoped query with limit, before, filters and foreign ids",
    params=(Param("steps", 3, 2, 30, "checkpoints per (thread, namespace)"), trials_param(2)),
    run_trial=run_trial,
    mutants=("lg_reference_ns_prefix_matches", "lg_contract_memory_ns_prefix_matches"),
    generated=(
        Selector("lg-memory", "InMemorySaver.list", "flip_comparison"),
        Selector("lg-sqlite-file", "SqliteSaver.get_tuple", "swap_order"),
        Selector("lg-async-sqlite-file", "AsyncSqliteSaver.alist", "flip_comparison"),
    ),
    timeout_s=40.0,
)
