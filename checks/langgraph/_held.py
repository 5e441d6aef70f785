"""Holding a read in the middle of its call while other calls go on (ARIB-LGRUN-001).

A read is slow somewhere inside: its consumer works between the items of a listing, the machine
is loaded, the serializer decrypts a large state. Two ways to hold it at a known point, so that
the calls released meanwhile meet it there by construction, not by chance:

- an async read (a saver serving the async half) is held at its k-th suspension
  (``arib.checks._suspend.held_at``): what it awaited there has completed, it does not resume until
  released, every other task runs;
- a sync read (in a worker thread) is held in the saver's serializer: ``HeldSerde`` wraps the
  saver's ``serde`` and blocks the k-th ``loads_typed`` of the armed thread until released (a
  slow serializer, as an application's own or an encrypting one is). Other threads' calls pass.

Either way the holder waits until the read is held (or finished), releases the other calls,
lets them run until they return or ``SETTLE_S`` passed (a saver that serializes its calls keeps
them waiting), then releases the read.
"""

from __future__ import annotations

import threading
from typing import Any

SETTLE_S = 0.05  # a call that is not waiting for the held read returns in milliseconds


class HeldSerde:
    """A saver's serializer whose k-th ``loads_typed`` in the armed thread waits for
    ``release``; every other call and attribute goes to the wrapped serializer."""

    def __init__(self, inner: Any, timeout_s: float) -> None:
        self.inner = inner
        self.timeout_s = timeout_s
        self.owner: int | None = None
        self.k = 0
        self.count = 0
        self.reached = threading.Event()
        self.release = threading.Event()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def arm(self, k: int) -> None:
        """Count this thread's loads from now; hold the k-th (0: none)."""
        self.owner, self.k, self.count = threading.get_ident(), k, 0
        self.reached.clear()
        self.release.clear()

    def disarm(self) -> int:
        """Stop counting; the loads this thread made since ``arm``."""
        self.owner = None
        return self.count

    def dumps_typed(self, obj: Any) -> Any:
        """The wrapped serializer's."""
        return self.inner.dumps_typed(obj)

    def loads_typed(self, data: Any) -> Any:
        """The wrapped serializer's, held at the armed thread's k-th call."""
        if threading.get_ident() == self.owner:
            self.count += 1
            if self.count == self.k:
                self.reached.set()
                self.release.wait(self.timeout_s)
        return self.inner.loads_typed(data)
