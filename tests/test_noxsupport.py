"""The noxfile's helpers: interpreters found where .ci/run finds them, --versions checked first."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from arib.dev.noxsupport import (
    fill_requirements,
    find_python,
    link_pythons,
    missing_python_fix,
    resolver_refusal,
    split_family,
    split_versions,
)
from arib.ground.invocations import (
    component_versions,
    locked_versions,
    unlocked_version_error,
    version_key,
)
from arib.targets.langgraph.family import LANGGRAPH

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


# The LangGraph family: a version is a label naming three distributions, one lock per label.
LG = LANGGRAPH.components
LG_LOCKS = LOCKS / "langgraph"
PINNED = "cp4.3.2+sq3.1.2+pg3.2.0"
# What `uv pip compile` printed (-q, stderr) for cp2.0.26+sq2.0.11+pg2.0.25, copied from a run.
REFUSED = """error: No solution found when resolving dependencies for split (markers: \
python_full_version >= '3.11'):
  cause: Because langgraph-checkpoint-postgres==2.0.25 depends on langgraph-checkpoint>=2.1.2,\
<3.0.0 and you require langgraph-checkpoint==2.0.26, we can conclude that your requirements \
and langgraph-checkpoint-postgres==2.0.25 are incompatible.
         And because you require langgraph-checkpoint-postgres==2.0.25, we can conclude that \
your requirements are unsatisfiable.

hint: While the active Python version is 3.10, the resolution failed for other Python versions.
"""


def test_a_label_names_each_component_in_order():
    assert component_versions(PINNED, LG) == {"cp": "4.3.2", "sq": "3.1.2", "pg": "3.2.0"}
    for bad in ("4.3.2", "cp4.3.2+sq3.1.2", "sq3.1.2+cp4.3.2+pg3.2.0", "cp+sq3.1.2+pg3.2.0",
                "cp4.3.2+sq3.1.2+pg3.2.0+xx1", "cp4.3.2+sq3.1.2+pgx"):
        assert component_versions(bad, LG) is None, bad
        error = unlocked_version_error(bad, LG_LOCKS, "langgraph", LG)
        assert error is not None and repr(bad) in error
        assert "'cp<langgraph-checkpoint version>+sq<langgraph-checkpoint-sqlite version>" \
               "+pg<langgraph-checkpoint-postgres version>'" in error


def test_labels_sort_by_their_components_in_turn():
    labels = ["cp4.3.2+sq3.1.2+pg3.2.0", "cp2.0.10+sq2.0.0+pg2.0.0", "cp10.0.0+sq1.0.0+pg1.0.0",
              "cp2.0.26+sq2.0.11+pg2.0.24", "cp2.0.26+sq2.0.9+pg2.0.25"]
    assert sorted(labels, key=version_key) == [
        "cp2.0.10+sq2.0.0+pg2.0.0", "cp2.0.26+sq2.0.9+pg2.0.25", "cp2.0.26+sq2.0.11+pg2.0.24",
        "cp4.3.2+sq3.1.2+pg3.2.0", "cp10.0.0+sq1.0.0+pg1.0.0"]
    assert sorted(["0.24.0", "0.19.10", "0.19.2"], key=version_key) == [
        "0.19.2", "0.19.10", "0.24.0"]


def test_an_unlocked_label_is_refused_naming_the_command_that_locks_it():
    assert unlocked_version_error(PINNED, LG_LOCKS, "langgraph", LG) is None
    error = unlocked_version_error("cp4.3.1+sq3.1.2+pg3.2.0", LG_LOCKS, "langgraph", LG)
    assert error is not None
    assert "unavailable langgraph version 'cp4.3.1+sq3.1.2+pg3.2.0'" in error
    assert "`nox -s lock -- --family langgraph cp4.3.1+sq3.1.2+pg3.2.0`" in error
    assert PINNED in error  # the labels that are locked are listed
    # openai-agents keeps its own form of the command
    assert "`nox -s lock -- 9.9.9`" in (unlocked_version_error("9.9.9", LOCKS) or "")


def test_family_versions_are_checked_before_any_is_measured():
    every = locked_versions(LG_LOCKS, "langgraph")
    assert split_versions(["--versions", "all", "--out", "x"], [PINNED], every, LG_LOCKS,
                          "langgraph", LG) == (every, ["--out", "x"], None)
    versions, _, error = split_versions(["--versions", f"{PINNED},cp9.9.9+sq9.9.9+pg9.9.9"],
                                        [], every, LG_LOCKS, "langgraph", LG)
    assert error is not None and "--family langgraph cp9.9.9+sq9.9.9+pg9.9.9" in error
    _, _, error = split_versions(["--versions="], [PINNED], every, LG_LOCKS, "langgraph", LG)
    assert error is not None and "names no langgraph version" in error
    # openai-agents' lock files are not the family's: its version is refused there
    _, _, error = split_versions(["--versions", "0.24.0"], [], [], LG_LOCKS, "langgraph", LG)
    assert error is not None and "'0.24.0' of family 'langgraph' is not of the form" in error


def test_family_is_taken_out_of_the_arguments():
    assert split_family(["--family", "langgraph", "--versions", "all"]) == (
        "langgraph", ["--versions", "all"])
    assert split_family(["--family=langgraph", PINNED]) == ("langgraph", [PINNED])
    assert split_family(["0.24.0"]) == ("openai-agents", ["0.24.0"])


def test_the_spread_covers_every_minor_line_and_each_lock_pins_its_label():
    labels = locked_versions(LG_LOCKS, "langgraph")
    releases: dict[str, set[str]] = {"cp": set(), "sq": set(), "pg": set()}
    for label in labels:
        parts = component_versions(label, LG)
        assert parts is not None, label
        pins = dict(re.findall(r"^(langgraph-checkpoint[a-z-]*)==(\S+)",
                               (LG_LOCKS / f"langgraph-{label}.txt").read_text(), re.M))
        for name, dist in LG:
            assert pins[dist] == parts[name], (label, dist)
            releases[name].add(parts[name])
    minors = {name: {".".join(v.split(".")[:2]) for v in found}
              for name, found in releases.items()}
    assert minors["cp"] >= {"2.0", "2.1", "3.0", "4.0", "4.1", "4.2", "4.3"}
    assert minors["sq"] >= {"1.0", "2.0", "3.0", "3.1"}
    assert minors["pg"] >= {"2.0", "3.0", "3.1", "3.2"}
    assert (len(releases["sq"]), len(releases["pg"]), len(releases["cp"])) >= (6, 5, 4)


def test_requirements_are_filled_and_a_line_that_does_not_fit_is_left_out_with_why():
    template = (LG_LOCKS / "requirements.in").read_text()
    text, omitted = fill_requirements(template, "cp1.0.12+sq1.0.4+pg1.0.9", LG, "langgraph")
    assert "langgraph-checkpoint==1.0.12\n" in text and "{cp}" not in text
    assert "langgraph-checkpoint-sqlite==1.0.4\n" in text
    assert "langgraph-checkpoint-conformance" not in text
    assert len(omitted) == 1 and omitted[0].startswith(
        "# langgraph-checkpoint-conformance==0.0.2 left out: cp1.0.12 is not >=2.0.0")
    text, omitted = fill_requirements(template, "cp2.0.10+sq2.0.0+pg2.0.0", LG, "langgraph")
    assert "langgraph-checkpoint-conformance==0.0.2" in text and omitted == []
    with pytest.raises(ValueError, match="kept only with 'xx'"):
        fill_requirements("a==1  # only with xx>=1.0\n", PINNED, LG, "langgraph")
    with pytest.raises(ValueError, match="'4.3.2' of family 'langgraph'"):
        fill_requirements(template, "4.3.2", LG, "langgraph")
    assert fill_requirements("openai-agents=={sdk}\n", "0.24.0") == (
        "openai-agents==0.24.0\n", [])


def test_a_mix_pip_refuses_is_refused_with_the_conflict_and_the_fix():
    line = resolver_refusal(REFUSED, "cp2.0.26+sq2.0.11+pg2.0.25", "langgraph", LG)
    assert "refused langgraph version 'cp2.0.26+sq2.0.11+pg2.0.25'" in line
    assert ("Because langgraph-checkpoint-postgres==2.0.25 depends on "
            "langgraph-checkpoint>=2.1.2,<3.0.0 and you require langgraph-checkpoint==2.0.26"
            in line)
    assert "hint" not in line and "\n" not in line
    assert ("Fix: langgraph-checkpoint-postgres 2.0.25 needs langgraph-checkpoint>=2.1.2,<3.0.0:"
            " pick a cp release in '>=2.1.2,<3.0.0', or another pg release") in line
    # a conflict outside the components gets the general fix
    other = resolver_refusal("Because foo==1 depends on bar>=2 and you require bar==1, no.",
                             "cp1.0.12+sq1.0.4+pg1.0.9", "langgraph", LG)
    assert "adapt langgraph's requirements.in" in other


@pytest.mark.slow
def test_the_resolver_refuses_the_mix_for_real(tmp_path):
    """Asks the package index (uv pip compile): the refusal comes from the real resolver."""
    uv = shutil.which("uv")
    if uv is None:
        pytest.fail("uv is not on PATH: install it (`pip install uv`) to run this test")
    label = "cp2.0.26+sq2.0.11+pg2.0.25"
    text, _ = fill_requirements((LG_LOCKS / "requirements.in").read_text(), label, LG,
                                "langgraph")
    (tmp_path / "r.in").write_text(text)
    done = subprocess.run([uv, "pip", "compile", "--universal", "--python-version", "3.10",
                           "-q", str(tmp_path / "r.in")], capture_output=True, text=True,
                          check=False)
    assert done.returncode != 0
    line = resolver_refusal(done.stderr, label, "langgraph", LG)
    assert "pick a cp release in '>=2.1.2,<3.0.0', or another pg release" in line
