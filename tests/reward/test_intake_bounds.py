"""What a request body costs the reward server before it is parsed is bounded by its bytes, not by
what the parser would build of them:

* the nesting bound is counted on the body's bytes, which is exact for UTF-8 only, so a body in
  UTF-16 or UTF-32 (which ``json.loads`` of bytes would take) is a 400 before it is parsed, never
  a RecursionError (a 500, logged as a harness failure);
* the number of values is bounded too (:data:`~trex_eval.reward.intake.MAX_JSON_VALUES`): ``[],``
  is three bytes and ~70 bytes of objects once parsed, on the event loop.

The pure checks run on :func:`~trex_eval.reward.intake.json_object`; the last test speaks to a
real ``trex-eval serve`` over loopback."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.reward.test_server import Server, _start, _stop
from trex_eval.reward.intake import MAX_JSON_DEPTH, MAX_JSON_VALUES, BadBody, json_object

DEEP = "[" * 5000 + "]" * 5000
HIDDEN = '{"requests": [], "a": "\\"", "b": ' + DEEP + ', "c": ""}'
"""Deep nesting after an escaped quote: in UTF-16 the byte count cannot tell ``\\"`` from a quote."""
MANY = b'{"requests": [' + b"[]," * MAX_JSON_VALUES + b"[]]}"


@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-le", "utf-16-be", "utf-32", "utf-32-le"])
def test_bodies_not_in_utf8_are_400s_however_they_nest(encoding: str) -> None:
    with pytest.raises(BadBody, match=r"not UTF-8|not JSON"):
        json_object(HIDDEN.encode(encoding))
    with pytest.raises(BadBody, match=r"not UTF-8|not JSON"):
        json_object(json.dumps({"requests": []}).encode(encoding))


def test_deep_nesting_after_an_escaped_quote_is_the_depth_400_in_utf8() -> None:
    with pytest.raises(BadBody, match=f"more than {MAX_JSON_DEPTH} deep"):
        json_object(HIDDEN.encode())


def test_utf8_bodies_still_parse_with_a_bom_escapes_and_lone_surrogate_escapes() -> None:
    body = {"requests": [{"problem": {"value": 1.5}, "completion": 'é "[[" \\ \ud800'}]}
    assert json_object(json.dumps(body, ensure_ascii=False).encode("utf-8", "surrogatepass")) == body
    assert json_object(b"\xef\xbb\xbf" + json.dumps(body).encode()) == body


def test_a_body_of_more_values_than_the_bound_is_a_400_before_it_is_parsed() -> None:
    started = time.process_time()
    with pytest.raises(BadBody, match=f"more than {MAX_JSON_VALUES} JSON values"):
        json_object(MANY)
    # Parsing it takes ~0.5 CPU s and ~75 MB here; counting it, a few passes of bytes.
    assert time.process_time() - started < 0.3


def test_separators_inside_strings_are_not_values() -> None:
    text = ',:[{"\\"' * (MAX_JSON_VALUES // 2)
    body = {"requests": [{"problem": {"value": 1.0}, "completion": text, "prompt": "\\" + text}]}
    assert json_object(json.dumps(body).encode()) == body


def test_a_full_batch_of_chat_prompted_rollouts_is_well_inside_the_bound() -> None:
    prompt = [{"role": "user" if turn % 2 else "assistant", "content": "a, b: [c]"} for turn in range(40)]
    item = {"problem": {"benchmark": "b4o-feasible", "problem_id": "p"}, "completion": "x", "prompt": prompt}
    body = {"requests": [item] * 2048, "deadline_s": 60}
    assert json_object(json.dumps(body).encode()) == body


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, data_dir: Path) -> Iterator[Server]:
    started = _start(tmp_path_factory.mktemp("intake"), *("--data-dir", str(data_dir), "--workers", "1"))
    yield started
    assert _stop(started) == 0


def test_the_server_answers_both_with_a_400_naming_the_bound(server: Server) -> None:
    with httpx.Client(timeout=60) as http:
        for body, message in (
            (HIDDEN.encode("utf-16"), "not UTF-8"),
            (HIDDEN.encode("utf-32"), "not UTF-8"),
            (MANY, "MAX_JSON_VALUES"),
        ):
            answer = http.post(f"{server.url}/v1/score", content=body)
            assert answer.status_code == 400, answer.text[:300]
            assert message in answer.json()["error"]
        assert http.get(f"{server.url}/health").json()["status"] == "ok"
