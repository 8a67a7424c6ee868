"""Benchmark suites: names that stand for several shipped benchmarks (``--benchmarks sirl``).

A shipped benchmark YAML lists the suites it belongs to (``suites: [sirl, orlm]``); ``all`` is
every shipped benchmark. Membership is data, read from the YAML files, so adding a benchmark to a
suite touches only its YAML. A suite expands to its members in name order; a name that is both a
benchmark and a suite is a benchmark (no shipped benchmark is named like a suite).
"""

from __future__ import annotations

from collections.abc import Sequence

from trex_eval.benchmarks.loading import load_spec, shipped_spec_paths

ALL_SUITE = "all"
"""Every shipped benchmark."""

SUITE_TITLES = {
    "t-rex": "the four benchmarks of SLAI-T-Rex (the default)",
    "sirl": "the six columns of the SIRL table, in the label versions SIRL used",
    "orlm": "the four benchmarks of ORLM's README, in their original label versions",
    ALL_SUITE: "every shipped benchmark, each label version separately",
}


def suites() -> dict[str, tuple[str, ...]]:
    """Suite name -> its member benchmarks (name order); ``all`` last."""
    members: dict[str, list[str]] = {}
    paths = shipped_spec_paths()
    for name, path in paths.items():
        for suite in load_spec(path).suites:
            members.setdefault(suite, []).append(name)
    found = {suite: tuple(sorted(names)) for suite, names in sorted(members.items())}
    found[ALL_SUITE] = tuple(sorted(paths))
    return found


def expand(names: Sequence[str]) -> tuple[str, ...]:
    """``names`` with every suite name replaced by its members; duplicates dropped, first kept.

    Benchmark names and YAML paths pass through unchanged (unknown names are reported where they
    are loaded).
    """
    shipped = shipped_spec_paths()
    known = suites() if any(name not in shipped for name in names) else {}
    expanded: list[str] = []
    for name in names:
        for member in known.get(name, (name,)) if name not in shipped else (name,):
            if member not in expanded:
                expanded.append(member)
    return tuple(expanded)
