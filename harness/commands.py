"""The command handlers of ``python -m arib``: one ``cmd_*`` per subcommand, and the
checks of their arguments (arib.cli builds the parser and runs them)."""
from __future__ import annotations

import argparse
import functools
import json
import os
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from arib.ground.errors import ParameterError, UsageError
from arib.ground.model import ExitCode, MutantStatus, Verdict

KNOWN_LOOPS = ("asyncio", "uvloop")


def parse_params(values: Sequence[str]) -> dict[str, dict[str, int]]:
    """``CHECK.NAME=INT`` strings into {check id: {name: value}}; malformed ones are errors."""
    out: dict[str, dict[str, int]] = {}
    for text in values:
        head, sep, raw = text.partition("=")
        check_id, dot, name = head.rpartition(".")
        if not sep or not dot or not check_id or not name:
            raise ParameterError(
                f"malformed --param {text!r}: the form is CHECK.NAME=INTEGER, e.g. "
                f"--param ARIB-CONC-001.writers=8"
            )
        try:
            value = int(raw)
        except ValueError:
            raise ParameterError(
                f"--param {text!r} has a non-integer value {raw!r}; parameters are integers"
            ) from None
        out.setdefault(check_id, {})[name] = value
    return out


def select_checks(ids: str | None, params: dict[str, dict[str, int]]):  # type: ignore[no-untyped-def]
    """The checks ``--checks`` names (all by default), after validating ``--param`` values;
    only the checks named (and those ``--param`` names) are imported."""
    from arib.checks.registry import get_check, load_checks

    chosen = load_checks() if not ids else tuple(get_check(i.strip()) for i in ids.split(","))
    for check_id, values in params.items():
        get_check(check_id).resolve_params(values)
    return chosen


def _expect_sdk(requested: str | None) -> None:
    from arib.execute import sdk_version
    from arib.ground.family import active_family
    from arib.noxsupport import bench_command, unlocked_version_error

    if requested is None:
        return
    family = active_family()
    if family.lock_dir is not None:
        unlocked = unlocked_version_error(requested, family.lock_dir, family.name,
                                          family.components)
        if unlocked is not None:
            raise UsageError(unlocked)
    installed = sdk_version()
    if installed != requested:
        raise UsageError(
            f"SDK version {requested!r} requested but this environment has {family.name} "
            f"{installed}; each version runs in its own environment: "
            f"`{bench_command(requested, family.name)}`"
        )


def _check_loop(loop: str) -> str:
    if loop not in KNOWN_LOOPS:
        raise UsageError(f"unknown event loop {loop!r}: use one of {', '.join(KNOWN_LOOPS)}")
    return loop


def _at_least(value: int, least: int, option: str, why: str) -> int:
    """``value`` when it is at least ``least``; else UsageError naming it, the rule and why."""
    if value < least:
        raise UsageError(f"{option} {value!r} is below {least}: {why}; pass {option} {least} "
                         f"or more")
    return value


def shard_writes(args: argparse.Namespace, writes: bool, option: str, fix: str) -> None:
    """Refuse a malformed --shard, and a shard that would write nothing to merge."""
    from arib.shard import ShardSpec

    if args.shard is None:
        return
    ShardSpec.parse(args.shard)
    if not writes:
        raise UsageError(f"--shard {args.shard!r} without {option}: the rule: `merge` reads "
                         f"what each shard writes; fix: add {fix}")


def verdict_cache(args: argparse.Namespace) -> Any:
    """The verdict cache the options ask for: none (--no-cache), or the shared store with
    its sampled re-judging (--verify-sample PCT, default 3; --verify-cache: every hit)."""
    from arib.cache import AdmissionCache

    if args.no_cache:
        return AdmissionCache(None)
    pct = 100.0 if args.verify_cache else args.verify_sample
    if not 0.0 <= pct <= 100.0:
        raise UsageError(f"--verify-sample {pct!r} is not a share of hits: the rule: a percent "
                         f"from 0 to 100; fix: e.g. --verify-sample 3, or --verify-cache")
    return AdmissionCache(verify=pct / 100.0, seed=args.seed)


def cache_basis(document: Mapping[str, Any]) -> str:
    """One line: how many of the admission results a bench's gate rests on came from the
    verdict cache."""
    results = [r for a in document.get("admission", ()) for r in a.get("results", ())]
    cached = sum(1 for r in results if r.get("cached"))
    return (f"the gate rests on {len(document.get('findings', ()))} finding(s) measured now "
            f"and on admissions of {len(results)} pair result(s), {cached} of them from the "
            f"verdict cache")


def cmd_bench(args: argparse.Namespace) -> int:
    """`python -m arib bench`: admit, measure, write results and apply the regression gate."""
    from arib.bench import BenchConfig, default_workers, run_bench
    from arib.execute import sdk_version
    from arib.generation_cache import generation_cache
    from arib.ground.services import ServiceManager
    from arib.results import writable_folder
    from arib.run_coverage import known_selection
    from arib.shard import make_split, run_durations
    from arib.summary import append_job_summary
    from arib.targets.registry import parse_lanes

    _expect_sdk(args.sdk)
    _at_least(args.reruns, 1, "--reruns", "admission needs every paired mutant killed in at "
                                          "least one rerun")
    workers = default_workers() if args.workers is None else args.workers
    _at_least(workers, 1, "--workers", "cells are measured by at least one worker")
    params = parse_params(args.param)
    checks = select_checks(args.checks, params)
    lanes = parse_lanes(args.lanes)
    loop = _check_loop(args.loop)
    all_lanes, all_checks = known_selection()
    subset = not (all_lanes <= {t.name for t in lanes} and all_checks <= {c.id for c in checks})
    if args.accept and subset and not args.partial:
        raise UsageError("--accept with a subset of lanes or checks would accept a partial "
                         "run as the whole baseline; add --partial to accept only the cells "
                         "this run measures, or drop --lanes/--checks")
    out = writable_folder(Path(args.out))  # before anything is measured
    split = make_split(args, run_durations(Path("results"), sdk_version(), "bench")
                       if args.shard else None)  # the newest run is read only when sharded
    if split is not None and args.accept:
        raise UsageError(f"--accept with --shard {args.shard!r} would accept one shard as a "
                         f"baseline: the rule: a baseline is a whole run; fix: drop --accept, "
                         f"`merge` the shards, then `python -m arib accept MERGED.json`")
    cache = verdict_cache(args)
    with generation_cache(args.no_cache) as kept, ServiceManager() as manager:
        outcome = run_bench(BenchConfig(
            lanes=lanes, checks=checks, run_seed=args.seed, reruns=args.reruns,
            workers=workers, params=params, loop=loop, out_dir=out, cache=cache,
            quiet=args.quiet, manager=manager, shard=split,
        ))
    print(kept.describe())
    print(cache.describe())
    print(f"wrote {outcome.json_path} and {outcome.report_path}")
    written = (outcome.json_path, outcome.report_path)
    tally: dict[str, int] = {}
    for f in outcome.document["findings"]:
        tally[f["verdict"]] = tally.get(f["verdict"], 0) + 1
    print(f"{len(outcome.document['findings'])} findings: "
          + ", ".join(f"{v} {k}" for k, v in sorted(tally.items()))
          + f"; {outcome.document['duration_s']:.1f}s")
    for missing in outcome.document["not_measured"]:  # said here too, not only in the report
        print(f"{missing['name']}: {missing['reason']}")
    if split is not None:
        print(f"shard {split.spec}: the regression gate applies to the merged run "
              f"(`python -m arib merge`, then `python -m arib compare` or `accept`)")
        return int(outcome.code)
    if args.accept:
        from arib.baseline import accept

        accepted = accept(outcome.json_path, out, args.partial)
        print(f"accepted as the baseline: {accepted.describe()}")
        return append_job_summary(outcome.document, written, out, int(outcome.code),
                                  accepted.describe())
    return append_job_summary(outcome.document, written, out,
                              _regression_gate(outcome.document, out, outcome.code))


def _regression_gate(document: dict, out: Path, code: ExitCode) -> int:
    """Compare a run's measured cells with its version's baseline; exit 3 naming changes."""
    from arib.baseline import regressions
    from arib.compare import render_gate
    from arib.noxsupport import harness_command

    sdk = document["sdk"]["version"]
    print(f"regression gate: {cache_basis(document)}")
    result = regressions(document, out)
    if result is None:
        print(f"no accepted baseline for {document['sdk']['name']} {sdk} yet; accept this "
              f"run with `{harness_command(f'accept --sdk {sdk}', document['sdk']['name'])}`")
        return int(code)
    info, failures = render_gate(result, sdk)
    print("\n".join(info))
    if not failures:
        return int(code)
    print("\n".join(failures), file=sys.stderr)
    if code is ExitCode.ERROR_OR_NOTHING:
        return int(code)
    return int(ExitCode.REGRESSION)


def cmd_accept(args: argparse.Namespace) -> int:
    """`python -m arib accept`: make result files (or a version's latest run) the baseline."""
    from arib.baseline import accept, latest_run, refuse_partial

    out = Path(args.out)
    versions = [v.strip() for v in args.sdk.split(",") if v.strip()] if args.sdk else []
    paths = [Path(p) for p in args.result] + [latest_run(out, v) for v in versions]
    if not paths:
        raise UsageError("accept needs result files or --sdk VERSION[,VERSION]")
    for path in paths:  # every run is checked before any baseline changes
        refuse_partial(path, args.partial)
    for path in paths:
        print(f"accepted {path} as {accept(path, out, args.partial).describe()}")
    return 0


def cmd_compare(args: argparse.Namespace) -> int:
    """`python -m arib compare`: write the cross-version report of whole runs."""
    from arib.baseline import newest_whole_runs
    from arib.compare import load_runs, write_cross_version
    from arib.ground.family import DEFAULT as DEFAULT_FAMILY
    from arib.ground.family import active_family
    from arib.noxsupport import bench_command

    out = Path(args.out)
    if args.result:
        docs = load_runs([Path(p) for p in args.result])
    else:  # the newest whole run per version when a folder is compared
        paths, left_out = newest_whole_runs(out)
        for run in left_out:
            print(f"left out {run.path}: a partial run of {active_family().name} {run.sdk}")
        docs = load_runs(paths)
    if not docs:
        raise UsageError(f"no whole run to compare in {str(out)!r}: run "
                         f"`{bench_command(family=active_family().name)}` (a "
                         f"partial run, with --lanes or --checks, is never compared)")
    family = active_family().name  # each family its own report: never another's overwritten
    name = "cross-version.md" if family == DEFAULT_FAMILY else f"cross-version-{family}.md"
    print("\n".join(write_cross_version(docs, Path(args.report or out / name))))
    return 0


def cmd_admit(args: argparse.Namespace) -> int:
    """`python -m arib admit`: run checks against their paired mutants and print admissions."""
    from arib.admission import AdmissionConfig, admit
    from arib.execute import sdk_version
    from arib.generation_cache import generation_cache
    from arib.ground.services import ServiceManager
    from arib.lanes import services_for_checks
    from arib.shard import make_split, run_durations

    params = parse_params(args.param)
    if not args.all and not args.check:
        raise UsageError("admit needs a check id (e.g. `admit ARIB-CONC-001`) or --all")
    _at_least(args.reruns, 1, "--reruns", "a mutant is killed only when violated in every "
                                          "rerun, and there must be one")
    _at_least(args.workers, 0, "--workers", "0 means one per core")
    shard_writes(args, bool(args.json), "--json", "--json PATH (one PATH per shard)")
    every = select_checks(None if args.all else ",".join(args.check), params)
    split = make_split(args, run_durations(Path("results"), sdk_version(), "admit")
                       if args.shard else None)
    checks = every if split is None else tuple(c for c in every if c.id in split.keep(
        {c.id: split.durations.get(c.id) for c in every}))
    started = time.perf_counter()
    with generation_cache(args.no_cache) as kept, ServiceManager() as manager:
        admissions = admit(checks, AdmissionConfig(
            reruns=args.reruns, run_seed=args.seed, params=params, quiet=args.quiet,
            workers=args.workers or os.cpu_count() or 1, cache=(cache := verdict_cache(args)),
            services=services_for_checks(checks, manager),
        ))
    print(cache.describe())
    all_in = True
    for a in admissions:
        print(f"{a.check_id}: {'ADMITTED' if a.admitted else 'NOT ADMITTED'} "
              f"(clean reference: {', '.join(v.value for v in a.clean)})")
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
        from arib.merge import admission_document
        from arib.results import atomic_write_text

        doc = admission_document([c.id for c in every], admissions, split)
        atomic_write_text(Path(args.json), json.dumps(doc, indent=1, ensure_ascii=False) + "\n")
        print(f"wrote {args.json}")
    return int(ExitCode.OK if all_in else ExitCode.VIOLATED)


def _run_selection(args: argparse.Namespace):  # type: ignore[no-untyped-def]
    """The check, lane, mutant and options of ``run``; refuses what does not fit together."""
    from arib.execute import RunOptions
    from arib.show import find_mutant
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
                      loop=_check_loop(args.loop),
                      trial_seeds=tuple(args.trial_seed) if args.trial_seed else None,
                      schedule=_replayed_schedule(args, check),
                      first_index=_trial_index(args))
    if args.repeat is not None and args.repeat < 1:
        raise UsageError(f"--repeat {args.repeat!r}: the rule: at least 1 run; fix: --repeat 10")
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

    from arib.execute import SCHEDULE_MISMATCH
    from arib.ground.child import ChildStatus, run_one
    from arib.ground.model import exit_code
    from arib.ground.services import NotMeasured, ServiceManager
    from arib.lanes import prepare_lanes

    check, lane, mutant, opts = _run_selection(args)
    repeat = args.repeat or 1
    if opts.schedule is not None and opts.schedule.uncontrolled:
        repeat = args.repeat or 3
        print(f"note: this schedule has {opts.schedule.uncontrolled} uncontrolled decision(s) "
              f"of {len(opts.schedule.decisions)} (a thread, a server or a late completion "
              f"decided them): a replay may not reproduce it; running it {repeat} time(s)",
              file=sys.stderr)
    findings = []
    with ServiceManager() as manager:
        prepared = prepare_lanes((lane,), manager, backends=False, probe=False)
        opts = dataclasses.replace(opts, services=prepared.services)
        outcomes = []
        for _ in range(repeat if prepared.lanes else 0):
            outcome = run_one(functools.partial(_run_in_child, check, lane, opts, mutant),
                              check.timeout_s + 15)
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
    if last.status is not ChildStatus.OK:
        print(f"error: the run's child {last.status.value}: {last.detail}", file=sys.stderr)
        return int(ExitCode.ERROR_OR_NOTHING)
    for outcome in outcomes:
        finding = outcome.value
        if lane.service is not None:
            finding = dataclasses.replace(finding,
                                          service_version=prepared.versions.get(lane.service))
        if SCHEDULE_MISMATCH in finding.modes:
            print(f"error: {finding.reason}", file=sys.stderr)
            return int(ExitCode.USAGE)
        findings.append(finding)
    print(json.dumps(findings[0].to_json(), indent=1, ensure_ascii=False))
    if repeat > 1 or opts.schedule is not None:
        print(reproduction(findings), file=sys.stderr)
    return int(exit_code(findings))


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


def cmd_merge(args: argparse.Namespace) -> int:
    """`python -m arib merge`: combine shard outputs into what one unsharded run writes."""
    from arib.merge import merge_outputs
    from arib.results import writable_folder

    out = writable_folder(Path(args.out))
    written, lines, code = merge_outputs([Path(p) for p in args.shards], out)
    for path in written:
        print(f"wrote {path}")
    print("\n".join(lines), file=sys.stderr if code else sys.stdout)
    return code


def cmd_html(args: argparse.Namespace) -> int:
    """The HTML kill matrix from a mutation-report JSON that ``survey --write`` wrote."""
    from arib.mutation_html import write_html_from_file

    print(f"wrote {write_html_from_file(Path(args.report), Path(args.out))}")
    return 0


def cmd_scaffold(args: argparse.Namespace) -> int:
    """`python -m arib scaffold`: write a new check and its paired mutant from templates."""
    from arib.scaffold import scaffold

    check_path, mutant_path = scaffold(args.check_id, args.lane, Path(args.root))
    print(f"wrote {check_path} and {mutant_path}")
    print(f"next: fill in the TODOs, then `python -m arib admit {args.check_id}` until "
          f"every paired mutant is killed")
    return 0


def cmd_docs(args: argparse.Namespace) -> int:
    """`python -m arib docs`: regenerate the generated tables of the README pages."""
    from arib.docs import update_readme

    changed = update_readme(Path(args.readme))
    print(f"{args.readme}: {'generated tables regenerated' if changed else 'up to date'}")
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
    from arib.report import render_markdown
    from arib.results import atomic_write_text, read_results

    path = Path(args.result)
    document = read_results(path)
    out = Path(args.out) if args.out else path.with_suffix(".md")
    atomic_write_text(out, render_markdown(document))
    print(f"wrote {out}")
    return 0


def cmd_show(args: argparse.Namespace) -> int:
    """`python -m arib show ID`: one mutant's diff, lane, operator, status and killers."""
    from arib.show import default_survey_dir, describe, find_mutant
    from arib.targets.registry import family_lanes

    lanes = [args.lane] if args.lane else [t.name for t in family_lanes()]
    mutant = find_mutant(args.mutant, lanes)
    print(describe(mutant, Path(args.survey) if args.survey else default_survey_dir()))
    return 0

