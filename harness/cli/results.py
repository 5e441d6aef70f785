"""``python -m arib results``: the survivors and no_coverage mutants of the newest written
survey, per lane (like ``mutmut results``)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any


def add_parsers(sub: Any) -> None:
    """The parser of results."""
    p = sub.add_parser("results", help="list the mutants the newest written survey left alive "
                                       "(survived and no_coverage by default), per lane")
    p.add_argument("--status", metavar="S,S", help=(
        "comma-separated statuses to list (default: survived,no_coverage; e.g. "
        "survived,flaky,timeout,no_coverage)"))
    p.add_argument("--lane", action="append", default=[], metavar="LANE",
                   help="only this lane (repeatable; default: every surveyed lane)")
    p.add_argument("--survey", metavar="DIR", help=(
        "folder of a written survey (default: results/survey/<family>-<installed version>, "
        "else the newest folder under results/survey/)"))
    p.add_argument("--json", metavar="PATH", help="also write the listing as JSON to PATH; "
                                                  "'-' for stdout, where it is the only output")
    p.set_defaults(func=cmd_results)


def cmd_results(args: argparse.Namespace) -> int:
    """`python -m arib results`: print (or write as JSON) the listing; exit 0 once read."""
    from arib.ground.files import atomic_write_text
    from arib.reports.listing import list_survey, newest_survey, parse_statuses, render_listing

    statuses = parse_statuses(args.status)
    if args.survey:
        folder = Path(args.survey)
    else:
        from arib.reports.show import default_survey_dir

        preferred = default_survey_dir()
        folder = newest_survey(preferred.parent, preferred)
    listings = list_survey(folder, statuses, args.lane or None)
    if args.json:
        text = json.dumps({"survey": str(folder), "statuses": list(statuses),
                           "lanes": [lane.to_json() for lane in listings]}, indent=1) + "\n"
        if args.json == "-":
            sys.stdout.write(text)
            return 0
        atomic_write_text(Path(args.json), text)
    print(render_listing(folder, listings, statuses))
    if args.json:
        print(f"wrote {args.json}")
    return 0
