"""The OpenAI-compatible backend against a real HTTP server on loopback, with injected faults."""

from __future__ import annotations

import asyncio
import email.utils
import json
import socket
import time
from collections.abc import Sequence

import pytest
from fake_server import Action, Delay, Drop, FakeOpenAIServer, Malformed, Reply, Status

from trex_eval.backends import BackendSpec, GenerationRequest, create_backend
from trex_eval.backends.openai_compat import OpenAICompatBackend, api_root, parse_retry_after
from trex_eval.errors import BackendError, ConfigError
from trex_eval.records import ChatMessage, Completion, ObjectiveReference, Problem, Prompt, SamplingParams

KEY = "sk-test-0123456789abcdef"
FAST = {"backoff_base_s": 0.01, "backoff_max_s": 0.05}


def spec(base_url: str, **options: str | int | float | bool | None) -> BackendSpec:
    return BackendSpec(
        name="test-endpoint",
        backend="openai",
        model="served-model",
        options={"base_url": base_url, **FAST, **options},
    )


def request(
    key: str, *, sample_index: int = 0, seed: int | None = None, stop: tuple[str, ...] = ()
) -> GenerationRequest:
    problem = Problem(
        benchmark="toy",
        id=key,
        index=0,
        question=f"question {key}",
        reference=ObjectiveReference(value=1.0, label="1"),
    )
    prompt = Prompt(
        problem_id=key,
        prompt_set="test",
        messages=(ChatMessage(role="system", content="be brief"), ChatMessage(role="user", content=key)),
        template_sha256="0" * 64,
    )
    return GenerationRequest(
        problem=problem,
        prompt=prompt,
        params=SamplingParams(stop=stop),
        sample_index=sample_index,
        seed=seed,
    )


async def _generate_all(
    backend: OpenAICompatBackend, requests: Sequence[GenerationRequest]
) -> list[Completion]:
    await backend.start()
    try:
        return list(await asyncio.gather(*(backend.generate(r) for r in requests)))
    finally:
        await backend.close()


def generate_all(backend: OpenAICompatBackend, requests: Sequence[GenerationRequest]) -> list[Completion]:
    return asyncio.run(_generate_all(backend, requests))


# --------------------------------------------------------------------------- success path


def test_records_text_reasoning_finish_reason_usage_model_and_latency() -> None:
    with FakeOpenAIServer(
        lambda key, n: Reply(reasoning="think first", finish_reason="length", delay_s=0.05)
    ) as srv:
        (completion,) = generate_all(OpenAICompatBackend(spec(srv.base_url)), [request("p1", seed=7)])
    assert completion.error is None
    assert completion.text == "answer p1"
    assert completion.reasoning == "think first"
    assert completion.finish_reason == "length"
    assert (
        completion.usage.prompt_tokens,
        completion.usage.completion_tokens,
        completion.usage.total_tokens,
    ) == (
        11,
        7,
        18,
    )
    assert completion.model == "served-model"
    assert completion.attempts == 1
    assert completion.seed == 7
    assert completion.latency_s is not None and 0.05 <= completion.latency_s < 5


def test_reads_the_newer_vllm_reasoning_field() -> None:
    with FakeOpenAIServer(lambda key, n: Reply(reasoning="r", reasoning_key="reasoning")) as srv:
        (completion,) = generate_all(OpenAICompatBackend(spec(srv.base_url)), [request("p1")])
    assert completion.reasoning == "r"


def test_request_body_carries_sampling_seed_stop_and_extra_body() -> None:
    extra = json.dumps({"chat_template_kwargs": {"enable_thinking": True}, "top_k": 20})
    with FakeOpenAIServer() as srv:
        backend = OpenAICompatBackend(spec(srv.base_url, extra_body=extra))
        generate_all(backend, [request("p1", seed=43, stop=("</python>",))])
        (seen,) = srv.chat_requests("p1")
    assert seen.body == {
        "model": "served-model",
        "messages": [{"role": "system", "content": "be brief"}, {"role": "user", "content": "p1"}],
        "temperature": 0.6,
        "top_p": 1.0,
        "max_tokens": 9600,
        "seed": 43,
        "stop": ["</python>"],
        "chat_template_kwargs": {"enable_thinking": True},
        "top_k": 20,
    }


def test_seed_falls_back_to_sampling_seed_and_can_be_withheld() -> None:
    with FakeOpenAIServer() as srv:
        (kept,) = generate_all(OpenAICompatBackend(spec(srv.base_url)), [request("a")])
        (withheld,) = generate_all(
            OpenAICompatBackend(spec(srv.base_url, send_seed=False)), [request("b", seed=5)]
        )
        (with_seed,) = srv.chat_requests("a")
        (without,) = srv.chat_requests("b")
    assert with_seed.body is not None and with_seed.body["seed"] == 42
    assert kept.seed == 42
    assert without.body is not None and "seed" not in without.body
    assert withheld.seed is None


def test_explicit_base_url_and_served_model_override_the_spec() -> None:
    with FakeOpenAIServer(models=("other-name",)) as srv:
        preset = BackendSpec(
            name="vllm-like", backend="vllm", model="org/Model", options={"tensor_parallel": 8}
        )
        backend = OpenAICompatBackend(preset, base_url=srv.base_url, served_model="other-name")
        (completion,) = generate_all(backend, [request("p1")])
        (seen,) = srv.chat_requests("p1")
    assert completion.error is None
    assert seen.body is not None and seen.body["model"] == "other-name"


# --------------------------------------------------------------------------- faults and retries


def _fault_plan(index: int) -> list[Delay | Drop | Malformed | Status]:
    """Faults served before the first good answer, by key index: every kind, some combined."""
    plans: list[list[Delay | Drop | Malformed | Status]] = [
        [],
        [Status(429, headers=(("Retry-After", "0"),))],
        [Status(500), Status(502)],
        [Status(503, headers=(("Retry-After", "0"),)), Status(500)],
        [Delay(8.0)],
        [Drop()],
        [Malformed()],
        [Status(408), Status(409), Drop()],
        [Malformed('{"error": {"message": "overloaded"}}'), Status(502)],
    ]
    return plans[index % len(plans)]


def test_no_sample_is_lost_under_mixed_faults_with_200_concurrent_requests() -> None:
    keys = [f"p{i}" for i in range(200)]
    plans = {key: _fault_plan(i) for i, key in enumerate(keys)}

    def script(key: str, attempt: int) -> Reply | Delay | Drop | Malformed | Status:
        plan = plans[key]
        return plan[attempt - 1] if attempt <= len(plan) else Reply()

    with FakeOpenAIServer(script) as srv:
        backend = OpenAICompatBackend(spec(srv.base_url, concurrency=16, timeout_s=2.0))
        started = time.monotonic()
        completions = generate_all(backend, [request(k) for k in keys])
        elapsed = time.monotonic() - started
        server_attempts = {k: srv.attempts(k) for k in keys}

    assert [c.problem_id for c in completions] == keys
    assert [c.error for c in completions] == [None] * 200
    assert [c.text for c in completions] == [f"answer {k}" for k in keys]
    assert {c.problem_id: c.attempts for c in completions} == server_attempts
    # Every injected fault cost exactly one retry; on a loaded machine a healthy answer may also
    # miss the 2 s timeout now and then, which is one more (correctly counted) attempt.
    assert all(server_attempts[k] >= len(plans[k]) + 1 for k in keys)
    assert sum(server_attempts.values()) - sum(len(p) + 1 for p in plans.values()) <= 10
    assert elapsed < 60


def test_retries_are_bounded_and_the_failure_is_reported_in_the_completion() -> None:
    with FakeOpenAIServer(lambda key, n: Status(503)) as srv:
        (completion,) = generate_all(OpenAICompatBackend(spec(srv.base_url, max_retries=3)), [request("p1")])
        attempts = srv.attempts("p1")
    assert attempts == 4
    assert completion.attempts == 4
    assert completion.text == ""
    assert completion.error is not None
    assert "HTTP 503" in completion.error and "injected failure" in completion.error
    assert "4 attempt" in completion.error


def test_timeouts_exhaust_the_budget_too() -> None:
    with FakeOpenAIServer(lambda key, n: Delay(3.0)) as srv:
        backend = OpenAICompatBackend(spec(srv.base_url, max_retries=1, timeout_s=0.2))
        (completion,) = generate_all(backend, [request("p1")])
        attempts = srv.attempts("p1")
    assert attempts == completion.attempts == 2
    assert completion.error is not None and "no response within 0.2 s" in completion.error


@pytest.mark.parametrize("status", [400, 404, 413, 422])
def test_client_errors_other_than_408_409_429_are_not_retried(status: int) -> None:
    with FakeOpenAIServer(
        lambda key, n: Status(status, body='{"error": {"message": "context too long"}}')
    ) as srv:
        (completion,) = generate_all(OpenAICompatBackend(spec(srv.base_url)), [request("p1")])
        attempts = srv.attempts("p1")
    assert attempts == completion.attempts == 1
    assert completion.error is not None
    assert f"HTTP {status}, not retried: context too long" in completion.error


def test_retry_after_in_seconds_is_honoured() -> None:
    script: dict[int, Action] = {1: Status(429, headers=(("Retry-After", "1"),)), 2: Reply()}
    # backoff_max_s=0 makes the jittered backoff zero: any wait measured is the server's.
    options = {"backoff_base_s": 0.0, "backoff_max_s": 0.0}
    with FakeOpenAIServer(lambda key, n: script[n]) as srv:
        (completion,) = generate_all(OpenAICompatBackend(spec(srv.base_url, **options)), [request("p1")])
        first, second = srv.chat_requests("p1")
    assert completion.error is None and completion.attempts == 2
    assert 1.0 <= second.at - first.at < 3.0


def test_retry_after_as_http_date_is_honoured() -> None:
    def script(key: str, attempt: int) -> Reply | Status:
        if attempt == 1:
            # HTTP-dates have whole-second resolution: "now + 2 s" means a wait in (1, 2] s.
            when = email.utils.formatdate(time.time() + 2, usegmt=True)
            return Status(503, headers=(("Retry-After", when),))
        return Reply()

    with FakeOpenAIServer(script) as srv:
        backend = OpenAICompatBackend(spec(srv.base_url, backoff_base_s=0.0, backoff_max_s=0.0))
        (completion,) = generate_all(backend, [request("p1")])
        first, second = srv.chat_requests("p1")
    assert completion.error is None
    assert 0.95 <= second.at - first.at < 3.5


def test_retry_after_is_capped() -> None:
    script: dict[int, Action] = {1: Status(429, headers=(("Retry-After", "120"),)), 2: Reply()}
    with FakeOpenAIServer(lambda key, n: script[n]) as srv:
        backend = OpenAICompatBackend(spec(srv.base_url, retry_after_max_s=0.2))
        (completion,) = generate_all(backend, [request("p1")])
        first, second = srv.chat_requests("p1")
    assert completion.error is None
    assert 0.2 <= second.at - first.at < 1.5


def test_concurrency_never_exceeds_the_limit() -> None:
    with FakeOpenAIServer(lambda key, n: Reply(delay_s=0.1)) as srv:
        backend = OpenAICompatBackend(spec(srv.base_url, concurrency=5))
        completions = generate_all(backend, [request(f"p{i}") for i in range(40)])
        peak = srv.max_in_flight
    assert all(c.error is None for c in completions)
    assert peak == 5  # reached (40 requests of 100 ms each) and never exceeded


# --------------------------------------------------------------------------- credentials


def test_api_key_is_sent_but_never_described_or_recorded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TREX_TEST_API_KEY", KEY)

    def script(key: str, attempt: int) -> Reply | Status:
        if key == "echo":  # a proxy that echoes the request headers into its error body
            return Status(
                400, body=json.dumps({"error": {"message": f"bad request, Authorization: Bearer {KEY}"}})
            )
        return Reply(reasoning="r")

    with FakeOpenAIServer(script) as srv:
        backend = OpenAICompatBackend(spec(srv.base_url, api_key_env="TREX_TEST_API_KEY"))
        completions = generate_all(backend, [request("ok"), request("echo")])
        headers = [s.headers.get("authorization") for s in srv.seen]
    assert headers and set(headers) == {f"Bearer {KEY}"}  # GET /models and both POSTs
    description = json.dumps(backend.describe())
    assert KEY not in description and "TREX_TEST_API_KEY" in description
    assert all(KEY not in c.model_dump_json() for c in completions)
    assert completions[1].error is not None and "<redacted>" in completions[1].error


def test_missing_api_key_variable_is_a_config_error_naming_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TREX_TEST_MISSING_KEY", raising=False)
    # 192.0.2.0/24 is TEST-NET-1: not loopback, and never contacted (the key is read first).
    backend = OpenAICompatBackend(spec("http://192.0.2.1:9/v1", api_key_env="TREX_TEST_MISSING_KEY"))
    with pytest.raises(ConfigError, match="TREX_TEST_MISSING_KEY"):
        asyncio.run(backend.start())


def test_a_loopback_endpoint_needs_no_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TREX_TEST_MISSING_KEY", raising=False)
    with FakeOpenAIServer() as srv:
        backend = OpenAICompatBackend(spec(srv.base_url, api_key_env="TREX_TEST_MISSING_KEY"))
        (completion,) = generate_all(backend, [request("p1")])
        assert completion.error is None and completion.text == "answer p1"
        assert completion.endpoint == srv.base_url
        assert all("authorization" not in seen.headers for seen in srv.seen)
        assert (
            backend.describe()["authentication"] == "none ($TREX_TEST_MISSING_KEY unset; loopback endpoint)"
        )


def test_unauthorised_requests_fail_fast_naming_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TREX_TEST_API_KEY", KEY)

    async def scenario(backend: OpenAICompatBackend) -> tuple[str, str]:
        await backend.start()
        try:
            with pytest.raises(BackendError) as first:
                await backend.generate(request("p1"))
            with pytest.raises(BackendError) as second:
                await backend.generate(request("p2"))
        finally:
            await backend.close()
        return str(first.value), str(second.value)

    with FakeOpenAIServer(lambda key, n: Status(401, body='{"error": {"message": "invalid key"}}')) as srv:
        backend = OpenAICompatBackend(spec(srv.base_url, api_key_env="TREX_TEST_API_KEY"))
        first, second = asyncio.run(scenario(backend))
        chat_posts = len(srv.chat_requests())
    assert "HTTP 401" in first and "invalid key" in first and "TREX_TEST_API_KEY" in first
    assert second == first
    assert chat_posts == 1  # neither retried nor sent again after the first refusal
    assert KEY not in first


def test_unauthorised_model_list_stops_start() -> None:
    with FakeOpenAIServer(models_status=401) as srv:
        backend = OpenAICompatBackend(spec(srv.base_url))
        with pytest.raises(BackendError, match="rejected the API key") as error:
            asyncio.run(backend.start())
    assert "api_key_env" in str(error.value)


# --------------------------------------------------------------------------- start-up and describe


def test_start_checks_the_served_model_list() -> None:
    with FakeOpenAIServer(models=("model-a", "model-b")) as srv:
        with pytest.raises(
            BackendError, match=r"does not serve model 'served-model' \(it serves: model-a, model-b\)"
        ):
            asyncio.run(OpenAICompatBackend(spec(srv.base_url)).start())
        lenient = OpenAICompatBackend(spec(srv.base_url, verify_model=False))
        (completion,) = generate_all(lenient, [request("p1")])
    assert completion.error is None
    assert lenient.describe()["served_models"] == ["model-a", "model-b"]


def test_an_endpoint_without_a_model_list_still_works() -> None:
    with FakeOpenAIServer(models_status=404) as srv:
        backend = OpenAICompatBackend(spec(srv.base_url))
        (completion,) = generate_all(backend, [request("p1")])
    assert completion.error is None
    assert backend.describe()["served_models"] is None


def test_an_unreachable_endpoint_fails_start() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    backend = OpenAICompatBackend(spec(f"http://127.0.0.1:{port}/v1", max_retries=1))
    with pytest.raises(BackendError, match="cannot reach the endpoint after 2 attempt"):
        asyncio.run(backend.start())


def test_describe_shows_the_endpoint_without_credentials() -> None:
    with FakeOpenAIServer() as srv:
        port = srv.base_url.split(":")[2].split("/")[0]
        url = f"http://alice:hunter2@127.0.0.1:{port}/v1?api-key=zzz-secret"
        backend = OpenAICompatBackend(spec(url))
        (completion,) = generate_all(backend, [request("p1")])
        description = backend.describe()
    assert completion.error is None
    assert description["endpoint"] == f"http://127.0.0.1:{port}/v1"
    assert "hunter2" not in json.dumps(description) and "zzz-secret" not in json.dumps(description)
    assert description["model"] == "served-model"
    assert description["served_models"] == ["served-model"]


def test_generate_before_start_is_an_error() -> None:
    backend = OpenAICompatBackend(spec("http://127.0.0.1:9/v1"))
    with pytest.raises(BackendError, match="not started"):
        asyncio.run(backend.generate(request("p1")))


# --------------------------------------------------------------------------- configuration


def test_factory_rejects_unknown_options() -> None:
    preset = spec("http://127.0.0.1:9/v1", concurency=4)
    with pytest.raises(ConfigError, match=r"unknown option.*concurency"):
        create_backend(preset)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"extra_body": "{not json"}, "not valid JSON"),
        ({"extra_body": "[1, 2]"}, "must be a JSON object"),
        ({"extra_body": '{"temperature": 0}'}, "may not set temperature"),
        ({"concurrency": 0}, "concurrency"),
        ({"timeout_s": -1}, "timeout_s"),
    ],
)
def test_invalid_options_are_config_errors(options: dict[str, str | int], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        create_backend(spec("http://127.0.0.1:9/v1", **options))


def test_missing_base_url_or_model_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="no base_url"):
        create_backend(BackendSpec(name="x", backend="openai", model="m"))
    with pytest.raises(ConfigError, match="no model name"):
        create_backend(BackendSpec(name="x", backend="openai", options={"base_url": "http://h/v1"}))


@pytest.mark.parametrize(
    ("base_url", "root"),
    [
        ("https://api.deepseek.com", "https://api.deepseek.com/v1"),
        ("https://api.deepseek.com/", "https://api.deepseek.com/v1"),
        ("http://127.0.0.1:8000/v1/", "http://127.0.0.1:8000/v1"),
        ("https://openrouter.ai/api/v1", "https://openrouter.ai/api/v1"),
    ],
)
def test_api_root(base_url: str, root: str) -> None:
    assert str(api_root(base_url)) == root


@pytest.mark.parametrize("base_url", ["127.0.0.1:8000", "ftp://host/v1", "/v1"])
def test_api_root_rejects_non_http_urls(base_url: str) -> None:
    with pytest.raises(ConfigError, match="invalid base_url"):
        api_root(base_url)


def test_parse_retry_after() -> None:
    now = 1_800_000_000.0
    assert parse_retry_after("5", now=now) == 5.0
    assert parse_retry_after(" 0.5 ", now=now) == 0.5
    assert parse_retry_after(email.utils.formatdate(now + 30, usegmt=True), now=now) == 30.0
    assert parse_retry_after(email.utils.formatdate(now - 30, usegmt=True), now=now) == 0.0
    for unusable in (None, "", "-1", "inf", "nan", "soon", "Mon, 99 Foo 2026 99:99:99 GMT"):
        assert parse_retry_after(unusable, now=now) is None
