"""`data pull`/`verify` against a real HTTP server serving an archive built from the real data."""

from __future__ import annotations

import hashlib
import io
import tarfile
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from trex_eval.benchmarks import data
from trex_eval.errors import DataError


def _build_archive(data_dir: Path, *, tamper: str | None = None, drop: str | None = None) -> bytes:
    manifest = data.load_manifest()
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz", compresslevel=1) as tar:
        # Upstream archives contain much more than the manifest; an extra file must be ignored.
        extra = b"not part of the benchmark\n"
        info = tarfile.TarInfo(f"{manifest.archive_root}/README.md")
        info.size = len(extra)
        tar.addfile(info, io.BytesIO(extra))
        # The upstream licence sits at the repository root (optional, not checksum-verified).
        licence = (data_dir / "LICENSE").read_bytes()
        info = tarfile.TarInfo(f"{manifest.archive_root}/LICENSE")
        info.size = len(licence)
        tar.addfile(info, io.BytesIO(licence))
        for rel in manifest.files:
            if rel == drop:
                continue
            content = (data_dir / rel).read_bytes()
            if rel == tamper:
                content = content.replace(b"0", b"1", 1)
            info = tarfile.TarInfo(f"{manifest.archive_root}/{manifest.archive_member(rel)}")
            info.size = len(content)
            tar.addfile(info, io.BytesIO(content))
    return buffer.getvalue()


class _Server:
    """Serves one payload; ``cut_at`` sends a Content-Length for the whole payload but closes early."""

    def __init__(self, payload: bytes, *, cut_at: int | None = None, status: int = 200) -> None:
        outer = self
        self.requests = 0

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                outer.requests += 1
                self.send_response(status)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload if cut_at is None else payload[:cut_at])
                if cut_at is not None:
                    self.wfile.flush()
                    self.connection.close()

            def log_message(self, *args: object) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/archive.tar.gz"

    def __enter__(self) -> _Server:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture(scope="module")
def archive(data_dir: Path) -> bytes:
    return _build_archive(data_dir)


def _leftovers(parent: Path) -> list[str]:
    return sorted(p.name for p in parent.iterdir() if p.name.startswith("."))


def test_pull_downloads_verifies_and_installs(tmp_path: Path, archive: bytes, data_dir: Path) -> None:
    dest = tmp_path / "cache" / "snapshot"
    seen: list[tuple[int, int | None]] = []
    with _Server(archive) as server:
        result = data.pull(dest, url=server.url, progress=lambda done, total: seen.append((done, total)))
        assert result == dest.absolute()
        report = data.verify_data_dir(dest)
        assert report.ok and report.checked == len(data.load_manifest().files) == 1485
        assert not (dest / "README.md").exists(), "files outside the manifest must not be installed"
        assert (dest / "LICENSE").read_bytes() == (data_dir / "LICENSE").read_bytes()
        assert (dest / "data/NL4OPT/test.parquet").read_bytes() == (
            data_dir / "data/NL4OPT/test.parquet"
        ).read_bytes()
        assert seen[-1] == (len(archive), len(archive))
        # A verified copy is not downloaded again.
        data.pull(dest, url=server.url)
        assert server.requests == 1
    assert _leftovers(dest.parent) == []


def test_pull_rejects_checksum_mismatch_and_installs_nothing(tmp_path: Path, data_dir: Path) -> None:
    bad = _build_archive(
        data_dir,
        tamper="data/bench4opt/lp_code/model_7_problem7.lp",
        drop="evaluation/nl4opt/prompt_template.txt",
    )
    dest = tmp_path / "snapshot"
    with _Server(bad) as server, pytest.raises(DataError) as excinfo:
        data.pull(dest, url=server.url)
    message = str(excinfo.value)
    assert "corrupt (sha256 mismatch): data/bench4opt/lp_code/model_7_problem7.lp" in message
    assert "missing from archive: evaluation/nl4opt/prompt_template.txt" in message
    assert "nothing was installed" in message
    assert not dest.exists()
    assert _leftovers(tmp_path) == []


def test_interrupted_download_keeps_previous_copy(tmp_path: Path, archive: bytes) -> None:
    dest = tmp_path / "snapshot"
    with _Server(archive) as server:
        data.pull(dest, url=server.url)
    marker = dest / "data/NL4OPT/test.parquet"
    before = hashlib.sha256(marker.read_bytes()).hexdigest()
    with (
        _Server(archive, cut_at=len(archive) // 3) as server,
        pytest.raises(DataError, match=r"cut short|cannot download"),
    ):
        data.pull(dest, url=server.url, force=True)
    assert hashlib.sha256(marker.read_bytes()).hexdigest() == before
    assert data.verify_data_dir(dest).ok
    assert _leftovers(tmp_path) == []


def test_http_error_is_reported(tmp_path: Path) -> None:
    with _Server(b"gone", status=404) as server, pytest.raises(DataError, match="HTTP 404"):
        data.pull(tmp_path / "x", url=server.url)


def test_offline_fails_fast_with_instructions(tmp_path: Path) -> None:
    start = time.monotonic()
    # 10.255.255.1 is unroutable: the connection attempt hangs until the connect timeout.
    with pytest.raises(DataError) as excinfo:
        data.pull(tmp_path / "x", url="http://10.255.255.1/archive.tar.gz", connect_timeout_s=2.0)
    assert time.monotonic() - start < 10
    assert "TREX_DATA_DIR" in str(excinfo.value) and "--data-dir" in str(excinfo.value)


def test_verify_reports_every_missing_and_corrupt_file(tmp_path: Path, archive: bytes) -> None:
    dest = tmp_path / "snapshot"
    with _Server(archive) as server:
        data.pull(dest, url=server.url)
    (dest / "data/optibench/OptiBench.json").write_text("[]")
    (dest / "evaluation/nl4opt/prompt_template.txt").unlink()
    (dest / "data/bench4opt/lp_data/data_3_problem3.json").unlink()
    report = data.verify_data_dir(dest)
    assert report.corrupt == ("data/optibench/OptiBench.json",)
    assert set(report.missing) == {
        "evaluation/nl4opt/prompt_template.txt",
        "data/bench4opt/lp_data/data_3_problem3.json",
    }


def test_resolution_order(tmp_path: Path, data_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TREX_DATA_DIR", str(data_dir))
    assert data.resolve_data_dir() == data_dir.resolve()
    with pytest.raises(DataError, match="from --data-dir"):
        data.resolve_data_dir(tmp_path)
    monkeypatch.delenv("TREX_DATA_DIR")
    monkeypatch.setenv("TREX_CACHE_DIR", str(tmp_path / "cache"))
    checkout = data.checkout_data_dir()
    if checkout is not None:  # a source checkout with ../shared beside it: that copy, before the cache
        assert data.resolve_data_dir() == checkout.resolve()
        monkeypatch.setattr(data, "checkout_data_dir", lambda: None)
    with pytest.raises(DataError, match="default location"):
        data.resolve_data_dir()
    assert data.default_data_dir() == tmp_path / "cache" / "data" / data.load_manifest().commit


def test_manifest_pins_the_readme_digests(data_dir: Path) -> None:
    files = data.load_manifest().files
    # The sha256 values published in shared/benchmarks/README.md (reference-harness §1).
    assert (
        files["data/NL4OPT/test.parquet"]
        == "9c339c23c776202d8627844877c12cfe47de85f12be9870e13bef3f3847c8093"
    )
    assert (
        files["data/optibench/OptiBench.json"]
        == "8753acb9e503e8afacd4cafedf942abc147c0975142c6886632e31ada4b4d2a9"
    )
    assert (
        files["data/bench4opt/test.jsonl"]
        == "a2fa53bb341fbf1fd756bcf94b8be89395c9a4de41e7a876143cd2cdbf89bee4"
    )
    assert (
        files["data/bench4opt_feasible/test.jsonl"]
        == "2e759cfca3cde198d8d0b27c76d08d785b158945509ff7994b67c6e4eb24674e"
    )
    assert files["evaluation/bench4opt/prompt_template_lp_structure.txt"] == (
        "52ede468d5d42704bf987cf6744df788e22e62c94d963bd5d2c0a0bf98d554c3"
    )


@pytest.fixture(autouse=True)
def _no_stray_env(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.delenv("TREX_CACHE_DIR", raising=False)
    yield
