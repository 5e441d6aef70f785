"""Where the installed package is: its version, its folders, the data files it ships.

The import root is ``arib``; in a source checkout its folders are harness/ (``arib``),
checks/, mutants/ and targets/ (``arib.checks`` ...), in a wheel all sit under one ``arib``
folder. Code asks here instead of walking up from ``__file__``, which is right only in the
checkout. Standard library only (the noxfile imports the ground floor)."""

from __future__ import annotations

import importlib.metadata
import importlib.util
from functools import cache
from importlib.resources import files
from pathlib import Path

DISTRIBUTION = "agent-integrity-bench"
# The checkout's folders and the packages they are (pyproject's package-dir says the same;
# tests/test_wheel.py holds the two together).
LAYOUT = {"harness": "arib", "checks": "arib.checks", "mutants": "arib.mutants",
          "targets": "arib.targets"}
PARTS = ("checks", "mutants", "targets")


@cache
def version() -> str:
    """The installed distribution's version ("unknown" when it is not installed)."""
    try:
        return importlib.metadata.version(DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


@cache
def folder(part: str = "") -> str:
    """The folder of ``arib`` (``part`` empty) or of ``arib.<part>``, ending in a slash."""
    name = f"arib.{part}" if part else "arib"
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        raise ImportError(f"the package {name!r} is not importable: install the project "
                          f"(pip install -e .)")
    return str(Path(next(iter(spec.submodule_search_locations))).resolve()) + "/"


def harness_folders() -> tuple[str, ...]:
    """The folders of the harness's own code and checks (in a wheel ``arib/`` holds the
    targets and mutants too: a caller that must tell them apart excludes ``folder("targets")``
    and ``folder("mutants")``)."""
    return (folder(), folder("checks"))


def checkout_name(module: str) -> str:
    """A module's dotted name as the checkout lays its folders out (``arib.execute`` ->
    ``harness.execute``, ``arib.checks.openai_agents.conc_001`` -> ``checks.conc_001``): the paths
    reports show. Other modules are returned unchanged."""
    if module != "arib" and not module.startswith("arib."):
        return module
    rest = module.removeprefix("arib").removeprefix(".")
    if rest.split(".")[0] in PARTS:
        return rest
    return f"harness.{rest}" if rest else "harness"


def own_folders() -> tuple[str, ...]:
    """Every folder of the project's code (harness, checks, targets, mutants)."""
    return (folder(), *(folder(p) for p in PARTS))


def data_path(package: str, *parts: str) -> Path:
    """A data file (or folder) shipped inside ``package``, e.g. ``data_path("arib",
    "schemas")``, as a file-system path (the package is installed as files, never zipped: the
    checks fork children that read the same files)."""
    node = files(package)
    for part in parts:
        node = node.joinpath(part)
    return Path(str(node))


@cache
def checkout_root() -> Path | None:
    """The source checkout the package runs from (its pyproject.toml names this
    distribution), or None for an installed wheel."""
    root = Path(folder()).parent
    pyproject = root / "pyproject.toml"
    try:
        text = pyproject.read_text()
    except OSError:
        return None
    return root if f'name = "{DISTRIBUTION}"' in text else None
