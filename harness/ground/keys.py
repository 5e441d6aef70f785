"""The key types: a mutant on a lane, a check on a lane, a check on a mutant on a lane.

Each key is a frozen, ordered dataclass with one string form (``str()``, what files, shard
manifests, logs and reports write) and one ``parse()`` that reads exactly that form back:

- ``MutantKey``: ``lane:mutant_id``, e.g. ``sqlite-file:m-0123456789ab``;
- ``Cell``: ``check_id on lane``, e.g. ``ARIB-CONC-001 on sqlite-file``;
- ``Pair``: ``check_id on lane:mutant_id``, a check judged on a mutant key.

In memory a key is its type, never a tuple or an f-string; ``@`` is not a key's separator
(it means "under a loop" in parity's lanes).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from arib.ground.errors import UsageError

_ON = " on "
_K = TypeVar("_K")


def _part(kind: str, name: str, value: str, banned: str) -> None:
    """Refuse a key field that would make its string form ambiguous (or empty)."""
    if not value or value != value.strip() or any(c in value for c in banned):
        raise UsageError(
            f"{kind} {name} {value!r} cannot be written as a key: the rule: a {name} is "
            f"non-empty and holds neither spaces nor {banned.replace(' ', '')!r}; fix the "
            f"{name} (lanes and check ids are names such as 'sqlite-file', 'ARIB-CONC-001')")


def _parse(text: str, sep: str, kind: str, form: str, example: str,
           build: Callable[[str, str], _K]) -> _K:
    """``build(head, tail)`` of ``text`` split at its first ``sep``; a UsageError naming the
    text, the form and an example when it has no ``sep`` or ``build`` refuses the parts."""
    head, found, tail = text.partition(sep)
    try:
        if found:
            return build(head, tail)
    except UsageError:
        pass
    raise UsageError(f"{text!r} is not a {kind}: the form is {form}, e.g. {example!r}; fix "
                     f"the text (it is what str() of a {kind} writes)")


@dataclass(frozen=True, order=True)
class MutantKey:
    """A mutant on a lane. Lanes built on one module share its mutant ids, never their keys.

    Ordered by lane, then id. ``str()`` gives ``lane:mutant_id``; ``parse`` reads it back.
    """

    lane: str
    mutant_id: str

    FORM = "lane:mutant_id"
    EXAMPLE = "sqlite-file:m-0123456789ab"

    def __post_init__(self) -> None:
        _part("mutant key", "lane", self.lane, ": ")
        _part("mutant key", "mutant_id", self.mutant_id, " ")

    def __str__(self) -> str:
        return f"{self.lane}:{self.mutant_id}"

    @classmethod
    def parse(cls, text: str) -> MutantKey:
        """The key whose ``str()`` is ``text``; a UsageError names the text and the form."""
        return _parse(text, ":", "mutant key", cls.FORM, cls.EXAMPLE, cls)

    def to_json(self) -> dict[str, str]:
        """The JSON form of this key."""
        return {"lane": self.lane, "mutant_id": self.mutant_id}


@dataclass(frozen=True, order=True)
class Cell:
    """A check on a lane: one cell of the bench's backends x invariants table.

    Ordered by check, then lane. ``str()`` gives ``check_id on lane``; ``parse`` reads it back.
    """

    check_id: str
    lane: str

    FORM = "check_id on lane"
    EXAMPLE = "ARIB-CONC-001 on sqlite-file"

    def __post_init__(self) -> None:
        _part("cell", "check_id", self.check_id, " ")
        _part("cell", "lane", self.lane, ": ")

    def __str__(self) -> str:
        return f"{self.check_id}{_ON}{self.lane}"

    @classmethod
    def parse(cls, text: str) -> Cell:
        """The cell whose ``str()`` is ``text``; a UsageError names the text and the form."""
        return _parse(text, _ON, "cell", cls.FORM, cls.EXAMPLE, cls)

    @classmethod
    def of(cls, finding: Mapping[str, Any]) -> Cell:
        """The cell of a finding as a result file has it (its invariant id and target)."""
        return cls(finding["invariant_id"], finding["target"])

    def to_json(self) -> dict[str, str]:
        """The JSON form of this cell."""
        return {"check_id": self.check_id, "lane": self.lane}


@dataclass(frozen=True, order=True)
class Pair:
    """A check judged on a mutant on a lane: where admission and the survey keep a result.

    Ordered by check, then mutant key. ``str()`` gives ``check_id on lane:mutant_id``.
    """

    check_id: str
    key: MutantKey

    FORM = "check_id on lane:mutant_id"
    EXAMPLE = "ARIB-CONC-001 on sqlite-file:m-0123456789ab"

    def __post_init__(self) -> None:
        _part("pair", "check_id", self.check_id, " ")
        if not isinstance(self.key, MutantKey):
            raise UsageError(f"pair key {self.key!r} is not a MutantKey: the rule: a pair "
                             f"names a mutant on a lane; fix: pass MutantKey(lane, mutant_id)")

    def __str__(self) -> str:
        return f"{self.check_id}{_ON}{self.key}"

    @property
    def cell(self) -> Cell:
        """The check on the mutant's lane."""
        return Cell(self.check_id, self.key.lane)

    @classmethod
    def parse(cls, text: str) -> Pair:
        """The pair whose ``str()`` is ``text``; a UsageError names the text and the form."""
        return _parse(text, _ON, "pair", cls.FORM, cls.EXAMPLE,
                      lambda check_id, key: cls(check_id, MutantKey.parse(key)))

    def to_json(self) -> dict[str, str]:
        """The JSON form of this pair."""
        return {"check_id": self.check_id, **self.key.to_json()}
