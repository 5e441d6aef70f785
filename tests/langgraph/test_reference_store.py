"""Our ReferenceStore answers as InMemoryStore does on one scripted sequence, keeps whole
labels in prefixes, orders search newest first, and commits a batch whole or not at all."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from langgraph.store.base import GetOp, MatchCondition, PutOp
from langgraph.store.memory import InMemoryStore

from arib.targets.langgraph.reference_store import ReferenceStore


def _script(store: Any) -> list[Any]:
    """What a store answers to one sequence of puts, updates, deletes and reads."""
    store.put(("users", "a"), "k1", {"n": 1, "tag": "x"})
    store.put(("users", "a"), "k2", {"n": 2, "tag": "y"})
    store.put(("users", "ab"), "k1", {"n": 3, "tag": "x"})
    store.put(("docs",), "d", {"text": "žluťoučký"})
    store.put(("users", "a"), "k1", {"n": 10, "tag": "x"})  # update
    store.put(("docs",), "gone", {"x": 1})
    store.delete(("docs",), "gone")

    def keys(items: list[Any]) -> list[tuple[tuple[str, ...], str, Any]]:
        return sorted((item.namespace, item.key, item.value["n"]) for item in items)

    got = store.get(("users", "a"), "k1")
    return [
        (got.value, got.key, got.namespace),
        store.get(("docs",), "gone"),
        keys(store.search(("users",))),
        keys(store.search(("users", "a"))),
        keys(store.search(("users",), filter={"tag": "x"})),
        keys(store.search(("users",), filter={"n": {"$gt": 2}})),
        len(store.search(("users",), limit=2)) + len(store.search(("users",), offset=2)),
        store.list_namespaces(),
        store.list_namespaces(prefix=("users",)),
        store.list_namespaces(suffix=("a",)),
        store.list_namespaces(prefix=("users", "*")),
        store.list_namespaces(max_depth=1),
    ]


def test_it_answers_as_in_memory_store_does(tmp_path: Path) -> None:
    ours = ReferenceStore(tmp_path / "s.db")
    try:
        assert _script(ours) == _script(InMemoryStore())
    finally:
        ours.dispose()


def test_search_lists_the_newest_put_first_and_a_prefix_is_whole_labels(tmp_path: Path) -> None:
    store = ReferenceStore(tmp_path / "s.db")
    try:
        for key in ("a", "b", "c"):
            store.put(("n",), key, {"k": key})
        store.put(("n",), "a", {"k": "a2"})
        store.put(("nn",), "z", {"k": "z"})
        assert [item.key for item in store.search(("n",))] == ["a", "c", "b"]
        assert store.search(("n",))[0].created_at < store.search(("n",))[0].updated_at
    finally:
        store.dispose()


def test_a_batch_is_whole_or_nothing_and_durable_for_another_instance(tmp_path: Path) -> None:
    first = ReferenceStore(tmp_path / "s.db")
    second = ReferenceStore(tmp_path / "s.db")
    try:
        with pytest.raises(TypeError, match="unknown operation"):
            first.batch([PutOp(("n",), "k", {"v": 1}), MatchCondition("prefix", ("n",))])
        assert second.batch([GetOp(("n",), "k")]) == [None]
        first.batch([PutOp(("n",), "k", {"v": 2})])
        got = second.get(("n",), "k")
        assert got is not None and got.value == {"v": 2}
    finally:
        first.dispose()
        second.dispose()


def test_ttl_sweeps_only_expired_items_and_a_read_refreshes(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import time
    import types

    from arib.targets.langgraph import reference_store

    # The store's wall clock, moved by the test: what expires is decided by the clock alone,
    # never by how long a sleep took on a loaded machine.
    clock = [1_000_000.0]
    monkeypatch.setattr(reference_store, "time", types.SimpleNamespace(time=lambda: clock[0]))
    store = ReferenceStore(tmp_path / "s.db", ttl={"refresh_on_read": True})

    def keys() -> list[str]:
        return [i.key for i in store.search(("t",), refresh_ttl=False)]

    try:
        store.batch([PutOp(("t",), "short", {"v": 1}, None, 0.002),  # 120 ms
                     PutOp(("t",), "read", {"v": 2}, None, 0.002),
                     PutOp(("t",), "long", {"v": 3}, None, 60.0),
                     PutOp(("t",), "none", {"v": 4})])
        clock[0] += 0.08
        store.get(("t",), "read")  # refreshed: 120 ms from now
        clock[0] += 0.06  # "short" is 140 ms old, "read" 60 ms since its read
        assert store.sweep_ttl() == 1
        assert keys() == ["none", "long", "read"]
        clock[0] += 0.07  # "read" is 130 ms past its read: the sweeper's to delete
        done = store.start_ttl_sweeper(0.0001)  # every 6 ms of real time
        deadline = time.monotonic() + 30
        while "read" in keys() and time.monotonic() < deadline:
            time.sleep(0.005)
        assert store.stop_ttl_sweeper(10.0) and done.done()
        assert keys() == ["none", "long"]
    finally:
        store.dispose()


def test_an_index_ranks_the_indexed_texts(tmp_path: Path) -> None:
    from arib.checks.langgraph._semantic import letters

    store = ReferenceStore(tmp_path / "s.db", index={"dims": 26, "embed": letters,
                                                     "fields": ["text"]})
    try:
        store.put(("d",), "exact", {"text": "abcd"})
        store.put(("d",), "near", {"text": "abcx"})
        store.put(("d",), "off", {"text": "abcd"}, index=False)
        store.put(("d",), "tags", {"text": "zz", "tags": ["q", "abcd"]}, index=["tags[*]"])
        found = [(i.key, i.score) for i in store.search(("d",), query="abcd")]
        assert [k for k, _ in found] in (["exact", "tags", "near", "off"],
                                         ["tags", "exact", "near", "off"])
        assert found[-1][1] is None and found[2][1] == pytest.approx(0.75)
        store.delete(("d",), "exact")
        assert [i.key for i in store.search(("d",), query="abcd", limit=1)] == ["tags"]
    finally:
        store.dispose()
