"""Counting helpers shared by checks: what was expected against what a read returned."""

from __future__ import annotations

import functools
import json
from collections import Counter
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, Protocol

from arib.ground.family import active_family, get_family
from arib.ground.model import Counts, Trial
from arib.ground.shorten import join_within, short_json, short_text

if TYPE_CHECKING:
    from arib.checks.base import Param, TrialContext


class Judgement(Protocol):
    """What a check's judge returns about one trial."""

    @property
    def violated(self) -> bool:
        """Whether the trial broke the invariant."""

    @property
    def counts(self) -> Counts:
        """The trial's violation counters."""

    @property
    def mode(self) -> str:
        """The name of the first defect, or of the outcome that held."""

    @property
    def sample(self) -> str | None:
        """A short text showing the defect, or None."""


def judged_trial(ctx: TrialContext, judge: Callable[[], Judgement]) -> Trial:
    """The trial ``judge()`` decides; a read that gave a value that is not a JSON item (the
    judge raises TypeError or ValueError on it) is a violation of its own, ``not_an_item``."""
    from arib.checks.base import describe

    try:
        verdict = judge()
    except (TypeError, ValueError) as exc:
        return Trial(ctx.index, ctx.seed, True, Counts(wrong_result=1), mode="not_an_item",
                     sample=f"a read returned a value that is not a JSON item: {describe(exc)}",
                     ops=tuple(ctx.ops))
    return Trial(ctx.index, ctx.seed, verdict.violated, verdict.counts, mode=verdict.mode,
                 sample=verdict.sample, ops=tuple(ctx.ops))


# The fewest trials a side with which the regression gate's Fisher test can judge a complete
# flip (arib.runs.significance.flip_trials()): a check whose race is seen at a rate (a backend's
# thread, a server's timing) runs at least this many, or a chance flip of its few trials would
# gate the bench (harness/README.md's regression gate: "the fix is more trials (4 a side)").
RATE_TRIALS = 4


def trials_param(default: int, help: str = "independent trials, each on a fresh store") -> Param:
    """The ``trials`` parameter every check has."""
    from arib.checks.base import Param

    return Param("trials", default, 1, 1000, help)


def canonical(item: Any) -> str:
    """Canonical JSON of an item: sorted keys, no spaces; tuples and lists compare equal."""
    return json.dumps(item, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


async def read_items(store: Any, limit: int | None = None) -> list[Any]:
    """The store's items, read as the active family reads an item store (its ``read_items``
    field; for openai-agents sessions, ``read_session_items``)."""
    return await _reader(active_family().name)(store, limit)  # type: ignore[no-any-return]


@functools.cache
def _reader(family: str) -> Callable[..., Any]:
    return get_family(family).resolve("read_items")  # type: ignore[no-any-return]


async def read_session_items(session: Any, limit: int | None = None) -> list[Any]:
    """``get_items()`` that insists on a list: anything else is a broken read, raised."""
    items = await session.get_items() if limit is None else await session.get_items(limit)
    if not isinstance(items, list):
        raise TypeError(f"get_items() returned {type(items).__name__}, not a list of items")
    return items


def tally(expected: Iterable[Any], seen: Iterable[Any], errors: int = 0, raised: int = 0
          ) -> Counts:
    """Lost, duplicated and foreign items of ``seen`` against ``expected`` (a multiset), with
    ``raised`` calls that raised and ``errors`` other wrong results (Counts.wrong_result)."""
    want = Counter(canonical(i) for i in expected)
    got = Counter(canonical(i) for i in seen)
    lost = sum(max(n - got[k], 0) for k, n in want.items())
    duplicated = sum(max(n - want[k], 0) for k, n in got.items() if k in want)
    foreign = sum(n for k, n in got.items() if k not in want)
    return Counts(lost=lost, duplicated=duplicated, foreign=foreign, wrong_result=errors,
                  raised=raised)


def label(item: Any) -> str:
    """A short readable name for an item: its id, else its content, else its JSON (a long
    content or JSON shortened whole, saying what it leaves out: arib.ground.shorten)."""
    if isinstance(item, dict):
        if isinstance(item.get("id"), str):
            return f"{item.get('type', 'item')} {item['id']}"
        if isinstance(item.get("content"), str):
            return f"{item.get('role', 'item')} {short_text(item['content'], 48)!r}"
    return short_json(item, 64)


def first_differences(expected: Iterable[Any], seen: Iterable[Any], limit: int = 3) -> str:
    """A short text naming a few lost, extra and foreign items, for a finding's samples: at
    most 400 characters, fewer names per kind rather than a name cut short."""
    want: Counter[str] = Counter()
    names: dict[str, str] = {}
    for item in expected:
        want[canonical(item)] += 1
        names[canonical(item)] = label(item)
    got: Counter[str] = Counter()
    for item in seen:
        got[canonical(item)] += 1
        names.setdefault(canonical(item), label(item))
    lost = [names[k] for k in want if got[k] < want[k]]
    extra = [f"{names[k]} x{got[k]}" for k in got if k in want and got[k] > want[k]]
    foreign = [names[k] for k in got if k not in want]
    for shown in range(max(limit, 1), 0, -1):
        parts = []
        for title, found in (("missing", lost), ("visible too often", extra),
                             ("foreign", foreign)):
            if found:
                more = f" (+{len(found) - shown} more)" if len(found) > shown else ""
                parts.append(f"{title}: " + ", ".join(found[:shown]) + more)
        if len("; ".join(parts)) <= 400:
            break
    return join_within(parts, 400)
