"""The race corpus: the pairs and cells whose verdict today is sampled, read from results/.

Selected from the committed documents only (run files, baselines, survey files), so that the
corpus is the project's own evidence and nothing is tuned to one mutant:

- a **sampled mutant** (hand-written or generated, either family): in the newest run file of
  its version, a baseline or a survey file, its reruns were mixed (status ``flaky``, or some
  reruns violated and some not), or its kill came after the first trial (the evidence of a
  run that stops at the first violation reads ``1/N trials violated`` with N > 1);
- a **racy cell**: a (check, lane) finding of any run file or baseline whose violating trials
  are strictly between 0 and its trials (what the gate called intermittent);
- a **clean cell**: every check with trials >= 3, on the lane its admission runs it clean,
  at the version of the family's newest run file.

``python -m arib races corpus --write`` writes ``results/races/corpus.json``, selected from
the results committed at HEAD (``--commit`` another), and names that commit.
"""

from __future__ import annotations

import enum
import fnmatch
import json
import re
import subprocess
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from arib.ground.errors import ResultsError
from arib.ground.files import atomic_write_text

CORPUS_KIND = "arib-race-corpus"
RUN_KIND = "arib-bench-run"
MIN_TRIALS = 3  # a clean cell joins the corpus when its check runs at least this many trials
_EVIDENCE = re.compile(r"\b(\d+)/(\d+) trials violated")


class EntryKind(enum.Enum):
    """Why an entry is in the corpus."""

    SAMPLED_MUTANT = "sampled_mutant"
    RACY_CELL = "racy_cell"
    CLEAN_CELL = "clean_cell"


@dataclass(frozen=True)
class Entry:
    """One corpus entry: a check on a lane of one family's version, with a mutant or clean."""

    family: str
    sdk: str
    check_id: str
    lane: str
    mutant_id: str | None
    kind: EntryKind
    mutant_kind: str | None = None  # handwritten or generated, for a mutant
    why: tuple[str, ...] = ()  # one line per piece of evidence, with the file it came from

    @property
    def key(self) -> str:
        """A stable, readable id: family:sdk:check:lane:mutant (``-`` when clean)."""
        return f"{self.family}:{self.sdk}:{self.check_id}:{self.lane}:{self.mutant_id or '-'}"

    def to_json(self) -> dict[str, Any]:
        """The entry as written in corpus.json."""
        return {"key": self.key, "family": self.family, "sdk": self.sdk,
                "check_id": self.check_id, "lane": self.lane, "mutant_id": self.mutant_id,
                "kind": self.kind.value, "mutant_kind": self.mutant_kind, "why": list(self.why)}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Entry:
        """The entry corpus.json holds."""
        return cls(family=str(data["family"]), sdk=str(data["sdk"]),
                   check_id=str(data["check_id"]), lane=str(data["lane"]),
                   mutant_id=data.get("mutant_id"), kind=EntryKind(data["kind"]),
                   mutant_kind=data.get("mutant_kind"), why=tuple(data.get("why", ())))


@dataclass(frozen=True)
class Source:
    """One committed document: where it is and what it holds (a run file, a baseline or a
    survey file of one lane)."""

    path: str
    role: str  # run, baseline or survey
    document: Mapping[str, Any] = field(repr=False)


def sampled_reason(row: Mapping[str, Any]) -> str | None:
    """Why a mutant's result row shows a sampled kill, or None when it does not.

    Mixed reruns (``flaky``, or violated in some reruns only), or a kill first seen after the
    first trial of a run that stops at its first violation."""
    runs = [str(r) for r in row.get("runs") or ()]
    violated = [r == "violated" for r in runs]
    if row.get("status") == "flaky" or (any(violated) and not all(violated)):
        return f"reruns {'/'.join(runs) or '-'} (status {row.get('status')})"
    found = _EVIDENCE.search(str(row.get("evidence") or ""))
    if row.get("status") == "killed" and found and int(found.group(1)) >= 1 \
            and int(found.group(2)) > int(found.group(1)):
        return f"killed, first violated at trial {found.group(2)} ({found.group(0)})"
    return None


def _family_sdk(source: Source) -> tuple[str, str]:
    doc = source.document
    if source.role == "survey":
        from arib.ground.family import known_families

        folder = Path(source.path).parent.name  # results/survey/<family>-<version>/
        named = [n for n in known_families() if folder.startswith(f"{n}-")]
        if not named:
            raise ResultsError(f"survey folder {folder!r} names no known family: the rule: "
                               f"<family>-<version>; fix: rename it or install its family")
        return max(named, key=len), str(doc["sdk"])
    return str(doc["sdk"]["name"]), str(doc["sdk"]["version"])


def _started(source: Source) -> str:
    return str(source.document.get("started", ""))


def _mutant_rows(source: Source) -> Iterable[Mapping[str, Any]]:
    if source.role == "survey":
        yield from source.document.get("results", ())
        return
    for admission in source.document.get("admission", ()):
        yield from admission.get("results", ())


def select(sources: Sequence[Source]) -> list[Entry]:
    """The corpus of ``sources``, in a stable order (family, sdk, check, lane, mutant)."""
    found: dict[tuple[str, str, str, str, str | None], Entry] = {}

    def add(entry: Entry) -> None:
        key = (entry.family, entry.sdk, entry.check_id, entry.lane, entry.mutant_id)
        old = found.get(key)
        if old is None:
            found[key] = entry
        elif not set(entry.why) <= set(old.why):
            found[key] = Entry(**{**old.__dict__, "why": (*old.why, *entry.why)})

    runs = [s for s in sources if s.role == "run"]
    newest: dict[tuple[str, str], Source] = {}
    for source in runs:
        key = _family_sdk(source)
        if key not in newest or _started(source) > _started(newest[key]):
            newest[key] = source
    for source in sources:
        family, sdk = _family_sdk(source)
        if source.role != "run" or newest[(family, sdk)] is source:
            for row in _mutant_rows(source):
                reason = sampled_reason(row)
                if reason is not None:
                    add(Entry(family, sdk, str(row["check_id"]), str(row["target"]),
                              str(row["mutant_id"]), EntryKind.SAMPLED_MUTANT,
                              str(row.get("kind")), (f"{reason}: {source.path}",)))
        if source.role == "survey":
            continue
        for finding in source.document.get("findings", ()):
            trials, bad = int(finding.get("trials", 0)), int(finding.get("violating_trials", 0))
            if 0 < bad < trials:
                add(Entry(family, sdk, str(finding["invariant_id"]), str(finding["target"]),
                          None, EntryKind.RACY_CELL,
                          why=(f"{bad}/{trials} trials violated: {source.path}",)))
    today: dict[str, Source] = {}
    for (family, _), source in newest.items():
        if family not in today or _started(source) > _started(today[family]):
            today[family] = source
    for family, source in sorted(today.items()):
        for entry in clean_cells(source, family, _family_sdk(source)[1]):
            add(entry)
    return sorted(found.values(), key=lambda e: (e.family, e.sdk, e.check_id, e.lane,
                                                 e.mutant_id or "", e.kind.value))


def clean_cells(source: Source, family: str, sdk: str) -> list[Entry]:
    """The clean cells of a run file: every check with trials >= 3 on the lane its admission
    ran its mutants (the lane where it must hold clean in every rerun)."""
    lanes: dict[str, str] = {}
    for admission in source.document.get("admission", ()):
        targets = [str(r["target"]) for r in admission.get("results", ())
                   if r.get("kind") == "handwritten"]
        if targets:
            # the reference lane where the check has mutants there, else its most common
            # lane (ties broken by name): a deterministic pick, never a set's order
            lanes[str(admission["check_id"])] = min(
                set(targets), key=lambda t: (not t.endswith("reference"), -targets.count(t), t))
    out = []
    for check in source.document.get("checks", ()):
        trials = int(check.get("params", {}).get("trials", 0))
        lane = lanes.get(str(check["id"]))
        if trials >= MIN_TRIALS and lane is not None:
            out.append(Entry(family, sdk, str(check["id"]), lane, None, EntryKind.CLEAN_CELL,
                             why=(f"clean, trials={trials}: {source.path}",)))
    return out


_PATTERNS = (("run", "*.json"), ("baseline", "baselines/*.json"),
             ("survey", "survey/*/*.json"))


def _keep(role: str, document: Mapping[str, Any]) -> bool:
    if role == "survey":
        return document.get("kind") == "arib-survey"  # not the mutation-testing report beside
    return document.get("kind") == RUN_KIND


def _parsed(name: str, text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError as exc:
        raise ResultsError(f"{name!r} cannot be read as JSON ({exc}): the rule: the corpus is "
                           f"read from intact result files; fix: restore it from git") from exc


def load_sources(results: Path) -> list[Source]:
    """Every run file, baseline and survey file under ``results`` (sorted by path)."""
    sources = []
    for role, pattern in _PATTERNS:
        for path in sorted(results.glob(pattern)):
            document = _parsed(str(path), path.read_text())
            if _keep(role, document):
                sources.append(Source(str(path.relative_to(results.parent)), role, document))
    return sources


def _git(repo: Path, *args: str) -> str:
    done = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True,
                          check=False)
    if done.returncode:
        raise ResultsError(f"git {' '.join(args)!r} failed in {str(repo)!r}: "
                           f"{done.stderr.strip()[:200]}; the rule: the corpus is selected from "
                           f"committed results; fix: run it in a full clone of the repository")
    return done.stdout


def head_commit(repo: Path) -> str:
    """The commit checked out in ``repo``."""
    return _git(repo, "rev-parse", "HEAD").strip()


def load_committed_sources(repo: Path, commit: str, folder: str = "results") -> list[Source]:
    """``load_sources`` of ``folder`` as committed at ``commit`` (read from git, not the
    working tree): the corpus names that commit, so it can be selected again exactly, whatever
    results were committed since."""
    names = _git(repo, "ls-tree", "-r", "--name-only", commit, "--", folder).split("\n")
    sources = []
    for role, pattern in _PATTERNS:
        for name in sorted(n for n in names if n and fnmatch.fnmatchcase(
                n, f"{folder}/{pattern}") and n.count("/") == pattern.count("/") + 1):
            document = _parsed(name, _git(repo, "show", f"{commit}:{name}"))
            if _keep(role, document):
                sources.append(Source(name, role, document))
    return sources


def corpus_document(entries: Sequence[Entry], selected_at: str | None = None) -> dict[str, Any]:
    """corpus.json: the selection rule, the commit whose results it was selected from, counts
    by kind and family, and the entries."""
    counts: dict[str, int] = {}
    for e in entries:
        label = (f"{e.kind.value}:{e.mutant_kind}" if e.mutant_kind else e.kind.value)
        counts[label] = counts.get(label, 0) + 1
        counts[f"family:{e.family}"] = counts.get(f"family:{e.family}", 0) + 1
    return {"kind": CORPUS_KIND, "schema_version": 1,
            "rule": (__doc__ or "").split("\n\n")[1].strip(), "selected_at": selected_at,
            "size": len(entries), "counts": dict(sorted(counts.items())),
            "entries": [e.to_json() for e in entries]}


def read_corpus(path: Path) -> list[Entry]:
    """The entries of a corpus.json."""
    try:
        document = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise ResultsError(f"{str(path)!r} is not a readable corpus ({exc}): the rule: measure "
                           f"and report read the corpus the tool wrote; fix: python -m arib "
                           f"races corpus --write") from exc
    if document.get("kind") != CORPUS_KIND:
        raise ResultsError(f"{str(path)!r} is of kind {document.get('kind')!r}, not "
                           f"{CORPUS_KIND!r}: fix: python -m arib races corpus --write")
    return [Entry.from_json(e) for e in document["entries"]]


def write_corpus(repo: Path, out: Path, commit: str | None = None) -> tuple[Path, dict[str, Any]]:
    """Select the corpus from the results committed at ``commit`` (default: HEAD) of ``repo``
    and write it to ``out``/corpus.json."""
    commit = _git(repo, "rev-parse", "--verify", f"{commit or 'HEAD'}^{{commit}}").strip()
    document = corpus_document(select(load_committed_sources(repo, commit)), commit)
    path = out / "corpus.json"
    atomic_write_text(path, json.dumps(document, indent=1, ensure_ascii=False) + "\n")
    return path, document
