"""ARIB-LGCLOSE-001: a saver's context manager exiting while work is in flight keeps every
acknowledged op, tears none, and a saver used after the exit refuses (or keeps what it took).

The savers have no close(); the one way their packages end a saver is the context manager of
``from_conn_string`` (it closes the connection it opened). On the trial's store (a file in its
folder, or, for the PostgreSQL savers, the trial's schema on the harness's PostgreSQL):
enter ``from_conn_string``, put a base checkpoint, then release ``writers`` writers (tasks on
an async class, threads on a sync one; a class serving both: even trials tasks, odd threads),
each putting ``steps`` checkpoints with writes on a thread of its own, and exit the context
manager after a seeded number of yields (tasks) or a seeded pause (threads), concurrently.
Each writer stops at its first error (after the exit, refusal is expected). All of it runs in
a forked process, which reports what was acknowledged: a process that dies (a crash in the
driver) is a violation with its signal as evidence. Then:

- the process lives, and the exit returns (no hang, no exception);
- one more put through the exited saver: it must raise, or be kept like any acknowledged op;
- a fresh context manager on the file lists every thread: every acknowledged op is there,
  the op a writer was in when refused is wholly there or absent, nothing foreign.

A class with no ``from_conn_string`` makes no close claim, a lane whose store lives in one
instance's memory cannot be read after the exit, and a saver that keeps only a thread's latest
checkpoint cannot keep the writers' several: all abstain, naming what they found.
"""

from __future__ import annotations

import contextlib
import faulthandler
import functools
import time
from typing import Any

import anyio
import anyio.to_thread

from arib.checks import _forked
from arib.checks._bounds import hang_bound
from arib.checks.base import (
    Barrier,
    CheckSpec,
    NotApplicable,
    Param,
    Selector,
    TrialContext,
    describe,
    race_threads,
)
from arib.checks.common import trials_param
from arib.checks.langgraph._faults import Op, judge, read_threads, writer_plan
from arib.checks.langgraph._opening import conn_string, enter, leave, on_server
from arib.checks.langgraph.lgconc_001 import mode_of
from arib.ground.model import Counts, Trial
from arib.targets.langgraph.lanes import latest_only

CHECK_ID = "ARIB-LGCLOSE-001"


async def _race(saver: Any, cm: Any, mode: str, delay: int, plans: dict[int, list[Op]],
                acked: dict[int, set[int]], refused: list[str]) -> BaseException | None:
    """Writers and the exit released together; what the exit raised, if anything."""
    exit_error: list[BaseException] = []

    async def do_exit(in_thread: bool) -> None:
        try:
            await leave(cm, in_thread)
        except Exception as exc:  # noqa: BLE001 - evidence
            exit_error.append(exc)

    if mode == "tasks":
        barrier = Barrier(len(plans) + 1)

        async def closer() -> None:
            await barrier.wait()
            for _ in range(delay):
                await anyio.sleep(0)
            await do_exit(False)

        async def writer(w: int) -> None:
            await barrier.wait()
            for n, op in enumerate(plans[w]):
                try:
                    await op.run(saver)
                except Exception as exc:  # noqa: BLE001 - refusal after the exit
                    refused.append(f"writer {w} op {n}: {describe(exc)}")
                    return
                acked[w].add(n)
                await anyio.sleep(0)

        async with anyio.create_task_group() as tg:
            tg.start_soon(closer)
            for w in plans:
                tg.start_soon(writer, w)
    else:
        def sync_closer() -> None:
            time.sleep(delay / 4000)
            try:
                cm.__exit__(None, None, None)
            except Exception as exc:  # noqa: BLE001 - evidence
                exit_error.append(exc)

        def sync_writer(w: int) -> None:
            for n, op in enumerate(plans[w]):
                try:
                    op.run_sync(saver)
                except Exception as exc:  # noqa: BLE001 - refusal after the exit
                    refused.append(f"writer {w} op {n}: {describe(exc)}")
                    return
                acked[w].add(n)

        await race_threads([sync_closer, *(functools.partial(sync_writer, w) for w in plans)])
    return exit_error[0] if exit_error else None


def _body(cls: type, path: str, mode: str, delay: int, base: list[Op],
          plans: dict[int, list[Op]], after: Op, bound_s: float) -> _forked.Body:
    """The forked process: enter the context, race the writers and the exit (at most
    ``bound_s``: a task stuck longer is reported hung), use the exited saver once, and report
    it all in one message."""

    async def body(channel: _forked.Channel) -> None:
        faulthandler.disable()  # a crash here is evidence (its signal), not a traceback dump
        cm = cls.from_conn_string(path)  # type: ignore[attr-defined]
        try:
            saver = await enter(cm)
            for op in base:
                await op.run(saver)
        except Exception as exc:  # noqa: BLE001 - reported as evidence
            channel.send({"open_error": describe(exc)})
            return
        acked: dict[int, set[int]] = {w: set() for w in plans}
        refused: list[str] = []
        with anyio.move_on_after(bound_s) as scope:
            exit_error = await _race(saver, cm, mode, delay, plans, acked, refused)
        if scope.cancel_called:
            channel.send({"hung": True})
            return
        refusal = ""
        try:
            await after.run(saver)
        except Exception as exc:  # noqa: BLE001 - the expected refusal
            refusal = describe(exc)
        channel.send({"acked": {str(w): sorted(ns) for w, ns in acked.items()},
                      "refused": refused, "accepted": not refusal, "refusal": refusal,
                      "exit_error": describe(exit_error) if exit_error else ""})

    return body


async def run_trial(ctx: TrialContext) -> Trial:
    """One trial: from_conn_string's context exits while writers are in flight."""
    writers, steps = ctx.params["writers"], ctx.params["steps"]
    probe = await ctx.open()
    cls = type(probe.session)
    if not callable(getattr(cls, "from_conn_string", None)):
        raise NotApplicable(f"{CHECK_ID} does not apply to {ctx.target.name!r}: {cls.__name__} "
                            f"has no close() and no from_conn_string context manager, so it "
                            f"makes no close claim")
    if probe.private_store:
        raise NotApplicable(f"{CHECK_ID} does not apply to {ctx.target.name!r}: "
                            f"{probe.private_store}; nothing can read it after the exit")
    no_history = latest_only(probe.session)
    if no_history:  # every writer puts several checkpoints on its thread; one is kept
        raise NotApplicable(f"{CHECK_ID} does not apply to {ctx.target.name!r}: {no_history}")
    server = on_server(ctx.target, cls)
    mode = mode_of(probe.session, ctx.index)
    await ctx.dispose()
    # The store the probe set up: a file of the trial's folder, or the trial's own schema on
    # the harness's PostgreSQL (its tables made by the probe's setup()).
    try:
        path = conn_string(ctx.target, cls, ctx.build)
    except NotApplicable as exc:
        raise NotApplicable(f"{CHECK_ID} opens from_conn_string on a SQLite file or on the "
                            f"harness's PostgreSQL: {exc}") from None
    delay = ctx.rng.randint(0, 4 * steps)
    shown = "<the trial's PostgreSQL schema>" if server else repr(path)
    ctx.log(f"{cls.__name__}.from_conn_string({shown}): enter; put a base checkpoint; as "
            f"{mode}: {writers} writers x {steps} (put; put_writes) on their own threads, and "
            f"exit the context after {delay} {'yields' if mode == 'tasks' else '/4 ms'}")
    base = writer_plan(probe.session, ctx.seed, writers, f"t{ctx.seed:x}-base", 1)
    plans = {w: writer_plan(probe.session, ctx.seed, w, f"t{ctx.seed:x}-{w}", steps)
             for w in range(writers)}
    after = writer_plan(probe.session, ctx.seed, writers + 1, f"t{ctx.seed:x}-after", 1)[0]
    ctx.log("all of it in a forked process (so that a crash of it is evidence, not the end of "
            "the trial); it reports what was acknowledged")
    # A call that does not return is a finding of its own (``hung``), reported before the
    # harness's limit for the run: the child gives up on its tasks at 0.8 of the bound, this
    # process on the child (stuck in a thread) at the bound.
    bound = hang_bound(ctx)
    worker = _forked.fork_worker("closer", _body(cls, path, mode, delay, base, plans, after,
                                                 0.8 * bound))
    try:
        report = await _forked.next_message(worker, time.monotonic() + bound)
        stuck = report is None and not worker.eof
    finally:
        _forked.reap([worker])
    if not report or "open_error" in report or "hung" in report:
        what = (f"the exit or a writer did not return within {bound:.1f} s" if stuck or
                (report and "hung" in report) else
                f"the process ended without a report: {worker.describe_exit()}" if not report
                else f"entering or using the context raised {report['open_error']}")
        ctx.log(what)
        mode_name = ("hung" if stuck or (report and "hung" in report) else "crashed"
                     if not report else "open_failed")
        # an open that raised is an exception; a hang or a crash, no answer (a wrong result)
        counts = Counts(raised=1) if mode_name == "open_failed" else Counts(wrong_result=1)
        return Trial(ctx.index, ctx.seed, True, counts, mode=f"{mode}:{mode_name}",
                     sample=what, ops=tuple(ctx.ops))
    acked = {int(w): set(ns) for w, ns in report["acked"].items()}
    exit_error, accepted = report["exit_error"], report["accepted"]
    ctx.log(f"exit {'raised ' + exit_error if exit_error else 'returned'}; "
            f"{sum(map(len, acked.values()))} ops acknowledged, {len(report['refused'])} "
            f"writers refused; after the exit, through the exited saver: {after.label}: "
            f"{'returned' if accepted else 'refused: ' + report['refusal']}")
    ctx.log("a fresh from_conn_string on the store lists every thread")
    plan = [*base, after]
    done = {0, 1} | ({2} if accepted else set())
    for w in plans:
        done.update(len(plan) + n for n in acked[w])
        plan.extend(plans[w])
    try:
        reader_cm = cls.from_conn_string(path)
        reader = await enter(reader_cm)
        try:
            seen = await read_threads(reader, {op.thread for op in plan})
        finally:
            with contextlib.suppress(Exception):
                await leave(reader_cm, in_thread=True)
    except Exception as exc:  # noqa: BLE001 - the file cannot be read after the exit
        return Trial(ctx.index, ctx.seed, True, Counts(raised=1), mode="read_raised",
                     sample=describe(exc), ops=tuple(ctx.ops))
    found = judge(plan, done, seen)
    problems = [f"the exit raised {exit_error}"] if exit_error else []
    counts = Counts(lost=found.lost, foreign=found.foreign + found.torn, raised=len(problems))
    after_lost = accepted and seen.get(after.thread, {}).get(after.checkpoint_id) is None
    if problems:
        result = "exit_raised"
    elif after_lost:
        result = "accepted_after_exit_then_lost"
    elif found.bad:
        result = "lossy" if found.lost else "foreign"
    else:
        result = "kept_after_exit" if accepted else "refused_after_exit"
    bad = bool(problems) or found.bad
    return Trial(ctx.index, ctx.seed, bad, counts, mode=f"{mode}:{result}",
                 sample="; ".join([*problems, *found.notes][:3]) or None, ops=tuple(ctx.ops))


CHECK = CheckSpec(
    id=CHECK_ID,
    invariant="a from_conn_string context exiting while puts and writes are in flight returns, "
    "keeps every acknowledged op whole, and the exited saver refuses a put or keeps it",
    fault="the context manager exits after seeded yields (or a seeded pause) while writers "
    "put checkpoints and writes; then one more put through the exited saver",
    params=(
        Param("writers", 3, 1, 16, "writers in flight when the context exits"),
        Param("steps", 4, 1, 100, "checkpoints (each with its writes) per writer"),
        trials_param(12, "independent trials (the exit lands at a seeded point of the race)"),
    ),
    run_trial=run_trial,
    mutants=("lg_reference_exit_leaves_a_scratch_store",
             "lg_async_sqlite_exit_leaves_a_scratch_store",
             "lg_sqlite_exit_leaves_a_scratch_store"),
    generated=(
        Selector("lg-async-sqlite-file", "AsyncSqliteSaver.from_conn_string", "early_return"),
    ),
    timeout_s=60.0,
)
