"""`trex-eval benchmarks list`: grouped by suite, each benchmark with its label version, rows,
rule, licence and pinned source, as a user's 80-column terminal shows it (the real CLI)."""

from __future__ import annotations

from pathlib import Path

from cli_process import trex_eval

from trex_eval.benchmarks import load_benchmark, load_spec, shipped_spec_paths
from trex_eval.benchmarks.data import load_manifest, load_sources
from trex_eval.benchmarks.suites import suites


def _groups(stdout: str) -> dict[str, list[list[str]]]:
    """Suite (of its heading, ``-b SUITE: ...``) -> the rows of its table (cells split on spaces)."""
    found: dict[str, list[list[str]]] = {}
    current: list[list[str]] | None = None
    for line in stdout.splitlines():
        if line.startswith("-b "):
            current = found.setdefault(line.split()[1].rstrip(":"), [])
        elif line and not line.startswith(" "):
            current = None  # a wrapped heading, or the lines under the tables
        elif current is not None and line.strip() and not line.strip().startswith(("name", "─")):
            current.append(line.split())
    return found


def test_list_groups_by_suite_with_version_rows_licence_source(tmp_path: Path, data_dir: Path) -> None:
    env = {"TREX_CONFIG_DIR": str(tmp_path / "config"), "TREX_DATA_DIR": str(data_dir)}
    narrow = trex_eval("benchmarks", "list", columns=80, env=env, cwd=tmp_path)
    assert max(len(line) for line in narrow.stdout.splitlines()) <= 80
    # Names are never cut, even at 80 columns.
    assert set(shipped_spec_paths()) <= {
        cells[0] for cells in map(str.split, narrow.stdout.splitlines()) if cells
    }
    # Wide enough for no cell to fold: one line per benchmark.
    done = trex_eval("benchmarks", "list", columns=200, env=env, cwd=tmp_path)
    groups = _groups(done.stdout)
    members = suites()
    in_a_suite = {n for suite, names in members.items() if suite != "all" for n in names}
    for suite, names in members.items():
        if suite != "all":
            assert [row[0] for row in groups[suite] if row[0] in names] == list(names)
    assert [row[0] for row in groups["all"] if row[0] in shipped_spec_paths()] == sorted(
        set(shipped_spec_paths()) - in_a_suite
    )
    assert next(iter(groups)) == "t-rex"  # the default suite first
    # A row per benchmark: name, version, usable rows, rule, licence, repository name.
    for name in ("mamo-complexlp@sirl-fixed", "optmath-bench@optimind", "b4o-orgeval", "logior"):
        spec = load_spec(shipped_spec_paths()[name])
        row = next(r for rows in groups.values() for r in rows if r[0] == name)
        repository = spec.source.repository or load_manifest().repository
        assert row[1] == spec.labels.version
        assert row[2] == str(len(load_benchmark(name, data_dir=data_dir)))
        assert row[3] == spec.grader.rule.partition("@")[0]
        assert row[-1] == repository.partition("/")[2]
        assert row[4] == (spec.licence or "none").split()[0]
    # Owners and pinned commits of every source, under the tables.
    pins = [f"{repo}@{pin.commit[:7]}" for repo, pin in load_sources().items()]
    flat = " ".join(done.stdout.split())
    assert all(pin in flat for pin in [*pins, f"{load_manifest().repository}@{load_manifest().commit[:7]}"])
    assert "with --protocol trex-compat: objective trex-compat, structure orgeval-trex-compat" in flat
