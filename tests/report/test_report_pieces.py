"""Outcome classes, published scores and run loading: the small pieces every report relies on."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from records_factory import entry, manifest, sample

from trex_eval.errors import ConfigError
from trex_eval.records import ObjectiveEvidence, SolveStatus, Verdict
from trex_eval.report import Outcome, arrange, classify, load_published, load_runs, shipped_published_csv
from trex_eval.report.runs import natural_key
from trex_eval.report.summary import distinct_labels, identify

REPO = Path(__file__).resolve().parents[2]
HEADER = "model,benchmark,score_pct,metric,source,url,note\n"
RULE_HEADER = "model,benchmark,score_pct,metric,rule,source,url,note\n"


class TestOutcomes:
    def test_every_verdict_has_exactly_one_class(self) -> None:
        for verdict in Verdict:
            outcome = classify(sample("b", "1", verdict=verdict))
            assert isinstance(outcome, Outcome) and outcome.label
        assert classify(None) is Outcome.MISSING

    @pytest.mark.parametrize(
        ("verdict", "outcome"),
        [
            (Verdict.LICENCE_ERROR, Outcome.ENVIRONMENT),
            (Verdict.NEEDS_GUROBI, Outcome.ENVIRONMENT),
            (Verdict.NOT_RUN, Outcome.ENVIRONMENT),
            (Verdict.TIMEOUT, Outcome.LIMIT),
            (Verdict.MEMORY_LIMIT, Outcome.LIMIT),
            (Verdict.SYNTAX_ERROR, Outcome.SYNTAX),
            (Verdict.API_ERROR, Outcome.API_ERROR),
        ],
    )
    def test_grouping(self, verdict: Verdict, outcome: Outcome) -> None:
        assert classify(sample("b", "1", verdict=verdict)) is outcome
        # the environment class is exactly the verdicts records.py calls environment failures
        assert (outcome is Outcome.ENVIRONMENT) == verdict.is_environment_failure

    @pytest.mark.parametrize(
        ("status", "outcome"),
        [
            (SolveStatus.INFEASIBLE, Outcome.INFEASIBLE),
            (SolveStatus.UNBOUNDED, Outcome.INFEASIBLE),
            (SolveStatus.INF_OR_UNBD, Outcome.INFEASIBLE),
            (SolveStatus.OPTIMAL, Outcome.WRONG),
            (SolveStatus.TIME_LIMIT, Outcome.WRONG),
        ],
    )
    def test_a_lost_optimum_is_its_own_class(self, status: SolveStatus, outcome: Outcome) -> None:
        assert classify(sample("b", "1", verdict=Verdict.WRONG, predicted=3.0, status=status)) is outcome

    def test_an_infeasible_reference_matched_wrongly_is_just_wrong(self) -> None:
        record = sample("b", "1", verdict=Verdict.WRONG, predicted=None, status=SolveStatus.UNBOUNDED)
        evidence = ObjectiveEvidence(
            predicted=None,
            predicted_status=SolveStatus.UNBOUNDED,
            reference=None,
            reference_status=SolveStatus.INFEASIBLE,
        )
        record = record.model_copy(update={"grade": record.grade.model_copy(update={"evidence": evidence})})
        assert classify(record) is Outcome.WRONG


class TestPublished:
    def test_the_committed_file(self) -> None:
        assert shipped_published_csv() == REPO / "results" / "published" / "published.csv"
        scores = {
            (score.model, score.benchmark): score
            for score in load_published(REPO / "results" / "published" / "published.csv")
        }
        # the T-Rex README's figures (reference-harness §6.4): 71.81, and 3.98 / 11.27 points below it
        assert scores[("DeepSeek-V4-Flash-OR", "average")].score_pct == 71.81
        assert scores[("GPT-5.4-Mini", "average")].score_pct == pytest.approx(71.81 - 3.98)
        assert scores[("DeepSeek-V4-Flash", "average")].score_pct == pytest.approx(71.81 - 11.27)
        for score in scores.values():
            assert score.metric and score.note
        # the T-Rex rows cite the commit the data are pinned at (the field's rows: tests/benchmarks)
        trex = [score for score in scores.values() if score.source.startswith("SLAI-T-Rex")]
        assert len(trex) == 5
        pinned = "https://github.com/SLAI-AITP/SLAI-T-Rex/blob/8d6487e"
        assert all(score.url.startswith(pinned) for score in trex)
        assert all("not stated" in score.note for score in trex if score.benchmark == "average")

    def test_the_cpt_sft_orgeval_figure_is_what_the_reference_programs_score(self) -> None:
        """The note beside 59.39 states a measured fact: the committed audit under the reference
        grader holds 234 of 394 B4O-ORGEval references correct, 59.39 % to two decimals."""
        audit = pd.read_csv(REPO / "results" / "published" / "audit-trex-compat.csv")
        orgeval = audit[audit["benchmark"] == "b4o-orgeval"]
        correct = int((orgeval["verdict"] == "correct").sum())
        assert (correct, len(orgeval)) == (234, 394)
        scores = {
            (s.model, s.benchmark): s
            for s in load_published(REPO / "results" / "published" / "published.csv")
        }
        cpt = scores[("DeepSeek-V4-Flash CPT+SFT", "b4o-orgeval")]
        assert cpt.score_pct == round(100 * correct / len(orgeval), 2)
        assert "234/394" in cpt.note and "--protocol trex-compat" in cpt.note

    @pytest.mark.parametrize(
        ("text", "message"),
        [
            ("model,benchmark,score\n", "unexpected header"),
            (HEADER + "m,b,101,metric,src,,\n", "less than or equal to 100"),
            (HEADER + "m,b,high,metric,src,,\n", "is not a number"),
            (HEADER + "m,b,nan,metric,src,,\n", "not finite"),
            (HEADER + "m,b,50,metric\n", "expected 7 fields"),
            (RULE_HEADER + "m,b,50,metric,nosuchrule,src,,\n", "unknown grading rule"),
            (HEADER + "m,b,50,metric,src,https://github.com/o/r/blob/main/x.md,\n", "not pinned to a commit"),
            (HEADER + ",b,50,metric,src,,\n", "model"),
        ],
    )
    def test_malformed_files_name_the_line(self, tmp_path: Path, text: str, message: str) -> None:
        path = tmp_path / "published.csv"
        path.write_text(text, encoding="utf-8")
        with pytest.raises(ConfigError, match=message) as error:
            load_published(path)
        assert str(path) in str(error.value)

    def test_missing_file(self, tmp_path: Path) -> None:
        with pytest.raises(ConfigError, match="cannot read"):
            load_published(tmp_path / "absent.csv")


class TestRuns:
    def test_natural_order(self) -> None:
        ids = ["BENCH4OPT_10", "BENCH4OPT_2", "10", "9", "a", "BENCH4OPT_1"]
        assert sorted(ids, key=natural_key) == ["9", "10", "BENCH4OPT_1", "BENCH4OPT_2", "BENCH4OPT_10", "a"]

    def test_the_same_run_twice_is_refused(self, reference_dir: Path) -> None:
        with pytest.raises(ConfigError, match="given twice"):
            load_runs([reference_dir, reference_dir])


class TestLabels:
    def _identity(
        self, run_id: str, *, model: str = "m", served: str | None = None, prompt_set: str = "t-rex"
    ):
        return identify(
            arrange(
                manifest(
                    run_id, [entry("toy", problems=1)], model=model, served=served, prompt_set=prompt_set
                ),
                [],
            )
        )

    def test_labels_stay_short_when_runs_differ(self) -> None:
        runs = [self._identity("a", model="base"), self._identity("b", model="sft", prompt_set="pulp")]
        assert distinct_labels(runs) == ["base", "sft · prompts pulp"]

    def test_same_preset_told_apart_by_served_model_then_run_id(self) -> None:
        runs = [
            self._identity("r1", model="local", served="ckpt/base"),
            self._identity("r2", model="local", served="ckpt/sft"),
            self._identity("r3", model="other", served="x"),
            self._identity("r4", model="other", served="x"),
        ]
        assert distinct_labels(runs) == ["local (ckpt/base)", "local (ckpt/sft)", "other (r3)", "other (r4)"]
