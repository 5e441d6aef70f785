"""Samples that stay whole: a JSON value shortened by its structure, and text joined from whole
parts, never cut in the middle of a string.

A finding's samples are read by people and sometimes pasted back into a test: a value cut at
a character count (``{"role":"user","content":"abc``) is neither. ``short_json`` keeps a value
valid JSON and says what it left out inside it (a long string keeps its head and the count of
characters left out, a long list or object its first members and the count of the others,
a deep level its kind and size; the keys that name an item, like ``type`` and ``role``, are
kept first); ``join_within`` keeps whole parts and counts the ones left
out.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

ELLIPSIS = "…"
# From the most generous to the tightest: (characters of a string, members of a list or an
# object, levels of nesting shown).
_STEPS = ((64, 8, 4), (40, 6, 3), (24, 4, 3), (24, 2, 2), (24, 1, 2), (16, 1, 1), (8, 1, 1),
          (4, 1, 1), (0, 0, 1), (0, 0, 0))
# Keys an item is told apart by: kept before the others when an object is shortened.
_NAMING_KEYS = ("type", "role", "id", "name", "call_id", "status")


def short_text(text: str, limit: int) -> str:
    """``text`` when it has at most ``limit`` characters, else its head and the count of the
    characters left out: ``'abcdef…(+120 chars)'``."""
    if len(text) <= limit:
        return text
    return f"{text[:max(limit, 0)]}{ELLIPSIS}(+{len(text) - max(limit, 0)} chars)"


def _shrink(value: Any, chars: int, members: int, depth: int) -> Any:
    if isinstance(value, str):
        return short_text(value, chars)
    if isinstance(value, (list, tuple)):
        if depth <= 0 and value:
            return f"[{ELLIPSIS}{len(value)} items]"
        kept: list[Any] = [_shrink(v, chars, members, depth - 1) for v in value[:members]]
        if len(value) > members:
            kept.append(f"{ELLIPSIS}(+{len(value) - members} more)")
        return kept
    if isinstance(value, dict):
        if depth <= 0 and value:
            return f"{{{ELLIPSIS}{len(value)} keys}}"
        keys = sorted(value, key=lambda k: (_NAMING_KEYS.index(k) if k in _NAMING_KEYS
                                            else len(_NAMING_KEYS)))
        out = {str(k): _shrink(value[k], chars, members, depth - 1) for k in keys[:members]}
        if len(keys) > members:
            out[ELLIPSIS] = f"+{len(keys) - members} more keys"
        return out
    return value


def _dump(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                      default=str)


def short_json(value: Any, limit: int = 64) -> str:
    """The canonical JSON of ``value`` when it fits in ``limit`` characters, else the JSON of
    the value shortened by its structure (strings, members, then depth) until it fits, or as
    short as it goes: always one whole, valid JSON value."""
    text = _dump(value)
    if len(text) <= limit:
        return text
    for chars, members, depth in _STEPS:
        text = _dump(_shrink(value, chars, members, depth))
        if len(text) <= limit:
            break
    return text


def join_within(parts: Sequence[str], limit: int, sep: str = "; ") -> str:
    """The whole ``parts`` joined by ``sep`` that fit in ``limit`` characters, then the count
    of those left out (``(+2 more)``); the first part is always kept whole."""
    kept: list[str] = []
    for i, part in enumerate(parts):
        more = len(parts) - i - 1
        tail = f"{sep}(+{more} more)" if more else ""
        if kept and len(sep.join([*kept, part]) + tail) > limit:
            kept.append(f"(+{len(parts) - i} more)")
            break
        kept.append(part)
    return sep.join(kept)
