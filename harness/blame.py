"""Whose exception escaped a check: the backend's (evidence) or the harness's (an error).

The rule (DESIGN, "Vocabulary"): an exception the backend raises inside a check is evidence
for the verdict; only the harness's own misuse is an ``error``. A check judges the exceptions
it expects itself; one that escapes its body is judged here, the same way for every check:

- raised by the backend: a frame of code that is neither the project's harness (``checks/``,
  ``harness/``, the folder of the check's own code) nor the standard library, anyio or
  sniffio follows the last frame of the harness in the traceback (the backend, its drivers,
  a mutant, our reference in ``targets/``): evidence, a violated trial in mode
  ``backend_raised``; an exception group (a task group's) is the backend's when each of its
  exceptions is;
- the harness's: raised in the harness's code or in a library it called itself (``json``,
  anyio), or a call the backend refused as made (``arib.probe.rejected_call``: arguments
  that do not bind, a method it lacks), or raised while the trial built an instance (a target
  that could not be built is an ``error``, as before).
"""

from __future__ import annotations

import sysconfig
import traceback
from pathlib import Path

from arib.ground.package import folder, harness_folders

# The harness's own code; in a wheel these folders hold the targets' and mutants' too, which
# are the backends' side.
HARNESS = harness_folders()
NOT_HARNESS = (folder("targets"), folder("mutants"))
MODE = "backend_raised"
# The trial's building of instances (checks/base.py TrialContext): a failure there is a target
# that could not be built, an error, as DESIGN keeps it.
_BUILDING = frozenset({"open", "open_with", "open_configured", "reopen"})


def _harness_libraries() -> tuple[str, ...]:
    paths = {sysconfig.get_paths()[k] for k in ("stdlib", "platstdlib")}
    try:
        import anyio
        import sniffio

        paths |= {str(Path(m.__file__ or "").parent) for m in (anyio, sniffio)}
    except ImportError:  # pragma: no cover - anyio is a dependency of the harness
        pass
    return tuple(str(Path(p).resolve()) + "/" for p in paths)


LIBRARIES = _harness_libraries()


def check_folder(run_trial: object) -> tuple[str, ...]:
    """The folder of a check's code (a plugin family keeps its checks outside ``checks/``):
    harness code too."""
    import inspect

    try:
        source = inspect.getsourcefile(run_trial)  # type: ignore[arg-type]
    except TypeError:
        return ()
    return (str(Path(source).resolve().parent) + "/",) if source else ()


def _ours(filename: str, extra: tuple[str, ...]) -> bool:
    return (filename.startswith(HARNESS + extra) and not filename.startswith(NOT_HARNESS)) or (
        bool(extra) and str(Path(filename).resolve()).startswith(extra))


def _library(filename: str) -> bool:
    return filename.startswith("<") or str(Path(filename).resolve()).startswith(LIBRARIES)


def backend_raised(exc: BaseException, checks: tuple[str, ...] = ()) -> str | None:
    """Where the backend raised ``exc`` (``file:line in function``), when it did; None when
    the exception is the harness's (see the module docstring). ``checks``: more folders of
    harness code (the check's own, ``check_folder``)."""
    from arib.probe import rejected_call

    group = getattr(exc, "exceptions", None)  # an exception group of a check's task group
    if isinstance(group, (list, tuple)) and group and all(
            isinstance(e, BaseException) for e in group):
        found = [backend_raised(e, checks) for e in group]  # each raised in a task of ours
        return None if None in found else found[0]
    frames = traceback.extract_tb(exc.__traceback__)
    ours = [i for i, frame in enumerate(frames) if _ours(frame.filename, checks)]
    if not ours:
        return None  # not raised through a check body: nothing to judge here
    if any(f.name in _BUILDING and f.filename.endswith("checks/base.py") for f in frames):
        return None
    after = [f for f in frames[ours[-1] + 1:] if not _library(f.filename)]
    if not after:
        return None
    files = {str(Path(f.filename).resolve()) for f in after}
    if rejected_call(exc, files, HARNESS + checks) is not None:
        return None
    last = after[-1]
    return f"{Path(last.filename).name}:{last.lineno} in {last.name}"
