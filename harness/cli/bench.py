"""`bench`, `accept` and `compare`: measure a version, accept its baseline, compare versions."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from arib.cli.options import (
    CHECKS,
    LANES,
    add_common,
    add_shard,
    add_verify,
    at_least,
    cache_basis,
    check_loop,
    expect_sdk,
    parse_params,
    select_checks,
    verdict_cache,
)
from arib.ground.errors import UsageError
from arib.ground.model import ExitCode

if TYPE_CHECKING:
    from arib.runs.bench import BenchOutcome


def add_parsers(sub: Any) -> None:
    """The parsers of bench, accept and compare."""
    p = sub.add_parser("bench", help="admit checks, run them on every lane, write results/")
    add_common(p)
    p.add_argument("--sdk", help="expected version of the family's distribution here (the "
                                 "default family's: the SDK's version)")
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
    add_verify(p)
    p.add_argument("--accept", action="store_true",
                   help="accept this run as the version's baseline (regression gate)")
    p.add_argument("--partial", action="store_true",
                   help="with --accept and --lanes/--checks: accept only the measured cells")
    add_shard(p, "(check, lane) cells")
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


def cmd_bench(args: argparse.Namespace) -> int:
    """`python -m arib bench`: admit, measure, write results and apply the regression gate."""
    from arib.caches.generation import generation_cache
    from arib.execute import sdk_version
    from arib.ground.files import writable_folder
    from arib.ground.services import ServiceManager
    from arib.reports.summary import append_job_summary
    from arib.runs.bench import BenchConfig, default_workers, run_bench
    from arib.runs.coverage import known_selection
    from arib.runs.shard import cell_durations, make_split
    from arib.targets.registry import parse_lanes

    expect_sdk(args.sdk)
    at_least(args.reruns, 1, "--reruns", "admission needs every paired mutant killed in at "
                                          "least one rerun")
    workers = default_workers() if args.workers is None else args.workers
    at_least(workers, 1, "--workers", "cells are measured by at least one worker")
    params = parse_params(args.param)
    checks = select_checks(args.checks, params)
    lanes = parse_lanes(args.lanes)
    loop = check_loop(args.loop)
    all_lanes, all_checks = known_selection()
    subset = not (all_lanes <= {t.name for t in lanes} and all_checks <= {c.id for c in checks})
    if args.accept and subset and not args.partial:
        raise UsageError("--accept with a subset of lanes or checks would accept a partial "
                         "run as the whole baseline; add --partial to accept only the cells "
                         "this run measures, or drop --lanes/--checks")
    out = writable_folder(Path(args.out))  # before anything is measured
    split = make_split(args, cell_durations(Path("results"), sdk_version())
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
        from arib.runs.baseline import accept

        accepted = accept(outcome.json_path, out, args.partial)
        print(f"accepted as the baseline: {accepted.describe()}")
        return append_job_summary(outcome.document, written, int(outcome.code), None,
                                  accepted.describe())
    return append_job_summary(outcome.document, written, _regression_gate(outcome),
                              outcome.gate)


def _regression_gate(outcome: BenchOutcome) -> int:
    """Say how a run's measured cells compare with its version's baseline (judged by the run,
    ``outcome.gate``); exit 3 naming changes."""
    from arib.ground.invocations import harness_command
    from arib.runs.compare import render_gate

    document, code, result = outcome.document, outcome.code, outcome.gate
    sdk = document["sdk"]["version"]
    print(f"regression gate: {cache_basis(document)}")
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
    from arib.runs.baseline import accept, latest_run, refuse_partial

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
    from arib.ground.family import active_family
    from arib.ground.invocations import bench_command, is_default
    from arib.runs.baseline import newest_whole_runs
    from arib.runs.compare import load_runs, write_cross_version

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
    name = "cross-version.md" if is_default(family) else f"cross-version-{family}.md"
    print("\n".join(write_cross_version(docs, Path(args.report or out / name))))
    return 0
