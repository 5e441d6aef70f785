"""Build the project's wheel with uv, from a copy of the tracked files as they are in the work
tree (shared by the wheel's tests and the walk of the docs in a fresh environment)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from arib.dev.noxsupport import find_uv
from arib.ground.package import LAYOUT

ROOT = Path(__file__).resolve().parent.parent
# Where each checkout folder sits in the wheel (pyproject's package-dir).
MAPPED = {folder: package.replace(".", "/") for folder, package in LAYOUT.items()}


def uv() -> str:
    """The uv program, or skip the test that needs it."""
    found = find_uv()
    if found is None:
        pytest.skip("uv is not installed (pip install uv): the wheel cannot be built here")
    return found


def tracked(folder: str) -> list[str]:
    """The files git tracks under ``folder`` that exist in the work tree."""
    names = subprocess.run(["git", "-C", str(ROOT), "ls-files", folder], capture_output=True,
                           text=True, check=True).stdout.split()
    return [n for n in names if (ROOT / n).is_file()]


def build_wheel(source: Path, out: Path) -> Path:
    """The wheel built into ``out`` from a copy of the tracked files made in ``source``.

    A copy: setuptools keeps a build/ folder beside the sources, whose leftovers would
    otherwise join the wheel."""
    for name in [n for part in ("pyproject.toml", "README.md", *MAPPED) for n in tracked(part)]:
        (source / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, source / name)
    done = subprocess.run([uv(), "build", "--wheel", "--out-dir", str(out), str(source)],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    (built,) = out.glob("*.whl")
    return built
