"""Style rule 10 holds in every checkout: no module of the packages is over the size limit."""

from __future__ import annotations

import importlib
import subprocess
import sys
from pathlib import Path
from types import ModuleType

REPO = Path(__file__).resolve().parents[1]


def _checker() -> ModuleType:
    """``scripts/check_module_sizes.py`` imported as a module."""
    sys.path.insert(0, str(REPO / "scripts"))
    try:
        return importlib.import_module("check_module_sizes")
    finally:
        sys.path.remove(str(REPO / "scripts"))


def test_no_module_is_over_the_limit() -> None:
    done = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "check_module_sizes.py")],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout


def test_the_check_names_a_module_over_the_limit(tmp_path: Path) -> None:
    check_module_sizes = _checker()
    (tmp_path / "trex_eval" / "report").mkdir(parents=True)
    (tmp_path / "gurobipy_highs").mkdir()
    (tmp_path / "trex_eval" / "report" / "long.py").write_text("x = 1\n" * (check_module_sizes.LIMIT + 1))
    (tmp_path / "trex_eval" / "short.py").write_text("x = 1\n" * check_module_sizes.LIMIT)
    assert check_module_sizes.oversized(tmp_path) == [
        ("trex_eval/report/long.py", check_module_sizes.LIMIT + 1)
    ]


def test_the_check_names_each_function_over_the_limit_by_its_qualified_name(tmp_path: Path) -> None:
    check_module_sizes = _checker()
    (tmp_path / "trex_eval").mkdir()
    (tmp_path / "gurobipy_highs").mkdir()
    limit = check_module_sizes.FUNCTION_LIMIT

    def function(name: str, lines: int, indent: str = "") -> str:
        return f"{indent}def {name}(self) -> None:\n" + f"{indent}    x = 1\n" * (lines - 1)

    (tmp_path / "trex_eval" / "long.py").write_text(
        function("fits", limit)
        + function("too_long", limit + 1)
        + "class Helper:\n"
        + function("fits", limit, "    ")
        + function("method", limit + 2, "    ")
    )
    assert sorted(check_module_sizes.long_functions(tmp_path)) == [
        ("trex_eval/long.py:Helper.method", limit + 2),
        ("trex_eval/long.py:too_long", limit + 1),
    ]
