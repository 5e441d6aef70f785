"""Pure conversation arithmetic for the reference backend's branches, turns and usage.

Everything here is a function of a branch's item list (oldest first), so nothing is stored
that could drift from the items: the turn of an item is the number of user messages up to and
including it (items before the first user message are turn 0), a turn's anchor is its first
item, and a turn is "emptied" exactly when its anchor is gone.

The classification of an item (``message_type``) and the name of the tool it calls
(``tool_name``) follow the item shapes the openai-agents SDK writes: a user or assistant
message by its role, anything else by its ``type``; a function or custom tool call by its
(namespace-qualified) ``name``, an MCP call by ``server_label.name``, a hosted tool call by
its type.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from typing import Any

# Item types that are one tool call each (get_tool_usage counts them): every kind the SDK
# records as a ToolCallItem.
TOOL_CALL_TYPES = frozenset({
    "tool_call", "function_call", "computer_call", "file_search_call", "web_search_call",
    "code_interpreter_call", "tool_search_call", "custom_tool_call", "mcp_call",
    "mcp_approval_request", "shell_call", "apply_patch_call", "image_generation_call",
    "local_shell_call",
})
# Hosted tool calls carry no name: the tool is named by the call's type.
HOSTED_TYPES = frozenset({
    "computer_call", "file_search_call", "web_search_call", "code_interpreter_call",
    "shell_call", "apply_patch_call", "tool_search_call", "tool_search_output",
    "image_generation_call", "local_shell_call",
})
PREVIEW_CHARS = 100


def is_user(item: Any) -> bool:
    """A user message: a dict whose role is ``user``."""
    return isinstance(item, dict) and item.get("role") == "user"


def turn_numbers(items: Sequence[Any]) -> list[int]:
    """The turn of each item: how many user messages there are up to and including it."""
    turns, turn = [], 0
    for item in items:
        turn += is_user(item)
        turns.append(turn)
    return turns


def turn_anchors(items: Sequence[Any], keys: Sequence[int]) -> dict[int, int]:
    """Each turn's anchor: the key (row id) of its first item."""
    anchors: dict[int, int] = {}
    for turn, key in zip(turn_numbers(items), keys, strict=True):
        anchors.setdefault(turn, key)
    return anchors


def message_type(item: Any) -> str:
    """``user`` / ``assistant`` by role, else the item's type, else ``other``."""
    if isinstance(item, dict):
        if item.get("role") in ("user", "assistant"):
            return str(item["role"])
        if item.get("type"):
            return str(item["type"])
    return "other"


def tool_name(item: Any) -> str | None:
    """The name of the tool an item calls or answers, None for other items."""
    if not isinstance(item, dict):
        return None
    kind = item.get("type")
    if kind in ("mcp_call", "mcp_approval_request") and "server_label" in item:
        label, name = item.get("server_label"), item.get("name")
        parts = [str(p) for p in (label, name) if p]
        return ".".join(parts) or None
    if kind in HOSTED_TYPES:
        return "tool_search" if kind in ("tool_search_call", "tool_search_output") else str(kind)
    name = item.get("name")
    if name is None:
        return None
    namespace = item.get("namespace")
    if isinstance(namespace, str) and namespace and namespace != name:
        return f"{namespace}.{name}"
    return str(name)


def tool_usage(items: Sequence[Any]) -> list[tuple[str | None, int, int]]:
    """(tool, calls, turn) per tool and turn, by turn: each call counted once; a tool-search
    output counts only in a turn without its call."""
    turns = turn_numbers(items)
    calls: Counter[tuple[int, str | None]] = Counter()
    searched = {(t, tool_name(i)) for i, t in zip(items, turns, strict=True)
                if message_type(i) == "tool_search_call"}
    for item, turn in zip(items, turns, strict=True):
        kind = message_type(item)
        name = tool_name(item)
        if kind in TOOL_CALL_TYPES:
            calls[(turn, name)] += 1
        elif kind == "tool_search_output" and (turn, name) not in searched:
            calls[(turn, name)] += 1
    return [(name, n, turn) for (turn, name), n in sorted(calls.items(), key=_usage_order)]


def _usage_order(entry: tuple[tuple[int, str | None], int]) -> tuple[int, str]:
    (turn, name), _ = entry
    return turn, name or ""


def preview(content: Any, limit: int | None = None) -> str:
    """Content as text (a list of parts as JSON), cut to ``limit`` characters plus "..."."""
    text = content if isinstance(content, str) else json.dumps(content, ensure_ascii=False)
    return text[:limit] + "..." if limit is not None and len(text) > limit else text


def _ascii_lower(text: str) -> str:
    return "".join(chr(ord(c) + 32) if "A" <= c <= "Z" else c for c in text)


def contains(content: Any, term: str) -> bool:
    """True when the text of ``content`` (a string, or any part's ``text``) holds ``term``,
    matching ASCII letters without regard to case."""
    texts = [content] if isinstance(content, str) else [
        part.get("text", "") for part in content if isinstance(part, dict)
    ] if isinstance(content, list) else []
    needle = _ascii_lower(term)
    return any(isinstance(t, str) and needle in _ascii_lower(t) for t in texts)


def user_turns(items: Sequence[Any], stamps: Sequence[str | None],
               term: str | None = None) -> list[dict[str, Any]]:
    """The user turns of a branch (those containing ``term`` when given), in turn order."""
    found = []
    for item, turn, stamp in zip(items, turn_numbers(items), stamps, strict=True):
        if not is_user(item):
            continue
        content = item.get("content", "")
        if term is not None and not contains(content, term):
            continue
        found.append({
            "turn": turn,
            "content": preview(content, None if term is not None else PREVIEW_CHARS),
            "full_content": content,
            "timestamp": stamp,
            "can_branch": True,
        })
    return found


def by_turns(items: Sequence[Any]) -> dict[int, list[dict[str, str | None]]]:
    """Every item's type and tool name, grouped by turn, in order."""
    grouped: dict[int, list[dict[str, str | None]]] = {}
    for item, turn in zip(items, turn_numbers(items), strict=True):
        grouped.setdefault(turn, []).append({"type": message_type(item),
                                             "tool_name": tool_name(item)})
    return grouped


def window(items: list[Any], limit: int | None) -> list[Any]:
    """The newest ``limit`` items (all for None or a negative limit, none for 0)."""
    if limit is None or limit < 0:
        return items
    return items[max(len(items) - limit, 0):] if limit else []
