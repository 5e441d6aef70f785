"""Lane probes: which failures are the harness's own calls (``rejected_call``), how a probe's
end decides whether its lane is measured, and the command on a family without a probe.

``rejected_call`` is judged here on real tracebacks of two small modules written for each
test: one stands for the project's code (the caller), one for a release (the callee).
"""

from __future__ import annotations

import importlib.util
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

from arib.cli.main import main
from arib.probe import ProbeResult, ProbeStatus, rejected_call

RELEASE = '''
class Saver:
    def __init__(self, conn=None):
        self.conn = conn

    def get_next_version(self, current, channel):
        return channel.checkpoint()

    def setup(self):
        self.conn.is_alive()

    def deep(self, value):
        return self._deeper(value)

    def _deeper(self, value):
        return value.missing

    def index(self, values):
        return values[0]

    def fails(self):
        raise ValueError("the release's own failure")
'''

OURS = '''
import release_mod


def next_version():
    return release_mod.Saver().get_next_version(None, None)


def setup():
    return release_mod.Saver(object()).setup()


def construct():
    return release_mod.Saver(conn=None, pipe=1)


def lacking():
    return release_mod.Saver().delete_thread("t")


def deep():
    return release_mod.Saver().deep(None)


def index():
    return release_mod.Saver().index(None)


def fails():
    return release_mod.Saver().fails()


def imports():
    from release_mod import WRITES_IDX_MAP  # noqa: F401


def own_typo():
    return len(5)
'''


def _load(path: Path, name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


Code = tuple[ModuleType, list[str], tuple[str, ...]]


@pytest.fixture()
def code(tmp_path: Path) -> Iterator[Code]:
    """(our module, the release's files, our folders) of the two modules."""
    (tmp_path / "site").mkdir()
    (tmp_path / "ours").mkdir()
    release = tmp_path / "site" / "release_mod.py"
    release.write_text(textwrap.dedent(RELEASE))
    ours = tmp_path / "ours" / "ours_mod.py"
    ours.write_text(textwrap.dedent(OURS))
    _load(release, "release_mod")
    yield _load(ours, "ours_mod"), [str(release.resolve())], (str(tmp_path / "ours") + "/",)
    sys.modules.pop("release_mod", None)
    sys.modules.pop("ours_mod", None)


def _refused(code: Code, name: str) -> str | None:
    module, files, own = code
    with pytest.raises(Exception) as caught:
        getattr(module, name)()
    return rejected_call(caught.value, files, own)


@pytest.mark.parametrize("name, line, into", [
    ("next_version", "get_next_version(None, None)", ", into get_next_version()"),
    ("construct", "Saver(conn=None, pipe=1)", ""),
    ("lacking", 'delete_thread("t")', ""),
    ("index", "index(None)", ", into index()"),
    ("imports", "import WRITES_IDX_MAP", ""),
])
def test_a_call_the_release_does_not_take_is_the_harness_s(code: Code, name: str, line: str,
                                                           into: str) -> None:
    found = _refused(code, name)
    assert found is not None, name
    assert "ours_mod.py:" in found and f"in {name}: " in found and line in found
    assert found.endswith(into) if into else "into" not in found


@pytest.mark.parametrize("name", ["setup", "deep", "fails", "own_typo"])
def test_a_failure_in_the_release_s_own_code_is_not(code: Code, name: str) -> None:
    # setup: the callee fails on its own state (self.conn), not on an argument; deep: two
    # frames into the release; fails: not an argument error; own_typo: no release frame and
    # no call of the release's (a bug of ours, but not a refused call)
    assert _refused(code, name) is None


def test_the_status_decides_whether_the_lane_is_measured() -> None:
    ok = ProbeResult("lane", ProbeStatus.OK)
    raised = ProbeResult("lane", ProbeStatus.RAISED, "setup", "AttributeError: x")
    refused = ProbeResult("lane", ProbeStatus.REFUSED, "put", "TypeError: y",
                          rejected_call="checks/x.py:3 in f: f(a=1)")
    failed = ProbeResult("lane", ProbeStatus.FAILED, "build", "OSError: z")
    absent = ProbeResult("lane", ProbeStatus.ABSENT, "build", "NotApplicable: w")
    assert [r.measurable for r in (ok, raised, refused, failed, absent)] == [
        True, True, False, False, False]
    assert refused.reason("fam 1.0") == (
        "not measured, because its probe failed on fam 1.0 at put: TypeError: y; the call is "
        "the harness's own (checks/x.py:3 in f: f(a=1)), which this release does not take: a "
        "harness defect, fix that call")
    assert failed.reason("fam 1.0") == ("not measured, because its probe failed on fam 1.0 at "
                                        "build: OSError: z")
    assert absent.reason("fam 1.0").startswith("not measured, because no instance of it can "
                                               "exist on fam 1.0: NotApplicable: w")
    assert refused.to_json()["status"] == "refused"


def test_a_family_without_a_probe_is_refused_by_the_command(
        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ARIB_FAMILY", raising=False)
    assert main(["--family", "openai-agents", "probe"]) == 2
    assert "family 'openai-agents' has no lane probe" in capsys.readouterr().err


def test_a_gate_probe_stops_the_bench_when_violated_or_in_error() -> None:
    from arib.probe import GateProbe

    assert [GateProbe("C", "lane", v).stops_bench
            for v in ("held", "not_applicable", "violated", "error")] == [
        False, False, True, True]
    assert GateProbe("C", "lane", "error", "why").to_json() == {
        "check_id": "C", "lane": "lane", "verdict": "error", "reason": "why"}
