"""The ecosystem table: third-party lanes beside the family's own, read from bench result files.

A third-party lane is one whose lane entry in a result names the ``distribution`` that ships its
backend (a plugin lane of ``targets/ecosystem``, or any installed package's). The table has one
column per lane (the family's own from one run, each third-party lane from the run of its own
environment, whose family version may differ) and one row per check; a cell is the verdict with
its violating trials. Every violation on a third-party lane is a candidate finding; it is
*reported* only when a direct reproduction, a script using the package without the harness,
reproduced it (``Confirmation``): the others are listed as unconfirmed, never as bugs.
"""

from __future__ import annotations

import glob
import json
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import Any

from arib.ground.errors import UsageError

# A reproduction script's exit code when it reproduced the violation; 0 when it did not.
REPRODUCED_EXIT = 1
SCRIPT_TIMEOUT_S = 300.0
OUTPUT_LIMIT = 4000  # characters of a script's output kept (its end, where the verdict is)


class CellState(Enum):
    """What one (check, lane) cell of the table says."""

    HELD = "held"
    VIOLATED = "violated"
    NOT_APPLICABLE = "not_applicable"
    ERROR = "error"
    NOT_MEASURED = "not_measured"


@dataclass(frozen=True)
class Column:
    """One lane of the table: the run it comes from and, for a third-party lane, its package."""

    lane: str
    version: str  # the family version of the run
    run: str  # the result file's name
    distribution: str = ""  # "" for the family's own lanes
    distribution_version: str | None = None
    not_measured: str | None = None  # why the lane has no cell, when it has none
    # The survey of the lane's module (its scores: killed, survived, ... score_covered) and the
    # family's official suite on it (status, passed, failed, failing tests), when they ran
    # beside the lane's bench run (``beside``); None when not.
    survey: Mapping[str, Any] | None = None
    official: Mapping[str, Any] | None = None
    parity: Mapping[str, Any] | None = None  # its lane's verdict against the reference

    @property
    def third_party(self) -> bool:
        return bool(self.distribution)

    def to_json(self) -> dict[str, Any]:
        """The JSON form of this column."""
        return {"lane": self.lane, "version": self.version, "run": self.run,
                "distribution": self.distribution or None,
                "distribution_version": self.distribution_version,
                "not_measured": self.not_measured,
                "survey": None if self.survey is None else dict(self.survey),
                "official": None if self.official is None else dict(self.official),
                "parity": None if self.parity is None else dict(self.parity)}


@dataclass(frozen=True)
class Cell:
    """One check on one lane: its state, and trials violated of trials."""

    check: str
    lane: str
    state: CellState
    trials: int = 0
    violating: int = 0
    reason: str | None = None

    @property
    def rate(self) -> float | None:
        """Violating trials per trial, or None without trials."""
        return self.violating / self.trials if self.trials else None

    def label(self) -> str:
        """How the Markdown table shows the cell."""
        if self.state is CellState.VIOLATED:
            return f"**violated {self.violating}/{self.trials}**"
        if self.state is CellState.HELD:
            return f"held 0/{self.trials}"
        return {CellState.NOT_APPLICABLE: "n/a", CellState.ERROR: "error",
                CellState.NOT_MEASURED: "not measured"}[self.state]

    def to_json(self) -> dict[str, Any]:
        """The JSON form of this cell."""
        return {"check": self.check, "lane": self.lane, "state": self.state.value,
                "trials": self.trials, "violating": self.violating, "rate": self.rate,
                "reason": self.reason}


@dataclass(frozen=True)
class Confirmation:
    """A direct reproduction's run: the script (using the package, not the harness), its exit
    code (``REPRODUCED_EXIT`` when it reproduced the violation) and the end of its output."""

    script: str
    exit_code: int
    output: str

    @property
    def reproduced(self) -> bool:
        return self.exit_code == REPRODUCED_EXIT

    def to_json(self) -> dict[str, Any]:
        """The JSON form of this confirmation."""
        return {"script": self.script, "exit_code": self.exit_code,
                "reproduced": self.reproduced, "output": self.output}


@dataclass(frozen=True)
class Finding:
    """A violation on a third-party lane, with what a maintainer needs to act on it."""

    check: str
    invariant: str
    fault: str
    lane: str
    distribution: str
    distribution_version: str | None
    version: str
    trials: int
    violating: int
    replay: str | None
    ops: tuple[str, ...] = ()
    samples: tuple[str, ...] = ()
    confirmation: Confirmation | None = None
    # the same cell benched again under other run seeds: (violating trials, trials) per run
    reruns: tuple[tuple[int, int], ...] = ()
    # the family's own lanes the same check is violated on in the accepted baseline of the same
    # family version (where the check asks more than the release's own savers keep, say)
    own_too: tuple[str, ...] = ()

    @property
    def key(self) -> str:
        """``"CHECK on LANE"``, the name its reproduction is filed under."""
        return f"{self.check} on {self.lane}"

    @property
    def rate(self) -> float | None:
        """Violating trials per trial in the bench, or None without trials."""
        return self.violating / self.trials if self.trials else None

    @property
    def reported(self) -> bool:
        """A finding only once a direct reproduction reproduced it (no false alarm)."""
        return self.confirmation is not None and self.confirmation.reproduced

    def to_json(self) -> dict[str, Any]:
        """The JSON form of this finding."""
        return {"check": self.check, "invariant": self.invariant, "fault": self.fault,
                "lane": self.lane, "distribution": self.distribution,
                "distribution_version": self.distribution_version, "version": self.version,
                "trials": self.trials, "violating": self.violating, "replay": self.replay,
                "ops": list(self.ops), "samples": list(self.samples), "reported": self.reported,
                "reruns": [{"violating": v, "trials": t} for v, t in self.reruns],
                "own_lanes_violated_too": list(self.own_too),
                "confirmation": None if self.confirmation is None
                else self.confirmation.to_json()}


@dataclass(frozen=True)
class Ecosystem:
    """The whole table of one family: columns, the checks' invariants, cells and findings."""

    family: str
    columns: tuple[Column, ...]
    invariants: Mapping[str, str]  # check id -> invariant, the table's rows in order
    cells: Mapping[tuple[str, str], Cell]  # (check, lane) -> cell
    findings: tuple[Finding, ...] = ()
    runs: tuple[str, ...] = field(default=())

    def cell(self, check: str, lane: str) -> Cell:
        """The cell of ``check`` on ``lane`` (not measured when the run has none)."""
        return self.cells.get((check, lane), Cell(check, lane, CellState.NOT_MEASURED))

    def to_json(self) -> dict[str, Any]:
        """The JSON document written beside the Markdown page."""
        return {"kind": "arib-ecosystem", "family": self.family, "runs": list(self.runs),
                "columns": [c.to_json() for c in self.columns],
                "checks": [{"id": c, "invariant": i} for c, i in self.invariants.items()],
                "cells": [c.to_json() for c in self.cells.values()],
                "findings": [f.to_json() for f in self.findings]}

    def markdown(self) -> str:
        """The page: lanes, the table, the findings, then what is not measured."""
        from arib.reports.ecosystem_page import render

        return render(self)


def _state(verdict: str) -> CellState:
    try:
        return CellState(verdict)
    except ValueError:
        return CellState.ERROR


def _distribution_version(run: Mapping[str, Any], distribution: str) -> str | None:
    packages = run.get("environment", {}).get("packages", {})
    found = packages.get(distribution)
    return str(found) if found else None


Beside = tuple[dict[str, Any] | None, dict[str, Any] | None, dict[str, Any] | None]


def _survey_totals(docs: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """One lane's survey over the classes it mutates: the modules, the first error, each
    status's count summed, and the covered score of the sum (killed of the judged ones)."""
    counts: dict[str, int] = {}
    for doc in docs:
        for key, value in (doc.get("scores") or {}).items():
            if isinstance(value, int) and not key.startswith("score"):
                counts[key] = counts.get(key, 0) + value
    judged = sum(counts.get(k, 0) for k in ("killed", "survived", "flaky", "timeout"))
    return {"module": ", ".join(str(d.get("module")) for d in docs),
            "error": next((d.get("error") for d in docs if d.get("error")), None), **counts,
            "score_covered": counts.get("killed", 0) / judged if judged else None}


def beside(run: Path, lane: str) -> Beside:
    """The survey scores, the official suite's run and the parity verdict of ``lane`` written
    beside the bench result ``run``: ``survey/<lane>.json``, ``official/*-side-by-side.json``
    and ``parity.json`` in its folder (what `nox -s ecosystem` writes); None for any that is
    not there."""
    survey = official = parity = None
    folder = run.parent / "survey"
    # the lane's own class, then each class it names to mutate (<lane>[<Class>].json)
    files = [folder / f"{lane}.json", *sorted(folder.glob(f"{glob.escape(lane)}[[]*].json"))]
    docs = [json.loads(p.read_text(encoding="utf-8")) for p in files if p.is_file()]
    if docs:
        survey = _survey_totals(docs)
    for side in sorted((run.parent / "official").glob("*-side-by-side.json")):
        doc = json.loads(side.read_text(encoding="utf-8"))
        for entry in doc.get("lanes", []):
            found = entry.get("official") or {}
            if entry.get("lane") == lane and found:
                official = {"suite": doc.get("suite"), "suite_version": doc.get("suite_version"),
                            **{k: found.get(k) for k in ("status", "passed", "failed",
                                                         "skipped", "failing", "error")}}
    path = run.parent / "parity.json"
    if path.is_file():
        doc = json.loads(path.read_text(encoding="utf-8"))
        for entry in doc.get("lanes", []):
            if entry.get("target") == lane:
                reasons = [r for r in doc.get("fail_reasons", []) if f"lane '{lane}@" in r]
                parity = {"verdict": entry.get("verdict"), "reference": doc.get("reference_lane"),
                          "workflows": entry.get("workflows_total"), "reasons": reasons}
    return survey, official, parity


def _stamp(path: Path) -> str:
    """A result file's start time, the first part of its name (arib.runs.results.run_stem:
    ``2026-12-06T221758Z-...``); "" for a file named otherwise (parity.json)."""
    head = path.name[:18]
    return head if len(head) == 18 and head[:4].isdigit() and head.endswith("Z") else ""


def _reruns_of(run: Path) -> list[Path]:
    """The files in ``reruns/`` beside ``run`` started after it and before the next bench
    result of its folder: that session's reruns of it, not an earlier session's."""
    start = _stamp(run)
    later = sorted(_stamp(p) for p in run.parent.glob("*.json") if _stamp(p) > start)
    until = later[0] if later else "~"  # "~" sorts after every stamp
    return sorted(p for p in (run.parent / "reruns").glob("*.json")
                  if start <= _stamp(p) < until)


def reruns_beside(run: Path | None) -> dict[tuple[str, str], list[tuple[int, int]]]:
    """(check, lane) -> (violating trials, trials) of each bench result in ``reruns/`` beside
    the bench result ``run`` (the violated checks benched again under other run seeds)."""
    found: dict[tuple[str, str], list[tuple[int, int]]] = {}
    for path in _reruns_of(run) if run is not None else ():
        doc = json.loads(path.read_text(encoding="utf-8"))
        for finding in doc.get("findings", []):
            if finding.get("verdict") in ("held", "violated"):
                found.setdefault((finding["invariant_id"], finding["target"]), []).append(
                    (int(finding.get("violating_trials") or 0), int(finding.get("trials") or 0)))
    return found


def violated_own(baseline: Mapping[str, Any] | None) -> dict[str, tuple[str, ...]]:
    """check -> the family's own lanes (no distribution) a bench result has it violated on."""
    if baseline is None:
        return {}
    own = {lane.get("name") for lane in baseline.get("lanes", []) if not lane.get("distribution")}
    found: dict[str, tuple[str, ...]] = {}
    for item in baseline.get("findings", []):
        if item.get("verdict") == "violated" and item.get("target") in own:
            found[item["invariant_id"]] = (*found.get(item["invariant_id"], ()), item["target"])
    return found


def build(family: str, builtin: Mapping[str, Any] | None, runs: Sequence[Mapping[str, Any]],
          confirmations: Mapping[str, Confirmation] | None = None,
          names: Sequence[str] = (), paths: Sequence[Path | None] = (),
          baselines: Mapping[str, Mapping[str, Any]] | None = None) -> Ecosystem:
    """The table from the family's own run (``builtin``: its own lanes' columns) and the
    third-party runs (their third-party lanes' columns); ``names`` are the files' names;
    ``baselines``: family version -> its accepted baseline, read for the family's own lanes a
    finding's check is violated on too at that version.
    UsageError naming a run of another family, or a third-party run with no third-party lane."""
    confirmations = confirmations or {}
    own_at = {v: violated_own(doc) for v, doc in (baselines or {}).items()}
    docs = ([builtin] if builtin is not None else []) + list(runs)
    labels = list(names) or [f"run {i + 1}" for i in range(len(docs))]
    columns: list[Column] = []
    cells: dict[tuple[str, str], Cell] = {}
    invariants: dict[str, str] = {}
    findings: list[Finding] = []
    for index, doc in enumerate(docs):
        label = labels[index]
        sdk = doc.get("sdk", {})
        if sdk.get("name") != family:
            raise UsageError(f"result {label!r} is a run of family {sdk.get('name')!r}; the "
                             f"rule: an ecosystem table reads runs of one family ({family!r}); "
                             f"fix: pass --family {sdk.get('name')} or that family's runs")
        own = builtin is not None and index == 0
        lanes = [lane for lane in doc.get("lanes", [])
                 if bool(lane.get("distribution")) != own and not lane.get("reference")]
        if not own and not lanes:
            raise UsageError(f"result {label!r} has no third-party lane (no lane names its "
                             f"distribution); the rule: each run given with --runs measures "
                             f"a third-party lane; fix: pass the family's own run with "
                             f"--builtin")
        version = str(sdk.get("version", "?"))
        absent = {m["name"]: m["reason"] for m in doc.get("not_measured", [])}
        path = paths[index] if index < len(paths) else None
        for lane in lanes:
            dist = str(lane.get("distribution") or "")
            survey, official, parity = (beside(path, lane["name"]) if path and dist
                                        else (None, None, None))
            columns.append(Column(lane["name"], version, label, dist,
                                  _distribution_version(doc, dist) if dist else None,
                                  absent.get(lane["name"]), survey, official, parity))
        wanted = {lane["name"] for lane in lanes}
        again = reruns_beside(path) if path is not None else {}
        for found in doc.get("findings", []):
            lane, check = found["target"], found["invariant_id"]
            if lane not in wanted:
                continue
            invariants.setdefault(check, found.get("invariant", ""))
            cell = Cell(check, lane, _state(found["verdict"]), int(found.get("trials") or 0),
                        int(found.get("violating_trials") or 0), found.get("reason"))
            cells[check, lane] = cell
            column = next(c for c in columns if c.lane == lane and c.run == label)
            if column.third_party and cell.state is CellState.VIOLATED:
                key = f"{check} on {lane}"
                findings.append(Finding(
                    check, found.get("invariant", ""), found.get("fault", ""), lane,
                    column.distribution, column.distribution_version, version, cell.trials,
                    cell.violating, found.get("replay"), tuple(found.get("ops") or ()),
                    tuple(str(s) for s in found.get("samples") or ()),
                    confirmations.get(key), tuple(again.get((check, lane), ())),
                    own_at.get(version, {}).get(check, ())))
    return Ecosystem(family, tuple(columns), dict(sorted(invariants.items())), cells,
                     tuple(findings), tuple(labels))


def script_key(script: Path) -> str:
    """``"CHECK on LANE"`` of a reproduction script named ``<lane>--<CHECK>.py``; UsageError
    naming a script named otherwise."""
    lane, sep, check = script.stem.partition("--")
    if not (sep and lane and check):
        raise UsageError(f"reproduction script {script.name!r}: the rule: it is named "
                         f"<lane>--<CHECK-ID>.py (lg-duckdb--ARIB-CKPT-001.py); fix: rename it")
    return f"{check} on {lane}"


def confirm(scripts: Sequence[Path], python: str = sys.executable) -> dict[str, Confirmation]:
    """Run each reproduction script with ``python`` (in the third-party package's environment)
    and keep what it said: exit ``REPRODUCED_EXIT`` reproduced, 0 did not, anything else (a
    crash, a timeout) confirms nothing."""
    out: dict[str, Confirmation] = {}
    for script in scripts:
        key = script_key(script)
        try:
            done = subprocess.run([python, str(script)], capture_output=True, text=True,
                                  timeout=SCRIPT_TIMEOUT_S)
            code, text = done.returncode, done.stdout + done.stderr
        except subprocess.TimeoutExpired as exc:
            code, text = -1, f"timed out after {SCRIPT_TIMEOUT_S:g} s: {exc}"
        out[key] = Confirmation(script.name, code, text[-OUTPUT_LIMIT:])
    return out
