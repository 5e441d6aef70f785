"""What a user writes with the pytest plugin (run by tests/test_pytest_plugin.py, not collected
by this repo's run: its name does not start with test_)."""

from __future__ import annotations

import pytest

from tests.userstore.stores import json_store, racy_store

SMALL = {"ARIB-CONC-001": {"writers": 4, "appends": 10}}


@pytest.mark.arib(json_store, checks=["ARIB-CONC-001", "ARIB-POP-001"], params=SMALL)
def test_json_store(arib_report):
    """The correct store keeps every invariant."""


@pytest.mark.arib(racy_store, checks=["ARIB-CONC-001", "ARIB-POP-001"], params=SMALL)
def test_racy_store(arib_report):
    """The racy store loses appends: ARIB-CONC-001 fails, ARIB-POP-001 passes."""
