"""arib.survey.user and arib.api.survey: a user's own store, written in a temporary folder,
surveyed end to end; a store class that cannot be mutated is one error line, exit 2."""

from __future__ import annotations

import functools
import os
import re
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

from arib.api import StoreSurvey, lane, survey_store, validate
from arib.ground.child import ChildStatus, run_jobs
from arib.ground.errors import UsageError
from arib.ground.family import plugin_lanes
from arib.ground.model import MutantStatus
from arib.mutants import hook
from arib.survey.scores import Scores
from arib.survey.user import UserLaneError, check_mutable, store_lane, store_lanes

ROOT = Path(__file__).resolve().parent.parent
S = MutantStatus
CHECK = "ARIB-POP-001"  # a short check: pops must return the newest item

STORE = '''
"""A user's store: one JSON file, rewritten whole on every change."""
import json
from pathlib import Path


class ToyStore:
    def __init__(self, session_id, path):
        self.session_id = session_id
        self.path = Path(path)

    def _load(self):
        return json.loads(self.path.read_text()) if self.path.exists() else {}

    def _save(self, data):
        self.path.write_text(json.dumps(data))

    async def get_items(self, limit=None):
        items = self._load().get(self.session_id, [])
        return items if limit is None else items[-limit:] if limit > 0 else []

    async def add_items(self, items):
        data = self._load()
        data.setdefault(self.session_id, []).extend(items)
        self._save(data)

    async def pop_item(self):
        data = self._load()
        items = data.get(self.session_id, [])
        if not items:
            return None
        item = items.pop()
        self._save(data)
        return item

    async def clear_session(self):
        data = self._load()
        data.pop(self.session_id, None)
        self._save(data)
'''

FACTORIES = '''
from arib.api import lane
from arib_toy_store import ToyStore


@lane
def toy(root, session_id):  # no annotation: the survey builds one store to find its class
    return ToyStore(session_id, root / "store.json")


@lane
def local(root, session_id):
    class Inner(ToyStore):
        pass
    return Inner(session_id, root / "store.json")
'''

ENTRY_POINTS = """[arib.lanes.openai-agents]
toy = arib_toy_lanes:toy
local = arib_toy_lanes:local
"""


@pytest.fixture
def toy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[ModuleType]:
    """The factories module, with the store module beside it, both in ``tmp_path``."""
    (tmp_path / "arib_toy_store.py").write_text(textwrap.dedent(STORE))
    (tmp_path / "arib_toy_lanes.py").write_text(textwrap.dedent(FACTORIES))
    monkeypatch.syspath_prepend(str(tmp_path))
    import arib_toy_lanes

    yield arib_toy_lanes
    for name in ("arib_toy_lanes", "arib_toy_store"):
        sys.modules.pop(name, None)


def test_the_class_comes_from_the_statement_the_annotation_or_one_build(toy: ModuleType):
    from arib_toy_store import ToyStore

    def annotated(root: Path, session_id: str) -> ToyStore:
        raise AssertionError("an annotated factory is never called to find its class")

    annotated.__annotations__["return"] = ToyStore  # not a string: ToyStore is local here

    stated = lane(toy.toy.factory, store="arib_toy_store:ToyStore").spec()
    assert (stated.module, stated.backend) == ("arib_toy_store", "ToyStore")
    assert store_lane(stated) is stated
    for spec in (lane(annotated).spec(), toy.toy.spec()):  # the second is built in a child
        found = store_lane(spec)
        assert (found.module, found.backend, found.name) == (
            "arib_toy_store", "ToyStore", spec.name)
        assert found.build is spec.build


def test_a_bad_store_argument_names_the_value():
    with pytest.raises(UsageError, match="store='ToyStore'.*'module:Class'"):
        lane(lambda root, sid: None, store="ToyStore")


def test_a_class_that_cannot_be_mutated_is_one_line_naming_lane_and_rule(toy: ModuleType):
    with pytest.raises(UserLaneError) as inner:
        store_lane(toy.local.spec())
    with pytest.raises(UserLaneError) as compiled:
        check_mutable("c-store", "array", "array")  # a C extension
    for raised, words in ((inner, "defined inside a function"),
                          (compiled, "not in a Python source file")):
        text = str(raised.value)
        assert "\n" not in text and words in text and "the rule: the survey mutates" in text
    assert "lane 'local'" in str(inner.value) and "Inner" in str(inner.value)
    assert "lane 'c-store'" in str(compiled.value)


def _served(store_source: str) -> str:
    """In a child: serve a mutated store module, then build through the factory."""
    import arib_toy_lanes
    import arib_toy_store

    hook.watch("arib_toy_lanes")
    hook.serve_mutated_module("arib_toy_store", store_source)
    made = arib_toy_lanes.toy.factory(Path("."), "s")
    served = sys.modules["arib_toy_store"].ToyStore
    return (f"{type(made) is served} {type(made) is arib_toy_store.ToyStore} "
            f"{getattr(type(made), 'MARK', None)}")


def test_a_re_executed_store_module_reaches_the_factory_that_imported_its_class(
        toy: ModuleType):
    mutated = textwrap.dedent(STORE).replace("class ToyStore:", "class ToyStore:\n    MARK = 1")
    (outcome,) = run_jobs([functools.partial(_served, mutated)], workers=1, timeout_s=30)
    assert outcome.status is ChildStatus.OK, outcome.detail
    # the factory's global was rebound to the served class, not the one it imported
    assert outcome.value == "True False 1"


def test_a_user_store_is_surveyed_end_to_end_and_gated_by_its_covered_score(
        toy: ModuleType):
    surveyed = survey_store(toy.toy, checks=[CHECK], fail_under=0, workers=2)
    found = surveyed.survey
    assert found.error is None and found.lane == "toy" and found.module == "arib_toy_store"
    assert found.mutants and all(m.qualname.startswith("ToyStore.") for m in found.mutants)
    statuses = {(o.mutant.qualname, o.mutant.operator): o.status for o in found.outcomes}
    # pop_item returning early returns None with items stored: POP-001 sees it
    assert statuses[("ToyStore.pop_item", "early_return")] is S.KILLED
    # POP-001 never clears a session: a clear that does nothing survives it
    assert statuses[("ToyStore.clear_session", "early_return")] is S.SURVIVED
    assert surveyed.score is not None and 0 < surveyed.score < 1
    high = StoreSurvey(found, fail_under=100)
    assert surveyed.passed and not high.passed
    assert "threshold 100%: BELOW" in str(high) and "ToyStore.clear_session" in str(high)


def test_the_cli_surveys_an_installed_user_lane_and_a_bad_one_exits_2(
        toy: ModuleType, tmp_path: Path):
    info = tmp_path / "toylanes-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: toylanes\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(ENTRY_POINTS)
    plugin_lanes.cache_clear()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT)])}
    done = subprocess.run(
        [sys.executable, "-m", "arib", "survey", "--lanes", "local,toy", "--checks", CHECK,
         "--no-cache", "--quiet", "--workers", "2", "--json", str(tmp_path / "out.json")],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    out = done.stdout + done.stderr
    assert done.returncode == 2, out
    bad = [line for line in out.splitlines() if line.startswith("error: ")]
    assert len(bad) == 1 and "lane 'local'" in bad[0] and "defined inside a function" in bad[0]
    assert "toy (arib_toy_store):" in out and "killed" in out  # the other lane went on


DOC = ROOT / "harness" / "api" / "survey.md"


@pytest.mark.slow
def test_the_worked_example_of_the_docs_says_what_it_shows(tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch):
    """survey.md's store, written to a folder outside the repository, surveyed with the
    default checks: the three drop_lock mutants survive, everything else covered is killed."""
    blocks = re.findall(r"```python\n# (\w+\.py)\n(.*?)```", DOC.read_text(), re.S)
    assert [name for name, _ in blocks] == ["careful_store.py", "my_lanes.py"]
    for name, code in blocks:
        (tmp_path / name).write_text(code)
    monkeypatch.syspath_prepend(str(tmp_path))
    import my_lanes

    try:
        assert validate(my_lanes.careful).passed
        result = survey_store(my_lanes.careful, fail_under=80)
    finally:
        for name in ("my_lanes", "careful_store"):
            sys.modules.pop(name, None)
    found = result.survey
    survivors = sorted((o.mutant.qualname, o.mutant.operator) for o in found.survivors())
    assert survivors == [(f"CarefulStore.{m}", "drop_lock")
                         for m in ("add_items", "clear_session", "pop_item")]
    scores = found.scores()
    assert (len(found.outcomes), scores.count(S.KILLED)) == (9, 6)
    covered = f"{scores.score_covered:.1%}"
    assert f"score {covered} of all, {covered} of covered" in DOC.read_text()  # as printed
    assert "threshold 80%: BELOW" in str(result) and not result.passed


CODEC = '''
"""The codec of a user's store, in a module of its own."""
import json


class Codec:
    def encode(self, items):
        return json.dumps(items)

    def decode(self, text):
        if not text:
            return []
        return json.loads(text)

    def split_last(self, items):
        if len(items) > 0:
            return items[:-1], items[-1]
        return items, None
'''

PKG_STORE = '''
"""A store class that is its own factory: built as PkgStore(root, session_id)."""
from pathlib import Path

from arib_toy_pkg.codec import Codec


class PkgStore:
    def __init__(self, root, session_id):
        self.path = Path(root) / f"{session_id}.json"
        self.codec = Codec()

    def _load(self):
        return self.codec.decode(self.path.read_text()) if self.path.exists() else []

    def _save(self, items):
        self.path.write_text(self.codec.encode(items))

    async def get_items(self, limit=None):
        items = self._load()
        return items if limit is None else items[-limit:] if limit > 0 else []

    async def add_items(self, items):
        self._save(self._load() + list(items))

    async def pop_item(self):
        rest, item = self.codec.split_last(self._load())
        if item is not None:
            self._save(rest)
        return item

    async def clear_session(self):
        self._save([])
'''


@pytest.fixture
def toy_pkg(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[ModuleType]:
    """A package ``arib_toy_pkg`` in ``tmp_path``: a store class and the codec it uses."""
    pkg = tmp_path / "arib_toy_pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "codec.py").write_text(textwrap.dedent(CODEC))
    (pkg / "store.py").write_text(textwrap.dedent(PKG_STORE))
    (pkg / "plain.py").write_text("def helper():\n    return 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    import arib_toy_pkg.store

    yield arib_toy_pkg.store
    for name in [n for n in sys.modules if n.split(".")[0] == "arib_toy_pkg"]:
        sys.modules.pop(name, None)


def test_a_class_built_as_root_and_session_id_is_a_lane_by_its_path(toy_pkg: ModuleType):
    from arib.targets.registry import lane_reference

    spec = lane_reference("arib_toy_pkg.store:PkgStore")
    assert (spec.name, spec.module, spec.backend) == ("PkgStore", "arib_toy_pkg.store",
                                                      "PkgStore")
    assert store_lane(spec) is spec  # the class itself: nothing to build to find it
    report = validate(lane(toy_pkg.PkgStore), checks=[CHECK], trials=1)
    assert report.passed, report


def _served_class(store_source: str) -> str:
    """In a child: re-execute the class lane's module as a mutant would, then build."""
    import asyncio

    import arib_toy_pkg.store

    from arib.targets.base import BuildContext

    spec = lane(arib_toy_pkg.store.PkgStore).spec()
    hook.serve_mutated_module("arib_toy_pkg.store", store_source)

    async def build() -> object:
        handle = await spec.build(BuildContext(Path("."), "s", {}))
        return type(handle.session)

    return str(getattr(asyncio.run(build()), "MARK", None))


def test_a_class_given_as_the_factory_builds_the_class_a_mutant_re_executed(
        toy_pkg: ModuleType):
    mutated = textwrap.dedent(PKG_STORE).replace("class PkgStore:", "class PkgStore:\n    MARK = 1")
    (outcome,) = run_jobs([functools.partial(_served_class, mutated)], workers=1, timeout_s=30)
    assert outcome.status is ChildStatus.OK, outcome.detail
    assert outcome.value == "1"  # not the class object the lane was given


def test_a_lane_surveys_the_classes_it_names_to_mutate_each_as_a_lane(toy_pkg: ModuleType):
    surveyed = survey_store(lane(toy_pkg.PkgStore, mutate=["arib_toy_pkg.codec"]),
                            checks=[CHECK], fail_under=0, workers=2)
    assert [s.lane for s in surveyed.surveys] == ["PkgStore", "PkgStore[Codec]"]
    own = {(o.mutant.qualname, o.mutant.operator): o.status for o in surveyed.survey.outcomes}
    # the class given as the factory is looked up again when built: its mutant is reached
    assert own[("PkgStore.pop_item", "early_return")] is S.KILLED, own
    (codec,) = surveyed.also
    assert codec.error is None and codec.module == "arib_toy_pkg.codec"
    assert codec.mutants and all(m.qualname.startswith("Codec.") for m in codec.mutants)
    statuses = {(o.mutant.qualname, o.mutant.operator): o.status for o in codec.outcomes}
    # split_last's test inverted: a pop with items stored returns None; POP-001 sees it
    # through the store class the lane builds (the codec's mutant reaches it)
    assert statuses[("Codec.split_last", "flip_comparison")] is S.KILLED, statuses
    every = [o.status for s in surveyed.surveys for o in s.outcomes]
    assert surveyed.score == Scores.of(every).score_covered
    assert "PkgStore[Codec]" in str(surveyed)


def test_naming_code_the_survey_cannot_mutate_is_one_line(toy_pkg: ModuleType):
    for mutate, words in ((["arib_toy_pkg.plain"], "defines no class at its top level"),
                          (["arib_toy_pkg.nope"], "cannot be read as Python source"),
                          (["arib_toy_pkg.codec:Missing"], "not defined by a class statement")):
        spec = lane(toy_pkg.PkgStore, mutate=mutate).spec()
        with pytest.raises(UserLaneError) as raised:
            store_lanes(spec)
        text = str(raised.value)
        assert "\n" not in text and "lane 'PkgStore'" in text and words in text, text
    with pytest.raises(UsageError, match=r"mutate=\[\.\.\., 'my pkg', \.\.\.\]"):
        lane(toy_pkg.PkgStore, mutate=["my pkg"])
