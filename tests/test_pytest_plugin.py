"""arib.pytest_plugin: one item per invariant, the options, the readable failure, inertness."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "tests" / "userstore" / "example_plugin.py"


def run_pytest(*args: str) -> subprocess.CompletedProcess[str]:
    """``python -m pytest`` in this repo, as a user's run (the plugin loads by entry point)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:randomly", "-rA", *args],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)


def test_registered_through_the_pytest11_entry_point(pytestconfig: pytest.Config):
    found = {ep.name: ep.value for ep in metadata.entry_points(group="pytest11")}
    assert found.get("arib") == "arib.pytest_plugin"
    assert pytestconfig.pluginmanager.has_plugin("arib")


def test_inert_when_unused():
    code = ("import sys, arib.pytest_plugin; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in "
            "('arib', 'harness', 'checks', 'targets', 'mutants')))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                         text=True, check=True).stdout
    assert out.strip() == "['arib', 'arib.pytest_plugin']"


class _CommandLine:
    """What pytest.Config.getoption answers for the --arib-* options given (None otherwise)."""

    def __init__(self, **given: object) -> None:
        self.given = given

    def getoption(self, name: str) -> object:
        return self.given.get(name.removeprefix("--arib-").replace("-", "_"))


def _store() -> None:
    """A stand-in factory: the options never call it."""


def test_validate_and_the_survey_take_their_options_from_the_marker_then_the_command_line():
    from arib.pytest_plugin import _options

    mark = pytest.mark.arib(_store, checks=["ARIB-POP-001"], params={"ARIB-POP-001": {"n": 2}},
                            seed=3, trials=4, timeout_s=5.0, workers=2, survey=80).mark
    bare = _CommandLine()
    assert _options(bare, mark, "validate") == {  # type: ignore[arg-type]
        "params": {"ARIB-POP-001": {"n": 2}}, "seed": 3, "trials": 4, "timeout_s": 5.0,
        "workers": 2}
    # the survey has no trials; checks and survey are the items' business, not a keyword
    assert _options(bare, mark, "survey") == {  # type: ignore[arg-type]
        "params": {"ARIB-POP-001": {"n": 2}}, "seed": 3, "timeout_s": 5.0, "workers": 2}
    given = _CommandLine(seed=9, trials=1, trial_seed=77, workers=1)
    assert _options(given, mark, "validate") == {  # type: ignore[arg-type]
        "params": {"ARIB-POP-001": {"n": 2}}, "seed": 9, "trials": 1, "trial_seed": 77,
        "timeout_s": 5.0, "workers": 1}
    assert _options(given, mark, "survey") == {  # type: ignore[arg-type]
        "params": {"ARIB-POP-001": {"n": 2}}, "seed": 9, "timeout_s": 5.0, "workers": 2}
    # nothing given: the cores, no params
    plain = pytest.mark.arib.with_args(_store).mark  # a lone callable would be decorated
    for call in ("validate", "survey"):
        assert _options(bare, plain, call) == {  # type: ignore[arg-type]
            "workers": os.cpu_count() or 1, "params": {}}


def test_every_option_is_a_keyword_of_the_call_it_is_given_to():
    import inspect

    from arib.api import survey_store, validate
    from arib.pytest_plugin import _MARKER_KWARGS, _OPTIONS

    for call, function in (("validate", validate), ("survey", survey_store)):
        accepted = set(inspect.signature(function).parameters)
        from_marker, from_command_line = _OPTIONS[call]
        assert set(from_marker) | set(from_command_line) <= accepted, call
        assert set(from_marker) <= set(_MARKER_KWARGS), call


@pytest.mark.slow
def test_example_correct_store_passes_and_racy_store_fails_on_conc_001():
    done = run_pytest(str(EXAMPLE))
    out = done.stdout
    assert done.returncode == 1, out + done.stderr
    assert "PASSED tests/userstore/example_plugin.py::test_json_store[ARIB-CONC-001]" in out
    assert "PASSED tests/userstore/example_plugin.py::test_json_store[ARIB-POP-001]" in out
    assert "PASSED tests/userstore/example_plugin.py::test_racy_store[ARIB-POP-001]" in out
    assert "FAILED tests/userstore/example_plugin.py::test_racy_store[ARIB-CONC-001]" in out
    assert "1 failed, 3 passed" in out
    failure = out.split("test_racy_store[ARIB-CONC-001] _")[1]
    # every trial of the check's own count violated (2 since it runs under the scheduler)
    assert re.search(r"VIOLATED ARIB-CONC-001: (\d+) of \1 trials violated; lost", failure)
    assert "invariant: N concurrent appends leave N visible items" in failure
    assert "replay:    validate(tests.userstore.stores.racy_store" in failure
    assert "Traceback" not in failure and "def test_racy_store" not in failure


@pytest.mark.slow
def test_options_choose_seed_trials_and_checks():
    done = run_pytest(str(EXAMPLE), "--arib-checks", "ARIB-CONC-001", "--arib-trials", "2",
                      "--arib-seed", "5", "-k", "racy")
    assert "1 failed, 1 deselected" in done.stdout, done.stdout + done.stderr
    assert "FAILED: 1 violated of 1 check (seed 5," in done.stdout
    assert "2 of 2 trials violated" in done.stdout
    done = run_pytest(str(EXAMPLE), "--arib-checks", "ARIB-POP-001")
    assert "2 passed" in done.stdout and "ARIB-CONC-001" not in done.stdout, done.stdout
    assert "PASSED tests/userstore/example_plugin.py::test_racy_store[ARIB-POP-001]" in done.stdout


@pytest.mark.slow
def test_misuse_is_a_usage_error_naming_the_test(tmp_path: Path):
    test_file = tmp_path / "test_misuse.py"
    test_file.write_text(
        "import pytest\nfrom tests.userstore.stores import json_store\n\n"
        "@pytest.mark.arib(json_store)\ndef test_forgot_the_fixture():\n    pass\n")
    done = run_pytest(str(test_file))
    assert done.returncode != 0
    assert "takes no 'arib_report' argument" in done.stdout + done.stderr
    test_file.write_text(
        "import pytest\nfrom tests.userstore.stores import json_store\n\n"
        "@pytest.mark.arib(json_store, checks=['ARIB-NOPE-001'])\n"
        "def test_unknown(arib_report):\n    pass\n")
    done = run_pytest(str(test_file))
    assert done.returncode != 0
    assert "ARIB-NOPE-001" in done.stdout + done.stderr


@pytest.mark.slow
def test_a_check_that_does_not_apply_skips_and_a_stray_param_is_refused(tmp_path: Path):
    test_file = tmp_path / "test_applies.py"
    test_file.write_text(
        "import pytest\nfrom tests.userstore.stores import json_store\n\n"
        "@pytest.mark.arib(json_store, checks=['ARIB-CONC-002'])\n"
        "def test_no_close(arib_report):\n    pass\n")
    done = run_pytest(str(test_file))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 skipped" in done.stdout and "not applicable" in done.stdout, done.stdout
    test_file.write_text(
        "import pytest\nfrom tests.userstore.stores import json_store\n\n"
        "@pytest.mark.arib(json_store, checks=['ARIB-CONC-001'],\n"
        "                  params={'ARIB-POP-001': {'trials': 1}})\n"
        "def test_stray(arib_report):\n    pass\n")
    done = run_pytest(str(test_file))
    assert done.returncode != 0
    assert "names 'ARIB-POP-001', which is not among the checks" in done.stdout + done.stderr


@pytest.mark.slow
def test_default_items_follow_the_store_and_name_what_did_not_run(tmp_path: Path):
    test_file = tmp_path / "test_defaults.py"
    test_file.write_text(
        "import pytest\nfrom arib.api import lane\n"
        "from tests.userstore.capable import unreadable_store\n\n"
        "@pytest.mark.arib(lane(unreadable_store))\n"  # a bare function would be the marked one
        "def test_defaults(arib_report):\n    pass\n")
    done = run_pytest(str(test_file), "--arib-trials", "1", "-k",
                      "CONC-001 or CONC-002 or BRANCH-003 or CORRUPT")
    out = done.stdout
    assert done.returncode == 1, out + done.stderr
    assert "PASSED" in out and "test_defaults[ARIB-CONC-001]" in out
    assert re.search(r"SKIPPED \[1\] .*not run: needs close\(\): UnreadableBranches has no "
                     r"callable close\(\)", out), out
    # the probe raised: an error at the item's setup, with the cause (the check is not judged)
    assert "ERROR at setup of test_defaults[ARIB-BRANCH-003]" in out, out
    assert "RuntimeError('branch table unreadable')" in out
    assert "CORRUPT" not in out  # not a default check: no item
    assert "1 passed, 1 skipped, 24 deselected, 1 error" in out


@pytest.mark.slow
def test_survey_item_gates_the_store_by_its_covered_score_and_refuses_a_bad_threshold(
        tmp_path: Path):
    test_file = tmp_path / "test_survey_item.py"
    test_file.write_text(
        "import pytest\nfrom tests.userstore.stores import json_store\n\n"
        "@pytest.mark.arib(json_store, checks=['ARIB-POP-001'], survey=100)\n"
        "def test_store(arib_report):\n    pass\n")
    done = run_pytest(str(test_file), "--arib-trials", "2")
    out = done.stdout
    assert done.returncode == 1, out + done.stderr
    assert re.search(r"PASSED \S+::test_store\[ARIB-POP-001\]", out), out
    assert re.search(r"FAILED \S+::test_store\[survey\]", out), out
    failure = out.split("test_store[survey] _")[1]
    # POP-001 alone never clears a session: a clear_session that does nothing survives it
    assert "survived early_return in JsonFileSession.clear_session" in failure
    assert re.search(r"gate: json_store: covered score [\d.]+%, threshold 100%: BELOW", failure)
    done = run_pytest(str(test_file), "--arib-survey", "101")
    assert done.returncode != 0
    assert "survey=101.0" in done.stdout + done.stderr, done.stdout + done.stderr
