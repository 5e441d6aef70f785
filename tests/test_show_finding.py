"""``python -m arib show 'CHECK on LANE'``: one finding of a bench run."""

from __future__ import annotations

from pathlib import Path

import pytest

from arib.cli.main import main
from arib.ground.errors import UnknownNameError
from arib.reports.show import find_finding, is_finding_id
from arib.runs.results import read_results

RESULTS = Path(__file__).parents[1] / "results"


def _violated_run() -> tuple[Path, dict]:
    for path in sorted(RESULTS.glob("*-openai-agents-0.24.0.json"), reverse=True):
        for finding in read_results(path)["findings"]:
            if finding["verdict"] == "violated" and finding["samples"]:
                return path, finding
    pytest.skip("no committed run with a violated finding")


def test_a_finding_id_is_a_cell() -> None:
    assert is_finding_id("ARIB-CONC-001 on sqlite-file")
    assert not is_finding_id("m-0123456789ab") and not is_finding_id("reference_lost_update")


def test_shows_a_finding_with_its_evidence(capsys: pytest.CaptureFixture[str]) -> None:
    path, finding = _violated_run()
    key = f"{finding['invariant_id']} on {finding['target']}"
    assert main(["show", key, "--result", str(path)]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"{key}: violated ({path})")
    assert f"{finding['violating_trials']} of {finding['trials']} violated" in out
    assert f"  sample:    {finding['samples'][0]}" in out
    if finding.get("replay"):
        assert f"  replay:    {finding['replay']}" in out


def test_an_unknown_finding_names_the_form(capsys: pytest.CaptureFixture[str]) -> None:
    path, _ = _violated_run()
    with pytest.raises(UnknownNameError, match="no finding 'ARIB-NOPE-001 on reference'"):
        find_finding("ARIB-NOPE-001 on reference", path)
    assert main(["show", "ARIB-NOPE-001 on reference", "--result", str(path)]) == 2
    assert "a finding id is a measured cell" in capsys.readouterr().err
