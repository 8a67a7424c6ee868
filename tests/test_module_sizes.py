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


def test_the_check_names_a_function_over_the_limit_and_a_listed_one_that_grew(tmp_path: Path) -> None:
    check_module_sizes = _checker()
    # Any listed function will do: the list shrinks as they are split.
    where, listed = next(iter(check_module_sizes.LONG_FUNCTIONS.items()))
    module, name = where.split(":")
    (tmp_path / module).parent.mkdir(parents=True)
    (tmp_path / "gurobipy_highs").mkdir()
    limit = check_module_sizes.FUNCTION_LIMIT

    def function(name: str, lines: int) -> str:
        return f"def {name}() -> None:\n" + "    x = 1\n" * (lines - 1)

    (tmp_path / "trex_eval" / "long.py").write_text(function("fits", limit) + function("too_long", limit + 1))
    (tmp_path / module).write_text(function(name, listed + 1))
    assert sorted(check_module_sizes.long_functions(tmp_path)) == [
        (where, listed + 1, listed),
        ("trex_eval/long.py:too_long", limit + 1, limit),
    ]


def test_a_listed_function_that_shrank_must_lower_its_entry_and_methods_have_no_borrowed_ceiling(
    tmp_path: Path,
) -> None:
    check_module_sizes = _checker()
    where, listed = next(iter(check_module_sizes.LONG_FUNCTIONS.items()))
    module, name = where.split(":")
    (tmp_path / module).parent.mkdir(parents=True)
    (tmp_path / "gurobipy_highs").mkdir()
    body = "    x = 1\n" * (listed - 2)
    # The listed function shrank by one line, and a method of the same name is as long as the
    # listed ceiling: both are reported (the method's name is Helper.<name>, not listed).
    (tmp_path / module).write_text(
        f"def {name}() -> None:\n{body}\n\nclass Helper:\n    def {name}(self) -> None:\n"
        + "        x = 1\n" * (listed - 1)
    )
    assert sorted(check_module_sizes.long_functions(tmp_path)) == [
        (f"{module}:Helper.{name}", listed, check_module_sizes.FUNCTION_LIMIT),
        (where, listed - 1, listed),
    ]
