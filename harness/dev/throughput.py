"""Admission throughput side by side: our runner and mutmut 3.8.1, one module, one check.

Both tools judge ``agents.memory.sqlite_session`` with ARIB-CONC-001 as the test, with the
same reduced parameters, the same seeds, one run per mutant, stop at the first violating
trial, the same temporary folder (``fast_tmpdir()``, as admission uses), and the same number
of parallel workers (the machine's cores). A third row shows ours under mutmut's timeout
rule, 15 x (clean run + 1 s), instead of the check's fixed timeout:

- ours: the libcst mutants of ``arib.mutants.generate.generate(SQLITE_FILE)``, each judged by
  ``arib.execute.run_check`` in a forked child of ``arib.ground.child.run_jobs``; a clean
  run of the unmutated backend goes first in the same batch;
- mutmut: a temporary project (deleted after the run, never committed) holding a copy of the
  installed module as ``sqlite_session_copy.py`` (relative imports made absolute) and one
  pytest test that runs the same ``run_check`` on a target built from the copied class;
  ``mutmut run`` does its own generation, stats, clean and forced-fail runs.

The mutant sets differ (mutmut's operators are not ours); both counts are reported. The wall
time of each tool is end to end: from the module's source to every verdict. Run with
``python -m arib.dev.throughput [--write]``; ``--write`` stores the figures in
``results/throughput/<date>.json``.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime as dt
import functools
import importlib
import importlib.util
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from arib.ground import scratch
from arib.ground.files import atomic_write_text
from arib.ground.interrupts import run_in_group
from arib.ground.provenance import environment, harness_commit

ROOT = Path(__file__).resolve().parents[2]
OUT_DIR = ROOT / "results" / "throughput"
MODULE = "agents.memory.sqlite_session"
COPY = "sqlite_session_copy"
CHECK_ID = "ARIB-CONC-001"
PARAMS = {"writers": 4, "appends": 10, "trials": 1}
RERUNS = 1
TARGET_RATIO = 3.0  # issue 15: admission throughput at least 3x mutmut 3.8.1
from arib.admission import GRACE_S  # noqa: E402 - the same child grace as admission

MUTMUT_MULTIPLIER = 15.0  # mutmut 3.8.1 defaults: timeout_multiplier and timeout_constant
MUTMUT_CONSTANT_S = 1.0
_RELATIVE = re.compile(r"^(?P<indent>\s*)from (?P<dots>\.+)(?P<rest>[\w.]*) import ", re.M)
_RATE = re.compile(r"([\d.]+) mutations/second")

TEST_TEMPLATE = '''"""ARIB-CONC-001 on the copied SQLiteSession: mutmut runs it for each mutant."""

import dataclasses
import json
import os

import {copy}
from arib.checks.openai_agents.conc_001 import CHECK
from arib.execute import RunOptions, fast_tmpdir, run_check
from arib.ground.model import Verdict
from arib.targets.openai_agents.sdk import SQLITE_FILE, _file_builder

PARAMS = {params}


def _make(ctx):
    return {copy}.SQLiteSession(ctx.session_id, db_path=str(ctx.root / "store.db"))


# Same lane name as ours, so the trial seeds are the same.
TARGET = dataclasses.replace(SQLITE_FILE, module="{copy}", build=_file_builder(_make))


def test_arib_conc_001_holds():
    check = CHECK
    assert check.id == "{check}"
    # The same options as ours: same seeds, early stop, the same temporary folder, and the
    # lane's claims verified on the clean runs only (mutmut's stats and clean runs come first).
    mutant = os.environ.get("MUTANT_UNDER_TEST", "")
    opts = RunOptions(params=check.resolve_params(PARAMS), run_seed=0, stop_on_violation=True,
                      tmpdir=fast_tmpdir(), verify_claims="__mutmut_" not in mutant)
    finding = run_check(check, TARGET, opts)
    # One line per run, so the benchmark can tell a violation from an error.
    line = {{"mutant": os.environ.get("MUTANT_UNDER_TEST"), "verdict": finding.verdict.value,
             "reason": finding.reason}}
    with open(os.environ["ARIB_THROUGHPUT_LOG"], "a") as log:
        log.write(json.dumps(line) + "\\n")
    assert finding.verdict is Verdict.HELD, (finding.verdict, finding.reason, finding.samples)
'''


@dataclass(frozen=True)
class ToolRun:
    """What one tool did: mutants made and judged, their outcomes, and the wall time."""

    tool: str
    generated: int
    judged: int
    killed: int
    survived: int
    other: int
    wall_s: float
    detail: dict[str, Any] = field(default_factory=dict)

    @property
    def rate(self) -> float:
        """Mutants judged per second of wall time."""
        return self.judged / self.wall_s if self.wall_s else 0.0

    def to_json(self) -> dict[str, Any]:
        """The JSON form of this run, with its mutants per second."""
        return {**dataclasses.asdict(self), "wall_s": round(self.wall_s, 3),
                "mutants_per_s": round(self.rate, 3)}


def run_ours(workers: int, timeout_rule: str = "check") -> ToolRun:
    """Generate our mutants of the module and judge each in a forked child.

    ``timeout_rule`` "check" scales each mutant's time limit from the clean run, as admission
    does; "mutmut" uses mutmut's rule instead: 15 x (clean duration + 1 s).
    """
    from arib.checks.openai_agents.conc_001 import CHECK
    from arib.execute import RunOptions, fast_tmpdir, run_check
    from arib.ground.child import ChildStatus, run_jobs
    from arib.ground.model import Verdict
    from arib.judging import MUTANT_GRACE_S, mutant_timeout
    from arib.mutants.generate import generate
    from arib.mutants.pool import schedule
    from arib.targets.openai_agents.sdk import SQLITE_FILE

    # The harness imports its dependencies once, in the parent, before it forks (the SDK's
    # import alone takes seconds); the clock starts after that, at generation.
    importlib.import_module(SQLITE_FILE.module)
    started = time.perf_counter()
    report = generate(SQLITE_FILE)
    generated_s = time.perf_counter() - started
    check = CHECK  # imported directly: the same object the mutmut test uses
    assert check.id == CHECK_ID
    opts = RunOptions(params=check.resolve_params(PARAMS), run_seed=0, stop_on_violation=True,
                      tmpdir=fast_tmpdir())
    clean_job = functools.partial(run_check, check, SQLITE_FILE, opts, None)
    judging = time.perf_counter()
    # Both rules run the clean backend first: admission scales a mutant's time limit from
    # the clean run (arib.judging.mutant_timeout); mutmut uses 15 x (clean + 1 s).
    (clean,) = run_jobs([clean_job], workers=1, timeout_s=check.timeout_s + GRACE_S)
    clean_s = clean.value.duration_s if clean.status is ChildStatus.OK else check.timeout_s
    if timeout_rule == "mutmut":
        timeout = MUTMUT_MULTIPLIER * (clean.duration_s + MUTMUT_CONSTANT_S)
    else:
        timeout = mutant_timeout(check, clean_s)
    check = dataclasses.replace(check, timeout_s=timeout)
    # As in admission: the clean run verified the lane's claims, the mutants skip that probe.
    mutant_opts = dataclasses.replace(opts, verify_claims=False)
    # As admission does: hang-prone operators first, dependents scanned once in the parent.
    pool = schedule([m for m in report.mutants for _ in range(RERUNS)], lambda m: m)
    jobs = [functools.partial(run_check, check, SQLITE_FILE, mutant_opts, m) for m in pool]
    grace = MUTANT_GRACE_S if timeout_rule != "mutmut" else GRACE_S
    outcomes = run_jobs(jobs, workers=workers, timeout_s=check.timeout_s + grace)
    wall = time.perf_counter() - started
    clean_verdict = clean.value.verdict.value if clean.status is ChildStatus.OK else (
        clean.status.value)
    labels = [o.value.verdict.value if o.status is ChildStatus.OK else o.status.value
              for o in outcomes]
    killed = labels.count(Verdict.VIOLATED.value)
    survived = labels.count(Verdict.HELD.value)
    reasons = Counter(((o.value.reason if o.status is ChildStatus.OK else o.detail) or "")[:120]
                      for o, label in zip(outcomes, labels, strict=True)
                      if label not in ("violated", "held"))
    slowest = sorted(zip(outcomes, pool, labels, strict=True),
                     key=lambda t: -t[0].duration_s)[:3]
    judging_s = wall - (judging - started)
    return ToolRun(
        tool="ours" if timeout_rule == "check" else "ours, mutmut's timeout rule",
        generated=len(report.mutants), judged=len(outcomes), killed=killed, survived=survived,
        other=len(outcomes) - killed - survived, wall_s=wall,
        detail={
            "timeout_rule": timeout_rule,
            "median_mutant_s": round(statistics.median(o.duration_s for o in outcomes), 3),
            "check_timeout_s": round(timeout, 2),
            "generation_s": round(generated_s, 3),
            "judging_s": round(judging_s, 3),
            "judging_mutants_per_s": round(len(outcomes) / judging_s, 3),
            "clean_run": clean_verdict,
            "other_outcomes": sorted(set(labels) - {"violated", "held"}),
            "error_reasons": dict(reasons.most_common(3)),
            "slowest": [f"{m.qualname} [{m.operator}] {label} {o.duration_s:.1f}s"
                        for o, m, label in slowest],
        },
    )


def absolute_imports(source: str, package: str) -> str:
    """Rewrite ``from .x import`` / ``from ..x import`` as absolute imports within ``package``."""
    parts = package.split(".")

    def fix(match: re.Match[str]) -> str:
        base = parts[: len(parts) - (len(match["dots"]) - 1)]
        name = ".".join([*base, match["rest"]] if match["rest"] else base)
        return f"{match['indent']}from {name} import "

    return _RELATIVE.sub(fix, source)


def _installed(module: str) -> Path:
    spec = importlib.util.find_spec(module)
    if spec is None or spec.origin is None:
        raise SystemExit(f"throughput: module {module} is not installed")
    return Path(spec.origin)


def make_mutmut_project(project: Path) -> None:
    """Write the temporary project mutmut runs in: the copy, the test and the config."""
    source = _installed(MODULE).read_text(encoding="utf-8")
    (project / f"{COPY}.py").write_text(absolute_imports(source, MODULE.rpartition(".")[0]),
                                        encoding="utf-8")
    (project / "test_throughput_check.py").write_text(
        TEST_TEMPLATE.format(copy=COPY, check=CHECK_ID, params=json.dumps(PARAMS)),
        encoding="utf-8")
    (project / "pyproject.toml").write_text("\n".join([
        "[tool.mutmut]",
        f'source_paths = ["{COPY}.py"]',
        'pytest_add_cli_args_test_selection = ["test_throughput_check.py"]',
        'pytest_add_cli_args = ["-p", "no:cacheprovider"]',
        "use_git_change_detection = false",
        "",
    ]), encoding="utf-8")


def _mutmut() -> str:
    beside = Path(sys.executable).with_name("mutmut")
    found = str(beside) if beside.exists() else shutil.which("mutmut")
    if found is None:
        raise SystemExit("throughput: the mutmut command is not installed (mutmut==3.8.1)")
    return found


def run_mutmut(workers: int) -> ToolRun:
    """``mutmut run`` on a temporary copy of the module, with the same check as its test."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["OPENAI_AGENTS_DISABLE_TRACING"] = "1"
    with tempfile.TemporaryDirectory(prefix="throughput-", dir=scratch.folder()) as tmp:
        project = Path(tmp)
        make_mutmut_project(project)
        env["ARIB_THROUGHPUT_LOG"] = str(project / "verdicts.jsonl")
        started = time.perf_counter()
        proc = run_in_group([_mutmut(), "run", "--max-children", str(workers)], cwd=project,
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        wall = time.perf_counter() - started
        if proc.returncode != 0:
            tail = (proc.stdout + proc.stderr)[-3000:]
            raise SystemExit(f"throughput: mutmut run exited with {proc.returncode}:\n{tail}")
        subprocess.run([_mutmut(), "export-cicd-stats"], cwd=project, env=env,
                       capture_output=True, check=True)
        stats = json.loads((project / "mutants" / "mutmut-cicd-stats.json").read_text())
        lines = [json.loads(x) for x in (project / "verdicts.jsonl").read_text().splitlines()]
        meta = json.loads((project / "mutants" / f"{COPY}.py.meta").read_text())
    durations = [d for d in meta.get("durations_by_key", {}).values() if d is not None]
    # The check's verdict on each mutant mutmut ran (its stats, clean and forced-fail runs
    # are the lines without a mutant name).
    by_mutant = {x["mutant"]: x for x in lines if x["mutant"] and "__mutmut_" in x["mutant"]}
    verdicts = Counter(x["verdict"] for x in by_mutant.values())
    reasons = Counter((x["reason"] or "")[:120] for x in by_mutant.values()
                      if x["verdict"] == "error")
    rate = _RATE.findall(proc.stdout.replace("\r", "\n"))
    killed, survived = int(stats["killed"]), int(stats["survived"])
    other = sum(int(stats.get(k, 0)) for k in ("timeout", "suspicious", "segfault",
                                                 "check_was_interrupted_by_user"))
    return ToolRun(
        tool="mutmut 3.8.1",
        generated=int(stats["total"]), judged=killed + survived + other, killed=killed,
        survived=survived, other=other, wall_s=wall,
        detail={
            "median_mutant_s": round(statistics.median(durations), 3) if durations else None,
            "no_tests": int(stats.get("no_tests", 0)),
            "skipped": int(stats.get("skipped", 0)),
            "mutation_phase_mutants_per_s": float(rate[-1]) if rate else None,
            "check_verdicts": dict(sorted(verdicts.items())),
            "error_reasons": dict(reasons.most_common(3)),
            "note": "mutants in functions the test never calls are 'no tests': not judged; "
                    "mutmut counts a check error as a kill",
        },
    )


def table(runs: Sequence[ToolRun]) -> str:
    """The side-by-side table, as plain text."""
    head = ("tool", "generated", "judged", "killed", "survived", "other", "wall s", "mutants/s",
            "median s/mutant")
    rows = [head] + [(r.tool, str(r.generated), str(r.judged), str(r.killed), str(r.survived),
                      str(r.other), f"{r.wall_s:.1f}", f"{r.rate:.2f}",
                      f"{r.detail['median_mutant_s']}") for r in runs]
    widths = [max(len(row[i]) for row in rows) for i in range(len(head))]
    return "\n".join("  ".join(c.ljust(w) if i == 0 else c.rjust(w)
                               for i, (c, w) in enumerate(zip(row, widths, strict=True)))
                     for row in rows)


def runner_settings() -> dict[str, Any]:
    """The settings of our runner that shape its throughput, recorded with the figures."""
    from arib import execute, judging
    from arib.ground import child

    return {
        "mutant_time_limit": f"{judging.TIMEOUT_FACTOR:g} x clean run, at least "
                             f"{judging.MIN_MUTANT_TIMEOUT_S:g} s",
        "watchdog_after_limit_s": execute.WATCHDOG_SLACK_S,
        "kill_after_limit_s": judging.MUTANT_GRACE_S,
        "stalled_child": f"under {child.STALL_MAX_CPU_SHARE:.0%} CPU for "
                         f"{child.STALL_WINDOW_S:g} s, after {child.STALL_AFTER_SHARE:.0%} of "
                         f"its limit; up to {child.STALLED_PER_WORKER} per worker",
        "order": "operators that may hang first (arib.mutants.operators.hang_prone_first)",
        "claims": "verified once, on the clean run",
    }


def document(runs: Sequence[ToolRun], workers: int, load: tuple[float, ...]) -> str:
    """The JSON written by ``--write``: every run, and each of ours against mutmut."""
    ours, theirs = runs[:-1], runs[-1]
    return json.dumps({
        "kind": "throughput",
        "schema_version": 1,
        "date": dt.date.today().isoformat(),
        "harness_commit": harness_commit(),
        "environment": environment(),
        "workers": workers,
        "load_average_at_start": [round(x, 2) for x in load],
        "module": MODULE,
        "check": CHECK_ID,
        "params": PARAMS,
        "reruns": RERUNS,
        "stop_on_violation": True,
        "runner": runner_settings(),
        "tools": [r.to_json() for r in runs],
        "ratios": {r.tool: round(r.rate / theirs.rate, 3) if theirs.rate else None
                   for r in ours},
        "target_ratio": TARGET_RATIO,
        "meets_target": bool(theirs.rate) and ours[0].rate / theirs.rate >= TARGET_RATIO,
    }, indent=1) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    """Run the tools one after the other, print the table and the ratios; 0 unless one failed."""
    parser = argparse.ArgumentParser(prog="python -m arib.dev.throughput",
                                     description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--write", action="store_true",
                        help="store the figures in results/throughput/<date>.json")
    args = parser.parse_args(argv)
    os.environ.setdefault("OPENAI_AGENTS_DISABLE_TRACING", "1")
    load = os.getloadavg()
    print(f"throughput: {CHECK_ID} {PARAMS}, reruns {RERUNS}, stop at the first violation, "
          f"{args.workers} workers, on {MODULE}; load average {load[0]:.2f}")
    runs = []
    for rule in ("check", "mutmut"):
        runs.append(run_ours(args.workers, rule))
        print(f"  {runs[-1].tool}: done in {runs[-1].wall_s:.1f}s")
    runs.append(run_mutmut(args.workers))
    print(f"  {runs[-1].tool}: done in {runs[-1].wall_s:.1f}s\n")
    print(table(runs))
    theirs = runs[-1]
    print()
    for ours in runs[:-1]:
        ratio = ours.rate / theirs.rate if theirs.rate else float("nan")
        verdict = "meets" if ratio >= TARGET_RATIO else "BELOW"
        print(f"{ours.tool} / mutmut: {ratio:.2f}x ({verdict} the {TARGET_RATIO:.0f}x target); "
              f"check timeout {ours.detail['check_timeout_s']}s, generation "
              f"{ours.detail['generation_s']}s, judging {ours.detail['judging_mutants_per_s']} "
              f"mutants/s, slowest: {'; '.join(ours.detail['slowest'])}")
    print(f"mutmut: {theirs.detail['no_tests']} mutants not judged (no test calls them), "
          f"mutation phase {theirs.detail['mutation_phase_mutants_per_s']} mutants/s; the "
          f"check's verdicts on the mutants it ran: {theirs.detail['check_verdicts']}")
    for run in runs:
        for reason, n in run.detail["error_reasons"].items():
            print(f"  {run.tool}: {n} x {reason}")
    if any(r.detail["clean_run"] != "held" for r in runs[:-1]):
        print("throughput: the clean backend did not hold; the figures mean nothing",
              file=sys.stderr)
        return 4
    if args.write:
        path = OUT_DIR / f"{dt.date.today().isoformat()}.json"
        atomic_write_text(path, document(runs, args.workers, load))
        print(f"wrote {path.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
