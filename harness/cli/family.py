"""`probe`, `official` (when a family has its own conformance suite), and each family's own
commands (its record's ``commands``): the family tools."""

from __future__ import annotations

import argparse
from typing import Any

from arib.cli.options import LANES


def add_parsers(sub: Any) -> None:
    """The parser of probe, then those of every known family's own commands."""
    p = sub.add_parser("probe", help="build each lane once and make the family's calls on it: "
                                     "whether this release takes them (families with a probe)")
    p.add_argument("--lanes", type=LANES, help="comma-separated lanes (default: every lane, "
                                                "the reference too)")
    p.add_argument("--workers", type=int, default=2, help="probes at once (default 2)")
    p.add_argument("--json", help="also write the results as JSON to this file (- : stdout, "
                                  "instead of the lines)")
    p.add_argument("--gates", action="store_true", help="also run every check once on the "
                   "lane that gates it: would admission's sanity gate stop the bench here?")
    p.set_defaults(func=_probe)

    from arib.ground.family import all_families

    families = all_families()
    if any(family.official for family in families):
        from arib.official.command import add_parsers as add_official

        add_official(sub)
    for family in families:
        if family.commands:
            family.resolve("commands")(sub)


def _probe(args: argparse.Namespace) -> int:
    """``probe`` (imported only when it runs)."""
    from arib.probe import cmd_probe

    return cmd_probe(args)
