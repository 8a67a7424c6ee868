"""Exceptions raised when the *harness* (not the model) cannot proceed.

Failures of a model's output are data (an :class:`~trex_eval.records.ExecStatus` or
:class:`~trex_eval.records.Verdict`), never exceptions. Everything here means the user or the
environment must act; the CLI prints ``str(error)`` and exits with code 2, without a traceback.

::

    TrexError
    ├── ConfigError       bad flag, preset, models file, run directory or missing extra
    ├── DataError         data directory missing, file missing or corrupt, download failed
    ├── BenchmarkError    malformed benchmark YAML or data row
    ├── BackendError      model backend cannot start or keeps failing
    ├── SandboxError      the sandbox itself is broken (not: the program failed)
    ├── GradingError      a grader received input it cannot judge (a harness bug or bad reference)
    └── StoreError        run directory unreadable or incompatible
"""

from __future__ import annotations


class TrexError(Exception):
    """Base class. ``where`` locates the problem (file, line, field); ``hint`` says what to do."""

    def __init__(self, message: str, *, where: str | None = None, hint: str | None = None) -> None:
        self.message = message
        self.where = where
        self.hint = hint
        super().__init__(self.__str__())

    def __str__(self) -> str:
        text = f"{self.where}: {self.message}" if self.where else self.message
        if self.hint:
            text += f"\n  -> {self.hint}"
        return text


class ConfigError(TrexError):
    """Invalid configuration: flags, presets, models file, missing optional extra."""


class DataError(TrexError):
    """Benchmark data directory missing, incomplete, corrupt, or cannot be downloaded."""


class BenchmarkError(TrexError):
    """A benchmark definition (YAML) or one of its data rows is malformed."""


class BackendError(TrexError):
    """A model backend cannot be started or reached."""


class SandboxError(TrexError):
    """The sandbox cannot run programs at all (as opposed to a program failing inside it)."""


class GradingError(TrexError):
    """A grader was asked to judge input it cannot interpret."""


class StoreError(TrexError):
    """A run directory is unreadable, torn beyond repair, or from an incompatible version."""


def missing_extra(module: str, extra: str) -> ConfigError:
    """Error for an optional dependency that is not installed, naming the pip extra."""
    return ConfigError(
        f"the optional dependency '{module}' is not installed",
        hint=f"pip install 'trex-eval[{extra}]'",
    )
