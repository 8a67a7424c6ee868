"""Golden facts G9 and G10 (reference-harness.md §9): the ORGEval pipeline run on the benchmark's
own reference programs (extraction of a single fenced block, §3.3 rewriting, execution, the
trex-compat check)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from trex_eval.lp import parse_lp
from trex_eval.protocols.trex_compat.rewrite import orgeval_rewrite
from trex_eval.protocols.trex_compat.structure import check_trex_compat, compat_info
from trex_eval.records import Grade

pytest.importorskip("gurobipy")


def run_program_for_lp(
    code: str, *, files: dict[str, str], lp_path: str, timeout_s: float = 120.0
) -> str | None:
    """Run ``code`` as a script with this interpreter in a fresh temporary directory that holds
    ``files`` (relative path -> text) and return the LP text written at ``lp_path`` (relative),
    or ``None`` if there is none. As in the reference harness, the LP counts even if the script
    failed afterwards. Stand-in for ``trex_eval.sandbox.SandboxPool`` until it lands."""
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        for name, text in files.items():
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            (root / name).write_text(text)
        (root / lp_path).parent.mkdir(parents=True, exist_ok=True)
        (root / "program.py").write_text(code)
        try:
            subprocess.run(
                [sys.executable, "program.py"], cwd=root, capture_output=True, timeout=timeout_s, check=False
            )
        except subprocess.TimeoutExpired:
            return None
        written = root / lp_path
        return written.read_text() if written.exists() else None


def _rows(data_dir: Path) -> list[dict[str, str]]:
    with (data_dir / "data" / "bench4opt" / "test.jsonl").open() as handle:
        return [json.loads(line) for line in handle]


def _paths(row: dict[str, str]) -> tuple[str, str]:
    """The data and LP paths the reference runner uses (relative to its working directory)."""
    k = row["id"].split("_")[-1]
    return f"data/bench4opt/{row['data_path']}", f"temp_lp/gold_bench4opt_lp/{k}_model_data_{k}_problem{k}.lp"


def _completion_code(row: dict[str, str]) -> str:
    # The ORGEval extractor returns the stripped body of the only fenced block.
    return row["reference_code"].strip()


def _grade_programs(
    data_dir: Path, jobs: list[tuple[dict[str, str], str]], *, insert_lb: bool
) -> list[Grade | None]:
    """Grade each (row, code) job; programs identical up to their paths, on identical data,
    run once."""
    keys, unique = [], {}
    for row, code in jobs:
        data = (data_dir / "data" / "bench4opt" / row["data_path"]).read_text()
        neutral = orgeval_rewrite(code, data_path="<DATA>", lp_path="<LP>", insert_lb=insert_lb)
        key = (neutral, data)
        keys.append(key)
        if key not in unique:
            data_path, lp_path = _paths(row)
            program = orgeval_rewrite(code, data_path=data_path, lp_path=lp_path, insert_lb=insert_lb)
            unique[key] = (program, {data_path: data}, lp_path)

    def run(job: tuple[str, dict[str, str], str]) -> str | None:
        program, files, lp_path = job
        return run_program_for_lp(program, files=files, lp_path=lp_path)

    with ThreadPoolExecutor(max_workers=max(2, 2 * (os.cpu_count() or 1))) as pool:
        written = dict(zip(unique, pool.map(run, unique.values()), strict=True))
    grades: list[Grade | None] = []
    for (row, _), key in zip(jobs, keys, strict=True):
        text = written[key]
        reference = parse_lp((data_dir / "data" / "bench4opt" / row["reference_lp_path"]).read_text())
        grades.append(None if text is None else check_trex_compat(reference, parse_lp(text)))
    return grades


def _failures(grades: list[Grade | None]) -> dict[str, set[int]]:
    failures: dict[str, set[int]] = {}
    for k, grade in enumerate(grades):
        assert grade is not None, f"BENCH4OPT_{k} wrote no LP file"
        if not grade.passed:
            failed = [name for name, passed in compat_info(grade).items() if passed is False]
            failures.setdefault(",".join(failed), set()).add(k)
    return failures


@pytest.mark.slow
def test_g9_gold_code_run(data_dir: Path) -> None:
    rows = _rows(data_dir)
    assert len(rows) == 394
    jobs = [(row, _completion_code(row)) for row in rows]
    with_rewrite = _failures(_grade_programs(data_dir, jobs, insert_lb=True))
    without_rewrite = _failures(_grade_programs(data_dir, jobs, insert_lb=False))

    failed_with = set().union(*with_rewrite.values())
    assert 394 - len(failed_with) == 234
    assert len(with_rewrite["wl_check"]) == 152
    assert without_rewrite == {
        "var_num_check": {32, 206, 380, 381},
        "wl_check": {144, 145},
        "sufficient_check": {286, 287, 360, 361},
    }
    failed_without = set().union(*without_rewrite.values())
    assert failed_without - failed_with == {144, 145}  # the only extra passes with the rewrite


def test_g10_bench4opt_2_variants(data_dir: Path) -> None:
    row = _rows(data_dir)[2]
    code = _completion_code(row)
    call = 'name="flow")'
    assert call in code and "GRB.MINIMIZE" in code
    variants = {
        "gold": code,
        "model_renamed_to_m": re.sub(r"\bmodel\b", "m", code),
        "explicit_lb": code.replace(call, 'name="flow", lb=0)'),
        "maximise_with_explicit_lb": code.replace(call, 'name="flow", lb=0)').replace(
            "GRB.MINIMIZE", "GRB.MAXIMIZE"
        ),
    }
    grades = _grade_programs(data_dir, [(row, variant) for variant in variants.values()], insert_lb=True)
    verdicts = {name: grade.passed for name, grade in zip(variants, grades, strict=True) if grade is not None}
    assert verdicts == {
        "gold": False,
        "model_renamed_to_m": True,
        "explicit_lb": True,
        "maximise_with_explicit_lb": True,
    }
    assert grades[0] is not None and compat_info(grades[0]) == {
        "var_num_check": True,
        "cons_num_check": True,
        "wl_check": False,
    }
