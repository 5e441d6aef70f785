"""`official` and `probe`: a family's own tools (each imported only when it runs)."""

from __future__ import annotations

import argparse
from typing import Any

from arib.cli.options import (
    LANES,
    add_common,
)


def add_parsers(sub: Any) -> None:
    """The parsers of official and probe."""
    p = sub.add_parser("official", help="LangGraph: the official conformance suite beside our "
                                        "checks (its reference run per lane; --mutants: both "
                                        "on the survey's generated mutants)")
    add_common(p)
    p.add_argument("--lanes", type=LANES, help="comma-separated checkpointer lanes (default: "
                                                "all)")
    p.add_argument("--out", default="results", help="results folder: the newest bench result "
                   "of the version is read there, the tables go to OUT/official/")
    p.add_argument("--mutants", action="store_true", help="also judge the generated mutants "
                   "with both suites and compare their scores")
    p.add_argument("--reruns", type=int, default=1,
                   help="with --mutants: reruns per mutant (default 1); a kill must repeat in "
                        "3 reruns at least, as in the survey")
    p.add_argument("--timeout", type=float, default=20.0,
                   help="with --mutants: seconds per run at most (default 20: one run is the "
                        "whole suite, 58 to 66 tests; at 10 s, PostgreSQL pool and pipeline "
                        "mutants timed out on a loaded machine)")
    p.add_argument("--workers", type=int, default=0, help="parallel children (default: cores)")
    p.add_argument("--examples", type=int, default=3,
                   help="with --mutants: diffs shown per one-sided kind")
    p.add_argument("--no-cache", action="store_true")
    p.set_defaults(func=_official)

    p = sub.add_parser("probe", help="build each lane once and make the family's calls on it: "
                                     "whether this release takes them (LangGraph)")
    p.add_argument("--lanes", type=LANES, help="comma-separated lanes (default: every lane, "
                                                "the reference too)")
    p.add_argument("--workers", type=int, default=2, help="probes at once (default 2)")
    p.add_argument("--json", help="also write the results as JSON to this file (- : stdout, "
                                  "instead of the lines)")
    p.add_argument("--gates", action="store_true", help="also run every check once on the "
                   "lane that gates it: would admission's sanity gate stop the bench here?")
    p.set_defaults(func=_probe)


def _official(args: argparse.Namespace) -> int:
    """``official``: the LangGraph family's command (imported only when it runs)."""
    from arib.official.command import cmd_official

    return cmd_official(args)


def _probe(args: argparse.Namespace) -> int:
    """``probe`` (imported only when it runs)."""
    from arib.probe import cmd_probe

    return cmd_probe(args)
