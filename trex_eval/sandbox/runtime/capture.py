"""The recorder that solver hooks report to, and a builder for the solver-neutral matrix form.

Hooks are installed once in the warm worker and capture the module-level :data:`RECORDER`; each
forked job attaches its own result channel to it. Capture code must never change what the
program sees: every failure inside a hook is caught and becomes a note on the solve record.

Record fields mirror ``trex_eval.records.SolveRecord`` and ``LinearModel`` (this package cannot
import them); the harness validates everything it receives.
"""

from __future__ import annotations

import functools
import math
import threading
import traceback
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any

from .channel import ResultChannel

INF = float("inf")

# The values of trex_eval.records.SolveStatus.
OPTIMAL = "optimal"
INFEASIBLE = "infeasible"
UNBOUNDED = "unbounded"
INF_OR_UNBD = "inf_or_unbd"
TIME_LIMIT = "time_limit"
SUBOPTIMAL = "suboptimal"
FEASIBLE = "feasible"
INTERRUPTED = "interrupted"
NUMERIC = "numeric"
NOT_SOLVED = "not_solved"
ERROR = "error"
UNKNOWN = "unknown"

MAX_CAPTURE_NONZEROS = 2_000_000
"""Larger models are reported without their matrix (the record would dwarf the program)."""


class CaptureError(Exception):
    """A model cannot be put in matrix form; the message becomes the record's note."""


class Recorder:
    """Collects what the hooks observe in the current job and streams it to the channel.

    Solve calls nest (pulp's HiGHS interface calls highspy, pyomo calls gurobipy): only the
    outermost hooked call of a thread is recorded, as one solve of the library the program used.
    """

    def __init__(self) -> None:
        self._channel: ResultChannel | None = None
        self._local = threading.local()
        self.last_error: BaseException | None = None
        """The exception the most recent failing solve call raised (to tell solver errors apart)."""

    def attach(self, channel: ResultChannel) -> None:
        """Send records to ``channel`` from now on (called in the job after fork)."""
        self._channel = channel

    def emit(self, kind: str, payload: dict[str, Any]) -> None:
        if self._channel is not None:
            self._channel.emit(kind, payload)

    @property
    def busy(self) -> bool:
        """True while this thread is inside a hooked solve call."""
        return bool(getattr(self._local, "depth", 0))

    @contextmanager
    def solving(self) -> Iterator[None]:
        self._local.depth = getattr(self._local, "depth", 0) + 1
        try:
            yield
        finally:
            self._local.depth -= 1

    def solve(self, library: str, fields: dict[str, Any]) -> None:
        """Record one completed solve call of ``library``."""
        self.emit("solve", {"library": library, **fields})

    def solve_error(self, library: str, error: BaseException) -> None:
        """Record a solve call that raised ``error`` (licence errors are recognised from it)."""
        self.last_error = error
        self.emit(
            "solve_error",
            {
                "library": library,
                "error_type": type(error).__name__,
                "message": str(error)[-2000:],
                "errno": _error_code(error),
            },
        )

    def note(self, message: str) -> None:
        """A diagnostic that is not a solve (e.g. a hook that could not be installed)."""
        self.emit("note", {"message": message})


RECORDER = Recorder()


def _error_code(error: BaseException) -> int | None:
    for name in ("errno", "retcode", "code"):
        value = getattr(error, name, None)
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    return None


def describe_failure(error: BaseException) -> str:
    """Short text for a capture failure: exception type, message and the innermost frame."""
    frames = traceback.extract_tb(error.__traceback__)
    where = f" at {frames[-1].name}:{frames[-1].lineno}" if frames else ""
    return f"{type(error).__name__}: {error}{where}"[:500]


Prepare = Callable[[tuple[Any, ...], dict[str, Any]], Any]
Report = Callable[[Any, tuple[Any, ...], dict[str, Any], Any], dict[str, Any]]


def capture_model(build: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    """``{"model": build()}``, or ``{"model": None, "note": why}`` when the build fails."""
    try:
        return {"model": build()}
    except CaptureError as error:
        return {"model": None, "note": str(error)}
    except Exception as error:
        return {"model": None, "note": f"matrix capture failed: {describe_failure(error)}"}


def wrap_solve(
    library: str, original: Callable[..., Any], prepare: Prepare, report: Report
) -> Callable[..., Any]:
    """Wrap a solve function/method so every outermost call is recorded.

    ``prepare(args, kwargs)`` runs before the solve (capture the matrix, cap solver threads) and
    its result is handed to ``report(prepared, args, kwargs, result)``, which runs after a solve
    that returned and gives the record fields (status, objective, ...). Exceptions from either
    are swallowed into a note; exceptions from the solve itself are recorded and re-raised.
    """

    @functools.wraps(original)
    def hooked(*args: Any, **kwargs: Any) -> Any:
        if RECORDER.busy:
            return original(*args, **kwargs)
        with RECORDER.solving():
            try:
                prepared = prepare(args, kwargs)
            except Exception as error:
                prepared = {"model": None, "note": f"hook failed before solve: {describe_failure(error)}"}
            try:
                result = original(*args, **kwargs)
            except BaseException as error:
                RECORDER.solve_error(library, error)
                raise
            try:
                fields = report(prepared, args, kwargs, result)
            except Exception as error:
                fields = {
                    "status": UNKNOWN,
                    "raw_status": "",
                    "note": f"hook failed after solve: {describe_failure(error)}",
                }
            RECORDER.solve(library, fields)
            return result

    hooked.__trex_hooked__ = True  # type: ignore[attr-defined]
    return hooked


def record_write(library: str, original: Any) -> Any:
    """Wrap a model's ``write`` method so each file it writes is reported (``model_written``)."""

    @functools.wraps(original)
    def write(self: Any, filename: Any, *args: Any, **kwargs: Any) -> Any:
        result = original(self, filename, *args, **kwargs)
        RECORDER.emit("model_written", {"library": library, "path": str(filename)})
        return result

    return write


def replace_attribute(owner: object, name: str, value: object) -> None:
    """Rebind ``owner.name`` (a library module's function or class) to its hooked version."""
    setattr(owner, name, value)


def is_hooked(function: object) -> bool:
    return bool(getattr(function, "__trex_hooked__", False))


def finite_or_none(value: object) -> float | None:
    """``float(value)`` when it is a finite number, else None."""
    try:
        number = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


class LinearModelBuilder:
    """Accumulates a model in the harness's matrix form (see ``trex_eval.records.LinearModel``).

    Args:
        sense: ``"min"`` or ``"max"``.
        infinity: the library's infinity; bounds at or beyond it become +/-inf.
    """

    def __init__(self, sense: str, *, infinity: float = 1e20) -> None:
        self.sense = sense
        self.infinity = infinity
        self.objective_constant = 0.0
        self.var_names: list[str] = []
        self.obj: list[float] = []
        self.lb: list[float] = []
        self.ub: list[float] = []
        self.vtype: list[str] = []
        self.row_names: list[str] = []
        self.row_lower: list[float] = []
        self.row_upper: list[float] = []
        self.a_row: list[int] = []
        self.a_col: list[int] = []
        self.a_val: list[float] = []
        self.q_obj: list[tuple[int, int, float]] = []
        self.n_quadratic_constraints = 0
        self.n_general_constraints = 0
        self.n_sos = 0
        self.q_constraints: list[dict[str, Any]] = []
        self.primal: list[float] = []
        self.row_duals: list[float] = []

    def bound(self, value: object, default: float) -> float:
        """A bound as a float, with the library's infinity (or None) mapped to +/-inf."""
        if value is None:
            return default
        number = float(value)  # type: ignore[arg-type]
        if number >= self.infinity:
            return INF
        if number <= -self.infinity:
            return -INF
        return number

    def add_var(self, name: str, *, obj: float, lb: object, ub: object, vtype: str) -> int:
        self.var_names.append(str(name))
        self.obj.append(float(obj))
        self.lb.append(self.bound(lb, -INF))
        self.ub.append(self.bound(ub, INF))
        self.vtype.append(vtype)
        return len(self.var_names) - 1

    def add_row(
        self,
        name: str,
        *,
        lower: object,
        upper: object,
        entries: Iterator[tuple[int, float]] | list[tuple[int, float]],
    ) -> None:
        row = len(self.row_names)
        self.row_names.append(str(name))
        self.row_lower.append(self.bound(lower, -INF))
        self.row_upper.append(self.bound(upper, INF))
        for col, value in entries:
            self.a_row.append(row)
            self.a_col.append(int(col))
            self.a_val.append(float(value))
        if len(self.a_val) > MAX_CAPTURE_NONZEROS:
            raise CaptureError(f"matrix not captured: more than {MAX_CAPTURE_NONZEROS} nonzeros")

    def add_sense_row(self, name: str, *, sense: str, rhs: float, entries: list[tuple[int, float]]) -> None:
        """A row given as ``expr <sense> rhs`` with sense ``<``/``<=``, ``>``/``>=`` or ``=``."""
        if sense in ("<", "<=", "L"):
            self.add_row(name, lower=-INF, upper=rhs, entries=entries)
        elif sense in (">", ">=", "G"):
            self.add_row(name, lower=rhs, upper=INF, entries=entries)
        elif sense in ("=", "==", "E"):
            self.add_row(name, lower=rhs, upper=rhs, entries=entries)
        else:
            raise CaptureError(f"matrix not captured: unknown row sense {sense!r}")

    def add_quadratic_row(
        self,
        *,
        sense: str,
        rhs: float,
        linear: list[tuple[int, float]],
        quadratic: list[tuple[int, int, float]],
    ) -> None:
        """A quadratic constraint ``linear + quadratic <sense> rhs`` (sense as in :meth:`add_sense_row`)."""
        bound = self.bound(rhs, INF)
        if sense in ("<", "<=", "L"):
            lower, upper = -INF, bound
        elif sense in (">", ">=", "G"):
            lower, upper = bound, INF
        elif sense in ("=", "==", "E"):
            lower, upper = bound, bound
        else:
            raise CaptureError(f"matrix not captured: unknown quadratic row sense {sense!r}")
        self.q_constraints.append(
            {
                "lower": lower,
                "upper": upper,
                "linear": [(int(col), float(value)) for col, value in linear],
                "quadratic": [(int(i), int(j), float(value)) for i, j, value in quadratic],
            }
        )
        self.n_quadratic_constraints = len(self.q_constraints)

    def continuous_linear(self) -> bool:
        """Whether the model read so far is a continuous LP (the only kind whose optimum the
        harness may certify from the solver's primal and dual values)."""
        return not (self.q_obj or self.q_constraints or self.n_general_constraints or self.n_sos) and all(
            kind == "C" for kind in self.vtype
        )

    def attach_solution(self, primal: Iterable[object], row_duals: Iterable[object]) -> None:
        """Keep the solver's primal values (one per column) and row duals (one per row) for the
        harness's optimality certificate; nothing is kept when either does not fit the model or
        holds a value that is not a finite number (the harness then re-solves, as without them).
        Call after every column and row was added."""
        values = [finite_or_none(value) for value in primal]
        duals = [finite_or_none(value) for value in row_duals]
        if len(values) != len(self.obj) or len(duals) != len(self.row_lower):
            return
        if any(value is None for value in values) or any(value is None for value in duals):
            return
        self.primal = [float(value) for value in values if value is not None]
        self.row_duals = [float(value) for value in duals if value is not None]

    def build(self) -> dict[str, Any]:
        """The model as a JSON-ready dict with exactly the ``LinearModel`` fields (the solution
        fields only where :meth:`attach_solution` kept one)."""
        solution = {"primal": self.primal, "row_duals": self.row_duals} if self.primal else {}
        return {
            **solution,
            "sense": self.sense,
            "objective_constant": float(self.objective_constant),
            "var_names": self.var_names,
            "obj": self.obj,
            "lb": self.lb,
            "ub": self.ub,
            "vtype": self.vtype,
            "row_names": self.row_names,
            "row_lower": self.row_lower,
            "row_upper": self.row_upper,
            "a_row": self.a_row,
            "a_col": self.a_col,
            "a_val": self.a_val,
            "q_obj": self.q_obj,
            "n_quadratic_constraints": self.n_quadratic_constraints,
            "n_general_constraints": self.n_general_constraints,
            "n_sos": self.n_sos,
            "q_constraints": self.q_constraints,
        }


def identity_index(items: list[Any]) -> dict[int, int]:
    """Position of each object by identity (solver variables overload ``==``, so never key on them)."""
    return {id(item): position for position, item in enumerate(items)}
