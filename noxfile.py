"""Sessions of the integrity bench: `nox -l` lists them with their one-line docstrings."""

from __future__ import annotations

import os
from pathlib import Path

import nox

os.environ.setdefault("UV_PYTHON_DOWNLOADS", "never")
os.environ.setdefault("OPENAI_AGENTS_DISABLE_TRACING", "1")
nox.options.default_venv_backend = "uv"
nox.options.reuse_existing_virtualenvs = True
nox.options.sessions = ["selftest"]

ROOT = Path(__file__).parent
PYTHONS = ["3.10", "3.12", "3.13"]
BENCH_PYTHON = "3.12"
DEFAULT_SDKS = ["0.19.2", "0.24.0"]
PINNED_SDK = "0.24.0"
LOCKS = ROOT / "harness" / "locks"


def install(session: nox.Session, sdk: str) -> None:
    """Install the locked environment of one SDK version, then the project without deps."""
    lock = LOCKS / f"openai-agents-{sdk}.txt"
    if not lock.exists():
        known = sorted(p.stem.removeprefix("openai-agents-") for p in LOCKS.glob("*.txt"))
        session.error(f"unavailable SDK version {sdk!r}: locks exist for {known}; "
                      f"create one with `nox -s lock -- {sdk}`")
    session.install("-r", str(lock))
    session.install("--no-deps", "-e", ".")


@nox.session(python=PYTHONS)
def selftest(session: nox.Session) -> None:
    """Run the pytest suite, then admit every check against its paired mutants."""
    install(session, PINNED_SDK)
    session.run("pytest", *session.posargs)
    session.run("python", "-m", "harness", "admit", "--all", "--quiet")


@nox.session(python=BENCH_PYTHON)
@nox.parametrize("sdk", DEFAULT_SDKS)
def bench(session: nox.Session, sdk: str) -> None:
    """Admit the checks, run them on every local lane, write results/ and the report."""
    install(session, sdk)
    # Exit 1 means the bench measured violations: findings, not a failure of the bench.
    session.run("python", "-m", "harness", "bench", "--sdk", sdk, *session.posargs,
                success_codes=[0, 1])


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
            session.run("uv", "pip", "compile", "--universal", "--python-version", "3.10",
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
