"""The command line: ``python -m arib {bench,admit,run,survey,parity,list,...} ...``."""

from __future__ import annotations

import argparse
import os
import signal
import sys
from collections.abc import Sequence

from arib.commands import (
    cmd_accept,
    cmd_admit,
    cmd_bench,
    cmd_compare,
    cmd_docs,
    cmd_html,
    cmd_list,
    cmd_merge,
    cmd_report,
    cmd_run,
    cmd_scaffold,
    cmd_show,
)
from arib.ground.errors import BenchError
from arib.ground.model import ExitCode
from arib.selection import name_list, one_name
from arib.survey_command import cmd_survey

CHECKS = name_list("--checks", "check id", "ARIB-CONC-001,ARIB-POP-001")
LANES = name_list("--lanes", "lane", "sqlite-file,redis-from-url")


def _version_line() -> str:
    """``arib <version>`` with the Python it runs on and the families it can measure."""
    import platform
    from importlib import metadata

    from arib.ground.family import known_families

    try:
        version = metadata.version("agent-integrity-bench")
    except metadata.PackageNotFoundError:
        version = "unknown (not installed)"
    return (f"arib {version} (python {platform.python_version()}; families: "
            f"{', '.join(sorted(known_families()))})")


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``python -m arib``.

    Long because it declares every subcommand and its options in one place, a flat run of
    ``add_argument`` calls with no logic to split out: the whole command line reads top to
    bottom here.
    """
    parser = argparse.ArgumentParser(prog="python -m arib", description=(
        "Mutation-first integrity bench for agent session backends."))
    parser.add_argument("--version", action="version", version=_version_line())
    parser.add_argument("--family", default=None, help=(
        "the runtime family to measure (default: $ARIB_FAMILY, else openai-agents); families "
        "are registered in the entry-point group arib.families"))
    sub = parser.add_subparsers(dest="command", required=True)

    def common(p: argparse.ArgumentParser) -> None:
        p.add_argument("--param", action="append", default=[], metavar="CHECK.NAME=INT",
                       help="override a check parameter (repeatable)")
        p.add_argument("--seed", type=int, default=0, help="run seed (default 0)")
        p.add_argument("--quiet", action="store_true", help="no progress lines")

    def verify(p: argparse.ArgumentParser) -> None:
        p.add_argument("--verify-sample", type=float, default=3.0, metavar="PCT",
                       help="re-judge this percent of the verdict cache's hits, a sample "
                            "seeded by --seed (default 3); one disagreement discards the "
                            "cache for the run and judges everything again")
        p.add_argument("--verify-cache", action="store_true",
                       help="re-judge every hit of the verdict cache (--verify-sample 100)")

    def shard(p: argparse.ArgumentParser, units: str) -> None:
        p.add_argument("--shard", metavar="K/N", help=(
            f"run only shard K of N: {units} split deterministically, balanced by recorded "
            f"durations; run every K with the same arguments, then `merge` the outputs"))

    p = sub.add_parser("bench", help="admit checks, run them on every lane, write results/")
    common(p)
    p.add_argument("--sdk", help="expected version of the family's distribution here (for "
                                 "openai-agents, the SDK's version)")
    p.add_argument("--lanes", type=LANES, help="comma-separated lanes (default: every real "
                                                "local lane)")
    p.add_argument("--checks", type=CHECKS, help="comma-separated check ids (default: all)")
    p.add_argument("--reruns", type=int, default=3, help="admission reruns per mutant")
    p.add_argument("--workers", type=int, help="cells (check, lane) measured at once, each in "
                                                 "its own child (default 2, at most the cores)")
    p.add_argument("--loop", default="asyncio", help="event loop: asyncio or uvloop")
    p.add_argument("--out", default="results", help="results folder (default results/)")
    p.add_argument("--no-cache", action="store_true",
                   help="ignore the caches (verdicts, generated mutants)")
    verify(p)
    p.add_argument("--accept", action="store_true",
                   help="accept this run as the version's baseline (regression gate)")
    p.add_argument("--partial", action="store_true",
                   help="with --accept and --lanes/--checks: accept only the measured cells")
    shard(p, "(check, lane) cells")
    p.set_defaults(func=cmd_bench)

    p = sub.add_parser("accept", help="accept runs as the baselines of the regression gate")
    p.add_argument("result", nargs="*", help="run files to accept")
    p.add_argument("--sdk", help="accept the newest run of these versions (comma-separated)")
    p.add_argument("--out", default="results", help="results folder (default results/)")
    p.add_argument("--partial", action="store_true",
                   help="accept a partial run (subset of lanes or checks, or interrupted): "
                        "only the cells it measured change")
    p.set_defaults(func=cmd_accept)

    p = sub.add_parser("compare", help="cross-version report from result files")
    p.add_argument("result", nargs="*", help="run files (default: newest per version)")
    p.add_argument("--out", default="results", help="results folder (default results/)")
    p.add_argument("--report", help="where to write (default results/cross-version.md; for "
                                    "another family results/cross-version-<family>.md)")
    p.set_defaults(func=cmd_compare)

    p = sub.add_parser("admit", help="admit checks: each paired mutant killed or survived")
    common(p)
    p.add_argument("check", nargs="*", type=one_name("admit", "check id", "ARIB-CONC-001"),
                   help="check ids")
    p.add_argument("--all", action="store_true", help="admit every check")
    p.add_argument("--reruns", type=int, default=3)
    p.add_argument("--workers", type=int, default=0, help="parallel children (default: cores)")
    p.add_argument("--no-cache", action="store_true",
                   help="ignore the caches (verdicts, generated mutants)")
    verify(p)
    p.add_argument("--json", metavar="PATH", help="also write the admissions as one JSON "
                                                  "document (what `merge` combines)")
    shard(p, "checks")
    p.set_defaults(func=cmd_admit)

    p = sub.add_parser("run", help="run one check on one lane (replays a violation)")
    common(p)
    p.add_argument("--check", required=True, type=one_name("--check", "check id",
                                                            "ARIB-CONC-001"))
    p.add_argument("--lane", required=True, type=one_name("--lane", "lane", "sqlite-file"))
    p.add_argument("--trial-seed", type=int, action="append", help="exact trial seed(s)")
    p.add_argument("--trial-index", type=int, default=0, metavar="N",
                   help="run the (first) trial as trial N, as a finding's replay command says "
                        "(a check may pick its mode by trial)")
    p.add_argument("--mutant", help="install a mutant of the lane first: a hand-written one's "
                                    "name or id, or a generated one's id")
    p.add_argument("--loop", default="asyncio")
    p.add_argument("--schedule", metavar="TEXT|@FILE",
                   help="replay this recorded schedule (a concurrent check's, with its one "
                        "--trial-seed), as a finding's replay command gives it")
    p.add_argument("--repeat", type=int, metavar="N",
                   help="run N times and report how often the violation reproduced (default "
                        "1; 3 for a schedule with uncontrolled decisions)")
    p.set_defaults(func=cmd_run)

    p = sub.add_parser("survey", help="every check against every generated mutant of lanes")
    common(p)
    p.add_argument("--lanes", type=LANES, help="comma-separated lanes, or all (default: "
                                                "reference + local lanes); service lanes start "
                                                "their servers")
    p.add_argument("--checks", type=CHECKS, help="comma-separated check ids (default: all)")
    p.add_argument("--reruns", type=int, default=1, help=(
        "reruns per mutant (default 1); a pair violated in every rerun runs again until it "
        "has 3: killed only when all violated, else flaky"))
    p.add_argument("--timeout", type=float, default=10.0, help="seconds per run (default 10)")
    p.add_argument("--workers", type=int, default=0, help="parallel children (default: cores)")
    p.add_argument("--diffs", type=int, default=20, help="survivor diffs to print per lane")
    p.add_argument("--write", action="store_true", help="write JSON under results/survey/")
    p.add_argument("--out", help="folder for --write")
    p.add_argument("--partial", action="store_true",
                   help="with --write: merge a survey of fewer lanes or checks than the "
                        "folder holds into it lane by lane (default: it is written beside, "
                        "in OUT/partial/<stamp>/, marked partial)")
    p.add_argument("--html", help="also write the mutation-testing-elements HTML report here")
    p.add_argument("--json", metavar="PATH", help="write every lane's survey as one JSON "
                                                  "document to PATH; '-' for stdout, where it "
                                                  "is then the only output (people's lines go "
                                                  "to stderr)")
    p.add_argument("--no-cache", action="store_true",
                   help="ignore the caches (verdicts, clean runs, generated mutants, "
                        "equivalence classes)")
    verify(p)
    p.add_argument("--every-check", action="store_true",
                   help="run every check that reaches a mutant, also after one killed it "
                        "(default: a mutant stops at its first kill, the others are not_run)")
    p.add_argument("--fail-under", action="append", default=[], metavar="[LANE=]PCT",
                   help="exit 1 when a lane's covered score is below PCT percent; PCT sets "
                        "every lane, LANE=PCT one lane (repeatable), e.g. --fail-under 90 "
                        "--fail-under redis-from-url=80")
    shard(p, "(lane, mutant) units")
    p.set_defaults(func=cmd_survey)

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

    p = sub.add_parser("scaffold", help="write a new check and its first mutant to fill in")
    p.add_argument("check_id", help="e.g. ARIB-POP-001")
    p.add_argument("--lane", default="sqlite-file", help="backend lane its mutants break")
    p.add_argument("--root", default=".", help="project root (default: here)")
    p.set_defaults(func=cmd_scaffold)

    from arib.parity.cli import add_parser as add_parity_parser

    add_parity_parser(sub)  # parity check / parity update

    from arib.races_cli import add_parser as add_races_parser

    add_races_parser(sub)  # races corpus / measure / report

    p = sub.add_parser("show", help="one mutant: its diff, lane, operator, survey status and "
                                    "the checks that killed it")
    p.add_argument("mutant", help="a mutant id (m-...) or a hand-written mutant's name")
    p.add_argument("--lane", help="look for a generated mutant on this lane only (faster)")
    p.add_argument("--survey", help="folder of a written survey (default: "
                                    "results/survey/<family>-<version>)")
    p.set_defaults(func=cmd_show)

    p = sub.add_parser("official", help="LangGraph: the official conformance suite beside our "
                                        "checks (its reference run per lane; --mutants: both "
                                        "on the survey's generated mutants)")
    common(p)
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

    p = sub.add_parser("docs", help="regenerate the generated tables of the README pages "
                                    "(invariants, operators, runs)")
    p.add_argument("--readme", default="README.md")
    p.set_defaults(func=cmd_docs)

    p = sub.add_parser("list", help="list checks, lanes and mutants")
    p.set_defaults(func=cmd_list)

    p = sub.add_parser("report", help="regenerate the Markdown report of a result file")
    p.add_argument("result")
    p.add_argument("--out")
    p.set_defaults(func=cmd_report)
    return parser


def _official(args: argparse.Namespace) -> int:
    """``official``: the LangGraph family's command (imported only when it runs)."""
    from arib.official.command import cmd_official

    return cmd_official(args)


def _probe(args: argparse.Namespace) -> int:
    """``probe`` (imported only when it runs)."""
    from arib.probe import cmd_probe

    return cmd_probe(args)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point: run a command, turning misuse into one clear line and an exit code.

    SIGINT, SIGTERM and SIGHUP stop a command the same way (arib.ground.interrupts): what was
    measured is written, children and servers are stopped, and the exit status is 128 + the
    signal's number. A harness crash (an exception no command expects) exits 4 with one
    line and its traceback, never 1, which means "violated".
    """
    from arib.ground import interrupts, owners, scratch

    os.environ.setdefault("OPENAI_AGENTS_DISABLE_TRACING", "1")
    reaped = owners.reap()  # servers and folders of runs that died without cleaning up
    if reaped:
        print(owners.describe(reaped), file=sys.stderr)
    parser = build_parser()
    try:
        # A selection's own check (arib.selection) raises UsageError through argparse.
        args = parser.parse_args(argv)
    except BenchError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return int(exc.exit_code)
    try:
        with interrupts.stops_raise():
            try:
                if args.family is not None:
                    from arib.ground.family import use_family

                    use_family(args.family)
                return int(args.func(args))
            finally:
                scratch.cleanup()
    except BenchError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return int(exc.exit_code)
    except KeyboardInterrupt as exc:
        signum = interrupts.received() or signal.SIGINT
        written = getattr(exc, "written", ())
        what = (f"the results measured so far were written, marked complete: false: "
                f"{', '.join(str(p) for p in written)}" if written else "nothing was written")
        print(f"interrupted by {signal.Signals(signum).name}: {what}", file=sys.stderr)
        return interrupts.exit_status(signum)
    except Exception as exc:  # the harness's own crash: exit 4, never 1 ("violated")
        import traceback

        print(f"error: the harness crashed in `{args.command}` with {type(exc).__name__}: "
              f"{exc}; this is a bug of the harness, not a finding (traceback below)",
              file=sys.stderr)
        traceback.print_exc()
        return int(ExitCode.ERROR_OR_NOTHING)
