"""The walk of the docs in a fresh environment (issue 38, point 3): the wheel installed with
the openai-agents extra into a new venv, a careful and a buggy store written in a temporary
folder outside the repository, and exactly what the docs show run there: `validate()`, the
pytest plugin, `python -m arib survey --lanes module:attribute`, and the README's plugin lane
(its entry point installed, `python -m arib run --lane` on it).

The stores and the commands are the fenced blocks of harness/api/README.md ("Use it from your
own tests") and harness/api/survey.md ("Mutate your own store"), so the test fails when the
docs drift from what the installed package does. The buggy store is the README's store with
three defects the docs name: a close() that closes nothing (a write after close accepted),
`limit=0` returning everything, and an await between reading and writing (lost concurrent
writes)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.wheelbuild import ROOT, build_wheel, uv

pytestmark = pytest.mark.slow

README = ROOT / "harness" / "api" / "README.md"
SURVEY = ROOT / "harness" / "api" / "survey.md"
BEGIN, END = "<!-- api-example:begin -->", "<!-- api-example:end -->"

# The README store made buggy: (what the page shows, what the buggy store has instead).
DEFECTS = {
    "limit=0 returns everything": (
        "items[-limit:] if limit > 0 else []", "items[-limit:]"),
    "a write after close accepted": (
        "    def close(self) -> None:\n        self.db.close()\n",
        "    def close(self) -> None:\n        pass  # the connection stays open\n"),
    "lost concurrent writes": (
        "    async def add_items(self, items):\n",
        "    async def add_items(self, items):\n"
        "        before = await self.get_items()\n"
        "        await asyncio.sleep(0)  # another writer runs here\n"
        "        await self.clear_session()\n"
        "        items = before + items\n"),
}
# The check of the defaults that names each defect, and what its finding says.
# (Each piece of evidence is one only that defect gives.)
CAUGHT_BY = {"limit=0 returns everything": ("ARIB-WINDOW-001", "get_items(limit=0) returned"),
             "a write after close accepted": ("ARIB-CONC-003", "add=silent_commit"),
             "lost concurrent writes": ("ARIB-CONC-001", "violated; lost ")}


def fenced(page: Path, language: str) -> list[str]:
    """The page's fenced blocks of ``language``, in order."""
    return re.findall(rf"^```{language}\n(.*?)^```", page.read_text(), re.M | re.S)


def named_block(page: Path, filename: str) -> str:
    """The Python block of ``page`` whose first line is ``# filename``."""
    found = [b for b in fenced(page, "python") if b.startswith(f"# {filename}\n")]
    assert len(found) == 1, f"{page.name} shows {len(found)} blocks named {filename!r}"
    return found[0]


def readme_store() -> str:
    """The README's store and its @lane factory (the example without its validate() call)."""
    block = README.read_text().split(BEGIN, 1)[1].split(END, 1)[0]
    source = block.split("```python\n", 1)[1].rsplit("```", 1)[0]
    store, _, _ = source.partition("\nreport = validate(")
    assert "def my_store(" in store, "the README's example no longer defines my_store"
    return store


def buggy_store() -> str:
    """The README's store with the three defects."""
    source = "import asyncio\n" + readme_store()
    for defect, (shown, buggy) in DEFECTS.items():
        assert source.count(shown) == 1, f"the README's store changed: {defect}: {shown!r}"
        source = source.replace(shown, buggy)
    return source


def plugin_test(module: str) -> str:
    """The README's pytest-plugin block, importing the store from ``module``."""
    (block,) = [b for b in fenced(README, "python") if "@pytest.mark.arib(" in b]
    assert "from my_module import my_store" in block, block
    return block.replace("from my_module import", f"from {module} import")


class Env:
    """A fresh venv with the wheel and its openai-agents extra, run in the user's folder."""

    def __init__(self, venv: Path, folder: Path) -> None:
        self.python = str(venv / "bin" / "python")
        self.folder = folder
        self.env = {k: v for k, v in os.environ.items()
                    if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONDONTWRITEBYTECODE")}
        self.log: list[str] = []

    def run(self, *args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
        """Run ``python *args`` in the user's folder; log the command, exit code and time."""
        start = time.monotonic()
        done = subprocess.run([self.python, *args], cwd=self.folder, env=self.env,
                              capture_output=True, text=True, timeout=timeout)
        shown = ["<validate script>" if a == VALIDATE else a for a in args]
        self.log.append(f"$ python {' '.join(shown)}  -> exit {done.returncode}, "
                        f"{time.monotonic() - start:.1f} s")
        return done


@pytest.fixture(scope="module")
def user(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Env]:
    start = time.monotonic()  # the walk's wall time counts from here
    wheel = build_wheel(tmp_path_factory.mktemp("source"), tmp_path_factory.mktemp("wheel"))
    venv = tmp_path_factory.mktemp("venv")
    subprocess.run([uv(), "venv", "-q", "-p", sys.executable, str(venv)], check=True)
    done = subprocess.run([uv(), "pip", "install", "-q", "-p", str(venv / "bin" / "python"),
                           f"{wheel}[openai-agents]", "pytest"],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    folder = tmp_path_factory.mktemp("example")
    assert not folder.resolve().is_relative_to(ROOT), folder
    (folder / "careful_store.py").write_text(named_block(SURVEY, "careful_store.py"))
    (folder / "my_lanes.py").write_text(named_block(SURVEY, "my_lanes.py"))
    (folder / "my_module.py").write_text(readme_store())
    (folder / "buggy_module.py").write_text(buggy_store())
    env = Env(venv, folder)
    env.log.append(f"wheel built and installed with [openai-agents] in "
                   f"{time.monotonic() - start:.1f} s")
    yield env
    # The commands of the walk, their exit codes and times (`pytest -rA` shows them).
    print("\n".join(env.log))
    print(f"the whole walk: {time.monotonic() - start:.1f} s wall")


VALIDATE = """\
import sys
from arib.api import validate
module, name = sys.argv[1].split(":")
report = validate(getattr(__import__(module), name), seed=0)
print(report)
"""


def test_readme_example_runs_as_printed(user: Env) -> None:
    (user.folder / "readme_example.py").write_text(
        README.read_text().split(BEGIN, 1)[1].split(END, 1)[0]
        .split("```python\n", 1)[1].rsplit("```", 1)[0])
    done = user.run("readme_example.py")
    assert done.returncode == 0, done.stdout + done.stderr
    print(done.stdout)
    assert done.stdout.startswith("arib validate __main__.my_store: passed: 2 held of 2"), \
        done.stdout


def test_validate_passes_the_careful_stores(user: Env) -> None:
    """survey.md: "`validate(careful)` passes every default check"; the README: its store
    "holds them all" (the 16 checks its capabilities call for)."""
    careful = user.run("-c", VALIDATE, "my_lanes:careful")
    assert careful.returncode == 0, careful.stderr
    assert ": passed: " in careful.stdout.splitlines()[0], careful.stdout
    assert "\nVIOLATED " not in careful.stdout and "\nERROR " not in careful.stdout, careful.stdout
    readme = user.run("-c", VALIDATE, "my_module:my_store")
    assert readme.returncode == 0, readme.stderr
    assert readme.stdout.startswith(
        "arib validate my_module.my_store: passed: 16 held of 16 checks"), readme.stdout


def test_validate_catches_every_defect_of_the_buggy_store(user: Env) -> None:
    done = user.run("-c", VALIDATE, "buggy_module:my_store")
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert ": FAILED: " in out.splitlines()[0], out
    for defect, (check, evidence) in CAUGHT_BY.items():
        assert f"\nVIOLATED {check}:" in out, f"{defect}: {check} did not catch it:\n{out}"
        finding = out.split(f"\nVIOLATED {check}:", 1)[1].split("\n\n", 1)[0]
        assert evidence in " ".join(finding.split()), f"{defect}: {check} says\n{finding}"
    print(out)


def test_the_plugin_passes_the_careful_store_and_fails_the_buggy_one(user: Env) -> None:
    (user.folder / "test_careful.py").write_text(plugin_test("my_module"))
    (user.folder / "test_buggy.py").write_text(plugin_test("buggy_module"))
    careful = user.run("-m", "pytest", "-p", "no:cacheprovider", "-rA", "test_careful.py")
    assert careful.returncode == 0, careful.stdout + careful.stderr
    assert "PASSED test_careful.py::test_my_store[ARIB-CONC-001]" in careful.stdout
    assert "PASSED test_careful.py::test_my_store[ARIB-POP-001]" in careful.stdout
    buggy = user.run("-m", "pytest", "-p", "no:cacheprovider", "-rA", "test_buggy.py")
    assert buggy.returncode == 1, buggy.stdout + buggy.stderr
    assert "FAILED test_buggy.py::test_my_store[ARIB-CONC-001]" in buggy.stdout, buggy.stdout
    assert "replay this trial: python -m pytest 'test_buggy.py::test_my_store[ARIB-CONC-001]'" \
        in buggy.stdout, buggy.stdout
    print(careful.stdout[-300:], buggy.stdout[-1500:], sep="\n")


def test_the_survey_of_the_users_lane_runs(user: Env) -> None:
    (commands,) = [b for b in fenced(SURVEY, "sh") if "survey --lanes" in b]
    first = commands.splitlines()[0].split("#", 1)[0].split()
    assert first[:5] == ["python", "-m", "arib", "survey", "--lanes"], first
    assert first[5] == "my_lanes:careful", first
    done = user.run(*first[1:], timeout=900)
    out = done.stdout + done.stderr
    assert done.returncode == 0, out
    assert "careful (careful_store): 9 generated mutants" in out, out
    # The same survivors as the page shows: the three dropped locks.
    assert len(re.findall(r"--- m-\w+ survived drop_lock in CarefulStore\.", out)) == 3, out
    # "gives the same score and survivors" as survey_store's text on the page, and the checks
    # the unmutated store already violates.
    (shown,) = [b for b in fenced(SURVEY, "text") if b.startswith("careful (careful_store):")]
    assert shown.splitlines()[1] in out, out
    for check in ("ARIB-LIMIT-001", "ARIB-MULTI-001"):
        assert f"{check}: NOT JUDGEABLE here" in out, out
    print(out)


def test_the_plugin_survey_item_gates_the_careful_store(user: Env) -> None:
    """survey.md's marker with `survey=80`: the two checks' items pass, and [survey] fails with
    the gate line, since those two checks kill fewer than 80 % of the covered mutants."""
    (block,) = [b for b in fenced(SURVEY, "python") if "survey=80)" in b]
    (user.folder / "test_survey_gate.py").write_text(
        "import pytest\nfrom my_lanes import careful\n\n\n" + block)
    done = user.run("-m", "pytest", "-p", "no:cacheprovider", "-rA", "test_survey_gate.py")
    out = done.stdout + done.stderr
    assert done.returncode == 1, out
    assert "PASSED test_survey_gate.py::test_careful[ARIB-CONC-001]" in out, out
    assert "PASSED test_survey_gate.py::test_careful[ARIB-POP-001]" in out, out
    assert "FAILED test_survey_gate.py::test_careful[survey]" in out, out
    gate = re.search(r"gate: careful: covered score ([\d.]+)%, threshold 80%: BELOW", out)
    assert gate is not None and float(gate[1]) < 80, out
    print(gate[0])


PROJECT = """\
[project]
name = "my-store"
version = "0.1"

[tool.setuptools]
py-modules = ["my_module"]

"""


def test_the_plugin_lane_of_the_readme_installs_and_runs(user: Env) -> None:
    """The README's entry point in the user's pyproject.toml, the folder installed, and the
    README's `run` command on the lane named by the entry point."""
    (entry_points,) = [b for b in fenced(README, "toml") if "arib.lanes." in b]
    (user.folder / "pyproject.toml").write_text(PROJECT + entry_points)
    installed = subprocess.run([uv(), "pip", "install", "-q", "-p", user.python, str(user.folder)],
                               capture_output=True, text=True, timeout=600)
    assert installed.returncode == 0, installed.stdout + installed.stderr
    user.log.append(f"$ uv pip install {user.folder.name}/  (the README's entry point) -> exit 0")
    command = re.search(r"`python -m arib (run --check \S+ --lane \S+)`", README.read_text())
    assert command is not None, "the README no longer shows `python -m arib run ... --lane ...`"
    done = user.run("-m", "arib", *command[1].split())
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.startswith("HELD ARIB-CONC-001 on my-store: 0 of "), done.stdout
    print(done.stdout)
