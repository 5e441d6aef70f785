"""The HTML kill matrix: where the viewer is cached, failing fast, and the ``html`` command."""

from __future__ import annotations

import io
import json
import os
import shutil
import tarfile
from pathlib import Path
from typing import Any

import pytest

from arib.cli.main import main
from arib.ground.errors import ResultsError, UsageError
from arib.ground.model import MutantResult, MutantStatus, Verdict
from arib.mutants.registry import get_mutant
from arib.reports import html as mutation_html
from arib.reports.html import ViewerUnavailableError, write_html, write_html_from_file
from arib.reports.mutation import to_mutation_report

TARBALL = f"{mutation_html.VIEWER_PACKAGE}-{mutation_html.VIEWER_VERSION}.tgz"


@pytest.fixture(scope="module")
def report() -> dict[str, Any]:
    spec = get_mutant("sqlite_drops_every_tenth_append")
    result = MutantResult("ARIB-CONC-001", spec.id, spec.kind, spec.target, spec.description,
                          MutantStatus.KILLED, (Verdict.VIOLATED,), evidence="lost 5",
                          duration_s=0.1)
    return to_mutation_report([result], {spec.id: spec})


def fake_viewer() -> bytes:
    """A tarball with the two members the page needs (not the real viewer)."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for name, body in ((mutation_html.BUNDLE_MEMBER, b"/* bundle */"),
                           (mutation_html.LICENSE_MEMBER, b"MIT")):
            info = tarfile.TarInfo(name)
            info.size = len(body)
            tar.addfile(info, io.BytesIO(body))
    return buffer.getvalue()


@pytest.fixture
def fake_npm(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An ``npm`` that does what ``npm pack --pack-destination DIR`` does: it writes the
    tarball to DIR, read relative to its own working directory (the log lists each call)."""
    data = fake_viewer()
    source = tmp_path / "fake-viewer.tgz"
    source.write_bytes(data)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    log = tmp_path / "npm.log"
    npm = bin_dir / "npm"
    npm.write_text(f'#!/bin/sh\necho "$PWD $*" >> "{log}"\ncp "{source}" "$4/{TARBALL}"\n')
    npm.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setattr(mutation_html, "VIEWER_INTEGRITY", mutation_html._integrity(data))
    return log


def test_a_relative_cache_dir_is_made_absolute_before_npm_runs_inside_it(
    report: dict[str, Any], tmp_path: Path, fake_npm: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    monkeypatch.setenv("ARIB_CACHE_DIR", "rel-cache")
    assert mutation_html.cache_dir() == work / "rel-cache" / "npm"
    page = write_html(report, Path("html"))
    assert (work / "rel-cache" / "npm" / TARBALL).is_file()
    assert (work / "html" / mutation_html.BUNDLE_NAME).read_bytes() == b"/* bundle */"
    assert page.read_text().count("mutation-test-report-app") >= 2
    (call,) = fake_npm.read_text().splitlines()
    cwd, *args = call.split(" ")
    assert cwd == str(work / "rel-cache" / "npm")
    assert args[args.index("--pack-destination") + 1] == str(work / "rel-cache" / "npm")
    # Fetched once: a second report reuses the cached tarball and npm is not run again.
    write_html(report, Path("html2"))
    assert len(fake_npm.read_text().splitlines()) == 1


def test_html_command_builds_the_page_from_a_survey_json(
    report: dict[str, Any], tmp_path: Path, fake_npm: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "mutation-report.json"
    source.write_text(json.dumps(report))
    assert main(["html", str(source), "--out", str(tmp_path / "out")]) == 0
    page = tmp_path / "out" / "report.html"
    assert f"wrote {page}" in capsys.readouterr().out
    assert json.dumps(report["files"], ensure_ascii=False, separators=(",", ":"))[:40] in (
        page.read_text())


def test_html_command_refuses_a_corrupt_or_foreign_json(tmp_path: Path, fake_npm: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(ResultsError, match="cannot read mutation report .*bad.json"):
        write_html_from_file(bad, tmp_path / "out")
    bad.write_text("[1, 2]")
    with pytest.raises(ResultsError, match="holds a JSON list"):
        write_html_from_file(bad, tmp_path / "out")
    bad.write_text(json.dumps({"schemaVersion": "2", "files": {}}))
    with pytest.raises(ResultsError, match="mutation report fails"):
        write_html_from_file(bad, tmp_path / "out")
    assert main(["html", str(tmp_path / "missing.json"), "--out", str(tmp_path / "o")]) == 4
    assert not fake_npm.exists()  # a bad input never reaches npm
    assert not (tmp_path / "o").exists() and not (tmp_path / "out").exists()


def test_an_unusable_out_folder_is_a_usage_error(tmp_path: Path) -> None:
    a_file = tmp_path / "file"
    a_file.write_text("x")
    with pytest.raises(UsageError, match="cannot be created"):
        mutation_html.check_out_dir(a_file / "html")


def test_survey_fetches_the_viewer_before_it_measures_anything(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(mutation_html.shutil, "which", lambda name: None)
    ran: list[str] = []
    monkeypatch.setattr("arib.survey.engine.survey", lambda config: ran.append("survey") or [])
    monkeypatch.setattr("arib.ground.services.ServiceManager.__enter__",
                        lambda self: ran.append("services") or self)
    code = main(["survey", "--lanes", "sqlite-file", "--html", str(tmp_path / "h")])
    assert code == ViewerUnavailableError.exit_code
    assert ran == []
    assert "`npm` is not on PATH" in capsys.readouterr().err


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("npm") is None, reason="npm is not installed")
def test_the_real_viewer_is_fetched_from_npm_into_a_relative_cache(
    report: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("ARIB_CACHE_DIR", "relative-cache")
    page = write_html(report, tmp_path / "html")
    tarball = tmp_path / "relative-cache" / "npm" / TARBALL
    assert mutation_html._integrity(tarball.read_bytes()) == mutation_html.VIEWER_INTEGRITY
    assert (page.parent / mutation_html.BUNDLE_NAME).stat().st_size > 100_000
