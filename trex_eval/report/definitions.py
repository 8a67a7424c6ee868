"""What each reported number means, defined once: copied into ``summary.json`` and printed under
every table that shows the number."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from trex_eval.report.intervals import SMALL_N

MACRO_LABEL = "macro mean of per-benchmark pass@1"

DEFINITIONS: Mapping[str, str] = MappingProxyType(
    {
        "pass@1": (
            "mean over the selected problems of the fraction of each problem's samples graded correct; "
            "a missing sample counts as wrong"
        ),
        "ci": (
            f"confidence interval of pass@1 (see 'interval'); below n = {SMALL_N} problems the "
            "Wilson score interval instead (a bootstrap of few problems looks falsely certain), "
            "marked *"
        ),
        "n": "problems selected (the denominator; never the number of records present)",
        "pass@k": (
            "unbiased estimator 1 − C(n−c, k)/C(n, k) per problem (Chen et al. 2021), averaged over problems"
        ),
        "acc@k": "reference T-Rex acc@k: fraction of problems with a correct sample among the first k",
        "maj@k": (
            "fraction of problems whose majority objective value over the first k samples matches the "
            "reference within rtol 1e-4, atol 1e-6; votes are the objectives of solves that ended optimal"
        ),
        "macro": (
            f"{MACRO_LABEL}: each benchmark weighs the same, whatever its size; its interval is a "
            "bootstrap stratified by benchmark, or, when any benchmark has fewer than "
            f"{SMALL_N} problems, the mean of the benchmarks' Wilson bounds, marked *"
        ),
        "api_errors": "samples whose model request failed after retries; counted as failures",
        "environment_failures": (
            "samples lost to the environment (licence error, gurobipy unavailable, a solver library "
            "missing from the install, not run); counted as "
            "failures and flagged, since they say nothing about the model"
        ),
        "missing": (
            "expected samples (problems × samples per problem) the run did not store or holds no "
            "completion for (a replayed file without it); counted as failures, never as API errors"
        ),
        "pass@1@rK": (
            "repair runs (`run --repair N`) only: pass@1 with each sample graded by its last round up to "
            "round K (r0 = the zero-shot answer, equal to pass@1); never mixed into pass@1"
        ),
        "repaired@rK": (
            "share of the problems (sample-averaged, like pass@1) that round K turned from failed to correct"
        ),
        "per_solved": (
            "model requests (every round) and tokens (prompt + completion, as the server reported them) "
            "spent per sample correct after the last round"
        ),
        "repair_by_failure": (
            "per kind of round-0 failure that was fed back: samples, and how many a repair round made correct"
        ),
        "diagnoses": (
            "failing samples per diagnosis category: why each failed, decided mechanically from the "
            "completion, the execution and single edits of the captured model re-solved by the harness "
            "(docs/architecture.md, 'Diagnosis'); never changes a verdict"
        ),
        "transitions": (
            "each sample's label in the baseline and in the candidate (correct, its diagnosis category, "
            "else its verdict), counted over the samples whose label changed"
        ),
        "compat": (
            "the reference harness's summary row (§6.4): Score = acc@k over the selected problems "
            "(k = samples), Code pass = problems whose selected attempt produced an optimal objective "
            "(solver benchmarks) or a model the structure check could read (ORGEval); the selected "
            "attempt is the first correct sample, else the last stored one"
        ),
    }
)
"""What each reported number means; copied into ``summary.json`` and printed under tables."""
