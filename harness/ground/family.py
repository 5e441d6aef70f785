"""Runtime families: what one family of backends brings, and the registry that finds them.

A family (openai-agents' sessions is the first) is a plugin: a frozen ``Family`` record names
the distribution whose versions are measured, its lock files, its reference target and
forced-broken mutant, the packages of its checks and hand-written mutants, its lanes, and how
its item stores are read by the checks' common helpers. The harness asks the *active* family
for each of these and names none of them itself.

Families are found in the entry-point group ``arib.families`` (an installed package adds one
with ``[project.entry-points."arib.families"] name = "module:FAMILY"``; this project's own are
registered the same way in its pyproject.toml, which is read instead where the project is not
installed: nox's own Python imports this module from the checkout). The family measured when
none is named is the one whose record says ``default=True``.
Installed packages can also add lanes to a family, in the group ``arib.lanes.<family name>``
with every ``-`` written ``_`` (``arib.lanes.openai_agents``: packaging tools refuse a hyphen
in a group; the hyphenated spelling is read too), e.g. a user's own store as an openai-agents
lane; the entry point's name is the lane's name (see ``plugin_lanes``).
Every field that names code is a ``"module:attribute"`` reference, resolved only when used, so
that this ground floor imports nothing of checks/, mutants/ or targets/.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib
import os
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any, TypeVar

from arib.ground.errors import PluginError, UnknownNameError

T = TypeVar("T")

ENTRY_POINT_GROUP = "arib.families"
LANE_GROUP_PREFIX = "arib.lanes."  # + a family's name: lanes installed packages add to it
ENV_VAR = "ARIB_FAMILY"  # the active family, inherited by every child process


@dataclass(frozen=True)
class Family:
    """One runtime family: its distribution, lock files, reference, lanes, checks, mutants."""

    name: str  # names its results, baselines and survivors files: "<name>-<version>"
    distribution: str  # the installed distribution whose version is measured
    description: str
    checks: str  # package whose modules each define CHECK
    mutants: str  # package whose modules register the hand-written mutants
    lanes: str  # -> tuple[TargetSpec, ...]: every lane, the reference first
    survey_lanes: str  # -> tuple[TargetSpec, ...]: the survey's default lanes (no reference)
    reference: str  # -> TargetSpec of the family's own reference backend
    forced_broken: str  # name of the forced-broken hand-written mutant of the reference
    read_items: str  # -> async (store, limit) -> list: how checks read an item store
    # -> (lane, ServiceManager) -> NotMeasured | None: why a lane cannot run here (a missing
    # driver or server); "" when only the lanes' services are asked
    availability: str = ""
    # -> tuple[NotMeasured, ...]: backends of the family that no lane can measure here
    not_measured: str = ""
    # -> (lane, object) -> str | None, or an awaitable of it: the family's own claims about a
    # lane verified on a probe instance (beside arib.targets.base.verify_claims); None when true,
    # else what is false, naming the lane and the fix. "" when the family claims no more.
    verify: str = ""
    # -> async (lane, BuildContext, step) -> None: one instance of a lane on a fresh store,
    # called once the way the family's checks call it, each call named with step(name) before
    # it is made; raises what a call raised (arib.probe). "" when the family has none: its
    # lanes are then measured without a probe.
    probe: str = ""
    lock_dir: Path | None = None  # holds "<name>-<version>.txt" constraints files
    # holds "<name>-<version>.txt" survivor waivers; None: mutants/survivors/
    survivors_dir: Path | None = None
    packages: tuple[str, ...] = ()  # other distributions whose versions a run records
    # A family measured as several distributions released apart (LangGraph's checkpointer
    # packages): (label, distribution) pairs; its version is then the installed versions
    # joined, "cp4.3.2+sq3.1.2+pg3.2.0", so that each combination has its own lock and results.
    components: tuple[tuple[str, str], ...] = ()
    # The family measured when none is named (--family, $ARIB_FAMILY): exactly one has it.
    default: bool = False
    # What nox runs: the version its sessions test and draw reports with, the versions
    # `nox -s bench` measures by default and with `--versions all` (() there: every version
    # with a lock file), and the session whose environment holds the pinned version (and,
    # with ``tests``, runs that folder of tests and admits the family's checks).
    pinned: str = ""
    bench_versions: tuple[str, ...] = ()
    all_versions: tuple[str, ...] = ()
    nox_session: str = ""
    tests: str = ""  # its own tests, run by its nox session, never by selftest; "" none
    bench_parity: bool = False  # `nox -s bench` runs `parity update` after each version
    # Environment variables every run sets for this family (unless set already), e.g. the
    # SDK's tracing switched off: the bench never reaches the network.
    environment: tuple[tuple[str, str], ...] = ()
    # -> (subparsers) -> None: the family's own commands of `python -m arib` ("" none)
    commands: str = ""
    # -> WorkflowKind: the workflows the family's parity gate replays on every lane ("" none)
    parity: str = ""
    # -> arib.ground.official.OfficialSuite: the family's own conformance suite, run beside our
    # checks by `python -m arib official` ("" none)
    official: str = ""
    # -> (class) -> a lane (something with ``spec()``): how a class given where a lane is
    # named (``--lanes my_module:MyStore``) becomes a lane; UsageError naming the class when it
    # cannot ("" when the family makes no lane from a class)
    user_lane: str = ""
    # a module with SEED_SDK, SEED_CELLS ({Cell: verdict}) and SEED_NOTES ({check id: why}):
    # a published release's cells a run of that version is compared with ("" none)
    seed: str = ""

    def resolve(self, field_name: str) -> Any:
        """The object a ``"module:attribute"`` field names, imported now."""
        ref = getattr(self, field_name)
        try:
            value = _import_ref(ref)
        except (ImportError, AttributeError) as exc:
            raise PluginError(
                f"family {self.name!r}: {field_name}={ref!r} cannot be loaded "
                f"({type(exc).__name__}: {exc}); the rule: every code field is "
                f"'module:attribute' naming an importable object; fix the family's record"
            ) from None
        return value

    def resolve_as(self, field_name: str, expected: type[T]) -> T:
        """``resolve``, refusing an object that is not an ``expected`` (PluginError naming
        the field, what it names and the type it should be)."""
        value = self.resolve(field_name)
        if not isinstance(value, expected):
            raise PluginError(
                f"family {self.name!r}: {field_name}={getattr(self, field_name)!r} names an "
                f"object of type {type(value).__name__!r}, not {expected.__name__!r}; fix the "
                f"family's record")
        return value

    @property
    def distributions(self) -> frozenset[str]:
        """The family's own distributions: its distribution and its components'."""
        return frozenset({self.distribution, *(dist for _, dist in self.components)})

    def version(self) -> str:
        """The installed version of the family's distribution, or 'not-installed'; for a family
        of several components, their versions joined (see ``components``)."""
        if not self.components:
            return _installed_version(self.distribution)
        return "+".join(f"{label}{_installed_version(dist)}" for label, dist in self.components)

    def component_versions(self, version: str) -> dict[str, str]:
        """distribution -> version named by a components version label (``version()``'s
        form); UnknownNameError naming the label and the form when it does not parse."""
        parts = version.split("+")
        labels = [label for label, _ in self.components]
        if len(parts) != len(labels) or not all(p.startswith(lb) and len(p) > len(lb)
                                                for p, lb in zip(parts, labels, strict=True)):
            form = "+".join(f"{label}<version>" for label in labels) or "<version>"
            raise UnknownNameError(
                f"version {version!r} of family {self.name!r} is not of the form {form!r}; "
                f"name each component's version, e.g. {self.version()!r}")
        return {dist: part[len(label):]
                for (label, dist), part in zip(self.components, parts, strict=True)}

    def lock_file(self, version: str) -> Path | None:
        """The constraints file of ``version``, or None when the family keeps no locks."""
        return None if self.lock_dir is None else self.lock_dir / f"{self.name}-{version}.txt"

    def stem(self, version: str) -> str:
        """``<name>-<version>``: the tail of this family's result, baseline and waiver names."""
        return f"{self.name}-{version}"

    @property
    def lane_group(self) -> str:
        """The entry-point group through which installed packages add lanes to this family."""
        return lane_groups(self.name)[0]

    def to_json(self) -> dict[str, Any]:
        """The JSON form of this family: name, distribution and description."""
        return {"name": self.name, "distribution": self.distribution,
                "description": self.description}


@dataclass(frozen=True)
class PluginLanes:
    """Lanes that installed packages add to a family, and the entry points that failed."""

    loaded: tuple[Any, ...]  # TargetSpecs
    failed: tuple[tuple[str, str], ...]  # (entry point name, why it is not measured)


def lane_groups(family: str) -> tuple[str, ...]:
    """The entry-point groups read for a family's plugin lanes: ``arib.lanes.`` + the family's
    name with ``-`` as ``_`` (a valid group: ``arib.lanes.openai_agents``), then the name as
    it is (``arib.lanes.openai-agents``, which packaging tools refuse, read for old installs)."""
    return tuple(dict.fromkeys((f"{LANE_GROUP_PREFIX}{family.replace('-', '_')}",
                                f"{LANE_GROUP_PREFIX}{family}")))


def _as_specs(value: Any, name: str) -> list[Any]:
    """A TargetSpec, something with a ``spec()`` (arib.api's Lane), or a sequence of them;
    a single lane takes the entry point's ``name``, each of a sequence keeps its own."""
    single = not isinstance(value, (list, tuple))
    items = [value] if single else list(value)
    specs = [item.spec() if callable(getattr(item, "spec", None)) else item for item in items]
    for spec in specs:
        if not (isinstance(getattr(spec, "name", None), str)
                and callable(getattr(spec, "build", None))):
            raise TypeError(f"{spec!r} is not a lane (an arib.targets.base.TargetSpec, or a "
                            f"arib.api lane)")
    first = specs[0]
    if single and first.name != name and dataclasses.is_dataclass(first) \
            and not isinstance(first, type):
        specs = [dataclasses.replace(first, name=name)]
    return specs


@functools.cache
def plugin_lanes(family: str, builtin: frozenset[str] = frozenset()) -> PluginLanes:
    """The lanes installed packages register in the family's groups (``lane_groups``), each
    named by its entry point; an entry point that fails to load, names no lane or reuses a
    lane's name is listed as failed, naming its distribution, and the others go on."""
    loaded: list[Any] = []
    failed: list[tuple[str, str]] = []
    taken = set(builtin)
    eps = [ep for group in lane_groups(family) for ep in metadata.entry_points(group=group)]
    for ep in eps:
        dist = getattr(getattr(ep, "dist", None), "name", None) or "an unknown distribution"
        try:
            specs = _as_specs(ep.load(), ep.name)
        except Exception as exc:  # a plugin can fail any way: name it, the others go on
            failed.append((ep.name, f"not measured: lane entry point {ep.name!r} = "
                                    f"{ep.value!r} of {dist!r} cannot be loaded "
                                    f"({type(exc).__name__}: {exc}); fix or uninstall {dist!r}"))
            continue
        clash = [spec.name for spec in specs if spec.name in taken]
        if clash:
            failed.append((ep.name, f"not measured: lane entry point {ep.name!r} of {dist!r} "
                                    f"names lane {clash[0]!r}, which is already taken; "
                                    f"rename the lane in {dist!r}"))
            continue
        taken.update(spec.name for spec in specs)
        loaded.extend(specs)
    return PluginLanes(tuple(loaded), tuple(failed))


@functools.cache
def _installed_version(distribution: str) -> str:
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return "not-installed"


def _entry_points() -> dict[str, str]:
    """name -> "module:attr" of the installed ``arib.families`` entry points."""
    return {ep.name: ep.value for ep in metadata.entry_points(group=ENTRY_POINT_GROUP)}


def _import_ref(ref: str) -> Any:
    """The object a ``"module:attribute.path"`` reference names, imported now."""
    module, _, attr = ref.partition(":")
    value: Any = importlib.import_module(module)
    for part in attr.split(".") if attr else ():
        value = getattr(value, part)
    return value


def _load(name: str, ref: str) -> Family:
    try:
        value = _import_ref(ref)
    except Exception as exc:  # a plugin's import can fail any way: name it, never crash
        raise PluginError(
            f"family {name!r} ({ref!r}) cannot be loaded: {type(exc).__name__}: {exc}; "
            f"fix or uninstall the package that registers it in {ENTRY_POINT_GROUP!r} (its "
            f"import traceback is chained below)"
        ) from exc
    if not isinstance(value, Family) or value.name != name:
        raise PluginError(
            f"entry point {name!r} = {ref!r} in {ENTRY_POINT_GROUP!r} is {value!r}; the rule: "
            f"it names an arib.ground.family.Family whose name is {name!r}; fix the record"
        )
    return value


def _checkout_entry_points() -> dict[str, str]:
    """name -> "module:attr" of the ``arib.families`` table of the checkout's pyproject.toml,
    for a process that runs this project uninstalled (nox's own Python)."""
    from arib.ground.package import checkout_root

    root = checkout_root()
    if root is None:
        return {}
    found: dict[str, str] = {}
    section = False
    for line in (root / "pyproject.toml").read_text().splitlines():
        stripped = line.strip()
        if stripped.startswith("["):
            section = stripped == f'[project.entry-points."{ENTRY_POINT_GROUP}"]'
        elif section and "=" in stripped and not stripped.startswith("#"):
            name, _, value = stripped.partition("=")
            found[name.strip().strip('"')] = value.strip().strip('"')
    return found


def known_families() -> dict[str, str]:
    """Every family's name -> "module:attr": the installed ``arib.families`` entry points
    (this project's own among them), or the checkout's table where it is not installed."""
    installed = _entry_points()
    if any(ref.startswith("arib.") for ref in installed.values()):
        return installed
    return {**_checkout_entry_points(), **installed}


@functools.cache
def default_family() -> str:
    """The name of the family measured when none is named: the one whose record says
    ``default=True`` (PluginError when none does, or several)."""
    marked = [name for name in sorted(known_families()) if get_family(name).default]
    if len(marked) != 1:
        raise PluginError(
            f"the installed families mark {len(marked)} as the default "
            f"({', '.join(marked) or 'none'}): the rule: exactly one family record says "
            f"default=True; fix the records, or name the family with --family")
    return marked[0]


def all_families() -> tuple[Family, ...]:
    """Every known family's record, by name."""
    return tuple(get_family(name) for name in sorted(known_families()))


def apply_environment() -> None:
    """Set every known family's environment variables that are not set yet (the SDKs'
    tracing off), before anything of a family is imported."""
    for family in all_families():
        for key, value in family.environment:
            os.environ.setdefault(key, value)


@functools.cache
def get_family(name: str) -> Family:
    """The family called ``name``; unknown names raise UnknownNameError listing the known."""
    known = known_families()
    if name not in known:
        raise UnknownNameError(
            f"unknown family {name!r}: the installed families are {', '.join(sorted(known))}; "
            f"install the package that registers it in {ENTRY_POINT_GROUP!r}, or pick one "
            f"with --family"
        )
    return _load(name, known[name])


def use_family(name: str) -> Family:
    """Make ``name`` the active family of this process and of every child it starts."""
    family = get_family(name)
    os.environ[ENV_VAR] = name
    return family


def active_family() -> Family:
    """The family this process measures: ``$ARIB_FAMILY``, else the default family."""
    return get_family(os.environ.get(ENV_VAR) or default_family())
