"""Fisher's exact test on two runs' violating trials, against tables computed by hand."""

from __future__ import annotations

import math

import pytest

from arib.checks.common import RATE_TRIALS
from arib.ground.errors import UsageError
from arib.runs.significance import ALPHA, fisher_exact, flip_trials, format_p, least_p

# (baseline violating, trials, run violating, trials) -> the two-sided p-value, by hand: with
# K violating trials in all and N trials, the baseline's x violating has weight
# comb(K, x) * comb(N - K, n_baseline - x) out of comb(N, n_baseline); p sums the weights no
# larger than the observed one.
HAND = [
    # K=3, N=8: weights 5, 30, 30, 5 of 70; observed x=0 (5): tables x=0 and x=3
    ((0, 4, 3, 4), 10 / 70),
    # complete separation, 10 a side: the two extreme tables, each 1 of comb(20, 10)
    ((0, 10, 10, 10), 2 / math.comb(20, 10)),
    # K=1, N=4: x=0 and x=1 weigh 2 each of 4; both count
    ((1, 2, 0, 2), 1.0),
    ((0, 2, 1, 2), 1.0),
    # one trial a side: the two tables weigh 1 each of 2
    ((0, 1, 1, 1), 1.0),
    ((0, 3, 3, 3), 2 / 20),
    ((0, 4, 4, 4), 2 / 70),
    ((0, 5, 5, 5), 2 / 252),
    # K=7, N=20: x=0 and x=7 weigh comb(13, 10) = comb(13, 3) = 286 each, every other more
    ((0, 10, 7, 10), 572 / math.comb(20, 10)),
    # unequal trial counts: K=1, N=11: x=1 weighs 1, x=0 weighs 10, of 11
    ((1, 1, 0, 10), 1 / 11),
    # equal tables, and rates 0 or 1 on both sides: one table only, or the observed is likeliest
    ((2, 5, 2, 5), 1.0),
    ((0, 10, 0, 4), 1.0),
    ((3, 3, 3, 3), 1.0),
    ((7, 10, 7, 10), 1.0),
]


@pytest.mark.parametrize(("table", "expected"), HAND)
def test_p_values_match_tables_computed_by_hand(table, expected):
    result = fisher_exact(*table)
    assert result.p_value == pytest.approx(expected, rel=1e-12)
    assert result.significant is (expected < ALPHA)


@pytest.mark.parametrize(("table", "_"), HAND)
def test_the_test_is_symmetric_in_the_sides_and_in_violating_or_not(table, _):
    a, n, b, m = table
    p = fisher_exact(a, n, b, m).p_value
    assert fisher_exact(b, m, a, n).p_value == pytest.approx(p, rel=1e-12)
    assert fisher_exact(n - a, n, m - b, m).p_value == pytest.approx(p, rel=1e-12)


def test_the_result_shows_both_rates_and_the_p_value():
    result = fisher_exact(0, 4, 1, 4)
    assert result.describe() == "rate 0/4 -> 1/4, p=1.00, not significant"
    assert (result.rate_before, result.rate_after, result.alpha) == (0.0, 0.25, ALPHA)
    flip = fisher_exact(0, 10, 10, 10)
    assert flip.describe() == "rate 0/10 -> 10/10, p=1.1e-05, significant at alpha 0.05"
    assert flip.to_json() == {"test": "fisher-exact-two-sided", "before": [0, 10],
                              "after": [10, 10], "p_value": flip.p_value, "alpha": 0.05,
                              "significant": True}
    assert fisher_exact(0, 4, 3, 4).describe() == "rate 0/4 -> 3/4, p=0.14, not significant"
    assert format_p(0.0286) == "0.03" and format_p(0.0031) == "3.1e-03"


def test_a_stricter_alpha_is_applied():
    assert fisher_exact(0, 4, 4, 4).significant  # p = 0.029
    assert not fisher_exact(0, 4, 4, 4, alpha=0.01).significant


def test_least_p_is_the_smallest_p_any_outcome_can_give():
    for n in range(1, 7):
        for m in range(1, 7):
            every = [fisher_exact(a, n, b, m).p_value
                     for a in range(n + 1) for b in range(m + 1)]
            assert least_p(n, m) == pytest.approx(min(every), rel=1e-12), (n, m)
    assert least_p(1, 1) == 1.0 and least_p(3, 3) == pytest.approx(0.1)
    assert least_p(4, 4) < ALPHA <= least_p(3, 3)  # from 4 trials a side a flip can count
    assert flip_trials() == 4 and flip_trials(0.01) == 5
    # and the checks whose races are seen at a rate run that many (checks/common.py)
    assert RATE_TRIALS == flip_trials()
    assert not fisher_exact(0, 1, 1, 1).can_be_significant
    assert fisher_exact(0, 4, 1, 4).can_be_significant


@pytest.mark.parametrize(("table", "named"), [((1, 0, 0, 1), "baseline: violating trials 1 of 0"),
                                               ((3, 2, 0, 1), "baseline: violating trials 3 of 2"),
                                               ((0, 1, -1, 1), "run: violating trials -1 of 1")])
def test_an_impossible_outcome_is_refused_naming_it(table, named):
    with pytest.raises(UsageError, match=f"^{named} is no outcome"):
        fisher_exact(*table)
