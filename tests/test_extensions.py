"""A user's own checks and mutants, outside the project (arib.ground.extensions).

The example is the one checks/README.md shows ("Your own checks and mutants, outside the
project"): its files are taken from the page and written to a temporary folder, and the package
is declared the way pip installs it (a ``.dist-info`` folder with ``entry_points.txt`` on the
path), so what the page says is what is tested.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from arib.checks.registry import check_index, get_check, load_checks
from arib.cli.main import main
from arib.ground import extensions
from arib.ground.errors import CheckDefinitionError, PluginError, UnknownNameError
from arib.mutants import base, registry

ROOT = Path(__file__).resolve().parents[1]
USER_MODULES = ("byo_checks", "my_mutants", "arib_user_mutants_")  # what the example imports
EXAMPLE = re.compile(r"<!-- example: (?P<path>\S+) -->\n```\w+\n(?P<text>.*?)```", re.S)


def example_files() -> dict[str, str]:
    """path -> text of every file of the page's example."""
    page = (ROOT / "checks" / "README.md").read_text()
    return {m["path"]: m["text"] for m in EXAMPLE.finditer(page)}


def declare(site: Path, name: str, entry_points: str) -> None:
    """A distribution ``name`` as pip would install it: its metadata and entry points."""
    info = site / f"{name}-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(entry_points)


def write_example(folder: Path) -> Path:
    """The page's example in ``folder``; the folder of its package (``src``)."""
    for path, text in example_files().items():
        (folder / path).parent.mkdir(parents=True, exist_ok=True)
        (folder / path).write_text(text)
    (folder / "src" / "byo_checks" / "__init__.py").write_text("")
    return folder / "src"


def _clear() -> None:
    extensions.extension_packages.cache_clear()
    extensions.import_path.cache_clear()
    registry.user_modules.cache_clear()


@pytest.fixture
def user(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The example written and its check package installed (in this process); the tables the
    mutants register in, the modules imported and the caches are restored after."""
    src = write_example(tmp_path / "byo")
    declare(tmp_path / "site", "byo-checks", '[arib.checks]\nopenai-agents = byo_checks\n')
    monkeypatch.syspath_prepend(str(src))
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    monkeypatch.setenv(extensions.MUTANTS_VAR, "")  # none; whatever a test sets is undone
    _clear()
    registry.handwritten_mutants()  # the family's own, loaded once per process: they stay
    _clear()
    tables = [(t, set(t)) for t in (base.HANDWRITTEN, base.FORCED, base.DEFINED_IN)]
    yield tmp_path / "byo"
    for table, before in tables:
        for key in set(table) - before:  # what the user's modules registered
            del table[key]
    for name in [n for n in sys.modules if n.startswith(USER_MODULES)]:
        del sys.modules[name]
    _clear()


def test_the_page_shows_the_three_files_of_the_example() -> None:
    assert set(example_files()) == {"pyproject.toml", "src/byo_checks/mypop_001.py",
                                    "my_mutants.py"}


def test_an_installed_check_package_joins_the_family(user: Path) -> None:
    assert "ARIB-MYPOP-001" in {c.id for c in load_checks()}
    assert check_index()["ARIB-MYPOP-001"] == "byo_checks.mypop_001"
    check = get_check("ARIB-MYPOP-001")
    assert check.module == "byo_checks.mypop_001" and check.mutants == ("my_pop_returns_oldest",)
    # the family's own package alone, as the docs are generated from it
    assert "ARIB-MYPOP-001" not in {c.id for c in load_checks("arib.checks.openai_agents")}


def test_a_users_check_that_reuses_an_id_is_refused(user: Path) -> None:
    (user / "src" / "byo_checks" / "clear_001.py").write_text("CHECK = None\n")
    with pytest.raises(CheckDefinitionError, match=r"two checks have id 'ARIB-CLEAR-001'.*"
                                                   r"byo_checks\.clear_001"):
        load_checks()


def test_a_mutants_file_is_found_only_when_named(user: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(UnknownNameError, match="--mutants PATH"):
        registry.get_mutant("my_pop_returns_oldest")
    monkeypatch.setenv(extensions.MUTANTS_VAR, str(user / "my_mutants.py"))
    mutant = registry.get_mutant("my_pop_returns_oldest")
    assert (mutant.target, mutant.qualname) == ("reference", "ReferenceSession.pop_item")
    assert mutant.id == "m-623e54ced3a0"  # the stable id the page shows
    assert mutant in registry.handwritten_mutants()


def test_a_mutants_module_is_found_through_its_entry_point(user: Path, tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(user))  # my_mutants.py, importable by name
    declare(tmp_path / "site", "other", '[arib.mutants]\nlanggraph = my_mutants\n')
    with pytest.raises(UnknownNameError):  # an entry named by another family is not this one's
        registry.get_mutant("my_pop_returns_oldest")
    _clear()
    declare(tmp_path / "site", "byo-mutants", '[arib.mutants]\nopenai-agents = my_mutants\n')
    assert registry.get_mutant("my_pop_returns_oldest").id == "m-623e54ced3a0"


def test_an_entry_point_naming_an_attribute_is_refused(user: Path, tmp_path: Path) -> None:
    declare(tmp_path / "site", "bad-checks", '[arib.checks]\nopenai-agents = byo_checks:X\n')
    with pytest.raises(PluginError, match=r"'bad-checks'.*names no module"):
        load_checks()


def test_a_mutants_file_that_is_missing_or_broken_stops_the_run(user: Path, capsys) -> None:
    missing = user / "missing.py"
    assert main(["--mutants", str(missing), "list"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and repr(str(missing)) in err and "not an existing .py" in err
    assert os.environ[extensions.MUTANTS_VAR] == ""  # a refused file is not kept
    broken = user / "broken.py"
    broken.write_text("raise RuntimeError('no')\n")
    os.environ[extensions.MUTANTS_VAR] = str(broken)  # the fixture's monkeypatch undoes it
    with pytest.raises(PluginError, match=r"broken\.py.*RuntimeError: no"):
        registry.handwritten_mutants()


def arib(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``python -m arib ARGS`` in ``folder``, with the example installed there."""
    env = {**os.environ, "ARIB_CACHE_DIR": str(folder / ".cache"),
           "PYTHONPATH": os.pathsep.join([str(folder.parent / "site"), str(folder / "src"),
                                          str(ROOT)])}
    env.pop(extensions.MUTANTS_VAR, None)
    return subprocess.run([sys.executable, "-m", "arib", *args], cwd=folder, env=env,
                          capture_output=True, text=True, timeout=600)


@pytest.mark.slow
def test_admit_and_run_judge_the_users_check_with_the_users_mutants(user: Path) -> None:
    done = arib(user, "--mutants", "my_mutants.py", "admit", "ARIB-MYPOP-001", "--quiet")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "ARIB-MYPOP-001: ADMITTED (clean reference: held, held, held)" in done.stdout
    assert re.search(r"killed +handwritten reference +m-623e54ced3a0", done.stdout)
    assert re.search(r"killed +generated +reference", done.stdout)
    alone = arib(user, "admit", "ARIB-MYPOP-001", "--quiet")
    assert alone.returncode == 2 and "unknown mutant 'my_pop_returns_oldest'" in alone.stderr
    run = arib(user, "--mutants", "my_mutants.py", "run", "--check", "ARIB-MYPOP-001",
               "--lane", "reference", "--mutant", "my_pop_returns_oldest", "--json", "-")
    assert run.returncode == 1, run.stdout + run.stderr
    replay = re.search(r'"replay": "([^"]*)"', run.stdout)
    assert replay and f"--mutants {user / 'my_mutants.py'} run" in replay.group(1)
    clean = arib(user, "run", "--check", "ARIB-MYPOP-001", "--lane", "sqlite-file")
    assert clean.returncode == 0, clean.stdout + clean.stderr
    survey = arib(user, "survey", "--lanes", "reference", "--checks", "ARIB-MYPOP-001",
                  "--quiet")
    assert survey.returncode == 0, survey.stdout + survey.stderr
    assert re.search(r"ARIB-MYPOP-001: score [\d.]+% of all, [\d.]+% of covered \(42 mutants: "
                     r"killed \d+", survey.stdout), survey.stdout
