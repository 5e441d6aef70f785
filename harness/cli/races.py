"""``python -m arib races {corpus,measure,report}``: the race corpus and its measurement."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from arib.ground.errors import UsageError

DEFAULT_OUT = Path("results/races")


def add_parsers(sub: Any) -> None:
    """Add ``races`` and its three subcommands to the command line."""
    races = sub.add_parser("races", help="the race corpus from results/ and its measurement "
                                         "before and after")
    inner = races.add_subparsers(dest="races_command", required=True)
    p = inner.add_parser("corpus", help="select the corpus from the committed results")
    p.add_argument("--commit", help="select from the results committed at this commit "
                   "(default: HEAD; the working tree's uncommitted results are not read)")
    p.add_argument("--out", default=str(DEFAULT_OUT), help="folder of corpus.json")
    p.add_argument("--write", action="store_true", help="write corpus.json (else print counts)")
    p.set_defaults(func=cmd_corpus)
    p = inner.add_parser("measure", help="run the corpus before and after, side by side")
    p.add_argument("--before", required=True, help="checkout to compare with (its .nox envs "
                                                   "built)")
    p.add_argument("--after", default=".", help="checkout measured as after (default: here)")
    p.add_argument("--out", default=str(DEFAULT_OUT), help="folder of corpus.json and "
                                                           "measurement.json")
    p.add_argument("--seed", type=int, default=0, help="order and run seeds (default 0)")
    p.add_argument("--reruns", type=int, default=3, help="reruns per entry and side (default 3)")
    p.add_argument("--sample", type=int, help="measure only the first N of the seeded order")
    p.add_argument("--budget", type=float, metavar="SECONDS",
                   help="stop starting entries after this long (go on with a later call)")
    p.add_argument("--entries", help="comma-separated corpus keys to measure instead")
    p.set_defaults(func=cmd_measure)
    p = inner.add_parser("report", help="write measurement.md from measurement.json")
    p.add_argument("--out", default=str(DEFAULT_OUT), help="folder of measurement.json")
    p.set_defaults(func=cmd_report)


def cmd_corpus(args: argparse.Namespace) -> int:
    """Select the corpus; with --write, write corpus.json."""
    from arib.races.corpus import (
        corpus_document,
        head_commit,
        load_committed_sources,
        select,
        write_corpus,
    )

    repo = Path.cwd()
    if args.write:
        path, document = write_corpus(repo, Path(args.out), args.commit)
        print(f"wrote {path} (the results committed at {document['selected_at']})")
    else:
        commit = args.commit or head_commit(repo)
        document = corpus_document(select(load_committed_sources(repo, commit)), commit)
    print(f"{document['size']} entries: {json.dumps(document['counts'])}")
    return 0


def cmd_measure(args: argparse.Namespace) -> int:
    """Measure the corpus (or a seeded sample of it) before and after."""
    from arib.races.corpus import read_corpus
    from arib.races.measure import Plan, measure

    if args.reruns < 1 or (args.sample is not None and args.sample < 1):
        raise UsageError(f"--reruns {args.reruns!r} / --sample {args.sample!r}: the rule: at "
                         f"least 1; fix: --reruns 3 --sample 100")
    out = Path(args.out)
    plan = Plan(before=Path(args.before).resolve(), after=Path(args.after).resolve(),
                seed=args.seed, reruns=args.reruns, sample=args.sample, budget_s=args.budget,
                entries=tuple(k for k in (args.entries or "").split(",") if k))
    print(f"wrote {measure(plan, read_corpus(out / 'corpus.json'), out)}")
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    """Write measurement.md and print its summary."""
    from arib.ground.files import atomic_write_text
    from arib.races.measure import load_measurement
    from arib.races.report import render

    out = Path(args.out)
    document = load_measurement(out / "measurement.json")
    if document is None:
        raise UsageError(f"{str(out / 'measurement.json')!r} does not exist: the rule: report "
                         f"what was measured; fix: python -m arib races measure --before ...")
    text = render(document)
    atomic_write_text(out / "measurement.md", text)
    print(text.split("\n## Entries")[0])
    print(f"wrote {out / 'measurement.md'}")
    return 0
