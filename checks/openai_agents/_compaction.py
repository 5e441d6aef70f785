"""Shared by the compaction checks (ARIB-COMPACT-*): an offline agent turn that compacts.

An agent wraps its session in ``OpenAIResponsesCompactionSession``; after a turn whose model
response has an id, the Runner asks the wrapper to compact (the *automatic* path), and the
wrapper calls ``client.responses.compact(...)`` and swaps a suffix of the stored history for
the compact output. Here the remote parts are replaced, and nothing else:

- the model is :class:`TurnModel`, a scripted ``Model`` that answers each call with one
  assistant message and a response id (no network, no key);
- the OpenAI client is :class:`CompactClient`: it implements only what the wrapper calls,
  ``responses.compact(**kwargs)``, returning an object shaped like the SDK's
  ``CompactedResponse`` (``output`` items and ``usage``). A check can make the request fail, or
  run a fault *while the request is in flight* (``during``): that is the window in which, in
  production, other writers keep using the store for the seconds the request takes.

The backend stays real (the lane's store, on this trial's root). Which range a compaction must
replace follows the wrapper's documentation (openai-agents 0.24.0): the latest model exchange
(the history the Runner sent, the new input, the response) is matched against the stored
history; when the store holds more than that (a ``SessionSettings.limit`` window), only stores
documented as able to "atomically replace a bounded, model-visible suffix" (SQLiteSession,
AsyncSQLiteSession, SQLAlchemySession on SQLite/PostgreSQL/MySQL, and the reference) compact a
suffix, in input mode, starting at a user message; other stores "require complete coverage"
and skip; explicit ``previous_response_id`` mode requires complete coverage.
"""

from __future__ import annotations

import base64
import hashlib
import importlib
import json
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import anyio

from arib.checks.base import NotApplicable, Param, TrialContext, describe
from arib.checks.common import canonical, label, read_items
from arib.ground.model import Counts, Trial
from arib.ground.shorten import join_within

COMPACTION_MODULE = "agents.memory.openai_responses_compaction_session"
# Stores documented as able to replace a bounded suffix (by exact class), see the docstring.
SUFFIX_STORES = frozenset({"SQLiteSession", "AsyncSQLiteSession", "SQLAlchemySession",
                           "ReferenceSession"})
SUFFIX_DIALECTS = frozenset({"sqlite", "postgresql", "mysql", "mariadb"})
# The checks' own EncryptedSession key: a fixed, public test key (not a secret).
OWN_KEY = base64.urlsafe_b64encode(b"arib-compaction-test-key-public!").decode()
MODES = ("auto", "input", "previous_response_id")
# How every compaction check's fault begins.
TURN = ("one Runner turn through OpenAIResponsesCompactionSession (scripted model, stand-in "
        "compact client)")
# A turn that has not returned by then is hung: an offline turn on an idle store takes well
# under a second; this leaves room for a loaded machine and one SQLite busy wait (5 s).
TURN_TIMEOUT_S = 8.0


# What the compaction trials import (the SDK's Runner, model and response types, the
# wrapper): the compaction checks' CheckSpec.preload, imported once in the parent before their
# runs are forked (a lane's own driver is its TargetSpec.preload). Imported inside the
# functions below, never at module level, so that listing the checks imports no SDK.
PRELOAD = ("agents", "agents.items", "agents.memory", "agents.models.interface",
           "agents.usage", "openai.types.responses",
           "openai.types.responses.response_compaction_item", COMPACTION_MODULE)


def compaction_class() -> type:
    """``OpenAIResponsesCompactionSession`` of the installed SDK; NotApplicable without it, or
    when the SDK predates the bounded-suffix contract these checks hold it to (its
    ``agents.memory.session`` has no ``_CompactionSnapshot``: openai-agents before 0.23)."""
    try:
        module = importlib.import_module(COMPACTION_MODULE)
    except ImportError as exc:
        raise NotApplicable(f"the installed openai-agents has no {COMPACTION_MODULE} "
                            f"({exc}); compaction is not offered") from exc
    cls = getattr(module, "OpenAIResponsesCompactionSession", None)
    if cls is None:
        raise NotApplicable(f"{COMPACTION_MODULE} has no OpenAIResponsesCompactionSession")
    if not hasattr(importlib.import_module("agents.memory.session"), "_CompactionSnapshot"):
        raise NotApplicable("this SDK's compaction wrapper predates the documented bounded-"
                            "suffix replacement (agents.memory.session has no "
                            "_CompactionSnapshot); these checks judge that contract")
    return cls  # type: ignore[no-any-return]


def is_encrypted(store: Any) -> bool:
    """An EncryptedSession (it wraps ``underlying_session`` and has a ``cipher``)."""
    return type(store).__name__ == "EncryptedSession" and "underlying_session" in vars(store)


def view(store: Any) -> Any:
    """What a trial uses for a lane's instance: the store itself, or, for an EncryptedSession
    lane, the lane's EncryptedSession class over the same wrapped store with the checks' own
    key and the lane's ttl (so every instance of the trial reads what the others wrote)."""
    if not is_encrypted(store):
        return store
    return type(store)(store.session_id, store.underlying_session, OWN_KEY, ttl=store.ttl)


def raw_store(store: Any) -> Any:
    """The store under an EncryptedSession (or the store itself)."""
    return store.underlying_session if is_encrypted(store) else store


def offers_suffix(store: Any) -> bool:
    """Whether the wrapper may compact a bounded suffix of this store (documented list)."""
    inner = raw_store(store)
    name = type(inner).__name__
    if name not in SUFFIX_STORES or not callable(getattr(inner, "_get_compaction_snapshot",
                                                         None)):
        return False
    if name == "SQLAlchemySession":
        return inner.engine.dialect.name in SUFFIX_DIALECTS  # type: ignore[no-any-return]
    return True


def pairs_param(default: int) -> Param:
    """The ``pairs`` parameter: how long the stored conversation can be."""
    return Param("pairs", default, 2, 50, "at most this many stored user/assistant pairs")


def always(context: dict[str, Any]) -> bool:
    """The decision hook of the trials: every compaction the Runner offers is approved."""
    return True


def compose(store: Any, client: CompactClient, mode: str, outside: bool) -> tuple[Any, Any]:
    """(session the Runner uses, the compaction wrapper) over ``store`` (a ``view``).

    ``outside`` and an EncryptedSession store: EncryptedSession(compaction(wrapped store)),
    the composition in which EncryptedSession routes ``run_compaction`` itself; otherwise
    compaction(store).
    """
    compaction = compaction_class()
    kwargs = {"client": client, "compaction_mode": mode, "should_trigger_compaction": always}
    if outside and is_encrypted(store):
        inner = compaction(store.session_id, store.underlying_session, **kwargs)
        return type(store)(store.session_id, inner, OWN_KEY, ttl=store.ttl), inner
    wrapper = compaction(store.session_id, store, **kwargs)
    return wrapper, wrapper


# --------------------------------------------------------------------------- the remote stand-ins


@dataclass(frozen=True)
class CompactResponse:
    """Shaped like the SDK's ``CompactedResponse`` where the wrapper reads it: ``output``
    (output items, pydantic or plain) and ``usage`` (None: nothing billed offline)."""

    id: str
    output: list[Any]
    usage: Any = None
    object: str = "response.compaction"


class CompactFailure(RuntimeError):
    """What the stand-in client raises when a check makes the compact request fail."""


@dataclass
class CompactClient:
    """Stands in for AsyncOpenAI: ``responses.compact(**kwargs)`` and nothing else.

    Each request is recorded; ``during`` runs while it is in flight; ``fail`` makes it raise
    (as a network or API error would) after ``during``. The output follows the API's shape: the
    user messages of the request's input, then one compaction item whose id names the request.
    """

    tag: str
    requests: list[dict[str, Any]] = field(default_factory=list)
    outputs: list[list[Any]] = field(default_factory=list)
    during: Callable[[], Awaitable[None]] | None = None
    fail: bool = False

    @property
    def responses(self) -> CompactClient:
        """This client, so that ``client.responses.compact`` reaches ``compact``."""
        return self

    async def compact(self, **kwargs: Any) -> Any:
        """Record one compact request, run ``during``, then raise (``fail``) or answer it."""
        self.requests.append(json.loads(json.dumps(kwargs, default=str)))
        n = len(self.requests)
        if self.during is not None:
            during, self.during = self.during, None
            await during()
        if self.fail:
            raise CompactFailure(f"compact request {n} failed (injected)")
        from openai.types.responses.response_compaction_item import ResponseCompactionItem

        digest = hashlib.sha256(canonical(self.requests[-1]).encode()).hexdigest()[:16]
        users = [{"type": "message", "role": "user",
                  "content": [{"type": "input_text", "text": f"{self.tag} kept: {text}"}]}
                 for text in _user_texts(kwargs.get("input") or [])]
        item = ResponseCompactionItem(id=f"cmp_{self.tag}_{n}", type="compaction",
                                      encrypted_content=f"{self.tag}:{digest}")
        self.outputs.append([*users, item.model_dump(exclude_unset=True)])
        return CompactResponse(id=f"cr_{self.tag}_{n}", output=[*users, item], usage=None)


def _user_texts(items: Sequence[Any]) -> list[str]:
    return [str(i.get("content"))[:40] for i in items if is_user(i)]


def is_user(item: Any) -> bool:
    """A user message, as the wrapper counts one (``role == "user"``)."""
    return isinstance(item, dict) and item.get("role") == "user"


def turn_model(tag: str) -> Any:
    """A scripted Model: every call answers one assistant message with a response id."""
    from agents.items import ModelResponse
    from agents.models.interface import Model
    from agents.usage import Usage
    from openai.types.responses import ResponseOutputMessage, ResponseOutputText

    class TurnModel(Model):
        calls = 0

        async def get_response(self, *args: Any, **kwargs: Any) -> Any:
            TurnModel.calls += 1
            n = TurnModel.calls
            text = ResponseOutputText(type="output_text", text=f"{tag} answer {n}",
                                      annotations=[])
            msg = ResponseOutputMessage(id=f"msg_{tag}_{n}", type="message", role="assistant",
                                        status="completed", content=[text])
            return ModelResponse(output=[msg], usage=Usage(), response_id=f"resp_{tag}_{n}")

        def stream_response(self, *args: Any, **kwargs: Any) -> Any:
            raise NotImplementedError("the compaction checks never stream")

    return TurnModel()


class TurnHung(RuntimeError):
    """The turn did not return within ``TURN_TIMEOUT_S`` (and was cancelled)."""


async def agent_turn(session: Any, model: Any, text: str, limit: int | None
                     ) -> BaseException | None:
    """One Runner turn on ``session``; the exception it raised (``TurnHung`` when it did not
    return within ``TURN_TIMEOUT_S``), or None."""
    from agents import Agent, RunConfig, Runner, set_tracing_disabled
    from agents.memory import SessionSettings

    set_tracing_disabled(True)  # also the SDK's global default: no trace is ever exported
    settings = SessionSettings(limit=limit) if limit is not None else None
    config = RunConfig(tracing_disabled=True, session_settings=settings)
    try:
        with anyio.fail_after(TURN_TIMEOUT_S):
            await Runner.run(Agent(name="compactor", model=model), text, session=session,
                             run_config=config)
    except TimeoutError:
        return TurnHung(f"the turn did not return within {TURN_TIMEOUT_S:.0f}s")
    except Exception as exc:  # noqa: BLE001 - what the turn raised is evidence
        return exc
    return None


def hung(reads: Reads, raised: BaseException | None) -> None:
    """Note a turn that never returned: a compaction must end, whatever it decides."""
    if isinstance(raised, TurnHung):
        reads.note("hung", str(raised))


def turn_items(tag: str, text: str, n: int = 1) -> list[Any]:
    """What a plain turn appends: the user input, then the model's n-th answer."""
    return [{"role": "user", "content": text},
            {"id": f"msg_{tag}_{n}", "type": "message", "role": "assistant",
             "status": "completed",
             "content": [{"type": "output_text", "text": f"{tag} answer {n}", "annotations": []}]}]


# --------------------------------------------------------------------------- scenario and oracle


def history(tag: str, pairs: int, assistant_first: bool) -> list[Any]:
    """A stored conversation: user/assistant pairs (optionally an assistant item first)."""
    items: list[Any] = []
    if assistant_first:
        items.append(_assistant(tag, "opening"))
    for i in range(pairs):
        items.append({"role": "user", "content": f"{tag} question {i}"})
        items.append(_assistant(tag, f"reply {i}"))
    return items


def _assistant(tag: str, what: str) -> dict[str, Any]:
    return {"id": f"old_{tag}_{what.replace(' ', '_')}", "type": "message", "role": "assistant",
            "status": "completed",
            "content": [{"type": "output_text", "text": f"{tag} {what}", "annotations": []}]}


@dataclass(frozen=True)
class Expectation:
    """What the wrapper must do with one turn: compact ``stored[start:]`` in ``mode``, or skip."""

    applies: bool
    start: int = 0
    mode: str = ""

    def describe(self) -> str:
        """The expectation in words, e.g. 'compact from index 3 in input mode'."""
        return (f"compact from index {self.start} in {self.mode} mode" if self.applies
                else "skip (history unchanged)")


def expectation(stored: Sequence[Any], history_len: int, limit: int | None, mode: str,
                suffix: bool) -> Expectation:
    """The documented outcome of the automatic compaction after one plain turn."""
    if limit is None or limit >= history_len:
        resolved = "previous_response_id" if mode == "auto" else mode
        return Expectation(True, 0, resolved)
    if not suffix or mode == "previous_response_id":
        return Expectation(False)
    start = next((i for i in range(history_len - limit, len(stored)) if is_user(stored[i])),
                 None)
    if start is None:
        return Expectation(False)
    return Expectation(True, start, "input")


def request_problem(request: dict[str, Any], exp: Expectation, stored: Sequence[Any],
                    response_id: str) -> str | None:
    """Why a compact request does not cover exactly the range it replaces, or None."""
    if exp.mode == "previous_response_id":
        if request.get("previous_response_id") != response_id or "input" in request:
            return (f"request should chain previous_response_id={response_id!r} for the whole "
                    f"history, got keys {sorted(request)}")
        return None
    sent = request.get("input")
    if not isinstance(sent, list) or not same(sent, stored[exp.start:]):
        got = len(sent) if isinstance(sent, list) else "no"
        return (f"request input should be the {len(stored) - exp.start} items it replaces "
                f"(from index {exp.start}), got {got} items")
    return None


def same(a: Sequence[Any], b: Sequence[Any]) -> bool:
    """Equal as sequences of canonical JSON."""
    return [canonical(x) for x in a] == [canonical(x) for x in b]


def difference(expected: Sequence[Any], seen: Sequence[Any]) -> str:
    """A short text on where ``seen`` departs from ``expected``."""
    want = [canonical(x) for x in expected]
    got = [canonical(x) for x in seen]
    pairs = zip(want, got, strict=False)
    at = next((i for i, (w, g) in enumerate(pairs) if w != g), min(len(want), len(got)))
    where = (f"at {at}: expected {label(expected[at]) if at < len(want) else 'the end'}, "
             f"got {label(seen[at]) if at < len(got) else 'the end'}")
    return f"{len(got)} items where {len(want)} were expected; first difference {where}"


def raised_trial(ctx: TrialContext, what: str, exc: BaseException) -> Trial:
    """A violated trial: the store raised while ``what``, so nothing can be judged after."""
    ctx.log(f"{what} raised {describe(exc)}")
    return Trial(ctx.index, ctx.seed, True, Counts(raised=1), mode="op_raised",
                 sample=f"{what} raised {describe(exc)}", ops=tuple(ctx.ops))


@dataclass
class Reads:
    """What went wrong in one trial: each problem with its kind, in the order seen."""

    kinds: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    raised: int = 0  # calls that raised (a wrong answer is counted by the trial)

    def note(self, kind: str, text: str) -> None:
        """Record one problem of ``kind`` (the trial's mode is the first kind noted)."""
        self.kinds.append(kind)
        self.problems.append(f"{kind}: {text}")

    @property
    def mode(self) -> str | None:
        """The kind of the first problem noted, or None."""
        return self.kinds[0] if self.kinds else None

    def sample(self) -> str | None:
        """The problems noted, joined and cut to 400 characters, or None."""
        return join_within(self.problems, 400) or None

    def trial(self, ctx: TrialContext, counts: Counts, held_mode: str) -> Trial:
        """The trial: violated when a problem was noted (its first kind is the mode)."""
        return Trial(ctx.index, ctx.seed, self.mode is not None, counts,
                     mode=self.mode or held_mode, sample=self.sample(), ops=tuple(ctx.ops))

    async def expect(self, ctx: TrialContext, who: str, session: Any, expected: Sequence[Any],
                     limit: int | None = None) -> list[Any] | None:
        """``session.get_items(limit)`` must equal ``expected`` (its newest ``limit``)."""
        want = list(expected) if limit is None else list(expected)[-limit:] if limit else []
        call = f"{who}.get_items({'' if limit is None else limit})"
        ctx.log(call)
        try:
            seen = await read_items(session, limit)
        except Exception as exc:  # noqa: BLE001 - a read that raises shows nothing
            self.raised += 1
            self.note("read_raised", f"{call} raised {describe(exc)}")
            return None
        if not same(want, seen):
            self.note("wrong_history", f"{call}: {difference(want, seen)}")
        return seen
