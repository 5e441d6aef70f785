"""``python -m arib show``: one mutant's diff, lane, status and killers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from arib.cli.main import main
from arib.ground.errors import UnknownNameError
from arib.mutants.pool import generated_for_lane
from arib.reports.show import describe, find_mutant


def test_a_generated_mutant_shows_its_survey_status_and_killers(tmp_path: Path) -> None:
    mutant = generated_for_lane("reference").mutants[0]
    (tmp_path / "reference.json").write_text(json.dumps({"outcomes": [
        {"id": mutant.id, "status": "killed", "checks": {"ARIB-CONC-001": "killed",
                                                         "ARIB-POP-001": "survived"}}]}))
    text = describe(mutant, tmp_path)
    assert text.startswith(f"{mutant.id} (generated)")
    assert f"operator: {mutant.operator}" in text
    assert "status:   killed in" in text and "killed by: ARIB-CONC-001\n" in text
    assert mutant.diff().rstrip() in text


def test_a_mutant_missing_from_the_survey_says_so(tmp_path: Path) -> None:
    mutant = generated_for_lane("reference").mutants[0]
    assert "not surveyed" in describe(mutant, tmp_path)


def test_a_hand_written_mutant_names_its_paired_checks(capsys: pytest.CaptureFixture[str],
                                                      tmp_path: Path) -> None:
    assert main(["show", "reference_lost_update", "--survey", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "(handwritten)" in out and "paired with: ARIB-CONC-001" in out
    assert "judged by admission" in out


def test_an_unknown_mutant_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(UnknownNameError, match="unknown mutant 'm-000000000000'"):
        find_mutant("m-000000000000", ("reference",))
    assert main(["show", "m-000000000000", "--lane", "reference"]) == 2
    assert "unknown mutant 'm-000000000000'" in capsys.readouterr().err


@pytest.mark.slow
def test_run_installs_a_generated_mutant_by_id(capsys: pytest.CaptureFixture[str]) -> None:
    (mutant,) = [m for m in generated_for_lane("reference").mutants
                 if m.qualname == "ReferenceSession.add_items" and m.operator == "early_return"]
    code = main(["run", "--check", "ARIB-CONC-001", "--lane", "reference", "--mutant",
                 mutant.id, "--param", "ARIB-CONC-001.trials=1", "--json", "-"])
    finding = json.loads(capsys.readouterr().out)
    assert code == 1 and finding["verdict"] == "violated"
    assert finding["mutant"]["status"] == "killed" and finding["mutant"]["id"] == mutant.id
