"""The ``async-only`` API value (arib.targets.langgraph.lanes): a saver that serves the async
half and refuses every sync call from any thread. verify_api accepts the claim on such a saver
and refuses it, naming what it saw, on one whose sync half answers; ARIB-CKPT-008 holds on a
toy async-only saver that refuses its sync half and is violated on one whose sync ``put``
answers without storing. The toys keep their checkpoints in an InMemorySaver they wrap, so
their async half never reaches their own sync methods (InMemorySaver's async methods call its
sync ones)."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import anyio
import pytest
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.memory import InMemorySaver

from arib.ground.model import Verdict
from arib.targets.base import BuildContext, Handle, TargetSpec
from arib.targets.langgraph import lanes as lg
from tests.checkrun import run_small


class AsyncOnlySaver(BaseCheckpointSaver[str]):
    """Serves the async half from a wrapped InMemorySaver; every sync method refuses."""

    def __init__(self) -> None:
        super().__init__()
        self.inner = InMemorySaver()

    def get_next_version(self, current: Any, channel: Any) -> Any:
        return self.inner.get_next_version(current, channel)

    def _refuse(self, method: str) -> Any:
        raise NotImplementedError(f"{type(self).__name__} serves only the async API: "
                                  f"{method}() is unavailable")

    def get_tuple(self, config: Any) -> Any:
        return self._refuse("get_tuple")

    def list(self, config: Any, **kwargs: Any) -> Any:  # type: ignore[override]
        return self._refuse("list")

    def put(self, config: Any, checkpoint: Any, metadata: Any, new_versions: Any) -> Any:
        return self._refuse("put")

    def put_writes(self, config: Any, writes: Any, task_id: str, task_path: str = "") -> None:
        self._refuse("put_writes")

    def delete_thread(self, thread_id: str) -> None:
        self._refuse("delete_thread")

    async def aget_tuple(self, config: Any) -> Any:
        return self.inner.get_tuple(config)

    async def alist(self, config: Any, **kwargs: Any) -> Any:  # type: ignore[override]
        for item in self.inner.list(config, **kwargs):
            yield item

    async def aput(self, config: Any, checkpoint: Any, metadata: Any,
                   new_versions: Any) -> Any:
        return self.inner.put(config, checkpoint, metadata, new_versions)

    async def aput_writes(self, config: Any, writes: Any, task_id: str,
                          task_path: str = "") -> None:
        self.inner.put_writes(config, writes, task_id, task_path)

    async def adelete_thread(self, thread_id: str) -> None:
        self.inner.delete_thread(thread_id)


class PretendingPutSaver(AsyncOnlySaver):
    """The defect: its sync ``put`` answers with the config it would have made, storing
    nothing (a sync graph run believes the checkpoint saved)."""

    def put(self, config: Any, checkpoint: Any, metadata: Any, new_versions: Any) -> Any:
        conf = config["configurable"]
        return {"configurable": {"thread_id": conf["thread_id"],
                                 "checkpoint_ns": conf.get("checkpoint_ns", ""),
                                 "checkpoint_id": checkpoint["id"]}}


class AnsweringSaver(AsyncOnlySaver):
    """Its sync half answers from any thread (through the wrapped saver): not async-only."""

    def get_tuple(self, config: Any) -> Any:
        return self.inner.get_tuple(config)


def _toy_lane(cls: type, name: str) -> TargetSpec:
    async def build(ctx: BuildContext) -> Handle:
        from arib.targets.langgraph.services import private_handle

        return private_handle(cls(), f"{cls.__name__} keeps its checkpoints in this object")

    return dataclasses.replace(lg.MEMORY, name=name, backend=cls.__name__, module=__name__,
                               build=build, description=f"toy {cls.__name__}",
                               traits={"kind": "checkpointer", "api": lg.ASYNC_ONLY})


@pytest.fixture
def toys(monkeypatch: pytest.MonkeyPatch) -> dict[str, TargetSpec]:
    """The toy lanes, installed as plugin lanes declaring ``api: async-only``."""
    lanes = {cls.__name__: _toy_lane(cls, f"toy-{cls.__name__.lower()}")
             for cls in (AsyncOnlySaver, PretendingPutSaver, AnsweringSaver)}
    monkeypatch.setattr(lg, "plugin_specs", lambda: tuple(lanes.values()))
    return lanes


def _verify(lane: TargetSpec, obj: Any) -> str | None:
    return anyio.run(lg.verify_api, lane, obj)


def test_an_async_only_claim_is_true_on_a_saver_refusing_its_sync_half(
        toys: dict[str, TargetSpec]) -> None:
    assert lg.API[toys["AsyncOnlySaver"].name] == "async-only"
    assert _verify(toys["AsyncOnlySaver"], AsyncOnlySaver()) is None
    assert lg.api_of(AsyncOnlySaver()) == "async-only"
    assert lg.is_async("async-only") and not lg.serves_sync("async-only")


def test_an_async_only_claim_is_false_when_a_sync_call_answers_or_the_async_half_refuses(
        toys: dict[str, TargetSpec], tmp_path: Path) -> None:
    lane = toys["AsyncOnlySaver"]  # verify_api judges the object it is given against the claim
    answers = _verify(toys["AnsweringSaver"], AnsweringSaver())
    assert answers is not None
    assert answers.startswith("false claim by target 'toy-answeringsaver': API says "
                              "'async-only' but on AnsweringSaver, get_tuple() from the event "
                              "loop gave ok, from a worker thread gave ok and aget_tuple() gave "
                              "ok (which is 'both')"), answers
    assert answers.endswith("fix KIND and API in targets/langgraph/lanes.py")

    # a built-in async saver: its sync half answers from a worker thread (async, not async-only)
    async def async_sqlite() -> str | None:
        import aiosqlite
        from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

        async with aiosqlite.connect(str(tmp_path / "a.db")) as conn:
            return await lg.verify_api(lane, AsyncSqliteSaver(conn))

    seen = anyio.run(async_sqlite)
    assert seen is not None and ("get_tuple() from the event loop gave InvalidStateError, from "
                                 "a worker thread gave ok and aget_tuple() gave ok (which is "
                                 "'async')") in seen, seen
    # a sync saver: its async half refuses
    import sqlite3

    from langgraph.checkpoint.sqlite import SqliteSaver

    conn = sqlite3.connect(tmp_path / "s.db", check_same_thread=False)
    try:
        refused = _verify(lane, SqliteSaver(conn))
    finally:
        conn.close()
    assert refused is not None and ("aget_tuple() gave NotImplementedError (which is 'sync')"
                                    in refused), refused


def test_a_claim_outside_the_api_values_is_refused_naming_them(
        monkeypatch: pytest.MonkeyPatch) -> None:
    odd = dataclasses.replace(lg.MEMORY, name="plug-odd",
                              traits={"kind": "checkpointer", "api": "async_only"})
    monkeypatch.setattr(lg, "plugin_specs", lambda: (odd,))
    found = _verify(odd, InMemorySaver())
    assert found == ("lane 'plug-odd' claims API 'async_only'; the rule: API is one of sync, "
                     "async, both, async-only; fix KIND and API in targets/langgraph/lanes.py")


def test_ckpt_008_holds_on_an_async_only_saver_refusing_its_sync_half(
        toys: dict[str, TargetSpec]) -> None:
    finding = run_small("ARIB-CKPT-008", {"trials": 1, "steps": 2},
                        lane=toys["AsyncOnlySaver"])
    assert finding.verdict is Verdict.HELD, (finding.samples, finding.reason)
    assert finding.trials == 1 and finding.violating_trials == 0


def test_ckpt_008_is_violated_on_an_async_only_saver_whose_sync_put_pretends(
        toys: dict[str, TargetSpec]) -> None:
    finding = run_small("ARIB-CKPT-008", {"trials": 1, "steps": 2},
                        lane=toys["PretendingPutSaver"])
    assert finding.verdict is Verdict.VIOLATED, (finding.samples, finding.reason)
    assert finding.violating_trials == finding.trials == 1
    assert "wrong" in finding.modes, finding.modes
    assert any("put from a worker thread on PretendingPutSaver (it serves only the async "
               "half) answered" in sample for sample in finding.samples), finding.samples
    assert any("put from a worker thread" in op for op in finding.ops), finding.ops
