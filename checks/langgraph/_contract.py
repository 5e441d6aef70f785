"""What the LangGraph contract checks (ARIB-CKPT-002..007) share: putting a chain of
checkpoints that a replay can name, the configs of a tuple, reading through a second instance
where the store allows one, and turning the problems a trial saw into its Trial."""

from __future__ import annotations

import traceback
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from arib.checks.base import TrialContext, describe
from arib.checks.langgraph._saver import call, config, make_checkpoint
from arib.ground.model import Counts, Trial
from arib.ground.package import folder
from arib.targets.base import NotApplicable
from arib.targets.langgraph.lanes import api_of


def thread_config(thread: str) -> dict[str, Any]:
    """A config naming only a thread (every namespace of it)."""
    return {"configurable": {"thread_id": thread}}


def named(cfg: Mapping[str, Any] | None) -> tuple[str, str, str | None] | None:
    """(thread, namespace, checkpoint id) a tuple's config (or parent_config) names."""
    if cfg is None:
        return None
    conf = cfg.get("configurable", {})
    return (str(conf.get("thread_id")), str(conf.get("checkpoint_ns", "")),
            conf.get("checkpoint_id"))


def ids_of(tuples: Sequence[Any]) -> list[str]:
    """The checkpoint ids of tuples, in the order given."""
    return [t.checkpoint["id"] for t in tuples]


@dataclass
class Problems:
    """What a trial found wrong, by kind (``lost``, ``duplicated``, ``foreign``, ``wrong``)."""

    found: list[tuple[str, str]] = field(default_factory=list)

    def add(self, kind: str, text: str) -> None:
        """Record one problem."""
        self.found.append((kind, text))

    def expect(self, what: str, want: Any, got: Any, kind: str = "wrong") -> bool:
        """Record a problem unless ``got == want``; whether they were equal."""
        if got == want:
            return True
        self.add(kind, f"{what}: expected {want!r:.160}, got {got!r:.160}")
        return False

    def trial(self, ctx: TrialContext, held: str) -> Trial:
        """The trial: violated when any problem was found (mode: the first one's kind)."""
        kinds = [kind for kind, _ in self.found]
        counts = Counts(lost=kinds.count("lost"), duplicated=kinds.count("duplicated"),
                        foreign=kinds.count("foreign") + kinds.count("wrong"))
        return Trial(ctx.index, ctx.seed, bool(self.found), counts,
                     mode=kinds[0] if kinds else held,
                     sample="; ".join(text for _, text in self.found[:3]) or None,
                     ops=tuple(ctx.ops))


def release_lacks(exc: ImportError) -> bool:
    """Whether ``exc`` was raised by an import in our own code (its last frame, the import
    system's aside, is in checks/ or targets/: a check, or the lane's class it loads) of a
    part of langgraph the installed release lacks."""
    frames = [f for f in traceback.extract_tb(exc.__traceback__)
              if not f.filename.startswith("<frozen")]
    ours = (folder("checks"), folder("targets"))
    return bool(frames) and frames[-1].filename.startswith(ours) and (
        exc.name or "").startswith("langgraph")




async def guarded(ctx: TrialContext, body: Callable[[], Awaitable[Trial]]) -> Trial:
    """``body()``'s trial; a saver call that raises is a violation (``raised``) naming the
    operation it interrupted (the last one logged). An abstention passes through, and so does
    a check's own import of an API the installed release lacks (the stores' before their
    release): that contract was never offered there, so the check abstains, naming it."""
    try:
        return await body()
    except NotApplicable:
        raise
    except Exception as exc:  # noqa: BLE001 - what the saver raised is evidence
        if isinstance(exc, ImportError) and release_lacks(exc):
            raise NotApplicable(f"the installed release has no {exc.name} API this check "
                                f"uses ({exc}): the contract was never offered there") from None
        last = ctx.ops[-1] if ctx.ops else "before any operation"
        return Trial(ctx.index, ctx.seed, True, Counts(raised=1), mode="raised",
                     sample=f"{describe(exc)} (during: {last})"[:300], ops=tuple(ctx.ops))


async def reader_of(ctx: TrialContext, handle: Any) -> Any:
    """Another instance on the handle's store, or the saver itself where the store is private
    (so that what was acknowledged but never committed is not seen as kept)."""
    if handle.private_store:
        ctx.log(f"read through the same instance ({handle.private_store})")
        return handle.session
    ctx.log("open a second instance on the same store to read")
    return (await ctx.reopen(handle)).session


@dataclass
class Put:
    """One checkpoint a trial put: where, its id, its parent id and what it held."""

    thread: str
    ns: str
    id: str
    parent: str | None
    checkpoint: dict[str, Any]
    metadata: dict[str, Any]


class PutReturnedWrongConfig(Exception):
    """A put whose returned config does not name the checkpoint just put (the next put's
    parent would be wrong); raised into ``guarded``, so it is a violation with evidence."""


async def put_one(ctx: TrialContext, saver: Any, thread: str, ns: str, step: int,
                  values: Mapping[str, Any], metadata: Mapping[str, Any],
                  previous: Put | None = None, writer: int = 0, history: bool = True) -> Put:
    """Put the checkpoint of ``step`` (child of ``previous``) on (thread, ns), logged;
    ``history`` as in ``make_checkpoint``."""
    prior = previous.checkpoint if previous is not None else None
    cp, versions = make_checkpoint(saver, ctx.seed, step, values, prior, writer,
                                   history=history)
    parent = previous.id if previous is not None else None
    ctx.log(f"put thread {thread!r} ns {ns!r} id {cp['id']} parent {parent} "
            f"metadata {dict(metadata)!r}")
    returned = await call(saver, "put", config(thread, ns, parent), cp, dict(metadata),
                          versions)
    if named(returned) != (thread, ns, cp["id"]):
        raise PutReturnedWrongConfig(f"put of {cp['id']} on ({thread!r}, {ns!r}) returned "
                                     f"{returned!r:.200}")
    return Put(thread, ns, cp["id"], parent, cp, dict(metadata))


async def put_chain(ctx: TrialContext, saver: Any, thread: str, ns: str, steps: int,
                    writer: int = 0, first_step: int = 0,
                    meta: Callable[[int], Mapping[str, Any]] | None = None,
                    history: bool = True) -> list[Put]:
    """``steps`` checkpoints on (thread, ns), each the child of the one before."""
    chain: list[Put] = []
    for step in range(first_step, first_step + steps):
        values = {"messages": [f"{thread}/{ns}/{step}"], f"ch{step % 3}": step}
        metadata = meta(step) if meta else {"step": step, "scope": f"{thread}|{ns}"}
        chain.append(await put_one(ctx, saver, thread, ns, step, values, metadata,
                                   chain[-1] if chain else None, writer, history))
    return chain


async def same_as_got(ctx: TrialContext, saver: Any, problems: Problems, where: str,
                      item: Any) -> None:
    """A listed tuple is the tuple ``get_tuple`` gives for its config: the same checkpoint
    (pending sends included), metadata, parent and pending writes."""
    ctx.log(f"get_tuple {named(item.config)} to compare with {where}")
    got = await call(saver, "get_tuple", item.config)
    if got is None:
        problems.add("lost", f"{where}: listed {named(item.config)} but get_tuple finds none")
        return
    for field_name, listed, direct in (
            ("checkpoint", item.checkpoint, got.checkpoint),
            ("metadata", dict(item.metadata or {}), dict(got.metadata or {})),
            ("parent", named(item.parent_config), named(got.parent_config)),
            ("pending writes", [tuple(w) for w in item.pending_writes or []],
             [tuple(w) for w in got.pending_writes or []])):
        problems.expect(f"{where}: {field_name} of {item.checkpoint['id']} as listed and as "
                        f"got", direct, listed)


async def delete_or_abstain(ctx: TrialContext, saver: Any, thread: str, why: str = "") -> None:
    """``delete_thread`` through the served half, logged (with ``why``), or an abstention
    naming what the saver offers instead: no such method in this release, or one that raises
    NotImplementedError."""
    name = "delete_thread" if api_of(saver) == "sync" else "adelete_thread"
    if getattr(type(saver), name, None) is None:
        raise NotApplicable(f"{type(saver).__name__} has no {name}() in this release")
    ctx.log(f"delete_thread {thread!r}" + (f" ({why})" if why else ""))
    try:
        await call(saver, "delete_thread", thread)
    except NotImplementedError as exc:
        raise NotApplicable(f"{type(saver).__name__}.{name}() raises NotImplementedError "
                            f"in this release ({exc})") from None
