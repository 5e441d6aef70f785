"""What the commands share: their common options, and the checks of their arguments."""

from __future__ import annotations

import argparse
from collections.abc import Mapping, Sequence
from typing import Any

from arib.ground.errors import ParameterError, UsageError
from arib.ground.model import Loop
from arib.runs.selection import name_list

CHECKS = name_list("--checks", "check id", "ARIB-CONC-001,ARIB-POP-001")
LANES = name_list("--lanes", "lane", "sqlite-file,redis-from-url")


def add_common(p: argparse.ArgumentParser) -> None:
    """--param, --seed and --quiet: the options of every command that runs checks."""
    p.add_argument("--param", action="append", default=[], metavar="CHECK.NAME=INT",
                   help="override a check parameter (repeatable)")
    p.add_argument("--seed", type=int, default=0, help="run seed (default 0)")
    p.add_argument("--quiet", action="store_true", help="no progress lines")


def add_verify(p: argparse.ArgumentParser) -> None:
    """--verify-sample and --verify-cache: how much of the verdict cache is judged again."""
    p.add_argument("--verify-sample", type=float, default=3.0, metavar="PCT",
                   help="re-judge this percent of the verdict cache's hits (pairs, and "
                        "admission's cached sanity gates), a sample seeded by --seed "
                        "(default 3); one disagreement discards the cache for the run and "
                        "judges everything again")
    p.add_argument("--verify-cache", action="store_true",
                   help="re-judge every hit of the verdict cache (--verify-sample 100)")


def add_shard(p: argparse.ArgumentParser, units: str) -> None:
    """--shard K/N over ``units``."""
    p.add_argument("--shard", metavar="K/N", help=(
        f"run only shard K of N: {units} split deterministically, balanced by recorded "
        f"durations; run every K with the same arguments, then `merge` the outputs"))


def parse_params(values: Sequence[str]) -> dict[str, dict[str, int]]:
    """``CHECK.NAME=INT`` strings into {check id: {name: value}}; malformed ones are errors."""
    out: dict[str, dict[str, int]] = {}
    for text in values:
        head, sep, raw = text.partition("=")
        check_id, dot, name = head.rpartition(".")
        if not sep or not dot or not check_id or not name:
            raise ParameterError(
                f"malformed --param {text!r}: the form is CHECK.NAME=INTEGER, e.g. "
                f"--param ARIB-CONC-001.writers=8"
            )
        try:
            value = int(raw)
        except ValueError:
            raise ParameterError(
                f"--param {text!r} has a non-integer value {raw!r}; parameters are integers"
            ) from None
        out.setdefault(check_id, {})[name] = value
    return out


def select_checks(ids: str | None, params: dict[str, dict[str, int]]):  # type: ignore[no-untyped-def]
    """The checks ``--checks`` names (all by default), after validating ``--param`` values;
    only the checks named (and those ``--param`` names) are imported."""
    from arib.checks.registry import get_check, load_checks

    chosen = load_checks() if not ids else tuple(get_check(i.strip()) for i in ids.split(","))
    for check_id, values in params.items():
        get_check(check_id).resolve_params(values)
    return chosen


def expect_sdk(requested: str | None) -> None:
    from arib.execute import sdk_version
    from arib.ground.family import active_family
    from arib.ground.invocations import bench_command, unlocked_version_error

    if requested is None:
        return
    family = active_family()
    if family.lock_dir is not None:
        unlocked = unlocked_version_error(requested, family.lock_dir, family.name,
                                          family.components)
        if unlocked is not None:
            raise UsageError(unlocked)
    installed = sdk_version()
    if installed != requested:
        raise UsageError(
            f"SDK version {requested!r} requested but this environment has {family.name} "
            f"{installed}; each version runs in its own environment: "
            f"`{bench_command(requested, family.name)}`"
        )


def check_loop(loop: str) -> str:
    """The name of the loop ``--loop`` names (``Loop.parse``: the same rule as parity's
    ``--loops``)."""
    return Loop.parse(loop).value


def at_least(value: int, least: int, option: str, why: str) -> int:
    """``value`` when it is at least ``least``; else UsageError naming it, the rule and why."""
    if value < least:
        raise UsageError(f"{option} {value!r} is below {least}: {why}; pass {option} {least} "
                         f"or more")
    return value


def shard_writes(args: argparse.Namespace, writes: bool, option: str, fix: str) -> None:
    """Refuse a malformed --shard, and a shard that would write nothing to merge."""
    from arib.runs.shard import ShardSpec

    if args.shard is None:
        return
    ShardSpec.parse(args.shard)
    if not writes:
        raise UsageError(f"--shard {args.shard!r} without {option}: the rule: `merge` reads "
                         f"what each shard writes; fix: add {fix}")


def verdict_cache(args: argparse.Namespace) -> Any:
    """The verdict cache the options ask for: none (--no-cache), or the shared store with
    its sampled re-judging (--verify-sample PCT, default 3; --verify-cache: every hit)."""
    from arib.caches.verdicts import AdmissionCache

    if args.no_cache:
        return AdmissionCache(None)
    pct = 100.0 if args.verify_cache else args.verify_sample
    if not 0.0 <= pct <= 100.0:
        raise UsageError(f"--verify-sample {pct!r} is not a share of hits: the rule: a percent "
                         f"from 0 to 100; fix: e.g. --verify-sample 3, or --verify-cache")
    return AdmissionCache(verify=pct / 100.0, seed=args.seed)


def cache_basis(document: Mapping[str, Any]) -> str:
    """One line: how many of the admission results a bench's gate rests on came from the
    verdict cache."""
    results = [r for a in document.get("admission", ()) for r in a.get("results", ())]
    cached = sum(1 for r in results if r.get("cached"))
    return (f"the gate rests on {len(document.get('findings', ()))} finding(s) measured now "
            f"and on admissions of {len(results)} pair result(s), {cached} of them from the "
            f"verdict cache")
