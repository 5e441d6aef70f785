"""ARIB-LGHANG-001: every call of many runs sharing one saver returns, and what they
acknowledged reads back.

A deployment serves many runs with one saver object: a server that opens ``async with
AsyncPostgresSaver.from_conn_string(DB_URI) as checkpointer`` at startup, LangGraph's own
server, the parallel branches and subgraphs of one run. Their calls come at once, from tasks (an
async class) or threads (a sync one), and meanwhile another worker of the deployment starts on
the same store. A saver that lets two of those calls interleave where they must not (two
pipelines on one connection, a read inside another call's transaction) raises, or never returns:
the run is stuck, with no error to retry on.

Each trial runs in a forked process (a call that never returns, or a crash, stays there and is
evidence), on a store of its own that nothing has used yet. It opens the saver the lane's way on
even trials and, where the class has one, with its own ``from_conn_string`` on odd ones (a class
with none that is a context manager itself, as InMemorySaver is: the lane's saver entered as
one, ``async with saver as s``); answers a first state request (list and get of a thread that
does not exist yet: the store's first call); puts a thread D with writes; then releases together
``writers`` runs (each putting ``steps`` checkpoints with a task's writes on a thread of its
own), ``readers`` readers (each listing a writer's thread and getting its latest checkpoint,
again and again until the writers are done) and a deleter (``delete_thread(D)`` after a seeded
pause, where the class offers it). Then the first instance answers a state request (list and
get); where ``from_conn_string`` takes ``pipeline``, an instance opened with ``pipeline=True``
answers one too and stays idle (its pipeline's implicit transaction open, as a worker's is
between requests); and a second instance of the deployment opens on the store (with its setup;
on a store that lives in the first instance's connection, a second saver on that connection),
puts a checkpoint with writes and reads. Judged:

- every call returns within a bound (``arib.checks._bounds.hang_bound``), else ``hung``, naming the
  calls in flight; none raises, else ``raised``; the process lives, else ``crashed``;
- every read during the race gives only checkpoints with the values that were put;
- a fresh instance reads back every acknowledged checkpoint and write (on a saver that keeps a
  thread's latest checkpoint only: the latest and its writes), nothing foreign, nothing of D.

Tasks on async classes, threads on sync ones; a class serving both halves: trials 0-1 tasks,
2-3 threads. A lane whose store is the first instance's own object (InMemorySaver) has no
second instance.
"""

from __future__ import annotations

import faulthandler
import functools
import inspect
import threading
import time
from dataclasses import dataclass, field
from typing import Any

import anyio

from arib.checks import _forked
from arib.checks._bounds import hang_bound
from arib.checks.base import (
    Barrier,
    CheckSpec,
    NotApplicable,
    Param,
    Selector,
    TrialContext,
    race_threads,
)
from arib.checks.common import trials_param
from arib.checks.langgraph._faults import Op, Seen, judge, writer_plan
from arib.checks.langgraph._opening import conn_string, enter, leave
from arib.checks.langgraph._saver import config, offers
from arib.checks.langgraph._served import Calls, Raised, forked_report
from arib.checks.langgraph._writers import run_setup
from arib.checks.langgraph.lgconc_001 import mode_of
from arib.ground.model import Counts, Trial
from arib.targets.base import BuildContext, TargetSpec
from arib.targets.langgraph.lanes import KIND, api_of, kind_of, latest_only
from arib.targets.langgraph.services import quietly

CHECK_ID = "ARIB-LGHANG-001"
MAX_READS = 12  # per reader: it stops earlier when the writers are done


@dataclass(frozen=True)
class Setting:
    """How one trial opens and drives its saver (all of it picklable-free: the fork copies)."""

    target: TargetSpec
    build: BuildContext  # the trial's own store for the run
    cls: type
    opening: str  # "lane", "from_conn_string" or "own_context"
    path: str  # from_conn_string's argument ("" for the lane's way)
    piped: str  # from_conn_string's argument for a pipelined reader ("": the class takes none)
    mode: str  # "tasks" or "threads"
    private: bool  # the store lives in its one instance: no second instance reaches it
    seed: int
    writers: int
    steps: int
    readers: int
    delay: int  # the deleter's seeded pause: yields (tasks) or 1/2000 s (threads)


@dataclass
class State:
    """What the child saw and acknowledged."""

    plans: dict[str, list[Op]] = field(default_factory=dict)  # actor -> its ops
    acked: dict[str, set[int]] = field(default_factory=dict)
    foreign: list[str] = field(default_factory=list)
    deleted: bool = False  # delete_thread(D) returned
    can_delete: bool = False


async def _open(s: Setting, keep: list[Any]) -> Any:
    """A saver on the run's store, opened the trial's way (kept alive in ``keep``)."""
    if s.opening in ("lane", "own_context"):
        handle = await s.target.build(s.build)
        keep.append(handle)
        if s.opening == "lane":
            return handle.session
        keep.append(handle.session)  # ``with saver as s:``, the saver its own context manager
        got = await (handle.session.__aenter__() if s.mode == "tasks" else
                     anyio.to_thread.run_sync(handle.session.__enter__))
        if kind_of(got) != "checkpointer":
            raise TypeError(f"entering {type(handle.session).__name__} as its own context "
                            f"manager gave {type(got).__name__}, not a saver")
        return got
    cm = s.cls.from_conn_string(s.path)  # type: ignore[attr-defined]
    keep.append(cm)
    saver = await enter(cm)
    await run_setup(saver)
    return saver


async def _piped(s: Setting) -> tuple[Any, Any]:
    """An instance by ``from_conn_string(..., pipeline=True)`` on the set-up store, set up;
    (saver, its context manager)."""
    cm = s.cls.from_conn_string(s.piped, pipeline=True)  # type: ignore[attr-defined]
    saver = await enter(cm)
    await run_setup(saver)
    return saver, cm


async def _second(s: Setting, first: Any, keep: list[Any]) -> Any:
    """Another instance of the deployment on the store: opened the trial's way; on a store
    that lives in the first instance's connection, a second saver of the class on that very
    connection (as an application makes one per graph around one connection); None where
    neither exists (the store is the first instance's own object)."""
    if not s.private:
        return await _open(s, keep)
    conn = getattr(first, "conn", None)
    if conn is None:
        return None
    second = quietly(type(first), conn)
    await run_setup(second)
    return second


def _values(plans: dict[str, list[Op]]) -> dict[tuple[str, str], dict[str, Any]]:
    return {(op.thread, op.checkpoint_id): dict(op.checkpoint["channel_values"])
            for ops in plans.values() for op in ops if op.kind == "put"}


def _check_read(state: State, what: str, tuples: list[Any]) -> None:
    """Every tuple a read gave has the values put for its checkpoint (else foreign)."""
    values = _values(state.plans)
    for item in tuples:
        if item is None:
            continue
        conf = item.config["configurable"]
        key = (str(conf["thread_id"]), str(item.checkpoint["id"]))
        want = values.get(key)
        if want is None or dict(item.checkpoint.get("channel_values", {})) != want:
            state.foreign.append(f"{what} gave {key[0]}/{key[1]} with "
                                 f"{dict(item.checkpoint.get('channel_values', {}))!r:.100}")


async def _get(calls: Calls, saver: Any, thread: str, state: State) -> None:
    """List the thread and get its latest checkpoint (a state request: history, then the
    current state), through the lane's half."""
    if api_of(saver) == "sync":
        listed = await anyio.to_thread.run_sync(functools.partial(
            calls.run_sync, f"list {thread}", lambda: list(saver.list(config(thread)))))
        got = await anyio.to_thread.run_sync(functools.partial(
            calls.run_sync, f"get_tuple {thread}", lambda: saver.get_tuple(config(thread))))
    else:
        async def alist() -> list[Any]:
            return [item async for item in saver.alist(config(thread))]

        listed = await calls.run(f"alist {thread}", alist)
        got = await calls.run(f"aget_tuple {thread}", lambda: saver.aget_tuple(config(thread)))
    _check_read(state, f"read of {thread}", [got, *listed])


async def _race_tasks(s: Setting, saver: Any, calls: Calls, state: State, d: str) -> None:
    writers = [f"w{w}" for w in range(s.writers)]
    barrier = Barrier(len(writers) + s.readers + 1)
    left = [len(writers)]

    async def writer(name: str) -> None:
        await barrier.wait()
        try:
            for n, op in enumerate(state.plans[name]):
                await calls.run(op.label, functools.partial(op.run, saver))
                state.acked[name].add(n)
                await anyio.sleep(0)
        except Raised:
            pass
        finally:
            left[0] -= 1

    async def reader(r: int) -> None:
        await barrier.wait()
        thread = state.plans[writers[r % len(writers)]][0].thread
        try:
            for _ in range(MAX_READS):
                if not left[0]:
                    return
                await _get(calls, saver, thread, state)
                await anyio.sleep(0)
        except Raised:
            pass

    async def deleter() -> None:
        await barrier.wait()
        for _ in range(s.delay):
            await anyio.sleep(0)
        if state.can_delete:
            try:
                await calls.run(f"adelete_thread {d}", lambda: saver.adelete_thread(d))
                state.deleted = True
            except Raised:
                pass

    async with anyio.create_task_group() as tg:
        for name in writers:
            tg.start_soon(writer, name)
        for r in range(s.readers):
            tg.start_soon(reader, r)
        tg.start_soon(deleter)


async def _race_threads(s: Setting, saver: Any, calls: Calls, state: State, d: str) -> None:
    writers = [f"w{w}" for w in range(s.writers)]
    done = threading.Event()
    left = [len(writers)]
    lock = threading.Lock()
    values = _values(state.plans)

    def writer(name: str) -> None:
        try:
            for n, op in enumerate(state.plans[name]):
                calls.run_sync(op.label, functools.partial(op.run_sync, saver))
                state.acked[name].add(n)
        except Raised:
            pass
        finally:
            with lock:
                left[0] -= 1
                if not left[0]:
                    done.set()

    def reader(r: int) -> None:
        thread = state.plans[writers[r % len(writers)]][0].thread
        try:
            for _ in range(MAX_READS):
                if done.is_set():
                    return
                got = calls.run_sync(f"get_tuple {thread}",
                                     lambda: saver.get_tuple(config(thread)))
                listed = calls.run_sync(f"list {thread}",
                                        lambda: list(saver.list(config(thread))))
                for item in [got, *listed]:
                    if item is None:
                        continue
                    key = (thread, str(item.checkpoint["id"]))
                    if dict(item.checkpoint.get("channel_values", {})) != values.get(key):
                        state.foreign.append(f"read of {thread} gave {key[1]} with other "
                                             f"values")
        except Raised:
            pass

    def deleter() -> None:
        time.sleep(s.delay / 2000)
        if state.can_delete:
            try:
                calls.run_sync(f"delete_thread {d}", lambda: saver.delete_thread(d))
                state.deleted = True
            except Raised:
                pass

    await race_threads([*(functools.partial(writer, name) for name in writers),
                        *(functools.partial(reader, r) for r in range(s.readers)), deleter])


async def _read_all(calls: Calls, saver: Any, threads: list[str]) -> Seen:
    seen: Seen = {}
    for thread in threads:
        if api_of(saver) == "sync":
            def listed(thread: str = thread) -> list[Any]:
                return list(saver.list(config(thread)))

            items = await anyio.to_thread.run_sync(functools.partial(
                calls.run_sync, f"list {thread} (read-back)", listed))
        else:
            async def alist(thread: str = thread) -> list[Any]:
                return [item async for item in saver.alist(config(thread))]

            items = await calls.run(f"alist {thread} (read-back)", alist)
        seen[thread] = {item.checkpoint["id"]: (
            dict(item.checkpoint.get("channel_values", {})),
            {tuple(w) for w in (item.pending_writes or [])})  # type: ignore[misc]
            for item in items}
    return seen


def _verdict(s: Setting, saver: Any, state: State, seen: Seen, d: str,
             errors: list[str]) -> dict[str, Any]:
    """The child's judgement, sent to the trial as one report."""
    plan: list[Op] = []
    acked: set[int] = set()
    for name, ops in state.plans.items():
        if name == "D" and state.deleted:
            continue
        acked.update(len(plan) + n for n in state.acked[name])
        plan.extend(ops)
    found = judge(plan, acked, {t: v for t, v in seen.items() if t != d or not state.deleted},
                  latest_only=bool(latest_only(saver)))
    back = sorted(seen.get(d, {})) if state.deleted else []
    notes = [*errors, *(f"deleted thread {d} still shows {cp}" for cp in back[:2]),
             *state.foreign[:2], *found.notes]
    result = ("raised" if errors else "deleted_came_back" if back else "lossy" if found.lost
              else "foreign" if found.bad or state.foreign else "returned")
    return {"result": result, "lost": found.lost,
            "foreign": found.foreign + found.torn + len(state.foreign) + len(back),
            "raised": len(errors), "notes": notes[:4], "acked": len(acked), "planned": len(plan)}


def _body(s: Setting) -> _forked.Body:
    """The forked trial: open, race, serve a state request, start a second instance, read
    back, report."""

    async def body(channel: _forked.Channel) -> None:
        faulthandler.disable()  # a crash here is evidence (its signal), not a dump
        calls = Calls(channel)
        keep: list[Any] = []
        try:
            saver = await calls.run(f"open the saver ({s.opening})",
                                    functools.partial(_open, s, keep))
        except Raised:
            channel.send({"open_error": calls.errors[-1]})
            return
        history = not latest_only(saver)
        prefix = f"t{s.seed:x}"
        d = f"{prefix}-D"
        state = State(can_delete=offers(saver, "delete_thread"))
        for w in range(s.writers):
            state.plans[f"w{w}"] = writer_plan(saver, s.seed, w, f"{prefix}-{w}", s.steps,
                                               history=history)
        state.plans["D"] = writer_plan(saver, s.seed, s.writers, d, 2, history=history)
        state.plans["B"] = writer_plan(saver, s.seed, s.writers + 1, f"{prefix}-B", 1,
                                       history=history)
        state.acked = {name: set() for name in state.plans}
        try:
            # the store is new: its first request asks for a thread's state (none yet)
            await _get(calls, saver, d, state)
            for n, op in enumerate(state.plans["D"]):
                await calls.run(op.label, functools.partial(op.run, saver))
                state.acked["D"].add(n)
            race = _race_tasks if s.mode == "tasks" else _race_threads
            await race(s, saver, calls, state, d)
            # a state request on the first instance, then another worker starts on the store
            await _get(calls, saver, f"{prefix}-0", state)
            reader = saver
            piped: tuple[Any, Any] | None = None
            if s.piped:  # a worker with a pipeline answers a state request, and stays idle
                piped = await calls.run("open an instance with pipeline=True",
                                        functools.partial(_piped, s))
                await _get(calls, piped[0], f"{prefix}-0", state)
            second = await calls.run("open a second instance",
                                     functools.partial(_second, s, saver, keep))
            if piped is not None:  # its open transaction would hold up others' setup()
                await calls.run("close the instance with pipeline=True",
                                functools.partial(leave, piped[1], True))
            if second is not None:
                for n, op in enumerate(state.plans["B"]):
                    await calls.run(f"second instance: {op.label}",
                                    functools.partial(op.run, second))
                    state.acked["B"].add(n)
                await _get(calls, second, f"{prefix}-0", state)
            if not s.private:
                reader = await calls.run(f"open a fresh instance ({s.opening})",
                                         functools.partial(_open, s, keep))
            seen = await _read_all(calls, reader, sorted({ops[0].thread for ops in
                                                          state.plans.values()}))
        except Raised:
            seen = None
        if seen is None:
            channel.send({"report": {"result": "raised", "raised": len(calls.errors),
                                     "notes": calls.errors[:3], "lost": 0, "foreign": 0}})
            return
        channel.send({"report": _verdict(s, saver, state, seen, d, calls.errors)})

    return body


async def _setting(ctx: TrialContext) -> Setting:
    """How this trial opens and drives its saver, from a probe instance (disposed)."""
    if KIND.get(ctx.target.name) == "store":
        raise NotApplicable(f"{ctx.target.name!r} is a store lane ({ctx.target.backend}), not "
                            f"a checkpointer")
    probe = await ctx.open()
    saver, private = probe.session, bool(probe.private_store)
    cls = type(saver)
    mode = mode_of(saver, ctx.index // 2)
    await ctx.dispose()
    root = ctx.build.root / "run"
    root.mkdir()
    build = BuildContext(root, ctx.build.session_id, ctx.build.services)
    opening, path, piped = "lane", "", ""
    try:
        found = conn_string(ctx.target, cls, build, private=private)
    except NotApplicable as exc:
        found = ""
        ctx.log(f"the lane's way on every trial: {exc}")
    if ctx.index % 2 and found:
        opening, path = "from_conn_string", found
    elif ctx.index % 2 and hasattr(saver, "__aenter__" if mode == "tasks" else "__enter__"):
        opening = "own_context"  # a class with no from_conn_string that is a context manager
    fcs = getattr(cls, "from_conn_string", None)
    if found and fcs is not None and not private and \
            "pipeline" in inspect.signature(fcs).parameters:
        piped = found
    return Setting(ctx.target, build, cls, opening, path, piped, mode, private, ctx.seed,
                   ctx.params["writers"], ctx.params["steps"], ctx.params["readers"],
                   ctx.rng.randint(0, 4 * ctx.params["steps"]))


async def run_trial(ctx: TrialContext) -> Trial:
    """One trial: runs sharing one saver in a forked process, bounded by the trial."""
    s = await _setting(ctx)
    bound = hang_bound(ctx)
    shown = ("<the trial's PostgreSQL schema>" if s.path.startswith(("host", "postgres",
                                                                      "dbname", "user"))
             else repr(s.path))
    way = {"lane": "the lane way", "own_context": "the lane way, entered as its own context "
           "manager", "from_conn_string": f"by from_conn_string({shown})"}[s.opening]
    ctx.log(f"in a forked process: open {s.cls.__name__} {way}; put "
            f"a thread D (2 checkpoints with writes); as {s.mode}, released together: "
            f"{s.writers} writers x {s.steps} (put; put_writes) on threads of their own, "
            f"{s.readers} readers (get the latest, list) until they are done, delete_thread(D) "
            f"after {s.delay} {'yields' if s.mode == 'tasks' else '/2000 s'}; then a state "
            f"request{', an instance with pipeline=True reads and stays idle' if s.piped else ''}"
            f", a second instance (open, put, read), a fresh instance reads back; each "
            f"call must return within {bound:.1f} s")
    r = await forked_report(ctx, "runs", _body(s), bound, f"{s.opening}:{s.mode}:")
    if isinstance(r, Trial):
        return r
    ctx.log(f"{r.get('acked', 0)} of {r.get('planned', 0)} ops acknowledged; {r['result']}")
    return Trial(ctx.index, ctx.seed, r["result"] != "returned",
                 Counts(lost=r["lost"], foreign=r["foreign"], raised=r["raised"]),
                 mode=f"{s.opening}:{s.mode}:{r['result']}",
                 sample="; ".join(r["notes"])[:300] or None, ops=tuple(ctx.ops))


CHECK = CheckSpec(
    id=CHECK_ID,
    invariant="calls of many runs sharing one saver (puts, writes, reads, a delete, another "
    "instance starting on the store), opened the lane's way or by from_conn_string, all "
    "return within a bound, none raises, and every acknowledged checkpoint and write reads "
    "back",
    fault="in a forked process, writers, readers and a delete_thread released together on one "
    "saver (tasks or threads), then a state request and a second instance opening on the "
    "store; the trial waits at most the bound for every call",
    params=(
        Param("writers", 4, 1, 16, "runs putting checkpoints with writes at once"),
        Param("steps", 3, 1, 50, "checkpoints (each with its writes) per writer"),
        Param("readers", 2, 0, 16, "readers getting and listing a writer's thread meanwhile"),
        trials_param(4, "trials: the lane's way and from_conn_string, tasks and threads"),
    ),
    run_trial=run_trial,
    mutants=("lg_reference_read_lock_inversion", "lg_async_sqlite_read_lock_inversion"),
    generated=(
        Selector("lg-async-postgres", "AsyncPostgresSaver._cursor", "drop_lock"),
    ),
    timeout_s=60.0,
    hang_invariant=True,
)
