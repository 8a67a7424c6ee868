"""The acceptance test of a tolerance rule: :class:`Tolerance` and the :class:`Comparison` it
makes of a value with the reference (:mod:`trex_eval.grading.objective.tolerance` applies it to
the harness's value). Pure."""

from __future__ import annotations

import math
from dataclasses import dataclass

from trex_eval.errors import ConfigError

__all__ = ["Comparison", "Tolerance", "written_decimals"]


@dataclass(frozen=True)
class Comparison:
    """One tolerance check: the (rounded) values compared, ``|Δ|``, the bound it must not exceed,
    ``|Δ| / |ref|`` (``None`` for a zero reference) and the outcome."""

    predicted: float
    reference: float
    abs_error: float
    bound: float
    rel_error: float | None
    passed: bool


@dataclass(frozen=True)
class Tolerance:
    """Accept ``pred`` when ``|pred − ref| ≤ atol + rtol·|ref|``.

    ``digits`` (default ``None``: no rounding) rounds both values to that many decimals first
    (negative values round to tens, hundreds ...). The defaults are the ``strict`` rule's.

    Raises:
        ConfigError: a tolerance that is negative or not finite.
    """

    rtol: float = 1e-4
    atol: float = 1e-6
    digits: int | None = None
    exclusive: bool = False
    """``|Δ| < bound`` instead of ``≤`` (ORThought's ``abs(a - b) < 0.01``)."""
    label_digits: int | None = None
    """Mamo's test instead: ``|Δ|·10^d < 1`` with ``d = max(label_digits, decimals written in the
    label)``, or ``|Δ| / |ref| ≤ rtol`` (``|Δ|·1e-4 ≤ rtol`` for a zero reference, as Mamo's
    ``comp`` computes it). ``atol`` is unused then."""

    def __post_init__(self) -> None:
        for key, value in (("rtol", self.rtol), ("atol", self.atol)):
            if not math.isfinite(value) or value < 0:
                raise ConfigError(f"tolerance {key}={value!r} must be a finite number >= 0")

    def compare(self, predicted: float, reference: float, *, label: str | None = None) -> Comparison:
        """Check ``predicted`` against ``reference`` (both finite); ``label``, the reference as
        written, is read only by a ``label_digits`` test (its decimals)."""
        if self.digits is not None:
            predicted, reference = round(predicted, self.digits), round(reference, self.digits)
        abs_error = abs(predicted - reference)
        rel_error = abs_error / abs(reference) if reference else None
        if self.label_digits is not None:
            scale = 10.0 ** max(self.label_digits, written_decimals(label))
            rate = abs_error / abs(reference) if reference else abs_error * 1e-4
            # The bound shown is the larger of the two acceptance tests'.
            bound = max(1 / scale, self.rtol * abs(reference) if reference else self.rtol / 1e-4)
            # Scaled before subtracting, as Mamo's script does: its verdict at the boundary is kept.
            passed = abs(predicted * scale - reference * scale) < 1 or rate <= self.rtol
        else:
            bound = self.atol + self.rtol * abs(reference)
            passed = abs_error < bound if self.exclusive else abs_error <= bound
        return Comparison(
            predicted=predicted,
            reference=reference,
            abs_error=abs_error,
            bound=bound,
            rel_error=rel_error,
            passed=passed,
        )

    def formula(self) -> str:
        """The acceptance test in words, e.g. ``|pred − ref| ≤ 1e-06 + 0.0001·|ref|``."""
        if self.label_digits is not None:
            return (
                f"|pred − ref|·10^d < 1 with d = max({self.label_digits}, decimals written in the label), "
                f"or |pred − ref| ≤ {self.rtol:g}·|ref|"
            )
        text = f"|pred − ref| {'<' if self.exclusive else '≤'} {self.atol:g} + {self.rtol:g}·|ref|"
        if self.digits is not None:
            text = f"{text} after rounding both to {self.digits} decimals"
        return text


def written_decimals(label: str | None) -> int:
    """Digits after the point in a label as written (``"12.50"`` -> 2; ``"3"``, ``None`` -> 0)."""
    text = (label or "").strip()
    return len(text.split(".", 1)[1]) if "." in text else 0
