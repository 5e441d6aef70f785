"""``python -m arib survey``: the survey command, its outputs and its shard manifest."""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from arib.cli.options import (
    CHECKS,
    LANES,
    add_common,
    add_shard,
    add_verify,
    parse_params,
    select_checks,
    shard_writes,
    verdict_cache,
)
from arib.ground.model import ExitCode


def add_parsers(sub: Any) -> None:
    """The parser of survey."""
    p = sub.add_parser("survey", help="every check against every generated mutant of lanes")
    add_common(p)
    p.add_argument("--lanes", type=LANES, help="comma-separated lanes, or all (default: "
                                                "reference + local lanes); service lanes start "
                                                "their servers; a user's @lane by its name "
                                                "(an entry point) or as module:attribute, "
                                                "mutated in the class its factory returns")
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
    add_verify(p)
    p.add_argument("--every-check", action="store_true",
                   help="run every check that reaches a mutant, also after one killed it "
                        "(default: a mutant stops at its first kill, the others are not_run)")
    p.add_argument("--fail-under", action="append", default=[], metavar="[LANE=]PCT",
                   help="exit 1 when a lane's covered score is below PCT percent; PCT sets "
                        "every lane, LANE=PCT one lane (repeatable), e.g. --fail-under 90 "
                        "--fail-under redis-from-url=80")
    add_shard(p, "(lane, mutant) units")
    p.set_defaults(func=cmd_survey)


def cmd_survey(args: argparse.Namespace) -> int:
    """`python -m arib survey`: run the mutant survey, write it, apply the score gate.

    With ``--json -`` the survey's JSON is the only thing on stdout (for machines); every
    line for people goes to stderr.
    """
    if args.json != "-":
        return _survey(args, sys.stdout)
    import contextlib

    with contextlib.redirect_stdout(sys.stderr):
        return _survey(args, sys.__stdout__ or sys.stdout)


def _survey_outputs(args: argparse.Namespace, surveys: Any, config: Any, machine: Any) -> None:
    """Write what the survey's options ask for: the lane files and the mutation report
    (``--write``; beside the folder, or merged into it with ``--partial``, when the survey
    measured less than the folder holds), one JSON document (``--json``), the HTML kill
    matrix (``--html``)."""
    from arib.execute import sdk_version
    from arib.ground.family import active_family
    from arib.ground.files import atomic_write_text
    from arib.runs.partial_write import write_lanes
    from arib.survey.report import lane_documents, survey_mutation_report, survey_set

    out = Path(args.out or f"results/survey/{active_family().stem(sdk_version())}")
    report = survey_mutation_report(surveys) if args.write or args.html else None
    if args.write:
        assert report is not None
        written = write_lanes(out, lane_documents(surveys, config), report,
                              merge=args.partial)
        for path in written.paths:
            print(f"wrote {path}" + (" (mutation-testing-report-schema v2, one file per lane)"
                                     if path.name == "mutation-report.json" else ""))
        for line in written.lines:
            print(line)
        if config.shard is not None:
            from arib.runs.shard import write_manifest

            manifest = _survey_manifest(surveys, config)
            where = written.paths[0].parent
            print(f"wrote {write_manifest(where, 'survey', config.shard, manifest)}")
    if args.json:
        text = json.dumps(survey_set(surveys, config), indent=1, ensure_ascii=False) + "\n"
        if args.json == "-":
            machine.write(text)
            machine.flush()
        else:
            atomic_write_text(Path(args.json), text)
            print(f"wrote {args.json}")
    if args.html and report is not None:
        from arib.reports.html import write_html

        print(f"wrote {write_html(report, Path(args.html))}")


def _survey_manifest(surveys: Any, config: Any) -> dict[str, Any]:
    """What a survey shard's merge needs besides its lane files: each lane's mutant order."""
    return {"checks": [c.id for c in config.checks],
            "lanes": {s.lane: list(s.order) for s in surveys}}


def _survey(args: argparse.Namespace, machine: Any) -> int:
    """The survey command; ``machine`` receives ``--json -`` output."""
    from arib.caches.equivalence import equivalence_cache
    from arib.caches.generation import generation_cache
    from arib.execute import sdk_version
    from arib.ground.family import active_family
    from arib.ground.services import ServiceManager
    from arib.lanes import prepare_lanes
    from arib.runs.shard import make_split, survey_durations
    from arib.survey.engine import SurveyConfig, survey
    from arib.survey.report import clean_totals, render_text, run_totals
    from arib.survey.scores import gate, parse_fail_under
    from arib.survey.survivors import load_survivors, survivors_path
    from arib.targets.registry import family_lanes, parse_lanes

    family = active_family()
    params = parse_params(args.param)
    checks = select_checks(args.checks, params)
    known = [t.name for t in family_lanes()]
    fail_under = parse_fail_under(args.fail_under, known)
    entries = load_survivors(sdk_version(), known)
    waivers = survivors_path(sdk_version())
    lanes = (family_lanes() if args.lanes == "all" else parse_lanes(args.lanes)
             if args.lanes else (family.resolve("reference"), *family.resolve("survey_lanes")))
    if args.html:  # fail in seconds, not after the survey, when the viewer cannot be had
        from arib.reports.html import check_out_dir, fetch_viewer

        check_out_dir(Path(args.html))
        fetch_viewer()
    shard_writes(args, args.write, "--write", "--write --out DIR (one DIR per shard)")
    if args.partial and not args.write:
        from arib.ground.errors import UsageError

        raise UsageError("--partial without --write: the rule: --partial says how --write "
                         "merges a survey of fewer lanes or checks into its folder; fix: add "
                         "--write, or drop --partial")
    split = make_split(args, survey_durations(Path(  # read only when sharded
        f"results/survey/{family.stem(sdk_version())}")) if args.shard else None)
    started = time.perf_counter()
    with (generation_cache(args.no_cache) as kept, equivalence_cache(args.no_cache) as same,
          ServiceManager() as manager):
        prepared = prepare_lanes(lanes, manager)
        asked = {lane.name for lane in lanes}
        missing = [m for m in prepared.not_measured if m.name in asked]
        for absent in prepared.not_measured:
            print(f"{absent.name}: {absent.reason}")
        config = SurveyConfig(
            lanes=prepared.lanes, checks=checks, reruns=args.reruns, params=params,
            timeout_s=args.timeout, run_seed=args.seed, quiet=args.quiet,
            workers=args.workers or os.cpu_count() or 1,
            cache=(cache := verdict_cache(args)),
            services=prepared.services, survivors=entries,
            survivors_source=str(waivers) if waivers.is_file() else None, shard=split,
            first_kill=not args.every_check,
        )
        surveys = survey(config)
        died = servers_that_died(prepared.lanes, manager)
    print(render_text(surveys, show_diffs=args.diffs))
    print(f"all lanes: {run_totals([s.runs for s in surveys])}")
    print(f"all lanes: {clean_totals(surveys)}")
    print(f"all lanes: {kept.describe()}")
    print(f"all lanes: {same.describe()}")
    print(f"all lanes: {cache.describe()}")
    _survey_outputs(args, surveys, config, machine)
    print(f"surveyed {sum(len(s.outcomes) for s in surveys)} mutants on {len(surveys)} lanes "
          f"in {time.perf_counter() - started:.1f}s"
          + (f"; not measured: {', '.join(m.name for m in missing)}" if missing else ""))
    errors = {s.lane: f"lane error: {s.error}" for s in surveys if s.error}
    for found in surveys:  # a lane's class lanes ("<lane>[<Class>]") ran on its server too
        why = died.get(found.lane.partition("[")[0])
        if why is not None:
            errors[found.lane] = (f"the lane's server died during the survey ({why}): what its "
                                  f"runs gave after that measures the dead server, not the "
                                  f"lane; run the survey again")
    if split is not None:
        print(f"shard {split.spec}: the score gate is applied by `python -m arib merge`")
        if missing:  # this machine's split covers fewer lanes than the other shards' may
            print(f"error: shard {split.spec} could not measure "
                  f"{', '.join(m.name for m in missing)}; every shard must measure every "
                  f"lane asked for, or the merge would be less than it says", file=sys.stderr)
        return int(ExitCode.ERROR_OR_NOTHING if errors or missing else ExitCode.OK)
    lines = gate({s.lane: s.scores() for s in surveys if not s.error}, errors, fail_under)
    for line in lines:
        print(f"gate: {line.describe()}")
    if fail_under:
        results = sum(len(s.results) for s in surveys)
        cached = sum(1 for s in surveys for r in s.results if r.cached)
        print(f"gate: rests on {results} pair result(s), {cached} of them from the verdict "
              f"cache ({cache.counts['verified']} cache hit(s) re-judged, "
              f"{len(cache.disagreements)} disagreed)")
    judged = sum(s.scores().covered for s in surveys if not s.error)
    if errors or not judged:
        print("error: " + ("; ".join(f"{lane}: {why}" for lane, why in errors.items())
                           or "the survey judged no mutant: nothing was measured"),
              file=sys.stderr)
        # a user's lane that cannot be surveyed is bad input (exit 2), after the others ran
        return int(ExitCode.USAGE if any(s.bad_input for s in surveys)
                   else ExitCode.ERROR_OR_NOTHING)
    return int(ExitCode.OK if all(line.passed for line in lines) else ExitCode.VIOLATED)


def servers_that_died(lanes: Any, manager: Any) -> dict[str, str]:
    """Lane name -> why its server is gone, for each lane whose server died during the run."""
    from arib.lanes import service_failure

    found = {lane.name: service_failure(lane, manager) for lane in lanes}
    return {name: why for name, why in found.items() if why is not None}
