"""`scaffold` and `docs`: write a new check to fill in; regenerate the pages' generated
tables (a checkout's command)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from arib.ground.errors import UsageError


def add_parsers(sub: Any) -> None:
    """The parsers of scaffold and docs."""
    p = sub.add_parser("scaffold", help="write a new check and its first mutant to fill in")
    p.add_argument("check_id", help="e.g. ARIB-POP-001")
    p.add_argument("--lane", default="sqlite-file", help="backend lane its mutants break")
    p.add_argument("--root", default=".", help="project root (default: here)")
    p.set_defaults(func=cmd_scaffold)


    p = sub.add_parser("docs", help="regenerate the generated tables of the README pages "
                                    "(invariants, operators, runs)")
    p.add_argument("--readme", default="README.md")
    p.set_defaults(func=cmd_docs)


def cmd_scaffold(args: argparse.Namespace) -> int:
    """`python -m arib scaffold`: write a new check and its paired mutant from templates."""
    from arib.scaffold import scaffold

    check_path, mutant_path = scaffold(args.check_id, args.lane, Path(args.root))
    print(f"wrote {check_path} and {mutant_path}")
    print(f"next: fill in the TODOs, then `python -m arib admit {args.check_id}` until "
          f"every paired mutant is killed")
    return 0


def cmd_docs(args: argparse.Namespace) -> int:
    """`python -m arib docs`: regenerate the generated tables of the README pages."""
    import importlib

    try:  # the project's own tools are in a checkout, not in the wheel
        docs = importlib.import_module("arib.dev.docs")
    except ModuleNotFoundError as exc:
        if exc.name not in ("arib.dev", "arib.dev.docs"):
            raise
        raise UsageError(
            "`docs` regenerates the tables of the project's own pages and runs from a checkout "
            "of agent-integrity-bench (`pip install -e .` there): this installed copy has no "
            "arib.dev") from None
    changed = docs.update_readme(Path(args.readme))
    print(f"{args.readme}: {'generated tables regenerated' if changed else 'up to date'}")
    return 0
