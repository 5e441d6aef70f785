"""Shared by the oas-redis--*.py reproductions: RedisSession of openai-agents-session 0.1.0, used
as its README shows (an async redis-py client), on a throwaway redis-server that arib's
ServiceManager starts and stops; and a stand-in for the OpenAI client's responses.compact, for
the reproductions that compact through the SDK's OpenAIResponsesCompactionSession."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from types import SimpleNamespace
from typing import Any

from arib.ground.services import ServiceManager


def on_redis(scenario: Callable[[str], Coroutine[Any, Any, bool]]) -> bool:
    """Run ``scenario(url)`` against a fresh redis-server; what it returned."""
    with ServiceManager(environ={}) as manager:
        return asyncio.run(scenario(manager.start("redis").url))


def texts(items: list[object]) -> list[object]:
    """The contents of session items, for printing."""
    return [item.get("content") if isinstance(item, dict) else item for item in items]


class StandInCompactClient:
    """Stands in for AsyncOpenAI where OpenAIResponsesCompactionSession calls it:
    ``client.responses.compact(**kwargs)`` answers one summary message; ``during`` (a
    coroutine function) runs while the request is in flight, as a slow API call lets other
    clients act."""

    def __init__(self, during: Callable[[], Coroutine[Any, Any, None]] | None = None) -> None:
        self.during = during
        self.requests = 0

    @property
    def responses(self) -> StandInCompactClient:
        """This object, so that ``client.responses.compact`` reaches ``compact``."""
        return self

    async def compact(self, **kwargs: Any) -> Any:
        """One compact request: run ``during``, then answer a one-message summary."""
        self.requests += 1
        if self.during is not None:
            await self.during()
        summary = {"type": "message", "role": "user",
                   "content": [{"type": "input_text", "text": f"summary {self.requests}"}]}
        return SimpleNamespace(id=f"cr_{self.requests}", output=[summary], usage=None)


def one_answer_model(inputs: list[Any] | None = None) -> Any:
    """An offline agents Model: each call answers one assistant message, with a response id;
    the input of each call is appended to ``inputs`` when given."""
    from agents.items import ModelResponse
    from agents.models.interface import Model
    from agents.usage import Usage
    from openai.types.responses import ResponseOutputMessage, ResponseOutputText

    class OneAnswer(Model):
        async def get_response(self, *args: Any, **kwargs: Any) -> Any:
            if inputs is not None:
                inputs.append(kwargs.get("input", args[1] if len(args) > 1 else None))
            part = ResponseOutputText(type="output_text", text="an answer", annotations=[])
            message = ResponseOutputMessage(id="msg_answer", type="message", role="assistant",
                                            status="completed", content=[part])
            return ModelResponse(output=[message], usage=Usage(), response_id="resp_answer")

        def stream_response(self, *args: Any, **kwargs: Any) -> Any:
            raise NotImplementedError("these reproductions never stream")

    return OneAnswer()


async def compacting_turn(store: Any, client: StandInCompactClient, question: str,
                          limit: int | None = None, inputs: list[Any] | None = None) -> None:
    """One Runner turn on ``store`` wrapped in the SDK's OpenAIResponsesCompactionSession
    (input mode, compaction after every turn), the way an agent compacts its history;
    ``limit``: the run's SessionSettings.limit; ``inputs``: what the model was sent."""
    from agents import Agent, RunConfig, Runner, set_tracing_disabled
    from agents.memory import OpenAIResponsesCompactionSession, SessionSettings

    set_tracing_disabled(True)
    session = OpenAIResponsesCompactionSession(
        store.session_id, store, client=client,  # type: ignore[arg-type]
        compaction_mode="input", should_trigger_compaction=lambda context: True)
    settings = None if limit is None else SessionSettings(limit=limit)
    await Runner.run(Agent(name="compactor", model=one_answer_model(inputs)), question,
                     session=session,
                     run_config=RunConfig(tracing_disabled=True, session_settings=settings))
