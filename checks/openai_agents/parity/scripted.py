"""An offline, deterministic model for the parity workflows (works on SDK 0.19.2 and 0.24.0).

``agents.testing.ScriptedModel`` exists from 0.24.0 on but not in 0.19.x, so the gate keeps its
own small ``Model`` subclass: each call pops the next scripted step, which is a list of output
items, an exception to raise, or a ``Block`` that signals it was entered and then waits forever
(so a workflow can cancel the run at a known point). Every id is fixed by the caller; no
timestamps, no randomness, no network, no API key.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import anyio
from agents.items import ModelResponse
from agents.models.interface import Model
from agents.usage import Usage
from openai.types.responses import (
    ResponseFunctionToolCall,
    ResponseOutputMessage,
    ResponseOutputText,
)


class ScriptedFailure(RuntimeError):
    """The error a scripted model step raises on purpose (a transient model failure)."""


class ScriptExhaustedError(RuntimeError):
    """The runner called the scripted model more often than the workflow scripted."""


@dataclass
class Block:
    """A step that sets ``entered`` and then waits until the run is cancelled."""

    entered: anyio.Event = field(default_factory=anyio.Event)


Step = Sequence[Any] | BaseException | Block


def plain(value: Any) -> Any:
    """``value`` as plain JSON data (pydantic models dumped, tuples as lists)."""
    return json.loads(json.dumps(value, ensure_ascii=False, default=_default))


def _default(value: Any) -> Any:
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        return dump(mode="json", exclude_unset=True)
    if isinstance(value, (set, frozenset)):
        return sorted(value)
    raise TypeError(f"cannot record a value of type {type(value).__name__!r} as JSON: {value!r}")


def message(item_id: str, text: str) -> ResponseOutputMessage:
    """A completed assistant message with one output_text part."""
    return ResponseOutputMessage(
        id=item_id,
        type="message",
        role="assistant",
        status="completed",
        content=[ResponseOutputText(type="output_text", text=text, annotations=[])],
    )


def function_call(item_id: str, call_id: str, name: str, arguments: dict[str, Any]) -> Any:
    """A completed function_call output item with JSON arguments."""
    return ResponseFunctionToolCall(
        id=item_id,
        call_id=call_id,
        type="function_call",
        name=name,
        arguments=json.dumps(arguments, ensure_ascii=False, sort_keys=True),
        status="completed",
    )


class ScriptedModel(Model):
    """Returns scripted responses in order and reports every input it was given."""

    def __init__(
        self, steps: Sequence[Step], on_input: Callable[[Any], None] | None = None
    ) -> None:
        self._steps = list(steps)
        self._on_input = on_input
        self.calls = 0

    @property
    def remaining(self) -> int:
        """Scripted steps not consumed yet."""
        return len(self._steps)

    async def get_response(  # type: ignore[override]
        self,
        system_instructions: str | None,
        input: Any,
        model_settings: Any,
        tools: Any,
        output_schema: Any,
        handoffs: Any,
        tracing: Any,
        *args: Any,
        **kwargs: Any,
    ) -> ModelResponse:
        """Report the input and return the next scripted response (or raise or block)."""
        self.calls += 1
        if self._on_input is not None:
            self._on_input(input)
        if not self._steps:
            raise ScriptExhaustedError(
                f"scripted model called {self.calls} times but only "
                f"{self.calls - 1} responses were scripted"
            )
        step = self._steps.pop(0)
        if isinstance(step, BaseException):
            raise step
        if isinstance(step, Block):
            step.entered.set()
            await anyio.sleep_forever()
            raise AssertionError("a Block step only ends by cancellation")
        output: list[Any] = list(step)
        return ModelResponse(output=output, usage=Usage(), response_id=None)

    def stream_response(  # type: ignore[override]
        self, *args: Any, **kwargs: Any
    ) -> AsyncIterator[Any]:
        """Refuse: the parity workflows never stream."""
        raise NotImplementedError("the parity workflows never stream")
