"""Generated mutants kept across runs: one entry per backend module source and generator.

Generating a module's mutants with libcst takes about a second (parse, every operator asked
at every node, each mutated function rendered and compiled), and every survey, admission and
bench does it again for each module its lanes use, although the result depends only on:

- the module's installed source text (its SHA-256) and the class mutated;
- the generator's own source (``arib.mutants.generate``, ``arib.mutants.operators``,
  ``arib.mutants.swap``, ``arib.mutants.base``, ``arib.mutants.report``: operators, rendering,
  ids, the in-place swap);
- the libcst version and the Python version (what compiles is dropped otherwise).

An entry is keyed on all of them and holds the report as JSON (each mutated source stored as
its change against the module's source). Before an entry is written, its JSON text is decoded
again and compared with the report it came from; one that would not come back equal is not
kept, nor one the folder cannot take (the run goes on with what it generated). An
entry that fails to load, or that loads to mutants of another module, is generated again and
counted (``unreadable``), never trusted. Safe to share between runs and machines: written
atomically, no absolute path, process id or host name in a key or an entry.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import sys
from collections.abc import Iterator, Mapping
from importlib import metadata
from pathlib import Path
from typing import Any

from arib.caches.verdicts import DEFAULT_DIR, Lookup, cache_key, source_hash
from arib.ground.files import atomic_write_text
from arib.ground.model import MutantKind
from arib.mutants.base import MutantSpec
from arib.mutants.pool import use_store
from arib.mutants.report import GenerationReport
from arib.mutants.swap import UnitSwap

FORMAT = 1
GENERATOR = ("arib.mutants.generate", "arib.mutants.operators", "arib.mutants.swap",
             "arib.mutants.base", "arib.mutants.report")


def generation_key(module: str, backend: str, source: str) -> str:
    """The key of class ``backend``'s mutants in ``module`` whose installed text is
    ``source``, under this generator, libcst and Python."""
    return cache_key(kind="generation", format=FORMAT, module=module, backend=backend,
                     source=hashlib.sha256(source.encode()).hexdigest(),
                     generator=source_hash(*GENERATOR), libcst=metadata.version("libcst"),
                     python=list(sys.version_info[:3]),
                     implementation=sys.implementation.name)


def _common_prefix(a: str, b: str) -> int:
    """The length of the longest common prefix (slices compared in C, by bisection)."""
    low, high = 0, min(len(a), len(b))
    while low < high:
        mid = (low + high + 1) // 2
        if a[:mid] == b[:mid]:
            low = mid
        else:
            high = mid - 1
    return low


def _splice(base: str, text: str) -> list[Any]:
    """``text`` as [kept prefix length, kept suffix length, middle] against ``base``."""
    start = _common_prefix(base, text)
    end = _common_prefix(base[start:][::-1], text[start:][::-1])
    return [start, end, text[start:len(text) - end]]


def _unsplice(base: str, splice: Any) -> str:
    """The text ``_splice`` made ``splice`` of; ValueError when it does not fit ``base``."""
    if not isinstance(splice, list) or len(splice) != 3:
        raise ValueError(f"a splice is [prefix, suffix, middle], not {splice!r:.60}")
    start, end, middle = _int(splice[0]), _int(splice[1]), _str(splice[2])
    if start < 0 or end < 0 or start + end > len(base):
        raise ValueError(f"splice {start}+{end} does not fit a source of {len(base)}")
    return base[:start] + middle + base[len(base) - end:]


def _str(value: Any) -> str:
    if not isinstance(value, str):
        raise ValueError(f"expected a string, found {value!r:.60}")
    return value


def _int(value: Any) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise ValueError(f"expected an integer, found {value!r:.60}")
    return value


def _swap(data: Any) -> UnitSwap | None:
    if data is None:
        return None
    if not isinstance(data, dict) or set(data) != {"scope", "name", "text", "flags"}:
        raise ValueError(f"not a swap: {data!r:.60}")
    return UnitSwap(scope=_str(data["scope"]), name=_str(data["name"]),
                    text=_str(data["text"]), flags=_int(data["flags"]))


def encode(report: GenerationReport, source: str) -> dict[str, Any]:
    """The JSON form of a generated ``report`` of the module whose text is ``source``."""
    mutants = []
    for m in report.mutants:
        if m.kind is not MutantKind.GENERATED or m.patch is not None or m.source is None:
            raise ValueError(f"mutant {m.id!r} is not a generated source edit")
        mutants.append({
            "id": m.id, "target": m.target, "module": m.module, "qualname": m.qualname,
            "operator": m.operator, "original": m.original, "replacement": m.replacement,
            "description": m.description, "source": _splice(source, m.source),
            "swap": dataclasses.asdict(m.swap) if m.swap is not None else None,
        })
    return {"format": FORMAT, "target": report.target, "module": report.module,
            "dropped_noncompiling": report.dropped_noncompiling,
            "dropped_details": list(report.dropped_details),
            "sites_by_operator": dict(report.sites_by_operator), "mutants": mutants}


def decode(data: Mapping[str, Any], source: str) -> GenerationReport:
    """A report from its JSON form (``encode``) and the module text it was made from."""
    if data["format"] != FORMAT:
        raise ValueError(f"format {data['format']!r}, not {FORMAT}")
    mutants = tuple(MutantSpec(
        id=_str(m["id"]), kind=MutantKind.GENERATED, target=_str(m["target"]),
        module=_str(m["module"]), qualname=_str(m["qualname"]), operator=_str(m["operator"]),
        original=_str(m["original"]), replacement=_str(m["replacement"]),
        description=_str(m["description"]), source=_unsplice(source, m["source"]),
        swap=_swap(m["swap"]),
    ) for m in data["mutants"])
    return GenerationReport(
        target=_str(data["target"]), module=_str(data["module"]), mutants=mutants,
        dropped_noncompiling=_int(data["dropped_noncompiling"]),
        dropped_details=tuple(_str(d) for d in data["dropped_details"]),
        sites_by_operator={_str(k): _int(v) for k, v in data["sites_by_operator"].items()})


def same(a: GenerationReport, b: GenerationReport) -> bool:
    """Equal reports, swaps included (MutantSpec's equality leaves the swap out)."""
    return a == b and all(x.swap == y.swap for x, y in zip(a.mutants, b.mutants, strict=True))


class GenerationStore:
    """A folder of generated reports, one JSON file per ``generation_key``."""

    def __init__(self, root: Path | None = DEFAULT_DIR) -> None:
        self.root = None if root is None else root / "generated"
        self.counts = {state.value: 0 for state in Lookup}
        self.kept = 0

    def load(self, module: str, backend: str, source: str) -> GenerationReport | None:
        """The kept report of ``backend`` in ``module`` (text ``source``), or None (counted)."""
        report, state = self._load(module, backend, source)
        self.counts[state.value] += 1
        return report

    def _load(self, module: str, backend: str, source: str
              ) -> tuple[GenerationReport | None, Lookup]:
        if self.root is None:
            return None, Lookup.MISS
        path = self.root / f"{generation_key(module, backend, source)}.json"
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return None, Lookup.MISS
        except (OSError, UnicodeDecodeError):
            return None, Lookup.UNREADABLE
        try:
            report = decode(json.loads(text), source)
        except (ValueError, KeyError, TypeError, AttributeError, IndexError):
            return None, Lookup.UNREADABLE
        if report.module != module or any(m.module != module for m in report.mutants):
            return None, Lookup.UNREADABLE
        return report, Lookup.HIT

    def keep(self, module: str, backend: str, source: str, report: GenerationReport) -> bool:
        """Write ``report`` atomically when it reads back equal; whether it was kept."""
        if self.root is None:
            return False
        try:
            text = json.dumps(encode(report, source), ensure_ascii=False)
            if not same(decode(json.loads(text), source), report):
                return False
            self.root.mkdir(parents=True, exist_ok=True)
            atomic_write_text(self.root / f"{generation_key(module, backend, source)}.json",
                              text)
        except (ValueError, TypeError, OSError):
            # Not all generated source edits, or a folder that cannot be written: the run
            # goes on with what it generated; the next one generates again.
            return False
        self.kept += 1
        return True

    def describe(self) -> str:
        """One line: how the modules' mutants were had (for the run's output)."""
        hits, misses = self.counts[Lookup.HIT.value], self.counts[Lookup.MISS.value]
        unreadable = self.counts[Lookup.UNREADABLE.value]
        if self.root is None:
            return "generated mutants: no cache (--no-cache), every module generated"
        again = f" ({unreadable} unreadable, generated again)" if unreadable else ""
        return (f"generated mutants: {hits} of {hits + misses + unreadable} module(s) from the "
                f"cache, {misses + unreadable} generated{again}, {self.kept} kept")


@contextlib.contextmanager
def generation_cache(no_cache: bool) -> Iterator[GenerationStore]:
    """Within the block, keep generated mutants in the cache folder (none with
    ``--no-cache``); the store used before comes back after it."""
    store = GenerationStore(None if no_cache else DEFAULT_DIR)
    previous = use_store(store)
    try:
        yield store
    finally:
        use_store(previous)
