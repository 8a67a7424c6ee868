"""A solver-neutral, index-based picture of a model at one moment.

``Model`` builds a :class:`Snapshot` after applying pending updates; the HiGHS solve and the
LP/MPS writers read only this, never the live objects. Variables are columns ``0..n-1`` in model
order; rows are linear constraints in model order. Every term list is merged (one entry per
variable or variable pair), free of zero coefficients and sorted by column.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class LinearRow:
    """``sum(vals[k] * x[cols[k]]) sense rhs`` with ``sense`` one of ``<``, ``>``, ``=``."""

    name: str
    sense: str
    rhs: float
    cols: tuple[int, ...]
    vals: tuple[float, ...]


@dataclass(frozen=True)
class QuadRow:
    """A quadratic constraint: the linear part plus ``q * x[i] * x[j]`` terms with ``i <= j``."""

    name: str
    sense: str
    rhs: float
    cols: tuple[int, ...]
    vals: tuple[float, ...]
    quad: tuple[tuple[int, int, float], ...]


@dataclass(frozen=True)
class SOSSet:
    """A special ordered set: type 1 or 2, member columns and their weights."""

    sos_type: int
    cols: tuple[int, ...]
    weights: tuple[float, ...]


@dataclass(frozen=True)
class GeneralRow:
    """A general constraint; ``kind`` is ``max``, ``min``, ``abs``, ``and``, ``or``, ``norm``,
    ``indicator`` or ``pwl``; ``data`` holds its operands with variables as column indices."""

    name: str
    kind: str
    data: dict[str, object] = field(default_factory=dict)


@dataclass(frozen=True)
class Snapshot:
    """The whole model. ``sense`` is 1 (minimise) or -1 (maximise); ``q_obj`` holds objective
    terms ``q * x[i] * x[j]`` (``i <= j``, no 1/2 factor); bounds use ``inf`` for Gurobi's
    infinity (any magnitude >= 1e100)."""

    name: str
    sense: int
    obj_constant: float
    var_names: tuple[str, ...]
    lb: tuple[float, ...]
    ub: tuple[float, ...]
    obj: tuple[float, ...]
    vtype: tuple[str, ...]
    rows: tuple[LinearRow, ...]
    q_obj: tuple[tuple[int, int, float], ...] = ()
    qrows: tuple[QuadRow, ...] = ()
    sos: tuple[SOSSet, ...] = ()
    general: tuple[GeneralRow, ...] = ()

    @property
    def num_vars(self) -> int:
        return len(self.var_names)

    @property
    def is_mip(self) -> bool:
        return any(t != "C" for t in self.vtype) or bool(self.sos) or bool(self.general)
