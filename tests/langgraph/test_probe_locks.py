"""Every lane of every locked LangGraph combination takes the harness's calls: the probe
(`python -m arib --family langgraph probe`) runs in each lock's own environment, as the
bench builds them (.nox/sdk-envs/langgraph-<label>-py3.12; `nox -s langgraph` builds them all
first), and the test fails on any lane whose probe ends in a call the harness made with
arguments the release does not take (status ``refused``: a harness defect), naming the lock,
the lane and the call. A lane that cannot run there (a class its release lacks, a failure in
the release's own code) is the bench's business, not this test's: it is listed, not failed;
but our reference checkpointer, on which every check is gated, must take every call on every
lock, and every check, run once on the lane that gates it (`probe --gates`), must hold or
abstain there: else admission's sanity gate stops the whole bench of that lock.
"""

from __future__ import annotations

import json
import os
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from arib.dev.noxsupport import env_stamp, sdk_env_dir
from arib.ground.invocations import locked_versions

ROOT = Path(__file__).resolve().parents[2]
LOCK_DIR = ROOT / "harness" / "locks" / "langgraph"
PYTHON = "3.12"  # the bench's interpreter (noxfile.BENCH_PYTHON)
LABELS = locked_versions(LOCK_DIR, "langgraph")
# Each probe starts its own PostgreSQL; a whole probe with its gates takes 4-10 s on 2 cores.
PROBE_TIMEOUT_S = 300


def _environment(label: str) -> Path | str:
    """The python of ``label``'s environment, or why it cannot be used (with the fix)."""
    env = sdk_env_dir(ROOT, f"langgraph-{label}", PYTHON)
    lock = LOCK_DIR / f"langgraph-{label}.txt"
    stamp = env / ".lock-sha"
    fix = "run `nox -s langgraph`, which builds every lock's environment before its tests"
    if not stamp.is_file():
        return f"no environment of {label} at {env}: {fix}"
    if stamp.read_text() != env_stamp(ROOT, lock):
        return f"the environment of {label} at {env} was built from another {lock.name}: {fix}"
    return env / "bin" / "python"


def _probe(label: str) -> dict[str, Any] | str:
    """The probe document of ``label``'s environment, or what went wrong getting it."""
    python = _environment(label)
    if isinstance(python, str):
        return python
    env = {**os.environ, "ARIB_FAMILY": "langgraph"}
    done = subprocess.run([str(python), "-m", "arib", "--family", "langgraph", "probe",
                           "--gates", "--json", "-"], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=PROBE_TIMEOUT_S, check=False)
    try:
        document: dict[str, Any] = json.loads(done.stdout)
    except json.JSONDecodeError:
        return f"the probe of {label} wrote no document (exit {done.returncode}): " \
               f"{done.stderr[-1500:]}"
    return document


@pytest.fixture(scope="module")
def probes() -> dict[str, dict[str, Any] | str]:
    """Every lock's probe document, two environments at a time."""
    with ThreadPoolExecutor(max_workers=2) as pool:
        return dict(zip(LABELS, pool.map(_probe, LABELS), strict=True))


def test_the_oldest_supported_releases_are_locked() -> None:
    assert LABELS[0] == "cp1.0.1+sq1.0.0+pg1.0.0"


@pytest.mark.slow
@pytest.mark.parametrize("label", LABELS)
def test_every_lane_takes_the_harness_s_calls(label: str,
                                              probes: dict[str, dict[str, Any] | str]) -> None:
    document = probes[label]
    assert not isinstance(document, str), document
    assert document["version"] == label
    lanes = document["lanes"]
    assert lanes, f"no lane of {label} was probed: {document['not_measured']}"
    refused = [f"{label} {name}: the harness's call at {r['rejected_call']} raised "
               f"{r['error']} at {r['step']}" for name, r in lanes.items()
               if r["status"] == "refused"]
    assert not refused, "\n".join(refused)
    # every other lane was probed or is named as not measured, with its reason
    assert {*lanes, *document["not_measured"]} >= {"lg-reference", "lg-sqlite-file",
                                                   "lg-store-reference"}
    # our reference checkpointer is the family's: every check is gated on it, so it must exist
    # and take every call on every release the family supports (an import of ours that the
    # release lacks leaves the whole version unmeasured)
    reference = lanes.get("lg-reference") or {"status": None}
    why = document["not_measured"].get("lg-reference") or reference
    assert reference["status"] == "ok", f"{label}: our reference is not measured there: {why}"
    # every check once on the lane that gates it: one violated or in error there (a check's
    # own call or import the release does not take, on our reference) stops every bench of
    # this release at admission's first sanity gate, with nothing measured
    stops = [f"{label}: the bench would stop at the sanity gate of {g['check_id']} on "
             f"{g['lane']}: {g['verdict']} ({g['reason']})" for g in document["gates"]
             if g["verdict"] in ("violated", "error")]
    assert document["gates"] and not stops, "\n".join(stops) or "no gate was probed"
