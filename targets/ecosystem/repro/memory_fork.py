"""plainredis_fork.py's fork on LangGraph's own InMemorySaver, which versions a channel with
a random part (get_next_version): both lines keep their values."""

from __future__ import annotations

from typing import Any

from langgraph.checkpoint.base import empty_checkpoint
from langgraph.checkpoint.memory import InMemorySaver


def put(saver: Any, parent: Any, cid: str, value: str, version: Any) -> Any:
    checkpoint = empty_checkpoint()
    checkpoint["id"] = cid
    checkpoint["channel_values"] = {"value": value}
    checkpoint["channel_versions"] = {"value": version}
    return saver.put(parent, checkpoint, {"step": 0}, {"value": version})


def main() -> None:
    saver = InMemorySaver()
    start = {"configurable": {"thread_id": "t", "checkpoint_ns": ""}}
    v1 = saver.get_next_version(None, None)
    base = put(saver, start, "1ef00000-0000-6000-8000-000000000000", "base", v1)
    main_line = put(saver, base, "1ef00000-0000-6000-8000-000000000001", "main",
                    saver.get_next_version(v1, None))
    put(saver, base, "1ef00000-0000-6000-8000-000000000002", "fork",
        saver.get_next_version(v1, None))
    print(f"main line's checkpoint reads {saver.get_tuple(main_line).checkpoint['channel_values']}")


if __name__ == "__main__":
    main()
