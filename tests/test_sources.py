"""A module's source is found and read without running it or its packages."""

from __future__ import annotations

import inspect
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from arib.ground.errors import MutantDefinitionError
from arib.ground.sources import installed_source, module_path, module_source

ROOT = Path(__file__).resolve().parent.parent
BACKEND = "agents.memory.sqlite_session"


def loaded_after(code: str) -> set[str]:
    """The modules a fresh interpreter has loaded after running ``code``."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("ARIB_FAMILY", None)
    done = subprocess.run(
        [sys.executable, "-c", f"{code}\nimport sys, json\nprint(json.dumps(sorted(sys.modules)))"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=120, check=True)
    return set(json.loads(done.stdout.splitlines()[-1]))


def test_an_imported_module_is_read_as_inspect_reads_it():
    import arib.ground.model as model

    assert module_path("arib.ground.model") == Path(model.__file__)
    assert module_source("arib.ground.model") == inspect.getsource(model)


def test_a_backend_module_is_found_and_read_without_importing_the_sdk():
    loaded = loaded_after(
        "from arib.ground.sources import module_path, module_source\n"
        f"assert module_path({BACKEND!r}).name == 'sqlite_session.py'\n"
        f"assert 'class SQLiteSession' in module_source({BACKEND!r})\n"
        "from arib.caches.verdicts import source_hash\n"
        f"source_hash({BACKEND!r})\n"
        "from arib.caches import keys\n"
        f"assert keys._key_source({BACKEND!r}) == module_source({BACKEND!r})\n"
        "from arib.ground.sources import installed_source\n"
        f"assert installed_source({BACKEND!r})[1] == module_source({BACKEND!r})\n")
    assert not {m for m in loaded if m == "agents" or m.startswith("agents.")}


def test_the_text_is_the_installed_file_and_the_same_once_imported():
    text = module_source(BACKEND)
    import agents.memory.sqlite_session as backend

    assert module_source(BACKEND) == text == inspect.getsource(backend)


@pytest.mark.parametrize("name", ["agents.memory.no_such_module", "no_such_package_arib",
                                  "no_such_package_arib.sub"])
def test_a_module_that_is_not_installed_has_no_path(name):
    assert module_path(name) is None
    with pytest.raises(OSError, match=repr(name)):
        module_source(name)


def test_a_missing_submodule_is_reported_without_running_its_package():
    loaded = loaded_after("from arib.ground.sources import module_path\n"
                          "assert module_path('agents.memory.no_such_module') is None\n")
    assert "agents" not in loaded


def test_a_module_inside_nested_namespace_packages_is_found_without_importing_them(
        tmp_path, monkeypatch):
    # As langgraph.checkpoint.memory: langgraph and langgraph.checkpoint are namespace
    # packages spread over two distributions' folders; none of them is imported to find it.
    one, two = tmp_path / "one", tmp_path / "two"
    (one / "arib_ns" / "inner").mkdir(parents=True)
    (two / "arib_ns" / "inner" / "pkg").mkdir(parents=True)
    (one / "arib_ns" / "inner" / "first.py").write_text("raise RuntimeError('imported')\n")
    (two / "arib_ns" / "inner" / "pkg" / "__init__.py").write_text("raise RuntimeError('x')\n")
    monkeypatch.syspath_prepend(str(two))
    monkeypatch.syspath_prepend(str(one))
    assert module_path("arib_ns.inner.first") == one / "arib_ns" / "inner" / "first.py"
    assert module_path("arib_ns.inner.pkg") == two / "arib_ns" / "inner" / "pkg" / "__init__.py"
    assert module_source("arib_ns.inner.first") == "raise RuntimeError('imported')\n"
    assert module_path("arib_ns.inner") is None  # a namespace package has no source file
    assert module_path("arib_ns.inner.missing") is None
    assert not [m for m in sys.modules if m.startswith("arib_ns")]


def test_a_package_served_by_another_finder_is_found_by_importlib(tmp_path, monkeypatch):
    # Not on sys.path: only a finder of its own (as an editable install has) can serve it.
    import importlib.abc
    import importlib.util

    hidden = tmp_path / "hidden" / "arib_hidden_pkg"
    hidden.mkdir(parents=True)
    (hidden / "__init__.py").write_text("")
    (hidden / "mod.py").write_text("VALUE = 1\n")

    class Finder(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name == "arib_hidden_pkg":
                return importlib.util.spec_from_file_location(
                    name, hidden / "__init__.py", submodule_search_locations=[str(hidden)])
            return None

    monkeypatch.setattr(sys, "meta_path", [Finder(), *sys.meta_path])
    try:
        assert module_path("arib_hidden_pkg.mod") == hidden / "mod.py"
    finally:
        sys.modules.pop("arib_hidden_pkg", None)


def test_installed_source_is_the_file_and_its_text_or_names_the_fix():
    path, text = installed_source(BACKEND)
    assert path == str(module_path(BACKEND)) and text == module_source(BACKEND)
    with pytest.raises(MutantDefinitionError,
                       match=r"'no_such_package_arib' is not installed as a source file; install"):
        installed_source("no_such_package_arib")
