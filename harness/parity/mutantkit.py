"""What a parity mutant is, and the two ways one is made (see ``harness.parity.mutants``).

A mutant is installed only in the forked child of the lanes of its target (and, when ``loop``
is set, only under that event loop), so exactly one lane diverges while every other lane stays
clean: a hand-written mutant is an override (our own code) patched onto the backend class; a
generated-style mutant is one textual edit of the installed module's source, served by the
mutated-source import hook. Site-packages is never written.
"""

from __future__ import annotations

import difflib
import inspect
import textwrap
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from harness.ground.model import MutantKind
from mutants.base import load_class as backend
from mutants.base import mutant_id

__all__ = ["ParityMutant", "backend", "generated", "handwritten"]


@dataclass(frozen=True)
class ParityMutant:
    """One mutant of one backend lane, and whether the gate must fail on it."""

    name: str
    kind: MutantKind
    target: str
    module: str
    qualname: str
    description: str
    original: str
    replacement: str
    install: Callable[[], None]
    equivalent: str | None = None
    # Installed only under this event loop ("asyncio" or "uvloop"); None: every loop.
    loop: str | None = None
    # The workflow written to see this mutant (the mutant test runs it), when not the pool's.
    workflow: str | None = None

    def applies_to(self, target: str, loop: str) -> bool:
        """Whether this mutant is installed in the lane of ``target`` under ``loop``."""
        return target == self.target and self.loop in (None, loop)

    @property
    def lane(self) -> str:
        """The lane name this mutant makes diverge (``target`` or ``target@loop``)."""
        return self.target if self.loop is None else f"{self.target}@{self.loop}"

    @property
    def id(self) -> str:
        operator = "textual-edit" if self.kind is MutantKind.GENERATED else "handwritten"
        return mutant_id(self.module, self.qualname, operator, self.original, self.replacement)

    @property
    def must_kill(self) -> bool:
        return self.equivalent is None

    def diff(self) -> str:
        """The change, readable: a unified diff, or the override's code."""
        if self.kind is MutantKind.HANDWRITTEN:
            return f"# hand-written override of {self.module}.{self.qualname}\n{self.replacement}"
        return "".join(
            difflib.unified_diff(
                [self.original + "\n"],
                [self.replacement + "\n"],
                fromfile=f"a/{self.module} ({self.qualname})",
                tofile=f"b/{self.module} ({self.qualname})",
            )
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "name": self.name,
            "kind": self.kind.value,
            "target": self.target,
            "module": self.module,
            "qualname": self.qualname,
            "description": self.description,
            "equivalent": self.equivalent,
            "loop": self.loop,
            "workflow": self.workflow,
            "diff": self.diff(),
        }


def handwritten(
    name: str,
    target: str,
    module: str,
    qualname: str,
    description: str,
    fn: Callable[[], None],
    *,
    loop: str | None = None,
    workflow: str | None = None,
) -> ParityMutant:
    """A hand-written override mutant; its diff is ``fn``'s own source."""
    source = textwrap.dedent(inspect.getsource(fn))
    return ParityMutant(
        name=name,
        kind=MutantKind.HANDWRITTEN,
        target=target,
        module=module,
        qualname=qualname,
        description=description,
        original=qualname,
        replacement=source,
        install=fn,
        loop=loop,
        workflow=workflow,
    )


def generated(
    name: str,
    target: str,
    module: str,
    qualname: str,
    description: str,
    original: str,
    replacement: str,
    equivalent: str | None = None,
    *,
    workflow: str | None = None,
) -> ParityMutant:
    """A one-edit mutant of the installed module's source (the edit must match once)."""
    def install() -> None:
        from harness.parity.mutsource import installed_source, mutate_source

        source, origin = installed_source(module)
        mutated = mutate_source(source, original, replacement, where=origin)
        serve: Callable[[str, str], object]
        try:
            from mutants.hook import serve_mutated_module as serve
        except ImportError:  # the shared hook is absent: the private minimal one serves it
            from harness.parity.mutsource import serve_source as serve
        serve(module, mutated)

    return ParityMutant(
        name=name,
        kind=MutantKind.GENERATED,
        target=target,
        module=module,
        qualname=qualname,
        description=description,
        original=original,
        replacement=replacement,
        install=install,
        equivalent=equivalent,
        workflow=workflow,
    )
