"""The one warm reward scorer of an lm-eval process: the grade of every trex task's responses.

lm-eval builds every task (loading its documents) before it generates, then filters each task's
responses in turn. Each task's loader names its benchmark here; the first filter starts one
:class:`~trex_eval.reward.scorer.RewardScorer` for all the benchmarks named so far (their folders
hidden from the programs), and later filters reuse it. A benchmark named after it started (a task
built later, by a caller driving lm-eval from Python) restarts it with the union. It is closed when
the interpreter exits.

Settings come from lm-eval's ``--metadata`` (a JSON object every task's loader receives), under
keys of trex-eval's own: ``trex_workers`` (sandbox lanes, default
:data:`~trex_eval.reward.catalogue.ScorerSettings` ``workers``), ``trex_isolation`` (as ``trex-eval
serve --isolation``; default ``auto``: bubblewrap, else refuse to start) and ``trex_data_dir`` (as
``--data-dir``; default: ``$TREX_DATA_DIR``, then the usual search). Other keys (lm-eval puts the
model's arguments there too) are ignored.
"""

from __future__ import annotations

import atexit
import threading
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from trex_eval.benchmarks.data import resolve_data_dir
from trex_eval.errors import ConfigError
from trex_eval.reward import RewardRecord, RewardRequest, RewardScorer, ScorerSettings

METADATA_KEYS = ("trex_workers", "trex_isolation", "trex_data_dir")


@dataclass(frozen=True)
class GraderOptions:
    """What the scorer is started with (see the module docstring); ``data_dir`` is resolved."""

    workers: int
    isolation: str
    data_dir: Path


def options_from_metadata(metadata: Mapping[str, object]) -> GraderOptions:
    """The options lm-eval's ``--metadata`` names.

    Raises:
        ConfigError: ``trex_workers`` is not a positive whole number.
        DataError: no benchmark data at the directory named (or found).
    """
    defaults = ScorerSettings()
    workers = metadata.get("trex_workers", defaults.workers)
    if isinstance(workers, bool) or not isinstance(workers, int | str) or not str(workers).isdigit():
        raise ConfigError(
            f"trex_workers in lm-eval's --metadata is {workers!r}",
            hint="give a positive whole number, e.g. --metadata '{\"trex_workers\": 8}'",
        )
    if int(workers) < 1:
        raise ConfigError("trex_workers in lm-eval's --metadata is 0", hint="give 1 or more sandbox lanes")
    data_dir = metadata.get("trex_data_dir")
    return GraderOptions(
        workers=int(workers),
        isolation=str(metadata.get("trex_isolation", defaults.isolation)),
        data_dir=resolve_data_dir(None if data_dir in (None, "") else Path(str(data_dir))),
    )


class SharedGrader:
    """The process's scorer; see the module docstring. Thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._options: GraderOptions | None = None
        self._wanted: list[str] = []
        self._scorer: RewardScorer | None = None
        self._closing_registered = False

    def configure(self, options: GraderOptions) -> None:
        """Fix the options (the first task's loader does; every later one must agree).

        Raises:
            ConfigError: options other than the first task's.
        """
        with self._lock:
            if self._options is None:
                self._options = options
            elif self._options != options:
                raise ConfigError(
                    f"two trex tasks of one lm-eval process ask for different graders: "
                    f"{self._options} and {options}",
                    hint="give every task the same --metadata (trex_workers, trex_isolation, trex_data_dir)",
                )

    @property
    def options(self) -> GraderOptions:
        """The options in force.

        Raises:
            ConfigError: no trex task was loaded in this process.
        """
        with self._lock:
            if self._options is None:
                raise ConfigError(
                    "no trex task was loaded in this lm-eval process",
                    hint="run the hooks through a trex task config (`--include_path` of "
                    "`python -m trex_eval.integrations.lm_eval --path`)",
                )
            return self._options

    def want(self, benchmark: str) -> None:
        """Grade ``benchmark`` (a task's loader calls this before any response is graded)."""
        with self._lock:
            if benchmark not in self._wanted:
                self._wanted.append(benchmark)

    def score(self, requests: Sequence[RewardRequest]) -> list[RewardRecord]:
        """One record per request, in order, each graded as ``trex-eval run`` grades a sample.

        Raises:
            ConfigError: a request names a benchmark no task asked for.
            SandboxError, DataError, BenchmarkError: the scorer cannot start.
        """
        scorer = self._started()
        # RewardScorer.score refuses a thread that runs an event loop; lm-eval filters on its
        # main thread, which holds none today, but a caller driving lm-eval from async code may.
        with ThreadPoolExecutor(1, thread_name_prefix="trex-lm-eval") as thread:
            return thread.submit(scorer.score, list(requests)).result()

    def _started(self) -> RewardScorer:
        options = self.options
        with self._lock:
            wanted = tuple(self._wanted)
            current = self._scorer
            if current is not None and set(wanted) <= set(current.settings.benchmarks):
                return current
            self._scorer = None
            if current is not None:
                current.close()
            settings = ScorerSettings(
                benchmarks=wanted,
                data_dir=options.data_dir,
                workers=options.workers,
                isolation=options.isolation,
                # An evaluation log, not a reward a policy learns from: its reasons may quote the
                # label (lm-eval logs it as the target anyway), and so equal `trex-eval run`'s.
                show_reference=True,
            )
            scorer = RewardScorer(settings).start()
            self._scorer = scorer
            if not self._closing_registered:
                atexit.register(self.close)
                self._closing_registered = True
            return scorer

    def close(self) -> None:
        """Stop the scorer's sandbox pool (idempotent)."""
        with self._lock:
            scorer, self._scorer = self._scorer, None
        if scorer is not None:
            scorer.close()


GRADER = SharedGrader()
"""The process's grader (lm-eval calls the hooks as plain functions)."""
