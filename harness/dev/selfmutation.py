"""Mutation testing of the harness core with mutmut 3.8.1, run from a staging directory.

mutmut writes its working copy to ``./mutants/`` of the directory it runs in, which here would
be our own ``mutants`` package. So the sources and the chosen tests are copied into a staging
directory (``build/mutmut-staging/`` by default, gitignored, wiped at every run) and mutmut
runs there. Only ``harness/ground/model.py`` and the pure functions of ``harness/admission.py``
and ``harness/judging.py`` are mutated; the other packages are copied unmutated so that the
staged tests import nothing from the work tree.

``python -m arib.dev.selfmutation`` prints the score, every surviving mutant with its
``mutmut show`` diff, and exits 1 when the score is under the threshold (4 when mutmut could
not run at all).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import libcst as cst

from arib.ground.interrupts import run_in_group
from arib.ground.package import LAYOUT

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_STAGING = ROOT / "build" / "mutmut-staging"
# The staged package: the checkout's folders laid out as the wheel lays them (harness/ is
# ``arib``, checks/ ``arib/checks`` ...), so the staged copy is what the tests import.
PACKAGES = ("arib",)
MUTATED = ("arib/ground/model.py", "arib/admission.py", "arib/judging.py")
TESTS = (
    "tests/__init__.py",
    "tests/conftest.py",
    "tests/test_model.py",
    "tests/test_model_mutations.py",
    "tests/test_judging.py",
)
# Functions of a mutated file left unmutated in the staged copy, with the reason.
NOT_MUTATED: Mapping[str, Mapping[str, str]] = {
    "arib/admission.py": {
        "admit": "forks a child per job and runs real checks (seconds per test); "
                 "covered by tests/test_admission.py, too slow to rerun per mutant",
        "_execute": "runs a whole check in-process on a real backend",
        "_clean_phase": "forks a child per gate and clean-base run (as ``admit``)",
        **dict.fromkeys(("_gates", "_pairs", "_result", "_reasons", "_waiver", "_keys",
                         "_cached_cells", "_forced"),
                        "a part of ``admit`` (split out of it, not mutated before either); "
                        "covered by tests/test_admission.py"),
    },
    "arib/judging.py": {
        "judge_mutants": "forks a child per mutant run; covered by tests/test_judging.py and "
                         "tests/test_admission.py, too slow to rerun per mutant",
        "_run": "runs a whole check in-process on a real backend",
    },
}
# Measured on 2026-11-29: with tests/test_model.py alone 171/548 killed (31.2%, 329 mutants
# with no test); with tests/test_model_mutations.py added 546/550 (99.3%). After model.py moved
# to harness/ground/ and judging.py was split out of admission.py: 644/716 (89.9%; 45 with no
# test: ``clean_base``, ``clean_reruns``, ``_reference``; 27 survivors in ``CleanBase``,
# ``_options``' services, ``_mutant_key``'s kind and time rule). Measured on 2026-12-01 with
# the tests for those added: 711/716 killed (99.3%). The five survivors are equivalent:
# ``bool(data.get("cached", None))`` and ``bool(data.get("cached"))`` (``bool`` of a missing
# key is False either way); the ``early`` flag of ``_as_finding`` (None or True), which an
# error finding never records and a delivered finding ignores; and ``clean_base``'s starting
# ``reason = ""``, read only through ``reason[:300] if reason else None``.
# Measured on 2026-12-02: main had fallen to 787/845 (93.1%): functions split out of ``admit``
# and ``judge_mutants`` since (``_keys``, ``_cached_cells``, ``_forced``, ``_run_pairs``) were
# mutated though only the slow admission and judging tests run them; they are listed above
# like their siblings, ``CleanBase.from_json`` reads missing flags as None (no equivalent
# default), and a test names a check's own gate lane: 812/815 (99.6%), the three survivors
# the equivalents above (``_as_finding``'s ``early`` twice, ``clean_base``'s ``reason``).
# Threshold: the score rounded down.
THRESHOLD = 99.0
PRAGMA = "# pragma: no mutate block"
_RESULT_LINE = re.compile(r"^\s+(?P<name>\S+): (?P<status>.+?)\s*$")


@dataclass(frozen=True)
class Score:
    """mutmut's counts for one run and the score computed from them."""

    killed: int
    survived: int
    timeout: int
    no_tests: int
    skipped: int
    suspicious: int
    segfault: int
    total: int

    @property
    def judged(self) -> int:
        """Mutants that count toward the score: all but the skipped ones."""
        return self.total - self.skipped

    @property
    def percent(self) -> float:
        """mutmut's own formula (its ``badge`` command): (killed + timeout) / (total - skipped)."""
        return 100.0 * (self.killed + self.timeout) / self.judged if self.judged else 0.0

    @classmethod
    def from_cicd(cls, data: Mapping[str, int]) -> Score:
        """Read ``mutants/mutmut-cicd-stats.json`` as written by ``mutmut export-cicd-stats``."""
        return cls(**{name: int(data.get(name, 0)) for name in (
            "killed", "survived", "timeout", "no_tests", "skipped", "suspicious", "segfault",
            "total")})


def _mark_not_mutated(source: str, names: Mapping[str, str]) -> str:
    """Put mutmut's block pragma on the ``def`` line of each named top-level function."""
    module = cst.parse_module(source)
    missing = set(names)
    body = []
    for stmt in module.body:
        if isinstance(stmt, cst.FunctionDef) and stmt.name.value in names \
                and isinstance(stmt.body, cst.IndentedBlock):
            header = stmt.body.header.with_changes(
                whitespace=cst.SimpleWhitespace("  "), comment=cst.Comment(PRAGMA))
            stmt = stmt.with_changes(body=stmt.body.with_changes(header=header))
            missing.discard(stmt.name.value)
        body.append(stmt)
    if missing:
        raise SystemExit(f"selfmutation: NOT_MUTATED names {sorted(missing)} that no longer "
                         f"exist; update harness/dev/selfmutation.py")
    return module.with_changes(body=body).code


def _pyproject() -> str:
    def toml_list(items: Sequence[str]) -> str:
        return "[" + ", ".join(json.dumps(i) for i in items) + "]"

    tests = [t for t in TESTS if Path(t).name.startswith("test_")]
    return "\n".join([
        "# Written by harness/dev/selfmutation.py for one mutmut run; not part of the project.",
        "[tool.mutmut]",
        f"source_paths = {toml_list(PACKAGES)}",
        f"only_mutate = {toml_list(MUTATED)}",
        f"pytest_add_cli_args_test_selection = {toml_list(tests)}",
        'pytest_add_cli_args = ["-p", "no:cacheprovider"]',
        "use_git_change_detection = false",
        "",
        "[tool.pytest.ini_options]",
        'testpaths = ["tests"]',
        'markers = ["slow: runs real backends for several seconds"]',
        "",
    ])


def stage(staging: Path) -> None:
    """Wipe ``staging`` and copy the packages, the chosen tests and a mutmut config into it."""
    staging = staging.resolve()
    if staging == ROOT or ROOT.is_relative_to(staging) or staging.is_relative_to(ROOT / "mutants"):
        raise SystemExit(f"selfmutation: refusing staging directory {staging}: it must not "
                         f"contain the project or lie inside its mutants/ package")
    if staging.exists():
        shutil.rmtree(staging)
    staging.mkdir(parents=True)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", ".*")
    for folder, package in LAYOUT.items():
        shutil.copytree(ROOT / folder, staging / package.replace(".", "/"), ignore=ignore)
    for test in TESTS:
        (staging / test).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / test, staging / test)
    for rel, names in NOT_MUTATED.items():
        path = staging / rel
        path.write_text(_mark_not_mutated(path.read_text(encoding="utf-8"), names),
                        encoding="utf-8")
    (staging / "pyproject.toml").write_text(_pyproject(), encoding="utf-8")


def _mutmut() -> list[str]:
    beside = Path(sys.executable).with_name("mutmut")
    found = str(beside) if beside.exists() else shutil.which("mutmut")
    if found is None:
        raise SystemExit("selfmutation: the mutmut command is not installed (mutmut==3.8.1)")
    return [found]


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["OPENAI_AGENTS_DISABLE_TRACING"] = "1"
    return env


def run_mutmut(staging: Path, max_children: int, quiet: bool) -> int:
    """``mutmut run`` in the staging directory; returns its exit code."""
    out = subprocess.DEVNULL if quiet else None
    return run_in_group([*_mutmut(), "run", "--max-children", str(max_children)],
                        cwd=staging, env=_env(), stdout=out).returncode


def read_score(staging: Path) -> Score:
    """Export mutmut's CI/CD stats and read them."""
    subprocess.run([*_mutmut(), "export-cicd-stats"], cwd=staging, env=_env(),
                   capture_output=True, check=True)
    data = json.loads((staging / "mutants" / "mutmut-cicd-stats.json").read_text())
    return Score.from_cicd(data)


def not_killed(staging: Path) -> list[tuple[str, str]]:
    """(mutant name, status) of every mutant mutmut did not kill, from ``mutmut results``."""
    text = subprocess.run([*_mutmut(), "results"], cwd=staging, env=_env(),
                          capture_output=True, text=True, check=True).stdout
    found = []
    for line in text.splitlines():
        match = _RESULT_LINE.match(line)
        if match:
            found.append((match["name"], match["status"]))
    return found


def show(staging: Path, name: str) -> str:
    """The diff of one mutant, from ``mutmut show``."""
    return subprocess.run([*_mutmut(), "show", name], cwd=staging, env=_env(),
                          capture_output=True, text=True, check=False).stdout.rstrip()


def main(argv: Sequence[str] | None = None) -> int:
    """Stage, run mutmut, print the score and the survivors; 1 under the threshold."""
    parser = argparse.ArgumentParser(prog="python -m arib.dev.selfmutation",
                                     description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--staging", type=Path, default=DEFAULT_STAGING)
    parser.add_argument("--threshold", type=float, default=THRESHOLD,
                        help=f"minimum score in percent (default {THRESHOLD})")
    parser.add_argument("--max-children", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--quiet", action="store_true", help="hide mutmut's own progress")
    args = parser.parse_args(argv)

    started = time.perf_counter()
    stage(args.staging)
    print(f"selfmutation: staged {', '.join(PACKAGES)} and {len(TESTS)} test files in "
          f"{args.staging}; mutating {', '.join(MUTATED)}")
    for rel, names in NOT_MUTATED.items():
        for name, why in names.items():
            print(f"  not mutated: {rel}::{name} ({why})")
    code = run_mutmut(args.staging, args.max_children, args.quiet)
    if code != 0:
        print(f"selfmutation: mutmut run exited with {code}; no score", file=sys.stderr)
        return 4
    score = read_score(args.staging)
    left = not_killed(args.staging)
    survivors = [(n, s) for n, s in left if s == "survived"]
    others = [(n, s) for n, s in left if s not in ("survived", "killed")]
    print(f"\nmutmut 3.8.1 on {', '.join(MUTATED)}: {score.killed} killed, {score.survived} "
          f"survived, {score.timeout} timeout, {score.no_tests} no tests, {score.suspicious} "
          f"suspicious, {score.segfault} segfault, {score.skipped} skipped, of {score.total}")
    for name, status in others:
        print(f"  {status}: {name}")
    for name, _ in survivors:
        print(f"\nsurvived: {name}\n{show(args.staging, name)}")
    elapsed = time.perf_counter() - started
    verdict = "ok" if score.percent >= args.threshold else "BELOW THRESHOLD"
    print(f"\nscore {score.percent:.1f}% (threshold {args.threshold:.1f}%): {verdict}; "
          f"{elapsed:.0f}s")
    return 0 if score.percent >= args.threshold else 1


if __name__ == "__main__":
    raise SystemExit(main())
