"""ARIB-LGSTORE-003 (issue 35): mixed batches racing on one store object, as the concurrent runs
of one deployment call it, each keep their results in op order and see every write that
returned before them; nothing is lost or goes back in time.

Before the race the store holds, for every worker, ``rounds`` keys in its own namespace
``("w", <n>)`` and one key in ``("shared",)``, each at round -1 (so that no race adds a key or
a namespace: what is judged is values and order, not growth). Then the workers, released
together, each run ``rounds`` batches of [put own k<r>, get own k<r-1>, search own namespace,
list namespaces under ("w",), put shared w<n>, get the next worker's shared key], calling
``batch`` from a worker thread where the lane's class serves the sync half and ``abatch`` from a
task where it serves the async half (where it serves both, every fourth worker calls abatch,
the others batch: threads overlap inside a call, tasks only between). Judged per batch: one
result per op in op order; the get sees the round the worker put in its previous batch; the
search gives every key of the namespace, those of earlier rounds at their round, later ones at
-1 (the key of this batch's own put at -1 or at this round: a batch's reads may come before
its writes); the listing gives every worker's namespace; the next worker's shared key never
goes back to an earlier round. After all returned, a fresh instance (where one can open the
store) reads every key at its last round. A batch that raises, or gives no answer in 3 s (hung:
its thread is abandoned), is a violation.
"""

from __future__ import annotations

import functools
from typing import Any

import anyio
import anyio.to_thread

from arib.checks.base import Barrier, CheckSpec, Param, Selector, TrialContext, describe
from arib.checks.common import RATE_TRIALS, trials_param
from arib.checks.langgraph._contract import Problems, guarded
from arib.checks.langgraph._saver import store_of
from arib.targets.langgraph.lanes import api_of, is_async

CHECK_ID = "ARIB-LGSTORE-003"
EVERYTHING = 1_000
# A clean batch takes milliseconds; one that has not returned after this long is hung (its
# thread is abandoned, the trial goes on and says so).
OP_TIMEOUT_S = 3.0


def own(worker: int) -> tuple[str, ...]:
    """A worker's own namespace."""
    return ("w", str(worker))


def halves(store: Any, workers: int) -> list[str]:
    """Which half each worker calls: "sync" (batch in a thread) or "async" (abatch)."""
    served = api_of(store)
    if served == "both":  # mostly threads: they overlap inside a call, tasks only between calls
        return ["async" if w % 4 == 3 else "sync" for w in range(workers)]
    return ["async" if is_async(served) else served] * workers


async def call_batch(store: Any, half: str, ops: list[Any]) -> Any:
    """``batch(ops)`` in a worker thread, or ``abatch(ops)``."""
    with anyio.fail_after(OP_TIMEOUT_S):
        if half == "sync":
            return await anyio.to_thread.run_sync(functools.partial(store.batch, ops),
                                                  abandon_on_cancel=True)
        return await store.abatch(ops)


async def run_trial(ctx: TrialContext) -> Any:
    """One trial: the workers' batches raced on one store object, then read back."""
    problems = Problems()
    return await guarded(ctx, lambda: _trial(ctx, problems))


async def _trial(ctx: TrialContext, problems: Problems) -> Any:
    from langgraph.store.base import GetOp, ListNamespacesOp, MatchCondition, PutOp, SearchOp

    workers, rounds = ctx.params["workers"], ctx.params["rounds"]
    handle = await ctx.open()
    store = store_of(handle)
    sides = halves(store, workers)
    keys = [f"k{r}" for r in range(rounds)]
    seed_ops = [PutOp(own(w), key, {"w": w, "round": -1}) for w in range(workers) for key in keys]
    seed_ops += [PutOp(("shared",), f"w{w}", {"round": -1}) for w in range(workers)]
    ctx.log(f"batch of {len(seed_ops)} puts: {rounds} keys per worker namespace and one "
            f"shared key per worker, each at round -1; then {workers} workers ({sides}) race "
            f"{rounds} mixed batches each")
    await call_batch(store, sides[0], seed_ops)
    every_ns = sorted(own(w) for w in range(workers))
    barrier = Barrier(workers)

    def judge(w: int, r: int, results: Any, last_seen: list[int]) -> None:
        where = f"worker {w} ({sides[w]}) batch {r}"
        if not isinstance(results, list) or len(results) != 6:
            problems.add("wrong", f"{where}: {results!r:.120}, not 6 results")
            return
        put_own, got, found, names, put_shared, neighbour = results
        if put_own is not None or put_shared is not None:
            problems.add("wrong", f"{where}: puts gave {put_own!r:.60}, {put_shared!r:.60}")
        previous = r - 1 if r else -1
        if getattr(got, "value", None) != {"w": w, "round": previous}:
            problems.add("lost", f"{where}: get {keys[r - 1]} gave {got!r:.120}, want round "
                                 f"{previous}")
        seen = {item.key: item.value.get("round") for item in found or ()
                if tuple(item.namespace) == own(w)} if isinstance(found, list) else {}
        for j, key in enumerate(keys):
            allowed = {j} if j < r else {-1, r} if j == r else {-1}
            if seen.get(key) not in allowed:
                problems.add("lost" if key not in seen else "wrong",
                             f"{where}: search gave {key} at {seen.get(key)}, want {allowed}")
        if not isinstance(found, list) or len(found) != len(keys):
            problems.add("wrong", f"{where}: search gave {found!r:.120}")
        if not isinstance(names, list) or sorted(map(tuple, names)) != every_ns:
            problems.add("wrong", f"{where}: list_namespaces gave {names!r:.120}")
        at = getattr(neighbour, "value", {}).get("round") if neighbour is not None else None
        if not isinstance(at, int) or at < last_seen[0]:
            problems.add("wrong", f"{where}: worker {(w + 1) % workers}'s shared key reads "
                                  f"{at!r}, after {last_seen[0]}")
        else:
            last_seen[0] = at

    async def worker(w: int) -> None:
        last_seen = [-1]
        await barrier.wait()
        for r in range(rounds):
            ops = [PutOp(own(w), keys[r], {"w": w, "round": r}),
                   GetOp(own(w), keys[r - 1] if r else keys[-1]),
                   SearchOp(own(w), None, EVERYTHING, 0),
                   ListNamespacesOp((MatchCondition("prefix", ("w",)),), None, EVERYTHING, 0),
                   PutOp(("shared",), f"w{w}", {"round": r}),
                   GetOp(("shared",), f"w{(w + 1) % workers}")]
            try:
                results = await call_batch(store, sides[w], ops)
            except TimeoutError:
                problems.add("error", f"worker {w} ({sides[w]}) batch {r} hung (no answer in "
                                      f"{OP_TIMEOUT_S:g} s)")
                return
            except Exception as exc:  # noqa: BLE001 - a batch that raises is evidence
                problems.add("error", f"worker {w} ({sides[w]}) batch {r} raised "
                                      f"{describe(exc)}")
                return
            judge(w, r, results, last_seen)

    async with anyio.create_task_group() as tg:
        for w in range(workers):
            tg.start_soon(worker, w)
    reader = store if handle.private_store else store_of(await ctx.reopen(handle))
    ctx.log("every worker done: " + ("the same instance" if handle.private_store else
                                     "a fresh instance") + " reads every key")
    final = await call_batch(reader, halves(reader, 1)[0],
                             [GetOp(own(w), key) for w in range(workers) for key in keys]
                             + [GetOp(("shared",), f"w{w}") for w in range(workers)])
    want = [{"w": w, "round": r} for w in range(workers) for r in range(rounds)]
    want += [{"round": rounds - 1}] * workers
    for n, (item, value) in enumerate(zip(final, want, strict=True)):
        if getattr(item, "value", None) != value:
            problems.add("lost", f"in the end, read {n} gave {item!r:.100}, want {value}")
    return problems.trial(ctx, "in_order")


CHECK = CheckSpec(
    id=CHECK_ID,
    invariant="mixed batches racing on one store object keep one result per op in op order, "
    "see every write that returned before them, never go back in time, and lose nothing",
    fault="workers released together, each running batches of put, get, search, "
    "list_namespaces, put and get on its own and a shared namespace, from threads (batch) and "
    "tasks (abatch) as the lane's class serves",
    params=(Param("workers", 6, 2, 16, "workers racing on one store object"),
            Param("rounds", 12, 1, 100, "batches per worker"),
            trials_param(RATE_TRIALS)),
    run_trial=run_trial,
    mutants=("lg_store_reference_lock_per_call", "lg_async_sqlite_store_lock_per_call"),
    generated=(Selector("lg-store-reference", "ReferenceStore.batch", "drop_lock"),
               Selector("lg-store-async-sqlite-file", "AsyncSqliteStore._cursor", "drop_lock")),
    timeout_s=60.0,
    reference="lg-store-reference",
)
