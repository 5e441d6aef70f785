"""`admit` and `run`: admit checks against their mutants; run one check on one lane (a replay)."""

from __future__ import annotations

import argparse
import functools
import json
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from arib.cli.options import (
    add_common,
    add_shard,
    add_verify,
    at_least,
    check_loop,
    parse_params,
    select_checks,
    shard_writes,
    verdict_cache,
)
from arib.ground.errors import UsageError
from arib.ground.model import ExitCode, MutantStatus, Verdict
from arib.runs.selection import one_name


def add_parsers(sub: Any) -> None:
    """The parsers of admit and run."""
    p = sub.add_parser("admit", help="admit checks: each paired mutant killed or survived")
    add_common(p)
    p.add_argument("check", nargs="*", type=one_name("admit", "check id", "ARIB-CONC-001"),
                   help="check ids")
    p.add_argument("--all", action="store_true", help="admit every check")
    p.add_argument("--reruns", type=int, default=3)
    p.add_argument("--workers", type=int, default=0, help="parallel children (default: cores)")
    p.add_argument("--no-cache", action="store_true",
                   help="ignore the caches (verdicts, generated mutants)")
    add_verify(p)
    p.add_argument("--json", metavar="PATH", help="also write the admissions as one JSON "
                                                  "document (what `merge` combines)")
    add_shard(p, "checks")
    p.set_defaults(func=cmd_admit)

    p = sub.add_parser("run", help="run one check on one lane (replays a violation)")
    add_common(p)
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
    p.add_argument("--json", metavar="PATH", help="write the finding as JSON to PATH (`-`: "
                                                  "to stdout instead of the text report)")
    p.set_defaults(func=cmd_run)


def cmd_admit(args: argparse.Namespace) -> int:
    """`python -m arib admit`: run checks against their paired mutants and print admissions."""
    from arib.admission import AdmissionConfig, admit
    from arib.caches.generation import generation_cache
    from arib.execute import sdk_version
    from arib.ground.services import ServiceManager
    from arib.lanes import mutant_lanes, services_for_lanes
    from arib.runs.shard import admission_durations, make_split
    from arib.warm import warm_all

    params = parse_params(args.param)
    if not args.all and not args.check:
        raise UsageError("admit needs a check id (e.g. `admit ARIB-CONC-001`) or --all")
    at_least(args.reruns, 1, "--reruns", "a mutant is killed only when violated in every "
                                          "rerun, and there must be one")
    at_least(args.workers, 0, "--workers", "0 means one per core")
    shard_writes(args, bool(args.json), "--json", "--json PATH (one PATH per shard)")
    every = select_checks(None if args.all else ",".join(args.check), params)
    split = make_split(args, admission_durations(Path("results"), sdk_version())
                       if args.shard else None)
    checks = every if split is None else tuple(c for c in every if c.id in split.keep(
        {c.id: split.durations.get(c.id) for c in every}))
    started = time.perf_counter()
    lanes = mutant_lanes(checks)
    with generation_cache(args.no_cache) as kept, ServiceManager() as manager:
        admissions = admit(checks, AdmissionConfig(
            reruns=args.reruns, run_seed=args.seed, params=params, quiet=args.quiet,
            workers=args.workers or os.cpu_count() or 1, cache=(cache := verdict_cache(args)),
            services=services_for_lanes(lanes, manager, meanwhile=lambda: warm_all(
                (None, lane) for lane in lanes)),
        ))
    print(cache.describe())
    gated = sum(1 for a in admissions if a.gates_cached)
    print(f"sanity gates: {gated} of {len(admissions)} checks cached (passed before under the "
          f"same inputs, not run), {len(admissions) - gated} run")
    all_in = True
    for a in admissions:
        gates = "; sanity gates cached, not run" if a.gates_cached else ""
        print(f"{a.check_id}: {'ADMITTED' if a.admitted else 'NOT ADMITTED'} "
              f"(clean reference: {', '.join(v.value for v in a.clean)}{gates})")
        for r in a.results:
            cached = " (cached)" if r.cached else ""
            print(f"  {r.status.value:10} {r.kind.value:11} {r.target:24} {r.mutant_id} "
                  f"{r.description[:70]}{cached}")
            if r.status is not MutantStatus.KILLED and r.diff:
                print("    evidence: " + (r.evidence or "-"))
                print("    " + r.diff.replace("\n", "\n    "))
        for reason in a.reasons:
            print(f"  reason: {reason}")
        all_in = all_in and a.admitted
    print(kept.describe())
    print(f"{sum(a.admitted for a in admissions)}/{len(admissions)} checks admitted in "
          f"{time.perf_counter() - started:.1f}s"
          + (f" (shard {split.spec}: {len(checks)} of {len(every)} checks)" if split else ""))
    if args.json:
        from arib.ground.files import atomic_write_text
        from arib.runs.merge import admission_document

        doc = admission_document([c.id for c in every], admissions, split)
        atomic_write_text(Path(args.json), json.dumps(doc, indent=1, ensure_ascii=False) + "\n")
        print(f"wrote {args.json}")
    return int(ExitCode.OK if all_in else ExitCode.VIOLATED)


def _run_selection(args: argparse.Namespace):  # type: ignore[no-untyped-def]
    """The check, lane, mutant and options of ``run``; refuses what does not fit together."""
    from arib.execute import RunOptions
    from arib.ground.files import writable_folder
    from arib.reports.show import find_mutant
    from arib.targets.registry import get_target

    params = parse_params(args.param)
    (check,) = select_checks(args.check, params)
    foreign = sorted(set(params) - {check.id})
    if foreign:
        raise UsageError(
            f"--param for check {foreign[0]!r} given to `run --check {check.id}`: the rule: run "
            f"takes parameters of its own check only; fix: write --param {check.id}.NAME=VALUE "
            f"or drop the parameter"
        )
    lane = get_target(args.lane)
    mutant = find_mutant(args.mutant, (lane.name,)) if args.mutant else None
    if mutant is not None and mutant.target != lane.name:
        raise UsageError(
            f"mutant {args.mutant!r} breaks lane {mutant.target!r}, not the lane {lane.name!r} "
            f"given with --lane: the rule: a mutant runs on its own lane; fix: --lane "
            f"{mutant.target} --mutant {args.mutant}, or pick a mutant of {lane.name!r}"
        )
    opts = RunOptions(params=check.resolve_params(params.get(check.id)), run_seed=args.seed,
                      loop=check_loop(args.loop),
                      trial_seeds=tuple(args.trial_seed) if args.trial_seed else None,
                      schedule=_replayed_schedule(args, check),
                      first_index=_trial_index(args))
    if args.repeat is not None and args.repeat < 1:
        raise UsageError(f"--repeat {args.repeat!r}: the rule: at least 1 run; fix: --repeat 10")
    if args.json and args.json != "-":  # before anything runs, so that no finding is lost
        writable_folder(Path(args.json).resolve().parent, "--json")
    return check, lane, mutant, opts


def _run_in_child(check, lane, opts, mutant):  # type: ignore[no-untyped-def]
    """``run``'s child: NotMeasured when the lane's backend is absent from this installation
    (found here, so that the parent forks at once and imports no backend), else the finding."""
    from arib.execute import run_check
    from arib.lanes import absent_backend

    return absent_backend(lane) or run_check(check, lane, opts, mutant)


def _trial_index(args: argparse.Namespace) -> int:
    """``run --trial-index``: with exactly one ``--trial-seed``, at least 0."""
    index = int(args.trial_index or 0)
    if index and (index < 0 or not args.trial_seed or len(args.trial_seed) != 1):
        raise UsageError(f"--trial-index {index!r}: the rule: a trial index of 0 or more, with "
                         f"exactly one --trial-seed; fix: copy the replay command a finding "
                         f"printed")
    return index


def _replayed_schedule(args: argparse.Namespace, check: Any) -> Any:
    """The parsed ``--schedule`` of ``run``, refused (exit 2, one line) when it does not
    parse or cannot apply: a check that starts no actors, or not exactly one trial seed."""
    from arib.ground.schedule import make, parse_argument

    if args.schedule is None:
        return None
    schedule = parse_argument(args.schedule)
    make(schedule.strategy, schedule.seed, schedule.params)  # its strategy and parameters
    if not check.concurrent:
        raise UsageError(f"--schedule given to `run --check {check.id}`: the rule: only a "
                         f"concurrent check's trial has a schedule, and {check.id} starts no "
                         f"actors; fix: drop --schedule")
    if not args.trial_seed or len(args.trial_seed) != 1:
        raise UsageError("--schedule replays one trial: the rule: give exactly one "
                         "--trial-seed with it; fix: copy the replay command a finding printed")
    return schedule


def cmd_run(args: argparse.Namespace) -> int:
    """Run one check on one lane (a replay), with the servers the lane needs."""
    import dataclasses

    from arib.execute import SCHEDULE_MISMATCH, child_finding
    from arib.ground.child import ChildStatus, run_one
    from arib.ground.model import exit_code
    from arib.ground.services import NotMeasured, ServiceManager
    from arib.lanes import prepare_lanes
    from arib.reports.runtext import judged

    check, lane, mutant, opts = _run_selection(args)
    repeat = args.repeat or 1
    if opts.schedule is not None and opts.schedule.uncontrolled:
        repeat = args.repeat or 3
        print(f"note: this schedule has {opts.schedule.uncontrolled} uncontrolled decision(s) "
              f"of {len(opts.schedule.decisions)} (a thread, a server or a late completion "
              f"decided them): a replay may not reproduce it; running it {repeat} time(s)",
              file=sys.stderr)
    findings = []
    limit_s = check.timeout_s + 15
    with ServiceManager() as manager:
        prepared = prepare_lanes((lane,), manager, backends=False, probe=False)
        opts = dataclasses.replace(opts, services=prepared.services)
        outcomes = []
        for _ in range(repeat if prepared.lanes else 0):
            outcome = run_one(functools.partial(_run_in_child, check, lane, opts, mutant),
                              limit_s)
            outcomes.append(outcome)
            if outcome.status is not ChildStatus.OK or isinstance(outcome.value, NotMeasured):
                break
    last = outcomes[-1] if outcomes else None
    absent = (next(n for n in prepared.not_measured if n.name == lane.name) if last is None
              else last.value if isinstance(last.value, NotMeasured) else None)
    if absent is not None:
        print(f"{lane.name}: {absent.reason}", file=sys.stderr)
        return int(ExitCode.ERROR_OR_NOTHING)
    assert last is not None
    for outcome in outcomes:
        # A child that timed out, crashed or raised is a finding too, with its evidence (the
        # one way admission and the survey read it: arib.execute.child_finding).
        finding = child_finding(check, lane, opts, outcome, limit_s)
        if lane.service is not None:
            finding = dataclasses.replace(finding,
                                          service_version=prepared.versions.get(lane.service))
        if SCHEDULE_MISMATCH in finding.modes:
            print(f"error: {finding.reason}", file=sys.stderr)
            return int(ExitCode.USAGE)
        findings.append(finding)
    _print_run(args, check, findings, mutant)
    if repeat > 1 or opts.schedule is not None:
        print(reproduction(findings), file=sys.stderr)
    return int(exit_code([judged(check, f) for f in findings]))


def _print_run(args: argparse.Namespace, check: Any, findings: Sequence[Any],
               mutant: Any) -> None:
    """``run``'s output: the text report, or with ``--json -`` the JSON on stdout (with
    ``--json PATH``, the JSON to PATH and the text on stdout)."""
    from arib.ground.files import atomic_write_text
    from arib.judging import run_status
    from arib.reports.runtext import render_run, run_json

    status = None if mutant is None else run_status(check, mutant.expected, findings)
    if args.json:
        text = json.dumps(run_json(check, findings, mutant, status), indent=1,
                          ensure_ascii=False)
        if args.json == "-":
            print(text)
            return
        atomic_write_text(Path(args.json), text + "\n")
        print(f"wrote {args.json}", file=sys.stderr)
    print(render_run(check, findings, mutant, status))


def reproduction(findings: Sequence[Any]) -> str:
    """How often the runs of a replay were violated, and how often they repeated the first
    run's operations, outcome and sample exactly."""
    def shape(f: Any) -> tuple[Any, ...]:
        return (f.verdict, f.violating_trials, f.counts, tuple(f.ops), tuple(f.samples),
                tuple(sorted(f.modes.items())))

    violated = sum(1 for f in findings if f.verdict is Verdict.VIOLATED)
    same = sum(1 for f in findings if shape(f) == shape(findings[0]))
    shares = [f.controlled_share for f in findings if f.controlled_share is not None]
    control = (f"; controlled share of decisions {min(shares):.3f}-{max(shares):.3f}"
               if shares else "")
    return (f"replay: violated in {violated} of {len(findings)} run(s); the same operations, "
            f"outcome and sample as the first run in {same} of {len(findings)}{control}")
