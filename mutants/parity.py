"""How a parity mutant is made: a ``MutantSpec`` of one backend lane (a family's parity
tables, e.g. ``arib.mutants.openai_agents.parity``).

A parity mutant is the bench's ``MutantSpec``, with the fields parity uses: ``loop`` (installed
only under that event loop, when set), ``workflow`` (the fault workflow written to see it) and
``equivalent`` (why no read can tell it from the original). It is installed only in the forked
child of the lanes of its target, so exactly one lane diverges while every other lane stays
clean: a hand-written mutant is an override (our own code) patched onto the backend class; a
generated-style mutant is one textual edit of the installed module's source, served by the
mutated-source import hook ``arib.mutants.hook``. Site-packages is never written.

The constructors here register nothing in ``arib.mutants.base`` (``HANDWRITTEN``, ``FORCED``): a
family's parity mutants are in its modules' ``PARITY_MUTANTS`` tables, which the catalogue
(``arib.mutants.registry.parity_mutants``) keeps apart, so admission and the survey never pair
a check with one.
"""

from __future__ import annotations

import difflib
import functools
import inspect
import textwrap
from collections.abc import Callable
from typing import Any

from arib.ground.model import MutantKind, Verdict
from arib.mutants.base import MutantSpec, mutant_id
from arib.mutants.base import load_class as backend
from arib.mutants.hook import edited_source, serve_mutated_module

__all__ = [
    "applies_to",
    "backend",
    "generated",
    "handwritten",
    "must_kill",
    "mutant_lane",
    "parity_json",
    "serve_edit",
]

TEXTUAL_EDIT = "textual-edit"
HANDWRITTEN = "handwritten"


def applies_to(mutant: MutantSpec, target: str, loop: str) -> bool:
    """Whether ``mutant`` is installed in the lane of ``target`` under ``loop``."""
    return target == mutant.target and mutant.loop in (None, loop)


def mutant_lane(mutant: MutantSpec) -> str:
    """The lane name ``mutant`` makes diverge (``target`` or ``target@loop``)."""
    return mutant.target if mutant.loop is None else f"{mutant.target}@{mutant.loop}"


def must_kill(mutant: MutantSpec) -> bool:
    """Whether the gate must fail on ``mutant`` (it is not marked equivalent)."""
    return mutant.equivalent is None


def _edit_diff(mutant: MutantSpec) -> str:
    """The change, readable: a unified diff of the edit, or the override's code."""
    if mutant.kind is MutantKind.HANDWRITTEN:
        return mutant.diff()
    return "".join(
        difflib.unified_diff(
            [mutant.original + "\n"],
            [mutant.replacement + "\n"],
            fromfile=f"a/{mutant.module} ({mutant.qualname})",
            tofile=f"b/{mutant.module} ({mutant.qualname})",
        )
    )


def parity_json(mutant: MutantSpec) -> dict[str, Any]:
    """The parity report's record of ``mutant`` (its edit as a one-line unified diff)."""
    return {
        "id": mutant.id,
        "name": mutant.name,
        "kind": mutant.kind.value,
        "target": mutant.target,
        "module": mutant.module,
        "qualname": mutant.qualname,
        "description": mutant.description,
        "equivalent": mutant.equivalent,
        "loop": mutant.loop,
        "workflow": mutant.workflow,
        "diff": _edit_diff(mutant),
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
) -> MutantSpec:
    """A hand-written override mutant; its diff is ``fn``'s own source."""
    source = textwrap.dedent(inspect.getsource(fn))
    return MutantSpec(
        id=mutant_id(module, qualname, HANDWRITTEN, qualname, source),
        kind=MutantKind.HANDWRITTEN,
        target=target,
        module=module,
        qualname=qualname,
        operator=HANDWRITTEN,
        original=qualname,
        replacement=source,
        description=description,
        name=name,
        patch=fn,
        loop=loop,
        workflow=workflow,
    )


def serve_edit(module: str, original: str, replacement: str) -> None:
    """Serve ``module`` with one textual edit of its installed source (in this process)."""
    serve_mutated_module(module, edited_source(module, original, replacement))


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
) -> MutantSpec:
    """A one-edit mutant of the installed module's source (the edit must match once).

    The source is read and edited when the mutant is applied, in the lane's child.
    """
    return MutantSpec(
        id=mutant_id(module, qualname, TEXTUAL_EDIT, original, replacement),
        kind=MutantKind.GENERATED,
        target=target,
        module=module,
        qualname=qualname,
        operator=TEXTUAL_EDIT,
        original=original,
        replacement=replacement,
        description=description,
        name=name,
        patch=functools.partial(serve_edit, module, original, replacement),
        expected=Verdict.VIOLATED if equivalent is None else Verdict.HELD,
        workflow=workflow,
        equivalent=equivalent,
    )
