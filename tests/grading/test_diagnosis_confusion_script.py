"""scripts/diagnosis_confusion.py: the held-out corpus shares no program with the tuning rows."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

from trex_eval.benchmarks import load_benchmark

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
