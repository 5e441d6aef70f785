"""Forked writer processes for the LangGraph fault checks (ARIB-LGCONC-002, ARIB-LGDUR-001,
ARIB-LGSETUP-001), on arib.checks._forked: each opens its own saver on the trial's store with the
lane's builder, waits for the parent's go, runs its plan one op at a time and acknowledges
each op over the pipe. Free-running, every writer runs its whole plan from one go; stepped
(under a trial's scheduler), every writer waits for a go before each op, and the parent
releases one writer's next op at a time, in the scheduler's order, once the last one was
acknowledged. Forked before the parent opens anything on the store (see arib.checks._forked).
On a lane whose store one process at a time may write, as its database documents
(arib.targets.langgraph.lanes.one_process), several writers abstain with those words once one of
them could not open the store beside another: the refusal seen is the verification."""

from __future__ import annotations

import inspect
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from arib.checks import _forked
from arib.checks._actors import to_thread
from arib.checks.base import NotApplicable, TrialContext, describe
from arib.checks.langgraph._faults import Op, Seen, judge, plan_length, read_threads, writer_plan
from arib.ground.model import Counts, Trial
from arib.ground.schedule import Scheduler, active
from arib.targets.langgraph.lanes import KIND, one_process

# What a writer runs: (its instance, seed, writer, thread, steps) -> ops, each with an async
# ``run(instance)`` and a ``label``; a checkpointer's ``writer_plan`` unless a check names another
# (ARIB-LGSTORE-013's store puts).
Plan = Callable[[Any, int, int, str, int], Sequence[Any]]
READY_TIMEOUT_S = 20.0


class RaisedText(str):
    """A problem's text that reports a call that raised (counted as ``raised``; a problem of
    any other kind, a writer that stopped answering or crashed, as ``wrong_result``)."""

    __slots__ = ()


def problem_counts(problems: Sequence[str]) -> Counts:
    """One count per problem: a ``RaisedText`` as ``raised``, any other as ``wrong_result``."""
    raised = sum(isinstance(problem, RaisedText) for problem in problems)
    return Counts(wrong_result=len(problems) - raised, raised=raised)


@dataclass
class Outcome:
    """What the parent heard from one writer."""

    acked: set[int] = field(default_factory=set)
    problems: list[str] = field(default_factory=list)
    finished: bool = False  # every op of its plan returned

    @property
    def over(self) -> bool:
        """Whether the writer will send nothing more (finished, or stopped at an error)."""
        return self.finished or bool(self.problems)


async def run_setup(saver: Any) -> bool:
    """``saver.setup()`` (awaited, or in a worker thread) where its class has one; whether it
    had one (a class without sets its store up in its constructor)."""
    setup = getattr(saver, "setup", None)
    if not callable(setup):
        return False
    if inspect.iscoroutinefunction(setup):
        await setup()
    else:
        await to_thread(setup)
    return True


def writer_body(ctx: TrialContext, writer: int, thread: str, steps: int,
                setup_at_go: bool = False, stepped: bool = False,
                plan_of: Plan = writer_plan) -> _forked.Body:
    """Open a saver on the trial's store, then, on go, run the writer's plan acking each op.
    ``setup_at_go``: open the saver only on go, and run its ``setup()`` (where its class has
    one) before the plan, so that every writer sets the store up at the same instant.
    ``stepped``: wait for a further go before every op after the first. ``plan_of`` makes
    the writer's ops (a store lane's instance is its store)."""
    target, build, seed = ctx.target, ctx.build, ctx.seed

    async def body(channel: _forked.Channel) -> None:
        if setup_at_go:
            channel.send({"ready": True})
            if not await channel.wait_go(READY_TIMEOUT_S):
                return
        try:
            handle = await target.build(build)
            if setup_at_go:
                await run_setup(handle.session)
        except NotApplicable as exc:  # the lane cannot exist on this release: no evidence
            channel.send({"not_applicable": str(exc)})
            return
        except Exception as exc:  # noqa: BLE001 - reported to the parent as evidence
            channel.send({"open_error": describe(exc)})
            return
        if handle.private_store:
            channel.send({"private": handle.private_store})
            return
        plan = plan_of(handle.session, seed, writer, thread, steps)
        if not setup_at_go:
            channel.send({"ready": True})
            if not await channel.wait_go(READY_TIMEOUT_S):
                return
        for n, op in enumerate(plan):
            if stepped and n and not await channel.wait_go(READY_TIMEOUT_S):
                return
            try:
                await op.run(handle.session)
            except Exception as exc:  # noqa: BLE001
                channel.send({"error": n, "what": f"{op.label}: {describe(exc)}"})
                break
            channel.send({"ack": n})
        else:
            channel.send({"finished": True})
        await channel.receive(3600)  # stay (instance open) until killed or the parent is gone

    return body


async def start(ctx: TrialContext, names: list[tuple[int, str]], steps: int,
                workers: list[_forked.Worker], setup_at_go: bool = False,
                stepped: bool = False, hold: bool = False,
                plan_of: Plan = writer_plan) -> list[str]:
    """Fork one writer per (writer, thread) into ``workers`` (the caller reaps them), wait
    until each is ready and release them together (``hold``: release none; the scheduler
    releases each op); what went wrong opening, per writer.
    Raises NotApplicable when a writer finds the store private to its instance, or its lane
    cannot exist on the installed release."""
    problems: list[str] = []
    for w, thread in names:
        workers.append(_forked.fork_worker(f"writer-{w}", writer_body(ctx, w, thread, steps,
                                                                       setup_at_go, stepped,
                                                                       plan_of),
                                           [fd for x in workers for fd in (x.read_fd, x.go_fd)]))
    deadline = time.monotonic() + READY_TIMEOUT_S
    for worker in workers:
        message = await _forked.next_message(worker, deadline) or {}
        if "not_applicable" in message:
            raise NotApplicable(str(message["not_applicable"]))
        if "private" in message:  # (with setup_at_go, found later: see collect)
            raise NotApplicable(f"{ctx.target.name!r}: {message['private']}; a second process "
                                f"cannot open it")
        if "open_error" in message:
            single_writer(ctx, len(names), worker, str(message["open_error"]))
        if "ready" not in message:
            text = f"{worker.name} could not open the store: " \
                   f"{message.get('open_error', 'no answer')}"
            problems.append(RaisedText(text) if "open_error" in message else text)
    if not hold:
        _forked.send_go(workers, time.monotonic() + 0.05)
    return problems


def single_writer(ctx: TrialContext, writers: int, worker: _forked.Worker, error: str) -> None:
    """Raise NotApplicable when the lane's store takes one writing process at a time (its
    documented words) and ``worker``, one of ``writers`` > 1, could not open it (``error``)."""
    why = one_process(ctx.target)
    if why is None or writers < 2:
        return
    raise NotApplicable(f"{ctx.target.name!r} keeps its store where one process at a time may "
                        f"write, as documented: {why}; seen here: {worker.name} of {writers} "
                        f"writer processes could not open it beside another: {error}")


def record(outcome: Outcome, message: dict[str, Any], name: str) -> None:
    """Fold one writer message into its outcome."""
    if "ack" in message:
        outcome.acked.add(int(message["ack"]))
    elif "error" in message:
        outcome.problems.append(RaisedText(f"{name} op {message['error']} raised "
                                           f"{message['what']}"))
    elif "finished" in message:
        outcome.finished = True
    elif "crash" in message or "garbled" in message:
        outcome.problems.append(f"{name}: {message}")


async def _read(ctx: TrialContext, worker: _forked.Worker, outcome: Outcome, deadline: float,
                until: int | None = None, writers: int = 1) -> None:
    """Fold the worker's messages into ``outcome`` until it is over or (``until``) has
    acknowledged op ``until``, or the deadline passes; raises NotApplicable when the writer
    found the store private to its instance, or, one of ``writers``, could not open a store
    that takes one writing process (``single_writer``)."""
    while not outcome.over and (until is None or until not in outcome.acked):
        message = await _forked.next_message(worker, deadline)
        if message is None:
            return
        if "not_applicable" in message:
            raise NotApplicable(str(message["not_applicable"]))
        if "private" in message:
            raise NotApplicable(f"{ctx.target.name!r} ({worker.name}): "
                                f"{message['private']}; a second process cannot open it")
        if "open_error" in message:
            single_writer(ctx, writers, worker, str(message["open_error"]))
            outcome.problems.append(RaisedText(f"{worker.name} could not open or set up the "
                                               f"store: {message['open_error']}"))
            return
        record(outcome, message, worker.name)


async def collect(ctx: TrialContext, workers: list[_forked.Worker],
                  names: list[tuple[int, str]], outcomes: dict[int, Outcome],
                  problems: list[str], timeout_s: float) -> None:
    """Read every writer's messages until it finished or stopped (a deadline for all).
    Raises NotApplicable when a writer found the store private to its instance."""
    deadline = time.monotonic() + timeout_s
    pairs = [(outcomes[w], worker) for (w, _), worker in zip(names, workers, strict=True)]
    for outcome, worker in pairs:
        await _read(ctx, worker, outcome, deadline, writers=len(workers))
        if not outcome.over:
            problems.append(f"{worker.name} stopped after {len(outcome.acked)} acks")


async def collect_scheduled(ctx: TrialContext, workers: list[_forked.Worker],
                            names: list[tuple[int, str]], outcomes: dict[int, Outcome],
                            problems: list[str], timeout_s: float, sched: Scheduler,
                            ops: int) -> None:
    """Release the writers' ops one at a time in the order the trial's scheduler picks (each
    waits for a go before every op), each after the last one's acknowledgement: every
    decision controlled, and a replay releases them in the same order."""
    deadline = time.monotonic() + timeout_s
    writers = {sched.new_process(f"writer {w}").id: (outcomes[w], worker)
               for (w, _), worker in zip(names, workers, strict=True)}
    stopped: set[int] = set()  # writers that answered nothing to their last go
    while time.monotonic() < deadline:
        live = [actor for actor, (outcome, _) in writers.items()
                if not outcome.over and len(outcome.acked) < ops and actor not in stopped]
        if not live:
            break
        pick = sched.decide(live)
        outcome, worker = writers[pick]
        op = len(outcome.acked)
        _forked.send_go([worker], time.monotonic())
        await _read(ctx, worker, outcome, deadline, until=op, writers=len(workers))
        if op not in outcome.acked and not outcome.over:
            stopped.add(pick)
    for outcome, worker in writers.values():
        await _read(ctx, worker, outcome, deadline, writers=len(workers))  # its "finished"
        if not outcome.over:
            problems.append(f"{worker.name} stopped after {len(outcome.acked)} acks")


def judged(ctx: TrialContext, saver: Any, names: list[tuple[int, str]], steps: int,
           outcomes: dict[int, Outcome], problems: list[str], seen: Seen,
           failed: str, clean: str) -> Trial:
    """The trial of forked writers: their plans (made again on ``saver``: same ids and
    values) and what they acknowledged, judged against ``seen``; ``problems`` (every
    writer's already folded in) make it ``failed``, a clean read-back ``clean``."""
    plan: list[Op] = []
    acked: set[int] = set()
    for w, thread in names:
        acked.update(len(plan) + n for n in outcomes[w].acked)
        plan.extend(writer_plan(saver, ctx.seed, w, thread, steps))
    found = judge(plan, acked, seen)
    counts = Counts(lost=found.lost, foreign=found.foreign + found.torn) + problem_counts(problems)
    mode = (failed if problems else "lossy" if found.lost else "foreign" if found.bad
            else clean)
    ctx.log(f"acknowledged {len(acked)} of {len(plan)} ops; {mode}")
    return Trial(ctx.index, ctx.seed, mode != clean, counts, mode=mode,
                 sample="; ".join([*problems, *found.notes][:3]) or None, ops=tuple(ctx.ops))


async def race_and_judge(ctx: TrialContext, names: list[tuple[int, str]], steps: int,
                         timeout_s: float, failed: str, clean: str,
                         setup_at_go: bool = False, scheduled: bool = False) -> Trial:
    """Fork one writer per (writer, thread), release them together (``scheduled``: one op at
    a time in the trial scheduler's order; else, under a scheduler, recorded as one
    uncontrolled release of all), collect what they acknowledged, reap them; then a fresh
    instance lists every thread and ``judged`` judges.
    Abstains on a store lane, from the lane's kind (opening the store here to ask its object,
    as ``saver_of`` does, would create the store before the writers fork)."""
    if KIND.get(ctx.target.name) == "store":
        raise NotApplicable(f"{ctx.target.name!r} is a store lane ({ctx.target.backend}), not "
                            f"a checkpointer: these forked writers put checkpoints")
    outcomes = {w: Outcome() for w, _ in names}
    workers: list[_forked.Worker] = []
    sched = active()
    scheduled = scheduled and sched is not None
    try:
        problems = await start(ctx, names, steps, workers, setup_at_go, scheduled,
                               hold=scheduled)
        if scheduled:
            assert sched is not None
            await collect_scheduled(ctx, workers, names, outcomes, problems, timeout_s, sched,
                                    plan_length(steps))
        else:
            if sched is not None:
                sched.released_together([sched.new_process(f"writer {w}").id
                                         for w, _ in names])
            await collect(ctx, workers, names, outcomes, problems, timeout_s)
    finally:
        _forked.reap(workers)
    for w, _ in names:
        problems.extend(outcomes[w].problems)
    ctx.log("every writer done: a fresh instance lists every thread")
    try:
        handle = await ctx.open()
        seen = await read_threads(handle.session, {thread for _, thread in names})
    except Exception as exc:  # noqa: BLE001 - a store that cannot be opened or read after
        mode = failed if problems else "read_raised"
        problems.append(RaisedText(f"a fresh instance could not read the store: "
                                   f"{describe(exc)}"))
        return Trial(ctx.index, ctx.seed, True, problem_counts(problems), mode=mode,
                     sample="; ".join(problems[:3]), ops=tuple(ctx.ops))
    return judged(ctx, handle.session, names, steps, outcomes, problems, seen, failed, clean)
