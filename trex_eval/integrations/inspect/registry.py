"""inspect_ai's entry point into trex-eval (``[project.entry-points.inspect_ai] trex_eval``).

inspect_ai imports this module the first time a name in the ``trex_eval/`` namespace is asked
for (``inspect eval trex_eval/nl4opt``, ``inspect list tasks``). It registers:

* ``trex_eval/<benchmark>``: one task per shipped benchmark (``trex_eval/nl4opt``,
  ``trex_eval/industryor@optimind``, ...);
* ``trex_eval/<suite>``: one task per suite (``t-rex``, ``sirl``, ``orlm``, ``all``), its dataset
  every member's problems, its accuracy grouped by benchmark;
* ``trex_eval/benchmark``: any benchmarks, suites or benchmark YAML files
  (``-T benchmarks=my.yaml``).

Every task takes ``trex-eval run``'s flags as task parameters (``-T prompt_set=...``, see
:func:`_parameters` and docs/inspect.md). Nothing is loaded until a task is created.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from inspect_ai import Task, task

from trex_eval.benchmarks.loading import shipped_spec_paths
from trex_eval.benchmarks.suites import SUITE_TITLES, suites
from trex_eval.errors import ConfigError
from trex_eval.integrations.inspect.tasks import build_task, task_settings

_PARAMETERS = """
Task parameters (``-T name=value``), as ``trex-eval run`` flags: ``prompt_set`` (default
``t-rex``), ``protocol`` (``default``), ``rule`` (a rule spec, or a list: overrides the rule of
the benchmarks of its kind), ``extractor``, ``limit`` (first n problems of each benchmark),
``few_shot`` (k examples from the reference programs), ``samples`` (completions per problem:
the task's epochs; pass@k over them), ``seed`` (42: sample i is sent ``seed + i``; ``null``: none),
``diagnose`` (true: say why each failing sample failed), ``workers`` (2 sandbox lanes),
``isolation`` (``auto``), ``data_dir`` (the T-Rex data; default ``TREX_DATA_DIR``).
"""


def _task_function(benchmarks: Sequence[str] | None, name: str, title: str) -> Callable[..., Task]:
    """A task function over ``benchmarks`` (None: the ``benchmarks`` parameter names them)."""
    fixed = None if benchmarks is None else tuple(benchmarks)

    def trex_task(
        benchmarks: str | list[str] | None = None,
        prompt_set: str = "t-rex",
        protocol: str = "default",
        rule: str | list[str] | None = None,
        extractor: str | None = None,
        limit: int | None = None,
        few_shot: int = 0,
        samples: int = 1,
        seed: int | None = 42,
        diagnose: bool = True,
        workers: int = 2,
        isolation: str = "auto",
        data_dir: str | None = None,
    ) -> Task:
        chosen = _chosen(fixed, benchmarks, name)
        settings = task_settings(
            chosen,
            prompt_set=prompt_set,
            protocol=protocol,
            rule=rule,
            extractor=extractor,
            limit=limit,
            few_shot=few_shot,
            samples=samples,
            seed=seed,
            data_dir=data_dir,
        )
        return build_task(settings, name=name, diagnose=diagnose, workers=workers, isolation=isolation)

    trex_task.__name__ = trex_task.__qualname__ = name
    trex_task.__doc__ = f"trex-eval: {title}.\n{_PARAMETERS}"
    return task(name=name)(trex_task)


def _chosen(fixed: tuple[str, ...] | None, benchmarks: str | list[str] | None, name: str) -> tuple[str, ...]:
    """The benchmarks a task runs: its own, or (``trex_eval/benchmark``) the parameter's.

    Raises:
        ConfigError: a parameter given to a task with benchmarks of its own, or none to one without.
    """
    if fixed is not None:
        if benchmarks:
            raise ConfigError(
                f"task trex_eval/{name} runs {', '.join(fixed)}; it takes no benchmarks parameter",
                hint="drop `-T benchmarks=...`, or run "
                f"`inspect eval trex_eval/benchmark -T benchmarks={benchmarks}`",
            )
        return fixed
    if not benchmarks:
        raise ConfigError(
            f"task trex_eval/{name} needs the benchmarks to run",
            hint=f"`inspect eval trex_eval/{name} -T benchmarks=nl4opt` (names, suites or YAML paths; "
            "a list for several)",
        )
    return (benchmarks,) if isinstance(benchmarks, str) else tuple(benchmarks)


def register() -> dict[str, Callable[..., Task]]:
    """Register every task (see the module docstring); returns them by name."""
    tasks = {name: _task_function((name,), name, f"benchmark {name}") for name in shipped_spec_paths()}
    for suite, members in suites().items():
        title = SUITE_TITLES.get(suite, f"suite {suite}")
        tasks[suite] = _task_function(members, suite, f"{title} ({', '.join(members)})")
    tasks["benchmark"] = _task_function(None, "benchmark", "the benchmarks named by -T benchmarks=...")
    return tasks


TASKS = register()
