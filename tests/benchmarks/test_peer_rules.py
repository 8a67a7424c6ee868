"""The peers' grading rules `optmath`, `mamo` and `orthought` in the registry: each agrees with its
peer's own comparison (transcribed below from the cited file) on the real labels of the
benchmarks that peer grades, and its description cites that file."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from trex_eval.benchmarks import load_benchmark
from trex_eval.grading import get_rule, grade_objective
from trex_eval.grading.registry import family
from trex_eval.records import ExecStatus, Execution, ObjectiveReference, SolveRecord, SolveStatus, Verdict


def _run(objective: float) -> Execution:
    """A finished program whose last solve is optimal with ``objective``, re-solved alike."""
    solve = SolveRecord(
        library="gurobipy",
        status=SolveStatus.OPTIMAL,
        raw_status="OPTIMAL",
        objective=objective,
        verification="match",
        verified_objective=objective,
    )
    return Execution.model_validate({"status": ExecStatus.OK, "solves": [solve]})


def _labels(name: str, data_dir: Path) -> list[ObjectiveReference]:
    """The optimal references of a benchmark's real file (sentinels left out)."""
    refs = [p.reference for p in load_benchmark(name, data_dir=data_dir).problems]
    found = [r for r in refs if isinstance(r, ObjectiveReference) and r.value is not None]
    assert len(found) > 50
    return found


def optmath_published(gt_answer: str, pred: float) -> bool:
    """optsuite/OptMATH eval/executor.py, ResultEvaluator.evaluate_result (tolerance 0.05)."""
    gt_round, pred_round = round(float(gt_answer)), round(pred)
    if gt_round == 0:
        return abs(pred_round) <= 0.05
    return abs((pred_round - gt_round) / gt_round) <= 0.05


def mamo_published(standard_answer: str, output: float) -> bool:
    """FreedomIntelligence/Mamo 3.run_code_comp_optimization.py, compare_output_with_standard."""

    def comp(out: float, std: str) -> bool:
        dif = abs(out - float(std))
        rate = dif * 1e-4 if float(std) == 0 else dif / float(std)
        return abs(rate) <= 1e-4

    digit = max(2, len(standard_answer.split(".")[1])) if "." in standard_answer else 2
    return abs(output * 10**digit - float(standard_answer) * 10**digit) < 1 or comp(output, standard_answer)


def orthought_published(result: float, truth: float) -> bool:
    """ZJU-TSELab/ORThought analyze.py, compare_results (numbers)."""
    return abs(result - truth) < 0.01


@pytest.mark.parametrize(
    ("rule", "repository", "path"),
    [
        ("optmath", "optsuite/OptMATH@b797149", "eval/executor.py"),
        (
            "mamo",
            "FreedomIntelligence/Mamo@5da0854",
            "scripts/scripts_optimization/mamo_script_optimization/3.run_code_comp_optimization.py",
        ),
        ("orthought", "ZJU-TSELab/ORThought@ce5dc6b", "analyze.py"),
    ],
)
def test_each_peer_rule_cites_its_source_file(rule: str, repository: str, path: str) -> None:
    built = get_rule(rule)
    assert built.spec == f"{rule}@3" and get_rule(built.spec) == built
    assert f"(source: {repository} {path}" in built.description
    assert repository in family(rule).summary and path in family(rule).summary


def test_optmath_says_its_conversion_fallback_is_opt_in() -> None:
    """Off unless asked (``optmath:fallback=true``, tests/benchmarks/test_optmath_fallback.py)."""
    assert "fallback=true adds its conversion fallback" in family("optmath").summary
    assert "conversion fallback" not in get_rule("optmath").description


def test_optmath_agrees_with_its_evaluator_on_real_labels(data_dir: Path) -> None:
    for reference in _labels("optmath-bench", data_dir) + _labels("nl4opt-245@optmath", data_dir):
        value = reference.value or 0.0
        for offset in (0.0, 0.4, 0.6, 2.0, 0.03 * value, 0.045 * value, 0.055 * value, -0.07 * value):
            predicted = value + offset
            expected = Verdict.CORRECT if optmath_published(reference.label, predicted) else Verdict.WRONG
            grade = grade_objective(_run(predicted), reference, rule="optmath")
            assert grade.verdict is expected, (reference.label, predicted, grade.reason)


def test_mamo_agrees_with_its_script_on_real_labels(data_dir: Path) -> None:
    references = _labels("mamo-easylp", data_dir) + _labels("mamo-complexlp", data_dir)
    assert any("." in r.label for r in references) and any("." not in r.label for r in references)
    for reference in references:
        value = reference.value or 0.0
        decimals = max(2, len(reference.label.split(".")[1]) if "." in reference.label else 0)
        # Away from both boundaries: a fraction or a multiple of 10^-d, and of the 1e-4 relative bound.
        unit = 10.0**-decimals
        for offset in (0.0, 0.4 * unit, -0.7 * unit, 3 * unit, 0.5e-4 * value, 2e-4 * value, 1.5):
            predicted = value + offset
            expected = Verdict.CORRECT if mamo_published(reference.label, predicted) else Verdict.WRONG
            grade = grade_objective(_run(predicted), reference, rule="mamo")
            assert grade.verdict is expected, (reference.label, predicted, grade.reason)


def test_mamo_reads_the_decimals_the_label_is_written_with(data_dir: Path) -> None:
    # mamo-complexlp row 196 is labelled "4.596": three decimals, so 0.002 off is a miss
    # (2·10^-3·10^3 = 2 ≥ 1 and 0.002 / 4.596 > 1e-4), 0.0004 off a hit.
    reference = load_benchmark("mamo-complexlp", data_dir=data_dir).problems[196].reference
    assert isinstance(reference, ObjectiveReference) and reference.label == "4.596"
    assert grade_objective(_run(4.5964), reference, rule="mamo").verdict is Verdict.CORRECT
    assert grade_objective(_run(4.598), reference, rule="mamo").verdict is Verdict.WRONG
    # The same 0.002 against a label written with 2 decimals or none is a hit: d = 2.
    assert mamo_published("4.60", 4.602) and mamo_published("168", 168.002)
    relabelled = ObjectiveReference(value=168.0, label="168")
    assert grade_objective(_run(168.002), relabelled, rule="mamo").verdict is Verdict.CORRECT


def test_orthought_agrees_with_its_analyzer_on_real_labels(data_dir: Path) -> None:
    references = _labels("logior", data_dir) + _labels("nlp4lp@orthought", data_dir)
    for reference, offset in itertools.product(references, (0.0, 0.004, -0.0099, 0.0101, 0.5, -3.0)):
        value = reference.value or 0.0
        predicted = value + offset
        expected = Verdict.CORRECT if orthought_published(predicted, value) else Verdict.WRONG
        grade = grade_objective(_run(predicted), reference, rule="orthought")
        assert grade.verdict is expected, (reference.label, predicted, grade.reason)
