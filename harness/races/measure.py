"""``races measure``: each corpus entry run before and after, side by side in one run.

Two checkouts are measured: "after" (this one) and "before" (e.g. a worktree of an older
main). Each runs in its own environment through ``harness/races/worker.py``, one worker per
(side, family), and every entry is run by both in turn (before first on even reruns, after
first on odd ones), so both sides see the same machine and the same load. Each rerun uses the
run seed ``seed + rerun``, the same on both sides. The order of the entries is a seeded
shuffle of the measurable corpus; ``--sample N`` keeps its first N, ``--budget S`` stops after
S seconds, and a later call goes on where the last one stopped (entries already measured with
the same seed and reruns are skipped), so the whole sample is measured in chunks.
"""

from __future__ import annotations

import datetime
import json
import os
import random
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from arib.ground.errors import ResultsError, UsageError
from arib.ground.files import atomic_write_text
from arib.races.corpus import Entry

MEASUREMENT_KIND = "arib-race-measurement"
SIDES = ("before", "after")
WORKER = Path(__file__).with_name("worker.py")


def environment_python(family: str) -> str:
    """The Python of the environment nox builds for a family's pinned version, relative to a
    checkout: that of the family's nox session."""
    from arib.ground.family import get_family

    return f".nox/{get_family(family).nox_session}/bin/python"



@dataclass(frozen=True)
class Plan:
    """What one ``races measure`` call runs."""

    before: Path
    after: Path
    seed: int = 0
    reruns: int = 3
    sample: int | None = None
    budget_s: float | None = None
    entries: tuple[str, ...] = ()  # keys to measure (default: the sample's order)


def sample_order(entries: Sequence[Entry], seed: int) -> list[Entry]:
    """The entries in a seeded random order (the same seed, the same order)."""
    ordered = sorted(entries, key=lambda e: e.key)
    random.Random(seed).shuffle(ordered)
    return ordered


def first_violation(per_trial: Sequence[bool] | None) -> int | None:
    """The 1-based trial of the first violation, or None."""
    for index, violated in enumerate(per_trial or ()):
        if violated:
            return index + 1
    return None


class Worker:
    """One checkout's worker process for one family (see races_worker.py)."""

    def __init__(self, root: Path, family: str, lanes: Sequence[str]) -> None:
        from arib.ground.family import apply_environment, get_family

        python = root / environment_python(family)
        if not python.exists():
            session = get_family(family).nox_session
            raise UsageError(f"no environment {str(python)!r} for {family} in {str(root)!r}: the "
                             f"rule: each side runs in its own checkout's environment; fix: cd "
                             f"{root} && nox -s {session} --install-only")
        apply_environment()  # the families' switches (tracing off), inherited by the worker
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        code = f"import runpy; runpy.run_path({str(WORKER)!r}, run_name='__main__')"
        self.process = subprocess.Popen(
            [str(python), "-c", code], cwd=root, env=env, text=True,
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        self.ready = self.ask({"family": family, "lanes": list(lanes)})
        self.sdk = str(self.ready.get("sdk"))

    def ask(self, request: Mapping[str, Any]) -> dict[str, Any]:
        """Send one request, read its answer."""
        stdin: IO[str] = self.process.stdin  # type: ignore[assignment]
        stdout: IO[str] = self.process.stdout  # type: ignore[assignment]
        stdin.write(json.dumps(request) + "\n")
        stdin.flush()
        line = stdout.readline()
        if not line:
            raise ResultsError(f"the races worker ended (exit {self.process.poll()!r}) on "
                               f"{dict(request)!r}: fix: run that entry with python -m arib "
                               f"run to see why")
        answer: dict[str, Any] = json.loads(line)
        return answer

    def close(self) -> None:
        """End the worker (its servers stop with it)."""
        if self.process.stdin:
            self.process.stdin.close()
        self.process.wait(timeout=120)


def _git_head(root: Path) -> str:
    found = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True,
                           text=True, check=False)
    dirty = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--",
                            "harness", "checks", "mutants", "targets"],
                           capture_output=True, text=True, check=False).stdout.strip()
    return found.stdout.strip() + ("-dirty" if dirty else "")


def load_measurement(path: Path) -> dict[str, Any] | None:
    """The measurement written so far, or None."""
    if not path.exists():
        return None
    document: dict[str, Any] = json.loads(path.read_text())
    if document.get("kind") != MEASUREMENT_KIND:
        raise ResultsError(f"{str(path)!r} is not a race measurement: fix: move it away")
    return document


def _side_result(runs: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """A side's figures for one entry from its reruns."""
    ok = [r for r in runs if r.get("status") == "ok" and r.get("verdict") in ("held", "violated")]
    trials = sum(int(r["trials"]) for r in ok)
    bad = sum(int(r["violating_trials"]) for r in ok)
    firsts = [f for f in (first_violation(r.get("per_trial")) for r in ok) if f is not None]
    return {"runs": list(runs), "judged_runs": len(ok),
            "violated_runs": sum(1 for r in ok if r["verdict"] == "violated"),
            "trials": trials, "violating_trials": bad,
            "rate": round(bad / trials, 4) if trials else None,
            "first_violation": sorted(firsts)[len(firsts) // 2] if firsts else None}


def measure(plan: Plan, corpus: Sequence[Entry], out: Path,
            say: Callable[[str], None] = print) -> Path:
    """Measure (more of) the sample and write ``out``/measurement.json; returns its path."""
    path = out / "measurement.json"
    document = load_measurement(path) or {}
    if document and (document["seed"], document["reruns"]) != (plan.seed, plan.reruns):
        raise UsageError(f"{str(path)!r} was measured with seed {document['seed']!r} and reruns "
                         f"{document['reruns']!r}: the rule: one measurement, one seed; fix: "
                         f"pass --seed {document['seed']} --reruns {document['reruns']}, or "
                         f"move the file away to start over")
    by_key = {e.key: e for e in corpus}
    unknown = [k for k in plan.entries if k not in by_key]
    if unknown:
        raise UsageError(f"--entries {unknown[0]!r}: the rule: a key of corpus.json; fix: copy "
                         f"a key from results/races/corpus.json")
    done: dict[str, Any] = dict(document.get("entries", {}))
    started, clock = datetime.datetime.now(datetime.timezone.utc), time.monotonic()
    workers: dict[tuple[str, str], Worker] = {}
    chunk: dict[str, Any] = {"started": started.isoformat(timespec="seconds"), "measured": 0,
                             "command": " ".join(["python", "-m", "arib", *sys.argv[1:]])}
    wanted = [by_key[k] for k in plan.entries] if plan.entries else list(corpus)
    try:
        for family in sorted({e.family for e in wanted}):
            lanes = sorted({e.lane for e in wanted if e.family == family})
            for side in SIDES:
                workers[(side, family)] = Worker(getattr(plan, side), family, lanes)
        measurable = [e for e in wanted
                      if all(workers[(s, e.family)].sdk == e.sdk for s in SIDES)]
        order = measurable if plan.entries else sample_order(measurable, plan.seed)[:plan.sample]
        todo = [e for e in order if e.key not in done]
        held = {(f, w.sdk) for (side, f), w in workers.items() if side == "after"
                and workers[("before", f)].sdk == w.sdk}
        header = {"measurable": sum(1 for e in corpus if (e.family, e.sdk) in held),
                  "versions": {
            f"{side}:{family}": w.sdk for (side, family), w in sorted(workers.items())}}
        for entry in todo:
            if plan.budget_s is not None and time.monotonic() - clock > plan.budget_s:
                break
            pair = {side: workers[(side, entry.family)] for side in SIDES}
            runs: dict[str, list[dict[str, Any]]] = {side: [] for side in SIDES}
            for rerun in range(plan.reruns):
                seed = plan.seed + rerun
                for side in (SIDES if rerun % 2 == 0 else SIDES[::-1]):
                    request = {"check": entry.check_id, "lane": entry.lane,
                               "mutant": entry.mutant_id, "seed": seed}
                    try:
                        answer = pair[side].ask(request)
                    except ResultsError as exc:  # the worker died: recorded, and a new one
                        answer = {"status": "worker_died", "detail": str(exc)[:300]}
                        pair[side] = workers[(side, entry.family)] = Worker(
                            getattr(plan, side), entry.family,
                            sorted({e.lane for e in wanted if e.family == entry.family}))
                    runs[side].append({"seed": seed, **answer})
            done[entry.key] = {"entry": entry.to_json(),
                               **{side: _side_result(runs[side]) for side in SIDES}}
            chunk["measured"] += 1
            say(f"[{chunk['measured']}/{len(todo)}] {entry.key}: rate before "
                f"{done[entry.key]['before']['rate']} after {done[entry.key]['after']['rate']}")
            _write(path, plan, corpus, {**document, **header}, chunk, done, clock)
    finally:
        for worker in workers.values():
            worker.close()
    _write(path, plan, corpus, {**document, **header}, chunk, done, clock)
    return path


def _write(path: Path, plan: Plan, corpus: Sequence[Entry], previous: Mapping[str, Any],
           chunk: dict[str, Any], done: Mapping[str, Any], clock: float) -> None:
    """measurement.json with this chunk's progress (written after every entry)."""
    chunk = {**chunk, "duration_s": round(time.monotonic() - clock, 1),
             "loadavg": [round(x, 2) for x in os.getloadavg()]}
    document = {
        "kind": MEASUREMENT_KIND, "schema_version": 1, "seed": plan.seed,
        "reruns": plan.reruns, "order": "seeded shuffle of the measurable corpus "
                                        "(random.Random(seed).shuffle of the sorted keys)",
        "sample": plan.sample if not plan.entries else None,
        "corpus_size": len(corpus), "measurable": previous.get("measurable"),
        "versions": previous.get("versions"),
        "sides": {side: {"path": str(getattr(plan, side)),
                         "commit": _git_head(getattr(plan, side))} for side in SIDES},
        "chunks": [*previous.get("chunks", []), chunk],
        "entries": dict(sorted(done.items())),
    }
    atomic_write_text(path, json.dumps(document, indent=1, ensure_ascii=False) + "\n")
