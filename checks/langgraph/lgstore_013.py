"""ARIB-LGSTORE-013 (issue 35): several processes starting on one fresh store at once (the worker
processes of a deployment) all set it up, and the store keeps what each then writes.

``processes`` writers are forked before the store exists (``arib.checks.langgraph._writers``, as
ARIB-LGSETUP-001 does for savers); released at one instant, each opens its own store on the
trial's fresh database with the lane's builder (which runs ``setup()``, as an application does
first) and runs ``setup()`` again, then puts ``steps`` items, half of the writers in a namespace
of their own and half in one they share, acknowledging each put. Every open, setup and put
must succeed, and a fresh instance must then read back every acknowledged item with its value,
and nothing the writers did not put. A lane whose store lives in one instance's memory
abstains (the writers find it on their instance).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from arib.checks import _forked
from arib.checks.base import CheckSpec, NotApplicable, Param, Selector, TrialContext, describe
from arib.checks.common import trials_param
from arib.checks.langgraph import _writers
from arib.checks.langgraph._saver import store_call, store_of
from arib.ground.model import Counts, Trial
from arib.targets.langgraph.lanes import KIND

CHECK_ID = "ARIB-LGSTORE-013"
RUN_TIMEOUT_S = 30.0


@dataclass(frozen=True)
class StorePut:
    """One put of a writer's plan."""

    ns: tuple[str, ...]
    key: str
    value: dict[str, Any] = field(default_factory=dict)

    @property
    def label(self) -> str:
        """How the put is named in samples."""
        return f"put {self.ns} {self.key}"

    async def run(self, store: Any) -> None:
        """Put the item through the half of the interface the lane serves."""
        await store_call(store, "put", self.ns, self.key, self.value)


def store_plan(store: Any, seed: int, writer: int, thread: str, steps: int) -> list[StorePut]:
    """``steps`` puts of ``writer`` in namespace ``("setup", thread)``."""
    return [StorePut(("setup", thread), f"w{writer}-{step}",
                     {"seed": f"{seed:x}", "w": writer, "step": step}) for step in range(steps)]


async def run_trial(ctx: TrialContext) -> Trial:
    """One trial: forked instances set one fresh store up at the same instant, then put."""
    if KIND.get(ctx.target.name) != "store":
        raise NotApplicable(f"{ctx.target.name!r} is not a store lane ({ctx.target.backend})")
    processes, steps = ctx.params["processes"], ctx.params["steps"]
    shared = f"t{ctx.seed:x}-shared"
    names = [(w, shared if w % 2 else f"t{ctx.seed:x}-{w}") for w in range(processes)]
    ctx.rng.shuffle(names)
    ctx.log(f"fork {processes} processes before the store exists (order {[w for w, _ in names]});"
            f" at one instant each opens a store on it (the builder runs setup()) and runs "
            f"setup() again, then puts {steps} items (odd writers in ('setup', {shared!r}), "
            f"even ones in their own namespace)")
    outcomes = {w: _writers.Outcome() for w, _ in names}
    workers: list[_forked.Worker] = []
    try:
        problems = await _writers.start(ctx, names, steps, workers, setup_at_go=True,
                                        plan_of=store_plan)
        await _writers.collect(ctx, workers, names, outcomes, problems, RUN_TIMEOUT_S)
    finally:
        _forked.reap(workers)
    for w, _ in names:
        problems.extend(outcomes[w].problems)
    ctx.log("every writer done: a fresh instance reads every namespace")
    lost: list[str] = []
    foreign: list[str] = []
    try:
        reader = store_of(await ctx.open())
        for thread in sorted({thread for _, thread in names}):
            want = {put.key: put.value for w, t in names if t == thread
                    for n, put in enumerate(store_plan(reader, ctx.seed, w, t, steps))
                    if n in outcomes[w].acked}
            planned = {put.key for w, t in names if t == thread
                       for put in store_plan(reader, ctx.seed, w, t, steps)}
            found = await store_call(reader, "search", ("setup", thread), limit=10 * steps + 10)
            seen = {item.key: item.value for item in found}
            lost += [f"acknowledged put ('setup', {thread!r}) {key} is missing or reads "
                     f"{seen.get(key)!r:.60}" for key in sorted(want) if seen.get(key) != want[key]]
            foreign += [f"('setup', {thread!r}) {key} was never put" for key in sorted(seen)
                        if key not in planned]
    except Exception as exc:  # noqa: BLE001 - a store that cannot be opened or read after
        problems.append(_writers.RaisedText(f"a fresh instance could not read the store: "
                                            f"{describe(exc)}"))
    acked = sum(len(o.acked) for o in outcomes.values())
    mode = ("setup_failed" if problems else "lossy" if lost else "foreign" if foreign
            else "working")
    ctx.log(f"acknowledged {acked} of {processes * steps} puts; {mode}")
    return Trial(ctx.index, ctx.seed, mode != "working",
                 Counts(lost=len(lost), foreign=len(foreign)) + _writers.problem_counts(problems),
                 mode=mode,
                 sample="; ".join([*problems, *lost, *foreign][:3]) or None, ops=tuple(ctx.ops))


CHECK = CheckSpec(
    id=CHECK_ID,
    invariant="several processes opening one fresh store at once all set it up (each its own "
    "setup() too), and every item they then put is read back",
    fault="processes forked before the store exists, released at one instant to open a store "
    "on it, run setup() and put items, half of them in one shared namespace",
    params=(
        Param("processes", 4, 2, 16, "instances, each in its own process"),
        Param("steps", 3, 1, 50, "items each instance puts after setup"),
        trials_param(4),
    ),
    run_trial=run_trial,
    mutants=("lg_store_reference_tables_checked_then_made",),
    generated=(Selector("lg-store-reference", "make_store_tables", "drop_if_not_exists"),),
    timeout_s=60.0,
    reference="lg-store-reference",
)
