"""The matrix API: ``MVar``, ``MLinExpr``, ``MQuadExpr``, ``MConstr`` and ``Model.addMVar``.

Each matrix object is an n-dimensional array (NumPy ``object`` array, any shape, ``()``
included) of the layer's scalar objects — ``Var``, ``LinExpr``, ``QuadExpr``, ``Constr`` — and
every operation is the element-wise or matrix-product combination of theirs, so a matrix model
is exactly the scalar model it spells out (one variable per element, one constraint per row):

* ``+``, ``-``, ``*``, unary ``-`` element-wise with NumPy broadcasting (numbers, arrays, other
  matrix objects; ``MVar * MVar`` is quadratic);
* ``@`` with NumPy arrays and SciPy sparse matrices on either side (sparse rows are read by
  their nonzeros), and between matrix expressions (``x @ Q @ x`` is an ``MQuadExpr``);
* ``<=``, ``>=``, ``==`` give a matrix of constraints that ``Model.addConstr`` adds element by
  element (names ``name[i,j]``) as an ``MConstr``;
* indexing and slicing as NumPy (a single element is a 0-d object, as in gurobipy), ``sum``,
  ``T``/``transpose``, ``reshape``, ``tolist``, ``item``, attributes as arrays (``x.X``,
  ``c.Pi``, ``x.UB = ...``).

NumPy is imported on first use (the layer imports only the standard library at import time);
a NumPy array multiplied by a single ``Var`` or ``LinExpr`` is not emulated (it raises
``CompatNotImplementedError``).
"""

from __future__ import annotations

import itertools
from typing import TYPE_CHECKING, Any

from ._errors import GurobiError
from ._expr import LinExpr, QuadExpr, TempConstr, Var

if TYPE_CHECKING:
    from ._model import Model


def _np() -> Any:
    import numpy

    return numpy


def _objects(value: object) -> Any:
    """``value`` as a NumPy array: matrix objects give their elements, the rest as NumPy reads it."""
    np = _np()
    if isinstance(value, MatrixBase):
        return value._a
    if isinstance(value, (Var, LinExpr, QuadExpr)):
        return np.asarray(value, dtype=object)
    return np.asarray(value)


def _wrap(result: object) -> MatrixBase:
    """The matrix object for an array of scalar results (element types decide the class)."""
    np = _np()
    array = result if isinstance(result, np.ndarray) else np.asarray(result, dtype=object)
    array = array.astype(object, copy=False)
    items = array.ravel()
    if any(isinstance(item, QuadExpr) for item in items):
        return MQuadExpr(array)
    if array.size and all(isinstance(item, Var) for item in items):
        return MVar(array)
    return MLinExpr(array)


def _is_sparse(value: object) -> bool:
    return hasattr(value, "tocsr") and hasattr(value, "nnz")


def _row_product(coeffs: list[tuple[int, float]], column: Any) -> LinExpr | QuadExpr:
    expr: LinExpr | QuadExpr = LinExpr()
    for j, coeff in coeffs:
        item = column[j]
        if isinstance(item, Var):
            if isinstance(expr, LinExpr):
                expr._coeffs.append(coeff)
                expr._vars.append(item)
            else:
                expr._linear._coeffs.append(coeff)
                expr._linear._vars.append(item)
        else:
            expr = expr + item * coeff
    return expr


def _matmul(left: object, right: object) -> MatrixBase:
    """``left @ right`` where at least one side is a matrix object."""
    np = _np()
    if _is_sparse(left) and isinstance(right, MatrixBase) and right._a.ndim == 1:
        csr: Any = left.tocsr()  # type: ignore[attr-defined]
        rows = [
            _row_product(
                list(
                    zip(
                        csr.indices[csr.indptr[i] : csr.indptr[i + 1]],
                        csr.data[csr.indptr[i] : csr.indptr[i + 1]],
                        strict=True,
                    )
                ),
                right._a,
            )
            for i in range(csr.shape[0])
        ]
        out = np.empty(len(rows), dtype=object)
        out[:] = rows
        return _wrap(out)
    if _is_sparse(left):
        left = left.toarray()  # type: ignore[attr-defined]
    if _is_sparse(right):
        right = right.toarray()  # type: ignore[attr-defined]
    a, b = _objects(left), _objects(right)
    if a.dtype != object and a.ndim in (1, 2) and b.ndim == 1:
        dense = a.reshape(1, -1) if a.ndim == 1 else a
        rows = [_row_product([(j, float(v)) for j, v in enumerate(row) if v != 0], b) for row in dense]
        out = np.empty(len(rows), dtype=object)
        out[:] = rows
        return _wrap(out.reshape(()) if a.ndim == 1 else out)
    if b.dtype != object and b.ndim == 2 and a.ndim == 1:
        return _matmul(b.T, MLinExpr(a) if not isinstance(left, MatrixBase) else left)
    return _wrap(np.matmul(a.astype(object), b.astype(object)))


class MatrixBase:
    """What the matrix classes share: the element array ``_a`` and NumPy-like behaviour."""

    __slots__ = ("_a",)
    __array_ufunc__ = None  # NumPy operands defer to the reflected operators below
    _a: Any

    def __init__(self, array: Any) -> None:
        object.__setattr__(self, "_a", array)

    # shape ----------------------------------------------------------------------------
    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self._a.shape)

    @property
    def ndim(self) -> int:
        return int(self._a.ndim)

    @property
    def size(self) -> int:
        return int(self._a.size)

    def __len__(self) -> int:
        return len(self._a)

    def __array__(self, dtype: object = None, copy: object = None) -> Any:
        # a 0-d object array holding this object: SciPy's sparse ``@`` then defers to
        # ``__rmatmul__`` instead of reading the elements as numbers
        holder = _np().empty((), dtype=object)
        holder[()] = self
        return holder

    def __getitem__(self, key: object) -> MatrixBase:
        return type(self)(_np().asarray(self._a[key], dtype=object))

    def __iter__(self) -> Any:
        return (self[k] for k in range(len(self)))

    def tolist(self) -> Any:
        return self._a.tolist()

    def item(self) -> Any:
        return self._a.item()

    @property
    def T(self) -> MatrixBase:
        return type(self)(self._a.T)

    def transpose(self) -> MatrixBase:
        return self.T

    def reshape(self, *shape: Any, order: str = "C") -> MatrixBase:
        return type(self)(self._a.reshape(*shape, order=order))

    def flatten(self) -> MatrixBase:
        return type(self)(self._a.flatten())

    def sum(self, axis: int | None = None) -> MatrixBase:
        """Sum over ``axis`` (all elements by default) as a matrix expression."""
        np = _np()
        if axis is None:
            total: LinExpr | QuadExpr = LinExpr()
            for item in self._a.ravel():
                total = total + item
            return _wrap(np.asarray(total, dtype=object))
        return _wrap(np.sum(self._a, axis=axis))

    # arithmetic -------------------------------------------------------------------------
    def __add__(self, other: object) -> MatrixBase:
        return _wrap(_np().add(self._a, _objects(other)))

    def __radd__(self, other: object) -> MatrixBase:
        return _wrap(_np().add(_objects(other), self._a))

    def __iadd__(self, other: object) -> MatrixBase:
        return self.__add__(other)

    def __isub__(self, other: object) -> MatrixBase:
        return self.__sub__(other)

    def __sub__(self, other: object) -> MatrixBase:
        return _wrap(_np().subtract(self._a, _objects(other)))

    def __rsub__(self, other: object) -> MatrixBase:
        return _wrap(_np().subtract(_objects(other), self._a))

    def __mul__(self, other: object) -> MatrixBase:
        return _wrap(_np().multiply(self._a, _objects(other)))

    def __rmul__(self, other: object) -> MatrixBase:
        return _wrap(_np().multiply(_objects(other), self._a))

    def __truediv__(self, other: object) -> MatrixBase:
        return _wrap(_np().multiply(self._a, 1.0 / _np().asarray(_objects(other), dtype=float)))

    def __neg__(self) -> MatrixBase:
        return _wrap(_np().negative(self._a))

    def __matmul__(self, other: object) -> MatrixBase:
        return _matmul(self, other)

    def __rmatmul__(self, other: object) -> MatrixBase:
        return _matmul(other, self)

    # comparisons ------------------------------------------------------------------------
    def _compare(self, other: object, sense: str) -> MTempConstr:
        np = _np()

        def one(lhs: Any, rhs: Any) -> TempConstr:
            if sense == "<":
                return lhs <= rhs  # type: ignore[no-any-return]
            if sense == ">":
                return lhs >= rhs  # type: ignore[no-any-return]
            return lhs == rhs  # type: ignore[no-any-return]

        result = np.frompyfunc(one, 2, 1)(self._a, _objects(other))
        return MTempConstr(np.asarray(result, dtype=object))

    def __le__(self, other: object) -> MTempConstr:
        return self._compare(other, "<")

    def __ge__(self, other: object) -> MTempConstr:
        return self._compare(other, ">")

    def __eq__(self, other: object) -> MTempConstr:  # type: ignore[override]
        return self._compare(other, "=")

    __hash__ = None  # type: ignore[assignment]

    # attributes -------------------------------------------------------------------------
    def getAttr(self, attrname: str) -> Any:
        """The attribute of every element, as an array of the same shape."""
        np = _np()
        values = [item.getAttr(attrname) for item in self._a.ravel()]
        kind = object if any(isinstance(v, str) for v in values) else float
        return np.array(values, dtype=kind).reshape(self._a.shape)

    def setAttr(self, attrname: str, newvalue: object) -> None:
        """Set the attribute of every element (a scalar, or an array broadcast to the shape)."""
        np = _np()
        values = np.broadcast_to(np.asarray(newvalue, dtype=object), self._a.shape)
        for item, value in zip(self._a.ravel(), values.ravel(), strict=True):
            item.setAttr(attrname, value)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        return self.getAttr(name)

    def __setattr__(self, name: str, value: object) -> None:
        if name.startswith("_"):
            object.__setattr__(self, name, value)
        else:
            self.setAttr(name, value)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.shape}>\n{self._a!r}"


class MVar(MatrixBase):
    """An array of variables (``Model.addMVar``, ``MVar.fromlist``, ``MVar.fromvar``)."""

    __slots__ = ()

    @staticmethod
    def fromlist(varlist: Any) -> MVar:
        return MVar(_np().array(varlist, dtype=object))

    @staticmethod
    def fromvar(var: Var) -> MVar:
        return MVar(_np().asarray(var, dtype=object))

    def __getitem__(self, key: object) -> MVar:
        return MVar(_np().asarray(self._a[key], dtype=object))


class MLinExpr(MatrixBase):
    """An array of linear expressions."""

    __slots__ = ()

    def getValue(self) -> Any:
        np = _np()
        return np.array([item.getValue() for item in self._a.ravel()], dtype=float).reshape(self._a.shape)


class MQuadExpr(MLinExpr):
    """An array of quadratic expressions."""

    __slots__ = ()


class MTempConstr:
    """An array of unplaced constraints (``A @ x <= b``); ``Model.addConstr`` adds them."""

    __slots__ = ("_a",)

    def __init__(self, array: Any) -> None:
        self._a = array

    def __bool__(self) -> bool:
        raise GurobiError(0, "Constraint has no bool value")


class MConstr(MatrixBase):
    """An array of constraints added from an :class:`MTempConstr`."""

    __slots__ = ()


def add_matrix_constraints(model: Model, constrs: MTempConstr, name: str) -> MConstr:
    """Add each element constraint (named ``name[i,j]`` when ``name`` is given)."""
    np = _np()
    array = constrs._a
    out = np.empty(array.shape, dtype=object)
    for index in itertools.product(*(range(n) for n in array.shape)):
        label = f"{name}[{','.join(str(i) for i in index)}]" if name and array.shape else name
        out[index] = model.addConstr(array[index], label)
    return MConstr(out)


def add_mvar(
    model: Model, shape: object, lb: object, ub: object, obj: object, vtype: object, name: object
) -> MVar:
    """``Model.addMVar``: one variable per element of ``shape``, arguments broadcast to it."""
    np = _np()
    dims = (shape,) if isinstance(shape, int) else tuple(shape)  # type: ignore[arg-type]
    args = [np.broadcast_to(np.asarray(value, dtype=object), dims) for value in (lb, ub, obj, vtype)]
    names = (
        None
        if isinstance(name, str) or name is None
        else np.broadcast_to(np.asarray(name, dtype=object), dims)
    )
    out = np.empty(dims, dtype=object)
    for index in itertools.product(*(range(n) for n in dims)):
        if names is not None:
            label = str(names[index])
        elif name and dims:
            label = f"{name}[{','.join(str(i) for i in index)}]"
        else:
            label = str(name or "")
        low, high, cost, kind = (arg[index] for arg in args)
        out[index] = model.addVar(low, high, cost, kind, label)
    return MVar(out)


def single_expression(value: object) -> object:
    """A one-element matrix expression as its element (what ``setObjective`` takes)."""
    if isinstance(value, MatrixBase):
        if value.size != 1:
            raise GurobiError(10003, "Objective must be a scalar expression")
        item = value._a.item()
        return item._lin() if isinstance(item, Var) else item
    return value
