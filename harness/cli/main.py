"""The command line: ``python -m arib {bench,admit,run,survey,parity,list,...} ...``."""

from __future__ import annotations

import argparse
import os
import signal
import sys
from collections.abc import Sequence
from pathlib import Path

from arib.cli import (
    admit,
    bench,
    ecosystem,
    family,
    project,
    races,
    reports,
    results,
    survey,
)
from arib.ground.errors import BenchError
from arib.ground.model import ExitCode


def _version_line() -> str:
    """``arib <version>`` with the Python it runs on and the families it can measure."""
    import platform
    from importlib import metadata

    from arib.ground.family import known_families

    try:
        version = metadata.version("agent-integrity-bench")
    except metadata.PackageNotFoundError:
        version = "unknown (not installed)"
    return (f"arib {version} (python {platform.python_version()}; families: "
            f"{', '.join(sorted(known_families()))})")


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``python -m arib``: the global options here, each command
    group's subcommands in its own module of arib.cli."""
    parser = argparse.ArgumentParser(prog="python -m arib", description=(
        "Mutation-first integrity bench for agent session backends."))
    parser.add_argument("--version", action="version", version=_version_line())
    parser.add_argument("--family", default=None, help=(
        "the runtime family to measure (default: $ARIB_FAMILY, else the default family); families "
        "are registered in the entry-point group arib.families"))
    # dest: a subcommand's own --mutants (official's flag) must not overwrite the files given
    parser.add_argument("--mutants", action="append", default=[], metavar="PATH",
                        dest="mutant_files", help=(
        "a .py file of your own hand-written mutants (@handwritten), for checks to be paired "
        "with; repeat it for more (sets $ARIB_MUTANTS, which child processes and the pytest "
        "plugin read; installed packages add theirs in the entry-point group arib.mutants)"))
    sub = parser.add_subparsers(dest="command", required=True)
    # One module per command group, each adding its parsers in the order `--help` lists them.
    bench.add_parsers(sub)  # bench, accept, compare
    admit.add_parsers(sub)  # admit, run
    survey.add_parsers(sub)  # survey
    results.add_parsers(sub)  # results
    project.add_parsers(sub)  # scaffold, docs

    from arib.parity.cli import add_parser as add_parity_parser

    add_parity_parser(sub)  # parity check / parity update
    races.add_parsers(sub)  # races corpus / measure / report
    reports.add_parsers(sub)  # merge, html, show, list, report
    family.add_parsers(sub)  # official, probe
    ecosystem.add_parsers(sub)  # ecosystem report / confirm
    return parser


def use_mutants(paths: Sequence[str]) -> None:
    """Add ``paths`` to ``$ARIB_MUTANTS`` (the files of the user's own mutants), checked now:
    a path that is not a Python file is a UsageError naming it."""
    from arib.ground.extensions import MUTANTS_VAR, mutant_paths

    was = os.environ.get(MUTANTS_VAR)
    before = [p for p in (was or "").split(os.pathsep) if p]
    os.environ[MUTANTS_VAR] = os.pathsep.join([*before, *(str(Path(p).resolve()) for p in paths)])
    try:
        mutant_paths()
    except BenchError:  # left as it was
        if was is None:
            del os.environ[MUTANTS_VAR]
        else:
            os.environ[MUTANTS_VAR] = was
        raise


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point: run a command, turning misuse into one clear line and an exit code.

    SIGINT, SIGTERM and SIGHUP stop a command the same way (arib.ground.interrupts): what was
    measured is written, children and servers are stopped, and the exit status is 128 + the
    signal's number. A harness crash (an exception no command expects) exits 4 with one
    line and its traceback, never 1, which means "violated".
    """
    from arib.ground import interrupts, owners, scratch
    from arib.ground.family import apply_environment

    try:
        apply_environment()  # every family's switches (the SDKs' tracing off) before any import
        parser = build_parser()  # with each family's own commands
    except BenchError as exc:  # a family plugin that cannot be loaded: named with its traceback
        print(f"error: {exc}", file=sys.stderr)
        if exc.__cause__ is not None:
            import traceback

            traceback.print_exception(exc.__cause__, file=sys.stderr)
        return int(exc.exit_code)
    reaped = owners.reap()  # servers and folders of runs that died without cleaning up
    if reaped:
        print(owners.describe(reaped), file=sys.stderr)
    try:
        # A selection's own check (arib.runs.selection) raises UsageError through argparse.
        args = parser.parse_args(argv)
    except BenchError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return int(exc.exit_code)
    try:
        with interrupts.stops_raise():
            try:
                if args.family is not None:
                    from arib.ground.family import use_family

                    use_family(args.family)
                if args.mutant_files:
                    use_mutants(args.mutant_files)
                return int(args.func(args))
            finally:
                scratch.cleanup()
    except BenchError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return int(exc.exit_code)
    except KeyboardInterrupt as exc:
        signum = interrupts.received() or signal.SIGINT
        written = getattr(exc, "written", ())
        files = ", ".join(str(p) for p in written)
        if written and getattr(exc, "complete", False):
            what = (f"every cell had been measured, and the run was written whole: {files}; "
                    f"the regression gate did not judge it (compare it with `compare`)")
        elif written:
            what = f"the results measured so far were written, marked complete: false: {files}"
        else:
            what = "nothing was written"
        print(f"interrupted by {signal.Signals(signum).name}: {what}", file=sys.stderr)
        return interrupts.exit_status(signum)
    except Exception as exc:  # the harness's own crash: exit 4, never 1 ("violated")
        import traceback

        print(f"error: the harness crashed in `{args.command}` with {type(exc).__name__}: "
              f"{exc}; this is a bug of the harness, not a finding (traceback below)",
              file=sys.stderr)
        traceback.print_exc()
        return int(ExitCode.ERROR_OR_NOTHING)
