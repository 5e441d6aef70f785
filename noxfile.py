"""Sessions of the integrity bench: `nox -l` lists them with their one-line docstrings."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import nox

ROOT = Path(__file__).parent
sys.path.insert(0, str(ROOT))
from harness.noxsupport import (  # noqa: E402  (standard library only; nox's Python runs it)
    REPORT_REQUIREMENTS,
    find_python,
    find_uv,
    link_pythons,
    missing_python_fix,
    split_versions,
    unlocked_version_error,
)

os.environ.setdefault("UV_PYTHON_DOWNLOADS", "never")
os.environ.setdefault("OPENAI_AGENTS_DISABLE_TRACING", "1")
nox.options.default_venv_backend = "uv"
nox.options.reuse_existing_virtualenvs = True
nox.options.sessions = ["selftest"]
# A session whose Python cannot be found fails (exit 1), on CI and off it: never "skipped".
nox.options.error_on_missing_interpreters = True
nox.options.download_python = "never"

PYTHONS = ["3.10", "3.12", "3.13"]
BENCH_PYTHON = "3.12"
DEFAULT_SDKS = ["0.19.2", "0.24.0"]
LONG_SDKS = ["0.19.2", "0.19.4", "0.20.0", "0.22.3", "0.23.1", "0.24.0"]
PINNED_SDK = "0.24.0"
LOCKS = ROOT / "harness" / "locks"
UV = find_uv() or "uv"

# The interpreters, found where .ci/run finds them (pyenv's versions folder, `uv python find`,
# PATH) and linked by name into a folder put first on PATH, so that nox uses the full path of
# each one whether or not pyenv's shims are on PATH or PYENV_VERSION is set. A missing one is
# named once here with its fix; its sessions then fail (error_on_missing_interpreters).
INTERPRETERS = {v: find_python(v, uv=UV) for v in sorted({*PYTHONS, BENCH_PYTHON})}
for _version, _path in INTERPRETERS.items():
    if _path is None:
        print(f"nox > {missing_python_fix(_version)}", file=sys.stderr, flush=True)
_links = link_pythons(INTERPRETERS, ROOT / ".nox" / "pythons")
os.environ["PATH"] = os.pathsep.join([str(_links), os.environ.get("PATH", "")])


def lock_file(session: nox.Session, sdk: str) -> Path:
    """The lock file of one SDK version; a version without one stops the session with the fix."""
    error = unlocked_version_error(sdk, LOCKS)
    if error is not None:
        session.error(error)
    return LOCKS / f"openai-agents-{sdk}.txt"


def install(session: nox.Session, sdk: str, report: bool = False) -> None:
    """Install the locked environment of one SDK version, then the project without deps;
    with ``report``, also what draws the reports' pictures (the `report` extra)."""
    session.install("-r", str(lock_file(session, sdk)))
    session.install("--no-deps", "-e", ".")
    if report:
        session.install(*REPORT_REQUIREMENTS)


@nox.session(python=PYTHONS)
def selftest(session: nox.Session) -> None:
    """Run the pytest suite and, beside it, admit every check against its paired mutants."""
    install(session, PINNED_SDK, report=True)
    # Admission runs beside pytest: pytest keeps about one core busy, admission's workers use
    # what is left; its output is shown once pytest is done.
    python = str(Path(session.bin) / "python")
    with tempfile.TemporaryFile("w+") as log:
        admission = subprocess.Popen([python, "-m", "harness", "admit", "--all", "--quiet"],
                                     cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, text=True)
        try:
            # The LangGraph family's tests need its own locked environment: `nox -s langgraph`.
            session.run("pytest", "-m", "not slow", "--ignore=tests/langgraph", *session.posargs)
        finally:
            code = admission.wait()
            log.seek(0)
            print(log.read(), end="", flush=True)
    if code != 0:
        session.error(f"admission failed (exit {code}): see its report above")


# The LangGraph family's pinned combination: langgraph-checkpoint, -sqlite and -postgres.
LANGGRAPH_PINNED = "cp4.3.2+sq3.1.2+pg3.2.0"


@nox.session(python=BENCH_PYTHON)
def langgraph(session: nox.Session) -> None:
    """Run the LangGraph family's tests and admit its checks, in its pinned locked environment."""
    session.install("-r", str(LOCKS / "langgraph" / f"langgraph-{LANGGRAPH_PINNED}.txt"))
    session.install("--no-deps", "-e", ".")
    session.run("pytest", "tests/langgraph", *session.posargs)
    session.run("python", "-m", "harness", "--family", "langgraph", "admit", "--all", "--quiet")


@nox.session(python=BENCH_PYTHON)
def slowtest(session: nox.Session) -> None:
    """Run the slow tests: real servers mid-run, Chromium, determinism, full parity timing."""
    install(session, PINNED_SDK, report=True)
    session.run("pytest", "-m", "slow", *session.posargs)


def sdk_env(session: nox.Session, sdk: str) -> Path:
    """The environment of one SDK version: created once, then reused (incremental runs)."""
    lock = lock_file(session, sdk)
    env = ROOT / ".nox" / "sdk-envs" / f"openai-agents-{sdk}-py{BENCH_PYTHON}"
    stamp = env / ".lock-sha"
    digest = hashlib.sha256(lock.read_bytes()).hexdigest()
    if not stamp.exists() or stamp.read_text() != digest:
        started = time.perf_counter()
        python = INTERPRETERS[BENCH_PYTHON]
        if python is None:
            session.error(missing_python_fix(BENCH_PYTHON))
        session.run(UV, "venv", "-q", "--allow-existing", "-p", str(python), str(env),
                    external=True)
        session.run(UV, "pip", "install", "-q", "-p", str(env / "bin" / "python"),
                    "-r", str(lock), external=True)
        session.run(UV, "pip", "install", "-q", "-p", str(env / "bin" / "python"),
                    "--no-deps", "-e", str(ROOT), external=True)
        stamp.write_text(digest)
        session.log(f"environment of openai-agents {sdk} built in "
                    f"{time.perf_counter() - started:.1f}s")
    return env


@nox.session(python=BENCH_PYTHON)
def bench(session: nox.Session) -> None:
    """Admit the checks, measure every lane per SDK version (`-- --versions all`), compare."""
    # Every version is checked against the lock files before anything is measured.
    versions, rest, error = split_versions(session.posargs, DEFAULT_SDKS, LONG_SDKS, LOCKS)
    if error is not None:
        session.error(error)
    install(session, PINNED_SDK, report=True)
    failed = []
    for sdk in versions:
        env = sdk_env(session, sdk)
        started = time.perf_counter()
        # Exit 1 means violations were measured: findings about the SDK, not a bench failure.
        command = [str(env / "bin" / "python"), "-m", "harness", "bench", "--sdk", sdk, *rest]
        session.log(" ".join(command))
        code = subprocess.run(command, cwd=ROOT, check=False).returncode
        session.log(f"openai-agents {sdk}: bench took {time.perf_counter() - started:.1f}s")
        if code not in (0, 1):
            failed.append(f"{sdk} (exit {code})")
        # Then the parity gate, as the explicit producer of results/parity/ and its history.
        gate = [str(env / "bin" / "python"), "-m", "harness", "parity", "update"]
        session.log(" ".join(gate))
        code = subprocess.run(gate, cwd=ROOT, check=False).returncode
        if code not in (0, 1):  # 1: divergences between backends, findings in the report
            failed.append(f"{sdk} parity gate (exit {code})")
    session.run("python", "-m", "harness", "compare")
    if failed:
        session.error("bench failed for " + ", ".join(failed)
                      + ": exit 3 = cells changed against the accepted baseline "
                        "(`python -m harness accept --sdk V`), exit 4 = an error finding")


@nox.session(python=BENCH_PYTHON)
def parity(session: nox.Session) -> None:
    """Run the parity gate alone, read-only (`nox -s parity -- update` to produce results)."""
    install(session, PINNED_SDK)
    args = list(session.posargs) or ["check"]
    if args[0] not in ("check", "update"):
        args = ["check", *args]
    session.run("python", "-m", "harness", "parity", *args)


# The survey's gate (issue 11): a covered score of at least 90 % on each local lane and 80 %
# on the Redis and PostgreSQL lanes. `-- --fail-under ...` replaces these thresholds.
SURVEY_GATE = ["--fail-under", "90", "--fail-under", "redis-from-url=80",
               "--fail-under", "redis-injected-client=80",
               "--fail-under", "sqlalchemy-postgres=80"]


@nox.session(python=BENCH_PYTHON)
def survey(session: nox.Session) -> None:
    """Survey the checks against generated mutants (`-- --lanes all`: all lanes); write results/."""
    install(session, PINNED_SDK)
    gate = [] if any(a.startswith("--fail-under") for a in session.posargs) else SURVEY_GATE
    session.run("python", "-m", "harness", "survey", "--write", "--diffs", "5", *gate,
                *session.posargs)


@nox.session(python=BENCH_PYTHON, venv_backend="none")
def lock(session: nox.Session) -> None:
    """Compile the lock file of an SDK version: `nox -s lock -- 0.24.0`."""
    if not session.posargs:
        session.error("name the SDK version: nox -s lock -- 0.24.0")
    template = (LOCKS / "requirements.in").read_text()
    for sdk in session.posargs:
        source = LOCKS / f".requirements-{sdk}.in"
        source.write_text(template.replace("{sdk}", sdk))
        try:
            session.run(UV, "pip", "compile", "--universal", "--python-version", "3.10",
                        "--no-header", "--no-annotate", "-q", str(source),
                        "-o", str(LOCKS / f"openai-agents-{sdk}.txt"), external=True)
        finally:
            source.unlink()


@nox.session(python=BENCH_PYTHON)
def lint(session: nox.Session) -> None:
    """Run ruff and mypy over the project."""
    install(session, PINNED_SDK)
    session.install("ruff", "mypy")
    session.run("ruff", "check", ".")
    session.run("mypy", "checks", "mutants", "targets", "harness")


@nox.session(python=BENCH_PYTHON)
def mutmut_self(session: nox.Session) -> None:
    """Run mutmut 3.8.1 on the harness core from build/mutmut-staging; fail under the threshold."""
    install(session, PINNED_SDK)
    session.run("python", "-m", "harness.selfmutation", "--quiet", *session.posargs)


@nox.session(python=BENCH_PYTHON)
def throughput(session: nox.Session) -> None:
    """Measure admission throughput side by side with mutmut 3.8.1; write results/throughput/."""
    install(session, PINNED_SDK)
    session.run("python", "-m", "harness.throughput", "--write", *session.posargs)
