"""pytest plugin (entry point ``pytest11``): each invariant as its own test of your store.

```python
@pytest.mark.arib(my_store)            # an arib.api.lane; a bare factory as lane(factory)
def test_my_store(arib_report):
    '''One item per check: test_my_store[ARIB-CONC-001], ...; fails with the report.'''
```

With no checks named, the items are the checks the store's capabilities call for
(``arib.api.capability``: found on one instance the factory makes at collection); a default
check whose need the object does not meet is a skipped item naming the need, and one whose
capability probe raised is an error at setup, with the cause.

``@pytest.mark.arib(my_store, survey=80)`` adds one item, ``test_my_store[survey]``: the survey
of the store's own code under the same checks (``arib.api.survey_store``), failing when the
checks kill less than 80 % of the covered mutants; ``--arib-survey PCT`` adds it to every
marked test.

Options: ``--arib-seed N``, ``--arib-trials N``, ``--arib-checks ID,ID``, ``--arib-survey PCT``,
``--arib-trial-seed N`` (rerun one trial; a failing item prints the pytest command that does it)
and ``--arib-workers N``. The items of one marked test are judged together by the first of them
to run, each check in its own forked child, up to ``--arib-workers`` (default: the cores) at
once; under pytest-xdist (``-n auto``) each item is judged alone in the worker that runs it.
The plugin is inert in a run with no ``arib`` marker: it imports nothing of the harness until a
marked test is collected.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Generator, Hashable
from typing import Any

import pytest

MARKER = "arib"
_MARKER_KWARGS = ("checks", "params", "seed", "trials", "timeout_s", "workers", "survey")
SURVEY_ITEM = "survey"  # the id of the item that surveys the marked store


def pytest_addoption(parser: pytest.Parser) -> None:
    """The seed, the trials and the checks of every @pytest.mark.arib test."""
    group = parser.getgroup("arib", "session store invariants (@pytest.mark.arib)")
    group.addoption("--arib-seed", type=int, default=None, metavar="N",
                    help="run seed of every arib test (default: the marker's, else 0)")
    group.addoption("--arib-trials", type=int, default=None, metavar="N",
                    help="trials of every check (default: each check's own)")
    group.addoption("--arib-checks", default=None, metavar="IDS",
                    help="comma-separated check ids, instead of the marker's or the default set")
    group.addoption("--arib-survey", type=float, default=None, metavar="PCT",
                    help="add a [survey] item to every arib test: mutate the store's own code "
                         "and fail when the checks kill less than PCT %% of the covered "
                         "mutants (default: the marker's survey=, else no survey)")
    group.addoption("--arib-trial-seed", type=int, default=None, metavar="N",
                    help="run only the trial of this seed (what a failing item's replay "
                         "command passes)")
    group.addoption("--arib-workers", type=int, default=None, metavar="N",
                    help="checks judged at once for one marked test (default: the marker's "
                         "workers=, else the cores); under pytest-xdist each item is judged "
                         "alone in its worker")


def pytest_configure(config: pytest.Config) -> None:
    """Register the marker (so --strict-markers accepts it)."""
    config.addinivalue_line(
        "markers", f"{MARKER}(factory, checks=None, params=None, seed=0, trials=None, "
        "survey=None): judge the store the factory makes, one test item per invariant "
        "(arib.api.validate); survey=PCT adds an item surveying the store's own code")


def _marker(node: Any) -> pytest.Mark:
    mark = node.get_closest_marker(MARKER)
    if mark is None or len(mark.args) != 1 or set(mark.kwargs) - set(_MARKER_KWARGS):
        raise pytest.UsageError(
            f"{node.nodeid}: @pytest.mark.{MARKER} takes one factory and the keywords "
            f"{', '.join(_MARKER_KWARGS)}; got {mark!r}")
    return mark


_PLANS: dict[tuple[Any, Any], Any] = {}


def _plan(config: pytest.Config, mark: pytest.Mark) -> Any:
    """The arib.api.capability.Plan of a marked test (probed once per factory and checks)."""
    from arib.api.capability import plan
    from arib.api.lane import as_lane
    from arib.api.run import select_checks

    chosen = config.getoption("--arib-checks") or mark.kwargs.get("checks")
    # by identity: a factory need not be hashable (the marker keeps it alive)
    key = (id(mark.args[0]), chosen if chosen is None or isinstance(chosen, str)
           else tuple(chosen))
    if key not in _PLANS:
        checks = None if chosen is None else select_checks(chosen)
        _PLANS[key] = plan(as_lane(mark.args[0]), checks)
    return _PLANS[key]


def _check_ids(config: pytest.Config, mark: pytest.Mark) -> list[str]:
    """The items of a marked test: the checks that run, then those that need what the object
    lacks or whose probe raised (each reported by its item); a check that is not in
    DEFAULT_CHECKS gets no item."""
    from arib.api.capability import OUT_OF_REACH

    made = _plan(config, mark)
    order = [c.id for c in made.run]
    order += [i for i, why in made.skipped.items() if why != OUT_OF_REACH] + list(made.errors)
    return order


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Parametrize a marked test over its checks: one item per invariant."""
    if metafunc.definition.get_closest_marker(MARKER) is None:
        return
    mark = _marker(metafunc.definition)
    if "arib_report" not in metafunc.fixturenames:
        raise pytest.UsageError(
            f"{metafunc.definition.nodeid} is marked @pytest.mark.{MARKER} but takes no "
            f"'arib_report' argument; add it: def {metafunc.function.__name__}(arib_report)")
    ids = _check_ids(metafunc.config, mark)
    from arib.api.run import select_checks

    # keyed by a check the marker itself runs (--arib-checks may narrow the run further)
    own = {check.id for check in select_checks(mark.kwargs.get("checks"))}
    stray = sorted(set(mark.kwargs.get("params") or {}) - own)
    if stray:  # a parameter of a check that does not run would be dropped without a word
        raise pytest.UsageError(
            f"{metafunc.definition.nodeid}: @pytest.mark.{MARKER}(params=...) names "
            f"{stray[0]!r}, which is not among the checks this test runs "
            f"({', '.join(sorted(own))}); "
            f"the rule: params is keyed by the id of a check that runs; fix the key, or add "
            f"the check to checks=")
    if _survey_under(metafunc.config, mark) is not None:
        ids = [*ids, SURVEY_ITEM]
    metafunc.parametrize("arib_check", ids, ids=ids)


def _survey_under(config: pytest.Config, mark: pytest.Mark) -> float | None:
    """The survey's threshold in percent: --arib-survey, else the marker's survey=, else None."""
    given = config.getoption("--arib-survey")
    value = given if given is not None else mark.kwargs.get("survey")
    if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))
                              or not 0 <= value <= 100):
        raise pytest.UsageError(
            f"@pytest.mark.{MARKER}(survey={value!r}): the rule: survey is the least covered "
            f"score in percent, 0 to 100; fix: e.g. survey=80")
    return None if value is None else float(value)


@pytest.fixture
def arib_check() -> str:
    """The check id of this item; set by @pytest.mark.arib."""
    raise pytest.UsageError("the arib_check and arib_report fixtures need "
                            "@pytest.mark.arib(factory) on the test")


# Per call a marked test makes, the keywords it takes from the marker and those the command
# line (--arib-<keyword>) sets over the marker's; the survey takes only the seed from it.
_OPTIONS = {"validate": (("params", "seed", "trials", "timeout_s", "workers"),
                         ("seed", "trials", "trial_seed", "workers")),
            "survey": (("params", "seed", "timeout_s", "workers"), ("seed",))}


def _options(config: pytest.Config, mark: pytest.Mark, call: str) -> dict[str, Any]:
    """The keywords of ``call`` ("validate": arib.api.validate, "survey":
    arib.api.survey_store) for a marked test: the marker's, then the command line's; workers
    default to the cores, params to none."""
    from_marker, from_command_line = _OPTIONS[call]
    options = {k: v for k, v in mark.kwargs.items() if k in from_marker}
    for name in from_command_line:
        given = config.getoption(f"--arib-{name.replace('_', '-')}")
        if given is not None:
            options[name] = given
    options.setdefault("workers", os.cpu_count() or 1)
    options["params"] = dict(options.get("params") or {})
    return options


def _group(item: pytest.Item) -> Hashable:
    """What items share one validate() call: the same test function, with the same
    parameters besides its check."""
    spec = getattr(item, "callspec", None)
    others = {k: repr(v) for k, v in spec.params.items() if k != "arib_check"} if spec else {}
    return (item.parent.nodeid if item.parent else "", getattr(item, "originalname", item.name),
            tuple(sorted(others.items())))


def _check_of(item: pytest.Item) -> str | None:
    """The check id an item of a marked test judges; None for any other item."""
    spec = getattr(item, "callspec", None)
    return spec.params.get("arib_check") if spec is not None else None


def _judge_group(request: pytest.FixtureRequest, mark: pytest.Mark, check: str) -> Any:
    """The Report of every check of this item's group, judged in one validate() call (its
    checks run at once, up to the workers), made once per session and group; under
    pytest-xdist, of this item's check alone."""
    from arib.api import validate

    config = request.config
    options = _options(config, mark, "validate")
    if hasattr(config, "workerinput"):  # an xdist worker runs a share of the items
        checks = [check]
    else:
        group = _group(request.node)
        made = _plan(config, mark)  # a check skipped or errored at setup is not judged
        found = [_check_of(i) for i in request.session.items if _group(i) == group]
        checks = list(dict.fromkeys(c for c in found if c is not None and c != SURVEY_ITEM
                                    and c not in made.skipped and c not in made.errors))
    cache: dict[Hashable, Any] = config.stash.setdefault(_REPORTS, {})
    key = (_group(request.node), tuple(checks))
    if check not in checks or key not in cache:
        chosen = checks if check in checks else [check]
        options["params"] = {k: v for k, v in options["params"].items() if k in chosen}
        cache[key] = validate(mark.args[0], checks=chosen, **options)
    return cache[key]


_REPORTS = pytest.StashKey[dict]()


@pytest.fixture
def arib_report(request: pytest.FixtureRequest, arib_check: str) -> Any:
    """The arib.api.Report of this item's check on the marker's factory (an
    arib.api.StoreSurvey for the [survey] item)."""
    import dataclasses

    mark = _marker(request.node)
    if arib_check == SURVEY_ITEM:
        return _survey(request.config, mark)
    made = _plan(request.config, mark)
    if arib_check in made.skipped:
        pytest.skip(f"not run: {made.skipped[arib_check]}")
    if arib_check in made.errors:
        pytest.fail(f"{arib_check}: {made.errors[arib_check]}", pytrace=False)
    report = _judge_group(request, mark, arib_check)
    return dataclasses.replace(
        report, findings=tuple(f for f in report.findings if f.invariant_id == arib_check),
        replays={k: v for k, v in report.replays.items() if k == arib_check})


def replay_command(item: pytest.Item, report: Any) -> str:
    """The pytest command that reruns this item's failing trial alone: its node id, the run
    seed and the seed of the first violating trial (none for an error with no trial)."""
    config = item.config
    words = ["python", "-m", "pytest", item.nodeid, "--arib-seed", str(report.seed)]
    recorded = shlex.split(report.findings[0].replay or "") if report.findings else []
    if "--trial-seed" in recorded:
        words += ["--arib-trial-seed", recorded[recorded.index("--trial-seed") + 1]]
    trials = config.getoption("--arib-trials")
    if trials is not None:
        words += ["--arib-trials", str(trials)]
    return shlex.join(words)


def _survey(config: pytest.Config, mark: pytest.Mark) -> Any:
    """The survey of the marked store under the checks its items run."""
    from arib.api import survey_store

    return survey_store(mark.args[0], checks=_check_ids(config, mark),
                        fail_under=_survey_under(config, mark),
                        **_options(config, mark, "survey"))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, Any, Any]:
    """Fail a marked item whose check did not pass, with the readable report only; skip one
    whose check does not apply to the store (not_applicable), with the reason."""
    result = yield
    report = getattr(item, "funcargs", {}).get("arib_report")
    if report is None:
        return result
    verdicts = {finding.verdict.value for finding in getattr(report, "findings", ())}
    if verdicts == {"not_applicable"}:
        pytest.skip(f"not applicable: {str(report).strip()}")
    if not report.passed:  # a survey item's report has no trial to replay
        replay = (f"\n\nreplay this trial: {replay_command(item, report)}"
                  if hasattr(report, "findings") else "")
        pytest.fail(f"{report}{replay}", pytrace=False)
    return result
