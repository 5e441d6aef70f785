"""ARIB-PING-001: ping() tells the truth about whether the store answers.

Agent servers use ``ping()`` (RedisSession's health check) to decide whether to route a
conversation to a store or to fail over. A ping that says True while the store is down sends
turns into a dead store; one that raises or hangs instead of answering False takes the health
check down with it; one that answers on a session whose owned client was closed hides a use
after close. Invariant, per trial:

- while the store answers, ``ping()`` returns True (exactly ``True``);
- while it does not, every ``ping()`` returns False, promptly (no exception, no hang);
- once it answers again, ``ping()`` returns True and the session reads what it held;
- after ``close()``: a session whose close is terminal refuses ``ping()`` loudly; one whose
  close is documented as a no-op (RedisSession with an injected client) still answers True.

The outage is real: on a server lane the instance reaches its server through a relay of our
own (``arib.checks.openai_agents._netfault.CutProxy``) that cuts every connection and closes each
new one while the server is "down"; on a file lane (the reference) the store's file is moved away
from its path and back. A lane whose session offers no ``ping()`` abstains (verified on the object).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio

from arib.checks.base import CheckSpec, NotApplicable, Param, Selector, TrialContext, describe
from arib.checks.common import canonical, read_items, trials_param
from arib.checks.openai_agents._netfault import CutProxy, relayed
from arib.ground.model import Counts, Trial

# The longest a ping may take to answer, live or down, before it counts as hung.
PING_DEADLINE_S = 5.0


@dataclass
class Answer:
    """What one ping() did: returned a value, raised, or did not answer in time."""

    value: Any = None
    error: BaseException | None = None
    hung: bool = False

    def describe(self) -> str:
        """What the ping did, in words: returned a value, raised, or no answer in time."""
        if self.hung:
            return f"no answer within {PING_DEADLINE_S}s"
        if self.error is not None:
            return f"raised {describe(self.error)}"
        return f"returned {self.value!r}"


async def ask(ping: Callable[[], Awaitable[Any]]) -> Answer:
    """Call ``ping()`` once, with a deadline; never raises."""
    with anyio.move_on_after(PING_DEADLINE_S):
        try:
            return Answer(value=await ping())
        except Exception as exc:  # noqa: BLE001 - the exception is the evidence
            return Answer(error=exc)
    return Answer(hung=True)


class FileOutage:
    """The store's file (and its WAL companions) moved away from its path, and back."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.moved: list[tuple[Path, Path]] = []

    def down(self) -> None:
        """Move the store's file and its WAL companions away from their paths."""
        for suffix in ("", "-wal", "-shm"):
            src = Path(f"{self.path}{suffix}")
            if src.exists():
                dst = Path(f"{src}.away")
                os.replace(src, dst)
                self.moved.append((dst, src))

    def up(self) -> None:
        """Move the files back to their paths."""
        while self.moved:
            dst, src = self.moved.pop()
            os.replace(dst, src)


def outage_for(proxy: CutProxy | None, session: Any) -> CutProxy | FileOutage:
    """How this lane's store is taken down: its relay, or its file; NotApplicable if neither."""
    if proxy is not None:
        return proxy
    path = getattr(session, "db_path", None)
    if isinstance(path, (str, Path)) and Path(path).is_file():
        return FileOutage(Path(path))
    raise NotApplicable(f"{type(session).__name__} reaches no server and has no store file "
                        f"(db_path={path!r}): there is no outage to inject")


def expect(answer: Answer, want: str) -> str | None:
    """None when ``answer`` is what ``want`` names (True, False or refused), else the problem."""
    ok = {"True": answer.value is True and answer.error is None and not answer.hung,
          "False": answer.value is False and answer.error is None and not answer.hung,
          "refused": answer.error is not None}[want]
    return None if ok else f"expected {want}, {answer.describe()}"


async def run_trial(ctx: TrialContext) -> Trial:
    """One trial: ping() while the store answers, while it is down, back up, after close()."""
    downs = ctx.params["downs"]
    async with relayed(ctx) as route:
        handle = route.handle if route is not None else await ctx.open()
        session = handle.session
        ping = getattr(session, "ping", None)
        if not callable(ping):
            raise NotApplicable(f"{type(session).__name__} offers no ping()")
        outage = outage_for(route.proxy if route is not None else None, session)
        seeds = [{"role": "user", "content": f"{ctx.seed:x} kept across the outage #{n}"}
                 for n in range(2)]
        problems: list[str] = []
        raised = 0  # how many of the problems are calls that raised

        def note(step: str, answer: Answer, want: str) -> None:
            nonlocal raised
            problem = expect(answer, want)
            if problem:
                problems.append(f"{step}: {problem}")
                raised += answer.error is not None  # a ping that had to answer raised

        ctx.log("add_items([2 items]); ping()  # the store answers")
        try:
            await session.add_items(seeds)
        except Exception as exc:  # noqa: BLE001 - a store that cannot be filled is evidence
            return Trial(ctx.index, ctx.seed, True, Counts(raised=1), mode="setup_failed",
                         sample=f"add_items raised {describe(exc)}", ops=tuple(ctx.ops))
        note("live ping", await ask(ping), "True")
        ctx.log(f"take the store down ({type(outage).__name__}); {downs} x ping()")
        try:
            outage.down()
            for n in range(downs):
                note(f"ping #{n + 1} while down", await ask(ping), "False")
        finally:
            outage.up()
        ctx.log("bring the store back; ping(); get_items()")
        note("ping after the outage", await ask(ping), "True")
        try:
            held = [canonical(i) for i in await read_items(session)]
            if held != [canonical(i) for i in seeds]:
                problems.append(f"after the outage get_items() returned {len(held)} items, "
                                f"not the {len(seeds)} written before it")
        except Exception as exc:  # noqa: BLE001 - a read that raises shows nothing
            problems.append(f"get_items() after the outage raised {describe(exc)}")
            raised += 1
        claims = ctx.target.claims
        if claims.has_close:
            want = "refused" if claims.close_is_terminal else "True"
            ctx.log(f"close(); ping()  # expected: {want}")
            with contextlib.suppress(Exception):
                await ctx.close(session)
            note("ping after close()", await ask(ping), want)
    mode = "truthful" if not problems else problems[0].split(":")[0].replace(" ", "_")
    return Trial(ctx.index, ctx.seed, bool(problems),
                 Counts(wrong_result=len(problems) - raised, raised=raised), mode=mode,
                 sample="; ".join(problems[:3])[:400] or None, ops=tuple(ctx.ops))


CHECK = CheckSpec(
    id="ARIB-PING-001",
    invariant="ping() returns True while the store answers, False (promptly, without raising) "
    "while it does not, True again once it is back with nothing lost, and after a terminal "
    "close() refuses loudly",
    fault="the store taken down and brought back: a relay of our own in front of the server "
    "cuts every connection and refuses new ones (server lanes), or the store's file is moved "
    "away from its path and back (file lanes); then close()",
    params=(
        Param("downs", 2, 1, 20, "ping() calls while the store is down"),
        trials_param(3),
    ),
    run_trial=run_trial,
    mutants=(
        "reference_ping_always_true",
        "reference_ping_raises_when_down",
        "reference_ping_after_close_answers",
        "redis_ping_cached_answer",
    ),
    generated=(
        Selector("redis-from-url", "RedisSession.ping", "early_return"),
        Selector("redis-from-url", "RedisSession.ping", "drop_await"),
        Selector("redis-from-url", "RedisSession.ping", "drop_closed_guard"),
        Selector("redis-injected-client", "RedisSession.ping", "drop_await"),
    ),
    timeout_s=60.0,
)
