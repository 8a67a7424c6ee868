"""Frozen records exchanged between pipeline stages.

The pipeline is ``Problem -> Prompt -> Completion -> Program -> Execution -> Grade``; every
stage takes and returns these records and nothing else. A :class:`SampleRecord` bundles one
(problem, sample) pair end to end and is what a run directory stores, one JSON line each.

All records are pydantic models with ``frozen=True`` and ``extra="forbid"``: a stage cannot
mutate what it received, and a typo in a field name fails loudly. ``SCHEMA_VERSION`` is written
into every run manifest; readers refuse a newer major version. A field holding text the harness
did not write is typed by :mod:`trex_eval.text` (``Unicode``, ``Text``, ``Name``): cleaned on entry.
"""

from __future__ import annotations

import math
from typing import Annotated, Literal

from pydantic import Field, model_validator

from trex_eval.linear_model import IndicatorConstraint as IndicatorConstraint
from trex_eval.linear_model import LinearModel as LinearModel
from trex_eval.linear_model import QuadraticConstraint as QuadraticConstraint
from trex_eval.linear_model import SOSConstraint as SOSConstraint
from trex_eval.linear_model import VariableType as VariableType
from trex_eval.problem import InstanceLink as InstanceLink
from trex_eval.problem import ObjectiveReference as ObjectiveReference
from trex_eval.problem import Problem as Problem
from trex_eval.problem import Reference as Reference
from trex_eval.problem import StructureReference as StructureReference
from trex_eval.text import Name, Text, Unicode
from trex_eval.vocabulary import GUROBI_POLICY_ALIASES as GUROBI_POLICY_ALIASES

# Re-exported: callers import the shared vocabulary from here.
from trex_eval.vocabulary import SCHEMA_VERSION as SCHEMA_VERSION
from trex_eval.vocabulary import DiagnosisCategory as DiagnosisCategory
from trex_eval.vocabulary import ExecStatus as ExecStatus
from trex_eval.vocabulary import FewShotStrategy as FewShotStrategy
from trex_eval.vocabulary import GraderKind as GraderKind
from trex_eval.vocabulary import GurobiPolicy as GurobiPolicy
from trex_eval.vocabulary import ProtocolName as ProtocolName
from trex_eval.vocabulary import Record as Record
from trex_eval.vocabulary import SolveStatus as SolveStatus
from trex_eval.vocabulary import Verdict as Verdict
from trex_eval.vocabulary import canonical_gurobi_policy as canonical_gurobi_policy

# --------------------------------------------------------------------------- prompts & completions


class ChatMessage(Record):
    role: Literal["system", "user", "assistant"]
    content: Unicode


class Prompt(Record):
    """Rendered chat prompt for one problem.

    ``template_sha256`` hashes the template source(s) used; ``few_shot_ids`` lists the ids of the
    examples inserted (empty for zero-shot).
    """

    problem_id: str
    prompt_set: str
    messages: tuple[ChatMessage, ...]
    template_sha256: str
    few_shot_ids: tuple[str, ...] = ()


class SamplingParams(Record):
    """Generation parameters sent to the backend. Defaults are the T-Rex protocol's."""

    temperature: float = 0.6
    top_p: float = 1.0
    max_tokens: int = 9600
    seed: int | None = 42
    stop: tuple[str, ...] = ()


class BackendSpec(Record):
    """A resolved model preset: which backend, which model, which options.

    ``backend`` is a registry name (``openai``, ``vllm``, ``local``, ``replay``, ``reference``).
    ``model`` is the served model name (API), a path or hub id (vLLM) or a local model key.
    ``options`` holds backend-specific settings (base_url, api_key_env, concurrency,
    tensor_parallel_size, replay file and field names, ...), validated by the backend factory.
    Lives here, not in :mod:`trex_eval.backends.base` (which re-exports it), because the run
    store records it and must not depend on the backends.
    """

    name: str
    backend: str
    model: str = ""
    options: dict[str, str | int | float | bool | None] = Field(default_factory=dict)
    sampling: SamplingParams = SamplingParams()
    description: str = ""


SHM_MIB = 64
"""Size of the private ``/dev/shm`` tmpfs of every job under bubblewrap (MiB)."""

_LEAST_ADDRESS_SPACE_MIB = 256


class SandboxLimits(Record):
    """Limits applied to every program; each breach becomes an :class:`ExecStatus`.

    Lives here, not in :mod:`trex_eval.sandbox.limits` (which re-exports it), because the run
    store records it and must not depend on the sandbox.

    Attributes:
        wall_s: wall-clock seconds from the fork of the program to its exit (default 60). On
            breach the program and everything it started are killed: ``timeout``.
        cpu_s: CPU seconds per process (``RLIMIT_CPU``, rounded up to whole seconds; default 60).
            On breach the kernel kills the process with SIGKILL: ``timeout``.
        memory_mib: memory the program may add on top of the warm worker's (default 2048). Under
            bubblewrap and unshare this includes its private ``/tmp`` and ``/dev/shm``, tmpfs (RAM):
            ``RLIMIT_AS`` = the worker's size at fork + ``memory_mib - disk_mib - SHM_MIB``, so
            address space plus everything the job can store stays under ``memory_mib``; at the
            rlimits level (no private tmpfs) ``RLIMIT_AS`` = size at fork + ``memory_mib``. Must
            leave at least 256 MiB of address space beside ``disk_mib + SHM_MIB`` (a
            ``ValidationError`` otherwise). On breach allocations fail, which Python raises as
            ``MemoryError``: ``memory_limit``; a full tmpfs fails writes with ENOSPC. Keep the
            address space >= 1024 MiB: some BLAS builds hang at start-up below ~512 MiB.
        file_size_mib: largest file the program may write, its output included (``RLIMIT_FSIZE``;
            default 64; never above ``disk_mib``). On breach the write fails with EFBIG: ``output_limit``.
        max_processes: processes the program may have at once, itself included (default 64).
            Enforced by ``RLIMIT_NPROC`` in a user namespace or under a dedicated uid, else by
            polling; on breach ``fork`` fails with EAGAIN (the program usually dies of it:
            ``runtime_error``) or, when polled, the program is killed: ``killed``.
        output_bytes: stdout + stderr bytes kept and allowed (default 1,000,000). On breach the
            program is killed: ``output_limit``.
        tail_chars: characters of stdout and of stderr kept in the record (default 4000).
        disk_mib: size of the private ``/tmp`` (working directory included) under bubblewrap and
            unshare (default 512; at rlimits, free space a job may take from the host's ``/tmp``,
            ``/dev/shm`` and ``/var/tmp`` before it is killed). On breach writes fail with
            ENOSPC (or the job is killed): ``output_limit``.
        record_mib: largest stored sample record, in bytes of its line in ``samples.jsonl``
            (default 16): collected model files beyond their half are dropped (the last one written
            is kept, cut to it), solves beyond the first and last few are dropped, and matrices
            too large for the other half are left out (their solve is "skipped: matrix too
            large"); a sample still over it (repair rounds) is cut where it is stored
            (:mod:`trex_eval.budget`); each cut is noted in ``Execution.detail``.
    """

    wall_s: float = Field(default=60.0, gt=0)
    cpu_s: float = Field(default=60.0, gt=0)
    memory_mib: int = Field(default=2048, ge=64)
    file_size_mib: int = Field(default=64, ge=1)
    max_processes: int = Field(default=64, ge=1)
    output_bytes: int = Field(default=1_000_000, ge=1)
    tail_chars: int = Field(default=4000, ge=0)
    disk_mib: int = Field(default=512, ge=16)
    record_mib: int = Field(default=16, ge=1)

    @model_validator(mode="after")
    def _memory_covers_the_tmpfs(self) -> SandboxLimits:
        if self.memory_mib - self.disk_mib - SHM_MIB < _LEAST_ADDRESS_SPACE_MIB:
            raise ValueError(
                f"memory_mib ({self.memory_mib}) must exceed disk_mib ({self.disk_mib}) + /dev/shm "
                f"({SHM_MIB}) by at least {_LEAST_ADDRESS_SPACE_MIB} MiB: the private /tmp and /dev/shm "
                "are memory and count against it"
            )
        return self

    def address_space_mib(self, *, private_tmpfs: bool) -> int:
        """The ``RLIMIT_AS`` allowance above the worker's size (see ``memory_mib``)."""
        return self.memory_mib - (self.disk_mib + SHM_MIB if private_tmpfs else 0)


class Usage(Record):
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    total_tokens: int | None = None


class Completion(Record):
    """What the backend returned for one (problem, sample) request.

    ``error`` is set (and ``text`` empty) when the request failed after the retry budget;
    such a completion grades as ``api_error``. ``reasoning`` holds a separate reasoning channel
    (``reasoning_content``) when the server returns one. ``latency_s`` is wall seconds for the
    successful attempt; ``attempts`` counts HTTP attempts including retries. ``endpoint`` is the
    API root (no credentials) that produced it, when the backend spoke HTTP (one of several
    replicas: see ``trex_eval.backends.endpoints``).
    """

    problem_id: str
    sample_index: int
    # A server can send a lone UTF-16 surrogate ("\ud800" in JSON), which cannot be written
    # as UTF-8: every text the server sent is Unicode (lone surrogates become U+FFFD).
    text: Unicode
    reasoning: Unicode | None = None
    finish_reason: Unicode | None = None
    usage: Usage = Usage()
    latency_s: float | None = None
    model: Unicode | None = None
    seed: int | None = None
    attempts: int = 1
    error: Unicode | None = None
    endpoint: Unicode | None = None


class Program(Record):
    """Code extracted from a completion.

    ``code`` is ``None`` when nothing usable was found (``reason`` says why).
    ``reason`` names the rule that chose the block, e.g. ``"last ```python fence after </think>"``.
    """

    code: Unicode | None
    extractor: str
    reason: Unicode


# --------------------------------------------------------------------------- execution


class SolveRecord(Record):
    """One solve call observed by the sandbox hooks.

    All but the verification fields are claims of the program's process (where the hooks run):
    ``objective``, the solver's reported objective (``None`` unless a solution exists).
    ``verified_objective``: the harness's own re-solve of ``model``, in a verifier process.
    ``verification``: ``"match"``, ``"mismatch"``, ``"skipped: <why>"``, ``None`` (not yet);
    ``verified_by``: the harness's solver (``highs``, ``gurobipy``, ``scip``; ``certificate``: an LP's
    optimality certificate), read from the store of results when ``verified_from_store`` (:mod:`.verify`).
    """

    library: Name
    status: SolveStatus
    raw_status: Name
    objective: float | None = None
    sense: Literal["min", "max"] | None = None
    num_vars: int | None = None
    num_constraints: int | None = None
    model: LinearModel | None = None
    verified_objective: float | None = None
    verification: Text | None = None
    verified_by: str | None = None
    verified_from_store: bool = False


class WrittenFile(Record):
    """A model file (LP/MPS) the program wrote into its working directory."""

    name: Name
    content: Text
    sha256: str


class ModelBinding(Record):
    """A module-level name that, when the program finished, was bound to a solver model object.

    Recorded for every module-level name holding a model of a hooked library, and always for
    the names ``model`` and ``m`` (the reference harness looks only there).
    ``has_optimize``/``has_objval`` are ``hasattr(obj, "optimize")``/``hasattr(obj, "ObjVal")``
    evaluated exactly as the reference wrapper does; ``status`` and ``objective`` are read from
    the object when available.
    """

    name: Name
    library: Name
    has_optimize: bool
    has_objval: bool
    status: SolveStatus | None = None
    raw_status: Name | None = None
    objective: float | None = None


class Execution(Record):
    """Outcome of one program run in the sandbox.

    ``status`` is the headline (see :class:`ExecStatus`). ``solves`` lists every solve observed,
    in call order; the graders use the last one. ``printed_objective`` is parsed from stdout only
    as a documented fallback for programs whose library the hooks do not cover.
    ``isolation`` names the isolation level in force (``bwrap``, ``unshare``, ``rlimits``).
    ``gurobi`` names the gurobipy implementation the program saw, with its version
    (``"gurobipy 13.0.3"``, ``"gurobipy_highs 1.1"`` for the licence-free layer; ``"compat"`` in
    samples recorded before the layer had its own name), or ``None`` if it never imported
    gurobipy. ``bindings`` and
    ``called_sys_exit`` let the ``trex-compat`` rule reproduce the reference wrapper's model
    discovery (module-level ``model``/``m`` only; ``sys.exit`` loses the result).
    ``wall_s``/``cpu_s`` are seconds; ``max_rss_mib`` is the peak resident set in MiB.
    """

    status: ExecStatus
    detail: Text = ""
    error_type: Name | None = None
    exit_code: int | None = None
    signal: int | None = None
    solves: tuple[SolveRecord, ...] = ()
    written_files: tuple[WrittenFile, ...] = ()
    printed_objective: float | None = None
    stdout_tail: Text = ""
    stderr_tail: Text = ""
    wall_s: float = 0.0
    cpu_s: float | None = None
    max_rss_mib: float | None = None
    isolation: str = ""
    gurobi: Name | None = None
    bindings: tuple[ModelBinding, ...] = ()
    called_sys_exit: bool = False

    @property
    def last_solve(self) -> SolveRecord | None:
        return self.solves[-1] if self.solves else None


# --------------------------------------------------------------------------- grading


class ObjectiveEvidence(Record):
    """Why an objective rule decided: predicted vs reference and the tolerances applied.

    ``predicted`` is the value the rule graded: the harness's own re-solve of the captured model when it
    matched the claim (``source="verified"``; ``"certified"``: an LP's optimality certificate), else the
    program's claim (``hook``: the hooked solve; ``printed``: stdout; ``binding:<name>``: a module-level
    model), which can then pass only as ``unverified`` or under a rule that trusts claims. ``claimed`` is the
    program's own number, kept beside it (``None`` in records graded before objective rules graded the
    harness's value, whose ``predicted`` is the claim); ``verified_objective`` is the harness's re-solve, when
    one ran (``stored``: read from :mod:`trex_eval.verify.store`, not solved again for this grade). ``digits``
    is set by rounding rules (both values rounded to that many decimals first). A ``-negated`` source
    (``verified-negated``, ``certified-negated``, ``hook-negated``) says that ``predicted`` is the negation of
    that value: a minimise-only solver's optimum whose sign the program or the benchmark gave
    (:mod:`trex_eval.grading.objective.sign`).
    """

    kind: Literal["objective"] = "objective"
    predicted: float | None
    predicted_status: SolveStatus | None
    reference: float | None
    reference_status: SolveStatus
    abs_error: float | None = None
    rel_error: float | None = None
    atol: float | None = None
    rtol: float | None = None
    digits: int | None = None
    verified_objective: float | None = None
    source: str = "hook"
    claimed: float | None = None
    stored: bool = False


class StructureCheck(Record):
    name: str
    passed: bool
    detail: Text = ""


class StructureEvidence(Record):
    """Why a structural-equivalence variant decided: the checks run in order, first failure last."""

    kind: Literal["structure"] = "structure"
    checks: tuple[StructureCheck, ...]
    generated_from: str = ""


Evidence = Annotated[ObjectiveEvidence | StructureEvidence, Field(discriminator="kind")]


class Diagnosis(Record):
    """Why a sample did not pass (:mod:`trex_eval.grading.diagnosis`): the ``category``, a
    ``detail`` line (which constraint, which scale, why unexplained) and numeric ``evidence``
    (the harness's value, the edited model's value, seconds spent). Never changes a verdict."""

    category: DiagnosisCategory
    detail: Text = ""
    evidence: dict[str, float] = Field(default_factory=dict)


class Grade(Record):
    """Verdict for one sample, the rule that decided it (``name@version``) and the evidence;
    ``diagnosis`` says why a failing sample failed (``None``: passed, not diagnosed, or stored
    before diagnoses existed)."""

    verdict: Verdict
    rule: str
    reason: Text
    evidence: Evidence | None = None
    diagnosis: Diagnosis | None = None

    @property
    def passed(self) -> bool:
        return self.verdict is Verdict.CORRECT


class RepairRound(Record):
    """One repair round of a sample (``trex-eval run --repair N``): the feedback the harness sent
    after round ``round - 1`` and what the model answered to it, extracted, run and graded.

    ``round`` counts from 1 (round 0 is the sample's own ``completion`` ... ``grade``);
    ``failure`` names the outcome of the previous round that was fed back (a
    :data:`trex_eval.run.repair.FailureKind`: ``syntax_error``, ``no_solve``, ``infeasible``, ...);
    ``feedback`` is the user message sent, exactly as rendered from ``prompts/repair.j2``. The
    conversation of round ``k`` is the sample's prompt followed, for each round ``j < k``, by the
    answer of round ``j`` (assistant) and the feedback of round ``j + 1`` (user).
    """

    round: int = Field(ge=1)
    failure: str
    feedback: Unicode
    completion: Completion
    program: Program
    execution: Execution
    grade: Grade


class SampleRecord(Record):
    """One (problem, sample) pair end to end: what a run directory stores per line.

    ``completion`` ... ``grade`` are round 0, the zero-shot answer: every pass@1 (and every score
    of a run without repair) reads ``grade``. ``rounds`` holds the repair rounds in order (empty
    without ``--repair``, or when round 0 needed none); the sample's verdict after round ``k`` is
    that of its last round ``<= k`` (:meth:`grade_after`).
    """

    benchmark: str
    problem_id: str
    sample_index: int
    prompt: Prompt
    completion: Completion
    program: Program
    execution: Execution
    grade: Grade
    rounds: tuple[RepairRound, ...] = ()

    @property
    def key(self) -> tuple[str, str, int]:
        return (self.benchmark, self.problem_id, self.sample_index)

    def grade_after(self, round_index: int) -> Grade:
        """The sample's grade once round ``round_index`` is done: its last round up to that one
        (round 0's grade for ``0``; the final round's for any index past the last)."""
        taken = [r.grade for r in self.rounds if r.round <= round_index]
        return taken[-1] if taken else self.grade


def finite_or_none(value: float | None) -> float | None:
    """Return ``value`` if it is a finite float, else ``None`` (NaN and +/-inf become ``None``)."""
    if value is None or not math.isfinite(value):
        return None
    return float(value)
