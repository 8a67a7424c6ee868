"""Solver licence check, run by the harness in a separate process at start-up.

Prints one JSON object on the original stdout (library banners are diverted to stderr):
for gurobipy and coptpy, whether the library is installed, its version, whether a model can be
built and solved, the licence expiry date when the library reports one, and whether a model just
above the known size limit (2000 variables) is refused.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import re
from typing import Any

_SIZE_PROBE_VARIABLES = 2001
_DATE = re.compile(r"(\d{4})-(\d{2})-(\d{2})")


def _version(distribution: str) -> str | None:
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return None


def _blank_report(version: str | None) -> dict[str, Any]:
    """A licence report before any check: installed or not, nothing known yet."""
    return {
        "installed": version is not None,
        "version": version,
        "ok": False,
        "expires": None,
        "size_limited": None,
        "error": None,
    }


def _gurobipy() -> dict[str, Any]:
    version = _version("gurobipy")
    report = _blank_report(version)
    if version is None:
        return report
    try:
        import gurobipy

        env = gurobipy.Env(empty=True)
        env.setParam("OutputFlag", 0)
        env.start()
        model = gurobipy.Model(env=env)
        expiry = int(model.getAttr("LicenseExpiration"))
        if 19000101 <= expiry < 99991231:
            report["expires"] = f"{expiry // 10000:04d}-{expiry // 100 % 100:02d}-{expiry % 100:02d}"
        model.addVars(_SIZE_PROBE_VARIABLES)
        try:
            model.optimize()
            report["size_limited"] = False
        except gurobipy.GurobiError as error:
            if getattr(error, "errno", None) != 10010:
                raise
            report["size_limited"] = True
        report["ok"] = True
    except Exception as error:
        report["error"] = f"{type(error).__name__}: {error}"[:500]
        found = _DATE.search(str(error))
        if found and report["expires"] is None:
            report["expires"] = found.group(0)
    return report


def _coptpy() -> dict[str, Any]:
    version = _version("coptpy")
    report = _blank_report(version)
    if version is None:
        return report
    try:
        import coptpy

        env = coptpy.Envr()
        model = env.createModel("licence-probe")
        model.setParam("Logging", 0)
        variables = model.addVars(_SIZE_PROBE_VARIABLES, vtype=coptpy.COPT.INTEGER, ub=1.0)
        model.addConstr(variables.sum() <= 1)
        try:
            model.solve()
            report["size_limited"] = False
        except coptpy.CoptError as error:
            if "LICENSE" not in str(error).upper():
                raise
            report["size_limited"] = True
        report["ok"] = True
    except Exception as error:
        report["error"] = f"{type(error).__name__}: {error}"[:500]
    return report


def main(argv: list[str]) -> int:
    output = os.dup(1)
    os.dup2(2, 1)
    result = {"gurobipy": _gurobipy(), "coptpy": _coptpy()}
    os.write(output, (json.dumps(result) + "\n").encode())
    return 0
