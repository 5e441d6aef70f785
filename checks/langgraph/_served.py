"""Calls made inside a forked trial process and reported to the trial as they begin and end
(ARIB-LGHANG-001), so that when the process is stuck the trial names the calls in flight.

``Calls.run`` (a coroutine) and ``Calls.run_sync`` (from a worker thread) send
``{"begin": n, "what": label}`` before call n and ``{"end": n}`` (or ``{"end": n, "raised":
...}``) after it, one JSON line each (a line is far below PIPE_BUF, so the lines of several
threads never interleave). A call that raises is recorded and ends its actor (``Raised``).
``Flight`` is the parent's side: what began, what ended, what is still in flight;
``forked_report`` runs a trial's body in a forked process and turns a stuck, dead or
unopenable one into its violated Trial.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from arib.checks import _forked
from arib.checks.base import TrialContext, describe
from arib.ground.model import Counts, Trial


class Raised(Exception):
    """A reported call raised (already recorded): the actor that made it stops."""


class Calls:
    """The child's side: every call numbered, reported, its failure recorded."""

    def __init__(self, channel: _forked.Channel) -> None:
        self.channel = channel
        self.errors: list[str] = []
        self._count = 0
        self._lock = threading.Lock()

    def _begin(self, label: str) -> int:
        with self._lock:
            n, self._count = self._count, self._count + 1
        self.channel.send({"begin": n, "what": label[:160]})
        return n

    def _failed(self, n: int, label: str, exc: BaseException) -> Raised:
        self.errors.append(f"{label}: {describe(exc)}")
        self.channel.send({"end": n, "raised": describe(exc)})
        return Raised(label)

    async def run(self, label: str, call: Callable[[], Awaitable[Any]]) -> Any:
        """``await call()``, reported; ``Raised`` when it raised."""
        n = self._begin(label)
        try:
            result = await call()
        except Exception as exc:  # noqa: BLE001 - what a backend raised is evidence
            raise self._failed(n, label, exc) from exc
        self.channel.send({"end": n})
        return result

    def run_sync(self, label: str, call: Callable[[], Any]) -> Any:
        """``call()`` (in a worker thread), reported; ``Raised`` when it raised."""
        n = self._begin(label)
        try:
            result = call()
        except Exception as exc:  # noqa: BLE001 - what a backend raised is evidence
            raise self._failed(n, label, exc) from exc
        self.channel.send({"end": n})
        return result


POLL_S = 0.05


@dataclass
class Flight:
    """The parent's view of the reported calls: what began when, what ended."""

    begun: dict[int, tuple[str, float]] = field(default_factory=dict)
    ended: set[int] = field(default_factory=set)
    heard: float = field(default_factory=time.monotonic)  # the last line's arrival

    def fold(self, message: dict[str, Any]) -> bool:
        """Fold a begin or end line in; whether it was one."""
        self.heard = time.monotonic()
        if "begin" in message:
            self.begun[int(message["begin"])] = (str(message.get("what", "?")), self.heard)
            return True
        if "end" in message:
            self.ended.add(int(message["end"]))
            return True
        return False

    def in_flight(self) -> list[str]:
        """The calls that began and did not end, in the order they began."""
        return [what for n, (what, _) in sorted(self.begun.items()) if n not in self.ended]

    def stuck(self, bound_s: float) -> bool:
        """Whether a call has been in flight, or the child silent, longer than ``bound_s``."""
        now = time.monotonic()
        oldest = min((at for n, (_, at) in self.begun.items() if n not in self.ended),
                     default=None)
        return now - self.heard > bound_s or (oldest is not None and now - oldest > bound_s)


async def await_report(worker: _forked.Worker, flight: Flight, bound_s: float,
                       final: tuple[str, ...] = ("report", "open_error", "crash"),
                       ) -> dict[str, Any] | None:
    """Fold the child's call lines until a line with one of the ``final`` keys (returned);
    None when a call stayed in flight (or the child silent) longer than ``bound_s``, or the
    child ended first (``worker.eof`` tells which)."""
    while True:
        message = await _forked.next_message(worker, time.monotonic() + POLL_S)
        if message is None:
            if worker.eof or flight.stuck(bound_s):
                return None
            continue
        if any(key in message for key in final):
            return message
        flight.fold(message)


async def forked_report(ctx: TrialContext, name: str, body: _forked.Body, bound_s: float,
                        prefix: str = "") -> dict[str, Any] | Trial:
    """Fork ``body`` as the trial's process, wait for its report (``await_report``) and reap
    it: the report (the value of its "report" line), or the violated Trial of a child that
    got stuck in a call (``hung``, naming the calls in flight), died (``crashed``, with its
    signal) or could not open its saver (``open_failed``); ``prefix`` leads the mode."""
    flight = Flight()
    worker = _forked.fork_worker(name, body)
    try:
        message = await await_report(worker, flight, bound_s)
        hung = message is None and not worker.eof  # still there: stuck in a call
    finally:
        _forked.reap([worker])
    if message is not None and "report" in message:
        ctx.log(f"{len(flight.begun)} calls reported, every one returned")
        return dict(message["report"])
    stuck = flight.in_flight()
    if hung:
        mode, what = "hung", (f"a call did not return within {bound_s:.1f} s; in flight: "
                              f"{'; '.join(stuck[:4]) or 'none reported'}")
    elif message is not None and "open_error" in message:
        mode, what = "open_failed", f"opening the saver raised {message['open_error']}"
    else:
        mode, what = "crashed", (f"the process ended without a report: "
                                 f"{(message or {}).get('crash', '')} {worker.describe_exit()}")
    ctx.log(what)
    # an open that raised is an exception; calls stuck, or a crash, are answers never given
    n = max(1, len(stuck))
    counts = Counts(raised=n) if mode == "open_failed" else Counts(wrong_result=n)
    return Trial(ctx.index, ctx.seed, True, counts,
                 mode=f"{prefix}{mode}", sample=what[:300], ops=tuple(ctx.ops))
