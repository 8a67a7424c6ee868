"""The error a user sees for a bad ``--opt KEY=VALUE`` or preset option, the same for every backend:
which option, why, the close matches of a misspelt name, and the options the backend takes.

Pure: builds :class:`~trex_eval.errors.ConfigError` values, raises nothing itself.
"""

from __future__ import annotations

import difflib
from collections.abc import Collection, Iterable

from pydantic import ValidationError

from trex_eval.errors import ConfigError

SAMPLING_KEYS = ("temperature", "top_p", "max_tokens", "seed", "model")
"""Keys every preset takes besides its backend's options (see ``resolve_preset``): they are
candidates for "did you mean" too, as ``temprature`` is a sampling key misspelt."""


def _close(name: str, known: Iterable[str]) -> list[str]:
    return difflib.get_close_matches(name, sorted({*known, *SAMPLING_KEYS}), n=2, cutoff=0.6)


def unknown_options(
    unknown: Collection[str], known: Collection[str], *, backend: str, where: str
) -> ConfigError:
    """``unknown option 'temprature' for backend 'reference' (did you mean 'temperature'?)``, with
    the backend's options (and the sampling keys) listed in the hint."""
    names = sorted(unknown)
    close = {name: " or ".join(repr(match) for match in _close(name, known)) for name in names}
    if len(names) == 1:
        guesses = [close[names[0]]] if close[names[0]] else []
    else:
        guesses = [f"{name!r} -> {matches}" for name, matches in close.items() if matches]
    guess = f" (did you mean {', '.join(guesses)}?)" if guesses else ""
    plural = "s" if len(names) > 1 else ""
    return ConfigError(
        f"unknown option{plural} {', '.join(repr(n) for n in names)} for backend '{backend}'{guess}",
        where=where,
        hint=f"options of '{backend}': {', '.join(sorted(known))}; every preset also takes "
        f"{', '.join(SAMPLING_KEYS)}",
    )


def invalid_options(
    error: ValidationError, known: Collection[str], *, backend: str, where: str, hint: str | None = None
) -> ConfigError:
    """The :class:`ConfigError` for ``error`` raised validating a backend's options: unknown keys
    (pydantic's ``extra_forbidden``) as :func:`unknown_options`, else each bad value with its field."""
    problems = error.errors()
    extra = [str(p["loc"][0]) for p in problems if p["type"] == "extra_forbidden" and p["loc"]]
    if extra:
        return unknown_options(extra, known, backend=backend, where=where)
    text = "; ".join(f"{'.'.join(map(str, p['loc'])) or '(options)'}: {p['msg']}" for p in problems)
    return ConfigError(f"invalid option: {text}", where=where, hint=hint)
