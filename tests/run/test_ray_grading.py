"""``run``, ``grade`` and ``audit`` grading on a real local Ray cluster: a head and a second node
(two raylets, Ray's own ``cluster_utils.Cluster``, loopback only), one grading actor on each, each
with its own sandbox pool. Every sample's grade equals the local pool's, the run directory holds the
same files and records, a resumed Ray run finishes, and a re-grade reuses the stored executions on
the actors. One cluster serves the whole module (Ray starts slowly)."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from cli_process import trex_eval
from ray_loopback import loopback_cluster

from trex_eval.backends.base import BackendSpec
from trex_eval.errors import ConfigError
from trex_eval.records import SampleRecord, SamplingParams
from trex_eval.run import pipeline as runner
from trex_eval.run.audit import audit
from trex_eval.run.spec import RayOptions, RunOptions, RunSpec
from trex_eval.store import RunStore

pytest.importorskip("ray")

REFERENCE = BackendSpec(name="reference", backend="reference", model="reference", sampling=SamplingParams())
AUDITED = 24
"""B4O-Feasible items the audit test grades both ways (the whole audit, 344 items, was compared by
hand: docs/scale-out.md)."""


@pytest.fixture(scope="module")
def cluster() -> Iterator[str]:
    with loopback_cluster() as address:
        yield address


def _decisions(records: list[SampleRecord]) -> dict[tuple[str, str, int], tuple[str, str, str, Any]]:
    """Each sample's verdict, reason, rule and diagnosis, by key: what grading decided."""
    return {
        r.key: (
            r.grade.verdict.value,
            r.grade.reason,
            r.grade.rule,
            None if r.grade.diagnosis is None else r.grade.diagnosis.category,
        )
        for r in records
    }


def _grading(run_dir: Path) -> dict[str, Any]:
    provenance = RunStore(run_dir).read_manifest().provenance
    assert provenance is not None
    return provenance


def test_the_audit_on_ray_gives_the_local_pools_verdicts(
    cluster: str, data_dir: Path, tmp_path: Path
) -> None:
    common: dict[str, Any] = {"data_dir": data_dir, "workers": 1, "show_progress": False, "limit": AUDITED}
    local = audit(["b4o-feasible"], out=tmp_path / "local", **common)
    on_ray = audit(["b4o-feasible"], out=tmp_path / "ray", ray=RayOptions(address=cluster), **common)

    assert len(on_ray.rows) == AUDITED
    assert on_ray.rows == local.rows  # verdict, rule, predicted, reference, reason of every item
    assert sum(row["verdict"] == "correct" for row in on_ray.rows) >= AUDITED - 2
    assert sorted(p.name for p in on_ray.run_dir.iterdir()) == sorted(p.name for p in local.run_dir.iterdir())
    grading = _grading(on_ray.run_dir)["grading"]
    assert grading["on"] == "ray" and grading["actors"] == 2
    # One actor on each node (SPREAD), each running its programs in a sandbox of its own.
    assert len({place["node_id"] for place in grading["placement"]}) == 2
    assert all(place["isolation"] for place in grading["placement"])
    assert "grading" not in _grading(local.run_dir)
    local_sandbox, ray_sandbox = _grading(local.run_dir)["sandbox"], _grading(on_ray.run_dir)["sandbox"]
    assert ray_sandbox["isolation"]["level"] == local_sandbox["isolation"]["level"]


def test_a_reference_run_on_ray_equals_the_local_run_and_resumes(
    cluster: str, data_dir: Path, tmp_path: Path
) -> None:
    # An objective and a structure benchmark; two samples of each problem.
    spec = RunSpec(model=REFERENCE, benchmarks=("b4o-feasible", "b4o-orgeval"), limit=3, samples=2)
    common: dict[str, Any] = {"data_dir": data_dir, "workers": 1, "show_progress": False}
    ray_options = RayOptions(address=cluster)
    local = runner.run(spec, RunOptions(out=tmp_path / "local", **common))
    on_ray = runner.run(spec, RunOptions(out=tmp_path / "ray", ray=ray_options, **common))

    expected = _decisions(list(RunStore(local.run_dir).iter_samples()))
    assert len(expected) == 12
    assert _decisions(list(RunStore(on_ray.run_dir).iter_samples())) == expected
    assert (on_ray.graded_now, on_ray.executed_now) == (local.graded_now, local.executed_now) == (12, 12)
    assert on_ray.summary.benchmarks == local.summary.benchmarks

    # A Ray run killed after 5 samples: the resume grades the other 7 on Ray and ends as the
    # uninterrupted run did.
    samples = on_ray.run_dir / "samples.jsonl"
    kept = samples.read_text(encoding="utf-8").splitlines(keepends=True)[:5]
    samples.write_text("".join(kept), encoding="utf-8")
    resumed = runner.run(
        runner.resume_spec(on_ray.run_dir), RunOptions(out=on_ray.run_dir, ray=ray_options, **common)
    )
    assert (resumed.graded_now, resumed.generated_now) == (7, 0)
    assert _decisions(list(RunStore(on_ray.run_dir).iter_samples())) == expected
    provenance = _grading(on_ray.run_dir)
    assert provenance["grading"]["actors"] == 2
    assert provenance["earlier_sessions"][0]["grading"]["on"] == "ray"


def test_miplib_nl_on_ray_reads_its_data_by_reference_on_every_node(
    cluster: str, data_dir: Path, tmp_path: Path
) -> None:
    """Data files handed by reference are staged in each actor's own instance store, and each job
    runs under the rule's budget and its bucket's memory, as on the local pool."""
    spec = RunSpec(
        model=REFERENCE,
        benchmarks=("miplib-nl",),
        rules=("budgeted:20,verify=20",),
        gurobi="highs",
        problem_ids={"miplib-nl": ("flugpl", "gr4x6", "b-ball", "air03")},
    )
    common: dict[str, Any] = {"data_dir": data_dir, "workers": 1, "show_progress": False}
    local = runner.run(spec, RunOptions(out=tmp_path / "local", **common))
    on_ray = runner.run(spec, RunOptions(out=tmp_path / "ray", ray=RayOptions(address=cluster), **common))
    expected = _decisions(list(RunStore(local.run_dir).iter_samples()))
    assert _decisions(list(RunStore(on_ray.run_dir).iter_samples())) == expected
    verdicts = {key[1]: decision[0] for key, decision in expected.items()}
    assert verdicts == {"flugpl": "correct", "gr4x6": "correct", "b-ball": "wrong", "air03": "correct"}
    assert _grading(on_ray.run_dir)["grading"]["actors"] == 2


LP = (
    "```python\nimport pulp\np = pulp.LpProblem('lp', pulp.LpMaximize)\nx = pulp.LpVariable('x', 0, 3)\n"
    "y = pulp.LpVariable('y', 0)\np += 3 * x + 2 * y\np += x + y <= 4\np += x + 3 * y <= 6\n"
    "p.solve(pulp.PULP_CBC_CMD(msg=0))\nprint(pulp.value(p.objective))\n```"
)
"""A model that solves, to the wrong problem: graded ``wrong`` and diagnosed (its captured model
re-solved and compared with the reference program's, which the actor runs)."""


def _wrong_answers(path: Path) -> None:
    """A completions file of B4O-Feasible answers that fail in different ways (a wrong model, a
    syntax error, no code, a crash), so that diagnosis runs on the actors."""
    lines = [
        ("BENCH4OPT_5", LP),
        ("BENCH4OPT_2", "```python\nimport pulp\nx = (\n```"),
        ("BENCH4OPT_3", "I cannot solve this."),
        ("BENCH4OPT_4", "```python\nraise SystemExit(3)\n```"),
    ]
    path.write_text("".join(json.dumps({"problem_id": i, "completion": t}) + "\n" for i, t in lines))


def test_grade_on_ray_from_the_command_line(cluster: str, data_dir: Path, tmp_path: Path) -> None:
    answers = tmp_path / "answers.jsonl"
    _wrong_answers(answers)
    graded: dict[str, dict[tuple[str, str, int], Any]] = {}
    for where, extra in (("local", []), ("ray", ["--ray-address", cluster, "--ray-actors", "2"])):
        out = tmp_path / f"file-{where}"
        trex_eval("grade", str(answers), "-b", "b4o-feasible", "--workers", "1", "--no-progress",
                  "--data-dir", str(data_dir), "--out", str(out), *extra, timeout=180)  # fmt: skip
        graded[where] = _decisions(list(RunStore(out).iter_samples()))
    assert graded["ray"] == graded["local"]
    assert {verdict for verdict, *_ in graded["ray"].values()} >= {"wrong", "no_code"}
    assert all(diagnosis is not None for _, _, _, diagnosis in graded["ray"].values())

    # Re-grading the Ray run under another rule on Ray: every program's stored execution is
    # reused by the actors, none runs again.
    regraded = tmp_path / "regraded"
    done = trex_eval("grade", str(tmp_path / "file-ray"), "--rule", "rel:1e-4", "--no-progress",
                     "--ray-address", cluster, "--out", str(regraded), timeout=180)  # fmt: skip
    assert "3 stored executions reused, 0 programs run" in done.stdout
    assert _grading(regraded)["grading"]["actors"] == 2


def test_ray_flags_are_checked_before_anything_starts(tmp_path: Path) -> None:
    done = trex_eval(
        "audit", "-b", "b4o-feasible", "--ray-actors", "2", "--out", str(tmp_path / "a"), expect=2
    )
    assert "--ray-actors needs --ray-address" in done.stderr


def test_grading_on_ray_without_ray_names_the_extra(
    data_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` now fails as where it is missing
    spec = RunSpec(model=REFERENCE, benchmarks=("b4o-feasible",), limit=1)
    options = RunOptions(data_dir=data_dir, out=tmp_path / "run", show_progress=False, ray=RayOptions("auto"))
    with pytest.raises(ConfigError, match="needs the ray package") as raised:
        runner.run(spec, options)
    assert raised.value.hint is not None and "trex-eval[ray]" in raised.value.hint
    assert not (tmp_path / "run").exists()  # nothing was graded: no run directory is left behind
