"""What the advanced-API checks expect: the items they write and a model of one session.

The checks (``checks/adv_*.py``) write items whose classification they know in advance
(``Entry``: the message type, the tool it calls, whether it counts as a tool call), and keep a
``Model`` of the session the SDK documents for ``AdvancedSQLiteSession``: a branch is a list of
items; a branch created from turn N is a copy of the turns before N of the branch it came
from, and becomes current; the turn of an item is the number of user messages up to and
including it; usage is stored for the current turn of a branch and reported while that turn
(the same incarnation: its first item) is still there; a deleted branch or a cleared session
takes its items and usage with it, and a used branch id is never used again.

The model is our own statement of that contract, written from the SDK's docstrings; the
reference backend (``targets/openai_agents/reference_advanced.py``) implements it separately.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from random import Random
from typing import Any

MAIN = "main"


@dataclass(frozen=True)
class Entry:
    """One item a check writes, with what the advanced API must report about it."""

    item: dict[str, Any]
    kind: str
    tool: str | None = None
    call: bool = False

    @property
    def user(self) -> bool:
        """Whether this item is a user message (it starts a turn)."""
        return self.kind == "user"


class Catalogue:
    """Unique items of every shape an agent run writes, for one trial (``tag``)."""

    def __init__(self, tag: str) -> None:
        self.tag = tag
        self.serial = 0

    def _next(self) -> str:
        self.serial += 1
        return f"{self.tag}_{self.serial}"

    def user(self, text: str, parts: bool = False) -> Entry:
        """A user message with ``text``, as a plain string or (``parts``) one input_text part."""
        content: Any = [{"type": "input_text", "text": text}] if parts else text
        return Entry({"role": "user", "content": content}, "user")

    def assistant(self, text: str) -> Entry:
        """A completed assistant message with ``text``."""
        return Entry({"id": f"msg_{self._next()}", "type": "message", "role": "assistant",
                      "status": "completed",
                      "content": [{"type": "output_text", "text": text, "annotations": []}]},
                     "assistant")

    def function_call(self, name: str, namespace: str | None = None) -> list[Entry]:
        """A function call of ``name`` (in ``namespace`` if given) and its output: one tool call."""
        call_id = f"call_{self._next()}"
        item = {"type": "function_call", "call_id": call_id, "name": name, "arguments": "{}"}
        if namespace:
            item["namespace"] = namespace
        tool = f"{namespace}.{name}" if namespace and namespace != name else name
        output = {"type": "function_call_output", "call_id": call_id, "output": "ok"}
        return [Entry(item, "function_call", tool, True), Entry(output, "function_call_output")]

    def mcp_call(self, label: str, name: str) -> Entry:
        """An MCP call of ``name`` on server ``label``: one call of ``label.name``."""
        return Entry({"type": "mcp_call", "id": f"mcp_{self._next()}", "server_label": label,
                      "name": name, "arguments": "{}", "output": "ok"},
                     "mcp_call", f"{label}.{name}", True)

    def hosted(self, kind: str) -> Entry:
        """A hosted tool call of type ``kind`` (e.g. web_search_call): one call of ``kind``."""
        return Entry({"type": kind, "id": f"ht_{self._next()}", "status": "completed"},
                     kind, kind, True)

    def custom_call(self, name: str) -> Entry:
        """A custom tool call of ``name``: one call of that tool."""
        return Entry({"type": "custom_tool_call", "call_id": f"ct_{self._next()}",
                      "name": name, "input": "x"}, "custom_tool_call", name, True)

    def tool_search(self) -> list[Entry]:
        """A tool search and its output: one call of the ``tool_search`` tool."""
        call_id = f"ts_{self._next()}"
        return [Entry({"type": "tool_search_call", "id": call_id, "call_id": call_id,
                       "arguments": {}, "status": "completed"},
                      "tool_search_call", "tool_search", True),
                Entry({"type": "tool_search_output", "id": f"{call_id}_out", "call_id": call_id,
                       "tools": [], "status": "completed"},
                      "tool_search_output", "tool_search", False)]

    def lone_search_output(self) -> Entry:
        """A tool search's output without its call in the turn (a hosted search): it stands
        for the call, so it counts once."""
        return Entry({"type": "tool_search_output", "id": f"tso_{self._next()}",
                      "call_id": f"tsc_{self.serial}", "tools": [], "status": "completed"},
                     "tool_search_output", "tool_search", False)

    def reasoning(self) -> Entry:
        """A reasoning item (not a tool call)."""
        return Entry({"type": "reasoning", "id": f"rs_{self._next()}", "summary": []},
                     "reasoning")

    def responses(self, rng: Random, tools: Sequence[str]) -> list[Entry]:
        """What a run answers a user message with: some tool calls, then a message."""
        found: list[Entry] = []
        for _ in range(rng.randint(0, 2)):
            pick = rng.randrange(8)
            name = rng.choice(tools)
            if pick == 0:
                found += self.function_call(name)
            elif pick == 1:
                found += self.function_call(name, rng.choice(["ns", name]))
            elif pick == 2:
                found.append(self.mcp_call("srv", name))
            elif pick == 3:
                found.append(self.hosted(rng.choice(["web_search_call", "file_search_call",
                                                     "computer_call", "code_interpreter_call"])))
            elif pick == 4:
                found.append(self.custom_call(name))
            elif pick == 5:
                found += self.tool_search()
            elif pick == 6:
                found.append(self.reasoning())
            else:
                found.append(self.lone_search_output())
        return [*found, self.assistant(f"{self.tag} answer {self.serial}")]


@dataclass(frozen=True)
class Figures:
    """The usage of one run, as the SDK's ``Usage`` carries it."""

    requests: int
    input_tokens: int
    output_tokens: int
    cached: int
    reasoning: int

    @property
    def total_tokens(self) -> int:
        """Input plus output tokens."""
        return self.input_tokens + self.output_tokens

    def totals(self) -> dict[str, int]:
        """Requests and input, output and total tokens: the figures a usage total sums."""
        return {"requests": self.requests, "input_tokens": self.input_tokens,
                "output_tokens": self.output_tokens, "total_tokens": self.total_tokens}

    @classmethod
    def draw(cls, rng: Random) -> Figures:
        """Usage figures drawn at random from ``rng``."""
        return cls(rng.randint(1, 4), rng.randint(10, 5000), rng.randint(1, 900),
                   rng.randint(0, 9), rng.randint(0, 9))


@dataclass
class Model:
    """The documented state of one session: its branches and usage (each instance of the
    session has its own current branch, which the check tracks)."""

    branches: dict[str, list[tuple[int, Entry]]] = field(default_factory=lambda: {MAIN: []})
    used: set[str] = field(default_factory=lambda: {MAIN})
    usage: dict[tuple[str, int], tuple[int, Figures]] = field(default_factory=dict)
    serial: int = 0

    def entries(self, branch: str) -> list[Entry]:
        """The entries of ``branch`` in order (none for a branch that does not exist)."""
        return [e for _, e in self.branches.get(branch, [])]

    def items(self, branch: str) -> list[dict[str, Any]]:
        """The items of ``branch`` in order, as get_items must return them."""
        return [e.item for e in self.entries(branch)]

    def turns(self, branch: str) -> list[int]:
        """The turn of each entry of ``branch``: the user messages up to and including it."""
        numbers, turn = [], 0
        for entry in self.entries(branch):
            turn += entry.user
            numbers.append(turn)
        return numbers

    def last_turn(self, branch: str) -> int:
        """The current turn of ``branch`` (0 before its first user message)."""
        return max(self.turns(branch), default=0)

    def append(self, branch: str, entries: Sequence[Entry]) -> None:
        """Append ``entries`` to ``branch``, each with a new serial."""
        for entry in entries:
            self.serial += 1
            self.branches.setdefault(branch, []).append((self.serial, entry))

    def pop(self, branch: str) -> Entry | None:
        """Remove and return the newest entry of ``branch``, or None when it is empty."""
        rows = self.branches.get(branch, [])
        return rows.pop()[1] if rows else None

    def has_turn(self, branch: str, turn: int) -> bool:
        """Whether ``branch`` holds the user message that starts turn ``turn``."""
        return any(e.user and t == turn for e, t in zip(self.entries(branch), self.turns(branch),
                                                        strict=True))

    def create(self, source: str, turn: int, name: str) -> None:
        """A new branch holding the turns of ``source`` before ``turn``."""
        kept = [e for e, t in zip(self.entries(source), self.turns(source), strict=True)
                if t < turn]
        self.branches[name] = []
        self.used.add(name)
        self.append(name, kept)

    def delete(self, name: str) -> None:
        """Drop branch ``name`` and its usage (its id stays used)."""
        self.branches.pop(name, None)
        self.usage = {k: v for k, v in self.usage.items() if k[0] != name}

    def clear(self) -> None:
        """Empty the session: an empty ``main`` branch and no usage."""
        self.branches = {MAIN: []}
        self.usage = {}

    def _anchors(self, branch: str) -> dict[int, int]:
        anchors: dict[int, int] = {}
        for (serial, _), turn in zip(self.branches.get(branch, []), self.turns(branch),
                                     strict=True):
            anchors.setdefault(turn, serial)
        return anchors

    def store(self, branch: str, figures: Figures) -> None:
        """store_run_usage on ``branch``: for its current turn; nothing on an empty branch."""
        if not self.branches.get(branch):
            return
        turn = self.last_turn(branch)
        self.usage[(branch, turn)] = (self._anchors(branch)[turn], figures)

    def visible_usage(self, branch: str) -> dict[int, Figures]:
        """The usage reported for each turn of ``branch`` (its turn still there)."""
        anchors = self._anchors(branch)
        return {turn: figures for (b, turn), (anchor, figures) in self.usage.items()
                if b == branch and anchors.get(turn) == anchor}

    def session_usage(self, branch: str | None = None) -> dict[str, int] | None:
        """Summed usage of the visible turns of ``branch`` (all when None), or None if none."""
        rows = [f for b in self.branches if branch in (None, b)
                for f in self.visible_usage(b).values()]
        if not rows:
            return None
        sums = Counter[str]()
        for figures in rows:
            sums.update(figures.totals())
        return {**{k: sums[k] for k in Figures(0, 0, 0, 0, 0).totals()},
                "total_turns": len(rows)}

    def listing(self, current: str) -> dict[str, tuple[int, int, bool]]:
        """Every branch: (message count, user messages, whether it is ``current``)."""
        return {b: (len(rows), sum(e.user for _, e in rows), b == current)
                for b, rows in self.branches.items()}

    def user_turns(self, branch: str) -> list[tuple[int, Any]]:
        """(turn, content) of each user message of ``branch``, in order."""
        return [(t, e.item["content"]) for e, t in zip(self.entries(branch), self.turns(branch),
                                                       strict=True) if e.user]

    def tool_usage(self, branch: str) -> Counter[tuple[str | None, int]]:
        """Calls per (tool, turn): each tool call once; a tool search's output stands for
        its call when the call is not in that turn."""
        pairs = list(zip(self.entries(branch), self.turns(branch), strict=True))
        searched = {t for e, t in pairs if e.kind == "tool_search_call"}
        return Counter((e.tool, t) for e, t in pairs
                       if e.call or (e.kind == "tool_search_output" and t not in searched))

    def by_turns(self, branch: str) -> dict[int, list[tuple[str, str | None]]]:
        """(kind, tool) of each entry of ``branch``, grouped by turn."""
        grouped: dict[int, list[tuple[str, str | None]]] = {}
        for entry, turn in zip(self.entries(branch), self.turns(branch), strict=True):
            grouped.setdefault(turn, []).append((entry.kind, entry.tool))
        return grouped
