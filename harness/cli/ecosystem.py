"""``python -m arib ecosystem``: the table of third-party lanes beside the family's own
(``report``), and the direct reproductions that confirm its findings (``confirm``)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from arib.ground.model import ExitCode


def add_parsers(sub: Any) -> None:
    """The parsers of ecosystem report and ecosystem confirm."""
    p = sub.add_parser("ecosystem", help="third-party lanes beside the family's own: the table "
                                         "(report) and direct reproductions (confirm)")
    verbs = p.add_subparsers(dest="verb", required=True)
    report = verbs.add_parser("report", help="write results/ecosystem/<family>.md and .json "
                                             "from bench result files")
    report.add_argument("--builtin", metavar="FILE",
                        help="a bench result of the family's own lanes (default: the "
                             "family's newest accepted baseline of its pinned version)")
    report.add_argument("--runs", nargs="+", required=True, metavar="FILE",
                        help="bench results of third-party lanes (one per lane's environment)")
    report.add_argument("--confirmations", metavar="FILE",
                        help="what `ecosystem confirm` wrote: the direct reproductions' runs")
    report.add_argument("--out", default="results/ecosystem", metavar="DIR",
                        help="folder of <family>.md and <family>.json (default: "
                             "results/ecosystem)")
    report.set_defaults(func=cmd_report)
    confirm = verbs.add_parser("confirm", help="run direct reproduction scripts "
                                               "(<lane>--<CHECK>.py; exit 1: reproduced) and "
                                               "add what they said to a JSON file")
    confirm.add_argument("scripts", nargs="+", metavar="SCRIPT")
    confirm.add_argument("--out", required=True, metavar="FILE",
                         help="the confirmations file; entries of other scripts are kept")
    confirm.set_defaults(func=cmd_confirm)


def _read_confirmations(path: Path) -> dict[str, Any]:
    from arib.ground.errors import UsageError

    if not path.exists():
        return {}
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
        return dict(doc["confirmations"])
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise UsageError(f"confirmations file {str(path)!r} cannot be read ({exc!r}); the "
                         f"rule: it is what `ecosystem confirm --out` writes; fix: remove it "
                         f"and confirm again") from exc


def cmd_confirm(args: argparse.Namespace) -> int:
    """`python -m arib ecosystem confirm`: run the scripts here (the lane's environment) and
    merge their outcomes into ``--out``; exit 0 once written."""
    from arib.ground.files import atomic_write_text
    from arib.reports.ecosystem import confirm

    out = Path(args.out)
    kept = _read_confirmations(out)
    found = confirm([Path(s) for s in args.scripts])
    for key, confirmation in found.items():
        kept[key] = confirmation.to_json()
        print(f"{key}: {'reproduced' if confirmation.reproduced else 'not reproduced'} by "
              f"{confirmation.script} (exit {confirmation.exit_code})")
    atomic_write_text(out, json.dumps({"confirmations": dict(sorted(kept.items()))},
                                      indent=1, ensure_ascii=False) + "\n")
    print(f"wrote {out}")
    return int(ExitCode.OK)


def cmd_report(args: argparse.Namespace) -> int:
    """`python -m arib ecosystem report`: write the page and its JSON; exit 4 when no
    third-party lane was measured (a table of nothing says so, and fails)."""
    from arib.ground.family import active_family
    from arib.ground.files import atomic_write_text
    from arib.reports.ecosystem import Confirmation, build
    from arib.runs.results import read_results

    family = active_family()
    builtin = Path(args.builtin) if args.builtin else _baseline(family)
    runs = [Path(r) for r in args.runs]
    confirmations = {
        key: Confirmation(str(v["script"]), int(v["exit_code"]), str(v["output"]))
        for key, v in (_read_confirmations(Path(args.confirmations))
                       if args.confirmations else {}).items()}
    docs = [read_results(r) for r in runs]
    eco = build(family.name, read_results(builtin), docs, confirmations,
                [builtin.name, *(r.name for r in runs)], [None, *runs],
                _baselines_of(family, docs))
    out = Path(args.out)
    stem = family.name
    atomic_write_text(out / f"{stem}.json",
                      json.dumps(eco.to_json(), indent=1, ensure_ascii=False) + "\n")
    atomic_write_text(out / f"{stem}.md", eco.markdown())
    measured = [c for c in eco.columns if c.third_party and c.not_measured is None]
    reported = sum(1 for f in eco.findings if f.reported)
    print(f"wrote {out / f'{stem}.md'} and .json: {len(measured)} third-party lane(s) "
          f"measured of {sum(1 for c in eco.columns if c.third_party)}, "
          f"{len(eco.findings)} violation(s), {reported} confirmed as findings")
    return int(ExitCode.OK if measured else ExitCode.ERROR_OR_NOTHING)


def _baselines_of(family: Any, docs: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Family version -> its accepted baseline (results/baselines/), for each version the
    third-party runs were made on that has one."""
    from arib.runs.results import read_results

    found: dict[str, dict[str, Any]] = {}
    for doc in docs:
        version = str(doc.get("sdk", {}).get("version", ""))
        path = Path("results/baselines") / f"{family.stem(version)}.json"
        if version and version not in found and path.is_file():
            found[version] = read_results(path)
    return found


def _baseline(family: Any) -> Path:
    """The accepted baseline of the family's pinned version; UsageError when there is none."""
    from arib.ground.errors import UsageError

    path = Path("results/baselines") / f"{family.stem(family.pinned)}.json"
    if not path.is_file():
        raise UsageError(f"no baseline {str(path)!r} of {family.name} {family.pinned}; the "
                         f"rule: without --builtin the table takes the family's own lanes from "
                         f"its pinned baseline; fix: pass --builtin FILE, or run from the "
                         f"checkout")
    return path
