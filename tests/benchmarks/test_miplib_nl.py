"""MIPLIB-NL (issue 49) on its real files in ../shared/benchmarks/optsuite+MIPLIB-NL: rows and the
instances left out, a prompt without label or data, data handed to programs by reference in the
real sandbox, the pin `data pull` installs from, and reference programs graded against their
labels through the licence-free gurobipy layer."""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path

import pytest

from trex_eval.benchmarks import load_benchmark
from trex_eval.benchmarks.data import load_sources, source_dir
from trex_eval.benchmarks.loading import Benchmark
from trex_eval.files import sha256_file
from trex_eval.prompting.render import PromptRenderer
from trex_eval.protocols import get_protocol
from trex_eval.records import InstanceLink, ObjectiveReference, Problem, SolveStatus
from trex_eval.run.audit import audit
from trex_eval.sandbox import Job, SandboxPool
from trex_eval.sandbox.instances import store_root

REPOSITORY = "optsuite/MIPLIB-NL"
SMALL = ("flugpl", "gr4x6", "assign1-5-8")
"""Three of the smallest complete instances; their reference programs solve in seconds on HiGHS."""


@pytest.fixture(scope="module")
def bench(data_dir: Path) -> Benchmark:
    return load_benchmark("miplib-nl", data_dir=data_dir)


def _source_txt(data_dir: Path) -> str:
    return (source_dir(REPOSITORY, data_dir) / "SOURCE.txt").read_text(encoding="utf-8")


def test_rows_and_the_instances_left_out(bench: Benchmark, data_dir: Path) -> None:
    assert len(bench) + len(bench.skipped) == 223 and not bench.row_errors
    assert all(row.absent for row in bench.skipped)
    incomplete = set(re.findall(r"^  dataset/([^/]+)/", _source_txt(data_dir), flags=re.M))
    assert len(incomplete) == 22
    fetched = {Path(r.where).name for r in bench.skipped if "`trex-eval data pull` fetches it" in r.message}
    assert fetched == incomplete
    # Two instance files name data files the pinned commit itself lacks: said so, not "pull".
    gaps = {Path(r.where).name: r.message for r in bench.skipped if Path(r.where).name not in incomplete}
    assert sorted(gaps) == ["ex1010-pi", "neos-3610173-itata"]
    assert all("upstream gap" in message for message in gaps.values())
    flugplinf = bench.get("flugplinf").reference
    assert isinstance(flugplinf, ObjectiveReference) and flugplinf.status is SolveStatus.INFEASIBLE


def test_prompt_has_the_filled_description_and_schemas_never_label_or_data(
    bench: Benchmark, data_dir: Path
) -> None:
    problem = bench.get("air03")
    folder = source_dir(REPOSITORY, data_dir) / "dataset" / "air03"
    upstream = json.loads((folder / "instance.json").read_text(encoding="utf-8"))
    prompt = PromptRenderer(bench, "neutral").render(problem).messages[-1].content
    assert "complex network comprising 124 scheduled flight sectors" in prompt and "{n}" not in prompt
    for entry in upstream["files"].values():
        assert f"`{entry['path']}`" in prompt and entry["description"].strip() in prompt
    assert "340160" not in prompt and "optimal_value" not in prompt
    # Rows past the descriptions' two sample rows appear nowhere.
    rows = list(csv.reader((folder / "data" / "pairing_flights.csv").open()))
    assert not any(f"| {' | '.join(row)} |" in prompt for row in rows[5:200])
    assert "`problem.json`" in prompt and "do not use any other file" not in prompt


def test_the_instance_file_under_both_names_without_its_label(bench: Benchmark) -> None:
    for problem in (bench.get(name) for name in (*SMALL, "air03", "b-ball")):
        assert list(problem.instance_files) == ["problem.json", "instance.json", "logs/.keep"]
        given = json.loads(problem.instance_files["problem.json"])
        assert problem.instance_files["instance.json"] == problem.instance_files["problem.json"]
        assert "optimal_value" not in given and set(given) <= {"abstract_problem", "parameters", "files"}
    air03 = bench.get("air03")
    assert [link.name for link in air03.instance_links] == [
        "data/pairing_costs.csv",
        "data/pairing_flights.csv",
    ]
    assert all(sha256_file(Path(link.source)) == link.sha256 for link in air03.instance_links)
    assert air03.meta["data_bytes"] == str(sum(link.bytes for link in air03.instance_links))


def test_problem_records_written_before_links_still_read() -> None:
    old = {
        "benchmark": "nl4opt",
        "id": "0",
        "index": 0,
        "question": "q",
        "reference": {"kind": "objective", "value": 1.0, "label": "1"},
        "instance_files": {"data.json": "{}"},
    }
    assert Problem.model_validate_json(json.dumps(old)).instance_links == ()
    with pytest.raises(ValueError, match="stay inside the working directory"):
        Job(code="", links=(InstanceLink(name="../x.csv", source="/x", bytes=0, sha256="0" * 64),))
    with pytest.raises(ValueError, match="differ from its files"):
        Job(
            code="",
            files={"a.csv": ""},
            links=(InstanceLink(name="a.csv", source="/x", bytes=0, sha256="0" * 64),),
        )


_READER = """
import csv, json, os
given = json.load(open("instance.json"))
assert given == json.load(open("problem.json")) and "optimal_value" not in given
path = given["files"]["pairing_flights"]["path"]
print("rows", sum(1 for _ in csv.reader(open(path))))
print("link", os.path.islink(path), os.path.realpath(path))
try:
    open(path, "a").write("1,1\\n")
    print("written")
except OSError as error:
    print("write refused", error.errno)
print("upstream visible", os.path.exists(SHARED))
open("logs/log.txt", "a").write("solve.py appends here\\n")
print("log written")
"""


def test_a_program_reads_its_data_by_reference_read_only(bench: Benchmark, data_dir: Path) -> None:
    problem = bench.get("air03")
    shared = source_dir(REPOSITORY, data_dir) / "dataset" / "air03" / "instance.json"
    code = f"SHARED = {str(shared)!r}\n{_READER}"
    job = get_protocol("default").job(bench, problem, code).model_copy(update={"expect": "any"})
    assert job.links == problem.instance_links
    with SandboxPool(workers=1, hidden=(str(bench.root),)) as pool:
        execution = pool.run(job)
    out = execution.stdout_tail
    assert execution.status.value == "ok", (execution.detail, execution.stderr_tail)
    flights = source_dir(REPOSITORY, data_dir) / "dataset" / "air03" / "data" / "pairing_flights.csv"
    assert f"rows {len(flights.read_text().splitlines())}" in out
    staged = store_root() / problem.instance_links[1].sha256[:2] / problem.instance_links[1].sha256
    assert f"link True {staged}" in out and "write refused" in out and "\nwritten" not in out
    assert "log written" in out
    assert sha256_file(staged) == problem.instance_links[1].sha256
    if execution.isolation == "bwrap":  # the upstream folder, labels included, is out of view
        assert "upstream visible False" in out


def test_pin_declares_the_snapshot_and_the_unhashed_files(data_dir: Path) -> None:
    pin = load_sources()[REPOSITORY]
    text = _source_txt(data_dir)
    assert pin.commit in text and len(pin.commit) == 40
    hashed = {path: sha for sha, path in re.findall(r"^([0-9a-f]{64})  (\S+)$", text, flags=re.M)}
    assert dict(pin.files) == hashed and len(hashed) == 1405
    absent = re.findall(r"^  (dataset/\S+)$", text, flags=re.M)
    assert sorted(pin.unhashed) == sorted(absent) and len(absent) == 31
    # A pull installs them unchecked where the archive has them; a copy without them verifies.
    assert set(pin.as_manifest().optional) == set(absent)


@pytest.mark.timeout(240)
def test_reference_programs_reproduce_their_labels_through_the_layer(tmp_path: Path, data_dir: Path) -> None:
    """The smallest instances' solve.py, as completions, through sandbox, layer and grader."""
    result = audit(
        ["miplib-nl"],
        data_dir=data_dir,
        gurobi="highs",
        results_dir=tmp_path / "results",
        show_progress=False,
        problem_ids={"miplib-nl": SMALL},
    )
    rows = {row["id"]: row for row in csv.DictReader(result.csv_path.open())}
    assert sorted(rows) == sorted(SMALL)
    assert {name: rows[name]["verdict"] for name in SMALL} == dict.fromkeys(SMALL, "correct")
