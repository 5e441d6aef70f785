"""``python -m arib parity {check,update}``: the parity gate's command line.

``add_parser(subparsers)`` adds the ``parity`` command, with its ``check`` and ``update``
subcommands, to the subparsers of ``python -m arib`` (``arib.cli.main.build_parser``), like
every other command; ``run_command(args)`` is what they run. Exit codes are
``arib.ground.model.ExitCode``: 0 passed, 1 mismatches, 2 usage, 4 a step failed or nothing
ran.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from arib.runs.selection import name_list


def _configure(parser: argparse.ArgumentParser, *, producer: bool) -> None:
    parser.add_argument(
        "--lanes",
        type=name_list("--lanes", "lane", "sqlite-file,redis-from-url@uvloop"),
        help="comma-separated targets or target@loop (default: every local lane); the "
        "reference lane reference@asyncio is always added",
    )
    parser.add_argument("--loops", type=name_list("--loops", "event loop", "asyncio,uvloop"),
                        help="comma-separated event loops (default: asyncio,uvloop)")
    parser.add_argument("--budget-ms", type=float, help="elapsed and p95 budget (default 60000)")
    parser.add_argument(
        "--p95-min-samples", type=int, help="history samples before p95 is enforced (default 8)"
    )
    parser.add_argument("--seed", type=int, default=0, help="run seed of the generated cases")
    parser.add_argument("--cases", type=int, help="generated cases per lane (default 40)")
    parser.add_argument("--case-seed", type=int, help="run exactly the case with this seed")
    parser.add_argument(
        "--reuse",
        action="store_true",
        help="reuse retained lane reports bound to this commit, lock, SDK and lane",
    )
    parser.add_argument("--results", help="results folder (default: the project's results/)")
    parser.add_argument(
        "--lane-timeout-s", type=float, help="hard timeout of one lane's child (default 300)"
    )
    parser.add_argument(
        "--workers",
        type=int,
        help="lanes run at once, each in its own process and temporary root (default 2 on two "
        "or more cores; 1 runs them one after the other)",
    )
    parser.add_argument(
        "--out",
        help="also write the report JSON to this file"
        + ("" if producer else " (never inside the results folder)"),
    )
    parser.add_argument("--json", action="store_true", help="print the report JSON")
    if not producer:
        parser.add_argument(
            "--mutant",
            help="install a parity mutant of the family (see arib.mutants.registry) first",
        )
    parser.set_defaults(func=run_command, parity_command="update" if producer else "check")


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add ``parity`` (with ``check`` and ``update``) to ``python -m arib``'s subparsers."""
    parser = subparsers.add_parser(
        "parity", help="parity gate: reference workflows on every lane, same replay digests"
    )
    sub = parser.add_subparsers(dest="parity_command", required=True)
    _configure(
        sub.add_parser("check", help="run the gate read-only (writes only a temporary folder)"),
        producer=False,
    )
    _configure(
        sub.add_parser("update", help="run the gate and retain results/parity/ and the history"),
        producer=True,
    )
    return parser  # type: ignore[no-any-return]


def options_from_args(
    args: argparse.Namespace,
    extra_targets: Sequence[Any] = (),
    services: Mapping[str, str] | None = None,
    unavailable: Sequence[tuple[str, str]] = (),
) -> Any:
    """GateOptions from parsed arguments (bad values raise UsageError)."""
    from arib.ground.services import NotMeasured
    from arib.parity.lanes import parse_loops
    from arib.parity.options import (
        DEFAULT_BUDGET_MS,
        DEFAULT_CASES,
        DEFAULT_P95_MIN_SAMPLES,
        LANE_TIMEOUT_S,
        RESULTS_DIR,
        GateOptions,
        active_kind,
        default_workers,
    )

    kind = active_kind()
    cases = DEFAULT_CASES if args.cases is None else args.cases
    if args.case_seed is not None and args.cases is None:
        cases = 1
    if not kind.generates_cases and args.cases is None and args.case_seed is None:
        cases = 0
    opts = GateOptions(
        lanes=args.lanes,
        loops=parse_loops(args.loops),
        budget_ms=DEFAULT_BUDGET_MS if args.budget_ms is None else args.budget_ms,
        p95_min_samples=(
            DEFAULT_P95_MIN_SAMPLES if args.p95_min_samples is None else args.p95_min_samples
        ),
        seed=args.seed,
        cases=cases,
        case_seed=args.case_seed,
        reuse=args.reuse,
        mutant=getattr(args, "mutant", None),
        extra_targets=tuple(extra_targets),
        services=dict(services or {}),
        results_dir=Path(args.results) if args.results else RESULTS_DIR,
        lane_timeout_s=LANE_TIMEOUT_S if args.lane_timeout_s is None else args.lane_timeout_s,
        workers=default_workers() if args.workers is None else args.workers,
        unavailable=tuple(NotMeasured(lane, reason) for lane, reason in unavailable),
        kind=kind,
    )
    opts.validate()
    if opts.mutant:
        from arib.mutants.registry import get_parity_mutant

        get_parity_mutant(opts.mutant)
    return opts


def validate_args(
    args: argparse.Namespace, service_targets: Sequence[Any] = ()
) -> tuple[Any, tuple[Any, ...]]:
    """Check every argument before anything starts; returns the options and the service lanes
    the selection names (the only servers worth starting).

    Raises UsageError (exit 2) naming the bad value: an option out of range, an unknown lane,
    loop or mutant, an ``--out`` inside the results folder, or an unusable ``--results``.
    """
    from arib.parity.lanes import named_targets
    from arib.parity.options import out_inside_results

    opts = options_from_args(args, service_targets, {})
    if args.out:
        out_inside_results(Path(args.out), opts.results_dir)
    opts.selection()  # unknown names raise here
    named = named_targets(opts.lanes)
    return opts, tuple(t for t in service_targets if named is None or t.name in named)


def summary_lines(report: Mapping[str, Any], where: Path) -> list[str]:
    """A short human summary of a gate report."""
    lines = [
        f"parity {report['mode']}: {'PASSED' if report['ok'] else 'FAILED'} "
        f"(exit {report['exit_code']}) {report['sdk']['name']} {report['sdk']['version']}, "
        f"{report['workflow_count']} workflows in {report['domain_count']} domains, "
        f"{report['generative']['case_count']} generated cases, "
        f"{len(report['lanes'])} lanes, {report['elapsed_ms'] / 1000:.1f} s "
        f"(budget {report['budget_ms'] / 1000:.0f} s)",
    ]
    for lane in report["lanes"]:
        state = lane["status"] + (" (reused)" if lane["reused"] else "")
        abstained = lane.get("workflows_abstained") or 0
        cpu = lane.get("cpu_ms")
        lines.append(
            f"  {lane['name']:36} {state:8} workflows {lane['workflows_ok']}/"
            f"{lane['workflows_total']}"
            + (f" ({abstained} abstained)" if abstained else "")
            + f"  cases {lane['cases_ok']}/{lane['cases_total']}  "
            f"{lane['elapsed_ms'] / 1000:.2f} s"
            + ("" if cpu is None else f" (cpu {cpu / 1000:.2f} s)")
        )
    for missing in report["not_measured"]:
        reason = missing["reason"].removeprefix("not measured: ")
        lines.append(f"  {missing['lane']:36} not measured: {reason}")
    p95 = report["history_p95_ms"]
    lines.append(
        f"history: {report['history_samples']} samples, p95 "
        f"{'n/a' if p95 is None else f'{p95:.0f} ms'}, "
        f"{'enforced' if report['history_p95_enforced'] else 'not enforced'} "
        f"(min {report['p95_min_samples']})"
    )
    for reason in report["fail_reasons"]:
        lines.append(f"FAIL {reason}")
    for mismatch in report["workflow_mismatches"][:3]:
        for first in mismatch["first_differences"][:1]:
            if first["diff"]:
                lines.append(f"first differing read of {mismatch['workflow']!r}:")
                lines.extend("    " + x for x in first["diff"].splitlines()[:40])
    kept = "" if report["mode"] == "update" else " (removed at exit; --out FILE keeps a copy)"
    lines.append(f"report: {where / 'report.json'}{kept}")
    return lines


def handle(
    args: argparse.Namespace,
    extra_targets: Sequence[Any] = (),
    services: Mapping[str, str] | None = None,
    unavailable: Sequence[tuple[str, str]] = (),
) -> int:
    """Run ``parity check`` or ``parity update`` from parsed arguments; returns the exit code.

    ``unavailable`` lists (lane, reason) of lanes whose service could not be had here; the
    report shows them as not measured.
    """
    from arib.parity.gate import check, update

    opts = options_from_args(args, extra_targets, services, unavailable)
    out = Path(args.out) if args.out else None
    if args.parity_command == "update":
        report, where = update(opts, out)
    else:
        report, where = check(opts, out)
    if args.json:
        print(json.dumps(report, indent=2, sort_keys=True, ensure_ascii=False))
    else:
        print("\n".join(summary_lines(report, where)))
    return int(report["exit_code"])


def run_command(args: argparse.Namespace) -> int:
    """``parity check`` or ``parity update``, with the service lanes whose servers can run here.

    Every argument is checked before any server starts (a usage error costs no server), and
    only the servers of the lanes the selection names are started.
    """
    from arib.ground.services import ServiceManager
    from arib.lanes import prepare_lanes
    from arib.parity.options import active_kind

    service_lanes = active_kind().service_targets()
    _, wanted = validate_args(args, service_lanes)
    with ServiceManager() as manager:
        prepared = prepare_lanes(wanted, manager)
        for missing in prepared.not_measured:
            print(f"{missing.name}: {missing.reason}")
        unavailable = [(m.name, m.reason) for m in prepared.not_measured]
        return handle(args, prepared.lanes, prepared.services, unavailable)
