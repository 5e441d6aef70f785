"""ARIB-CKPT-011: ``prune`` removes what its strategy names and nothing else: ``keep_latest``
keeps each namespace's latest checkpoint of the named threads, exactly, with its pending
writes; ``delete`` removes the named threads; other threads are untouched; a DeltaChannel
thread keeps what its latest state is rebuilt from; bad arguments are refused.

Deployments prune to bound their storage; a prune that keeps the wrong checkpoint, strips the
kept one of its writes, reaches a thread it was not given, or cuts a DeltaChannel's history
loses state that runs resume from, with no error.

Threads: P (two namespaces, a chain each, writes on every checkpoint) pruned with
``keep_latest``; C pruned with ``delete``; D, whose checkpoints' metadata carries a
DeltaChannel's counters, pruned with P; bystanders B and one named by P's first character
(which a saver that takes the string P for a list of ids would prune). First an unknown
strategy and a single string are given: each must be refused or touch nothing beyond P. Then
``prune([P, D])``: refused (NotImplementedError, P untouched, then P is pruned alone) or not,
D's latest
delta history (where the release has it) and listing of its latest must be as before; P keeps
exactly its latest per namespace, checkpoint, metadata and writes unchanged, its parent link
absent or naming a checkpoint that exists; the pruned ids are gone. ``delete`` leaves nothing
of C; ``prune([])`` and a never-written thread change nothing; B is exactly as before
throughout. A saver whose release has no prune (BaseCheckpointSaver's raises
NotImplementedError) abstains.
"""

from __future__ import annotations

from typing import Any

from arib.checks.base import CheckSpec, Param, Selector, TrialContext, describe
from arib.checks.common import trials_param
from arib.checks.langgraph._contract import (
    Problems,
    Put,
    guarded,
    ids_of,
    named,
    put_chain,
    thread_config,
)
from arib.checks.langgraph._halves import listing_view, offers, tuple_view
from arib.checks.langgraph._saver import call, config, listing, saver_of
from arib.ground.model import Trial
from arib.targets.base import NotApplicable

DELTA_META = {"counters_since_delta_snapshot": {"d": [1, 1]}}


async def run_trial(ctx: TrialContext) -> Trial:
    return await guarded(ctx, lambda: _trial(ctx))


async def _prune(ctx: TrialContext, saver: Any, threads: Any, strategy: str) -> Exception | None:
    """prune through the served half; the exception it raised, or None."""
    ctx.log(f"prune {threads!r} strategy {strategy!r}")
    try:
        await call(saver, "prune", threads, strategy=strategy)
    except Exception as exc:  # noqa: BLE001 - a refusal is evidence the caller judges
        ctx.log(f"prune refused: {describe(exc)}")
        return exc
    return None


async def _offered(ctx: TrialContext, saver: Any) -> None:
    name = type(saver).__name__
    if not offers(saver, "prune"):
        raise NotApplicable(f"{name} has no prune() in this release")
    refused = await _prune(ctx, saver, [f"never-{ctx.seed:x}"], "keep_latest")
    if isinstance(refused, NotImplementedError):
        raise NotApplicable(f"{name}.prune() raises NotImplementedError in this release "
                            f"({describe(refused)})")
    if refused is not None:
        raise refused


async def _snapshot(saver: Any, thread: str) -> list[Any]:
    return listing_view(await listing(saver, thread_config(thread)))


async def _delta_view(saver: Any, thread: str) -> Any:
    """D's latest checkpoint, and its delta history where the release has one."""
    latest = await call(saver, "get_tuple", config(thread))
    history = None
    if latest is not None and offers(saver, "get_delta_channel_history"):
        history = await call(saver, "get_delta_channel_history", config=latest.config,
                             channels=["d", "v"])
    return tuple_view(latest), history


async def _trial(ctx: TrialContext) -> Trial:
    steps = ctx.params["steps"]
    saver = saver_of(await ctx.open())
    await _offered(ctx, saver)
    pruned, deleted, delta = (f"{p}-{ctx.seed:x}" for p in ("p", "c", "d"))
    bystanders = (f"b-{ctx.seed:x}", pruned[0])
    chains: dict[tuple[str, str], list[Put]] = {}
    for writer, (thread, ns, n) in enumerate(((pruned, "", steps), (pruned, "inner", 2),
                                             (deleted, "", 2), (bystanders[0], "", 2),
                                             (bystanders[1], "", 2), (delta, "", 3))):
        meta = (lambda step: {**DELTA_META, "step": step}) if thread == delta else None
        chains[(thread, ns)] = await put_chain(ctx, saver, thread, ns, n, writer=writer,
                                               meta=meta)
        for put in chains[(thread, ns)]:
            ctx.log(f"put_writes task-w on ({thread!r}, {ns!r}, {put.id})")
            await call(saver, "put_writes", config(thread, ns, put.id),
                       [("v", f"w|{thread}|{ns}|{put.id}"), ("d", [put.id])], "task-w")
    problems = Problems()
    keep = {(t, ns): chain[-1] for (t, ns), chain in chains.items() if t == pruned}
    kept_before = {key: tuple_view(await call(saver, "get_tuple", config(key[0], key[1], put.id)))
                   for key, put in keep.items()}
    others = {t: await _snapshot(saver, t) for t in (*bystanders, pruned)}
    delta_before = await _delta_view(saver, delta)

    async def bystanders_untouched(after: str) -> None:
        for thread in bystanders:
            problems.expect(f"bystander {thread!r} after {after}", others[thread],
                            await _snapshot(saver, thread), kind="lost")

    for bad, strategy in (([pruned], f"bogus-{ctx.seed % 7}"), (pruned, "keep_latest")):
        refused = await _prune(ctx, saver, bad, strategy)
        await bystanders_untouched(f"prune({bad!r}, strategy={strategy!r})")
        if refused is None and isinstance(bad, list):
            problems.add("wrong", f"prune with the unknown strategy {strategy!r} was accepted")
        if refused is not None:
            problems.expect(f"{pruned!r} after the refused prune({bad!r}, {strategy!r})",
                            others[pruned], await _snapshot(saver, pruned), kind="lost")
    refused = await _prune(ctx, saver, [pruned, delta], "keep_latest")
    if refused is not None and not isinstance(refused, NotImplementedError):
        problems.add("raised", f"prune([{pruned!r}, {delta!r}], 'keep_latest') raised "
                               f"{describe(refused)}")
    problems.expect(f"DeltaChannel thread {delta!r} (its latest and its delta history) after "
                    f"keep_latest", delta_before, await _delta_view(saver, delta), kind="lost")
    if refused is not None:
        # a refused call leaves the store as it was: the caller cannot know what it did
        problems.expect(f"{pruned!r} after prune([{pruned!r}, {delta!r}]) was refused",
                        others[pruned], await _snapshot(saver, pruned), kind="lost")
        await _prune(ctx, saver, [pruned], "keep_latest")
    for (thread, ns), chain in chains.items():
        if thread != pruned:
            continue
        ctx.log(f"list ({thread!r}, {ns!r}) after keep_latest")
        listed = await listing(saver, config(thread, ns))
        problems.expect(f"checkpoints of ({thread!r}, {ns!r}) after keep_latest",
                        [chain[-1].id], ids_of(listed),
                        kind="foreign" if len(listed) > 1 else "lost")
        got = await call(saver, "get_tuple", config(thread, ns, chain[-1].id))
        if got is None:
            continue
        want = kept_before[(thread, ns)]
        problems.expect(f"kept {chain[-1].id}: config, checkpoint, metadata and writes",
                        (want[0], *want[2:]), (tuple_view(got)[0], *tuple_view(got)[2:]))
        if got.parent_config is not None and await call(saver, "get_tuple",
                                                        got.parent_config) is None:
            problems.add("wrong", f"kept {chain[-1].id} names the parent "
                                  f"{named(got.parent_config)}, which is gone")
        for put in chain[:-1]:
            if await call(saver, "get_tuple", config(thread, ns, put.id)) is not None:
                problems.add("foreign", f"({thread!r}, {ns!r}, {put.id}) survived keep_latest")
    await bystanders_untouched("keep_latest")
    if await _prune(ctx, saver, [deleted], "delete") is not None:
        problems.add("raised", f"prune([{deleted!r}], 'delete') was refused")
    problems.expect(f"thread {deleted!r} after prune 'delete'", [],
                    ids_of(await listing(saver, thread_config(deleted))), kind="foreign")
    after = await _snapshot(saver, pruned)
    for threads in ([], [f"never-{ctx.seed:x}"]):
        if await _prune(ctx, saver, threads, "keep_latest") is not None:
            problems.add("raised", f"prune({threads!r}) was refused")
    problems.expect(f"{pruned!r} after prune of no thread and of an unwritten one", after,
                    await _snapshot(saver, pruned), kind="lost")
    await bystanders_untouched("delete and the empty prunes")
    return problems.trial(ctx, "pruned_exactly")


CHECK = CheckSpec(
    id="ARIB-CKPT-011",
    invariant="prune removes what its strategy names and nothing else: keep_latest keeps each "
              "namespace's latest checkpoint with its writes, delete removes the thread, a "
              "DeltaChannel thread keeps its history, bad arguments are refused",
    fault="keep_latest over two namespaces with writes beside a DeltaChannel thread; delete; "
          "an unknown strategy, a lone string, an empty list; bystanders, one named by the "
          "pruned thread's first character",
    params=(Param("steps", 4, 2, 30, "checkpoints of the pruned thread's root namespace"),
            trials_param(1)),
    run_trial=run_trial,
    mutants=("lg_api_reference_prune_keeps_oldest", "lg_api_reference_prune_ignores_delta"),
    generated=(
        Selector("lg-reference", "ReferenceSaver.prune", "flip_comparison"),
        Selector("lg-async-postgres", "AsyncPostgresSaver.aprune", "early_return"),
    ),
    timeout_s=40.0,
)
