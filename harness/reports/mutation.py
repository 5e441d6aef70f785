"""The kill matrix as a mutation-testing-report-schema document (schema version 2).

One report mutant per paired mutant (its stable id), in the file of the backend module it
changes, with that module's original source read from the installed package at run time.
A mutant paired with several checks is merged the standard way: ``coveredBy`` lists every
check it was judged by and ``killedBy`` the checks that killed it, so the viewer's test view
shows the whole check x mutant matrix; ``statusReason`` keeps one line of evidence per check.

Status mapping (ours -> schema), and the status of a mutant judged by several checks, by
precedence: ``killed`` -> Killed (any check killed it); ``survived`` -> Survived, and
``flaky`` and ``timeout`` -> Survived too (neither is a kill: a kill that does not repeat
does not count toward admission, and a timeout is a kill only under a "does not hang" check,
where the mutant is already ``killed``; the reason starts ``flaky:`` or ``timeout:``);
``no_coverage``, ``not_judgeable`` and ``error`` -> NoCoverage (no check judged it: the
reason says which and why); ``equivalent``, ``duplicate``, ``not_applicable`` and
``not_run`` -> Ignored, with the reason (the author's waiver, the mutant it duplicates, the
claim that rules it out).

So the viewer's two scores are the survey's (``arib.survey.scores``), by one formula: its
mutation score, detected / (detected + undetected) with Killed and Timeout detected and
Survived and NoCoverage undetected, is the score of all mutants, killed / (mutants -
equivalent - duplicate - not_applicable); its score of covered code, detected / (detected +
Survived), is the covered score, killed / (killed + survived + flaky + timeout). (Mapped to
the schema's Timeout and RuntimeError, a timeout counted as detected and an error was left
out of the total: the page showed 20.69 % where the survey said 19.6 %.)

The survey builds its own document (``arib.survey.report``) from ``mutant_entry``,
``file_entry`` and ``report_document``, with one file per lane and module.

Locations: a generated mutant is located at its ``original`` snippet inside the text of its
qualified name's def, disambiguated by where the mutated source actually differs, and its
``replacement`` is the mutated text of exactly that span (so splicing it gives the mutant's
source). When the snippet is the whole def (``early_return``), the line the change lands
on is shown instead. The fallback is the def line. A hand-written mutant spans the def it overrides.
"""

from __future__ import annotations

import ast
import bisect
import importlib.util
import os
import platform
import re
import sys
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any

from arib.ground.errors import ResultsError
from arib.ground.family import active_family
from arib.ground.keys import MutantKey
from arib.ground.model import MutantKind, MutantResult, MutantStatus
from arib.ground.package import checkout_name
from arib.ground.sources import installed_source
from arib.mutants.base import MutantSpec
from arib.runs.results import load_schema

if TYPE_CHECKING:
    from arib.checks.base import CheckSpec

SCHEMA_FILE = "mutation-testing-report-schema.json"
SCHEMA_VERSION = "2"
SCHEMA_URL = ("https://raw.githubusercontent.com/stryker-mutator/mutation-testing-elements/master/"
              "packages/report-schema/src/mutation-testing-report-schema.json")
# Admission wants every paired mutant killed: anything below 100 is not admitted.
THRESHOLDS = {"high": 100, "low": 100}

STATUS_MAP: dict[MutantStatus, str] = {
    MutantStatus.KILLED: "Killed",
    MutantStatus.SURVIVED: "Survived",
    MutantStatus.FLAKY: "Survived",
    MutantStatus.TIMEOUT: "Survived",
    MutantStatus.ERROR: "NoCoverage",
    MutantStatus.EQUIVALENT: "Ignored",
    MutantStatus.DUPLICATE: "Ignored",
    MutantStatus.NOT_APPLICABLE: "Ignored",
    MutantStatus.NOT_JUDGEABLE: "NoCoverage",
    MutantStatus.NOT_RUN: "Ignored",
    MutantStatus.NO_COVERAGE: "NoCoverage",
}
# Which schema status a mutant judged by several checks gets: the first one present.
PRECEDENCE = ("Killed", "Survived", "Timeout", "RuntimeError", "NoCoverage", "Ignored")
WAIVER_PREFIX = "waived as equivalent: "

Span = tuple[int, int]


def module_path(module: str, origin: str | None = None) -> str:
    """The report path of a module: its dotted name as a relative file path (the project's
    own modules as the checkout lays them out: ``checks/openai_agents/conc_001.py``)."""
    base = checkout_name(module).replace(".", "/")
    if origin is not None and Path(origin).name == "__init__.py":
        return f"{base}/__init__.py"
    return f"{base}.py"


@dataclass
class SourceText:
    """A source text with offset <-> position conversion and def lookup by qualname."""

    text: str

    def __post_init__(self) -> None:
        self.line_starts = [0] + [m.end() for m in re.finditer("\n", self.text)]
        try:
            self.tree: ast.Module | None = ast.parse(self.text)
        except SyntaxError:
            self.tree = None

    def offset(self, line: int, byte_col: int) -> int:
        """Character offset of an ast (1-based line, UTF-8 byte column) position."""
        start = self.line_starts[line - 1]
        end = self.line_starts[line] if line < len(self.line_starts) else len(self.text)
        raw = self.text[start:end].encode()[:byte_col]
        return start + len(raw.decode(errors="ignore"))

    def position(self, offset: int) -> dict[str, int]:
        """The schema position (1-based line and column) of a character offset."""
        line = bisect.bisect_right(self.line_starts, offset)
        return {"line": line, "column": offset - self.line_starts[line - 1] + 1}

    def location(self, span: Span) -> dict[str, dict[str, int]]:
        """The schema location (start and end positions) of ``span``."""
        return {"start": self.position(span[0]), "end": self.position(span[1])}

    def line_end(self, offset: int) -> int:
        """The offset of the end of the line holding ``offset`` (its newline, or the text's end)."""
        end = self.text.find("\n", offset)
        return len(self.text) if end < 0 else end

    def def_span(self, qualname: str) -> Span | None:
        """The text of the def (or class) named by ``qualname``, decorators excluded."""
        if self.tree is None:
            return None
        names = [n for n in qualname.split(".") if n and n != "<locals>"]
        body: list[ast.stmt] = self.tree.body
        node: ast.stmt | None = None
        for name in names:
            node = next((s for s in body if isinstance(
                s, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and s.name == name),
                None)
            if node is None:
                return None
            body = node.body  # type: ignore[attr-defined]
        if node is None or node.end_lineno is None or node.end_col_offset is None:
            return None
        return (self.offset(node.lineno, node.col_offset),
                self.offset(node.end_lineno, node.end_col_offset))


def _common_prefix(a: str, b: str) -> int:
    """Length of the common prefix of two strings (chunked, so long equal runs are fast)."""
    n, i, step = min(len(a), len(b)), 0, 4096
    while i < n and a[i:i + step] == b[i:i + step]:
        i += step
    i = min(i, n)
    while i < n and a[i] == b[i]:
        i += 1
    return i


def changed_span(original: str, mutated: str) -> tuple[Span, int] | None:
    """The span of ``original`` that ``mutated`` replaces, and the length change."""
    if original == mutated:
        return None
    p = _common_prefix(original, mutated)
    limit = min(len(original), len(mutated)) - p
    s = min(_common_prefix(original[::-1], mutated[::-1]), limit)
    return (p, len(original) - s), len(mutated) - len(original)


def _snippet_pattern(snippet: str) -> re.Pattern[str] | None:
    """A regex for a rendered snippet whose continuation lines may sit deeper in the file."""
    lines = snippet.strip("\n").split("\n")
    if not lines[0].strip():
        return None
    rest = "".join(r"\n[ \t]*" + re.escape(line.lstrip(" \t")) for line in lines[1:])
    return re.compile(re.escape(lines[0]) + rest)


def _occurrences(src: SourceText, snippet: str, scope: Span) -> Iterator[Span]:
    pattern = _snippet_pattern(snippet)
    if pattern is None:
        return
    for match in pattern.finditer(src.text, scope[0], scope[1]):
        yield match.span()


def _closest(candidates: Sequence[Span], target: Span) -> Span:
    """The candidate that overlaps ``target`` most, else the nearest one."""

    def key(c: Span) -> tuple[int, int]:
        overlap = min(c[1], target[1]) - max(c[0], target[0])
        gap = max(target[0] - c[1], c[0] - target[1], 0)
        return (gap, -overlap)

    return min(candidates, key=key)


def _line_span(src: SourceText, offset: int) -> Span:
    return (offset, max(src.line_end(offset), offset + 1) if offset < len(src.text) else offset)


def _insertion_span(src: SourceText, at: int) -> Span:
    """The line a pure insertion lands on (the line before, when that one is empty)."""
    start = src.text.rfind("\n", 0, at) + 1
    end = src.line_end(at)
    if start == end and start > 0:
        start = src.text.rfind("\n", 0, start - 1) + 1
    return (min(start, at), max(end, at))


def site_span(src: SourceText, spec: MutantSpec) -> Span | None:
    """The span of the site node a generated mutant replaces (its ``original`` snippet).

    Of the snippet's occurrences in the qualified name's def, the one where the mutated
    source actually differs; None for a hand-written mutant, for a snippet found nowhere,
    and for a snippet that is the whole def (``early_return`` inserts into it).
    """
    if spec.kind is MutantKind.HANDWRITTEN or spec.source is None:
        return None
    scope = src.def_span(spec.qualname)
    changed = changed_span(src.text, spec.source)
    found = list(_occurrences(src, spec.original, scope or (0, len(src.text))))
    if changed is None or not found:
        return None
    best = _closest(found, changed[0])
    if scope is not None and best[0] <= scope[0]:
        return None
    return best


def _locate(src: SourceText, spec: MutantSpec) -> tuple[Span, str]:
    """The span of the original source a mutant changes, and the text that replaces it."""
    scope = src.def_span(spec.qualname)
    if spec.kind is MutantKind.HANDWRITTEN or spec.operator == "handwritten":
        return (scope or _line_span(src, 0)), spec.replacement
    changed = changed_span(src.text, spec.source) if spec.source is not None else None
    found = list(_occurrences(src, spec.original, scope or (0, len(src.text))))
    replacement = spec.replacement.strip("\n")
    if changed is not None:
        (lo, hi), delta = changed
        span = (lo, hi)
        best = site_span(src, spec)
        if best is not None:
            span = (min(best[0], lo), max(best[1], hi))
        elif lo == hi:
            span = _insertion_span(src, lo)
        assert spec.source is not None
        return span, spec.source[span[0]:span[1] + delta]
    if found:
        return found[0], replacement
    if scope is not None:
        return (scope[0], src.line_end(scope[0])), replacement
    return _line_span(src, 0), replacement


def reason_line(result: MutantResult) -> str:
    """One line on a pair's status: the check, the status and its evidence."""
    evidence = result.evidence or ""
    if result.status is MutantStatus.EQUIVALENT:
        text = evidence.removeprefix(WAIVER_PREFIX) or "waived as equivalent"
        text = f"equivalent: {text}"
    elif result.status is MutantStatus.FLAKY:
        hits = sum(1 for v in result.runs if v is result.expected)
        text = f"flaky: {hits}/{len(result.runs)} reruns {result.expected.value}"
        text += f"; {evidence}" if evidence else ""
    else:
        text = result.status.value + (f": {evidence}" if evidence else "")
    return f"{result.check_id}: {text}"


def mutant_entry(src: SourceText, spec: MutantSpec, *, status: str, reason: str,
                 covered_by: Sequence[str], killed_by: Sequence[str], tests_completed: int,
                 duration_s: float, key: MutantKey | None = None) -> dict[str, Any]:
    """One schema mutant: ``spec`` located in ``src``, with its schema status and reason; its
    id is ``str(key)`` where each lane reports its own (the survey), else the mutant's id."""
    span, replacement = _locate(src, spec)
    mutator = f"handwritten:{spec.name or spec.id}" if spec.kind is MutantKind.HANDWRITTEN \
        else spec.operator
    return {
        "id": str(key) if key is not None else spec.id,
        "mutatorName": mutator,
        "replacement": replacement,
        "location": src.location(span),
        "status": status,
        "statusReason": reason,
        "description": spec.description,
        "coveredBy": sorted(set(covered_by)),
        "killedBy": sorted(set(killed_by)),
        "testsCompleted": tests_completed,
        "duration": round(duration_s * 1000, 1),
    }


def _mutant_entry(src: SourceText, spec: MutantSpec, results: Sequence[MutantResult]) -> dict[
        str, Any]:
    statuses = {STATUS_MAP[r.status] for r in results}
    return mutant_entry(
        src, spec, status=next(s for s in PRECEDENCE if s in statuses),
        # Lanes built on one module share a mutant: each line says which lane it is about.
        reason="\n".join(reason_line(r) if len({x.target for x in results}) == 1
                         else f"[{r.target}] {reason_line(r)}" for r in results),
        covered_by=[r.check_id for r in results],
        killed_by=[r.check_id for r in results if r.status is MutantStatus.KILLED],
        tests_completed=sum(len(r.runs) for r in results),
        duration_s=sum(r.duration_s for r in results))


def _check_line(source: str) -> int:
    match = re.search(r"^CHECK\b", source, re.MULTILINE)
    return source.count("\n", 0, match.start()) + 1 if match else 1


def _test_files(check_ids: Sequence[str], checks: Sequence[CheckSpec] | None) -> dict[
        str, Any]:
    if checks is None:
        from arib.checks.registry import load_checks

        checks = load_checks()
    by_id = {c.id: c for c in checks}
    files: dict[str, Any] = {}
    for check_id in sorted(set(check_ids)):
        check = by_id.get(check_id)
        test: dict[str, Any] = {"id": check_id, "name": check_id}
        if check is None or not check.module:
            files.setdefault("checks (not registered)", {"tests": []})["tests"].append(test)
            continue
        test["name"] = f"{check_id}: {check.invariant}"
        spec = importlib.util.find_spec(check.module)
        origin = spec.origin if spec is not None else None
        entry = files.setdefault(module_path(check.module, origin), {"tests": []})
        if origin and Path(origin).is_file() and "source" not in entry:
            entry["source"] = Path(origin).read_text(encoding="utf-8")
        line = _check_line(entry.get("source", ""))
        test["location"] = {"start": {"line": line, "column": 1}}
        entry["tests"].append(test)
    return files


def _version(name: str) -> str | None:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def _framework() -> dict[str, Any]:
    deps = {name: _version(name)
            for name in (active_family().distribution, "libcst", "anyio")}
    deps["python"] = platform.python_version()
    return {
        "name": "agent-integrity-bench",
        "version": _version("agent-integrity-bench") or "unknown",
        "dependencies": {k: v for k, v in deps.items() if v is not None},
    }


def _system() -> dict[str, Any]:
    return {
        "ci": bool(os.environ.get("CI")),
        "os": {"platform": sys.platform, "description": platform.platform(),
               "version": platform.release()},
        "cpu": {"logicalCores": os.cpu_count() or 1},
    }


def to_mutation_report(
    results: Sequence[MutantResult],
    mutants: Mapping[str, MutantSpec],
    *,
    checks: Sequence[CheckSpec] | None = None,
) -> dict[str, Any]:
    """The kill matrix of ``results`` (``mutants`` by id) as a schema-version-2 report."""
    by_mutant: dict[str, list[MutantResult]] = {}
    for result in results:
        if result.mutant_id not in mutants:
            raise ResultsError(
                f"mutant {result.mutant_id!r} (check {result.check_id}) has a result but no "
                f"MutantSpec; pass every paired mutant in `mutants` (hand-written ones from "
                f"arib.mutants.registry, generated ones from arib.mutants.generate)"
            )
        by_mutant.setdefault(result.mutant_id, []).append(result)
    files: dict[str, tuple[str, SourceText, list[dict[str, Any]]]] = {}
    for mutant_id, group in by_mutant.items():
        spec = mutants[mutant_id]
        if spec.module not in files:
            origin, text = installed_source(spec.module)
            files[spec.module] = (module_path(spec.module, origin), SourceText(text), [])
        _, src, entries = files[spec.module]
        entries.append(_mutant_entry(src, spec, group))
    report_files: dict[str, Any] = {}
    for path, src, entries in sorted(files.values(), key=lambda f: f[0]):
        report_files[path] = file_entry(src, entries)
    return report_document(report_files, [r.check_id for r in results], checks)


def file_entry(src: SourceText, entries: list[dict[str, Any]]) -> dict[str, Any]:
    """A schema file: its source and its mutants, sorted by where they are."""
    entries.sort(key=lambda m: (m["location"]["start"]["line"],
                                m["location"]["start"]["column"], m["id"]))
    return {"language": "python", "source": src.text, "mutants": entries}


def report_document(files: Mapping[str, Any], check_ids: Sequence[str],
                    checks: Sequence[CheckSpec] | None = None,
                    thresholds: Mapping[str, float] = THRESHOLDS) -> dict[str, Any]:
    """A whole schema-version-2 document around its ``files``."""
    return {
        "$schema": SCHEMA_URL,
        "schemaVersion": SCHEMA_VERSION,
        "thresholds": dict(thresholds),
        "files": dict(files),
        "testFiles": _test_files(check_ids, checks),
        "framework": _framework(),
        "system": _system(),
    }


def _semantic_errors(doc: Mapping[str, Any]) -> Iterator[str]:
    """What the schema cannot say: unique ids, locations inside the source, known tests."""
    seen: set[str] = set()
    tests = {t["id"] for f in doc.get("testFiles", {}).values() for t in f["tests"]}
    for path, entry in doc["files"].items():
        src = SourceText(entry["source"])
        lines = len(src.line_starts)
        for mutant in entry["mutants"]:
            where = f"files/{path}/{mutant['id']}"
            if mutant["id"] in seen:
                yield f"{where}: mutant id is not unique"
            seen.add(mutant["id"])
            start, end = mutant["location"]["start"], mutant["location"]["end"]
            if (start["line"], start["column"]) > (end["line"], end["column"]):
                yield f"{where}: location ends before it starts"
            if end["line"] > lines:
                yield f"{where}: location line {end['line']} is past the {lines} source lines"
            if tests:
                for test_id in (*mutant.get("killedBy", ()), *mutant.get("coveredBy", ())):
                    if test_id not in tests:
                        yield f"{where}: test {test_id!r} is not in testFiles"


def validate_mutation_report(doc: Mapping[str, Any]) -> None:
    """Validate against harness/schemas/mutation-testing-report-schema.json; ResultsError."""
    import jsonschema

    validator = jsonschema.Draft7Validator(load_schema(SCHEMA_FILE))
    errors = sorted(validator.iter_errors(doc), key=lambda e: list(e.absolute_path))
    problems = [f"{'/'.join(str(p) for p in e.absolute_path) or '<root>'}: {e.message}"
                for e in errors[:3]]
    if not problems:
        problems = list(_semantic_errors(doc))[:3]
    if problems:
        raise ResultsError(
            f"mutation report fails {SCHEMA_FILE}: {'; '.join(problems)}; regenerate it with "
            f"arib.reports.mutation.to_mutation_report rather than editing it"
        )
