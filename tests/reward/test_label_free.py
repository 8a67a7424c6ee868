"""The label never leaves the reward server unless asked: the real ``trex-eval serve`` (diagnosing,
logging to JSONL and to epoch run directories) grades right and wrong rollouts of objective rows
(nl4opt), structure rows (b4o-orgeval, whose label is a whole reference LP) and inline problems,
and every text a reward carries out -- the records of ``/v1/score``, the ``/get_reward`` answer,
the ``--log`` lines and the samples of ``--out`` -- is searched for every label and every
reference coefficient, as numbers (tokens), in the fields that could carry them."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from trex_eval.backends.reference import reference_completion_text
from trex_eval.benchmarks import load_benchmark
from trex_eval.lp import parse_lp
from trex_eval.records import ObjectiveReference, Problem, StructureReference
from trex_eval.reward import ProblemKey, RewardRequest, RewardScorer, ScorerSettings
from trex_eval.reward.labels import LABEL_FREE_EVIDENCE

OBJECTIVE, STRUCTURE = "nl4opt", "b4o-orgeval"
INLINE_LABEL = 531.15
NUMBER = re.compile(r"(?<![\w.])[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?(?![\w.])")
RULE_SPEC = re.compile(r"[\w-]+@\d+(?::[\w=.,-]+)?")
"""``name@version[:params]`` (rules, policies): their digits are no label."""


def _pulp(value: float, *, sense: str = "LpMaximize", scale: float = 1.0) -> str:
    """A program whose model's optimum is ``value * scale`` (maximised) or 0 (``LpMinimize``)."""
    return (
        f"```python\nimport pulp\np = pulp.LpProblem('m', pulp.{sense})\n"
        f"x = pulp.LpVariable('x', 0, {2 * value * scale!r})\np += x\np += x <= {value * scale!r}\n"
        "p.solve(pulp.PULP_CBC_CMD(msg=0))\nprint(pulp.value(p.objective))\n```"
    )


def _without_a_constraint(text: str) -> str:
    """The reference program less its first one-line constraint over a sum (a row of the model:
    a constraint on one variable may read as a bound)."""
    lines = text.splitlines()
    for index, line in enumerate(lines):
        if "addConstr(sum(" in line and line.count("(") == line.count(")"):
            indent = line[: len(line) - len(line.lstrip())]
            return "\n".join([*lines[:index], f"{indent}pass", *lines[index + 1 :]])
    raise AssertionError("no one-line constraint to drop")


def _labels(problem: Problem) -> set[float]:
    """Every number the label of ``problem`` holds: the optimum, or the reference LP's coefficients,
    sides and bounds (0 and 1 included)."""
    reference = problem.reference
    if isinstance(reference, ObjectiveReference):
        return set() if reference.value is None else {float(reference.value)}
    assert isinstance(reference, StructureReference)
    model = parse_lp(Path(reference.lp_path).read_text(encoding="utf-8"))
    values = [*model.a_val, *model.obj, *model.row_lower, *model.row_upper, *model.lb, *model.ub]
    return {float(v) for v in values if abs(v) != float("inf")}


def _names(problem: Problem) -> set[str]:
    """The row and column names of a structure label's reference LP (those no English word takes:
    with a digit or an underscore), which a structure diagnosis names."""
    if not isinstance(problem.reference, StructureReference):
        return set()
    model = parse_lp(Path(problem.reference.lp_path).read_text(encoding="utf-8"))
    return {name for name in (*model.row_names, *model.var_names) if re.search(r"[\d_]", name)}


def _words(text: str) -> set[str]:
    return set(re.findall(r"[A-Za-z_]\w*", text))


def _optimum(problem: Problem) -> float:
    assert isinstance(problem.reference, ObjectiveReference) and problem.reference.value is not None
    return float(problem.reference.value)


def _numbers(text: str) -> set[float]:
    return {float(token) for token in NUMBER.findall(RULE_SPEC.sub(" ", text))}


def _texts(grade_or_record: dict[str, Any]) -> Iterator[str]:
    """The text fields of a record or a stored grade that a label could hide in."""
    yield grade_or_record["reason"]
    diagnosis = grade_or_record.get("diagnosis")
    if diagnosis:
        yield diagnosis["detail"]
        assert set(diagnosis["evidence"]) <= LABEL_FREE_EVIDENCE, diagnosis["evidence"]
    evidence = grade_or_record.get("evidence")
    if evidence and evidence["kind"] == "objective":
        assert evidence["reference"] is None and evidence["abs_error"] is None, evidence
    if evidence and evidence["kind"] == "structure":
        assert all(check["detail"] == "" for check in evidence["checks"]), evidence


def _leaks(
    where: str, items: Iterable[tuple[str, dict[str, Any]]], labels: dict[str, tuple[set[float], set[str]]]
) -> list[str]:
    found = []
    for problem_id, fields in items:
        numbers, names = labels[problem_id]
        for text in _texts(fields):
            shown = [*sorted(_numbers(text) & numbers), *sorted(_words(text) & names)]
            if shown:
                found.append(f"{where} {problem_id}: {shown} in {text!r}")
    return found


@pytest.fixture(scope="module")
def rows(data_dir: Path) -> dict[str, list[Problem]]:
    return {
        OBJECTIVE: list(load_benchmark(OBJECTIVE, data_dir=data_dir).problems[:2]),
        STRUCTURE: list(load_benchmark(STRUCTURE, data_dir=data_dir).problems[:2]),
    }


def _rollouts(rows: dict[str, list[Problem]]) -> list[dict[str, Any]]:
    items = []
    for problem in rows[OBJECTIVE]:
        value = _optimum(problem)
        key = {"benchmark": OBJECTIVE, "problem_id": problem.id}
        for text in (
            reference_completion_text(problem),  # correct
            _pulp(value, sense="LpMinimize"),  # wrong: the sense flipped meets the label
            _pulp(value, scale=10.0),  # wrong: ten times the label
            _pulp(value, scale=1.0 + 3e-4),  # wrong: a near miss
            _pulp(value + 17.0),  # wrong, unexplained
        ):
            items.append({"problem": key, "completion": text})
    for problem in rows[STRUCTURE]:
        key = {"benchmark": STRUCTURE, "problem_id": problem.id}
        right = reference_completion_text(problem)
        items += [{"problem": key, "completion": t} for t in (right, _without_a_constraint(right))]
    items.append({"problem": {"value": INLINE_LABEL}, "completion": _pulp(12.0)})
    return items


def test_records_answers_and_logs_carry_no_label(
    tmp_path: Path, data_dir: Path, rows: dict[str, list[Problem]]
) -> None:
    labels = {p.id: (_labels(p), _names(p)) for problems in rows.values() for p in problems}
    labels["inline"] = ({INLINE_LABEL}, set())
    assert all(numbers for numbers, _ in labels.values()) and all(_names(p) for p in rows[STRUCTURE])
    assert {0.0, 1.0} <= set().union(*(numbers for numbers, _ in labels.values()))
    log, out = tmp_path / "rewards.jsonl", tmp_path / "epochs"
    server = subprocess.Popen(
        [sys.executable, "-m", "trex_eval", "serve", "-b", OBJECTIVE, "-b", STRUCTURE, "--diagnose",
         "--port", "0", "--log", str(log), "--out", str(out), "--per-problem", "16",
         "--data-dir", str(data_dir)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    try:
        assert server.stdout is not None
        url = re.search(r"http://127\.0\.0\.1:\d+", server.stdout.readline())
        assert url is not None, server.stderr.read() if server.stderr else ""
        items = _rollouts(rows)
        scored = httpx.post(f"{url.group(0)}/v1/score", json={"requests": items}, timeout=600)
        openrlhf = httpx.post(
            f"{url.group(0)}/get_reward",
            json={"query": [_pulp(12.0)], "prompts": [""], "labels": [json.dumps({"value": INLINE_LABEL})]},
            timeout=300,
        )
    finally:
        server.send_signal(signal.SIGTERM)
        assert server.wait(timeout=120) == 0

    assert scored.status_code == 200, scored.text
    records = scored.json()["records"]
    verdicts = [r["verdict"] for r in records]
    assert verdicts == ["correct", *["wrong"] * 4] * 2 + ["correct", "wrong"] * 2 + ["wrong"], verdicts
    assert records[0]["reason"].startswith("matches the reference under ")
    assert records[1]["reason"].startswith("differs from the reference under ")
    assert {r["diagnosis"]["category"] for r in records if r["verdict"] == "wrong"} == {"unexplained"}
    assert not any(str(INLINE_LABEL) in text for text in (openrlhf.text, json.dumps(openrlhf.json())))
    logged = [json.loads(line) for line in log.read_text().splitlines()]
    samples = [json.loads(line) for epoch in out.glob("epoch-*") for line in (epoch / "samples.jsonl").open()]
    assert len(logged) == len(samples) == len(items) + 1  # /get_reward's rollout too
    leaks = [
        *_leaks("/v1/score", ((r["problem_id"], r) for r in records), labels),
        *_leaks("--log", ((r["problem_id"], r) for r in logged), labels),
        *_leaks("--out", ((s["problem_id"], s["grade"]) for s in samples), labels),
    ]
    assert leaks == []


def test_the_search_finds_the_label_where_show_reference_lets_it_out(
    data_dir: Path, rows: dict[str, list[Problem]]
) -> None:
    """The same search over a scorer asked to show the reference finds the labels: the test above
    would see a leak."""
    problem, structure = rows[OBJECTIVE][0], rows[STRUCTURE][0]
    value = _optimum(problem)
    requests = [
        RewardRequest(
            problem=ProblemKey(benchmark=OBJECTIVE, problem_id=problem.id), completion=_pulp(value + 17.0)
        ),
        RewardRequest(
            problem=ProblemKey(benchmark=STRUCTURE, problem_id=structure.id),
            completion=_without_a_constraint(reference_completion_text(structure)),
        ),
    ]
    settings = ScorerSettings(
        benchmarks=(OBJECTIVE, STRUCTURE), data_dir=data_dir, diagnose=True, show_reference=True, workers=1
    )
    with RewardScorer(settings) as scorer:
        shown = scorer.score(requests)
    labels = {p.id: (_labels(p), _names(p)) for p in (problem, structure)}
    for record in shown:
        detail = record.diagnosis.detail if record.diagnosis else ""
        fields = {"reason": record.reason, "diagnosis": {"detail": detail, "evidence": {}}}
        assert _leaks("shown", [(record.problem_id, fields)], labels) != [], fields
