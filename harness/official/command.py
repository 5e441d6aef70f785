"""``python -m arib official``: the active family's own conformance suite beside our checks
(LangGraph's ``langgraph-checkpoint-conformance``: ``python -m arib --family langgraph
official``).

Writes ``<out>/official/<family>-<version>-side-by-side.{json,md}`` (the reference run on
every checkpointer lane beside the newest bench result of the version in ``<out>``) and, with
``--mutants``, ``<out>/official/<family>-<version>-mutants.{json,md}`` (both suites on the same
generated mutants). Exit 0 when everything was measured and the suite passed on every clean
lane, 1 when it failed a test on a clean lane, 4 when a lane could not be judged or nothing
was measured, 2 for misuse.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from arib.ground.errors import UnknownNameError, UsageError
from arib.ground.model import ExitCode
from arib.targets.base import TargetSpec


def suite_lanes(text: str | None) -> tuple[TargetSpec, ...]:
    """The lanes ``--lanes`` names, each one the active family's suite tests (all by
    default)."""
    from arib.official.suite import active_suite

    _, suite = active_suite()
    lanes: tuple[TargetSpec, ...] = suite.lanes()
    if not text:
        return lanes
    known = {lane.name: lane for lane in lanes}
    chosen = []
    for name in (part.strip() for part in text.split(",") if part.strip()):
        if name not in known:
            raise UnknownNameError(
                f"lane {name!r} is not a {suite.lane_kind}: {suite.name} tests only those; "
                f"use one of {', '.join(known)}")
        chosen.append(known[name])
    return tuple(chosen)


def _write(folder: Path, stem: str, document: dict[str, Any], markdown: str) -> list[Path]:
    """Write the table's JSON and Markdown to ``folder``, or beside it, marked partial, when
    the table there measured more (more lanes or checks): never over it."""
    from arib.ground.files import atomic_write_text
    from arib.runs.partial_write import beside, document_shrink, read_document

    lacks = document_shrink(read_document(folder / f"{stem}.json"), document)
    if lacks is not None:
        where = beside(folder)
        document = {**document, "partial": {"of": str(folder / f"{stem}.json"),
                                            "reason": lacks}}
        print(f"partial run ({lacks}): written beside {folder / stem}.json, to {where}, "
              f"marked partial; {folder / stem}.json is unchanged (run every lane to "
              f"replace it)")
        folder = where
    paths = [folder / f"{stem}.json", folder / f"{stem}.md"]
    atomic_write_text(paths[0], json.dumps(document, indent=1, ensure_ascii=False) + "\n")
    atomic_write_text(paths[1], markdown)
    return paths


def add_parsers(sub: Any) -> None:
    """`official`: added when a family has an official suite (its record's ``official``)."""
    from arib.cli.options import LANES, add_common

    p = sub.add_parser("official", help="a family's own conformance suite beside our checks "
                                        "(its reference run per lane; --mutants: both on the "
                                        "survey's generated mutants; LangGraph's "
                                        "checkpointers)")
    add_common(p)
    p.add_argument("--lanes", type=LANES, help="comma-separated lanes the suite tests "
                                                "(default: all)")
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
    p.set_defaults(func=cmd_official)


def cmd_official(args: argparse.Namespace) -> int:
    """The reference run and its table; with ``--mutants``, the comparison on mutants."""
    from arib.execute import fast_tmpdir, sdk_version
    from arib.ground.files import writable_folder
    from arib.ground.official import SuiteStatus
    from arib.ground.services import ServiceManager
    from arib.lanes import prepare_lanes
    from arib.official.side import SideBySide, our_sides
    from arib.official.suite import active_suite

    family, suite = active_suite(installed=True)
    if args.param and not args.mutants:
        raise UsageError(f"--param {args.param[0]!r} sets a parameter of our checks in the "
                         f"mutant survey, which runs only with --mutants; add --mutants or "
                         f"drop --param")
    lanes = suite_lanes(args.lanes)
    out = Path(args.out)
    folder = writable_folder(out / "official")
    version = sdk_version()
    stem = family.stem(version)
    workers = args.workers or os.cpu_count() or 1
    started = time.perf_counter()
    with ServiceManager() as manager:
        prepared = prepare_lanes(lanes, manager)
        asked = {lane.name for lane in lanes}
        # With no --lanes, the family's savers that are no lane here (e.g. Redis) are named too.
        known = {lane.name for lane in family.resolve("lanes")}
        missing = {m.name: m.reason for m in prepared.not_measured
                   if m.name in asked or (not args.lanes and m.name not in known)}
        runs = suite.reference_runs(prepared.lanes, prepared.services, version=version,
                              workers=workers, tmpdir=fast_tmpdir())
        reference = family.resolve("reference").name
        table = SideBySide(family.name, suite, version, suite.version(), runs,
                           our_sides([r.lane for r in runs], out, version, reference), missing)
        print(table.markdown())
        for path in _write(folder, f"{stem}-side-by-side", table.to_json(), table.markdown()):
            print(f"wrote {path}")
        code = _code(runs, missing)
        if args.mutants:
            baseline = {r.lane: r.failing for r in runs if r.status is not SuiteStatus.ERROR}
            judged = [lane for lane in prepared.lanes if lane.name in baseline]
            # 0 < 1 (violated) < 4 (error or nothing measured): the worse of the two.
            code = max(code, _mutants(args, judged, baseline, prepared.services, missing,
                                      folder, stem, started))
    return code


def _code(runs: Any, missing: dict[str, str]) -> int:
    from arib.ground.official import SuiteStatus

    for lane, why in missing.items():
        print(f"{lane}: {why}")
    errors = [r for r in runs if r.status is SuiteStatus.ERROR]
    for run in errors:
        print(f"error: the official suite could not run on {run.lane}: {run.error}",
              file=sys.stderr)
    if errors or not runs:
        if not runs:
            print("error: the official suite ran on no lane: nothing was measured",
                  file=sys.stderr)
        return int(ExitCode.ERROR_OR_NOTHING)
    failed = any(r.status is SuiteStatus.FAILED for r in runs)
    return int(ExitCode.VIOLATED if failed else ExitCode.OK)


def _mutants(args: argparse.Namespace, lanes: list[TargetSpec],
             baseline: dict[str, frozenset[str]], services: dict[str, str],
             missing: dict[str, str], folder: Path, stem: str, started: float) -> int:
    """Survey ``lanes`` with our checks and the suite; write and print the comparison."""
    from arib.caches.verdicts import DEFAULT_DIR, AdmissionCache, cache_key, source_hash
    from arib.cli.options import parse_params, select_checks
    from arib.execute import sdk_version
    from arib.judging import KILL_RERUNS
    from arib.official.mutants import (
        MutantComparison,
        lane_sides,
        survey_with_official,
    )
    from arib.official.suite import active_suite
    from arib.survey.survivors import load_survivors
    from arib.targets.registry import family_lanes

    family, suite = active_suite()
    params = parse_params(args.param)
    ours = select_checks(None, params)
    # The official check's verdicts depend on the suite's version, each lane's clean failures
    # and this subpackage's code, which the survey's cache key does not name: its folder does.
    tag = cache_key(suite=suite.version(), baseline={k: sorted(v) for k, v in baseline.items()},
                    code=source_hash(*suite.code))
    cache = AdmissionCache(None if args.no_cache else DEFAULT_DIR / f"official-{tag[:16]}")
    settings = {"run_seed": args.seed, "reruns": args.reruns,
                "kill_reruns": max(args.reruns, KILL_RERUNS), "timeout_s": args.timeout,
                "workers": args.workers or os.cpu_count() or 1, "params": params}
    surveys = survey_with_official(
        lanes, ours, baseline, reruns=args.reruns, workers=settings["workers"],
        timeout_s=args.timeout, run_seed=args.seed, cache=cache, quiet=args.quiet, params=params,
        services=services,
        survivors=load_survivors(sdk_version(), [lane.name for lane in family_lanes()]))
    comparison = MutantComparison(family.name, suite, sdk_version(), suite.version(),
                                  tuple(c.id for c in ours),
                                  tuple(lane_sides(s) for s in surveys), settings, missing,
                                  time.perf_counter() - started)
    text = comparison.markdown(args.examples)
    print(text)
    for path in _write(folder, f"{stem}-mutants", comparison.to_json(), text):
        print(f"wrote {path}")
    errors = [lane for lane in comparison.lanes if lane.error]
    for lane in errors:
        print(f"error: lane {lane.lane} could not be surveyed: {lane.error}", file=sys.stderr)
    if errors or not comparison.totals()["judged"]:
        if not comparison.totals()["judged"]:
            print("error: no mutant was judged: nothing was compared", file=sys.stderr)
        return int(ExitCode.ERROR_OR_NOTHING)
    return int(ExitCode.OK)
