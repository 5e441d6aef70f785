"""ARIB-FIDELITY-001: items of every shape the SDK produces come back equal, as canonical JSON.

The items are plain dicts in the shapes of ``TResponseInputItem`` (openai ``ResponseInputItemParam``
and ``EasyInputMessageParam``): easy and structured messages of every role, assistant output
messages with annotations, logprobs and a refusal, function calls and their outputs (string and
list), reasoning items, an MCP tool listing with a deeply nested JSON schema, a tool search call
whose free-form ``arguments`` carry numbers at the edges of IEEE doubles, a local shell call
whose command is a tuple (it comes back as a list: canonical JSON treats them as equal), an item
reference, text in many scripts and control characters, and one item of ``large_kib`` KiB.
"""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

from arib.checks.base import CheckSpec, Param, Selector, TrialContext, describe
from arib.checks.common import canonical, read_items, tally, trials_param
from arib.ground.model import Counts, Trial
from arib.ground.shorten import join_within

Item = dict[str, Any]

# Every string shape a serializer may mangle: CJK, emoji with ZWJ and skin tone, a flag,
# right-to-left text with direction marks, decomposed combining marks (NFD), an astral
# symbol, JSON-unsafe separators, BOM and zero-width characters, NUL-free control characters,
# quotes, backslashes and markup.
UNICODE_TEXT = (
    "漢字かなカナ한국어 中文; emoji 👩\u200d👩\u200d👧\u200d👦 👍🏽 🇯🇵; "
    "RTL \u200fשלום עולם\u200e مرحبا بالعالم; combining e\u0301 a\u0308 n\u0303 "
    "\u1100\u1161\u11a8; astral 𝄞 𝕏; separators \u2028 \u2029; bom \ufeff zw \u200b\u200c; "
    "controls \t\n\r\x0b\x0c\x1b\x7f\x01\x1f; quotes \" ' ` backslash \\ \\n "
    "markup </script><!-- & -->"
)

BIG_INTS = [0, -1, 2**31 - 1, -(2**31), 2**53 - 1, 2**53, 2**53 + 1, -(2**53 + 1), 2**63 - 1,
            -(2**63)]
FLOATS = [0.1, 0.5, -2.5, 1e-7, 1.0000000000000002, 3.141592653589793, 1e21, 1e300, 5e-324,
          1.7976931348623157e308, 123456789.123456789, 2.0**53 + 2]


def _nested(depth: int, tag: str) -> Any:
    """A JSON schema nested ``depth`` levels, with lists of dicts and empty containers."""
    node: Any = {"type": "string", "description": f"leaf {tag}", "enum": ["a", "b", ""],
                 "default": None, "examples": [[], {}]}
    for level in range(depth):
        node = {"type": "object", "properties": {f"k{level}": node, "empty": {}},
                "required": [f"k{level}"], "additionalProperties": level % 2 == 0,
                "anyOf": [{"minimum": level}, {"maximum": level + 0.5}]}
    return node


def shapes(tag: str, large_kib: int, rng_block: str) -> dict[str, Item]:
    """One item per shape, named; ``tag`` makes every trial's items unique.

    Long (over 80 lines) on purpose: it is a table, one literal item per shape.
    """
    items: dict[str, Item] = {
        "user_text": {"role": "user", "content": f"what is the weather? ({tag})"},
        "user_parts": {
            "type": "message", "role": "user",
            "content": [
                {"type": "input_text", "text": f"describe this ({tag})"},
                {"type": "input_image", "detail": "auto",
                 "image_url": "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAE="},
                {"type": "input_file", "file_id": f"file-{tag}", "filename": "report.pdf"},
            ],
        },
        "system_text": {"role": "system", "content": f"You are terse. ({tag})"},
        "developer_parts": {
            "type": "message", "role": "developer", "status": "completed",
            "content": [{"type": "input_text", "text": f"Use metric units. ({tag})"}],
        },
        "assistant_text": {"role": "assistant", "content": f"Sure. ({tag})", "type": "message"},
        "assistant_output": {
            "id": f"msg_{tag}", "type": "message", "role": "assistant", "status": "completed",
            "content": [
                {"type": "output_text", "text": f"It is 21°C in Zürich ({tag}).",
                 "annotations": [{"type": "url_citation", "start_index": 0, "end_index": 5,
                                  "title": "Weather", "url": "https://example.com/?q=a&b=c"}],
                 "logprobs": [{"token": "It", "bytes": [73, 116], "logprob": -0.0123456789,
                               "top_logprobs": [{"token": "The", "bytes": [84, 104, 101],
                                                 "logprob": -4.5}]}]},
                {"type": "refusal", "refusal": "I will not share the exact address."},
            ],
        },
        "function_call": {
            "type": "function_call", "id": f"fc_{tag}", "call_id": f"call_{tag}",
            "name": "get_weather", "status": "completed",
            "arguments": json.dumps({"city": "Zürich", "units": ["c"], "nested": {
                "a": [1, 2.5, None, True], "quote": "\"x\""}}),
        },
        "function_call_output": {
            "type": "function_call_output", "call_id": f"call_{tag}",
            "output": json.dumps({"temp_c": 21.5, "ok": True, "note": None}),
        },
        "function_call_output_parts": {
            "type": "function_call_output", "call_id": f"call_{tag}_2",
            "output": [{"type": "input_text", "text": f"two results ({tag})"}],
        },
        "reasoning": {
            "type": "reasoning", "id": f"rs_{tag}",
            "summary": [{"type": "summary_text", "text": f"The user wants weather ({tag})."}],
            "content": [{"type": "reasoning_text", "text": "Call get_weather first."}],
            "encrypted_content": None,
        },
        "reasoning_encrypted": {
            "type": "reasoning", "id": f"rs_{tag}_2", "summary": [],
            "encrypted_content": "gAAAAABo" + "Zm9vYmFy" * 16 + "==",
        },
        "unicode": {"role": "user", "content": f"{UNICODE_TEXT} ({tag})"},
        "numbers_and_literals": {
            "type": "tool_search_call", "id": f"ts_{tag}", "call_id": f"call_{tag}_ts",
            "status": "completed", "execution": "client",
            "arguments": {"ints": BIG_INTS, "floats": FLOATS, "true": True, "false": False,
                          "null": None, "empty": "", "名前": "値", "clé": [None, False, 0]},
        },
        "nested": {
            "type": "mcp_list_tools", "id": f"mcpl_{tag}", "server_label": "weather",
            "tools": [{"name": "forecast", "description": None, "annotations": {"ro": True},
                       "input_schema": _nested(24, tag)}],
        },
        "tuple_command": {
            "type": "local_shell_call", "id": f"lsh_{tag}", "call_id": f"call_{tag}_sh",
            "status": "completed",
            "action": {"type": "exec", "command": ("bash", "-lc", "echo 'hi' | wc -c"),
                       "env": {"LANG": "C.UTF-8", "EMPTY": ""}, "timeout_ms": 30000,
                       "working_directory": None},
        },
        "item_reference": {"type": "item_reference", "id": f"msg_{tag}_earlier"},
    }
    if large_kib:
        size = large_kib * 1024
        body = (rng_block * (size // len(rng_block) + 1))[: size - len(tag) - 6]
        items["large"] = {"role": "user", "content": f"{body}[end {tag}]"}
    return items


def _diff(expected: str, seen: str) -> str:
    """Where two canonical JSON texts first differ, with a little context."""
    at = next((i for i, (a, b) in enumerate(zip(expected, seen, strict=False)) if a != b),
              min(len(expected), len(seen)))
    return (f"at char {at} of {len(expected)}: expected {expected[max(at - 12, 0):at + 12]!r}, "
            f"got {seen[max(at - 12, 0):at + 12]!r} (length {len(seen)})")


async def run_trial(ctx: TrialContext) -> Trial:
    """One trial: items of every SDK shape appended, read back and popped; each must be equal."""
    handle = await ctx.open()
    session = handle.session
    tag = f"{ctx.seed:016x}"
    block = "".join(ctx.rng.choices("abcdefghijklmnopqrstuvwxyz0123456789 ,.\n", k=4093))
    named = shapes(tag, ctx.params["large_kib"], block + "é漢🙂")
    order = list(named)
    ctx.rng.shuffle(order)
    # Batches as a runner writes them (a turn's items together), the large item on its own.
    batches: list[list[str]] = [[]]
    for name in order:
        if name == "large" or (batches[-1] and ctx.rng.random() < 0.15):
            batches.append([])
        batches[-1].append(name)
        if name == "large":
            batches.append([])
    batches = [b for b in batches if b]
    expected = [named[name] for batch in batches for name in batch]
    shape_of = {canonical(named[name]): name for name in named}
    errors: list[str] = []
    for batch in batches:
        ctx.log(f"add_items([{', '.join(batch)}])")
        try:
            await session.add_items([named[name] for name in batch])
        except Exception as exc:  # noqa: BLE001 - a refused write is evidence
            errors.append(f"add_items([{', '.join(batch)}]) raised {describe(exc)}")
    ctx.log("get_items(); pop_item()  # the newest item must come back equal too")
    try:
        seen = await read_items(session)
    except Exception as exc:  # noqa: BLE001 - a read that raises shows nothing written
        return Trial(ctx.index, ctx.seed, True,
                     Counts(lost=len(expected), raised=len(errors) + 1), mode="read_raised",
                     sample=f"get_items raised {describe(exc)}", ops=tuple(ctx.ops))
    counts = tally(expected, seen, raised=len(errors))
    got = Counter(canonical(i) for i in seen)
    failed = sorted({shape_of[canonical(i)] for i in expected if got[canonical(i)] == 0})
    notes = list(errors[:2])
    if failed and len(seen) == len(expected):
        for want, have in zip(expected, seen, strict=True):
            want_text, have_text = canonical(want), canonical(have)
            if want_text != have_text:
                notes.append(f"{shape_of[want_text]} {_diff(want_text, have_text)}")
                break
    try:
        popped = await session.pop_item()
    except Exception as exc:  # noqa: BLE001 - a pop that raises returns nothing
        popped, notes = None, [*notes, f"pop_item raised {describe(exc)}"]
        counts = counts + Counts(raised=1)
    newest = canonical(expected[-1])
    if popped is None or canonical(popped) != newest:
        shape = shape_of[newest]
        counts = counts + Counts(lost=1, foreign=int(popped is not None))
        failed = sorted({*failed, f"{shape} (pop_item)"})
        text = "None" if popped is None else _diff(newest, canonical(popped))
        notes.append(f"pop_item returned {shape} {text}")
    if counts.total == 0:
        mode = "exact"
    elif counts.raised and not (counts.lost or counts.foreign):
        mode = "raised"
    else:
        mode = "altered" if counts.foreign else "lost"
    sample = None
    if counts.total:
        sample = join_within([f"{len(failed)}/{len(named)} shapes failed: {', '.join(failed)}",
                              *notes], 400)
    return Trial(ctx.index, ctx.seed, counts.total > 0, counts, mode=mode, sample=sample,
                 ops=tuple(ctx.ops))


CHECK = CheckSpec(
    id="ARIB-FIDELITY-001",
    invariant="items of every shape the SDK produces come back from get_items() and "
    "pop_item() equal to what was written, as canonical JSON",
    fault="messages of every role (string and list content), assistant output with "
    "annotations and logprobs, function calls and outputs, reasoning, MCP tool listing nested "
    "24 deep, numbers at the edges of doubles and int64, literals, text in many scripts and "
    "control characters, a tuple, and one large item, written in seeded batches",
    params=(
        Param("large_kib", 1024, 0, 8192, "size of the one large item in KiB (0: none)"),
        trials_param(2),
    ),
    run_trial=run_trial,
    mutants=(
        "reference_nfc_normalizes_text",
        "reference_truncates_long_strings",
        "reference_corrupts_content",
        "sqlite_big_ints_through_float",
        "advanced_drops_null_fields",
        "async_sqlite_pop_returns_json_text",
        "sqlalchemy_replaces_astral_chars",
    ),
    generated=(
        Selector("reference", "ReferenceSession.get_items", "early_return"),
        Selector("reference", "ReferenceSession.pop_item", "early_return"),
        Selector("sqlite-file", "SQLiteSession.pop_item", "early_return"),
        Selector("advanced-sqlite-file", "AdvancedSQLiteSession.pop_item.<locals>._pop_item_sync",
                 "swap_order"),
        Selector("sqlalchemy-sqlite-file", "SQLAlchemySession._serialize_item", "early_return"),
        Selector("sqlalchemy-sqlite-file", "SQLAlchemySession._deserialize_item", "early_return"),
    ),
    timeout_s=60.0,
)
