"""What the LangGraph checks share: calling a saver through the half of its interface its
lane serves, and making checkpoints and configs that a replay can name (deterministic ids)."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import anyio

from arib.checks._actors import to_thread
from arib.targets.base import Handle, NotApplicable
from arib.targets.langgraph.lanes import api_of, kind_of, latest_only


def _of_kind(obj: Any, kind: str) -> Any:
    found = kind_of(obj)
    if found != kind:
        raise NotApplicable(f"the lane's object is {type(obj).__name__}, a {found}, not a "
                            f"{kind}")
    return obj


def saver_of(handle: Handle | Any) -> Any:
    """The checkpointer of a handle (or the object itself); NotApplicable naming what the
    object is on a store lane, so that a checkpointer check abstains there."""
    return _of_kind(getattr(handle, "session", handle), "checkpointer")


def store_of(handle: Handle | Any) -> Any:
    """The store of a handle (or the object itself); NotApplicable naming what the object is
    on a checkpointer lane, so that a store check abstains there."""
    return _of_kind(getattr(handle, "session", handle), "store")


def config(thread: str, ns: str = "", checkpoint_id: str | None = None) -> dict[str, Any]:
    """A RunnableConfig naming a thread, a namespace and (optionally) a checkpoint."""
    conf: dict[str, Any] = {"thread_id": thread, "checkpoint_ns": ns}
    if checkpoint_id is not None:
        conf["checkpoint_id"] = checkpoint_id
    return {"configurable": conf}


def special_indexes() -> dict[str, int]:
    """The special write channels of the installed langgraph-checkpoint and the fixed index
    each keeps (``WRITES_IDX_MAP``: error -1, scheduled -2, ...); none on a release without it
    (1.0.1: every write keeps its own index there, the error channel's too)."""
    import langgraph.checkpoint.base as base

    return dict(getattr(base, "WRITES_IDX_MAP", {}))


def checkpoint_id(seed: int, step: int, writer: int = 0) -> str:
    """A uuid-shaped id, unique per (seed, writer, step), that sorts by step."""
    return f"{step:08x}-{writer:04x}-6000-8000-{seed & 0xFFFFFFFFFFFF:012x}"


def make_checkpoint(saver: Any, seed: int, step: int, values: Mapping[str, Any],
                    previous: Mapping[str, Any] | None = None, writer: int = 0, *,
                    history: bool = True) -> tuple[dict[str, Any], dict[str, Any]]:
    """(checkpoint, new_versions): ``previous``'s channel values updated with ``values``, each
    updated channel at a new version from the saver's own ``get_next_version``. Every channel
    with a version has its value, as in a checkpoint a graph makes.

    A check that reads back more than a thread's latest checkpoint (``history``, the default)
    abstains on a saver that keeps only the latest (``lanes.LATEST_ONLY``), naming it: that
    was never offered there. A check reading only the latest passes ``history=False``."""
    from langgraph.checkpoint.base import empty_checkpoint

    saver_of(saver)
    no_history = latest_only(saver) if history else None
    if no_history:
        raise NotApplicable(f"{no_history}: this check reads back more than a thread's latest "
                            f"checkpoint, which was never offered there")
    prior = dict((previous or {}).get("channel_versions", {}))
    versions = {ch: saver.get_next_version(prior.get(ch), channel_argument(saver, value))
                for ch, value in values.items()}
    cp = dict(empty_checkpoint())
    cp.update(
        id=checkpoint_id(seed, step, writer),
        ts=f"2026-01-01T00:00:{step % 60:02d}.{writer:06d}+00:00",
        channel_values={**dict((previous or {}).get("channel_values", {})), **values},
        channel_versions={**prior, **versions},
        versions_seen={f"node-{step}": dict(versions)},
    )
    return cp, versions


class ValueChannel:
    """A channel holding one value, as langgraph's own releases of that time pass it to
    ``get_next_version`` where the saver reads it (``channel.checkpoint()``, hashed into the
    version): SqliteSaver of langgraph-checkpoint-sqlite 1.0.0, PostgresSaver of -postgres
    1.0.0, and every release whose method declares a channel parameter that is not None."""

    def __init__(self, value: Any) -> None:
        self.value = value

    def checkpoint(self) -> Any:
        """The value a checkpoint of this channel holds."""
        return self.value


def channel_argument(saver: Any, value: Any) -> ValueChannel | None:
    """What ``saver.get_next_version`` takes as its channel, found on its signature: None where
    the release declares the parameter ``None`` (it never reads a channel: langgraph passes
    None there), else a ``ValueChannel`` holding ``value`` (older releases call
    ``channel.checkpoint()``, and None there raises AttributeError)."""
    try:
        params = list(inspect.signature(saver.get_next_version).parameters.values())
    except (TypeError, ValueError):  # no signature to read: give what every release takes
        return ValueChannel(value)
    declared = params[1].annotation if len(params) > 1 else inspect.Parameter.empty
    return None if declared in (None, "None") else ValueChannel(value)


# How long one call of a saver or store may take before it counts as hung: a call answers in
# milliseconds; a release that deadlocks (PostgresStore of -postgres 2.0.0, called from two
# threads at once: each batch enters conn.pipeline() on the shared connection with no lock)
# never answers. The check then sees CallHung, evidence of the release, not a harness timeout.
CALL_DEADLINE_S = 10.0


class CallHung(Exception):
    """A saver's or store's call did not return within ``CALL_DEADLINE_S``."""


async def _answered(what: str, sync: bool, work: Callable[[], Any]) -> Any:
    """``work()`` (in a worker thread when ``sync``, else awaited), or CallHung naming
    ``what`` once ``CALL_DEADLINE_S`` passed. A thread stuck in the release is abandoned."""
    with anyio.move_on_after(CALL_DEADLINE_S):
        if sync:
            return await to_thread(work, abandon=True)
        return await work()
    raise CallHung(f"{what} did not return within {CALL_DEADLINE_S:g} s (hung)")


async def _served_call(obj: Any, method: str, *args: Any, **kwargs: Any) -> Any:
    sync = api_of(obj) == "sync"  # a hand-off: under a scheduled trial, as the calling actor
    name = method if sync else f"a{method}"
    return await _answered(f"{type(obj).__name__}.{name}()", sync,
                           functools.partial(getattr(obj, name), *args, **kwargs))


async def call(saver: Any, method: str, *args: Any, **kwargs: Any) -> Any:
    """``saver.<method>(...)`` for a sync lane (in a worker thread), else ``a<method>``."""
    return await _served_call(saver_of(saver), method, *args, **kwargs)


async def store_call(store: Any, method: str, *args: Any, **kwargs: Any) -> Any:
    """``store.<method>(...)`` for a sync store lane (in a worker thread), else
    ``a<method>``; NotApplicable on a checkpointer."""
    return await _served_call(store_of(store), method, *args, **kwargs)


def offers(saver: Any, method: str) -> bool:
    """Whether the saver's class implements ``method`` in the half of the interface its lane
    serves (``a<method>`` on an async lane), not BaseCheckpointSaver's (which raises
    NotImplementedError): e.g. the Shallow savers have no ``delete_thread``."""
    from langgraph.checkpoint.base import BaseCheckpointSaver

    name = method if api_of(saver) == "sync" else f"a{method}"
    own = getattr(type(saver), name, None)
    return callable(own) and own is not getattr(BaseCheckpointSaver, name, None)


async def listing(saver: Any, cfg: Any, **kwargs: Any) -> list[Any]:
    """Every tuple ``list``/``alist`` gives for ``cfg``, in the order given, each with its
    pending writes: where the release's ``list`` gives a tuple none (``pending_writes`` None,
    not [], as the savers of langgraph-checkpoint 1.0.1 and -sqlite 1.0.0 do: only their
    ``get_tuple`` reads writes), they are read through ``get_tuple``, as langgraph did then."""
    sync = api_of(saver_of(saver)) == "sync"

    async def alisted() -> list[Any]:
        return [item async for item in saver.alist(cfg, **kwargs)]

    found = await _answered(f"{type(saver).__name__}.{'list' if sync else 'alist'}()", sync,
                            (lambda: list(saver.list(cfg, **kwargs))) if sync else alisted)
    return [await _with_writes(saver, item) for item in found]


async def _with_writes(saver: Any, item: Any) -> Any:
    """``item`` with the pending writes ``get_tuple`` gives for it where it carries none."""
    if getattr(item, "pending_writes", ()) is not None:
        return item
    got = await call(saver, "get_tuple", item.config)
    return item._replace(pending_writes=None if got is None else got.pending_writes)


def state_of(tuple_: Any) -> dict[str, Any]:
    """What a round trip must keep of a checkpoint tuple: values, versions, seen, metadata."""
    cp = tuple_.checkpoint
    return {"id": cp["id"], "channel_values": cp["channel_values"],
            "channel_versions": cp["channel_versions"], "versions_seen": cp["versions_seen"],
            "metadata": dict(tuple_.metadata or {})}


def first_mismatch(expected: Mapping[str, Any], seen: Mapping[str, Any]) -> str | None:
    """The first field whose value differs, shown both ways, or None."""
    for key in expected:
        want, got = expected[key], seen.get(key)
        if want == got:
            continue
        if isinstance(want, Mapping) and isinstance(got, Mapping):
            for inner in sorted({*want, *got}, key=str):
                if inner not in got:
                    return f"{key}[{inner!r}]: put, missing"
                if inner not in want:
                    return f"{key}[{inner!r}]: not put, got {got[inner]!r:.80}"
                if want[inner] != got[inner]:
                    return f"{key}[{inner!r}]: put {want[inner]!r:.80}, got {got[inner]!r:.80}"
        return f"{key}: put {want!r:.120}, got {got!r:.120}"
    return None


def writes_of(tuple_: Any) -> list[tuple[str, str, Any]]:
    """The pending writes of a checkpoint tuple, as (task id, channel, value) triples."""
    return [tuple(w) for w in (tuple_.pending_writes or [])]  # type: ignore[misc]


def as_writes(pairs: Sequence[tuple[str, Any]]) -> list[tuple[str, Any]]:
    """``put_writes``' writes argument."""
    return [(channel, value) for channel, value in pairs]
