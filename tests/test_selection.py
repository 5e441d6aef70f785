"""Empty selections are refused (one line: the value, the rule, the fix; exit 2), never read
as "everything", on every command that takes one."""

from __future__ import annotations

import pytest

from arib.cli.main import main
from arib.ground.errors import UsageError
from arib.runs.selection import check_list, empty_element

# Every command and option that takes a selection, with the other arguments it needs.
SELECTIONS = [
    (["bench", "--checks", "{}"], "--checks"),
    (["bench", "--lanes", "{}"], "--lanes"),
    (["survey", "--checks", "{}"], "--checks"),
    (["survey", "--lanes", "{}"], "--lanes"),
    (["official", "--lanes", "{}"], "--lanes"),
    (["probe", "--lanes", "{}"], "--lanes"),
    (["parity", "check", "--lanes", "{}"], "--lanes"),
    (["parity", "update", "--lanes", "{}"], "--lanes"),
    (["parity", "check", "--loops", "{}"], "--loops"),
]
BAD = ["", " ", ",", "ARIB-CONC-001,,ARIB-POP-001", "ARIB-CONC-001,", ",ARIB-CONC-001"]


@pytest.mark.parametrize("value", BAD)
@pytest.mark.parametrize(("argv", "option"), SELECTIONS,
                         ids=[" ".join(a[:-2] + [o]) for a, o in SELECTIONS])
def test_an_empty_selection_or_element_is_refused_before_anything_runs(argv, option, value,
                                                                        capsys):
    code = main([a.replace("{}", value) for a in argv])
    err = capsys.readouterr().err.strip()
    assert code == 2
    assert err.count("\n") == 0  # one line
    assert err.startswith(f"error: {option} {value!r} ")
    assert "the rule: a selection names one or more" in err and "fix: e.g. " in err


@pytest.mark.parametrize(("argv", "option"), [
    (["run", "--check", "", "--lane", "sqlite-file"], "--check"),
    (["run", "--check", "ARIB-CONC-001", "--lane", " "], "--lane"),
    (["admit", "ARIB-CONC-001", ""], "admit"),
])
def test_one_empty_name_is_refused(argv, option, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and err.startswith(f"error: {option} ")
    assert "names no" in err and "fix: e.g." in err


def test_the_position_of_the_first_empty_element():
    assert empty_element("a,b") is None
    assert empty_element("") == 1
    assert empty_element("a,,b") == 2
    assert empty_element("a,b, ") == 3


def test_a_whole_list_passes_unchanged_and_a_bad_one_names_value_rule_and_fix():
    assert check_list("--lanes", "all", "lane", "x") == "all"
    assert check_list("--lanes", "a, b", "lane", "x") == "a, b"
    with pytest.raises(UsageError, match=r"--lanes 'a,,b' has an empty element \(item 2 of 3\)"):
        check_list("--lanes", "a,,b", "lane", "x")


def test_the_python_api_refuses_an_empty_element_too():
    from arib.api.run import select_checks

    with pytest.raises(UsageError, match="empty element"):
        select_checks("ARIB-CONC-001,,ARIB-POP-001")
    with pytest.raises(UsageError, match="names no check id"):
        select_checks("")
