"""Test-only stand-in for the licence-free gurobipy_highs layer (never shipped).

The sandbox loads this folder as ``gurobipy`` for ``highs`` jobs, as it does the real layer's.
Just enough of the gurobipy API for the sandbox tests to see *which* gurobipy a program got and
that the hooks capture it: every model "solves" to its objective constant, 42.
"""

from __future__ import annotations

from typing import Any

STAND_IN = True
GUROBIPY_HIGHS = "stand-in"
"""The layer's version marker: the sandbox records ``"gurobipy_highs stand-in"``."""


class GRB:
    OPTIMAL = 2
    MINIMIZE = 1
    MAXIMIZE = -1
    INFINITY = 1e100


class GurobiError(Exception):
    def __init__(self, errno: int, message: str) -> None:
        super().__init__(message)
        self.errno = errno


class _Objective:
    def size(self) -> int:
        return 0


class Model:
    def __init__(self, name: str = "") -> None:
        self.ModelSense = 1
        self.ObjCon = 42.0
        self.NumVars = 0
        self.NumConstrs = 0
        self.NumQConstrs = 0
        self.NumGenConstrs = 0
        self.NumSOS = 0
        self.Status = 1
        self.Params = type("Params", (), {"Threads": 0})()

    def addVars(self, count: int, **_: Any) -> dict[int, None]:
        return dict.fromkeys(range(count))

    def getVars(self) -> list[Any]:
        return []

    def getConstrs(self) -> list[Any]:
        return []

    def getObjective(self) -> _Objective:
        return _Objective()

    def optimize(self) -> None:
        self.Status = GRB.OPTIMAL
        self.ObjVal = self.ObjCon

    def write(self, filename: str) -> None:
        with open(filename, "w") as handle:
            handle.write("\\ stand-in\nMinimize\n obj: 0\nEnd\n")
