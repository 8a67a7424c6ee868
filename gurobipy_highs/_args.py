"""Per-variable arguments of ``addVars`` and the object lists of ``Model.remove``, read as
gurobipy 13 reads them.

``addVars(..., lb=, ub=, obj=, vtype=, name=)`` takes for each argument:

* a dict (``tupledict`` included): the value of each variable's key; keys the dict lacks get
  the default, and keys that name no variable are ignored;
* a string (``vtype``, ``name``): one value for every variable (``name`` is then a prefix);
* any other iterable — list, tuple, ``range``, set, generator, NumPy array of any shape,
  pandas ``Series`` (by position, not by label), nested lists — flattened in order: one value
  per variable in creation order; another length is gurobipy's bare ``AssertionError``;
* anything else: one value shared by every variable.

``Model.remove`` takes one object or lists, tuples, dicts (their values) and matrix objects of
objects, nested to any depth; anything else is gurobipy's ``GurobiError``.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from ._errors import GurobiError
from ._expr import as_number


def _flatten(value: Iterable[object]) -> Iterator[object]:
    for item in value:
        if isinstance(item, (str, bytes, dict)) or not isinstance(item, Iterable):
            yield item
        else:
            yield from _flatten(item)


def per_key(value: object, keys: list[Any], default: object) -> list[object]:
    """One value per key (see the module docstring); ``default`` fills a dict's missing keys."""
    if isinstance(value, dict):
        return [value.get(key, default) for key in keys]
    if isinstance(value, (str, bytes)) or not isinstance(value, Iterable):
        return [value] * len(keys)
    values = list(_flatten(value))
    if len(values) != len(keys):
        # gurobipy 13 checks the length with a bare assert
        raise AssertionError()
    return values


def scalar_number(value: object) -> float:
    """A bound or objective coefficient of ``addVar``: a plain number, or gurobipy's
    ``TypeError`` (``must be real number, not list``)."""
    converted = as_number(value)
    if converted is None:
        raise TypeError(f"must be real number, not {type(value).__name__}")
    return converted


_NOT_REMOVABLE = "Item to be removed not a Var, Constr, SOS, QConstr, or GenConstr"


def removal_targets(items: object, removable: tuple[type, ...], matrix: type) -> list[object]:
    """The objects ``Model.remove(items)`` names, flattened from nested lists, tuples, dicts and
    matrix objects (``MVar``, ``MConstr``)."""
    if isinstance(items, removable):
        return [items]
    if isinstance(items, matrix):
        children: Iterable[object] = items.tolist()  # type: ignore[attr-defined]
    elif isinstance(items, dict):
        children = items.values()
    elif isinstance(items, (list, tuple)):
        children = items
    else:
        raise GurobiError(-1, _NOT_REMOVABLE)
    found: list[object] = []
    for child in children:
        found.extend(removal_targets(child, removable, matrix))
    return found
