"""What `pip install agent-integrity-bench` installs: one import root (``arib``), every module
and data file the code reads inside it, and a base install that runs without either family.

A user's own ``checks``, ``targets``, ``mutants`` or ``harness`` package beside a pytest run
that uses the plugin changes nothing (the last test)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from arib.ground.package import DISTRIBUTION, version
from tests.wheelbuild import MAPPED, ROOT, build_wheel, tracked, uv

# The data files the code reads, by checkout folder (read through importlib.resources).
DATA = ("harness/locks", "harness/schemas", "mutants/survivors")
# The project's own development tools (nox's helpers, docs, self-mutation): not installed.
DEV = "harness/dev/"
# A stand-in for a package from outside (its own pyproject.toml, distribution arib-ecosystem):
# never part of this wheel.
OUTSIDE = "targets/ecosystem/"
FAMILY_SDKS = ("agents", "langgraph", "sqlalchemy", "redis", "psycopg", "asyncpg")

pytestmark = pytest.mark.slow


def _in_wheel(path: str) -> str:
    top, _, rest = path.partition("/")
    return f"{MAPPED[top]}/{rest}"


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_wheel(tmp_path_factory.mktemp("source"), tmp_path_factory.mktemp("wheel"))


def test_the_wheel_has_one_import_root(wheel: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    dist_info = f"{DISTRIBUTION.replace('-', '_')}-{version()}.dist-info"
    assert {n.split("/")[0] for n in names} == {"arib", dist_info}
    entry_points = zipfile.ZipFile(wheel).read(f"{dist_info}/entry_points.txt").decode()
    assert "arib = arib.cli.main:main" in entry_points
    assert "arib = arib.pytest_plugin" in entry_points
    print(f"{wheel.name}: {wheel.stat().st_size} bytes, {len(names)} files, top level "
          f"{sorted({n.split('/')[0] for n in names})}")


def test_every_module_and_data_file_is_inside_it(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    modules = [p for folder in MAPPED for p in tracked(folder)
               if p.endswith(".py") and not p.startswith(OUTSIDE)]
    assert not [n for n in names if "arib_ecosystem" in n or "/ecosystem/arib" in n]
    dev = [p for p in modules if p.startswith(DEV)]
    assert dev, f"{DEV} is empty: the test no longer looks at the project's own tools"
    missing = [p for p in modules if p not in dev and _in_wheel(p) not in names]
    assert not missing, f"modules the wheel lacks (pyproject's packages list): {missing}"
    shipped = [p for p in dev if _in_wheel(p) in names]
    assert not shipped, f"the project's own tools ({DEV}) are in the wheel: {shipped}"
    data = [p for folder in DATA for p in tracked(folder)]
    assert any(p.endswith(".json") for p in data) and any("survivors" in p for p in data)
    missing = [p for p in data if _in_wheel(p) not in names]
    assert not missing, f"data files the wheel lacks (pyproject's package-data): {missing}"
    assert "arib/py.typed" in names


def test_the_base_install_runs_without_either_family(wheel: Path, tmp_path: Path) -> None:
    env_dir = tmp_path / "env"
    uv_program = uv()
    subprocess.run([uv_program, "venv", "-q", "-p", sys.executable, str(env_dir)], check=True)
    python = env_dir / "bin" / "python"
    done = subprocess.run([uv_program, "pip", "install", "-q", "-p", str(python), str(wheel)],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    clean = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    shown = subprocess.run([str(env_dir / "bin" / "arib"), "--version"], cwd=tmp_path,
                           capture_output=True, text=True, env=clean, timeout=60)
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.startswith(f"arib {version()} (python "), shown.stdout
    code = ("import sys, arib, arib.survey.survivors, arib.runs.results, arib.ground.provenance\n"
            "import arib.targets.openai_agents.family as f\n"
            "assert arib.__version__ == sys.argv[1], arib.__version__\n"
            "assert arib.__file__.startswith(sys.prefix), arib.__file__\n"
            "assert any(arib.survey.survivors.SURVIVORS_DIR.glob('*.txt'))\n"
            "assert (arib.runs.results.SCHEMA_DIR / 'bench-run.schema.json').is_file()\n"
            "assert f.OPENAI_AGENTS.lock_file('0.24.0').is_file()\n"
            "assert arib.ground.provenance.harness_commit() == 'installed ' + sys.argv[1]\n"
            f"loaded = sorted({{m.split('.')[0] for m in sys.modules}} & {set(FAMILY_SDKS)!r})\n"
            "assert not loaded, loaded\n")
    ran = subprocess.run([str(python), "-c", code, version()], cwd=tmp_path,
                         capture_output=True, text=True, env=clean, timeout=60)
    assert ran.returncode == 0, ran.stderr


def test_a_users_own_packages_of_the_old_names_change_nothing(tmp_path: Path) -> None:
    """A user's project with its own ``checks``, ``targets``, ``mutants`` and ``harness``
    packages at its root (on sys.path through its conftest), judging its store with the plugin:
    none of them is imported, and the run is the bench's."""
    for name in ("checks", "targets", "mutants", "harness"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "__init__.py").write_text(
            f"raise RuntimeError('the user\\'s own {name} package was imported')\n")
        (tmp_path / name / "registry.py").write_text("load_checks = None\n")
    (tmp_path / "conftest.py").write_text("")
    shutil.copy(ROOT / "tests" / "userstore" / "stores.py", tmp_path / "mystores.py")
    (tmp_path / "test_mine.py").write_text(
        "import pytest\n\nfrom mystores import json_store\n\n\n"
        "@pytest.mark.arib(json_store, checks=['ARIB-CONC-001', 'ARIB-POP-001'],\n"
        "                  params={'ARIB-CONC-001': {'writers': 4, 'appends': 10}})\n"
        "def test_my_store(arib_report):\n    pass\n")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-rA",
                           "test_mine.py"], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=300)
    out = done.stdout + done.stderr
    assert done.returncode == 0, out
    assert "PASSED test_mine.py::test_my_store[ARIB-CONC-001]" in out
    assert "PASSED test_mine.py::test_my_store[ARIB-POP-001]" in out
