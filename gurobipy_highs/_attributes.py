"""Attribute plumbing shared by variables and constraints."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ._model import Model


class AttributeAccess:
    """``obj.VarName``/``obj.getAttr("X")`` read through the owning model and
    ``obj.UB = 3``/``setAttr`` are queued until the next model update, with gurobipy's rules
    (case-insensitive names, ``AttributeError`` for an object still awaiting that update).
    Private names (leading ``_``) are plain instance attributes."""

    __slots__ = ()
    _model: Model

    def __getattr__(self, name: str) -> object:
        if name.startswith("__"):
            raise AttributeError(name)
        return self._model._get_attr_of(self, name)

    def __setattr__(self, name: str, value: object) -> None:
        if name.startswith("_"):
            object.__setattr__(self, name, value)
            return
        self._model._set_attr_of(self, name, value)

    def getAttr(self, attrname: str) -> object:
        """Value of attribute ``attrname`` (same as reading ``obj.<attrname>``)."""
        return self._model._get_attr_of(self, attrname)

    def setAttr(self, attrname: str, newvalue: object) -> None:
        """Queue ``attrname = newvalue``; applied at the next model update."""
        self._model._set_attr_of(self, attrname, newvalue)
