"""Extraction: the default extractor's precedence, and every documented quirk of the two
reference-harness extractors (reference-harness §3.1, §3.2). Expected code is written by hand
from the spec's rules."""

from __future__ import annotations

import pytest

from trex_eval.errors import ConfigError
from trex_eval.extract import EXTRACTORS, extract
from trex_eval.records import Completion

PROGRAM = "import gurobipy as gp\nm = gp.Model()\nm.optimize()\n"
DRAFT = "import gurobipy as gp\n# draft, longer than the final program\nm = gp.Model('draft')\n"


def fence(code: str, tag: str = "python") -> str:
    return f"```{tag}\n{code}```"


def completion(text: str, *, reasoning: str | None = None, error: str | None = None) -> Completion:
    return Completion(problem_id="0", sample_index=0, text=text, reasoning=reasoning, error=error)


# --------------------------------------------------------------------------- default extractor


class TestDefaultReasoning:
    def test_drafts_inside_think_are_ignored(self) -> None:
        text = f"<think>\n{fence(DRAFT)}\n</think>\nFinal answer:\n{fence(PROGRAM)}\n"
        program = extract(text)
        assert program.code == PROGRAM
        assert program.reason == "the only ```python fence after </think>"
        assert program.extractor == "default"

    def test_orphan_closing_tag_drops_everything_before_it(self) -> None:
        # Some servers strip the opening <think> but leave </think>.
        text = f"Let me draft.\n{fence(DRAFT)}\nHmm.</think>\n{fence(PROGRAM)}"
        assert extract(text).code == PROGRAM

    def test_redacted_reasoning_tags_are_reasoning_too(self) -> None:
        text = f"<redacted_reasoning>{fence(PROGRAM)}</redacted_reasoning>no code here"
        assert extract(text).code is None

    def test_unclosed_think_means_truncated_reasoning(self) -> None:
        program = extract(f"<think>\n{fence(PROGRAM)}\nstill thinking")
        assert program.code is None
        assert "never closed" in program.reason

    def test_code_only_inside_think_is_reported(self) -> None:
        program = extract(f"<think>{fence(PROGRAM)}</think>The answer is 8.")
        assert program.code is None
        assert "only inside <think>" in program.reason

    def test_never_takes_code_from_the_reasoning_channel(self) -> None:
        assert extract(completion("The answer is 8.", reasoning=fence(PROGRAM))).code is None
        assert extract(completion(fence(PROGRAM), reasoning=fence(DRAFT))).code == PROGRAM

    def test_text_between_two_think_blocks_is_answer(self) -> None:
        text = f"<think>a</think>\n{fence(PROGRAM)}\n<think>{fence(DRAFT)}</think>\ndone"
        assert extract(text).code == PROGRAM


class TestDefaultBlocks:
    @pytest.mark.parametrize("tag", ["python", "py", "Python", "PYTHON", "python3", "py3", ""])
    def test_python_tags_and_untagged_fences(self, tag: str) -> None:
        assert extract(f"Here:\n{fence(PROGRAM, tag)}\n").code == PROGRAM

    @pytest.mark.parametrize("tag", ["bash", "json", "lp", "text"])
    def test_other_languages_are_not_code(self, tag: str) -> None:
        program = extract(f"{fence(PROGRAM, tag)}\n")
        assert program.code is None

    def test_final_complete_program_wins_over_earlier_drafts(self) -> None:
        text = f"First try:\n{fence(DRAFT)}\nBetter:\n{fence(PROGRAM)}\n"
        program = extract(text)
        assert program.code == PROGRAM
        assert program.reason == "last complete ```python fence (2 code blocks in the answer)"

    def test_printed_output_after_the_program_is_not_chosen(self) -> None:
        text = f"{fence(PROGRAM)}\nOutput:\n```\nOptimal objective 8.000000000e+00\n```\n"
        assert extract(text).code == PROGRAM

    def test_snippet_after_the_program_does_not_replace_it(self) -> None:
        snippet = fence("print(m.ObjVal)\n")
        text = f"{fence(PROGRAM)}\nThen read the value with\n{snippet}\n"
        assert extract(text).code == PROGRAM

    def test_fragment_is_taken_when_nothing_imports(self) -> None:
        program = extract(fence("print(1)\n") + "\nor\n" + fence("print(2)\n"))
        assert program.code == "print(2)\n"
        assert "imports nothing" in program.reason

    def test_a_single_python_block_is_taken_without_judging_it(self) -> None:
        # Quality only matters to choose between blocks; the sandbox reports a syntax error.
        program = extract(fence("print(1)\n"))
        assert (program.code, program.reason) == ("print(1)\n", "the only ```python fence")

    def test_block_that_does_not_parse_is_still_the_models_code(self) -> None:
        broken = "import gurobipy as gp\nm = gp.Model(\n"
        program = extract(fence(broken + "x = (\n") + "\nfinal:\n" + fence(broken))
        assert program.code == broken
        assert "does not parse" in program.reason

    def test_unterminated_final_fence_is_taken_when_it_parses(self) -> None:
        program = extract(f"Code:\n```python\n{PROGRAM}")
        assert program.code == PROGRAM
        assert "unterminated" in program.reason

    def test_unterminated_fence_that_does_not_parse_is_no_code(self) -> None:
        program = extract("```python\nimport gurobipy as gp\nm = gp.Model(\n")
        assert program.code is None
        assert "unterminated" in program.reason

    def test_complete_program_beats_a_truncated_rewrite(self) -> None:
        # The cut-off rewrite happens to parse ("m = gp.Mo"), but a closed program is preferred.
        text = f"{fence(PROGRAM)}\nA cleaner version:\n```python\nimport gurobipy as gp\nm = gp.Mo"
        assert extract(text).code == PROGRAM

    def test_python_tag_without_fence(self) -> None:
        program = extract(f"<python>\n{PROGRAM}</python>")
        assert program.code == PROGRAM
        assert program.reason == "the only <python> tag"

    def test_python_tag_around_a_fence_yields_the_fence_body(self) -> None:
        assert extract(f"<python>\n{fence(PROGRAM)}\n</python>").code == PROGRAM

    def test_raw_program_without_fences(self) -> None:
        program = extract(PROGRAM)
        assert program.code == PROGRAM
        assert "no fences" in program.reason

    def test_prose_only_is_no_code(self) -> None:
        program = extract("The optimal objective value is 8.")
        assert program.code is None
        assert program.reason.startswith("no_code")

    def test_crlf_line_endings(self) -> None:
        assert extract(fence(PROGRAM).replace("\n", "\r\n")).code == PROGRAM

    def test_indented_fence_in_a_list_is_dedented(self) -> None:
        indented = "".join(f"   {line}\n" for line in PROGRAM.splitlines())
        assert extract(f"1. Run this:\n   ```python\n{indented}   ```\n").code == PROGRAM

    def test_longer_fence_keeps_inner_triple_backticks(self) -> None:
        code = 'import json\nDOC = """\n```\nexample\n```\n"""\n'
        assert extract(f"````python\n{code}````\n").code == code


class TestExtractApi:
    def test_api_error_has_no_code(self) -> None:
        program = extract(completion("", error="HTTP 500 after 3 attempts"))
        assert program.code is None
        assert "HTTP 500" in program.reason

    def test_unknown_extractor(self) -> None:
        with pytest.raises(ConfigError, match="unknown extractor"):
            extract(PROGRAM, extractor="longest")

    def test_registry_names(self) -> None:
        assert set(EXTRACTORS) == {
            "default",
            "trex-compat-solver",
            "trex-compat-orgeval",
            "raw",
            "orlm-first-python",
        }

    def test_empty_text_is_no_code_for_every_extractor(self) -> None:
        for name in EXTRACTORS:
            assert extract("   \n", extractor=name).code is None


# --------------------------------------------------------------------------- §3.1 solver extractor


def solver(text: str) -> str | None:
    return extract(text, extractor="trex-compat-solver").code


class TestCompatSolver:
    def test_longest_python_fence_wins_not_the_last(self) -> None:
        assert solver(f"{fence(DRAFT)}\n{fence(PROGRAM)}") == DRAFT.strip()

    def test_longer_draft_inside_think_beats_the_final_block(self) -> None:
        text = f"<think>{fence(DRAFT)}</think>{fence(PROGRAM)}"
        program = extract(text, extractor="trex-compat-solver")
        assert program.code == DRAFT.strip()
        assert program.reason.startswith("§3.1 rule 1")

    def test_py_fence_keeps_its_tag_as_first_line(self) -> None:
        assert solver(fence(PROGRAM, "py")) == "py\n" + PROGRAM.strip()

    def test_capitalised_python_fence_keeps_its_tag(self) -> None:
        # Rule 1 is case-sensitive, so ```Python falls through to the any-fence rule.
        assert solver(fence(PROGRAM, "Python")) == "Python\n" + PROGRAM.strip()

    def test_python3_fence_leaves_a_stray_3(self) -> None:
        # ```python\s* consumes "```python", the body starts at "3".
        assert solver(fence(PROGRAM, "python3")) == "3\n" + PROGRAM.strip()

    def test_any_fence_prefers_blocks_over_50_stripped_chars(self) -> None:
        padded = "x = 1" + "\n" * 80  # longest raw match, but only 5 characters once stripped
        long_code = "y = 2  # " + "a" * 50
        assert solver(f"```\n{padded}```\n```\n{long_code}\n```") == long_code

    def test_any_fence_falls_back_to_the_longest_short_block(self) -> None:
        assert solver("```\nx = 1\n```\n```\nyy = 22\n```") == "yy = 22"

    def test_any_fence_beats_a_python_tag(self) -> None:
        text = f'<python>\n{PROGRAM}</python>\n```json\n{{"a": 1}}\n```'
        assert solver(text) == 'json\n{"a": 1}'

    def test_python_tag_body_when_no_fence(self) -> None:
        program = extract(f"<PYTHON>\n\n{PROGRAM}\n</PYTHON>", extractor="trex-compat-solver")
        assert program.code == PROGRAM.strip()
        assert program.reason == "§3.1 rule 3: body of the longest <python> tag"

    def test_text_after_the_last_think_end(self) -> None:
        text = f"<think>a</think>b</think>\n{PROGRAM}"
        assert solver(text) == PROGRAM.strip()

    def test_whole_response_otherwise(self) -> None:
        program = extract(PROGRAM, extractor="trex-compat-solver")
        assert program.code == PROGRAM
        assert program.reason == "§3.1 rule 6: whole response"


# --------------------------------------------------------------------------- §3.2 ORGEval extractor


def orgeval(text: str) -> str | None:
    return extract(text, extractor="trex-compat-orgeval").code


class TestCompatOrgeval:
    def test_prefers_the_block_after_think_over_a_longer_draft(self) -> None:
        assert orgeval(f"<think>{fence(DRAFT)}</think>{fence(PROGRAM)}") == PROGRAM.strip()

    def test_longest_python_fence_without_think(self) -> None:
        assert orgeval(f"{fence(PROGRAM)}\n{fence(DRAFT)}") == DRAFT.strip()

    def test_python_draft_in_think_beats_an_untagged_fence_after_it(self) -> None:
        # ```python is searched in (after, whole) before any untagged fence is considered.
        text = f"<think>{fence(DRAFT)}</think>{fence(PROGRAM, '')}"
        assert orgeval(text) == DRAFT.strip()

    def test_py_fence_keeps_its_tag_as_first_line(self) -> None:
        assert orgeval(f"<think>x</think>{fence(PROGRAM, 'py')}") == "py\n" + PROGRAM.strip()

    def test_text_after_think_without_fences(self) -> None:
        assert orgeval(f"<think>x</think>\n\n{PROGRAM}\n") == PROGRAM.strip()

    def test_whole_response_without_marker(self) -> None:
        assert orgeval(PROGRAM) == PROGRAM

    def test_second_pass_cuts_code_at_a_think_end_literal(self) -> None:
        # Pass 1 returns the fence body; pass 2 sees "</think>" in it and keeps what follows.
        text = "```python\nprint('</think>')\nx = 1\n```"
        program = extract(text, extractor="trex-compat-orgeval")
        assert program.code == "')\nx = 1"
        assert "second pass" in program.reason


class TestUnclosedThinkFallback:
    """Issue 16: a model that ends (finish_reason stop) without closing <think> but wrote its final
    program inside keeps that program; a truncated one (length) does not."""

    SKETCH = "x = 1\n"
    TEXT = f"<think>\nLet me model it.\n{fence(SKETCH)}\nSo:\n{fence(PROGRAM)}\n"

    def test_stop_takes_the_last_complete_program_and_says_why(self) -> None:
        stopped = Completion(problem_id="0", sample_index=0, text=self.TEXT, finish_reason="stop")
        program = extract(stopped)
        assert program.code == PROGRAM
        assert (
            "inside a <think> that is never closed" in program.reason
            and "finish_reason stop" in program.reason
        )

    @pytest.mark.parametrize("finish_reason", ["length", None])
    def test_other_finish_reasons_stay_no_code(self, finish_reason: str | None) -> None:
        cut = Completion(problem_id="0", sample_index=0, text=self.TEXT, finish_reason=finish_reason)
        program = extract(cut)
        assert program.code is None and "<think> is never closed" in program.reason

    def test_the_answer_outside_the_reasoning_still_wins(self) -> None:
        text = f"{fence(PROGRAM)}\n<think>\n{fence(DRAFT)}\n"
        program = extract(Completion(problem_id="0", sample_index=0, text=text, finish_reason="stop"))
        assert program.code == PROGRAM and "inside a <think>" not in program.reason

    def test_the_reproduced_protocol_is_untouched(self) -> None:
        stopped = Completion(
            problem_id="0", sample_index=0, text="<think>\n" + fence(PROGRAM), finish_reason="stop"
        )
        assert "never closed" not in extract(stopped, extractor="trex-compat-solver").reason
