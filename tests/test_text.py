"""The text policy (trex_eval.text): what a stored record may hold of a program's or a model's text."""

from __future__ import annotations

import json
import random

import pytest

from trex_eval.records import ChatMessage, ExecStatus, Execution, LinearModel, ModelBinding, WrittenFile
from trex_eval.text import (
    NAME_CHARS,
    REPLACEMENT,
    clean,
    clean_name,
    clean_tree,
    cut_to_bytes,
    json_bytes,
    valid_unicode,
)

_C0 = "".join(chr(code) for code in range(0x20))


def test_surrogates_and_control_characters_become_one_replacement_each() -> None:
    assert clean("a\udcffb\ud800") == f"a{REPLACEMENT}b{REPLACEMENT}"
    cleaned = clean(_C0)
    assert len(cleaned) == 32 and set(cleaned) == {REPLACEMENT, "\t", "\n", "\r"}
    assert cleaned[9] == "\t" and cleaned[10] == "\n" and cleaned[13] == "\r"
    assert clean("\x7f\x85é 😀") == "\x7f\x85é 😀"  # DEL and C1 take one and two bytes as they are
    assert clean("plain") == "plain"


def test_a_models_text_keeps_its_control_characters() -> None:
    # A form feed is whitespace in Python source: a model's code keeps it; lone surrogates go.
    assert valid_unicode("x = 1\x0c\ny = '\udcff'") == f"x = 1\x0c\ny = '{REPLACEMENT}'"


def test_names_are_cut_from_the_middle_keeping_both_ends() -> None:
    name = clean_name("m" * 500 + ".lp")
    assert len(name) == NAME_CHARS and name.startswith("mmm") and name.endswith("m.lp") and "\u2026" in name
    assert clean_name("x[1]") == "x[1]"


def test_cleaned_text_takes_at_most_three_bytes_a_character_in_json() -> None:
    hostile = "".join(chr(code) for code in range(0x20)) + "\udcff\ud800"
    assert json_bytes(clean(hostile)) <= 3 * len(hostile)
    assert json_bytes("\x01" * 10) == 60  # what it was before: six bytes each
    assert json_bytes(clean("\x01" * 10)) == 30


@pytest.mark.parametrize("keep", ["head", "tail"])
def test_cut_to_bytes_never_exceeds_the_budget_and_keeps_nearly_all_of_it(keep: str) -> None:
    rng = random.Random(28)
    alphabet = ['"', "\\", "\n", "\t", "a", "é", "😀", "\ufffd", "z"]
    for _ in range(200):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randrange(0, 300)))
        budget = rng.randrange(0, 400)
        kept = cut_to_bytes(text, budget, keep=keep)
        assert json_bytes(kept) <= budget
        assert text.startswith(kept) if keep == "head" else text.endswith(kept)
        if json_bytes(text) <= budget:
            assert kept == text
        else:  # one more character would not fit (a character takes at most four bytes)
            longer = text[: len(kept) + 1] if keep == "head" else text[len(text) - len(kept) - 1 :]
            assert json_bytes(longer) > budget or json_bytes(kept) >= budget - 4


def test_record_types_clean_on_entry_and_round_trip() -> None:
    execution = Execution(
        status=ExecStatus.RUNTIME_ERROR,
        detail="ValueError: \udcff\x00",
        error_type="E\udcff",
        stdout_tail="\x1b[31mred\x1b[0m",
        stderr_tail="\udcff",
        gurobi="g\udcff",
        written_files=(WrittenFile(name="f\udcff.lp", content="\x00" * 5, sha256="0"),),
        bindings=(ModelBinding(name="v\udcff", library="k\udcff", has_optimize=False, has_objval=False),),
    )
    line = execution.model_dump_json()
    assert "\\u00" not in line and "\\ud" not in line
    assert Execution.model_validate_json(line) == execution
    assert execution.stdout_tail == f"{REPLACEMENT}[31mred{REPLACEMENT}[0m"
    model = LinearModel.model_validate(
        {
            "sense": "min",
            "var_names": ["x\udcff", "y" * 300],
            "obj": [1, 1],
            "lb": [0, 0],
            "ub": [1, 1],
            "vtype": ["C", "C"],
            "row_names": ["r\x00"],
            "row_lower": [0],
            "row_upper": [1],
            "a_row": [0],
            "a_col": [0],
            "a_val": [1],
        }
    )
    assert model.var_names[0] == f"x{REPLACEMENT}" and len(model.var_names[1]) == NAME_CHARS
    assert model.row_names == (f"r{REPLACEMENT}",)
    assert ChatMessage(role="user", content="\udcff").content == REPLACEMENT


def test_clean_tree_cleans_every_string_of_decoded_json() -> None:
    decoded = json.loads('{"a\\udcff": ["\\u0000", 1, {"b": "\\ud800"}], "n": null}')
    assert clean_tree(decoded) == {f"a{REPLACEMENT}": [REPLACEMENT, 1, {"b": REPLACEMENT}], "n": None}
