"""The command line's conventions, in one place: one spelling per concept, shared by every command
that takes it, and the parsers that turn flag values into library values.

| concept | spelling | commands |
|---|---|---|
| which benchmarks | ``-b/--benchmarks`` (comma-separated or repeated; suites expand) | run, grade, audit |
| grading | ``--protocol``, ``--rule`` (repeatable) | run, grade, audit (compare: ``--protocol`` repeated) |
| sandbox | ``--gurobi``, ``--workers``, ``--timeout``, ``--memory-mib`` | run, grade, audit |
| a run directory to write | ``-o/--out DIR`` | run, grade, audit |
| a table or page to write | ``-o/--out FILE`` (format by suffix, repeatable) | leaderboard, compare, report |
| Markdown on stdout | ``--md`` | leaderboard, compare, audit |
| data | ``--data-dir`` | every command that reads benchmarks |
| progress | ``--no-progress`` | run, grade, audit |
| grading on Ray | ``--ray-address``, ``--ray-actors`` | run, grade, audit (serve: its own, same meaning) |

Older spellings stay accepted, hidden from ``--help``, where scripts may use them: ``grade
--benchmark`` and ``grade --completions FILE``, ``audit BENCHMARK...``, ``leaderboard --html FILE``.
Flags take no value, so their help shows none (see :mod:`trex_eval.cli`).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Optional, cast, get_args

import typer

from trex_eval.errors import ConfigError

if TYPE_CHECKING:
    from trex_eval.run.spec import RayOptions
    from trex_eval.sandbox import SandboxLimits
    from trex_eval.vocabulary import FewShotStrategy, GurobiPolicy

PANEL_WHAT = "What to run"
PANEL_MODEL = "Model"
PANEL_GRADING = "Grading"
PANEL_SANDBOX = "Sandbox"
PANEL_OUTPUT = "Output"


def _protocol_help() -> str:
    from trex_eval.protocols import protocol_names

    # Names only: describing each would load every protocol at every CLI start.
    names = protocol_names()
    return (
        f"{names[0]} (trex-eval's corrected grading) or another registered protocol: "
        f"{', '.join(names[1:])} (`trex-eval rules` describes each); add a peer's execution "
        "conventions as options: BASE+preload=pulp+after-solve+zero-band=0.05+no-best-solution "
        "(docs/protocols.md)."
    )


OBJECTIVE_RULES = (
    "strict", "rel", "abs", "round", "orlm", "sirl", "optmath", "mamo", "orthought", "budgeted",
    "trex-compat", "orlm-compat",
)  # fmt: skip
STRUCTURE_RULES = ("orgeval-fixed", "orgeval-exact", "orgeval-trex-compat")
"""The shipped rule families of each kind, as ``trex-eval rules`` lists them, for ``--rule``'s help:
written out because the rule registry loads the pydantic records, which every command's help (this
text is built at start-up) would then pay for (tests/cli/test_startup_imports.py holds them equal
to the registry's)."""


def _rule_help() -> str:
    objective = ", ".join(OBJECTIVE_RULES)
    structure = ", ".join(STRUCTURE_RULES)
    return (
        f"Grading rule instead of the benchmark's: an objective rule spec ({objective}; e.g. "
        f"strict:rtol=1e-6, rel:1e-4, round:2) and/or a structure rule ({structure}). Repeatable "
        "(grade: several rules of one kind grade into one directory each). `trex-eval rules` "
        "describes each."
    )


BenchmarksOption = Annotated[
    list[str],
    typer.Option(
        "--benchmarks",
        "-b",
        help="Benchmarks or suites by name, or benchmark YAML files (comma-separated or repeated; "
        "`trex-eval benchmarks list` names them). The default depends on the command (see above).",
        rich_help_panel=PANEL_WHAT,
        show_default=False,
    ),
]
ProtocolOption = Annotated[
    str, typer.Option("--protocol", help=_protocol_help(), rich_help_panel=PANEL_GRADING)
]
RegradeProtocolOption = Annotated[
    Optional[str],  # noqa: UP045 - typer evaluates the annotation at runtime on Python 3.10
    typer.Option(
        "--protocol",
        help=_protocol_help() + " Default: a run directory's own protocol; default for a completions file.",
        rich_help_panel=PANEL_GRADING,
        show_default=False,
    ),
]
RuleOption = Annotated[
    list[str], typer.Option("--rule", help=_rule_help(), rich_help_panel=PANEL_GRADING, show_default=False)
]
GurobiOption = Annotated[
    str,
    typer.Option(
        "--gurobi",
        help="gurobipy inside the sandbox: auto (real if licensed, else highs), real, or highs (the "
        "licence-free gurobipy_highs layer; compat is an alias).",
        rich_help_panel=PANEL_SANDBOX,
    ),
]
WorkersOption = Annotated[
    int, typer.Option("--workers", help="Programs executed at once.", rich_help_panel=PANEL_SANDBOX)
]
TimeoutOption = Annotated[
    Optional[float],  # noqa: UP045 - typer evaluates the annotation at runtime on Python 3.10
    typer.Option(
        "--timeout",
        help="Wall-clock seconds per program (default 60; 360/180 under trex-compat). Programs whose "
        "limits change run again.",
        rich_help_panel=PANEL_SANDBOX,
        show_default=False,
    ),
]
RayAddressOption = Annotated[
    Optional[str],  # noqa: UP045 - typer evaluates the annotation at runtime on Python 3.10
    typer.Option(
        "--ray-address",
        help="Grade on a Ray cluster (auto, HOST:PORT, ray://HOST:PORT, or local to start one here): "
        "one grading actor per node, each with --workers sandbox lanes; generation and the run "
        "directory stay here, the grades are the same. Needs the ray extra and the data at the "
        "same path on every node.",
        rich_help_panel=PANEL_SANDBOX,
        show_default=False,
    ),
]
RayActorsOption = Annotated[
    Optional[int],  # noqa: UP045
    typer.Option(
        "--ray-actors",
        help="Grading actors on Ray (default: one per alive node).",
        rich_help_panel=PANEL_SANDBOX,
        show_default=False,
    ),
]
MemoryOption = Annotated[
    Optional[int],  # noqa: UP045
    typer.Option(
        "--memory-mib",
        help="Memory per program, all its processes and files together (default 2048).",
        rich_help_panel=PANEL_SANDBOX,
        show_default=False,
    ),
]
RunOutOption = Annotated[
    Optional[Path],  # noqa: UP045
    typer.Option(
        "--out",
        "-o",
        help="Run directory to write (default results/<run-id>).",
        rich_help_panel=PANEL_OUTPUT,
        show_default=False,
    ),
]
NoProgressOption = Annotated[
    bool, typer.Option("--no-progress", help="No progress bars.", rich_help_panel=PANEL_OUTPUT)
]
FilesOutOption = Annotated[
    list[Path],
    typer.Option(
        "--out",
        "-o",
        help="Also write to FILE, in the format its suffix names (.csv, .md or .html). Repeatable.",
        show_default=False,
    ),
]
MarkdownOption = Annotated[
    bool,
    typer.Option("--md", help="Print the Markdown (with definitions) instead of the terminal table."),
]
PublishedOption = Annotated[
    bool,
    typer.Option("--published/--no-published", help="Show reported (not re-run) numbers beside the runs."),
]
BaselineOption = Annotated[
    Optional[str],  # noqa: UP045
    typer.Option(
        "--baseline",
        help="The run the others are compared with (a path or run id; default: the first).",
        show_default=False,
    ),
]
DataDirOption = Annotated[
    Optional[Path],  # noqa: UP045
    typer.Option(
        "--data-dir",
        help="Benchmark data root (holds data/ and evaluation/). Default: $TREX_DATA_DIR, then a "
        "checkout's ../shared/benchmarks/t-rex, then the user cache.",
        show_default=False,
    ),
]
ModelsFileOption = Annotated[
    Optional[Path],  # noqa: UP045
    typer.Option(
        "--models-file",
        help="Extra presets file (overrides shipped and user presets).",
        rich_help_panel=PANEL_MODEL,
        show_default=False,
    ),
]

DEFAULT_WORKERS = 2
DEFAULT_GUROBI = "auto"


def split_list(values: list[str]) -> tuple[str, ...]:
    """Repeated and comma-separated values as one tuple, blanks dropped."""
    return tuple(part.strip() for value in values for part in value.split(",") if part.strip())


def split_rules(values: list[str]) -> tuple[str, ...]:
    """``--rule`` values as rule specs: repeated and comma-separated like :func:`split_list`, but a
    part holding ``=`` and no ``:`` continues the spec before it, since a rule's parameters are
    comma-separated too (``--rule strict,budgeted:60,verify=30`` is two rules)."""
    specs: list[str] = []
    for value in values:
        for part in (p.strip() for p in value.split(",")):
            if part and "=" in part and ":" not in part and specs and ":" in specs[-1]:
                specs[-1] += f",{part}"
            elif part:
                specs.append(part)
    return tuple(specs)


def one_of(value: str, choices: tuple[str, ...], *, what: str) -> str:
    """``value`` if it is one of ``choices``, else the user error naming them."""
    if value not in choices:
        allowed = f"{', '.join(choices[:-1])} or {choices[-1]}"
        raise ConfigError(f"unknown {what} {value!r}", hint=f"use {allowed}")
    return value


def protocol_name(value: str) -> str:
    """The canonical text of ``--protocol``: a registered name, or one with convention options
    (``orlm+after-solve``; see trex_eval.protocols.conventions)."""
    from trex_eval.protocols import protocol_spec

    return protocol_spec(value)


def gurobi_policy(value: str) -> GurobiPolicy:
    from trex_eval.vocabulary import GUROBI_POLICY_ALIASES, GurobiPolicy

    value = GUROBI_POLICY_ALIASES.get(value, value)  # compat: the old name of highs
    return cast("GurobiPolicy", one_of(value, get_args(GurobiPolicy), what="--gurobi policy"))


def few_shot_strategy(value: str) -> FewShotStrategy:
    from trex_eval.vocabulary import FewShotStrategy

    return cast("FewShotStrategy", one_of(value, get_args(FewShotStrategy), what="few-shot strategy"))


def workers_count(value: int) -> int:
    if value < 1:
        raise ConfigError("--workers must be at least 1")
    return value


def key_values(opts: list[str]) -> dict[str, str]:
    """``--opt KEY=VALUE`` flags as a mapping."""
    parsed: dict[str, str] = {}
    for item in opts:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ConfigError(
                f"--opt {item!r} is not KEY=VALUE", hint="e.g. --opt base_url=http://localhost:8000/v1"
            )
        parsed[key.strip()] = value.strip()
    return parsed


def sandbox_limits(wall_s: float | None, memory_mib: int | None) -> SandboxLimits | None:
    """The limits ``--timeout``/``--memory-mib`` ask for (``None``: the protocol's defaults).
    ``--timeout`` sets the CPU-time limit too."""
    from pydantic import ValidationError

    from trex_eval.sandbox import SandboxLimits

    if wall_s is None and memory_mib is None:
        return None
    chosen = {"wall_s": wall_s, "cpu_s": wall_s, "memory_mib": memory_mib}
    try:
        return SandboxLimits(
            **{**SandboxLimits().model_dump(), **{k: v for k, v in chosen.items() if v is not None}}
        )
    except ValidationError as error:
        problem = error.errors()[0]
        raise ConfigError(
            f"invalid sandbox limit {'.'.join(map(str, problem['loc']))}: {problem['msg']}",
            hint="--timeout is in seconds (> 0); --memory-mib is at least 64",
        ) from None


def ray_options(address: str | None, actors: int | None) -> RayOptions | None:
    """What ``--ray-address``/``--ray-actors`` ask for (``None``: grade in this process).

    Raises:
        ConfigError: ``--ray-actors`` without ``--ray-address``, or below 1.
    """
    from trex_eval.run.spec import RayOptions

    if address is None:
        if actors is not None:
            raise ConfigError(
                "--ray-actors needs --ray-address", hint="e.g. --ray-address auto --ray-actors 4"
            )
        return None
    if actors is not None and actors < 1:
        raise ConfigError("--ray-actors must be at least 1")
    return RayOptions(address=address, actors=actors)
