"""The commands a message tells a user to run, and the versions that have a lock file.

Standard library only: the noxfile (nox's own Python) and the runtime's messages read the same
strings, so a fix printed by `python -m arib` is the command nox runs.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

LOCK_DIR = Path(__file__).parent.parent / "locks"
# What draws the pictures of the reports (the cross-version heat map): the `report` extra of
# pyproject.toml, which the sessions that run `compare` install (a test checks they agree).
REPORT_REQUIREMENTS = ("matplotlib==3.10.9",)




def is_default(family: str | None) -> bool:
    """True for the default family (None names it): its commands need no ``--family``."""
    from arib.ground.family import default_family

    return family is None or family == default_family()


def family_name(family: str | None) -> str:
    """``family``, or the default family's name for None."""
    from arib.ground.family import default_family

    return default_family() if family is None else family


def version_key(version: str) -> tuple[tuple[int, ...], ...]:
    """A sort key for a version or a components label ("cp2.0.26+sq2.0.11+pg2.0.24"): per
    "+"-joined part, its dotted numbers (the part's letter prefix dropped, others as 0)."""
    return tuple(tuple(int(x) if x.isdigit() else 0 for x in part.lstrip(_LETTERS).split("."))
                 for part in version.split("+"))


_LETTERS = "abcdefghijklmnopqrstuvwxyz"


def versions_noun(family: str | None) -> str:
    """How messages name a family's versions: "SDK" for the default family's, else the
    family's name."""
    return "SDK" if is_default(family) else family_name(family)


def lock_command(version: str, family: str | None = None) -> str:
    """The command that compiles the lock file of one version of ``family``."""
    flag = "" if is_default(family) else f"--family {family} "
    return f"nox -s lock -- {flag}{version}"


def bench_command(version: str | None = None, family: str | None = None) -> str:
    """The command that measures ``version`` of ``family`` (its default versions: None)."""
    args = ([] if is_default(family) else [f"--family {family}"]) + (
        [] if version is None else [f"--versions {version}"])
    return "nox -s bench" + (f" -- {' '.join(args)}" if args else "")


def harness_command(args: str, family: str | None = None) -> str:
    """``python -m arib ARGS``, naming ``--family`` when it is not the default family."""
    flag = "" if is_default(family) else f"--family {family} "
    return f"python -m arib {flag}{args}"


def component_versions(version: str,
                       components: Sequence[tuple[str, str]]) -> dict[str, str] | None:
    """label -> version of each component a label names ("cp4.3.2+sq3.1.2+pg3.2.0" ->
    {"cp": "4.3.2", ...}), or None when it is not of the components' form."""
    parts = version.split("+")
    if len(parts) != len(components):
        return None
    found = {}
    for part, (label, _) in zip(parts, components, strict=True):
        rest = part.removeprefix(label)
        if rest == part or not re.fullmatch(r"\d+(\.\d+)*([a-z]+\d*)?(\.post\d+)?", rest):
            return None
        found[label] = rest
    return found


def label_form_error(version: str, family: str,
                     components: Sequence[tuple[str, str]]) -> str | None:
    """None when ``version`` is of the form of ``family``'s labels (any version, for a
    family of one distribution), else one line naming it, the form and an example."""
    if not components or component_versions(version, components) is not None:
        return None
    form = "+".join(f"{label}<{dist} version>" for label, dist in components)
    example = "+".join(f"{label}1.2.3" for label, _ in components)
    return (f"version {version!r} of family {family!r} is not of the form {form!r}: name "
            f"each component's released version, in that order, e.g. {example!r}")


def locked_versions(lock_dir: Path = LOCK_DIR, family: str | None = None) -> list[str]:
    """The versions of a family that have a lock file, oldest first (components labels by
    their components in order)."""
    name = family_name(family)
    names = (p.name.removeprefix(f"{name}-").removesuffix(".txt")
             for p in lock_dir.glob(f"{name}-*.txt"))
    return sorted(names, key=version_key)


def unlocked_version_error(version: str, lock_dir: Path = LOCK_DIR,
                           family: str | None = None,
                           components: Sequence[tuple[str, str]] = ()) -> str | None:
    """None when ``version`` has a lock file, else one line naming it and the fix (a label
    not of the family's form is refused first, with the form)."""
    family = family_name(family)
    malformed = label_form_error(version, family, components)
    if malformed is not None:
        return malformed
    known = locked_versions(lock_dir, family)
    if version in known:
        return None
    noun = versions_noun(family)
    return (f"unavailable {noun} version {version!r}: the bench has lock files for "
            f"{', '.join(known) or f'no {family} version'}; create one with "
            f"`{lock_command(version, family)}`")
