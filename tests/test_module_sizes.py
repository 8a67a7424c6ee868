"""Style rule 10 holds in every checkout: no module of the packages is over the size limit."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def test_no_module_is_over_the_limit() -> None:
    done = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "check_module_sizes.py")],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout


def test_the_check_names_a_module_over_the_limit(tmp_path: Path) -> None:
    sys.path.insert(0, str(REPO / "scripts"))
    try:
        import check_module_sizes
    finally:
        sys.path.remove(str(REPO / "scripts"))
    (tmp_path / "trex_eval" / "report").mkdir(parents=True)
    (tmp_path / "gurobipy_highs").mkdir()
    (tmp_path / "trex_eval" / "report" / "long.py").write_text("x = 1\n" * (check_module_sizes.LIMIT + 1))
    (tmp_path / "trex_eval" / "short.py").write_text("x = 1\n" * check_module_sizes.LIMIT)
    assert check_module_sizes.oversized(tmp_path) == [
        ("trex_eval/report/long.py", check_module_sizes.LIMIT + 1)
    ]
