"""The LangGraph family's lane probe (its ``Family.probe`` hook): one instance of a lane on a
fresh store, called once the way the checks call it, through their own helpers.

A checkpointer: ``setup()`` where its class has one, two checkpoints made with the saver's own
``get_next_version`` (``_saver.make_checkpoint``), ``put`` of both (the second a child of the
first), ``put_writes``, ``get_tuple`` of the thread and of an id, ``list`` plain, with
``limit``, with a metadata ``filter`` and (where the saver keeps a history) with ``before``; a
second instance on the store reads (where one can open it); ``delete_thread`` where the class
offers it. A store: ``put``, ``get``, ``search`` (``limit``, a ``filter``), ``delete``, and a
second instance's ``search``.

The probe judges no invariant: it only asks whether this release takes the calls the harness
makes. A call it refuses fails the probe (``arib.probe`` says whether the refusal is of the
harness's own arguments, a harness defect); the lane is then not measured on that release.
A check that calls the family's API in a new way adds that call here.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

from arib.checks.langgraph._saver import (
    call,
    config,
    listing,
    make_checkpoint,
    store_call,
)
from arib.checks.langgraph._writers import run_setup
from arib.targets.base import BuildContext, Handle, TargetSpec
from arib.targets.langgraph.lanes import KIND, api_of, latest_only

SEED = 0x9B0BE
THREAD = "arib-probe"
NAMESPACE = ("arib", "probe")


async def probe(lane: TargetSpec, build: BuildContext, step: Callable[[str], None]) -> None:
    """Build ``lane`` on ``build``'s fresh root and make the family's calls on it, naming each
    with ``step`` before it is made; raises what the first failing call raised (NotApplicable
    when no instance of the lane can exist on this release)."""
    step("build")
    handle = await lane.build(build)
    try:
        if KIND.get(lane.name) == "store":
            await _store(handle, step)
        else:
            await _checkpointer(handle, step)
    except BaseException:
        with contextlib.suppress(Exception):  # what failed is the call, not the cleanup
            await handle.dispose()
        raise
    step("dispose")
    await handle.dispose()


async def _second(handle: Handle, step: Callable[[str], None],
                  read: Callable[[Any], Any]) -> None:
    """``read`` on a second instance of the store, where one can open it."""
    if handle.private_store:
        return
    step("reopen")
    other = await handle.reopen()
    try:
        await read(other.session)
    finally:
        await other.dispose()


async def _checkpointer(handle: Handle, step: Callable[[str], None]) -> None:
    saver = handle.session
    step("setup")
    await run_setup(saver)
    step("get_next_version")
    first, versions = make_checkpoint(saver, SEED, 0, {"messages": ["probe"], "n": 0},
                                      history=False)
    second, more = make_checkpoint(saver, SEED, 1, {"n": 1}, first, history=False)
    meta = {"source": "loop", "step": 0, "writes": None}
    step("put")
    await call(saver, "put", config(THREAD), first, meta, versions)
    await call(saver, "put", config(THREAD, "", first["id"]), second, {**meta, "step": 1}, more)
    step("put_writes")
    await call(saver, "put_writes", config(THREAD, "", second["id"]), [("n", 2)], "probe-task")
    step("get_tuple")
    await call(saver, "get_tuple", config(THREAD))
    await call(saver, "get_tuple", config(THREAD, "", second["id"]))
    step("list")
    await listing(saver, config(THREAD))
    await listing(saver, config(THREAD), limit=1)
    await listing(saver, config(THREAD), filter={"source": "loop"})
    if not latest_only(saver):  # a history read: never asked of a saver that keeps none
        await listing(saver, config(THREAD), before=config(THREAD, "", second["id"]))
    await _second(handle, step, lambda other: call(other, "get_tuple", config(THREAD)))
    name = "delete_thread" if api_of(saver) == "sync" else "adelete_thread"
    if callable(getattr(saver, name, None)):  # a release without it: LGDEL-001 abstains
        step("delete_thread")
        with contextlib.suppress(NotImplementedError):  # the base class's: never offered
            await call(saver, "delete_thread", THREAD)


async def _store(handle: Handle, step: Callable[[str], None]) -> None:
    store = handle.session
    step("put")
    await store_call(store, "put", NAMESPACE, "k0", {"v": 0, "kind": "probe"})
    await store_call(store, "put", (*NAMESPACE, "deeper"), "k1", {"v": 1, "kind": "probe"})
    step("get")
    await store_call(store, "get", NAMESPACE, "k0")
    step("search")
    await store_call(store, "search", NAMESPACE, limit=10)
    await store_call(store, "search", NAMESPACE[:1], filter={"kind": "probe"}, limit=10)
    step("delete")
    await store_call(store, "delete", NAMESPACE, "k0")
    await _second(handle, step, lambda other: store_call(other, "search", NAMESPACE, limit=10))
