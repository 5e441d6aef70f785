"""ARIB-USAGE-002: get_tool_usage counts every kind of tool call the SDK records.

``get_tool_usage`` documents "all tool usage by turn" as (tool, count, turn). The SDK's own
``ToolCallItem`` covers function calls, computer calls, file and web searches, MCP calls,
code interpreter calls, image generation calls and local shell calls (``agents.items.
ToolCallItemTypes``). A turn holding one call of each (with the outputs that answer them) must
count each once, named as the SDK names it elsewhere: a function by its name, an MCP tool by
``server_label.name``, a hosted tool by the call's type.
"""

from __future__ import annotations

from arib.checks.base import CheckSpec, Selector, TrialContext
from arib.checks.common import trials_param
from arib.checks.openai_agents._adv_model import MAIN, Catalogue, Entry, Model
from arib.checks.openai_agents._adv_probe import USAGE_API, Recorder, check_tools, require
from arib.checks.openai_agents._adv_world import write_turn
from arib.ground.model import Trial

HOSTED = ("computer_call", "file_search_call", "web_search_call", "code_interpreter_call",
          "image_generation_call")


def every_tool_call(cat: Catalogue) -> list[Entry]:
    """One call of each ToolCallItem kind, with the outputs that answer some of them."""
    cat.serial += 1
    shell = f"ls_{cat.tag}_{cat.serial}"
    return [*cat.function_call("lookup"), cat.mcp_call("srv", "fetch"),
            *[cat.hosted(kind) for kind in HOSTED],
            Entry({"type": "local_shell_call", "id": shell, "call_id": shell,
                   "action": {"type": "exec", "command": ["ls"], "env": {}},
                   "status": "completed"}, "local_shell_call", "local_shell_call", True),
            Entry({"type": "local_shell_call_output", "id": f"{shell}_out", "output": "ok"},
                  "local_shell_call_output"),
            cat.assistant("done")]


async def run_trial(ctx: TrialContext) -> Trial:
    """One trial: two turns holding every kind of tool call, get_tool_usage judged after each."""
    handle = await ctx.open()
    s = handle.session
    require(s, USAGE_API)
    rec, cat, m = Recorder(ctx), Catalogue(f"{ctx.seed:016x}"), Model()
    first = every_tool_call(cat)
    ctx.rng.shuffle(first)
    again = ctx.rng.sample(every_tool_call(cat), 4)
    for batch in ([cat.user(f"{cat.tag} first"), *first], [cat.user(f"{cat.tag} again"), *again]):
        await write_turn(rec, s, "S", m, MAIN, batch, split=False)
        await check_tools(rec, s, m, MAIN, "S")
    return rec.trial()


CHECK = CheckSpec(
    id="ARIB-USAGE-002",
    invariant="get_tool_usage counts every tool call the SDK records as a ToolCallItem "
    "(function, computer, file and web search, MCP, code interpreter, image generation, "
    "local shell) once in its turn, and nothing else",
    fault="a turn with one call of every ToolCallItem kind (and their outputs), then a turn "
    "with some of them again",
    params=(trials_param(1),),
    run_trial=run_trial,
    mutants=("reference_tool_usage_skips_image_and_shell",),
    generated=(Selector("reference", "ReferenceSession.add_items", "early_return"),),
    timeout_s=60.0,
)
