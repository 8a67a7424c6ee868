"""The functions trex's lm-eval task configs name (``!function``): the documents, the grade of the
responses, and the per-document metrics.

lm-eval calls them in this order for each task:

1. :func:`load_docs` (the config's ``custom_dataset``) with the task's ``dataset_kwargs`` and
   lm-eval's ``--metadata``: the benchmark's documents (:mod:`.docs`) as a ``test`` split;
2. :func:`grade_responses` (the config's one filter, named by the rule) with every document's
   responses at once: each response graded by the reward scorer (:mod:`.grader`), concurrently on
   its sandbox lanes; the filtered response of a document is the list of its responses' records,
   each a JSON text (:class:`~trex_eval.reward.RewardRecord`: verdict, reason, rule, stage,
   status, objective, timings), which ``--log_samples`` writes as the sample's
   ``filtered_resps`` (text, as lm-eval logs every filtered response);
3. :func:`process_results` per document: ``pass@1``, the share of its responses graded
   ``correct`` (1.0 or 0.0 for one response; c/n, the unbiased pass@1, for ``repeats: n``).

Only the ``datasets`` library (an lm-eval dependency) is imported from outside trex-eval, and only
when documents are built.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from trex_eval.errors import ConfigError
from trex_eval.integrations.lm_eval.docs import documents
from trex_eval.integrations.lm_eval.grader import GRADER, options_from_metadata
from trex_eval.records import Verdict
from trex_eval.reward import ProblemKey, RewardRecord, RewardRequest

PASS_AT_1 = "pass@1"


def load_docs(**kwargs: Any) -> Any:
    """The task's dataset: ``{"test": datasets.Dataset}`` of :func:`.docs.documents`.

    ``kwargs`` are lm-eval's ``--metadata`` (and the task's ``metadata``, and the model's
    arguments) followed by the task's ``dataset_kwargs``: ``benchmark`` and ``rule``.

    Raises:
        ConfigError: ``dataset_kwargs`` lacks ``benchmark`` or ``rule``, or names another rule
            than trex-eval grades the benchmark by; bad ``trex_*`` metadata.
        BenchmarkError, DataError: the benchmark or its data cannot be read.
    """
    benchmark, rule = kwargs.get("benchmark"), kwargs.get("rule")
    if not isinstance(benchmark, str) or not isinstance(rule, str):
        raise ConfigError(
            f"a trex lm-eval task needs dataset_kwargs 'benchmark' and 'rule' (got {benchmark!r}, {rule!r})",
            hint="use the shipped configs (`python -m trex_eval.integrations.lm_eval --path`)",
        )
    GRADER.configure(options_from_metadata(kwargs))
    rows = documents(benchmark, rule=rule, data_dir=GRADER.options.data_dir)
    GRADER.want(benchmark)
    import datasets  # lm-eval's own dependency: present wherever lm-eval calls this

    return datasets.DatasetDict({"test": datasets.Dataset.from_list(rows)})


def grade_responses(resps: Sequence[Sequence[object]], docs: Sequence[Mapping[str, Any]]) -> list[list[str]]:
    """Every document's responses graded: per document, one record (a JSON text) per response,
    in order. A response that is not text is graded as an empty answer (``no_code``); lm-eval
    itself stops on a failed request, and answers a ``null`` content with a placeholder text.

    Raises:
        ConfigError: a document that is not a trex document (no ``benchmark``/``problem_id``).
        Exception: the first harness failure of a grade (as ``RewardScorer.score``).
    """
    requests: list[RewardRequest] = []
    counts: list[int] = []
    for doc, answers in zip(docs, resps, strict=True):
        if "benchmark" not in doc or "problem_id" not in doc:
            raise ConfigError(
                f"grade_responses was given a document without benchmark and problem_id: {sorted(doc)[:8]}",
                hint="use it only as the filter of a trex task config",
            )
        key = ProblemKey(benchmark=str(doc["benchmark"]), problem_id=str(doc["problem_id"]))
        counts.append(len(answers))
        requests.extend(
            RewardRequest(problem=key, completion=answer if isinstance(answer, str) else "")
            for answer in answers
        )
    records = GRADER.score(requests) if requests else []
    graded: list[list[str]] = []
    start = 0
    for count in counts:
        graded.append([record.model_dump_json() for record in records[start : start + count]])
        start += count
    return graded


def process_results(doc: Mapping[str, Any], results: Sequence[Sequence[str]]) -> dict[str, float]:
    """``pass@1`` of one document: the share of its responses graded ``correct``.

    Raises:
        ConfigError: the document's responses were not graded (the task lost its trex filter).
    """
    try:
        graded = [RewardRecord.model_validate_json(text) for text in (results[0] if results else ())]
    except (TypeError, ValueError):  # pydantic's ValidationError is a ValueError
        graded = []
    if not graded:
        raise ConfigError(
            f"problem {doc.get('problem_id')!r}: its responses reached process_results ungraded",
            hint="keep the task's filter_list (the trex grade) as the shipped config has it",
        )
    correct = sum(record.verdict is Verdict.CORRECT for record in graded)
    return {PASS_AT_1: correct / len(graded)}
