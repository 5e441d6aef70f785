"""ARIB-ATOM-001: a write that fails changes nothing, and undoes nothing acknowledged before it.

Agent code hands the session whatever a tool or a model produced; sooner or later one item
of a batch cannot be stored (here: a value JSON cannot encode, the commonest case, which
every backend rejects or stringifies before or inside its write transaction). The caller
sees the exception, keeps going, and relies on two things: the failed batch left none of its
items, and every write the session acknowledged before it is still there. A backend that
leaves its transactions open (a missing commit) breaks the second silently: the failed
write's rollback takes the earlier, acknowledged appends, pops or clears with it.

One trial is a seeded sequence of ``steps`` operations on one session: every second one is
a failing append (a batch with one item JSON cannot encode at a seeded position), the others
a seeded shuffle of appends of small batches, two pops (also of an empty history) and two
clears. After every failing append and at
the end, ``get_items()`` must equal the model of the acknowledged operations. A backend
that accepts the unencodable item (EncryptedSession stringifies it) has acknowledged that
write: its items then count as stored, compared by position only. No acknowledged-good
operation may raise, and a pop must return the newest stored item.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from arib.checks.base import CheckSpec, Param, Selector, TrialContext, describe
from arib.checks.common import canonical, label, read_items, trials_param
from arib.ground.model import Counts, Trial

# Stands for an item of an acknowledged write whose stored form the backend chose (it
# stringified the unencodable value): it matches any item at its position.
ANY = object()


class Unencodable:
    """A value json.dumps refuses (no default): a tool result nobody converted."""

    def __init__(self, tag: str) -> None:
        self.tag = tag

    def __repr__(self) -> str:
        return f"Unencodable({self.tag!r})"

    __str__ = __repr__


@dataclass(frozen=True)
class Mismatch:
    """How a read differs from the model: the mode, a sample and the counts."""

    mode: str
    sample: str
    counts: Counts


def compare(seen: list[Any], model: list[Any], failed: set[str]) -> Mismatch | None:
    """None when ``seen`` is ``model`` (``ANY`` matches any item); else the first defect."""
    if len(seen) == len(model) and all(want is ANY or canonical(got) == canonical(want)
                                       for got, want in zip(seen, model, strict=True)):
        return None
    texts = {canonical(i) for i in model if i is not ANY}
    leaked = [i for i in seen if canonical(i) in failed]
    lost = [i for i in model if i is not ANY and canonical(i) not in {canonical(s) for s in seen}]
    counts = Counts(lost=len(lost), foreign=len(leaked))
    shown = f"read {[label(i) for i in seen[:6]]} ({len(seen)} items), expected {len(model)}"
    if leaked:
        return Mismatch("failed_write_left_items",
                        f"{label(leaked[0])} of a write that raised is stored; {shown}", counts)
    if lost:
        return Mismatch("acknowledged_write_undone",
                        f"{label(lost[0])} was acknowledged and is gone; {shown}", counts)
    extra = [i for i in seen if canonical(i) not in texts]
    mode = "popped_or_cleared_item_back" if extra else "history_diverged"
    return Mismatch(mode, shown, counts + Counts(foreign=len(extra)))


async def run_trial(ctx: TrialContext) -> Trial:
    """One trial: good writes alternate with failing appends; reads must show only the good.

    Long (over 80 lines) on purpose: the trial is one scenario read top to bottom, and its
    concurrent tasks are closures over the trial's state; split up, that state would be
    threaded through every helper.
    """
    steps = ctx.params["steps"]
    session = (await ctx.open()).session
    tag = f"{ctx.seed:016x}"
    model: list[Any] = []
    batch: list[dict[str, Any]]
    failed: set[str] = set()

    def done(mode: str, sample: str, counts: Counts) -> Trial:
        return Trial(ctx.index, ctx.seed, True, counts, mode=mode,
                     sample=sample, ops=tuple(ctx.ops))

    async def check_read(after: str) -> Trial | None:
        ctx.log("get_items()")
        try:
            seen = await read_items(session)
        except Exception as exc:  # noqa: BLE001 - a read that raises shows nothing
            return done("read_raised", f"get_items() after {after} raised {describe(exc)}",
                        Counts(raised=1))
        found = compare(seen, model, failed)
        return None if found is None else done(found.mode, f"after {after}: {found.sample}",
                                               found.counts)

    # Every second operation is a failing append; the others are a seeded shuffle holding
    # appends, two pops and two clears (the first is an append), so that each kind of
    # acknowledged write is followed by a failure in every trial.
    good = ["pop", "pop", "clear", "clear"] + ["add"] * max(steps // 2 - 5, 1)
    ctx.rng.shuffle(good)
    plan = [kind for g in ["add", *good] for kind in (g, "fail")][:steps]
    for step, kind in enumerate(plan):
        name = f"s{step}"
        if kind == "add":
            batch = [{"role": "user", "content": f"{tag}-{name}-{i}"}
                     for i in range(ctx.rng.randint(1, 3))]
            ctx.log(f"add_items([{', '.join(label(i) for i in batch)}])")
            try:
                await session.add_items(batch)
            except Exception as exc:  # noqa: BLE001 - a good write that raises is evidence
                return done("good_write_raised", f"add_items({name}) raised {describe(exc)}",
                            Counts(raised=1))
            model.extend(batch)
        elif kind == "fail":
            size = ctx.rng.randint(2, 4)
            bad_at = ctx.rng.randrange(size)
            batch = [{"role": "user", "content": f"{tag}-{name}-{i}"} if i != bad_at else
                     {"role": "user", "content": Unencodable(f"{tag}-{name}")}
                     for i in range(size)]
            ctx.log(f"add_items([{size} items, item {bad_at} not JSON-encodable])")
            try:
                await session.add_items(batch)
            except Exception as exc:  # noqa: BLE001 - the refusal this check provokes
                ctx.log(f"  raised {describe(exc)}")
                failed.update(canonical(i) for i in batch if i["content"].__class__ is str)
            else:
                ctx.log("  acknowledged (the backend stored the value in a form it chose)")
                model.extend(ANY if i == bad_at else item for i, item in enumerate(batch))
            verdict = await check_read(f"the failing add_items({name})")
            if verdict is not None:
                return verdict
        elif kind == "pop":
            ctx.log("pop_item()")
            try:
                popped = await session.pop_item()
            except Exception as exc:  # noqa: BLE001 - a pop that raises is evidence
                return done("good_write_raised", f"pop_item() raised {describe(exc)}",
                            Counts(raised=1))
            want = model.pop() if model else None
            if (want is None) != (popped is None) or (
                    want not in (None, ANY) and canonical(popped) != canonical(want)):
                return done("pop_wrong_item", f"pop_item() returned "
                            f"{label(popped) if popped is not None else None}, expected "
                            f"{label(want) if want not in (None, ANY) else want}", Counts(lost=1))
        else:
            ctx.log("clear_session()")
            try:
                await session.clear_session()
            except Exception as exc:  # noqa: BLE001 - a clear that raises is evidence
                return done("good_write_raised", f"clear_session() raised {describe(exc)}",
                            Counts(raised=1))
            model.clear()
    verdict = await check_read("the last operation")
    if verdict is not None:
        return verdict
    return Trial(ctx.index, ctx.seed, False, Counts(), mode="unchanged_by_failed_writes",
                 ops=tuple(ctx.ops))


CHECK = CheckSpec(
    id="ARIB-ATOM-001",
    invariant="a write that fails changes nothing: none of its items is stored, and no append, "
    "pop or clear acknowledged before it is undone",
    fault="seeded sequences of appends, pops and clears interleaved with appends of a batch "
    "holding one item JSON cannot encode, on one session",
    params=(
        Param("steps", 16, 2, 200, "operations per trial: every second one is a failing "
              "append, the first an append"),
        trials_param(4),
    ),
    run_trial=run_trial,
    mutants=(
        "reference_add_batch_item_by_item",
        "reference_writes_commit_lazily",
        "sqlite_writes_commit_lazily",
    ),
    generated=(
        Selector("sqlite-memory", "SQLiteSession.add_items.<locals>._add_items_sync",
                 "drop_commit"),
        Selector("sqlite-memory", "SQLiteSession.clear_session.<locals>._clear_session_sync",
                 "drop_commit"),
    ),
    timeout_s=60.0,
)
