"""Driving and judging a session's advanced API against
``arib.checks.openai_agents._adv_model.Model``.

``Recorder`` runs every call through ``ctx.log`` (so a violation replays in order), turns an
exception into evidence, and compares what the session reports with the model: items of a
branch (also at the edges of ``limit``), the branch listing, turns, search, usage and tool
usage. A call that raises where the API documents success, or that returns where it documents
a ValueError, is a violation of its own.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import Any

from arib.checks.base import NotApplicable, TrialContext, describe
from arib.checks.common import canonical, first_differences, label, tally
from arib.checks.openai_agents._adv_model import Figures, Model
from arib.ground.model import Counts, Trial
from arib.ground.shorten import join_within, short_json, short_text

# The advanced API a check needs on the runtime object, else it abstains.
BRANCH_API = ("create_branch_from_turn", "create_branch_from_content", "switch_to_branch",
              "delete_branch", "list_branches")
USAGE_API = ("store_run_usage", "get_session_usage", "get_turn_usage", "get_tool_usage")
TURNS_API = ("get_conversation_turns", "find_turns_by_content", "get_conversation_by_turns")


def require(session: Any, names: Iterable[str]) -> None:
    """Abstain (NotApplicable) unless the runtime object offers every method named."""
    missing = [n for n in names if not callable(getattr(session, n, None))]
    if missing:
        raise NotApplicable(f"{type(session).__name__} offers no {', '.join(missing)}() "
                            f"(the AdvancedSQLiteSession API); verified on the runtime object")

# The SDK's types ``run_result`` builds: CheckSpec.preload of the checks that store usage.
SDK_TYPES = ("agents.run_context", "agents.usage", "openai.types.responses.response_usage")


@dataclass(frozen=True)
class RunOutcome:
    """What ``store_run_usage`` reads of a ``RunResult``: its context wrapper (the SDK's own
    ``RunContextWrapper`` carrying the SDK's ``Usage``), built offline."""

    context_wrapper: Any


def run_result(figures: Figures | None) -> RunOutcome:
    """A run's result carrying ``figures`` as its usage (None: a run without usage)."""
    # The SDK's own types, imported here (the parent imported them: CheckSpec.preload).
    from agents.run_context import RunContextWrapper
    from agents.usage import Usage, _make_input_tokens_details
    from openai.types.responses.response_usage import OutputTokensDetails

    if figures is None:
        wrapper = RunContextWrapper(context=None)
        wrapper.usage = None  # type: ignore[assignment]
        return RunOutcome(wrapper)
    usage = Usage(requests=figures.requests, input_tokens=figures.input_tokens,
                  input_tokens_details=_make_input_tokens_details(cached_tokens=figures.cached),
                  output_tokens=figures.output_tokens,
                  output_tokens_details=OutputTokensDetails(reasoning_tokens=figures.reasoning),
                  total_tokens=figures.total_tokens)
    return RunOutcome(RunContextWrapper(context=None, usage=usage))


class Failed:
    """The value of a call that raised (the exception is already recorded)."""


FAILED = Failed()


class Recorder:
    """One trial's log, problems and counts; ``trial()`` makes its verdict."""

    def __init__(self, ctx: TrialContext) -> None:
        self.ctx = ctx
        self.problems: list[tuple[str, str]] = []
        self.lost = self.duplicated = self.foreign = self.raised = 0
        # Set once a call failed on a lock another connection keeps holding: every later call
        # would wait out the busy timeout again, so they are skipped (the trial is violated).
        self.wedged = False

    def _skip(self, text: str) -> bool:
        if self.wedged:
            self.ctx.log(f"{text}: skipped, the store is locked")
        return self.wedged

    def _raised(self, mode: str, text: str, exc: Exception) -> None:
        self.raised += 1
        self.fail(mode, text)
        self.wedged = self.wedged or "locked" in str(exc).lower()

    def fail(self, mode: str, text: str) -> None:
        """Record one problem of ``mode``, its text shortened to 300 characters (marked)."""
        self.problems.append((mode, short_text(text, 300)))

    async def call(self, text: str, fn: Callable[..., Awaitable[Any]], *args: Any,
                   **kwargs: Any) -> Any:
        """``fn(*args)`` logged as ``text``; an exception becomes a ``raised`` problem."""
        if self._skip(text):
            return FAILED
        self.ctx.log(text)
        try:
            return await fn(*args, **kwargs)
        except Exception as exc:  # noqa: BLE001 - what the backend raises is evidence
            self._raised("raised", f"{text} raised {describe(exc)}", exc)
            return FAILED

    async def refused(self, text: str, fn: Callable[..., Awaitable[Any]], *args: Any,
                      **kwargs: Any) -> None:
        """``fn(*args)`` must raise ValueError, as documented for this misuse."""
        if self._skip(text):
            return
        self.ctx.log(f"{text} (must raise ValueError)")
        try:
            value = await fn(*args, **kwargs)
        except ValueError:
            return
        except Exception as exc:  # noqa: BLE001 - the wrong refusal is evidence
            self._raised("wrong_error", f"{text} raised {describe(exc)}, not ValueError", exc)
            return
        self.fail("misuse_accepted", f"{text} returned {value!r} instead of raising ValueError")

    def items(self, what: str, expected: list[Any], seen: Any) -> None:
        """A read of items must be exactly ``expected``, in order."""
        if seen is FAILED:
            self.lost += len(expected)
            return
        if not isinstance(seen, list):
            self.fail("not_a_list", f"{what} returned {type(seen).__name__}, not a list")
            return
        try:
            counts = tally(expected, seen)
        except (TypeError, ValueError) as exc:
            self.fail("not_an_item", f"{what} returned a value that is not an item: "
                      f"{describe(exc)}")
            return
        self.lost += counts.lost
        self.duplicated += counts.duplicated
        self.foreign += counts.foreign
        if counts.total:
            self.fail("wrong_items", f"{what}: {first_differences(expected, seen)}")
        elif [canonical(i) for i in seen] != [canonical(i) for i in expected]:
            self.fail("wrong_order", f"{what} out of order: {[label(i) for i in seen][:5]}")

    def equal(self, mode: str, what: str, expected: Any, seen: Any) -> None:
        """A report must equal ``expected``."""
        if seen is not FAILED and seen != expected:
            self.fail(mode, f"{what}: expected {_short(expected)}, got {_short(seen)}")

    def trial(self) -> Trial:
        """The trial: violated when a problem was recorded (the first one's mode), with counts."""
        counts = Counts(lost=self.lost, duplicated=self.duplicated, foreign=self.foreign,
                        raised=self.raised)
        if not self.problems:
            return Trial(self.ctx.index, self.ctx.seed, False, counts, mode="exact",
                         ops=tuple(self.ctx.ops))
        sample = join_within([text for _, text in self.problems[:3]], 600)
        return Trial(self.ctx.index, self.ctx.seed, True, counts, mode=self.problems[0][0],
                     sample=sample, ops=tuple(self.ctx.ops))


def _short(value: Any) -> str:
    return short_text(value, 157) if isinstance(value, str) else short_json(value, 160)


# --- reads judged against the model ------------------------------------------------------------

async def check_items(rec: Recorder, session: Any, model: Model, branch: str, who: str,
                      current: str, limits: bool = False, explicit: bool = True) -> None:
    """The branch's items: through the current branch when it is ``current``, by
    ``branch_id`` when ``explicit``, and at every edge of ``limit`` when ``limits``."""
    expected = model.items(branch)
    if current == branch:
        rec.items(f"{who}.get_items() on {branch!r}", expected,
                  await rec.call(f"{who}.get_items()", session.get_items))
    if explicit:
        rec.items(f"{who}.get_items(branch_id={branch!r})", expected,
                  await rec.call(f"{who}.get_items(branch_id={branch!r})", session.get_items,
                                 branch_id=branch))
    if not limits:
        return
    n = len(expected)
    for k in sorted({-1, 0, 1, n - 1, n, n + 1}):
        want = expected if k < 0 else expected[n - k:] if 0 < k <= n else (
            expected if k > n else [])
        rec.items(f"{who}.get_items(limit={k}, branch_id={branch!r})", want,
                  await rec.call(f"{who}.get_items(limit={k}, branch_id={branch!r})",
                                 session.get_items, k, branch_id=branch))


async def check_listing(rec: Recorder, session: Any, model: Model, who: str,
                        current: str) -> None:
    """list_branches reports every branch, with its counts and whether it is current."""
    seen = await rec.call(f"{who}.list_branches()", session.list_branches)
    if seen is FAILED:
        return
    try:
        got = {b["branch_id"]: (b["message_count"], b["user_turns"], b["is_current"])
               for b in seen}
    except (TypeError, KeyError) as exc:
        rec.fail("bad_listing", f"{who}.list_branches() returned {_short(seen)}: {exc!r}")
        return
    if len(got) != len(seen):
        rec.fail("bad_listing", f"{who}.list_branches() lists a branch twice: {_short(seen)}")
    rec.equal("bad_listing", f"{who}.list_branches() (id: messages, user turns, current)",
              _listing_json(model.listing(current)), _listing_json(got))


def _listing_json(listing: dict[str, tuple[int, int, bool]]) -> dict[str, list[Any]]:
    return {b: list(v) for b, v in sorted(listing.items())}


async def check_turns(rec: Recorder, session: Any, model: Model, branch: str, who: str,
                      explicit: bool = False) -> None:
    """get_conversation_turns: every user message, turns 1..k in order, full content."""
    args = {"branch_id": branch} if explicit else {}
    seen = await rec.call(f"{who}.get_conversation_turns({_kw(args)})",
                          session.get_conversation_turns, **args)
    if seen is FAILED:
        return
    want = [{"turn": t, "content": _preview(c, 100), "full_content": c}
            for t, c in model.user_turns(branch)]
    rec.equal("wrong_turns", f"{who}.get_conversation_turns({_kw(args)})", want,
              _turn_rows(seen))


async def check_search(rec: Recorder, session: Any, model: Model, branch: str, term: str,
                       who: str, explicit: bool = False) -> list[int]:
    """find_turns_by_content: exactly the user turns whose text holds ``term``."""
    args = {"branch_id": branch} if explicit else {}
    seen = await rec.call(f"{who}.find_turns_by_content({term!r}{', ' if args else ''}"
                          f"{_kw(args)})", session.find_turns_by_content, term, **args)
    want = [{"turn": t, "content": _preview(c, None), "full_content": c}
            for t, c in model.user_turns(branch) if matches(c, term)]
    if seen is not FAILED:
        rec.equal("wrong_search", f"{who}.find_turns_by_content({term!r})", want,
                  _turn_rows(seen))
    return [w["turn"] for w in want]


async def check_by_turns(rec: Recorder, session: Any, model: Model, branch: str,
                         who: str) -> None:
    """get_conversation_by_turns: every item's type and tool, grouped under its turn."""
    seen = await rec.call(f"{who}.get_conversation_by_turns()", session.get_conversation_by_turns)
    if seen is FAILED:
        return
    try:
        got = {int(t): [(m["type"], m["tool_name"]) for m in rows] for t, rows in seen.items()}
    except (AttributeError, TypeError, KeyError, ValueError) as exc:
        rec.fail("wrong_by_turns", f"{who}.get_conversation_by_turns() returned "
                 f"{_short(seen)}: {exc!r}")
        return
    rec.equal("wrong_by_turns", f"{who}.get_conversation_by_turns()",
              _pairs(model.by_turns(branch)), _pairs(got))


async def check_usage(rec: Recorder, session: Any, model: Model, branch: str, who: str,
                      explicit: bool = False, branches: Iterable[str] = ()) -> None:
    """Usage per turn of ``branch`` (the current one, or named when ``explicit``), and the
    session's totals and those of each of ``branches``."""
    args = {"branch_id": branch} if explicit else {}
    shown = f", branch_id={branch!r}" if explicit else ""
    want = model.visible_usage(branch)
    rows = await rec.call(f"{who}.get_turn_usage({shown[2:]})", session.get_turn_usage, **args)
    if rows is not FAILED:
        rec.equal("wrong_usage", f"{who}.get_turn_usage() on {branch!r}",
                  [usage_row(t, f) for t, f in sorted(want.items())], usage_rows(rows))
    top = model.last_turn(branch)
    for turn in sorted({*want, top, top + 1}):
        one = await rec.call(f"{who}.get_turn_usage({turn}{shown})", session.get_turn_usage,
                             turn, **args)
        if one is not FAILED:
            rec.equal("wrong_usage", f"{who}.get_turn_usage({turn}) on {branch!r}",
                      usage_row(None, want[turn]) if turn in want else {},
                      usage_rows([one])[0] if one else {})
    rec.equal("wrong_total", f"{who}.get_session_usage()", model.session_usage(),
              await rec.call(f"{who}.get_session_usage()", session.get_session_usage))
    for b in branches:
        rec.equal("wrong_total", f"{who}.get_session_usage(branch_id={b!r})",
                  model.session_usage(b),
                  await rec.call(f"{who}.get_session_usage(branch_id={b!r})",
                                 session.get_session_usage, branch_id=b))


async def check_tools(rec: Recorder, session: Any, model: Model, branch: str, who: str) -> None:
    """get_tool_usage: each tool call counted once, in its turn, nothing else."""
    seen = await rec.call(f"{who}.get_tool_usage()", session.get_tool_usage)
    if seen is FAILED:
        return
    try:
        got = Counter({(name, int(turn)): int(n) for name, n, turn in seen})
        turns = [int(turn) for _, _, turn in seen]
    except (TypeError, ValueError) as exc:
        rec.fail("wrong_tools", f"{who}.get_tool_usage() returned {_short(seen)}: {exc!r}")
        return
    want = model.tool_usage(branch)
    if got != want or len(seen) != len(got) or turns != sorted(turns):
        missing = sorted(((n, t, c - got[(n, t)]) for (n, t), c in want.items()
                          if c > got[(n, t)]), key=str)
        extra = sorted(((n, t, c - want[(n, t)]) for (n, t), c in got.items()
                        if c > want[(n, t)]), key=str)
        rec.fail("wrong_tools", f"{who}.get_tool_usage() on {branch!r} (tool, turn, calls): "
                 f"not counted {_short(missing)}; counted too often {_short(extra)}; "
                 f"turns in order: {turns == sorted(turns)}")


def _kw(args: dict[str, Any]) -> str:
    return ", ".join(f"{k}={v!r}" for k, v in args.items())


def _pairs(grouped: dict[int, list[tuple[str, str | None]]]) -> dict[str, list[list[Any]]]:
    return {str(t): [list(p) for p in rows] for t, rows in sorted(grouped.items())}


def _preview(content: Any, limit: int | None) -> str:
    """The documented preview: the text (parts as JSON), cut to ``limit`` chars plus '...'."""
    text = content if isinstance(content, str) else json.dumps(content, ensure_ascii=False)
    return text[:limit] + "..." if limit is not None and len(text) > limit else text


def _turn_rows(seen: Any) -> Any:
    try:
        return [{k: row[k] for k in ("turn", "content", "full_content")} for row in seen]
    except (TypeError, KeyError):
        return seen


def usage_row(turn: int | None, figures: Figures) -> dict[str, Any]:
    """The usage row expected for ``figures``: totals and detail counts, under ``turn`` if given."""
    row: dict[str, Any] = {**figures.totals(), "cached_tokens": figures.cached,
                           "reasoning_tokens": figures.reasoning}
    return row if turn is None else {"user_turn_number": turn, **row}


def usage_rows(rows: Any) -> Any:
    """The fields of usage rows the checks judge (totals and the two detail counts)."""
    try:
        found = []
        for row in rows:
            got = {k: row[k] for k in ("requests", "input_tokens", "output_tokens",
                                       "total_tokens")}
            got["cached_tokens"] = (row.get("input_tokens_details") or {}).get("cached_tokens")
            got["reasoning_tokens"] = (row.get("output_tokens_details") or {}).get(
                "reasoning_tokens")
            if "user_turn_number" in row:
                got = {"user_turn_number": row["user_turn_number"], **got}
            found.append(got)
        return found
    except (TypeError, KeyError, AttributeError):
        return rows


def _ascii_lower(text: str) -> str:
    return "".join(chr(ord(c) + 32) if "A" <= c <= "Z" else c for c in text)


def matches(content: Any, term: str) -> bool:
    """The documented search: the term occurs in the message text (a string, or the text of
    any part), ASCII letters matched without regard to case."""
    texts = [content] if isinstance(content, str) else [
        p.get("text", "") for p in content if isinstance(p, dict)]
    return any(_ascii_lower(term) in _ascii_lower(t) for t in texts if isinstance(t, str))

