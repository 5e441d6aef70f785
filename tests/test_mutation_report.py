"""The kill matrix as a mutation-testing-report (schema version 2) and its HTML viewer page."""

from __future__ import annotations

import ast
import copy
import html
import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from arib.ground.errors import ResultsError
from arib.ground.model import MutantResult, MutantStatus, Verdict
from arib.ground.sources import installed_source
from arib.mutants.base import MutantSpec
from arib.mutants.generate import generate
from arib.mutants.registry import get_mutant
from arib.reports import html as mutation_html
from arib.reports.html import ViewerUnavailableError, render_page, write_html
from arib.reports.mutation import STATUS_MAP, to_mutation_report, validate_mutation_report
from arib.targets.openai_agents.sdk import SQLITE_FILE

SQLITE_PATH = "agents/memory/sqlite_session.py"
V, H, E = Verdict.VIOLATED, Verdict.HELD, Verdict.ERROR


@pytest.fixture(scope="module")
def specs() -> dict[str, MutantSpec]:
    """Three generated mutants of SQLiteSession (one per operator) and one hand-written."""
    generated = generate(SQLITE_FILE).mutants
    picked = {}
    for operator in ("flip_comparison", "drop_commit", "drop_lock"):
        picked[operator] = next(m for m in generated if m.operator == operator)
    picked["handwritten"] = get_mutant("sqlite_drops_every_tenth_append")
    return picked


def result(spec: MutantSpec, check: str, status: MutantStatus, runs: tuple[Verdict, ...],
           evidence: str | None = None) -> MutantResult:
    return MutantResult(check, spec.id, spec.kind, spec.target, spec.description, status, runs,
                        evidence=evidence, duration_s=0.25)


@pytest.fixture(scope="module")
def results(specs: dict[str, MutantSpec]) -> list[MutantResult]:
    flip, commit, lock, hand = (specs[k] for k in
                                ("flip_comparison", "drop_commit", "drop_lock", "handwritten"))
    return [
        result(flip, "ARIB-CONC-001", MutantStatus.KILLED, (V, V, V), "3/3 trials violated"),
        result(flip, "ARIB-CONC-003", MutantStatus.SURVIVED, (H, H, H), "verdict held"),
        result(commit, "ARIB-CONC-001", MutantStatus.FLAKY, (V, H, V), "lost 2"),
        result(lock, "ARIB-CONC-002", MutantStatus.EQUIVALENT, (),
               "waived as equivalent: the lock only orders table creation"),
        result(hand, "ARIB-CONC-001", MutantStatus.KILLED, (V, V, V), "lost 5"),
    ]


@pytest.fixture(scope="module")
def report(results: list[MutantResult], specs: dict[str, MutantSpec]) -> dict[str, Any]:
    return to_mutation_report(results, {m.id: m for m in specs.values()})


def by_id(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {m["id"]: m for f in report["files"].values() for m in f["mutants"]}


def span(source: str, location: dict[str, Any]) -> tuple[int, int]:
    """Character offsets of a schema location (one-based, end exclusive)."""
    starts = [0] + [m.end() for m in re.finditer("\n", source)]

    def offset(pos: dict[str, int]) -> int:
        return starts[pos["line"] - 1] + pos["column"] - 1

    return offset(location["start"]), offset(location["end"])


def def_lines(source: str, qualname: str) -> tuple[int, int]:
    """First and last line of the def a qualname names."""
    body: list[ast.stmt] = ast.parse(source).body
    node: Any = None
    for name in (n for n in qualname.split(".") if n != "<locals>"):
        node = next(s for s in body if getattr(s, "name", None) == name)
        body = node.body
    return node.lineno, node.end_lineno


def test_report_validates_against_the_schema(report: dict[str, Any]) -> None:
    validate_mutation_report(report)
    assert report["schemaVersion"] == "2"
    assert report["thresholds"] == {"high": 100, "low": 100}
    assert list(report["files"]) == [SQLITE_PATH]
    entry = report["files"][SQLITE_PATH]
    assert entry["language"] == "python"
    assert entry["source"] == installed_source(SQLITE_FILE.module)[1]
    assert len(entry["mutants"]) == 4


def test_status_mapping_and_killed_by(report: dict[str, Any],
                                      specs: dict[str, MutantSpec]) -> None:
    mutants = by_id(report)
    flip = mutants[specs["flip_comparison"].id]
    assert flip["status"] == "Killed"  # killed by one check, survived another
    assert flip["killedBy"] == ["ARIB-CONC-001"]
    assert flip["coveredBy"] == ["ARIB-CONC-001", "ARIB-CONC-003"]
    assert flip["statusReason"].splitlines() == [
        "ARIB-CONC-001: killed: 3/3 trials violated", "ARIB-CONC-003: survived: verdict held"]
    assert flip["testsCompleted"] == 6 and flip["duration"] == 500.0
    commit = mutants[specs["drop_commit"].id]
    assert commit["status"] == "Survived" and commit["killedBy"] == []
    assert commit["statusReason"] == "ARIB-CONC-001: flaky: 2/3 reruns violated; lost 2"
    lock = mutants[specs["drop_lock"].id]
    assert lock["status"] == "Ignored"
    assert lock["statusReason"] == (
        "ARIB-CONC-002: equivalent: the lock only orders table creation")
    hand = mutants[specs["handwritten"].id]
    assert hand["status"] == "Killed" and hand["killedBy"] == ["ARIB-CONC-001"]
    assert hand["mutatorName"] == "handwritten:sqlite_drops_every_tenth_append"
    assert hand["description"] == specs["handwritten"].description


@pytest.mark.parametrize("status", list(MutantStatus))
def test_each_status_maps_to_a_schema_status(status: MutantStatus,
                                             specs: dict[str, MutantSpec]) -> None:
    spec = specs["flip_comparison"]
    doc = to_mutation_report([result(spec, "ARIB-CONC-001", status, (V,), "evidence")],
                             {spec.id: spec})
    validate_mutation_report(doc)
    (mutant,) = doc["files"][SQLITE_PATH]["mutants"]
    expected = {"killed": "Killed", "survived": "Survived", "flaky": "Survived",
                "timeout": "Survived", "error": "NoCoverage", "equivalent": "Ignored",
                "duplicate": "Ignored", "not_applicable": "Ignored",
                "not_judgeable": "NoCoverage", "not_run": "Ignored",
                "no_coverage": "NoCoverage"}
    assert mutant["status"] == STATUS_MAP[status] == expected[status.value]
    assert mutant["killedBy"] == (["ARIB-CONC-001"] if status is MutantStatus.KILLED else [])


def viewer_scores(statuses: list[str]) -> tuple[float | None, float | None]:
    """The two scores mutation-testing-elements computes from schema statuses (its metrics:
    detected = Killed + Timeout, undetected = Survived + NoCoverage; RuntimeError,
    CompileError and Ignored out of both totals)."""
    detected = statuses.count("Killed") + statuses.count("Timeout")
    valid = detected + statuses.count("Survived") + statuses.count("NoCoverage")
    covered = detected + statuses.count("Survived")
    return (detected / valid if valid else None, detected / covered if covered else None)


# A lane of the kind that showed 20.69 % in the viewer and 19.6 % in the survey's text.
LANE = ([MutantStatus.KILLED] * 9 + [MutantStatus.SURVIVED] * 20 + [MutantStatus.FLAKY]
        + [MutantStatus.TIMEOUT] * 2 + [MutantStatus.ERROR] * 3
        + [MutantStatus.NO_COVERAGE] * 11 + [MutantStatus.NOT_JUDGEABLE]
        + [MutantStatus.EQUIVALENT] * 2 + [MutantStatus.DUPLICATE] + [MutantStatus.NOT_APPLICABLE])


# Every status a mutant can have on a lane (not_run is a pair's only: arib.survey.scores).
EVERY_LANE_STATUS = [s for s in MutantStatus if s is not MutantStatus.NOT_RUN]


@pytest.mark.parametrize("statuses", [LANE, EVERY_LANE_STATUS, [MutantStatus.ERROR],
                                      [MutantStatus.KILLED, MutantStatus.TIMEOUT]])
def test_the_viewer_scores_by_the_surveys_formula(statuses: list[MutantStatus]) -> None:
    from arib.survey.scores import Scores

    ours = Scores.of(statuses)
    shown = viewer_scores([STATUS_MAP[s] for s in statuses])
    assert shown == (ours.score_all, ours.score_covered)


def test_generated_locations_point_at_the_changed_snippet(
        report: dict[str, Any], specs: dict[str, MutantSpec]) -> None:
    source = report["files"][SQLITE_PATH]["source"]
    mutants = by_id(report)
    for key in ("flip_comparison", "drop_commit", "drop_lock"):
        spec = specs[key]
        entry = mutants[spec.id]
        start, end = span(source, entry["location"])
        text = source[start:end]
        first = spec.original.strip().splitlines()[0]
        assert first in text, (key, text)
        # the replacement covers exactly the span: splicing it gives the mutant's source
        assert source[:start] + entry["replacement"] + source[end:] == spec.source
        assert entry["mutatorName"] == spec.operator
        # the location is inside the def the mutant's qualname names
        # (an end at column 1 of the next line takes in the last line's newline, no more)
        lo, hi = def_lines(source, spec.qualname)
        last = entry["location"]["end"]
        last_line = last["line"] - 1 if last["column"] == 1 else last["line"]
        assert lo <= entry["location"]["start"]["line"] <= last_line <= hi


def test_handwritten_location_is_the_overridden_def(report: dict[str, Any],
                                                    specs: dict[str, MutantSpec]) -> None:
    source = report["files"][SQLITE_PATH]["source"]
    entry = by_id(report)[specs["handwritten"].id]
    start, end = span(source, entry["location"])
    assert source[start:].startswith("async def add_items(self")
    assert entry["location"]["start"]["line"] > 1
    assert entry["replacement"] == specs["handwritten"].replacement
    assert "\n    async def " not in source[start:end]  # it ends with that method


def test_test_files_list_the_checks(report: dict[str, Any]) -> None:
    files = report["testFiles"]
    ids = {t["id"]: path for path, f in files.items() for t in f["tests"]}
    assert ids == {"ARIB-CONC-001": "checks/openai_agents/conc_001.py",
                   "ARIB-CONC-002": "checks/openai_agents/conc_002.py",
                   "ARIB-CONC-003": "checks/openai_agents/conc_003.py"}
    test = files["checks/openai_agents/conc_001.py"]["tests"][0]
    assert test["name"].startswith("ARIB-CONC-001: ")
    source = files["checks/openai_agents/conc_001.py"]["source"]
    line = source.splitlines()[test["location"]["start"]["line"] - 1]
    assert line.startswith("CHECK")


def test_a_result_without_its_spec_is_an_error(results: list[MutantResult]) -> None:
    with pytest.raises(ResultsError, match="has a result but no MutantSpec"):
        to_mutation_report(results, {})


@pytest.mark.parametrize("corrupt, message", [
    (lambda d: d.pop("thresholds"), "'thresholds' is a required property"),
    (lambda d: d["files"][SQLITE_PATH]["mutants"][0].update(status="Dead"), "is not one of"),
    (lambda d: d["files"][SQLITE_PATH]["mutants"][0]["location"]["start"].update(line=0),
     "less than the minimum"),
    (lambda d: d.update(schemaVersion="3"), "does not match"),
    (lambda d: d["files"][SQLITE_PATH]["mutants"][1].update(
        id=d["files"][SQLITE_PATH]["mutants"][0]["id"]), "not unique"),
    (lambda d: d["files"][SQLITE_PATH]["mutants"][0]["location"]["end"].update(line=10**6),
     "past the"),
    (lambda d: d["files"][SQLITE_PATH]["mutants"][0].update(killedBy=["ARIB-NOPE-001"]),
     "not in testFiles"),
])
def test_validation_rejects_a_corrupt_report(report: dict[str, Any], corrupt: Any,
                                             message: str) -> None:
    doc = copy.deepcopy(report)
    corrupt(doc)
    with pytest.raises(ResultsError, match=message):
        validate_mutation_report(doc)


def test_page_inlines_the_report_safely(report: dict[str, Any]) -> None:
    doc = copy.deepcopy(report)
    doc["files"][SQLITE_PATH]["mutants"][0]["description"] = "</script><script>alert(1)"
    page = render_page(doc)
    assert page.count("</script>") == 3  # the bundle, the JSON and the binding script
    assert "<mutation-test-report-app" in page and 'src="mutation-test-elements.js"' in page
    raw = re.search(r'id="arib-mutation-report">(.*?)</script>', page, re.S)
    assert raw is not None and json.loads(raw.group(1)) == doc


def fake_npm(tmp_path: Path, body: str) -> str:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    npm = bin_dir / "npm"
    npm.write_text("#!/bin/sh\n" + body + "\n")
    npm.chmod(0o755)
    return str(bin_dir)


def test_missing_npm_names_the_fix(report: dict[str, Any], tmp_path: Path,
                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(mutation_html.shutil, "which", lambda name: None)
    with pytest.raises(ViewerUnavailableError, match="`npm` is not on PATH.*install"):
        write_html(report, tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_failed_download_names_the_fix(report: dict[str, Any], tmp_path: Path,
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", fake_npm(tmp_path, "echo 'npm ERR! network ETIMEDOUT' >&2; "
                                                  "exit 1"))
    with pytest.raises(ViewerUnavailableError, match="ETIMEDOUT.*npm config get registry"):
        write_html(report, tmp_path / "out")


def test_tampered_tarball_is_refused(report: dict[str, Any], tmp_path: Path,
                                     monkeypatch: pytest.MonkeyPatch) -> None:
    name = f"mutation-testing-elements-{mutation_html.VIEWER_VERSION}.tgz"
    monkeypatch.setenv("PATH", fake_npm(tmp_path, f'echo not-a-tarball > "$4/{name}"'))
    with pytest.raises(ViewerUnavailableError, match="does not match the pinned integrity"):
        write_html(report, tmp_path / "out")
    assert not (mutation_html.cache_dir() / name).exists()


CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")

# Test-only probe: the viewer renders inside nested shadow roots, which --dump-dom does not
# serialize, so this script walks the shadow roots, reads the metrics table's root row and
# copies the numbers into a light-DOM <pre> that --dump-dom prints.
PROBE = """<script>
(() => {
  const deep = (root, sel, out) => {
    root.querySelectorAll(sel).forEach((el) => out.push(el));
    for (const el of root.querySelectorAll("*")) {
      if (el.shadowRoot) deep(el.shadowRoot, sel, out);
    }
    return out;
  };
  const keys = ["totalMutants", "killed", "survived", "timeout", "ignored", "runtimeErrors",
                "noCoverage"];
  const probe = () => {
    const found = {};
    for (const key of keys) {
      const cells = deep(document, `td[aria-describedby="tooltip-${key}"]`, []);
      if (cells.length) found[key] = Number(cells[0].textContent.trim());
    }
    // The two scores are progress bars (the root row's first), titled by their column.
    const bars = '[role="progressbar"][aria-describedby="tooltip-mutationScore"]';
    for (const bar of deep(document, bars, [])) {
      const key = bar.title === "Of covered" ? "mutationScoreBasedOnCoveredCode"
                                             : "mutationScore";
      if (!(key in found)) found[key] = Number(bar.getAttribute("aria-valuenow"));
    }
    if (found.totalMutants === undefined) { setTimeout(probe, 50); return; }
    const pre = document.createElement("pre");
    pre.id = "arib-probe";
    pre.textContent = JSON.stringify(found);
    document.body.appendChild(pre);
  };
  probe();
})();
</script>
"""


def chromium(*args: str, profile: Path) -> subprocess.CompletedProcess[str]:
    assert CHROMIUM is not None
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
             "--disable-component-update", "--disable-sync", "--no-first-run",
             f"--user-data-dir={profile}"]
    return subprocess.run([CHROMIUM, *flags, *args], capture_output=True, text=True,
                          timeout=120)


def viewer_metrics(report: dict[str, Any], tmp_path: Path) -> dict[str, float]:
    """The numbers the viewer's metrics table shows for ``report`` (rendered in Chromium)."""
    page = write_html(report, tmp_path / "html")
    assert (page.parent / mutation_html.BUNDLE_NAME).stat().st_size > 100_000
    probe = page.with_name("probe.html")
    probe.write_text(page.read_text().replace("</body>", PROBE + "</body>"))
    proc = chromium("--virtual-time-budget=5000", "--dump-dom", probe.as_uri(),
                    profile=tmp_path / "profile")
    found = re.search(r'<pre id="arib-probe">(.*?)</pre>', proc.stdout, re.S)
    assert found, f"the viewer rendered no metrics table: {proc.stderr[-2000:]}"
    return json.loads(html.unescape(found.group(1)))  # type: ignore[no-any-return]


NO_VIEWER = CHROMIUM is None or shutil.which("npm") is None


@pytest.mark.slow
@pytest.mark.skipif(NO_VIEWER, reason="chromium or npm is not installed")
def test_viewer_shows_every_mutant(report: dict[str, Any], tmp_path: Path) -> None:
    shown = viewer_metrics(report, tmp_path)
    statuses = [m["status"] for f in report["files"].values() for m in f["mutants"]]
    assert shown["totalMutants"] == len(statuses) == 4
    assert shown["killed"] == statuses.count("Killed") == 2
    assert shown["survived"] == statuses.count("Survived") == 1
    assert shown["ignored"] == statuses.count("Ignored") == 1


@pytest.mark.slow
@pytest.mark.skipif(NO_VIEWER, reason="chromium or npm is not installed")
def test_viewer_shows_the_surveys_scores(specs: dict[str, MutantSpec], tmp_path: Path) -> None:
    from arib.survey.scores import Scores

    statuses = dict(zip(("flip_comparison", "drop_commit", "drop_lock", "handwritten"),
                        (MutantStatus.KILLED, MutantStatus.TIMEOUT, MutantStatus.ERROR,
                         MutantStatus.SURVIVED), strict=True))
    doc = to_mutation_report([result(specs[k], "ARIB-CONC-001", st, (V,), f"{st.value}: x")
                              for k, st in statuses.items()], {m.id: m for m in specs.values()})
    shown = viewer_metrics(doc, tmp_path)
    ours = Scores.of(list(statuses.values()))
    assert (ours.score_all, ours.score_covered) == (0.25, 1 / 3)
    assert shown["mutationScore"] == pytest.approx(100 * ours.score_all, abs=0.01)
    assert shown["mutationScoreBasedOnCoveredCode"] == pytest.approx(100 / 3, abs=0.01)


def test_a_relative_cache_folder_still_receives_the_tarball(report: dict[str, Any],
                                                           tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    # npm runs inside the cache folder: a relative destination would land one folder deeper.
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("ARIB_CACHE_DIR", "relative-cache")
    monkeypatch.setenv("PATH", fake_npm(tmp_path, 'echo "$4" > "$ARIB_SEEN"; exit 1'))
    monkeypatch.setenv("ARIB_SEEN", str(tmp_path / "seen"))
    with pytest.raises(ViewerUnavailableError):
        write_html(report, tmp_path / "out")
    seen = Path((tmp_path / "seen").read_text().strip())
    assert seen.is_absolute() and seen == tmp_path / "relative-cache" / "npm"
