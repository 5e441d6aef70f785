"""`merge`, `html`, `show`, `list` and `report`: combine shards; read and render what was
measured."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any


def add_parsers(sub: Any) -> None:
    """The parsers of merge, html, show, list and report."""
    p = sub.add_parser("merge", help="combine the outputs of sharded runs (--shard k/n) "
                                     "into the document one unsharded run writes")
    p.add_argument("shards", nargs="+", metavar="SHARD_OUTPUT",
                   help="every shard's output: a folder of `survey --shard k/n --write "
                        "--out DIR`, or the file of `admit --shard k/n --json PATH`")
    p.add_argument("--out", required=True, help="folder for the merged documents")
    p.set_defaults(func=cmd_merge)

    p = sub.add_parser("html", help="build the HTML kill matrix from a survey's "
                                    "mutation-report.json (the viewer is fetched from npm once)")
    p.add_argument("report", help="a mutation-report.json written by survey --write")
    p.add_argument("--out", required=True, help="folder for report.html and the viewer bundle")
    p.set_defaults(func=cmd_html)


    p = sub.add_parser("show", help="one mutant: its diff, lane, operator, survey status and "
                                    "the checks that killed it; or one finding of a bench run")
    p.add_argument("mutant", metavar="ID", help=(
        "a mutant id (m-...), a hand-written mutant's name, or a finding id 'CHECK on LANE' "
        "(e.g. 'ARIB-CONC-001 on sqlite-file'; from the newest bench run of the installed "
        "version, or --result FILE)"))
    p.add_argument("--result", metavar="FILE", help="with a finding id: the bench result file "
                                                    "to read (default: the newest run)")
    p.add_argument("--lane", help="look for a generated mutant on this lane only (faster)")
    p.add_argument("--survey", help="folder of a written survey (default: "
                                    "results/survey/<family>-<version>)")
    p.set_defaults(func=cmd_show)


    p = sub.add_parser("list", help="list checks, lanes and mutants")
    p.set_defaults(func=cmd_list)

    p = sub.add_parser("report", help="regenerate the Markdown report of a result file")
    p.add_argument("result")
    p.add_argument("--out")
    p.set_defaults(func=cmd_report)


def cmd_merge(args: argparse.Namespace) -> int:
    """`python -m arib merge`: combine shard outputs into what one unsharded run writes."""
    from arib.ground.files import writable_folder

    out = writable_folder(Path(args.out))
    written, lines, code = _merge_outputs([Path(p) for p in args.shards], out)
    for path in written:
        print(f"wrote {path}")
    print("\n".join(lines), file=sys.stderr if code else sys.stdout)
    return code


def cmd_html(args: argparse.Namespace) -> int:
    """The HTML kill matrix from a mutation-report JSON that ``survey --write`` wrote."""
    from arib.reports.html import write_html_from_file

    print(f"wrote {write_html_from_file(Path(args.report), Path(args.out))}")
    return 0


def cmd_list(args: argparse.Namespace) -> int:
    """`python -m arib list`: print the checks, lanes and hand-written mutants."""
    from arib.checks.registry import load_checks
    from arib.mutants.registry import handwritten_mutants
    from arib.targets.registry import family_lanes

    print("checks:")
    for c in load_checks():
        params = ", ".join(f"{p.name}={p.default}" for p in c.params)
        print(f"  {c.id}: {c.invariant} [{params}]")
    print("lanes:")
    for t in family_lanes():
        print(f"  {t.name}: {t.description}")
    print("hand-written mutants:")
    for m in handwritten_mutants():
        print(f"  {m.name} ({m.id}, {m.target}): {m.description}")
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    """`python -m arib report`: regenerate the Markdown report of a result file."""
    from arib.ground.files import atomic_write_text
    from arib.reports.markdown import render_markdown
    from arib.runs.results import read_results

    path = Path(args.result)
    document = read_results(path)
    out = Path(args.out) if args.out else path.with_suffix(".md")
    atomic_write_text(out, render_markdown(document))
    print(f"wrote {out}")
    return 0


def cmd_show(args: argparse.Namespace) -> int:
    """`python -m arib show ID`: one mutant's diff, lane, operator, status and killers; or
    one finding (``CHECK on LANE``) of a bench run."""
    from arib.reports.show import (
        default_survey_dir,
        describe,
        describe_finding,
        find_finding,
        find_mutant,
        is_finding_id,
    )
    from arib.targets.registry import family_lanes

    if is_finding_id(args.mutant):
        path, finding = find_finding(args.mutant, Path(args.result) if args.result else None)
        print(describe_finding(path, finding))
        return 0

    lanes = [args.lane] if args.lane else [t.name for t in family_lanes()]
    mutant = find_mutant(args.mutant, lanes)
    print(describe(mutant, Path(args.survey) if args.survey else default_survey_dir()))
    return 0


def _merge_outputs(paths: Sequence[Path], out: Path) -> tuple[list[Path], list[str], int]:
    """Merge survey shard folders, or admission or bench shard documents."""
    from arib.runs.merge import merge_admissions, merge_bench
    from arib.runs.shard import read_json
    from arib.survey.merge import merge_survey

    if not paths or not paths[0].is_file():
        return merge_survey(paths, out)
    kind = read_json(paths[0]).get("kind")
    return (merge_bench if kind == "arib-bench-run" else merge_admissions)(paths, out)
