"""arib.pytest_plugin: the items of a marked test judged at once, pytest-xdist, and the pytest
command that replays a failing item's trial."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import pytest

from tests.test_pytest_plugin import EXAMPLE, run_pytest

CONC = "tests/userstore/example_plugin.py::test_racy_store[ARIB-CONC-001]"

# A conftest that records every validate() call the plugin makes, then makes it.
RECORDER = """
import json, os
import arib.api

_validate = arib.api.validate

def recording(factory, **options):
    with open(os.environ["ARIB_CALLS"], "a") as out:
        out.write(json.dumps({"checks": list(options["checks"]),
                              "workers": options.get("workers")}) + "\\n")
    return _validate(factory, **options)

arib.api.validate = recording
"""


def _calls(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


@pytest.mark.slow
def test_a_failing_item_prints_the_pytest_command_that_replays_its_trial():
    done = run_pytest(str(EXAMPLE), "-k", "racy and CONC")
    assert done.returncode == 1, done.stdout + done.stderr
    found = re.search(r"^replay this trial: (.+)$", done.stdout, re.M)
    assert found, done.stdout
    words = shlex.split(found.group(1))
    assert words[:4] == ["python", "-m", "pytest", CONC]
    assert words[4:6] == ["--arib-seed", "0"] and words[6] == "--arib-trial-seed"
    replay = run_pytest(*words[3:])
    assert replay.returncode == 1, replay.stdout + replay.stderr
    assert "1 failed" in replay.stdout
    assert "VIOLATED ARIB-CONC-001: 1 of 1 trials violated" in replay.stdout


@pytest.mark.slow
def test_the_checks_of_one_test_are_judged_in_one_call_up_to_the_cores(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    import os

    (tmp_path / "conftest.py").write_text(RECORDER)
    (tmp_path / "test_user.py").write_text(EXAMPLE.read_text())
    calls = tmp_path / "calls.jsonl"
    monkeypatch.setenv("ARIB_CALLS", str(calls))
    done = run_pytest(str(tmp_path / "test_user.py"), "--rootdir", str(tmp_path))
    assert "1 failed, 3 passed" in done.stdout, done.stdout + done.stderr
    pair = ["ARIB-CONC-001", "ARIB-POP-001"]
    assert _calls(calls) == [{"checks": pair, "workers": os.cpu_count()}] * 2
    calls.unlink()
    done = run_pytest(str(tmp_path / "test_user.py"), "--rootdir", str(tmp_path), "-k",
                      "racy and POP", "--arib-workers", "1")
    assert "1 passed" in done.stdout, done.stdout + done.stderr
    assert _calls(calls) == [{"checks": ["ARIB-POP-001"], "workers": 1}]  # only what runs


@pytest.mark.slow
def test_under_xdist_every_item_is_judged_alone_with_the_same_outcomes(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    (tmp_path / "conftest.py").write_text(RECORDER)
    (tmp_path / "test_user.py").write_text(EXAMPLE.read_text())
    calls = tmp_path / "calls.jsonl"
    monkeypatch.setenv("ARIB_CALLS", str(calls))
    done = run_pytest(str(tmp_path / "test_user.py"), "--rootdir", str(tmp_path), "-n", "2")
    out = done.stdout
    assert "1 failed, 3 passed" in out, out + done.stderr
    assert re.search(r"FAILED \S*test_user.py::test_racy_store\[ARIB-CONC-001\]", out), out
    assert sorted(c["checks"][0] for c in _calls(calls)) == [
        "ARIB-CONC-001", "ARIB-CONC-001", "ARIB-POP-001", "ARIB-POP-001"]
    assert all(len(c["checks"]) == 1 for c in _calls(calls))
