"""What a mutant is, how its stable id is made, and the table hand-written mutants join."""

from __future__ import annotations

import difflib
import hashlib
import importlib
import inspect
import re
import textwrap
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from arib.ground.keys import MutantKey
from arib.ground.model import MutantKind, Verdict
from arib.mutants.swap import UnitSwap
from arib.targets.base import Claims

_ROOT_PREFIX = re.compile(r"\barib\.")
# openai-agents' modules moved into a folder of their own (checks/openai_agents/, ...) after
# their ids were published: the folder is left out of an id, as the root is.
_FAMILY_FOLDER = re.compile(r"\b(checks|mutants|targets)\.openai_agents\b")


def mutant_id(module: str, qualname: str, operator: str, original: str, replacement: str) -> str:
    """Stable id: a hash of where the change is and what it is, not of line numbers. The
    project's modules are named relative to the import root and without openai-agents' family
    folder, in the module and in the code (``targets.reference``, not
    ``arib.targets.openai_agents.reference``), so ids outlive both moves."""
    fields = (module, qualname, operator, original, replacement)
    digest = hashlib.sha256("\x1f".join(
        _FAMILY_FOLDER.sub(r"\1", _ROOT_PREFIX.sub("", field)) for field in fields
    ).encode()).hexdigest()
    return f"m-{digest[:12]}"


@dataclass(frozen=True)
class MutantSpec:
    """One mutant of one backend: a generated source edit or a hand-written override."""

    id: str
    kind: MutantKind
    target: str
    module: str
    qualname: str
    operator: str
    original: str
    replacement: str
    description: str
    name: str = ""
    patch: Callable[[], None] | None = None
    source: str | None = None
    expected: Verdict = Verdict.VIOLATED
    claims: Claims | None = None
    # Installed only under this event loop ("asyncio" or "uvloop"); None: under every loop.
    loop: str | None = None
    # The workflow written to see this mutant (a parity fault workflow), when there is one.
    workflow: str | None = None
    # Why no run can tell this mutant from the original, when none can (it must survive).
    equivalent: str | None = None
    # A generated mutant that changes one function's body only: installed by swapping that
    # function's code in place (arib.mutants.swap), which is much cheaper than the whole module.
    swap: UnitSwap | None = field(default=None, compare=False, repr=False)

    @property
    def key(self) -> MutantKey:
        """This mutant on its lane (``target``): lanes sharing a module share its id."""
        return MutantKey(self.target, self.id)

    def apply(self) -> None:
        """Install the mutant in this (child) process; never writes any file."""
        if self.patch is not None:
            self.patch()
        if self.source is not None:
            from arib.mutants.hook import serve_mutated_function, serve_mutated_module

            if self.swap is None or not serve_mutated_function(self.module, self.source,
                                                                self.swap):
                serve_mutated_module(self.module, self.source)

    def diff(self) -> str:
        """A readable diff of the change (the override's code for a hand-written mutant)."""
        if self.kind is MutantKind.HANDWRITTEN:
            return f"# hand-written override of {self.module}.{self.qualname}\n{self.replacement}"
        lines = difflib.unified_diff(
            self.original.splitlines(keepends=True),
            self.replacement.splitlines(keepends=True),
            fromfile=f"a/{self.module} ({self.qualname})",
            tofile=f"b/{self.module} ({self.qualname}) [{self.operator}]",
        )
        return "".join(lines)

    def to_json(self) -> dict[str, Any]:
        """The JSON form of this mutant (its code change is not included)."""
        return {
            "id": self.id,
            "name": self.name,
            "kind": self.kind.value,
            "target": self.target,
            "module": self.module,
            "qualname": self.qualname,
            "operator": self.operator,
            "description": self.description,
            "expected": self.expected.value,
            "claims": self.claims.to_json() if self.claims else None,
        }


HANDWRITTEN: dict[str, MutantSpec] = {}
FORCED: dict[str, MutantSpec] = {}
# mutant id -> the module that wrote it (a family's mutants are those of its package)
DEFINED_IN: dict[str, str] = {}


def load_class(module: str, name: str) -> Any:
    """The class as the (possibly re-imported) module has it now."""
    return getattr(importlib.import_module(module), name)


def handwritten(
    *,
    target: str,
    module: str,
    qualname: str,
    defect: str,
    expected: Verdict = Verdict.VIOLATED,
    claims: Claims | None = None,
    forced: bool = False,
) -> Callable[[Callable[[], None]], Callable[[], None]]:
    """Register a hand-written mutant: ``fn()`` installs the defect in a child process."""

    def register(fn: Callable[[], None]) -> Callable[[], None]:
        source = textwrap.dedent(inspect.getsource(fn))
        spec = MutantSpec(
            id=mutant_id(module, qualname, "handwritten", fn.__name__, source),
            kind=MutantKind.HANDWRITTEN,
            target=target,
            module=module,
            qualname=qualname,
            operator="handwritten",
            original=qualname,
            replacement=source,
            description=defect,
            name=fn.__name__,
            patch=fn,
            expected=expected,
            claims=claims,
        )
        table = FORCED if forced else HANDWRITTEN
        if spec.name in {m.name for m in (*HANDWRITTEN.values(), *FORCED.values())}:
            raise ValueError(f"two hand-written mutants are named {spec.name!r}; rename one")
        table[spec.id] = spec
        DEFINED_IN[spec.id] = fn.__module__
        return fn

    return register
