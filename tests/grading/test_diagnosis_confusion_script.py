"""scripts/diagnosis_confusion.py: the held-out corpus shares no program with the tuning rows."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

from trex_eval.benchmarks import load_benchmark
from trex_eval.protocols.plan import plan_for

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "diagnosis_confusion.py"


@pytest.fixture(scope="module")
def confusion() -> ModuleType:
    spec = importlib.util.spec_from_file_location("diagnosis_confusion", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses resolve annotations through sys.modules
    spec.loader.exec_module(module)
    return module


def test_held_out_rows_share_no_program_with_the_tuning_rows(confusion: ModuleType, data_dir: Path) -> None:
    problems = load_benchmark("b4o-feasible", data_dir=data_dir).problems
    tuning = confusion.corpus_rows(problems, 40, held_out=False)
    held_out = confusion.corpus_rows(problems, 40, held_out=True)
    assert len(tuning) == len(held_out) == 40
    assert [p.id for p in tuning] == [p.id for p in problems if p.reference_code is not None][:40]
    assert not {p.id for p in tuning} & {p.id for p in held_out}
    assert not {p.reference_code for p in tuning} & {p.reference_code for p in held_out}
    # B4O's twins (two wordings, one program) stay together: the held-out rows are pairs as well.
    assert len({p.reference_code for p in held_out}) < len(held_out)
    # A twin of a tuning row is left out even where it comes after the tuning rows (rows 38
    # and 39 are one instance's two wordings).
    assert tuning[38].reference_code == tuning[39].reference_code
    shifted = confusion.corpus_rows(problems, 40, held_out=True, tuning_rows=39)
    assert tuning[39].id not in {p.id for p in shifted}


def test_free_subset_frees_a_seeded_subset_and_reads_the_objective_unchecked(
    confusion: ModuleType, data_dir: Path
) -> None:
    """Issue 45: the freed-variable mutant frees a subset of the variable families, the same one
    on every run, reads ``ObjVal`` after the last solve, and is made only from a program that
    reads no solve status (so that an unbounded solve raises)."""
    bench = load_benchmark("b4o-feasible", data_dir=data_dir)
    plan = plan_for(bench)
    row = next(p for p in bench.problems if p.reference_code and p.reference_code.count(".addVar") >= 2)
    code = confusion._code_of(plan, row)
    mutated = confusion._free_subset(code, row.id)
    assert mutated is not None and mutated == confusion._free_subset(code, row.id)
    freed = mutated.count("lb=-GRB.INFINITY")
    assert 1 <= freed <= code.count(".addVar")
    assert mutated.rstrip().endswith("print('objective', model.ObjVal)")
    assert [m.mutation for m in confusion.mutants(row, code)].count("free_subset") == 1
    checked = code + "\nif model.Status != GRB.OPTIMAL:\n    raise SystemExit(1)\n"
    assert confusion._free_subset(checked, row.id) is None
