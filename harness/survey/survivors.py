"""The survivors file: every generated mutant the suite does not kill, with one line of reason.

One hand-written file per SDK version, ``mutants/survivors/openai-agents-<version>.txt``.
A line is ``LANE MUTANT-ID CATEGORY REASON...`` (whitespace between the first three
fields; the reason is the rest of the line); ``#`` starts a comment line, blank lines are
ignored. The categories:

- ``equivalent``: waived as equivalent in practice; the survey counts the mutant as
  equivalent (unless a check kills it) and every report shows the reason;
- ``unreachable``: no public API call reaches the changed code;
- ``dead``: dead code;
- ``blind-spot``: a real gap in the suite, not closed yet.

Only ``equivalent`` changes a status; the other three document why a mutant stays unkilled.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from arib.ground.errors import BenchError
from arib.ground.family import active_family
from arib.ground.keys import MutantKey
from arib.ground.package import data_path

SURVIVORS_DIR = data_path("arib.mutants", "survivors")
_ID = re.compile(r"m-[0-9a-f]{12}")


class SurvivorsFileError(BenchError):
    """The survivors file is malformed: a line names the wrong fields, category or lane."""


class Category(str, enum.Enum):
    """Why a generated mutant stays unkilled (see the module docstring)."""

    EQUIVALENT = "equivalent"
    UNREACHABLE = "unreachable"
    DEAD = "dead"
    BLIND_SPOT = "blind-spot"


@dataclass(frozen=True)
class Entry:
    """One line of the survivors file."""

    lane: str
    mutant_id: str
    category: Category
    reason: str
    line: int

    @property
    def key(self) -> MutantKey:
        """The mutant on the lane this line is about."""
        return MutantKey(self.lane, self.mutant_id)

    @property
    def where(self) -> str:
        """Where the line is in the survivors file, e.g. 'line 12'."""
        return f"line {self.line}"

    def to_json(self) -> dict[str, Any]:
        """The JSON form of this line."""
        return {"lane": self.lane, "mutant_id": self.mutant_id,
                "category": self.category.value, "reason": self.reason, "line": self.line}


def survivors_path(sdk: str, root: Path | None = None) -> Path:
    """Where the survivors file of one SDK version lives."""
    family = active_family()
    return (root or family.survivors_dir or SURVIVORS_DIR) / f"{family.stem(sdk)}.txt"


def parse_survivors(text: str, lanes: Iterable[str], source: str = "survivors file") -> tuple[
        Entry, ...]:
    """The entries of a survivors file; a malformed line raises, naming it and the fix."""
    known = set(lanes)
    entries: list[Entry] = []
    seen: dict[MutantKey, int] = {}
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        fields = line.split(maxsplit=3)
        where = f"{source}, line {number} ({raw.strip()[:80]!r})"
        if len(fields) < 4:
            raise SurvivorsFileError(
                f"{where}: a line is LANE MUTANT-ID CATEGORY REASON, and this one has "
                f"{len(fields)} field(s); add the missing ones (the reason is one line)")
        lane, mutant_id, category, reason = fields
        if lane not in known:
            raise SurvivorsFileError(
                f"{where}: unknown lane {lane!r}; use one of: {', '.join(sorted(known))}")
        if not _ID.fullmatch(mutant_id):
            raise SurvivorsFileError(
                f"{where}: {mutant_id!r} is not a generated mutant id (m- and 12 hex "
                f"digits); copy the id from the survey report")
        try:
            kind = Category(category)
        except ValueError:
            raise SurvivorsFileError(
                f"{where}: unknown category {category!r}; use one of: "
                f"{', '.join(c.value for c in Category)}") from None
        entry = Entry(lane, mutant_id, kind, reason.strip(), number)
        if entry.key in seen:
            raise SurvivorsFileError(
                f"{where}: {lane} {mutant_id} is listed already on line "
                f"{seen[entry.key]}; keep one line per mutant and lane")
        seen[entry.key] = number
        entries.append(entry)
    return tuple(entries)


def load_survivors(sdk: str, lanes: Iterable[str], root: Path | None = None) -> tuple[
        Entry, ...]:
    """The entries of the survivors file of ``sdk``; none when the version has no file."""
    path = survivors_path(sdk, root)
    if not path.is_file():
        return ()
    return parse_survivors(path.read_text(encoding="utf-8"), lanes, source=str(path))


def by_lane(entries: Iterable[Entry]) -> Mapping[str, dict[str, Entry]]:
    """Entries by lane, then by mutant id."""
    out: dict[str, dict[str, Entry]] = {}
    for entry in entries:
        out.setdefault(entry.lane, {})[entry.mutant_id] = entry
    return out


# A mutant's status on a lane that the suite does not kill: the file must list each one.
UNKILLED = ("survived", "flaky", "timeout", "error", "no_coverage", "not_judgeable")
# Statuses the compiler or the lane's claims give: such a mutant is no survivor to list.
BY_MACHINE = ("equivalent", "duplicate", "not_applicable")


def disagreements(lane: str, entries: Iterable[Entry],
                  outcomes: Mapping[str, tuple[str, bool]]) -> tuple[str, ...]:
    """Where the survivors file and a lane's survey disagree, one line each naming the id.

    ``outcomes`` maps every generated mutant id of the lane to (its status value, whether a
    survivors-file waiver made it ``equivalent``).
    """
    problems = []
    listed = set()
    for entry in entries:
        if entry.lane != lane:
            continue
        listed.add(entry.mutant_id)
        found = outcomes.get(entry.mutant_id)
        if found is None:
            problems.append(f"{entry.where}: {lane} {entry.mutant_id} is no longer generated "
                            f"on this lane; remove the line")
            continue
        status, waived = found
        if status == "killed" or (status in BY_MACHINE and not waived):
            problems.append(f"{entry.where}: {lane} {entry.mutant_id} is no longer a survivor "
                            f"(it is {status} now); remove the line")
    for mutant_id, (status, _) in sorted(outcomes.items()):
        if status in UNKILLED and mutant_id not in listed:
            problems.append(f"{lane} {mutant_id} ({status}) is not listed in the survivors "
                            f"file")
    return tuple(problems)


def survey_disagreements(entries: Iterable[Entry],
                         docs: Iterable[Mapping[str, Any]]) -> tuple[str, ...]:
    """Where a survivors file and a whole committed survey (its lanes' JSON documents)
    disagree: a line about a lane the survey has not, and each lane's ``disagreements``."""
    entries, docs = tuple(entries), tuple(docs)
    surveyed = {doc["lane"] for doc in docs}
    problems = [f"{entry.where}: lane {entry.lane} has no committed survey"
                for entry in entries if entry.lane not in surveyed]
    for doc in docs:
        outcomes = {o["id"]: (o["status"], o["status"] == "equivalent"
                              and o["survivors_file"] is not None) for o in doc["outcomes"]}
        problems += disagreements(doc["lane"], entries, outcomes)
    return tuple(problems)
