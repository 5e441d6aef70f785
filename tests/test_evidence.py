"""Evidence compared with each trial's random ids and seeds masked."""

from __future__ import annotations

import pytest

from arib.reports.evidence import evidence_key, grouped, mask


@pytest.mark.parametrize(("before", "after"), [
    ("message msg_768a7bae8ba9376d_a x2", "message msg_#_a x2"),
    ("fc_508ff598eef52a59 and seed 8541775632859215725", "fc_# and seed #"),
    ("user '5144a02e8c89b07a-w2-1'", "user '#-w2-1'"),
    ("add #5 in flight at t=15", "add #5 in flight at t=15"),  # short numbers are evidence
    ("accepted deadbeefcafe", "accepted deadbeefcafe"),  # hex letters without a digit stay
])
def test_mask(before: str, after: str) -> None:
    assert mask(before) == after


def finding(lane: str, sample: str, ops: list[str]) -> dict[str, object]:
    return {"invariant_id": "ARIB-REPLAY-001", "target": lane, "samples": [sample], "ops": ops}


def test_findings_that_differ_only_in_ids_share_their_evidence() -> None:
    a = finding("a", "visible too often: fc_768a7bae8ba9376d x2", ["add_items(batch)"])
    b = finding("b", "visible too often: fc_508ff598eef52a59 x2", ["add_items(batch)"])
    c = finding("c", "visible too often: fc_508ff598eef52a59 x3", ["add_items(batch)"])
    d = finding("d", "visible too often: fc_508ff598eef52a59 x2", ["pop_item()"])
    assert evidence_key(a) == evidence_key(b)
    assert evidence_key(a) != evidence_key(c) and evidence_key(a) != evidence_key(d)
    groups = grouped([a, c, b, d], evidence_key)
    assert [[f["target"] for f in g] for g in groups] == [["a", "b"], ["c"], ["d"]]
