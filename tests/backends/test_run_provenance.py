"""What a whole ``trex-eval run`` records about the servers behind it: which endpoint served each
completion and how many each served (``provenance.endpoints``) when ``base_url`` lists several
and one dies mid-run; and the revision a managed server loaded from the Hugging Face or
ModelScope cache (``provenance.backend.revision_resolved``), with a stand-in ``vllm`` executable
that "downloads" into a fake cache the way each hub lays it out, then serves on loopback.
Also the hub-cache readers themselves (layouts, ``.mv`` and ``.msc``). No network."""

from __future__ import annotations

import json
import os
import pickle
import stat
import sys
import threading
from collections import Counter
from pathlib import Path

import pytest
from cli_process import trex_eval
from fake_server import Action, FakeOpenAIServer, Reply

from trex_eval.backends import hub

MODEL = "served-model"
COMMIT = "0123456789abcdef0123456789abcdef01234567"
OTHER_COMMIT = "fedcba9876543210fedcba9876543210fedcba98"


def _lines(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


# --------------------------------------------------------------------------- several endpoints


def test_a_run_over_two_endpoints_one_dying_records_who_served_what(tmp_path: Path, data_dir: Path) -> None:
    limit, kill_after = 16, 4
    killed = threading.Event()

    def dying(key: str, attempt: int) -> Action:
        if len(dying_server.chat_requests()) >= kill_after and not killed.is_set():
            killed.set()
            threading.Thread(target=dying_server.kill, daemon=True).start()
        return Reply(delay_s=0.05)

    with (
        FakeOpenAIServer(dying, models=(MODEL,)) as dying_server,
        FakeOpenAIServer(lambda k, n: Reply(delay_s=0.05), models=(MODEL,)) as survivor,
    ):
        dead, alive = dying_server.base_url, survivor.base_url
        trex_eval(
            "run", "--model", f"openai-compatible/{MODEL}", "--base-url", f"{dead},{alive}",
            "-b", "nl4opt", "--limit", str(limit), "--no-progress",
            "--opt", "concurrency=2", "--opt", "backoff_base_s=0.01", "--opt", "backoff_max_s=0.05",
            "--data-dir", str(data_dir), "--out", str(tmp_path / "run"),
            env={"OPENAI_API_KEY": "", "OPENAI_BASE_URL": "", "MODEL_NAME": ""},
            timeout=300,
        )  # fmt: skip
        answered_by_dead = len(dying_server.answered)
    assert killed.is_set()

    run = tmp_path / "run"
    completions = [line["completion"] for line in _lines(run / "completions.jsonl")]
    ids = [c["problem_id"] for c in completions]  # type: ignore[index]
    # Nothing lost, nothing duplicated: one stored completion per problem, none failed.
    assert len(ids) == limit and len(set(ids)) == limit
    assert all(c["error"] is None for c in completions)  # type: ignore[index]
    served = Counter(str(c["endpoint"]) for c in completions)  # type: ignore[index]
    assert set(served) <= {dead, alive}
    assert served[dead] <= answered_by_dead < kill_after  # only what it really answered
    assert served[alive] >= limit - kill_after  # the survivor served the rest
    samples = _lines(run / "samples.jsonl")
    assert Counter(str(s["completion"]["endpoint"]) for s in samples) == served  # type: ignore[index]

    endpoints = json.loads((run / "manifest.json").read_text())["provenance"]["endpoints"]
    assert endpoints["served"] == {dead: served[dead], alive: served[alive]}
    assert endpoints["failed"] == {dead: 0, alive: 0}
    live = {e["url"]: e for e in endpoints["session"]}
    assert live[dead]["healthy"] is False and live[dead]["failed_attempts"] >= 1
    assert live[alive]["served"] == served[alive] and live[alive]["healthy"] is True


# --------------------------------------------------------------------------- revisions


FAKE_VLLM = r"""
import json, os, pickle, sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

args = sys.argv[1:]
assert args[0] == "serve", args
model = args[1]
flag = lambda name, default=None: args[args.index(name) + 1] if name in args else default
port, served = int(flag("--port")), flag("--served-model-name")
revision = flag("--revision")
owner, name = model.split("/")
if os.environ.get("VLLM_USE_MODELSCOPE") == "True":
    # modelscope >= 1.20: <cache>/models/<org>/<name, . as ___>, with .mv, .msc and .mdl
    folder = Path(os.environ["MODELSCOPE_CACHE"]) / "models" / owner / name.replace(".", "___")
    folder.mkdir(parents=True)
    (folder / "config.json").write_text("{}")
    (folder / ".mv").write_text(f"Revision:{revision or 'master'},CreatedAt:1760000000")
    files = [{"Path": "config.json", "Revision": os.environ["FAKE_COMMIT"]},
             {"Path": "model.safetensors", "Revision": os.environ["FAKE_COMMIT"]}]
    (folder / ".msc").write_bytes(pickle.dumps(files))
    (folder / ".mdl").write_bytes(pickle.dumps({"id": model}))
else:
    repo = Path(os.environ["HF_HUB_CACHE"]) / f"models--{owner}--{name}"
    (repo / "snapshots" / os.environ["FAKE_COMMIT"]).mkdir(parents=True)
    (repo / "refs").mkdir()
    (repo / "refs" / (revision or "main")).write_text(os.environ["FAKE_COMMIT"])

class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def log_message(self, *a): pass
    def _send(self, body):
        data = json.dumps(body).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
    def do_GET(self):
        if self.path == "/version":
            self._send({"version": "0.0.0-fake"})
        elif self.path.endswith("/models"):
            self._send({"object": "list", "data": [{"id": served, "object": "model"}]})
        else:
            self._send({})
    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self._send({"id": "x", "object": "chat.completion", "model": served,
                    "choices": [{"index": 0, "finish_reason": "stop",
                                 "message": {"role": "assistant", "content": "no code"}}],
                    "usage": {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5}})

ThreadingHTTPServer(("127.0.0.1", port), Handler).serve_forever()
"""


@pytest.fixture()
def fake_vllm(tmp_path: Path) -> dict[str, str]:
    """A ``vllm`` stand-in, the caches it writes to, and no GPU: the run's environment."""
    executable = tmp_path / "bin" / "vllm"
    executable.parent.mkdir()
    executable.write_text(f"#!{sys.executable}\n{FAKE_VLLM}")
    executable.chmod(executable.stat().st_mode | stat.S_IEXEC)
    return {
        "TREX_VLLM_EXECUTABLE": str(executable),
        "PATH": f"{executable.parent}{os.pathsep}{os.environ['PATH']}",
        "CUDA_VISIBLE_DEVICES": "",
        "HF_HUB_CACHE": str(tmp_path / "hf"),
        "MODELSCOPE_CACHE": str(tmp_path / "ms"),
        "FAKE_COMMIT": COMMIT,
        "TREX_CONFIG_DIR": str(tmp_path / "config"),
    }


@pytest.mark.parametrize(
    ("options", "download", "ref", "argv_revision"),
    [
        ((), "Hugging Face org/Model-1.5B", "main", None),
        (("revision=v2",), "Hugging Face org/Model-1.5B @ v2", "v2", "v2"),
        (("hub=modelscope",), "ModelScope org/Model-1.5B", "master", None),
        (("hub=modelscope", "revision=v1.0.2"), "ModelScope org/Model-1.5B @ v1.0.2", "v1.0.2", "v1.0.2"),
    ],
)
def test_the_manifest_records_the_revision_the_server_loaded(
    tmp_path: Path,
    data_dir: Path,
    fake_vllm: dict[str, str],
    options: tuple[str, ...],
    download: str,
    ref: str,
    argv_revision: str | None,
) -> None:
    opts = [arg for option in options for arg in ("--opt", option)]
    trex_eval(
        "run", "--model", "vllm/org/Model-1.5B", *opts, "-b", "nl4opt", "--limit", "1", "--no-progress",
        "--opt", "startup_timeout_s=60", "--opt", "stop_grace_s=2",
        "--data-dir", str(data_dir), "--out", str(tmp_path / "run"), env=fake_vllm, timeout=300,
    )  # fmt: skip
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    backend = manifest["provenance"]["backend"]
    assert backend["server"] == "vllm 0.0.0-fake"
    assert backend["download"].startswith(download + " (")
    assert backend["revision_requested"] == argv_revision
    assert backend["revision_resolved"] == COMMIT
    assert backend["revision_cache"]["commit"] == COMMIT and backend["revision_cache"]["ref"] == ref
    argv = backend["argv"]
    assert (argv[argv.index("--revision") + 1] if "--revision" in argv else None) == argv_revision
    modelscope = "hub=modelscope" in options
    assert backend["server_environment"] == ({"VLLM_USE_MODELSCOPE": "True"} if modelscope else {})
    if modelscope:
        assert backend["revision_cache"]["created_at"] == "1760000000"
        assert backend["revision_cache"]["read_from"].endswith("/models/org/Model-1___5B/.msc")
    completion = _lines(tmp_path / "run" / "completions.jsonl")[0]["completion"]
    assert completion["endpoint"] == backend["endpoint"] + "/v1"  # type: ignore[index]
    assert manifest["provenance"]["endpoints"]["served"] == {backend["endpoint"] + "/v1": 1}


# --------------------------------------------------------------------------- the cache readers


@pytest.fixture()
def caches(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hf"))
    monkeypatch.setenv("MODELSCOPE_CACHE", str(tmp_path / "ms"))
    return tmp_path / "ms"


def _modelscope_entry(folder: Path, *, mv: str | None, files: object) -> None:
    folder.mkdir(parents=True)
    if mv is not None:
        (folder / ".mv").write_text(mv)
    (folder / ".msc").write_bytes(pickle.dumps(files))


@pytest.mark.parametrize(
    "layout",
    ["models/Qwen/Qwen2___5-7B", "models/Qwen/Qwen2.5-7B", "Qwen/Qwen2.5-7B", "hub/Qwen/Qwen2___5-7B"],
)
def test_modelscope_cache_layouts_old_and_new_are_found(caches: Path, layout: str) -> None:
    _modelscope_entry(caches / layout, mv="Revision:master,CreatedAt:1712345678", files=[])
    source = hub.model_source("Qwen/Qwen2.5-7B", hub="modelscope", revision=None)
    assert hub.cached_snapshot(source) == caches / layout
    facts = hub.revision_facts(source)
    assert (facts.commit, facts.ref, facts.created_at) == (None, "master", "1712345678")


def test_modelscope_commit_only_when_the_cache_says_one(caches: Path) -> None:
    folder = caches / "models" / "org" / "m"
    files = [{"Path": "a.json", "Revision": COMMIT}, {"Path": "b.bin", "Revision": OTHER_COMMIT}]
    _modelscope_entry(folder, mv="v1.1", files=files)
    source = hub.model_source("org/m", hub="modelscope", revision="v1.1")
    facts = hub.revision_facts(source)
    # Files from two commits, a tag name: no commit for the whole repository is claimed.
    assert (facts.commit, facts.ref, facts.file_commits) == (None, "v1.1", (COMMIT, OTHER_COMMIT))
    (folder / ".mv").write_text(f"Revision:{OTHER_COMMIT},CreatedAt:1")
    assert hub.resolved_revision(source) == OTHER_COMMIT
    pinned = hub.revision_facts(hub.model_source("org/m", hub="modelscope", revision=COMMIT))
    assert (pinned.commit, pinned.read_from) == (COMMIT, "the revision option (a commit)")


def test_a_modelscope_file_list_that_is_not_plain_data_is_never_unpickled(
    caches: Path, tmp_path: Path
) -> None:
    marker = tmp_path / "pwned"

    class Payload:
        def __reduce__(self) -> tuple[object, tuple[str]]:
            return (os.system, (f"touch {marker}",))

    folder = caches / "models" / "org" / "m"
    _modelscope_entry(folder, mv=None, files=[{"Path": "a", "Revision": COMMIT}, Payload()])
    facts = hub.revision_facts(hub.model_source("org/m", hub="modelscope", revision=None))
    assert facts.commit is None and facts.file_commits == ()
    assert not marker.exists()


def test_hugging_face_refs_resolve_and_a_missing_ref_is_not_guessed(caches: Path, tmp_path: Path) -> None:
    refs = tmp_path / "hf" / "models--org--m" / "refs"
    refs.mkdir(parents=True)
    (refs / "main").write_text(COMMIT + "\n")
    assert hub.revision_facts(hub.model_source("org/m", hub=None, revision=None)).facts() == {
        "commit": COMMIT,
        "ref": "main",
        "created_at": None,
        "file_commits": [],
        "read_from": str(refs / "main"),
    }
    assert hub.resolved_revision(hub.model_source("org/m", hub=None, revision="v9")) is None
    (refs / "v9").write_text("not a commit")
    assert hub.resolved_revision(hub.model_source("org/m", hub=None, revision="v9")) is None
    local = hub.revision_facts(hub.model_source(str(tmp_path), hub=None, revision=None))
    assert local.commit is None and local.read_from is None
