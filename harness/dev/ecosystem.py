"""`nox -s ecosystem`: third-party lanes (targets/ecosystem), each in an environment of its own
lock (standard library only: nox's own Python imports it).

A third-party package is measured the way a user outside the project would: the package
``arib-ecosystem`` (targets/ecosystem/) declares its lanes through the ``arib.lanes.<family>``
entry points and is installed, with the project and the lane's lock, into an environment that
no built-in bench uses. ``ECOSYSTEM`` is the table of locks: each names the family version whose
requirements it extends (a package needing an older LangGraph runs on one), the third-party
requirement, what that requires (its metadata) and the lanes it serves.
"""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from arib.dev.noxsupport import env_stamp, take_option


class EcosystemError(ValueError):
    """A refused argument of `nox -s ecosystem` (the message names the value and the fix)."""


@dataclass(frozen=True)
class EcoLock:
    """One third-party package's lock: ``harness/locks/ecosystem/<name>.txt``."""

    name: str  # the lock's stem, the package's short lane name ("lg-duckdb")
    family: str
    version: str  # the family version (its lock template) this lock extends
    requirement: str  # the third-party package, pinned
    requires: str  # what the package requires (its metadata), recorded in the lock's top
    lanes: tuple[str, ...]
    why: str = ""  # why this family version, when it is not the pinned one

    def header(self) -> list[str]:
        """The comment lines at the top of the lock."""
        lines = [f"# {self.requirement} (lanes {', '.join(self.lanes)}) on {self.family} "
                 f"{self.version}; it requires: {self.requires}",
                 f"# compiled by `nox -s ecosystem -- --lock {self.name}` from the family's "
                 f"requirements.in for {self.version} plus {self.requirement}"]
        return lines + ([f"# {self.why}"] if self.why else [])

    def to_json(self) -> dict[str, object]:
        """The JSON form of this lock's entry."""
        return {"name": self.name, "family": self.family, "version": self.version,
                "requirement": self.requirement, "requires": self.requires,
                "lanes": list(self.lanes), "why": self.why}


LG_PINNED = "cp4.3.2+sq3.1.2+pg3.2.0"
ECOSYSTEM: tuple[EcoLock, ...] = (
    EcoLock("lg-duckdb", "langgraph", "cp2.1.2+sq2.0.6+pg2.0.25",
            "langgraph-checkpoint-duckdb==2.0.2",
            "duckdb>=1.1.2, langgraph-checkpoint>=2.0.2,<3.0.0",
            ("lg-duckdb", "lg-duckdb-async"),
            why="langgraph-checkpoint-duckdb 2.0.2 (its newest) requires langgraph-checkpoint<3: "
                "it runs on the newest locked 2.x combination, not on the pinned "
                f"{LG_PINNED}"),
    EcoLock("lg-lmdb", "langgraph", LG_PINNED, "langgraph-checkpoint-lmdb==0.3.1",
            "langgraph-checkpoint>=2.0.0, lmdb>=1.4.1, orjson>=3.9.15, msgpack>=1.0.7",
            ("lg-lmdb", "lg-lmdb-async")),
    EcoLock("lg-plainredis", "langgraph", LG_PINNED, "langgraph-checkpoint-plainredis==0.1.0",
            "langgraph-checkpoint>=4.1,<5, redis>=5.0",
            ("lg-plainredis", "lg-plainredis-async")),
    EcoLock("lg-mysql", "langgraph", LG_PINNED, "langgraph-checkpoint-mysql[pymysql]==3.0.0",
            "langgraph-checkpoint>=2.1.2, orjson>=3.10.1, typing-extensions>=4.12.2; extra "
            "pymysql: pymysql>=1.1.1", ("lg-mysql",)),
    EcoLock("oas-redis", "openai-agents", "0.24.0", "openai-agents-session[redis]==0.1.0",
            "openai-agents>=0.1.0; extra redis: redis>=5.0.0", ("oas-redis",)),
)


def lock_path(root: Path, entry: EcoLock) -> Path:
    """Where ``entry``'s lock lives in the checkout ``root``."""
    return root / "harness" / "locks" / "ecosystem" / f"{entry.name}.txt"


@dataclass(frozen=True)
class Plan:
    """What one `nox -s ecosystem` run does: the locks to build and the lanes of each."""

    groups: tuple[tuple[EcoLock, tuple[str, ...]], ...]
    lock: bool  # compile the locks instead of measuring
    out: str | None
    rest: tuple[str, ...]  # passed on to the bench


def every_lane() -> tuple[str, ...]:
    """Every third-party lane the table names, in its order."""
    return tuple(lane for entry in ECOSYSTEM for lane in entry.lanes)


def plan(args: Sequence[str]) -> Plan:
    """The run ``args`` ask for: ``--lanes a,b`` (a lane, or a lock's name for all its lanes;
    default every lane), ``--lock [name,...]``, ``--out DIR``; the rest goes to the bench."""
    lanes_text, rest = take_option(args, "--lanes")
    out, rest = take_option(rest, "--out")
    lock = "--lock" in rest
    if lock:
        at = rest.index("--lock")
        if lanes_text is None and at + 1 < len(rest) and not rest[at + 1].startswith("-"):
            lanes_text = rest[at + 1]
            rest = rest[:at + 1] + rest[at + 2:]
        rest = [a for a in rest if a != "--lock"]
    wanted = [w.strip() for w in (lanes_text or "").split(",") if w.strip()] or list(every_lane())
    known = {lane for entry in ECOSYSTEM for lane in entry.lanes} | {e.name for e in ECOSYSTEM}
    unknown = [w for w in wanted if w not in known]
    if unknown:
        raise EcosystemError(f"--lanes {unknown[0]!r} is no third-party lane; the rule: name "
                             f"lanes of harness/dev/ecosystem.py ECOSYSTEM; use some of: "
                             f"{', '.join(every_lane())}")
    groups = []
    for entry in ECOSYSTEM:
        chosen = tuple(lane for lane in entry.lanes if lane in wanted or entry.name in wanted)
        if chosen:
            groups.append((entry, chosen))
    return Plan(tuple(groups), lock, out, tuple(rest))


@dataclass(frozen=True)
class Outcome:
    """What became of one lock's lanes: the bench's exit code, or why they were not measured."""

    entry: EcoLock
    lanes: tuple[str, ...]
    code: int | None  # None: not measured (the environment could not be built)
    why: str = ""

    @property
    def measured(self) -> bool:
        """The bench ran and measured (exit 0 held, 1 violated)."""
        return self.code in (0, 1)

    def line(self) -> str:
        """One line of the session's closing summary."""
        lanes = ", ".join(self.lanes)
        if self.code is None:
            return f"{lanes}: not measured, because {self.why}"
        meaning = {0: "held", 1: "violations found", 2: "usage error", 3: "changed against "
                   "the baseline", 4: "an error finding or nothing measured"}
        return f"{lanes}: bench exit {self.code} ({meaning.get(self.code, 'stopped')})"


def verdict(outcomes: Sequence[Outcome]) -> str | None:
    """The session's failure, or None: it fails when nothing was measured, or when a bench
    exited with anything but 0 or 1 (after every lane ran)."""
    if not any(o.measured for o in outcomes):
        return "nothing was measured: " + "; ".join(o.line() for o in outcomes)
    failed = [o for o in outcomes if o.code is not None and not o.measured]
    if failed:
        return "; ".join(o.line() for o in failed)
    return None


REPRO = ("targets", "ecosystem", "repro")  # the direct reproductions, <lane>--<CHECK>.py
# The families whose record names an official conformance suite (`python -m arib official`)
OFFICIAL_SUITES = ("langgraph",)
# Run seeds of the benches that measure again each check a lock's bench found violated:
# whether a clean third-party lane violates in every run or in some, and at what rate.
RERUN_SEEDS = (1, 2)
LOCK_VAR = "ARIB_LOCK"  # the lock an environment was installed from (arib.ground.provenance)


def repro_scripts(root: Path, lanes: Sequence[str]) -> tuple[Path, ...]:
    """The direct reproductions of ``lanes``' violations, by name order."""
    folder = root.joinpath(*REPRO)
    return tuple(sorted(p for p in folder.glob("*--*.py") if p.name.split("--")[0] in lanes))


def violated_checks(run: Path | None, lanes: Sequence[str]) -> tuple[str, ...]:
    """The checks a bench result ``run`` found violated on any of ``lanes``, sorted."""
    if run is None:
        return ()
    try:
        doc = json.loads(run.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return ()
    return tuple(sorted({f["invariant_id"] for f in doc.get("findings", [])
                         if f.get("verdict") == "violated" and f.get("target") in lanes}))


# A bench result's name (arib.runs.results.run_stem): its start time, then its run id; the
# folder also holds what the follow-up steps write beside it (parity.json, ...).
_RUN_NAME = re.compile(r"\d{4}-\d{2}-\d{2}T\d{6}Z-.+\.json")


def newest_run(folder: Path) -> Path | None:
    """The newest bench result in ``folder`` (result files are named by their start time),
    or None when there is none; other JSON files there (parity.json) are not runs."""
    runs = sorted(p for p in folder.glob("*.json") if _RUN_NAME.fullmatch(p.name)) \
        if folder.is_dir() else []
    return runs[-1] if runs else None


def follow_ups(root: Path, out: Path, outcomes: Sequence[Outcome], envs: dict[str, Path]
               ) -> list[tuple[str, tuple[str, ...]]]:
    """What runs after the benches, as (label, command): per measured lock, in its
    environment, the checks its bench found violated benched again under other run seeds
    (``RERUN_SEEDS``, into ``out/<lock>/reruns``), its lanes' direct reproductions
    (`ecosystem confirm`, into
    ``out/confirmations-<family>.json``), the survey of their modules (`survey --write`, into
    ``out/<lock>/survey``), the parity gate against the family's reference (`parity check`,
    ``out/<lock>/parity.json``) and, for LangGraph, the official conformance suite on them
    (`official`, into ``out/<lock>/official``, beside the lock's bench run); then per family,
    the table of its measured locks' newest runs (`ecosystem report`, into ``out``), which
    reads the surveys, parity reports and the suite's runs beside them."""
    steps: list[tuple[str, tuple[str, ...]]] = []
    runs: dict[str, list[str]] = {}
    python: dict[str, str] = {}
    for outcome in outcomes:
        entry = outcome.entry
        if not outcome.measured or entry.name not in envs:
            continue
        py = str(envs[entry.name] / "bin" / "python")
        python.setdefault(entry.family, py)
        confirmations = out / f"confirmations-{entry.family}.json"
        scripts = repro_scripts(root, outcome.lanes)
        if scripts:
            steps.append((f"confirm {entry.name}", (
                py, "-m", "arib", "--family", entry.family, "ecosystem", "confirm",
                *map(str, scripts), "--out", str(confirmations))))
        arib = (py, "-m", "arib", "--family", entry.family)
        lanes = ",".join(outcome.lanes)
        newest = newest_run(out / entry.name)
        violated = violated_checks(newest, outcome.lanes)
        for seed in RERUN_SEEDS if violated else ():
            steps.append((f"rerun {entry.name} seed {seed}", (
                *arib, "bench", "--lanes", lanes, "--checks", ",".join(violated), "--seed",
                str(seed), "--out", str(out / entry.name / "reruns"), "--quiet")))
        steps.append((f"survey {entry.name}", (
            *arib, "survey", "--lanes", lanes, "--write", "--out",
            str(out / entry.name / "survey"), "--quiet", "--diffs", "0")))
        steps.append((f"parity {entry.name}", (
            *arib, "parity", "check", "--lanes", lanes, "--loops", "asyncio",
            # its own results folder: the family's parity history is not this lane's
            "--results", str(out / entry.name / "parity"),
            "--out", str(out / entry.name / "parity.json"))))
        if entry.family in OFFICIAL_SUITES:
            steps.append((f"official {entry.name}", (
                *arib, "official", "--lanes", lanes, "--out", str(out / entry.name))))
        if newest is not None:
            runs.setdefault(entry.family, []).append(str(newest))
    for family, files in runs.items():
        confirmations = out / f"confirmations-{family}.json"
        steps.append((f"report {family}", (
            python[family], "-m", "arib", "--family", family, "ecosystem", "report",
            "--runs", *files, "--confirmations", str(confirmations), "--out", str(out))))
    return steps


def build_env(session: Any, uv: str, interpreter: Path | None, root: Path, entry: EcoLock,
              env: Path) -> tuple[Path | None, str]:
    """The environment ``env`` of one third-party lock, built once (again when the lock, the
    project's or targets/ecosystem's recipe changes): the lock, then the project and
    targets/ecosystem without deps. (None, why) when it cannot be built."""
    lock = lock_path(root, entry)
    if not lock.exists():
        return None, (f"its lock {lock.relative_to(root)} does not exist (compile it: "
                      f"nox -s ecosystem -- --lock {entry.name})")
    if interpreter is None:
        return None, "Python 3.12 is not found here"
    python, stamp = env / "bin" / "python", env / ".lock-sha"
    ecosystem = root / "targets" / "ecosystem"
    digest = env_stamp(root, lock) + env_stamp(root, ecosystem / "pyproject.toml")
    if stamp.exists() and stamp.read_text() == digest:
        return env, ""
    stamp.unlink(missing_ok=True)
    steps = (("uv venv", [uv, "venv", "-q", "--allow-existing", "-p", str(interpreter), str(env)]),
             (f"uv pip sync {lock.name}", [uv, "pip", "sync", "-q", "-p", str(python), str(lock)]),
             ("the project", [uv, "pip", "install", "-q", "-p", str(python), "--no-deps", "-e",
                              str(root)]),
             ("targets/ecosystem", [uv, "pip", "install", "-q", "-p", str(python), "--no-deps",
                                    "-e", str(ecosystem)]))
    for what, command in steps:
        session.log(" ".join(command))
        done = subprocess.run(command, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            tail = (done.stderr or done.stdout).strip().splitlines()[-3:]
            return None, f"its environment could not be built ({what}): {' '.join(tail)}"
    stamp.write_text(digest)
    return env, ""
