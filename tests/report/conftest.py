"""Run directories shared by the report tests, each made once per session by the real pipeline
(see ``pipeline_runs``). Tests only read them."""

from __future__ import annotations

from pathlib import Path

import pipeline_runs
import pytest

from trex_eval.report import RunResults, load_run


@pytest.fixture(scope="session")
def runs_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("runs")


@pytest.fixture(scope="session")
def reference_dir(runs_root: Path, data_dir: Path) -> Path:
    return pipeline_runs.reference_run(runs_root / "reference", data_dir)


@pytest.fixture(scope="session")
def broken_dir(runs_root: Path, data_dir: Path, reference_dir: Path) -> Path:
    return pipeline_runs.broken_run(runs_root / "broken", data_dir, reference_dir)


@pytest.fixture(scope="session")
def compat_dir(runs_root: Path, data_dir: Path) -> Path:
    return pipeline_runs.reference_run(runs_root / "reference-compat", data_dir, protocol="trex-compat")


@pytest.fixture(scope="session")
def sampled_dir(runs_root: Path, data_dir: Path) -> Path:
    return pipeline_runs.sampled_run(runs_root / "sampled", data_dir)


@pytest.fixture(scope="session")
def reference(reference_dir: Path) -> RunResults:
    return load_run(reference_dir)


@pytest.fixture(scope="session")
def broken(broken_dir: Path) -> RunResults:
    return load_run(broken_dir)


@pytest.fixture(scope="session")
def sampled(sampled_dir: Path) -> RunResults:
    return load_run(sampled_dir)
