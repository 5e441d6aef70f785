"""A trial's schedule as a record: the strategy that made it, its seed and parameters, and every
decision, with a compact text form that a replay command carries (``--schedule``).

The text form, e.g. ``pct.d2.k40.s5f3a:0120(3)1~[01]``::

    schedule := head ":" body
    head     := strategy ("." key value)*        (key: a letter; value: decimal; "s": hex seed)
    body     := item*
    item     := (actor | "[" actor actor+ "]") ["~"] ["(" count ")"]
    actor    := one of 0-9 a-z A-Z (actors 0 to 61) | "{" decimal "}"

An item is one decision: the actor released (actors are numbered in the order the trial
started them), or a group released at once (``[01]``, always uncontrolled); ``~`` marks a
decision the scheduler could not control (a thread, a server or a late completion decided the
ready set); ``(n)`` repeats the item n times in all.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from arib.ground.errors import UsageError

ALPHABET = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
EXAMPLE = "pct.d2.k40.s5f3a:0120(3)1~"
_HEAD_PARAM = re.compile(r"([a-z])([0-9a-f]+)\Z")


class ScheduleError(UsageError):
    """A schedule that does not parse, or that names actors or steps the check does not have."""


@dataclass(frozen=True)
class Decision:
    """One decision: the actor released (or several released at once), and whether the
    scheduler controlled it (every completion it waited for had arrived)."""

    actors: tuple[int, ...]
    controlled: bool = True

    @property
    def actor(self) -> int:
        """The actor released (the first of a group)."""
        return self.actors[0]

    @property
    def group(self) -> bool:
        """Whether several actors were released at once."""
        return len(self.actors) > 1


@dataclass(frozen=True)
class Schedule:
    """The schedule of one trial: how it was made and every decision, in order."""

    strategy: str
    seed: int
    params: Mapping[str, int] = field(default_factory=dict)
    decisions: tuple[Decision, ...] = ()
    # Not in the text form: labels of the actors in the order they started, and, for a replay,
    # how many recorded decisions could not be followed (the recorded actor was not ready).
    actors: tuple[str, ...] = ()
    diverged: int = 0

    @property
    def controlled(self) -> int:
        """How many decisions the scheduler controlled."""
        return sum(1 for d in self.decisions if d.controlled)

    @property
    def uncontrolled(self) -> int:
        """How many decisions it could not control."""
        return len(self.decisions) - self.controlled

    @property
    def share(self) -> float:
        """The controlled share of the decisions (1.0 with none)."""
        return self.controlled / len(self.decisions) if self.decisions else 1.0

    def text(self) -> str:
        """The compact text form (see the module docstring)."""
        head = ".".join([self.strategy, *(f"{k}{v}" for k, v in sorted(self.params.items())),
                         f"s{self.seed:x}"])
        items: list[str] = []
        previous, run = "", 0
        for d in self.decisions:
            item = _item(d)
            if item == previous:
                run += 1
                continue
            if previous:
                items.append(previous + (f"({run})" if run > 1 else ""))
            previous, run = item, 1
        if previous:
            items.append(previous + (f"({run})" if run > 1 else ""))
        return f"{head}:{''.join(items)}"

    def to_json(self) -> dict[str, Any]:
        """The JSON form: the text, and what it says in fields."""
        return {
            "text": self.text(),
            "strategy": self.strategy,
            "seed": self.seed,
            "params": dict(self.params),
            "decisions": len(self.decisions),
            "controlled": self.controlled,
            "uncontrolled": self.uncontrolled,
            "actors": list(self.actors),
            "diverged": self.diverged,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Schedule:
        """A schedule from its JSON form (its text is what counts)."""
        parsed = cls.parse(str(data["text"]))
        return Schedule(parsed.strategy, parsed.seed, parsed.params, parsed.decisions,
                        tuple(data.get("actors", ())), int(data.get("diverged", 0)))

    @classmethod
    def parse(cls, text: str) -> Schedule:
        """Parse the text form; ScheduleError naming the text and the first fault."""
        head, sep, body = text.strip().partition(":")
        if not sep:
            raise _refuse(text, "it has no ':' between its head and its decisions")
        words = head.split(".")
        strategy, params, seed = words[0], {}, None
        if not re.fullmatch(r"[a-z]+", strategy):
            raise _refuse(text, f"strategy {strategy!r} is not a lowercase name")
        for word in words[1:]:
            m = _HEAD_PARAM.match(word)
            if not m:
                raise _refuse(text, f"head parameter {word!r} is not a letter and a number")
            key, value = m.groups()
            if key == "s":  # the seed; no strategy has a parameter named s
                seed = int(value, 16)
            elif value.isdigit():
                params[key] = int(value)
            else:
                raise _refuse(text, f"parameter {key!r} takes a decimal value, not {value!r}")
        if seed is None:
            raise _refuse(text, "its head names no seed ('.s<hex>')")
        return cls(strategy, seed, params, tuple(_parse_body(text, body)))


def _item(d: Decision) -> str:
    actors = "".join(_actor(a) for a in d.actors)
    return (f"[{actors}]" if d.group else actors) + ("" if d.controlled else "~")


def _actor(a: int) -> str:
    return ALPHABET[a] if a < len(ALPHABET) else f"{{{a}}}"


def _refuse(text: str, fault: str, at: int | None = None) -> ScheduleError:
    shown = text if len(text) <= 80 else text[:77] + "..."
    where = f" at character {at}" if at is not None else ""
    return ScheduleError(f"schedule {shown!r} does not parse{where}: {fault}; a schedule looks "
                         f"like {EXAMPLE!r}, as a finding's replay command gives it")


def _parse_body(text: str, body: str) -> list[Decision]:
    offset = len(text.strip()) - len(body)
    out: list[Decision] = []
    i = 0
    while i < len(body):
        start = i
        if body[i] == "[":
            close = body.find("]", i)
            if close < 0:
                raise _refuse(text, "a '[' group is not closed", offset + i)
            actors, _ = _parse_actors(text, body[i + 1:close], offset + i + 1)
            if len(actors) < 2:
                raise _refuse(text, "a '[...]' group names fewer than two actors", offset + i)
            i = close + 1
            controlled = False
        else:
            actors, used = _parse_actors(text, body[i:], offset + i, one=True)
            i += used
            controlled = True
        if i < len(body) and body[i] == "~":
            controlled = False
            i += 1
        count = 1
        if i < len(body) and body[i] == "(":
            m = re.match(r"\(([0-9]+)\)", body[i:])
            if not m or int(m.group(1)) < 2:
                raise _refuse(text, "'(' must hold a count of at least 2 and close", offset + i)
            count = int(m.group(1))
            i += len(m.group(0))
        if i == start:
            raise _refuse(text, f"unexpected {body[i]!r}", offset + i)
        out.extend([Decision(tuple(actors), controlled)] * count)
    return out


def _parse_actors(text: str, part: str, at: int, one: bool = False) -> tuple[list[int], int]:
    actors: list[int] = []
    i = 0
    while i < len(part) and not (one and actors):
        ch = part[i]
        if ch == "{":
            m = re.match(r"\{([0-9]+)\}", part[i:])
            if not m:
                raise _refuse(text, "'{' must hold a decimal actor number and close", at + i)
            actors.append(int(m.group(1)))
            i += len(m.group(0))
        elif ch in ALPHABET:
            actors.append(ALPHABET.index(ch))
            i += 1
        else:
            raise _refuse(text, f"{ch!r} is not an actor (0-9, a-z, A-Z or {{n}}), '[', '~' "
                                f"or '('", at + i)
    return actors, i


def parse_argument(value: str) -> Schedule:
    """A ``--schedule`` argument: the text itself, or ``@path`` of a file holding it."""
    if value.startswith("@"):
        try:
            text = open(value[1:], encoding="utf-8").read()  # noqa: SIM115 - read at once
        except OSError as exc:
            raise ScheduleError(f"--schedule {value!r}: cannot read {value[1:]!r} ({exc}); "
                                f"give the schedule text or @FILE of a file that holds it") from exc
        return Schedule.parse(text)
    return Schedule.parse(value)


def actors_named(decisions: Sequence[Decision]) -> set[int]:
    """Every actor number the decisions name."""
    return {a for d in decisions for a in d.actors}
