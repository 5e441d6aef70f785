"""The noxfile's helpers: interpreters found where .ci/run finds them, --versions checked first."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from harness.noxsupport import (
    find_python,
    link_pythons,
    missing_python_fix,
    split_versions,
)

VERSION = f"{sys.version_info.major}.{sys.version_info.minor}"
REAL = Path(sys.executable).resolve()  # the base interpreter behind the venv's python
LOCKS = Path(__file__).parent.parent / "harness" / "locks"


def script(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\n" + text + "\n")
    path.chmod(0o755)
    return path


def fake_pyenv(root: Path, patch: str) -> Path:
    """A pyenv versions folder holding the running interpreter as VERSION.patch."""
    exe = root / "versions" / f"{VERSION}.{patch}" / "bin" / f"python{VERSION}"
    exe.parent.mkdir(parents=True)
    exe.symlink_to(REAL)
    return exe


def test_pyenv_versions_folder_newest_working_patch_without_pyenv_on_path(tmp_path):
    root = tmp_path / "pyenv"
    older = fake_pyenv(root, "1")
    # A newer patch release whose binary is broken: probed, refused, the next one is used.
    script(root / "versions" / f"{VERSION}.10" / "bin" / f"python{VERSION}", "exit 3")
    (root / "versions" / f"{VERSION}.2-dev").mkdir()  # not a release: never a candidate
    env = {"PYENV_ROOT": str(root), "PATH": ""}
    assert find_python(VERSION, env) == older


def test_path_candidates_pass_over_a_shim_that_does_not_resolve(tmp_path):
    shim = script(tmp_path / "shims" / f"python{VERSION}",
                  f"echo 'pyenv: python{VERSION}: command not found' >&2; exit 127")
    real_dir = tmp_path / "bin"
    real_dir.mkdir()
    (real_dir / f"python{VERSION}").symlink_to(REAL)
    env = {"PYENV_ROOT": str(tmp_path / "no-pyenv"),
           "PATH": os.pathsep.join([str(shim.parent), str(real_dir)])}
    assert find_python(VERSION, env) == real_dir / f"python{VERSION}"


def test_an_interpreter_of_another_version_is_refused(tmp_path):
    liar = script(tmp_path / "bin" / "python3.99", f"exec {REAL} \"$@\"")
    env = {"PYENV_ROOT": str(tmp_path / "none"), "PATH": str(liar.parent)}
    assert find_python("3.99", env) is None  # it runs, but reports VERSION, not 3.99


def test_uv_python_find_is_asked_after_pyenv(tmp_path):
    uv = script(tmp_path / "uv", f'case "$*" in "python find "*" {VERSION}") echo {REAL};; esac')
    env = {"PYENV_ROOT": str(tmp_path / "none"), "PATH": ""}
    assert find_python(VERSION, env, uv=str(uv)) == REAL
    assert find_python(VERSION, env, uv=None) is None


def test_missing_interpreter_names_where_it_looked_and_the_fix(tmp_path):
    env = {"PYENV_ROOT": str(tmp_path / "empty"), "PATH": str(tmp_path)}
    assert find_python("3.12", env) is None
    line = missing_python_fix("3.12", env)
    assert "\n" not in line
    assert f"{tmp_path / 'empty'}/versions/3.12.*" in line
    assert "pyenv install 3.12" in line and "uv python install 3.12" in line


def test_links_hand_the_full_path_and_stale_links_are_removed(tmp_path):
    folder = link_pythons({VERSION: REAL, "3.99": REAL}, tmp_path / "links")
    assert (folder / f"python{VERSION}").resolve() == REAL
    link_pythons({VERSION: REAL, "3.99": None}, folder)
    assert not (folder / "python3.99").exists()
    assert sorted(p.name for p in folder.iterdir()) == [f"python{VERSION}"]
    # What nox does with the folder first on PATH: `python3.X` is the interpreter found.
    assert find_python(VERSION, {"PYENV_ROOT": str(tmp_path), "PATH": str(folder)}) == (
        folder / f"python{VERSION}")


def test_versions_default_all_and_the_rest_of_the_arguments():
    assert split_versions(["--lanes", "sqlite-file"], ["0.24.0"], ["0.19.2", "0.24.0"],
                          LOCKS) == (["0.24.0"], ["--lanes", "sqlite-file"], None)
    assert split_versions(["--versions=all"], ["0.24.0"], ["0.19.2", "0.24.0"], LOCKS) == (
        ["0.19.2", "0.24.0"], [], None)
    assert split_versions(["--versions", "0.19.2, 0.24.0", "--quiet"], [], [], LOCKS) == (
        ["0.19.2", "0.24.0"], ["--quiet"], None)


def test_empty_versions_are_an_error_not_a_run_that_measures_nothing():
    for args in (["--versions", ""], ["--versions"], ["--versions=,"]):
        versions, _, error = split_versions(args, ["0.24.0"], ["0.24.0"], LOCKS)
        assert versions == [] and error is not None and "names no SDK version" in error


def test_every_version_is_checked_before_any_is_measured():
    _, _, error = split_versions(["--versions", "0.24.0,9.9.9"], [], [], LOCKS)
    assert error is not None
    assert "unavailable SDK version '9.9.9'" in error and "nox -s lock -- 9.9.9" in error
