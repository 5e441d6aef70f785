"""The measuring worker of ``races measure``: runs inside one checkout's environment.

Started by ``arib.races.measure`` with the Python of a checkout's environment, its working
folder that checkout, and this file run by path: it imports only the standard library and the
``harness`` of the checkout it measures (the current one or an older one), through the command
line's own ``run`` selection, so that both sides run a check exactly as ``python -m arib
run`` would. Protocol: one JSON request per line on stdin, one JSON answer per line on the
original stdout (the harness's own prints go to stderr).

A request ``{"family", "lanes"}`` starts the services of those lanes (once); then each
``{"check", "lane", "mutant", "seed"}`` runs the check at its default trial count with that
run seed, in a forked child, and answers the verdict and the verdict of every trial, in order.
"""

from __future__ import annotations

import importlib
import inspect
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any


def _import(name: str, *older: str) -> Any:
    """The module ``arib.<...>``; in an older checkout (the "before" side of a measurement),
    the first of its ``older`` names it has (the flat modules before harness/ was sorted by
    job), and before the one import root each under its old root (``harness.<...>``,
    ``checks.<...>``, ...)."""
    first: ModuleNotFoundError | None = None
    for candidate in (name, *older):
        rest = candidate.removeprefix("arib.")
        old = rest if rest.startswith(("checks", "mutants", "targets")) else f"harness.{rest}"
        for spelled in (candidate, old):
            try:
                return importlib.import_module(spelled)
            except ModuleNotFoundError as exc:
                first = first or exc
    assert first is not None
    raise first


def _job(check: Any, lane: Any, opts: Any, mutant: Any, flags_path: str) -> Any:
    """In the child: run the check with ``summarize`` wrapped to write each trial's verdict."""
    execute = _import("arib.execute")

    original = execute.summarize

    def recording(check: Any, target: Any, opts: Any, trials: Any, *rest: Any,
                  **kw: Any) -> Any:
        Path(flags_path).write_text(json.dumps([bool(t.violated) for t in trials]))
        return original(check, target, opts, trials, *rest, **kw)

    execute.summarize = recording  # type: ignore[assignment]
    absent = _import("arib.lanes").absent_backend(lane)
    return absent or execute.run_check(check, lane, opts, mutant)


def _measure(request: dict[str, Any], services: Any) -> dict[str, Any]:
    import dataclasses

    build_parser = _import("arib.cli.main", "arib.cli").build_parser
    _run_selection = _import("arib.cli.admit", "arib.cli.commands", "arib.commands")._run_selection
    child = _import("arib.ground.child")
    ChildStatus, run_one = child.ChildStatus, child.run_one  # noqa: N806 - the module's names

    argv = ["run", "--check", request["check"], "--lane", request["lane"],
            "--seed", str(request["seed"])]
    if request.get("mutant"):
        argv += ["--mutant", request["mutant"]]
    try:
        check, lane, mutant, opts = _run_selection(build_parser().parse_args(argv))
    except Exception as exc:  # noqa: BLE001 - a mutant or check this checkout lacks
        return {"status": "unknown", "detail": f"{type(exc).__name__}: {exc}"}
    opts = dataclasses.replace(opts, services=services)
    with tempfile.TemporaryDirectory(prefix="arib-races-") as tmp:
        flags_path = str(Path(tmp) / "flags.json")
        outcome = run_one(lambda: _job(check, lane, opts, mutant, flags_path),
                          check.timeout_s + 15)
        flags = json.loads(Path(flags_path).read_text()) if os.path.exists(flags_path) else None
    if outcome.status is not ChildStatus.OK:
        return {"status": "child_" + outcome.status.value, "detail": str(outcome.detail)[:300]}
    finding = outcome.value
    verdict = getattr(getattr(finding, "verdict", None), "value", None)
    if verdict is None:  # NotMeasured: the lane's backend is absent here
        return {"status": "not_measured", "detail": str(getattr(finding, "reason", finding))}
    return {"status": "ok", "verdict": verdict,
            "scheduled": bool(getattr(check, "concurrent", False)), "trials": finding.trials,
            "violating_trials": finding.violating_trials, "per_trial": flags,
            "reason": (finding.reason or "")[:300] if verdict == "error" else None,
            "duration_s": round(finding.duration_s, 4)}


def main() -> int:
    """Serve requests until stdin ends."""
    answer_to = sys.stdout
    sys.stdout = sys.stderr
    # The families' switches (the SDKs' tracing off) come set by the measuring process.
    scratch = _import("arib.ground.scratch")
    family = _import("arib.ground.family")
    active_family, use_family = family.active_family, family.use_family
    ServiceManager = _import("arib.ground.services").ServiceManager  # noqa: N806
    prepare_lanes = _import("arib.lanes").prepare_lanes
    get_target = _import("arib.targets.registry").get_target

    services: Any = {}
    with ServiceManager() as manager:
        try:
            for line in sys.stdin:
                request = json.loads(line)
                if "family" in request:
                    use_family(request["family"])
                    lanes = [get_target(name) for name in request["lanes"]]
                    accepted = inspect.signature(prepare_lanes).parameters
                    kwargs = {k: False for k in ("backends", "probe") if k in accepted}
                    prepared = prepare_lanes(lanes, manager, **kwargs)
                    services = prepared.services
                    answer: dict[str, Any] = {
                        "status": "ready", "sdk": active_family().version(),
                        "not_measured": {n.name: n.reason for n in prepared.not_measured}}
                else:
                    answer = _measure(request, services)
                answer_to.write(json.dumps(answer) + "\n")
                answer_to.flush()
        finally:
            scratch.cleanup()
    return 0


if __name__ == "__main__":
    sys.exit(main())
