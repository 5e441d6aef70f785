"""The import graph keeps its layers (read with ``ast``; nothing is imported or run).

The ground floor (harness/ground/) holds what checks/, mutants/ and targets/ share with the
harness: the result and key types, the errors, the forked runner and the services. The rules:

- checks/, mutants/ and targets/ import from harness/ only the ground floor;
- the ground floor imports nothing of checks/, mutants/, targets/ or the rest of harness/;
- mutants/ does not import checks/ (a check names its mutants; a mutant knows no check);
- targets/ does not import checks/ (a lane knows no check; a check is given its lane);
- harness/__init__.py (the package ``arib``) imports nothing of the project when it runs
  (importing the ground floor runs it first): its facade's names load on first use;
- nothing the wheel installs imports harness/dev/ (``arib.dev``, the project's own tools,
  left out of the wheel), but by name at run time from ``docs``, the checkout's command,
  which says so when it is missing.

The import root is ``arib``: harness/ is the package itself, checks/, mutants/ and targets/ its
subpackages (pyproject's package-dir). Every import counts: at module level, inside a
function, under ``if TYPE_CHECKING``, and ``importlib.import_module("...")`` called with a
literal name; in harness/__init__.py, only what runs on import.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("checks", "mutants", "targets", "harness")
LEAVES = ("checks", "mutants", "targets")
GROUND = "arib.ground"
DEV = "arib.dev"
# `docs` imports the docs generator by name when it runs, and refuses plainly without it.
DEV_BY_NAME = {("arib.cli.project", "arib.dev.docs")}


def module_name(root: Path, path: Path) -> str:
    """``harness/ground/model.py`` -> ``arib.ground.model``, ``checks/base.py`` ->
    ``arib.checks.base``; a package is its folder."""
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    parts[0:1] = ["arib"] if parts[0] == "harness" else ["arib", parts[0]]
    return ".".join(parts)


def _resolve(module: str, is_package: bool, level: int, name: str | None) -> str:
    """The absolute module a (possibly relative) ``from ... import`` names."""
    if level == 0:
        return name or ""
    base = module.split(".") if is_package else module.split(".")[:-1]
    base = base[: len(base) - (level - 1)]
    return ".".join([*base, name] if name else base)


def _run_on_import(tree: ast.Module) -> Iterator[ast.AST]:
    """The module-level statements that run when the module is imported (``if
    TYPE_CHECKING:`` blocks and function bodies left out), and what they contain."""
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        if (isinstance(node, ast.If) and isinstance(node.test, ast.Name)
                and node.test.id == "TYPE_CHECKING"):
            continue
        yield from ast.walk(node)


def imports(root: Path, path: Path, on_import: bool = False) -> Iterator[tuple[int, str]]:
    """(line, imported name) for every import in a source file; ``from a import b`` gives
    ``a.b`` (b may be a submodule). ``on_import``: only what runs when it is imported."""
    module = module_name(root, path)
    is_package = path.name == "__init__.py"
    tree = ast.parse(path.read_text(), filename=str(path))
    for node in (_run_on_import(tree) if on_import else ast.walk(tree)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            base = _resolve(module, is_package, node.level, node.module)
            for alias in node.names:
                yield node.lineno, base if alias.name == "*" else f"{base}.{alias.name}"
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
              and node.func.attr == "import_module" and node.args
              and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
            yield node.lineno, node.args[0].value


def layer(name: str) -> str | None:
    """The layer a module belongs to: a leaf package, ``ground``, ``harness``, or None for
    anything outside the project (the standard library, the SDK, ...)."""
    if name == GROUND or name.startswith(GROUND + "."):
        return "ground"
    if name == DEV or name.startswith(DEV + "."):
        return "dev"
    parts = name.split(".")
    if parts[0] != "arib":
        return None
    return parts[1] if len(parts) > 1 and parts[1] in LEAVES else "harness"


def rule_broken(importer: str, imported: str) -> str | None:
    """The layering rule an import breaks, or None."""
    source, target = layer(importer), layer(imported)
    if importer == "arib" and target is not None:
        return ("harness/__init__.py must import nothing of the project on import: importing "
                "the ground floor runs it")
    if source in LEAVES and target == "harness":
        return f"{source}/ may import from harness/ only the ground floor ({GROUND})"
    if source == "ground" and target is not None and target != "ground":
        return f"the ground floor ({GROUND}) must import nothing of {target}/"
    if target == "dev" and source != "dev" and (importer, imported) not in DEV_BY_NAME:
        return (f"{DEV} (the project's own tools) is not in the wheel: nothing installed may "
                f"import it")
    if source == "mutants" and target == "checks":
        return "mutants/ must not import checks/ (pass what is needed in, or move it down)"
    if source == "targets" and target == "checks":
        return "targets/ must not import checks/ (a lane knows no check: move it to checks/)"
    return None


def violations(root: Path) -> list[str]:
    """One line per import that breaks a rule: the file, line, import and rule."""
    found = []
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            importer = module_name(root, path)
            for line, imported in imports(root, path, on_import=importer == "arib"):
                reason = rule_broken(importer, imported)
                if reason:
                    found.append(f"{path.relative_to(root)}:{line} imports {imported}: {reason}")
    return found


def test_the_project_keeps_its_layers():
    found = violations(ROOT)
    assert not found, "imports that break the layering:\n" + "\n".join(found)


def test_the_ground_floor_is_a_package_of_its_own():
    assert (ROOT / "harness" / "ground" / "__init__.py").is_file()
    assert not any(layer(name) for _, name in
                   imports(ROOT, ROOT / "harness" / "__init__.py", on_import=True))


def _tree(root: Path, files: dict[str, str]) -> Path:
    for package in PACKAGES:
        (root / package).mkdir(exist_ok=True)
        (root / package / "__init__.py").touch()
    (root / "harness" / "ground").mkdir(exist_ok=True)
    (root / "harness" / "ground" / "__init__.py").touch()
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


@pytest.mark.parametrize(("rel", "text", "expected"), [
    ("checks/bad.py", "from arib.execute import sdk_version\n",
     "checks/bad.py:1 imports arib.execute.sdk_version: checks/ may import"),
    ("targets/bad.py", "from arib import interrupts\n",
     "targets/bad.py:1 imports arib.interrupts: targets/ may import"),
    ("mutants/bad.py", "def f():\n    import arib.cli.main\n",
     "mutants/bad.py:2 imports arib.cli.main: mutants/ may import"),
    ("mutants/bad.py", "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                       "    from arib.checks.base import CheckSpec\n",
     "mutants/bad.py:3 imports arib.checks.base.CheckSpec: mutants/ must not import checks/"),
    ("targets/bad.py", "from arib.checks.base import CheckSpec\n",
     "targets/bad.py:1 imports arib.checks.base.CheckSpec: targets/ must not import checks/"),
    ("harness/ground/bad.py", "from arib.caches.keys import verdict_key\n",
     "harness/ground/bad.py:1 imports arib.caches.keys.verdict_key: the ground floor"),
    ("harness/ground/bad.py", "from .. import admission\n",
     "harness/ground/bad.py:1 imports arib.admission: the ground floor"),
    ("harness/ground/bad.py", "import importlib\nimportlib.import_module('arib.targets.base')\n",
     "harness/ground/bad.py:2 imports arib.targets.base: the ground floor"),
    ("harness/runs/bad.py", "from arib.dev.noxsupport import find_uv\n",
     "harness/runs/bad.py:1 imports arib.dev.noxsupport.find_uv: arib.dev (the project's"),
    ("checks/bad.py", "import arib.dev.docs\n",
     "checks/bad.py:1 imports arib.dev.docs: arib.dev (the project's own tools)"),
    ("harness/__init__.py", "from arib import cli\n",
     "harness/__init__.py:1 imports arib.cli: harness/__init__.py must import nothing"),
    ("harness/__init__.py", "from . import cli\n",
     "harness/__init__.py:1 imports arib.cli: harness/__init__.py must import nothing"),
])
def test_an_upward_import_is_named_with_its_rule(tmp_path, rel, text, expected):
    found = violations(_tree(tmp_path, {rel: text}))
    assert len(found) == 1 and found[0].startswith(expected), found


@pytest.mark.parametrize("text", [
    "from arib.ground.model import Trial\nfrom arib.ground import child\n",
    "import arib.ground.services\nfrom arib.targets.base import Handle\nimport anyio\n",
    "from . import sibling\nfrom .sibling import thing\n",
])
def test_imports_the_layers_allow_are_not_reported(tmp_path, text):
    files = {f"{leaf}/good.py": text for leaf in LEAVES}
    files["harness/ground/good.py"] = "import os\nfrom . import a\nfrom arib.ground import b\n"
    files["harness/good.py"] = ("from arib.checks.base import CheckSpec\n"
                                "from arib.mutants import pool\n")
    files["harness/__init__.py"] = ("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                                    "    from arib.api import validate\n"
                                    "def __getattr__(name):\n"
                                    "    import arib.api\n")
    assert violations(_tree(tmp_path, files)) == []


# Families are plugins: their names and packages live in their records (targets/<family>/
# family.py) and folders, never in the harness.
# The project's own tools (not installed) measure its families by name: the throughput bench
# times ARIB-CONC-001 on SQLiteSession beside mutmut.
OWN_TOOLS = ("harness/dev/",)


def _family_words() -> tuple[str, ...]:
    from arib.ground.family import all_families

    words = []
    for family in all_families():
        words.append(family.name)
        for field in (family.checks, family.mutants, family.reference):
            words.append(field.partition(":")[0])
    return tuple(sorted(set(words)))


def names_a_family(root: Path, path: Path, words: tuple[str, ...]) -> list[str]:
    """The lines of ``path``'s code (not its docstrings or comments) that name a family: a
    string or an import that holds a family's name or one of its packages."""
    tree = ast.parse(path.read_text())
    docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                  if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef,
                                       ast.AsyncFunctionDef))
                  and node.body and isinstance(node.body[0], ast.Expr)
                  and isinstance(node.body[0].value, ast.Constant)}
    found = []
    for node in ast.walk(tree):
        text = None
        if isinstance(node, ast.Constant) and isinstance(node.value, str) \
                and id(node) not in docstrings:
            text = node.value
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            text = " ".join([getattr(node, "module", None) or "",
                             *(alias.name for alias in node.names)])
        if text and any(word in text for word in words):
            found.append(f"{path.relative_to(root)}:{node.lineno} names a family: {text[:80]!r}")
    return found


def test_the_harness_names_no_family():
    words = _family_words()
    assert "openai-agents" in words and "arib.checks.langgraph" in words
    found = [line for path in sorted((ROOT / "harness").rglob("*.py"))
             if not str(path.relative_to(ROOT)).startswith(OWN_TOOLS)
             for line in names_a_family(ROOT, path, words)]
    assert not found, "the harness names a family (move it to the family's record):\n" + \
        "\n".join(found)


def test_a_family_named_in_code_is_found(tmp_path):
    module = tmp_path / "harness" / "bad.py"
    module.parent.mkdir()
    module.write_text('"""Mentions openai-agents in prose: fine."""\n'
                      'NAME = "openai-agents"\nfrom arib.checks.langgraph import x\n')
    found = names_a_family(tmp_path, module, ("openai-agents", "arib.checks.langgraph"))
    assert sorted(line.split(" names")[0] for line in found) == ["harness/bad.py:2",
                                                               "harness/bad.py:3"]
