"""One exception hierarchy for misuse of the harness; a backend's failure is never raised."""

from __future__ import annotations

from arib.ground.model import ExitCode


class BenchError(Exception):
    """Base of every error the harness raises on misuse; carries the exit code to use."""

    exit_code: ExitCode = ExitCode.USAGE


class UsageError(BenchError):
    """A bad value on the command line or in a call: names the value, the rule and the fix."""


class UnknownNameError(UsageError):
    """An unknown backend, check, mutant or SDK version was named."""


class ParameterError(UsageError):
    """A check parameter is malformed or out of range."""


class CheckDefinitionError(BenchError):
    """A check module is malformed: no id, no paired mutants, a duplicate id, ..."""


class MutantDefinitionError(BenchError):
    """A mutant is malformed or a selector matches nothing."""


class GateError(BenchError):
    """A sanity gate failed: the clean target did not hold or a forced-broken mutant survived."""

    exit_code = ExitCode.ERROR_OR_NOTHING


class ServiceError(BenchError):
    """A service a lane needs is missing, misconfigured or unreachable."""

    exit_code = ExitCode.ERROR_OR_NOTHING


class ResultsError(BenchError):
    """A result file is corrupt, foreign or fails its schema."""

    exit_code = ExitCode.ERROR_OR_NOTHING


class PluginError(BenchError):
    """A family (or another plugin) registered through an entry point cannot be loaded."""
