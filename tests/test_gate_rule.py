"""The regression gate's rule for a cell whose violating trials changed: every branch."""

from __future__ import annotations

import pytest

from arib.runs.gate_rule import Basis, judge

SEEDS = [11, 12, 13, 14, 15, 16, 17, 18, 19, 20]


def finding(violating, trials, *, control=None, seeds=None, params=None, verdict=None):
    """A cell's finding, as a result file holds it (the fields the rule reads)."""
    out = {"verdict": verdict or ("violated" if violating else "held"),
           "violating_trials": violating, "trials": trials,
           "seeds": list(seeds if seeds is not None else SEEDS[:trials]),
           "params": params if params is not None else {"trials": trials}}
    if control is not None:
        out["control"] = {"decisions": control[0], "controlled": control[1]}
    return out


FULL = (120, 120)  # every schedule decision controlled
PART = (120, 117)  # three decisions left to a thread or a server


def test_an_error_or_an_abstention_has_no_rate():
    assert judge(finding(0, 3, verdict="error"), finding(1, 3)) is None
    assert judge(finding(0, 3), finding(0, 3, verdict="not_applicable")) is None


def test_replayed_cells_are_exact_even_where_fisher_sees_nothing():
    # fully controlled on both sides, same seeds and parameters: each trial replays
    j = judge(finding(3, 10, control=FULL), finding(2, 10, control=FULL))
    assert j.basis is Basis.REPLAYED and j.gates
    assert j.test.p_value == 1.0  # Fisher alone would have passed it
    assert j.describe() == ("rate 3/10 -> 2/10, judged exactly: every schedule decision of both "
                            "runs controlled, the same trial seeds: each trial replays")
    flip = judge(finding(0, 1, control=FULL), finding(1, 1, control=FULL))
    assert flip.basis is Basis.REPLAYED and flip.gates
    same = judge(finding(2, 3, control=FULL), finding(2, 3, control=FULL))
    assert same.basis is Basis.REPLAYED and not same.gates
    assert same.describe().startswith("rate 2/3 -> 2/3, the same rate (")


@pytest.mark.parametrize("other", [
    finding(2, 10, control=FULL, seeds=[s + 1 for s in SEEDS]),  # another run seed
    finding(2, 10, control=FULL, params={"trials": 10, "writers": 8}),  # other parameters
    finding(2, 10),  # not scheduled (a file from before the scheduler)
    finding(2, 10, control=PART),  # a decision left uncontrolled
])
def test_not_replayed_when_seeds_parameters_or_control_differ(other):
    j = judge(finding(3, 10, control=FULL), other)
    assert j.basis is Basis.RACY  # and its trials disagreed, so it is judged by rate
    assert not j.gates


def test_racy_by_disagreeing_trials_gates_only_when_significant():
    j = judge(finding(0, 4), finding(1, 4))
    assert j.basis is Basis.RACY and not j.gates
    assert j.describe() == ("rate 0/4 -> 1/4, p=1.00, not significant (racy: the run's trials "
                            "disagreed, 1 of 4 violated)")
    j = judge(finding(0, 4), finding(3, 4))  # the NET-001: held 0/4, then 3/4
    assert j.basis is Basis.RACY and not j.gates and j.test.p_value == pytest.approx(1 / 7)
    j = judge(finding(0, 10), finding(7, 10))
    assert j.basis is Basis.RACY and j.gates
    assert j.describe().startswith("rate 0/10 -> 7/10, p=3.1e-03, significant at alpha 0.05")
    # a count change of a cell violated on both sides: 10/10 then 2/10 is significant
    j = judge(finding(10, 10), finding(2, 10))
    assert j.basis is Basis.RACY and j.gates
    assert "racy: the run's trials disagreed, 2 of 10 violated" in j.describe()
    j = judge(finding(7, 10), finding(8, 10))  # CLEAR-001 on PostgreSQL, same version
    assert j.basis is Basis.RACY and not j.gates
    assert "the baseline's trials disagreed, 7 of 10 violated; the run's trials disagreed" \
        in j.describe()


def test_racy_by_uncontrolled_decisions_is_judged_by_rate_and_says_when_it_cannot_tell():
    j = judge(finding(0, 2, control=PART), finding(1, 2, control=PART))
    assert j.basis is Basis.RACY and not j.gates
    assert j.describe() == ("rate 0/2 -> 1/2, p=1.00, not significant (racy: the baseline left "
                            "3 of 120 schedule decisions uncontrolled; the run's trials "
                            "disagreed, 1 of 2 violated; the run left 3 of 120 schedule "
                            "decisions uncontrolled; with 2 and 2 trials no change can be "
                            "significant)")
    j = judge(finding(0, 4, control=FULL), finding(4, 4, control=PART))  # a full flip, 4 a side
    assert j.basis is Basis.RACY and j.gates and j.test.significant
    assert "significant at alpha 0.05 (racy: the run left 3 of 120" in j.describe()
    j = judge(finding(1, 4, control=PART), finding(4, 4, control=PART))
    assert j.basis is Basis.RACY and not j.gates  # p = 0.43: not a complete flip


def test_a_complete_flip_too_few_trials_can_test_gates_exactly():
    """0/1 -> 1/1 of a racy cell: no outcome of 1 and 1 trials can be significant, so a flip
    of every trial is judged exactly instead of passing unseen."""
    j = judge(finding(0, 1, control=PART), finding(1, 1, control=PART))
    assert j.basis is Basis.RACY and j.complete_flip and not j.test.significant and j.gates
    assert j.describe() == ("rate 0/1 -> 1/1, p=1.00, judged exactly: every trial changed and "
                            "with 1 and 1 trials no change can be significant (racy: the "
                            "baseline left 3 of 120 schedule decisions uncontrolled; the run "
                            "left 3 of 120 schedule decisions uncontrolled; 4 trials a side "
                            "would let Fisher's exact test judge it)")
    back = judge(finding(3, 3, control=PART), finding(0, 3, control=PART))  # p = 0.10
    assert back.gates and "judged exactly: every trial changed" in back.describe()


def test_agreed_cells_are_exact_a_flip_gates_with_one_trial_a_side():
    j = judge(finding(0, 1), finding(1, 1))  # a deterministic check, held then violated
    assert j.basis is Basis.AGREED and j.gates
    assert j.describe() == ("rate 0/1 -> 1/1, judged exactly: every trial of each run agreed, "
                            "no schedule decision uncontrolled, no server unscheduled")
    back = judge(finding(3, 3), finding(0, 3))
    assert back.basis is Basis.AGREED and back.gates
    scheduled = judge(finding(0, 2, control=FULL, seeds=[1, 2]), finding(2, 2, control=FULL))
    assert scheduled.basis is Basis.AGREED and scheduled.gates  # other seeds, all controlled


def test_unscheduled_against_a_server_is_racy_though_every_trial_agreed():
    """A check run without the scheduler on a lane with a server: nothing ordered the server's
    work against the check's, so a flip of agreeing trials is a rate, judged by the test."""
    served = {"service_version": "15.18"}
    j = judge({**finding(0, 4), **served}, {**finding(4, 4), **served})
    assert j.basis is Basis.RACY and j.gates and j.test.significant  # p = 0.029
    assert j.why == ("racy: the baseline ran unscheduled against a server (15.18), whose timing "
                     "nothing controlled; the run ran unscheduled against a server (15.18), "
                     "whose timing nothing controlled")
    j = judge({**finding(0, 2), **served}, finding(2, 2))  # one side is enough
    assert j.basis is Basis.RACY and j.complete_flip and not j.test.significant and j.gates
    assert j.why == "racy: the baseline ran unscheduled against a server (15.18), whose timing " \
                    "nothing controlled"
    # Scheduled, the scheduler's own count of uncontrolled decisions decides; no server: agreed.
    assert judge({**finding(0, 2, control=FULL), **served},
                 {**finding(2, 2, control=FULL), **served}).basis is Basis.REPLAYED
    assert judge({**finding(0, 2), "service_version": None},
                 finding(2, 2)).basis is Basis.AGREED


def test_agreed_cells_whose_trial_count_alone_changed_do_not_gate():
    j = judge(finding(0, 10), finding(0, 4))
    assert j.basis is Basis.AGREED and not j.gates
    assert j.describe().startswith("rate 0/10 -> 0/4, the same rate (every trial of each run")
    assert not judge(finding(3, 3), finding(2, 2)).gates


def test_the_judgement_in_json():
    j = judge(finding(0, 4), finding(1, 4))
    assert j.to_json() == {"basis": "racy", "why": "racy: the run's trials disagreed, 1 of 4 "
                                                    "violated",
                           "gates": False, "rate_test": j.test.to_json()}
