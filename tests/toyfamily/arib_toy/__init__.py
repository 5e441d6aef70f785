"""A toy runtime family, registered as a plugin: notes appended to a file.

The test of the family plugin (tests/test_family.py) installs this package's entry point in a
throwaway folder and runs admit, bench and survey on it through ``python -m arib --family
toy-notes``, without any change to harness/. Everything a family brings is here: its store
(``store.py``), its own reference (``reference.py``), its lanes (``lanes.py``), one check
(``checks/toy_001.py``) and its hand-written mutants (``mutants/notes.py``).
"""

from __future__ import annotations

from arib.ground.family import Family

FAMILY = Family(
    name="toy-notes",
    distribution="arib-toy",
    description="a toy family: notes appended to a JSON-lines file",
    checks="arib_toy.checks",
    mutants="arib_toy.mutants",
    lanes="arib_toy.lanes:LANES",
    survey_lanes="arib_toy.lanes:SURVEY_LANES",
    reference="arib_toy.lanes:REFERENCE",
    forced_broken="toy_reference_forced_broken",
    read_items="arib_toy.lanes:read_notes",
)
