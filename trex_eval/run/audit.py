"""``trex-eval audit``: grade every benchmark's own reference solutions.

The benchmark's reference program (its ``reference_code``; ``model.optimize()`` appended for
objective grading) goes through the same extraction, sandbox and grader as a model's answer, via
the ``reference`` backend. Under a correct grader every well-posed item passes, so each failure
points at a data defect (label vs reference model), a numerical limit, or a grader bug — the
per-item CSV gives the reason a person can check.

An audit is a run: it writes a run directory (``results/audit-<tag>-<stamp>/`` by default) that
holds, besides the run's files, ``audit.csv`` (one row per item) and ``audit.md``. Nothing is
written under ``results/published/`` unless ``publish`` asks for it (``trex-eval audit
--publish``): the committed audits there change only when someone means to change them.
"""

from __future__ import annotations

import csv
import datetime as dt
import io
import secrets
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from trex_eval.backends.base import BackendSpec
from trex_eval.benchmarks import assets, load_spec, shipped_spec_paths
from trex_eval.errors import StoreError
from trex_eval.files import load_yaml
from trex_eval.protocols import DEFAULT_PROTOCOL
from trex_eval.records import (
    GurobiPolicy,
    ObjectiveEvidence,
    SampleRecord,
    SamplingParams,
    Verdict,
)
from trex_eval.report.published import PUBLISHED_DIR
from trex_eval.report.runs import natural_key
from trex_eval.run import pipeline as runner
from trex_eval.run.spec import RayOptions, RunOptions, RunSpec, model_for_protocol
from trex_eval.sandbox import SandboxLimits

AUDIT_CSV = "audit.csv"
AUDIT_MD = "audit.md"
CSV_FIELDS = ("benchmark", "id", "verdict", "rule", "predicted", "reference", "reason", "known_issue")


def known_issues() -> dict[str, dict[str, str]]:
    """Documented data defects (``benchmarks/notes/known-issues.yaml``): benchmark -> id -> explanation."""
    raw = load_yaml((assets.benchmarks_dir() / "notes" / "known-issues.yaml").read_text(encoding="utf-8"))
    return {bench: {str(k): str(v) for k, v in items.items()} for bench, items in (raw or {}).items()}


@dataclass(frozen=True)
class AuditResult:
    """What an audit wrote: ``csv_path`` (``audit.csv`` in ``run_dir``), the copies asked for
    (``published``: ``--publish`` or ``--csv`` paths), the rows and the Markdown summary."""

    csv_path: Path
    run_dir: Path
    rows: tuple[dict[str, str], ...]
    markdown: str
    published: tuple[Path, ...] = ()


def default_benchmarks(data_dir: Path) -> tuple[str, ...]:
    """The benchmarks of the default ``t-rex`` suite that have reference programs to audit (the
    field's others are audited by name or suite: ``trex-eval audit logior nlp4lp@orthought``)."""
    return tuple(
        name
        for name in shipped_spec_paths()
        if "t-rex" in (spec := load_spec(shipped_spec_paths()[name])).suites
        and spec.fields.reference_code is not None
    )


def audit(
    benchmarks: Sequence[str] | None,
    *,
    data_dir: Path,
    protocol: str = DEFAULT_PROTOCOL,
    rules: tuple[str, ...] = (),
    csv_path: Path | None = None,
    gurobi: GurobiPolicy = "auto",
    workers: int = 2,
    limits: SandboxLimits | None = None,
    show_progress: bool = True,
    results_dir: Path = Path("results"),
    out: Path | None = None,
    publish: bool = False,
    limit: int | None = None,
    ray: RayOptions | None = None,
    problem_ids: dict[str, tuple[str, ...]] | None = None,
) -> AuditResult:
    """Run the audit into a fresh run directory (``out``, default
    ``results_dir/audit-<tag>-<stamp>``) and write ``audit.csv`` and ``audit.md`` there.

    ``csv_path`` also writes the CSV to that path; ``publish`` also writes it to
    ``results_dir/published/audit-<tag>.csv`` (the committed audits). ``tag`` is the rules, else
    the protocol, plus ``-gurobi-<policy>`` when it is not ``auto``. ``limit`` audits only the
    first N problems of each benchmark, ``problem_ids`` the named ones (benchmark -> ids); ``ray``
    grades on a Ray actor pool (the same verdicts).

    Raises:
        StoreError: ``out`` already holds a run (an audit never resumes: it would report old grades).
    """
    names = tuple(benchmarks) if benchmarks else default_benchmarks(data_dir)
    tag = "-".join(rules) if rules else protocol
    if gurobi != "auto":
        tag += f"-gurobi-{gurobi}"
    # A fresh directory each time: resuming an earlier audit would report its old grades.
    run_dir = out or results_dir / f"audit-{tag}-{dt.datetime.now():%Y%m%d-%H%M%S}-{secrets.token_hex(2)}"
    if (run_dir / "manifest.json").exists():
        raise StoreError(
            f"{run_dir} already holds a run", hint="an audit starts afresh: choose another --out"
        )
    reference = BackendSpec(
        name="reference", backend="reference", model="reference", sampling=SamplingParams(),
        description="each benchmark's own reference solution",
    )  # fmt: skip
    model, _ = model_for_protocol(reference, protocol)
    spec = RunSpec(
        model=model,
        benchmarks=names,
        protocol=protocol,
        rules=rules,
        gurobi=gurobi,
        limits=limits,
        limit=limit,
        problem_ids=problem_ids or {},
    )
    options = RunOptions(
        data_dir=data_dir,
        out=run_dir,
        workers=workers,
        show_progress=show_progress,
        keep_records=True,
        ray=ray,
    )
    result = runner.run(spec, options)
    rows = _rows(result.records, names)
    text, markdown = _to_csv(rows), _markdown(rows, tag)
    (result.run_dir / AUDIT_CSV).write_text(text, encoding="utf-8")
    (result.run_dir / AUDIT_MD).write_text(markdown, encoding="utf-8")
    copies = [path for path in (csv_path,) if path is not None]
    if publish:
        copies.append(results_dir / PUBLISHED_DIR.name / f"audit-{tag}.csv")
    for path in copies:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return AuditResult(result.run_dir / AUDIT_CSV, result.run_dir, rows, markdown, tuple(copies))


def _rows(records: Sequence[SampleRecord], names: Sequence[str]) -> tuple[dict[str, str], ...]:
    """The audit's rows: benchmarks in the order ``names`` gives them, items in natural order.
    A benchmark named by a YAML path has records under its spec's name: after the names given."""
    order = {name: i for i, name in enumerate(names)}
    samples = sorted(
        records, key=lambda r: (order.get(r.benchmark, len(order)), r.benchmark, natural_key(r.problem_id))
    )
    issues = known_issues()
    return tuple(
        _row(record, issues.get(record.benchmark, {}).get(record.problem_id, "")) for record in samples
    )


def _row(record: SampleRecord, known_issue: str) -> dict[str, str]:
    evidence = record.grade.evidence
    predicted = reference = ""
    if isinstance(evidence, ObjectiveEvidence):
        predicted = "" if evidence.predicted is None else repr(evidence.predicted)
        reference = "" if evidence.reference is None else repr(evidence.reference)
    return {
        "benchmark": record.benchmark,
        "id": record.problem_id,
        "verdict": record.grade.verdict.value,
        "rule": record.grade.rule,
        "predicted": predicted,
        "reference": reference,
        "reason": record.grade.reason,
        "known_issue": known_issue,
    }


def _to_csv(rows: Sequence[dict[str, str]]) -> str:
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=CSV_FIELDS, lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return buffer.getvalue()


def _markdown(rows: Sequence[dict[str, str]], tag: str) -> str:
    lines = [f"# Reference-solution audit ({tag})", ""]
    by_bench: dict[str, list[dict[str, str]]] = {}
    for row in rows:
        by_bench.setdefault(row["benchmark"], []).append(row)
    lines += ["| benchmark | rule | correct | total | other verdicts |", "|---|---|---:|---:|---|"]
    for name, items in by_bench.items():
        verdicts = Counter(r["verdict"] for r in items)
        correct = verdicts.pop(Verdict.CORRECT.value, 0)
        other = ", ".join(f"{v} {n}" for v, n in verdicts.most_common()) or "-"
        lines.append(f"| {name} | {items[0]['rule']} | {correct} | {len(items)} | {other} |")
    for name, items in by_bench.items():
        failures = [r for r in items if r["verdict"] != Verdict.CORRECT.value]
        if failures:
            lines += ["", f"## {name}: {len(failures)} not correct", ""]
            for r in failures:
                lines.append(f"- {r['id']}: {r['verdict']} — {r['reason']}")
                if r["known_issue"]:
                    lines.append(f"  - known data issue: {r['known_issue']}")
            unexplained = [r["id"] for r in failures if not r["known_issue"]]
            lines += ["", f"Failures without a documented data issue: {', '.join(unexplained) or 'none'}"]
    return "\n".join(lines) + "\n"
