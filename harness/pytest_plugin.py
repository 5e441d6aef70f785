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

Options: ``--arib-seed N``, ``--arib-trials N``, ``--arib-checks ID,ID``. The plugin is inert
in a run with no ``arib`` marker: it imports nothing of the harness until a marked test is
collected.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

import pytest

MARKER = "arib"
_MARKER_KWARGS = ("checks", "params", "seed", "trials", "timeout_s", "workers")


def pytest_addoption(parser: pytest.Parser) -> None:
    """The seed, the trials and the checks of every @pytest.mark.arib test."""
    group = parser.getgroup("arib", "session store invariants (@pytest.mark.arib)")
    group.addoption("--arib-seed", type=int, default=None, metavar="N",
                    help="run seed of every arib test (default: the marker's, else 0)")
    group.addoption("--arib-trials", type=int, default=None, metavar="N",
                    help="trials of every check (default: each check's own)")
    group.addoption("--arib-checks", default=None, metavar="IDS",
                    help="comma-separated check ids, instead of the marker's or the default set")


def pytest_configure(config: pytest.Config) -> None:
    """Register the marker (so --strict-markers accepts it)."""
    config.addinivalue_line(
        "markers", f"{MARKER}(factory, checks=None, params=None, seed=0, trials=None): judge "
        "the store the factory makes, one test item per invariant (arib.api.validate)")


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
    metafunc.parametrize("arib_check", ids, ids=ids)


@pytest.fixture
def arib_check() -> str:
    """The check id of this item; set by @pytest.mark.arib."""
    raise pytest.UsageError("the arib_check and arib_report fixtures need "
                            "@pytest.mark.arib(factory) on the test")


@pytest.fixture
def arib_report(request: pytest.FixtureRequest, arib_check: str) -> Any:
    """The arib.api.Report of this item's check on the marker's factory."""
    from arib.api import validate

    mark = _marker(request.node)
    made = _plan(request.config, mark)
    if arib_check in made.skipped:
        pytest.skip(f"not run: {made.skipped[arib_check]}")
    if arib_check in made.errors:
        pytest.fail(f"{arib_check}: {made.errors[arib_check]}", pytrace=False)
    options = {k: v for k, v in mark.kwargs.items() if k != "checks"}
    for name in ("seed", "trials"):
        given = request.config.getoption(f"--arib-{name}")
        if given is not None:
            options[name] = given
    params = options.pop("params", None) or {}
    options["params"] = {k: v for k, v in params.items() if k == arib_check}
    return validate(mark.args[0], checks=[arib_check], **options)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, Any, Any]:
    """Fail a marked item whose check did not pass, with the readable report only; skip one
    whose check does not apply to the store (not_applicable), with the reason."""
    result = yield
    report = getattr(item, "funcargs", {}).get("arib_report")
    if report is None:
        return result
    verdicts = {finding.verdict.value for finding in report.findings}
    if verdicts == {"not_applicable"}:
        pytest.skip(f"not applicable: {str(report).strip()}")
    if not report.passed:
        pytest.fail(str(report), pytrace=False)
    return result
