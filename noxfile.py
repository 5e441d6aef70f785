"""Sessions of the integrity bench: `nox -l` lists them with their one-line docstrings."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import nox

ROOT = Path(__file__).parent


def _source_package() -> None:
    """This checkout's code as the package ``arib`` in nox's own Python, mapped as the wheel
    maps it (harness/ is ``arib``, checks/ ``arib.checks`` ...): the modules the sessions
    import below are standard library only."""
    # The layout's one table is arib.ground.package.LAYOUT, not importable before this runs.
    for name, folder in (("arib", "harness"), ("arib.checks", "checks"),
                         ("arib.mutants", "mutants"), ("arib.targets", "targets")):
        spec = importlib.util.spec_from_file_location(
            name, ROOT / folder / "__init__.py", submodule_search_locations=[str(ROOT / folder)])
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)


_source_package()
from arib.dev import ecosystem as eco  # noqa: E402  (standard library only)
from arib.dev.noxsteps import (  # noqa: E402  (standard library only)
    Step,
    partial_note,
    partial_selection,
    run_steps,
)
from arib.dev.noxsupport import (  # noqa: E402  (standard library only; nox's Python runs it)
    compile_lock,
    env_stamp,
    fill_requirements,
    find_python,
    find_uv,
    link_pythons,
    missing_python_fix,
    resolver_refusal,
    sdk_env_dir,
    split_family,
    split_versions,
    take_option,
)
from arib.ground.errors import UnknownNameError  # noqa: E402
from arib.ground.family import (  # noqa: E402  (standard library only)
    Family,
    all_families,
    apply_environment,
    default_family,
    get_family,
)
from arib.ground.invocations import (  # noqa: E402  (standard library only)
    REPORT_REQUIREMENTS,
    bench_command,
    harness_command,
    lock_command,
    locked_versions,
    unlocked_version_error,
)
from arib.ground.package import LAYOUT  # noqa: E402  (standard library only)

os.environ.setdefault("UV_PYTHON_DOWNLOADS", "never")
apply_environment()  # every family's switches (the SDKs' tracing off), for every session
nox.options.default_venv_backend = "uv"
nox.options.reuse_existing_virtualenvs = True
nox.options.sessions = ["selftest"]
# A session whose Python cannot be found fails (exit 1), on CI and off it: never "skipped".
nox.options.error_on_missing_interpreters = True
nox.options.download_python = "never"

PYTHONS = ["3.10", "3.12", "3.13"]
BENCH_PYTHON = "3.12"
# The default family's versions: what selftest and the reports run on, and what the bench
# measures (each family's record names them).
DEFAULT = get_family(default_family())
PINNED_SDK = DEFAULT.pinned
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
    return family_lock_file(session, DEFAULT, sdk)


def installing_only(session: nox.Session) -> bool:
    """True under `nox --install-only`: the session installs, then stops before it runs
    anything (a no-op `session.run` returns None exactly then; nox has no public flag)."""
    return session.run("python", "-c", "", silent=True, log=False) is None


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
    if installing_only(session):
        return
    # Admission runs beside pytest: pytest runs its tests on every core (pytest-xdist, each
    # worker taking the next test when it is done: most tests wait on a child or a server),
    # admission's workers use what is left; its output is shown once pytest is done.
    python = str(Path(session.bin) / "python")
    with tempfile.TemporaryFile("w+") as log:
        admission = subprocess.Popen([python, "-m", "arib", "admit", "--all", "--quiet"],
                                     cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, text=True)
        try:
            # Another family's tests need its own locked environment (its nox session).
            session.run("pytest", "-m", "not slow", *family_test_ignores(), "-n", "auto",
                        "--dist", "worksteal", *session.posargs)
        finally:
            code = admission.wait()
            log.seek(0)
            print(log.read(), end="", flush=True)
    if code != 0:
        session.error(f"admission failed (exit {code}): see its report above")


def family_test_ignores() -> list[str]:
    """``--ignore`` of each family's own tests (those its nox session runs)."""
    return [f"--ignore={family.tests}" for family in all_families() if family.tests]


def family_tests(session: nox.Session) -> None:
    """Run a family's own tests and admit its checks in its pinned locked environment.

    The session is named by the family record's ``nox_session`` (`nox -s langgraph`). Every locked
    version's environment is built first (.nox/sdk-envs/, as the bench builds them): a family's
    probe test (tests/langgraph/test_probe_locks.py) probes every lane in each of them."""
    family = next(f for f in all_families() if f.tests and f.nox_session == session.name)
    session.install("-r", str(family_lock_file(session, family, family.pinned)))
    session.install("--no-deps", "-e", ".")
    lock_dir = LOCKS if family.lock_dir is None else family.lock_dir
    for label in locked_versions(lock_dir, family.name):
        sdk_env(session, label, family)
    session.run("pytest", family.tests, *session.posargs)
    session.run("python", "-m", "arib", "--family", family.name, "admit", "--all", "--quiet")


# One session per family with tests of its own, named by its record (`nox -s langgraph`).
for _family in all_families():
    if _family.tests and _family.nox_session:
        nox.session(name=_family.nox_session, python=BENCH_PYTHON)(family_tests)


@nox.session(python=BENCH_PYTHON)
def slowtest(session: nox.Session) -> None:
    """Run the slow tests: real servers mid-run, Chromium, determinism, full parity timing."""
    install(session, PINNED_SDK, report=True)
    # Another family's slow tests run in its own environment (its nox session).
    session.run("pytest", "-m", "slow", *family_test_ignores(), *session.posargs)


def sdk_env(session: nox.Session, sdk: str, family: Family | None = None) -> Path:
    """The environment of one version of a family (openai-agents by default): created once,
    then reused (incremental runs); an environment pip finds inconsistent stops the session
    before anything is measured."""
    family = family or DEFAULT
    lock = family_lock_file(session, family, sdk)
    env = sdk_env_dir(ROOT, family.stem(sdk), BENCH_PYTHON)
    stamp = env / ".lock-sha"
    digest = env_stamp(ROOT, lock)
    if not stamp.exists() or stamp.read_text() != digest:
        started = time.perf_counter()
        python = INTERPRETERS[BENCH_PYTHON]
        if python is None:
            session.error(missing_python_fix(BENCH_PYTHON))
        stamp.unlink(missing_ok=True)
        # run_install: these build the environment, also under `nox --install-only`.
        session.run_install(UV, "venv", "-q", "--allow-existing", "-p", str(python), str(env),
                            external=True)
        # sync: exactly the lock, whatever an older lock or the project left in the folder
        synced = session.run_install(UV, "pip", "sync", "-q", "-p",
                                     str(env / "bin" / "python"), str(lock), external=True)
        if synced is None:  # skipped: `nox --no-install` (-R) on a reused session
            session.error(f"the environment of {family.name} {sdk} ({env}) does not match "
                          f"{lock.name} and --no-install kept it from being built; run the "
                          f"session once without --no-install (-R)")
        # A lock pip would refuse (edited by hand, say) is refused here, before measuring;
        # checked before the project is added (its own requirements are openai-agents').
        check = subprocess.run([UV, "pip", "check", "-p", str(env / "bin" / "python")],
                               capture_output=True, text=True, check=False)
        if check.returncode != 0:
            conflicts = [line.strip() for line in (check.stdout + check.stderr).splitlines()
                         if " requires " in line or "not installed" in line]
            session.error(f"the environment of {family.name} {sdk} from {lock} is "
                          f"inconsistent, nothing measured: {'; '.join(conflicts) or 'see above'}"
                          f"; recompile the lock: `{lock_command(sdk, family.name)}`")
        session.run_install(UV, "pip", "install", "-q", "-p", str(env / "bin" / "python"),
                            "--no-deps", "-e", str(ROOT), external=True)
        stamp.write_text(digest)
        session.log(f"environment of {family.name} {sdk} built in "
                    f"{time.perf_counter() - started:.1f}s")
    # A step that cannot import the harness exits 1, which a step's exit would read as
    # "violated": refused here, before anything runs.
    found = subprocess.run([str(env / "bin" / "python"), "-c", "import arib.cli.main"],
                           capture_output=True, text=True, check=False)
    if found.returncode != 0:
        session.error(f"the environment of {family.name} {sdk} ({env}) cannot import the "
                      f"harness: {found.stderr.strip().splitlines()[-1:]}; rebuild it: "
                      f"rm -rf {env} and run the session again")
    return env


def family_lock_file(session: nox.Session, family: Family, version: str) -> Path:
    """The lock file of one version of a family; a version without one (or a label not of
    the family's form) stops the session with the fix."""
    error = unlocked_version_error(version, LOCKS if family.lock_dir is None else family.lock_dir,
                                   family.name, family.components)
    if error is not None:
        session.error(error)
    path = family.lock_file(version)
    assert path is not None  # a family without lock files was refused above
    return path


@nox.session(python=BENCH_PYTHON)
def bench(session: nox.Session) -> None:
    """Admit, measure every lane per version (`-- --versions all`, `--family NAME`), compare.

    Each version is measured in its own environment (`python -m arib --family NAME bench --sdk
    V`), then, where the family's record asks for it, the parity gate produces its results;
    the family's cross-version report follows. The versions are the record's (`bench_versions`,
    `all_versions`, else every lock file's)."""
    name, args = split_family(session.posargs)
    family = known_family(session, name)
    if "-h" in args or "--help" in args:  # the options after `--` are the bench's: show them
        install(session, PINNED_SDK)
        session.run("python", "-m", "arib", *(["--family", name] if name else []), "bench",
                    "--help")
        session.log("nox -s bench -- [--family NAME] [--versions V[,V]|all] [bench options "
                    "above]: each version in its own environment, then its parity gate and "
                    "the cross-version compare")
        return
    lock_dir = LOCKS if family.lock_dir is None else family.lock_dir
    every = list(family.all_versions) or locked_versions(lock_dir, family.name)
    # Every version is checked against the lock files before anything is measured.
    versions, rest, error = split_versions(args, family.bench_versions, every, lock_dir,
                                           family.name, family.components)
    if error is None and not versions:
        usage = bench_command(family=family.name)
        error = (f"no {family.name} version to measure: name them, `{usage} --versions "
                 f"V[,V]` or `--versions all` (locked: {', '.join(every) or 'none'})")
    if error is not None:
        session.error(error)
    install(session, PINNED_SDK, report=True)  # compare reads the results; draws the picture
    if installing_only(session):
        for version in versions:
            sdk_env(session, version, family)
        return
    flag = [] if family is DEFAULT else ["--family", family.name]

    def steps(version: str) -> list[Step]:
        python = str(sdk_env(session, version, family) / "bin" / "python")
        # The bench, then the parity gate, as the explicit producer of results/parity/ and its
        # history; exit 1 of either is findings (violations, divergences), not a failure.
        found = [Step("bench", (python, "-m", "arib", *flag, "bench", "--sdk", version, *rest))]
        # A partial bench (--checks, --lanes, --shard) produces no parity results: the gate
        # measures every lane, and its results belong beside whole runs only.
        if family.bench_parity and partial_selection(rest) is None:
            results = ["--results", out] if (out := take_option(rest, "--out")[0]) else []
            found.append(Step("parity gate", (python, "-m", "arib", *flag, "parity", "update",
                                              *results)))
        return found

    outcome = run_steps(versions, steps, lambda step: run_step(session, step), family.name)
    if outcome.refusal is not None:  # nothing after a refused step: arib.dev.noxsteps
        session.error(outcome.refusal)
    partial = partial_selection(rest)
    if partial is None:
        session.run("python", "-m", "arib", *flag, "compare", *out_args(rest))
    else:  # compare takes whole runs only: it would refuse (exit 2) a folder of partial ones
        session.log(partial_note(partial, family.name))
    if outcome.failed:
        session.error(bench_failed(list(outcome.failed), family.name))


def run_step(session: nox.Session, step: Step) -> int:
    """Run one step of the bench session in the project's folder; its exit code."""
    session.log(" ".join(step.command))
    started = time.perf_counter()
    env = {**os.environ, **dict(step.env)} if step.env else None
    code = subprocess.run(step.command, cwd=ROOT, env=env, check=False).returncode
    session.log(f"{step.label} took {time.perf_counter() - started:.1f}s (exit {code})")
    return code


def bench_failed(failed: list[str], family: str | None = None) -> str:
    """The bench's closing error: which versions failed and what their exit codes mean."""
    return (f"bench failed for {', '.join(failed)}: exit 3 = cells changed against the "
            f"accepted baseline (`{harness_command('accept --sdk V', family)}`), exit 4 = an "
            f"error finding or nothing measured (e.g. no check admitted on that version: see "
            f"its report's admission table)")

def out_args(args: list[str]) -> list[str]:
    """The bench's ``--out DIR`` (either spelling), for the compare that follows it."""
    out, _ = take_option(args, "--out")
    return [] if not out else ["--out", out]


def known_family(session: nox.Session, name: str) -> Family:
    """The family ``--family`` names; an unknown one stops the session, listing the known."""
    try:
        return get_family(name)
    except UnknownNameError as exc:
        session.error(str(exc))
        raise  # session.error raises; this line only tells the type checker


@nox.session(python=BENCH_PYTHON)
def parity(session: nox.Session) -> None:
    """Run the parity gate alone, read-only (`nox -s parity -- update` to produce results)."""
    install(session, PINNED_SDK)
    args = list(session.posargs) or ["check"]
    if args[0] not in ("check", "update"):
        args = ["check", *args]
    session.run("python", "-m", "arib", "parity", *args)


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
    session.run("python", "-m", "arib", "survey", "--write", "--diffs", "5", *gate,
                *session.posargs)


@nox.session(python=BENCH_PYTHON, venv_backend="none")
def lock(session: nox.Session) -> None:
    """Compile lock files: `nox -s lock -- 0.24.0`, `-- --family langgraph cp4.3.2+sq3.1.2+pg3.2.0`.

    A combination pip would refuse is refused with the resolver's reason and the fix."""
    name, versions = split_family(session.posargs)
    family = known_family(session, name)
    example = "cp4.3.2+sq3.1.2+pg3.2.0" if family.components else "0.24.0"
    flag = "" if family is DEFAULT else f"--family {name} "
    if not versions:
        session.error(f"name the version(s) to lock: nox -s lock -- {flag}{example}")
    lock_dir = LOCKS if family.lock_dir is None else family.lock_dir
    template = (lock_dir / "requirements.in").read_text()
    refused = []
    for version in versions:
        try:
            text, omitted = fill_requirements(template, version, family.components, name)
        except ValueError as exc:
            session.error(f"{exc}; then `nox -s lock -- {flag}{example}`")
        target = lock_dir / f"{family.stem(version)}.txt"
        refusal = compile_lock(session, UV, target, text, omitted)
        if refusal is not None:
            refused.append(resolver_refusal(refusal, version, name, family.components))
            session.log(refused[-1])
            continue
        session.log(f"wrote {target}" + (f" ({len(omitted)} line(s) left out, see its top)"
                                         if omitted else ""))
    if refused:
        session.error(f"{len(refused)} of {len(versions)} version(s) refused, see above")


@nox.session(python=BENCH_PYTHON, venv_backend="none")
def ecosystem(session: nox.Session) -> None:
    """Measure third-party lanes (targets/ecosystem), each in an env of its lock: `-- --lanes X`.

    `-- --lock [NAME,...]` compiles the locks (harness/locks/ecosystem/) instead. Each lock's
    lanes are benched in its own environment (`python -m arib --family F bench --lanes ...
    --out OUT/<lock>`, OUT defaulting to results/ecosystem); a lock whose environment cannot
    be built is not measured, with the cause, and the others go on. The session fails when
    nothing was measured, or when a bench exited other than 0 (held) or 1 (violated)."""
    try:
        plan = eco.plan(session.posargs)
    except eco.EcosystemError as exc:
        session.error(str(exc))
    if plan.lock:
        for entry, _ in plan.groups:
            family = known_family(session, entry.family)
            lock_dir = LOCKS if family.lock_dir is None else family.lock_dir
            text, omitted = fill_requirements((lock_dir / "requirements.in").read_text(),
                                              entry.version, family.components, family.name)
            target = eco.lock_path(ROOT, entry)
            refused = compile_lock(session, UV, target, text + entry.requirement + "\n",
                                   entry.header() + omitted)
            if refused is not None:
                session.error(f"the lock of {entry.name} ({entry.requirement} on "
                              f"{family.name} {entry.version}) is refused: {refused}")
            session.log(f"wrote {target}")
        return
    out = Path(plan.out or ROOT / "results" / "ecosystem")
    outcomes, envs = [], {}
    for entry, lanes in plan.groups:
        env, why = eco.build_env(session, UV, INTERPRETERS[BENCH_PYTHON], ROOT, entry,
                                 sdk_env_dir(ROOT, f"ecosystem-{entry.name}", BENCH_PYTHON))
        if env is None:
            session.warn(f"{', '.join(lanes)}: not measured, because {why}")
            outcomes.append(eco.Outcome(entry, lanes, None, why))
            continue
        envs[entry.name] = env
        command = (str(env / "bin" / "python"), "-m", "arib", "--family", entry.family,
                   "bench", "--lanes", ",".join(lanes), "--out", str(out / entry.name),
                   *plan.rest)
        lock = ((eco.LOCK_VAR, str(eco.lock_path(ROOT, entry))),)  # the run records its lock
        outcomes.append(eco.Outcome(entry, lanes, run_step(session, Step("bench", command, lock))))
    for outcome in outcomes:
        session.log(outcome.line())
    if not plan.rest:  # a partial bench (--checks ...) is no table of the ecosystem
        for label, command in eco.follow_ups(ROOT, out, outcomes, envs):
            code = run_step(session, Step(label, command))
            if code not in (0, 1):
                session.warn(f"{label} exited {code}")
    failure = eco.verdict(outcomes)
    if failure is not None:
        session.error(failure)


@nox.session(python=BENCH_PYTHON)
def lint(session: nox.Session) -> None:
    """Run ruff and mypy over the project."""
    install(session, PINNED_SDK)
    session.install("ruff", "mypy")
    session.run("ruff", "check", ".")
    session.run("mypy", "-p", "arib", env={"MYPYPATH": str(mypy_tree())})


def mypy_tree() -> Path:
    """build/mypy/arib: the package as the wheel lays it out, made of links to this checkout's
    folders. mypy follows no import hook, so the editable install's mapping (harness/ is
    ``arib``) is invisible to it; through these links it checks every module by its name."""
    tree = ROOT / "build" / "mypy"
    package = tree / "arib"
    if package.exists():
        shutil.rmtree(package)
    package.mkdir(parents=True)
    for folder, name in LAYOUT.items():
        if name == "arib":
            for entry in (ROOT / folder).iterdir():
                if entry.name != "__pycache__":
                    (package / entry.name).symlink_to(entry)
        else:
            (tree / name.replace(".", "/")).symlink_to(ROOT / folder)
    return tree


@nox.session(python=BENCH_PYTHON)
def mutmut_self(session: nox.Session) -> None:
    """Run mutmut 3.8.1 on the harness core from build/mutmut-staging; fail under the threshold."""
    install(session, PINNED_SDK)
    session.run("python", "-m", "arib.dev.selfmutation", "--quiet", *session.posargs)


@nox.session(python=BENCH_PYTHON)
def throughput(session: nox.Session) -> None:
    """Measure admission throughput side by side with mutmut 3.8.1; write results/throughput/."""
    install(session, PINNED_SDK)
    session.run("python", "-m", "arib.dev.throughput", "--write", *session.posargs)
