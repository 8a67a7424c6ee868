"""``gurobipy.read``: an LP or MPS file (optionally ``.gz``/``.bz2``) as a :class:`~._model.Model`.

HiGHS parses the file (``Highs.readModel``); the layer then builds an ordinary ``Model`` from
what HiGHS read, so the program can query, change, write and ``optimize()`` it as if it had
built it itself. What comes out is what gurobipy 13 reads from the same file (measured on files
gurobipy writes), with these rules:

* Gurobi's LP files carry an objective constant as ``c Constant`` with a column ``Constant``
  fixed to 1; gurobipy reads it as the objective constant (``ObjCon``), and so does the layer.
* ``ModelName`` is the ``NAME`` of an MPS file, and empty for an LP file, as in gurobipy.
* An integer column with bounds [0, 1] is binary (``VType`` ``B``): HiGHS does not keep the
  difference between ``Binaries`` and a ``Generals`` column bounded by [0, 1], Gurobi does.
* A row with two finite sides becomes ``addRange`` (gurobipy's range variable ``Rg<name>``).
* Names HiGHS's LP parser misreads (``x[0]`` — a ``[`` opens a quadratic term there —, ``x-y``,
  anything beyond letters, digits and ``_``) are replaced by neutral names for HiGHS and given
  back afterwards (:func:`_safe_lp_names`), so the model has the file's names.

A file that does not exist raises gurobipy's ``GurobiError`` ("Unable to open file ... for
input"); other extensions raise ``CompatNotImplementedError``. A file HiGHS cannot parse —
Gurobi-only content (indicator, general, SOS or quadratic constraints, PWL objectives), or a
malformed file — raises ``NeedsGurobiError`` naming the file and what was found in it.
"""

from __future__ import annotations

import bz2
import gzip
import math
import os
import re
import tempfile
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from . import _grb as G
from ._errors import CompatNotImplementedError, GurobiError, NeedsGurobiError
from ._expr import LinExpr, QuadExpr, Var
from ._highs_solve import _highspy, _new_highs

if TYPE_CHECKING:
    from ._env import Env
    from ._model import Model

_DECOMPRESS: dict[str, Callable[[bytes], bytes]] = {".gz": gzip.decompress, ".bz2": bz2.decompress}

#: Gurobi-only content of LP and MPS files that HiGHS's readers reject, by how it shows.
_GUROBI_ONLY: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("indicator constraints", re.compile(r"->|<-|^INDICATORS\b", re.IGNORECASE | re.MULTILINE)),
    (
        "general constraints",
        re.compile(r"^\s*(general constraints?|gencons)\b|^GENCONS\b", re.IGNORECASE | re.MULTILINE),
    ),
    ("SOS constraints", re.compile(r"^\s*SOS[12]?\s*$|^SOS\b", re.IGNORECASE | re.MULTILINE)),
    ("quadratic constraints", re.compile(r"^QCMATRIX\b|^QSECTION\b", re.MULTILINE)),
    ("piecewise-linear objectives", re.compile(r"^\s*PWLObj\b|^PWLOBJ\b", re.IGNORECASE | re.MULTILINE)),
)
#: A quadratic term ``[ ... ]`` in the constraints of an LP file (names with brackets renamed).
_LP_QUADRATIC_ROW = re.compile(
    r"^subject\s+to\b.*?(\s\[\s).*?^(bounds?|binar|generals?|end)\b", re.IGNORECASE | re.MULTILINE | re.DOTALL
)


def read_model(filename: str, env: Env | None = None) -> Model:
    """The model in ``filename`` (``.lp``/``.mps``, optionally ``.gz``/``.bz2``); see the module
    docstring for what is read and what is refused."""
    path = os.fspath(filename)
    compression = next((suffix for suffix in _DECOMPRESS if path.endswith(suffix)), "")
    base = path[: len(path) - len(compression)]
    extension = base.rsplit(".", 1)[-1].lower() if "." in os.path.basename(base) else ""
    if extension not in ("lp", "mps"):
        raise CompatNotImplementedError(
            f"gurobipy.read of '.{extension}' files", "only .lp and .mps models are read"
        )
    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except OSError:
        raise GurobiError(0, f"Unable to open file '{path}' for input") from None
    if compression:
        data = _DECOMPRESS[compression](data)
    text = data.decode("utf-8", errors="replace")
    given_back: dict[str, str] = {}
    if extension == "lp":
        safe, given_back = _safe_lp_names(text)
        data = safe.encode("utf-8")
    with tempfile.TemporaryDirectory(prefix="gurobipy-highs-read-") as folder:
        # HiGHS picks its parser by the extension and reads plain text only
        plain = os.path.join(folder, f"model.{extension}")
        with open(plain, "wb") as handle:
            handle.write(data)
        highs = _new_highs(quiet=True)
        highs.setOptionValue("output_flag", False)
        status = highs.readModel(plain)
    if status == _highspy().HighsStatus.kError:
        raise NeedsGurobiError(_unreadable(path, data.decode("utf-8", errors="replace"), extension))
    name = _mps_name(text) if extension == "mps" else ""
    return _build(highs, name, env, given_back)


_LP_SECTION = re.compile(
    r"\s*(minimi[sz]e|maximi[sz]e|min|max|subject\s+to|such\s+that|st|s\.t\.|bounds?|binar(y|ies)|"
    r"bin|generals?|gen|integers?|semi-continuous|semi|semis|end|general\s+constraints?|sos[12]?|"
    r"pwlobj|lazy\s+constraints|user\s+cuts)\s*$",
    re.IGNORECASE,
)
_LP_NUMBER = re.compile(r"[+-]?((\d+\.?\d*|\.\d+)([eE][+-]?\d+)?|inf(inity)?)", re.IGNORECASE)
_LP_OPERATORS = frozenset(
    {"+", "-", "<=", ">=", "=<", "=>", "=", "<", ">", ":", "[", "]", "/", "*", "^", "^2", "->", "<-"}
)
_LP_SIMPLE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _safe_lp_names(text: str) -> tuple[str, dict[str, str]]:
    """``text`` with every name HiGHS could misread replaced by ``_gpyN``, and the map from the
    replacements back to the names. Gurobi writes LP files with whitespace around every token
    (``x[0] + 2 y``, ``c[1]: ...``, ``[ 2 x ^2 ] / 2``), so a name is a whole token."""
    tokens = set(text.split())
    given_back: dict[str, str] = {}
    replacement: dict[str, str] = {}
    lines = text.splitlines(keepends=True)
    for number, line in enumerate(lines):
        if line.startswith("\\") or _LP_SECTION.fullmatch(line):
            continue
        pieces = re.split(r"(\s+)", line)
        for k, piece in enumerate(pieces):
            name, colon = (piece[:-1], ":") if piece.endswith(":") and len(piece) > 1 else (piece, "")
            if not name or name.isspace() or _LP_SIMPLE_NAME.fullmatch(name):
                continue
            if name in _LP_OPERATORS or _LP_NUMBER.fullmatch(name) or name.lower() == "free":
                continue
            if name not in replacement:
                fresh = f"_gpy{len(replacement)}"
                while fresh in tokens:
                    fresh = "_" + fresh
                replacement[name] = fresh
                given_back[fresh] = name
            pieces[k] = replacement[name] + colon
        lines[number] = "".join(pieces)
    return "".join(lines), given_back


def _unreadable(path: str, text: str, extension: str) -> str:
    found = [what for what, pattern in _GUROBI_ONLY if pattern.search(text)]
    if extension == "lp" and _LP_QUADRATIC_ROW.search(text):
        found.append("quadratic constraints")
    if found:
        return f"reading {path}: HiGHS cannot read its {', '.join(dict.fromkeys(found))}"
    return f"reading {path}: HiGHS could not parse it (Gurobi-only syntax, or a malformed file)"


def _mps_name(text: str) -> str:
    for line in text.splitlines():
        if line.startswith("NAME"):
            return line[4:].strip()
        if line.strip() and not line.startswith("*"):
            return ""
    return ""


def _build(highs: Any, name: str, env: Env | None, given_back: dict[str, str]) -> Model:
    """A ``Model`` holding what ``highs`` read (names in ``given_back`` renamed back)."""
    from ._model import Model

    highspy = _highspy()
    lp = highs.getLp()
    model = Model(name, env)
    hessian = highs.getModel().hessian_
    columns = _columns(lp, hessian)
    kinds = list(lp.integrality_) or [highspy.HighsVarType.kContinuous] * lp.num_col_
    variables: dict[int, Var] = {}
    for j in columns:
        low, high = float(lp.col_lower_[j]), float(lp.col_upper_[j])
        variables[j] = model.addVar(
            lb=low,
            ub=high,
            vtype=_vtype(highspy, kinds[j], low, high),
            name=given_back.get(str(lp.col_names_[j]), str(lp.col_names_[j])),
        )
    model.update()
    for j, var in variables.items():
        # the file's bounds as they are: addVar rounds an integer column's bounds (a bound 0
        # becomes -0.0, as gurobipy's addVar does), gurobipy's reader does not
        var._props["LB"] = float(lp.col_lower_[j]) + 0.0
        var._props["UB"] = float(lp.col_upper_[j]) + 0.0
    _add_rows(model, lp, variables, given_back)
    objective = LinExpr._raw(
        [float(lp.col_cost_[j]) for j in columns],
        [variables[j] for j in columns],
        float(lp.offset_) + sum(float(lp.col_cost_[j]) for j in range(lp.num_col_) if j not in variables),
    )
    sense = G.MAXIMIZE if lp.sense_ == highspy.ObjSense.kMaximize else G.MINIMIZE
    model.setObjective(_with_hessian(objective, hessian, variables), sense)
    model.update()
    return model


def _columns(lp: Any, hessian: Any) -> list[int]:
    """The columns to keep: all but Gurobi's ``Constant`` column (fixed to 1, only in the
    objective), whose cost is the objective constant."""
    matrix = lp.a_matrix_
    starts = list(matrix.start_)
    if _rowwise(lp):
        in_rows = {int(i) for i in matrix.index_}
    else:
        in_rows = {j for j in range(lp.num_col_) if starts[j] < starts[j + 1]}
    in_hessian: set[int] = set()
    if hessian.dim_:
        h_starts, h_rows, h_values = list(hessian.start_), list(hessian.index_), list(hessian.value_)
        for col in range(hessian.dim_):
            for k in range(h_starts[col], h_starts[col + 1]):
                if h_values[k] != 0.0:
                    in_hessian.update((col, int(h_rows[k])))
    return [
        j
        for j in range(lp.num_col_)
        if not (
            str(lp.col_names_[j]) == "Constant"
            and float(lp.col_lower_[j]) == float(lp.col_upper_[j]) == 1.0
            and j not in in_rows
            and j not in in_hessian
        )
    ]


def _rowwise(lp: Any) -> bool:
    return bool(lp.a_matrix_.format_ == _highspy().MatrixFormat.kRowwise)


def _vtype(highspy: Any, kind: Any, low: float, high: float) -> str:
    kinds = highspy.HighsVarType
    if kind == kinds.kInteger:
        return G.BINARY if (low, high) == (0.0, 1.0) else G.INTEGER
    if kind == kinds.kSemiContinuous:
        return G.SEMICONT
    if kind == kinds.kSemiInteger:
        return G.SEMIINT
    return G.CONTINUOUS


def _add_rows(model: Model, lp: Any, variables: dict[int, Var], given_back: dict[str, str]) -> None:
    """Each row of ``lp`` as a linear constraint (two finite sides: a range) of ``model``."""
    terms: list[tuple[list[float], list[Var]]] = [([], []) for _ in range(lp.num_row_)]
    matrix = lp.a_matrix_
    starts, index, value = list(matrix.start_), list(matrix.index_), list(matrix.value_)
    for outer in range(len(starts) - 1):
        for k in range(starts[outer], starts[outer + 1]):
            row, col = (outer, int(index[k])) if _rowwise(lp) else (int(index[k]), outer)
            terms[row][0].append(float(value[k]))
            terms[row][1].append(variables[col])
    for i, (coeffs, row_vars) in enumerate(terms):
        expr = LinExpr._raw(coeffs, row_vars, 0.0)
        low, high, name = float(lp.row_lower_[i]), float(lp.row_upper_[i]), str(lp.row_names_[i])
        name = given_back.get(name, name)
        if low == high:
            model.addLConstr(expr, G.EQUAL, low, name)
        elif math.isinf(low) and math.isinf(high):
            model.addLConstr(expr, G.LESS_EQUAL, G.INFINITY, name)
        elif math.isinf(low):
            model.addLConstr(expr, G.LESS_EQUAL, high, name)
        elif math.isinf(high):
            model.addLConstr(expr, G.GREATER_EQUAL, low, name)
        else:
            model.addRange(expr, low, high, name)


def _with_hessian(linear: LinExpr, hessian: Any, variables: dict[int, Var]) -> LinExpr | QuadExpr:
    """``linear + 1/2 x'Hx`` (HiGHS keeps the lower triangle of ``H``, column by column)."""
    if hessian.dim_ == 0 or len(hessian.value_) == 0:
        return linear
    coeffs: list[float] = []
    first: list[Var] = []
    second: list[Var] = []
    starts, rows, values = list(hessian.start_), list(hessian.index_), list(hessian.value_)
    for col in range(hessian.dim_):
        for k in range(starts[col], starts[col + 1]):
            row, entry = int(rows[k]), float(values[k])
            if entry == 0.0 or row < col:  # a square Hessian also holds the upper triangle
                continue
            coeffs.append(entry / 2.0 if row == col else entry)
            first.append(variables[col])
            second.append(variables[row])
    if not coeffs:
        return linear
    return QuadExpr._raw(linear, coeffs, first, second)
