"""Selections named on the command line (``--checks``, ``--lanes``, ``--loops``, a check id):
an empty one is refused, never read as "everything".

Leaving an option out selects its default; giving it with nothing in it (``--checks ""``), or
with an empty element (``--checks A,,B``, a trailing comma), is a mistake (a variable that
expanded to nothing, a typo), and a run that then measured every check or lane would spend its
time on what nobody asked for and present it as what was asked. Each function here is an
argparse ``type``: it returns the value unchanged or raises ``UsageError`` (one line: the value,
the rule, the fix; exit 2), which passes through argparse to ``arib.cli.main.main``.
"""

from __future__ import annotations

from collections.abc import Callable

from arib.ground.errors import UsageError


def empty_element(text: str) -> int | None:
    """The 1-based position of the first empty element of a comma-separated ``text`` (the
    whole text counts as one element), or None when every element names something."""
    for index, part in enumerate(text.split(","), start=1):
        if not part.strip():
            return index
    return None


def check_list(option: str, text: str, what: str, example: str) -> str:
    """``text`` unchanged when it is a comma-separated list of one or more non-empty names;
    else UsageError naming ``option``, the value, the rule and the fix."""
    position = empty_element(text)
    if position is None:
        return text
    if not text.strip():
        why = f"names no {what}"
    else:
        count = len(text.split(","))
        why = f"has an empty element (item {position} of {count})"
    raise UsageError(
        f"{option} {text!r} {why}: the rule: a selection names one or more {what}s, "
        f"comma-separated, none empty (leave {option} out for the default); fix: e.g. "
        f"{option} {example}, or leave {option} out")


def name_list(option: str, what: str, example: str) -> Callable[[str], str]:
    """An argparse ``type`` for a comma-separated selection (see ``check_list``)."""

    def parse(text: str) -> str:
        return check_list(option, text, what, example)

    parse.__name__ = f"{what} list"  # what argparse would name in its own messages
    return parse


def one_name(option: str, what: str, example: str) -> Callable[[str], str]:
    """An argparse ``type`` for one name (``--check``, a positional check id): not empty."""

    def parse(text: str) -> str:
        if text.strip():
            return text
        raise UsageError(
            f"{option} {text!r} names no {what}: the rule: it takes one {what}, not empty; "
            f"fix: e.g. {option} {example}")

    parse.__name__ = what
    return parse
