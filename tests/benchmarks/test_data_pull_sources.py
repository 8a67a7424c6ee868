"""`trex-eval data pull` for the field's benchmarks: each pinned repository fetched at its commit
from a mirror (a real HTTP server on loopback, and a file:// folder), every file sha256-checked,
installed atomically. The archives are built from the real files in ../shared/benchmarks, laid out
as GitHub's codeload serves them (``<name>-<commit>/<path>``)."""

from __future__ import annotations

import io
import tarfile
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from cli_process import trex_eval

from trex_eval.benchmarks import data
from trex_eval.benchmarks.data import SourceRepository, load_sources, source_archive_url, sources_root
from trex_eval.errors import DataError


def _archive(source: SourceRepository, shared: Path, *, tamper: str | None = None) -> bytes:
    """The codeload-style archive of ``source`` at its commit, with one file more than it pins."""
    root = source.as_manifest().archive_root
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz", compresslevel=1) as tar:
        extra = b"not pinned, not installed\n"
        info = tarfile.TarInfo(f"{root}/unpinned.txt")
        info.size = len(extra)
        tar.addfile(info, io.BytesIO(extra))
        for rel in source.files:
            content = (shared / source.folder_name / rel).read_bytes()
            if rel == tamper:
                content += b" "
            info = tarfile.TarInfo(f"{root}/{rel}")
            info.size = len(content)
            tar.addfile(info, io.BytesIO(content))
    return buffer.getvalue()


class _Mirror:
    """Serves ``/<owner>/<name>/tar.gz/<commit>`` for each archive given; counts the requests."""

    def __init__(self, archives: dict[str, bytes]) -> None:
        outer = self
        self.requests: list[str] = []

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                outer.requests.append(self.path)
                payload = archives.get(self.path)
                self.send_response(200 if payload is not None else 404)
                self.send_header("Content-Length", str(len(payload or b"")))
                self.end_headers()
                self.wfile.write(payload or b"")

            def log_message(self, *args: object) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def __enter__(self) -> _Mirror:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture(scope="module")
def shared(data_dir: Path) -> Path:
    return sources_root(data_dir)


@pytest.fixture(scope="module")
def archives(shared: Path) -> dict[str, bytes]:
    """Mirror path -> archive, for every pinned repository."""
    return {source_archive_url(source, ""): _archive(source, shared) for source in load_sources().values()}


def test_default_url_is_codeload_at_the_pinned_commit() -> None:
    sirl = load_sources()["Cardinal-Operations/SIRL"]
    assert (
        source_archive_url(sirl)
        == f"https://codeload.github.com/Cardinal-Operations/SIRL/tar.gz/{sirl.commit}"
    )
    assert (
        source_archive_url(sirl, "file:///m/") == f"file:///m/Cardinal-Operations/SIRL/tar.gz/{sirl.commit}"
    )


def test_cli_pulls_every_source_from_a_mirror_and_keeps_verified_copies(
    tmp_path: Path, archives: dict[str, bytes]
) -> None:
    dest = tmp_path / "sources"
    with _Mirror(archives) as mirror:
        args = ("data", "pull", "--no-trex", "--mirror", mirror.url, "--sources-dest", str(dest))
        done = trex_eval(*args, columns=200, env={"TREX_CACHE_DIR": str(tmp_path / "cache")})
        assert sorted(mirror.requests) == sorted(archives)
        reports = data.verify_sources(dest)
        assert set(reports) == set(load_sources()) and all(r.ok for r in reports.values())
        for repo, pin in load_sources().items():
            assert (
                f"{repo} @ {pin.commit[:12]}: {dest / pin.folder_name} ({len(pin.files)} files verified)"
                in done.stdout
            )
            assert not (dest / pin.folder_name / "unpinned.txt").exists()
        # A second pull finds every copy verified and downloads nothing.
        trex_eval(*args, env={"TREX_CACHE_DIR": str(tmp_path / "cache")})
        assert len(mirror.requests) == len(archives)


def test_a_file_mirror_and_a_tampered_archive(tmp_path: Path, shared: Path) -> None:
    sirl = load_sources()["Cardinal-Operations/SIRL"]
    mirror = tmp_path / "mirror"
    archive = mirror / source_archive_url(sirl, "").lstrip("/")
    archive.parent.mkdir(parents=True)
    archive.write_bytes(_archive(sirl, shared))
    installed = data.pull_sources(tmp_path / "ok", repositories=[sirl.repository], mirror=f"file://{mirror}")
    assert installed == {sirl.repository: (tmp_path / "ok" / sirl.folder_name).absolute()}
    assert data.verify_sources(tmp_path / "ok", [sirl.repository])[sirl.repository].ok

    archive.write_bytes(_archive(sirl, shared, tamper="test_data/NL4OPT.jsonl"))
    with pytest.raises(DataError, match=r"corrupt \(sha256 mismatch\): test_data/NL4OPT.jsonl"):
        data.pull_sources(tmp_path / "bad", repositories=[sirl.repository], mirror=f"file://{mirror}")
    assert not (tmp_path / "bad" / sirl.folder_name).exists()
    # A verified copy is never replaced by a bad download, even with --force.
    with pytest.raises(DataError):
        data.pull_sources(
            tmp_path / "ok", repositories=[sirl.repository], mirror=f"file://{mirror}", force=True
        )
    assert data.verify_sources(tmp_path / "ok", [sirl.repository])[sirl.repository].ok


def test_unknown_mirror_path_and_missing_file_are_errors(tmp_path: Path) -> None:
    with _Mirror({}) as mirror, pytest.raises(DataError, match="HTTP 404"):
        data.pull_sources(tmp_path, repositories=["optsuite/OptMATH"], mirror=mirror.url)
    with pytest.raises(DataError, match="cannot read file://"):
        data.pull_sources(tmp_path, repositories=["optsuite/OptMATH"], mirror=f"file://{tmp_path}/none")


def test_a_failed_source_download_advises_mirror_not_url(tmp_path: Path) -> None:
    """The field sources are overridden with --mirror; --url is the T-Rex archive's option. The CLI
    says so for a source download that fails (an empty mirror: HTTP 404)."""
    with _Mirror({}) as mirror:
        args = ("data", "pull", "--no-trex", "--mirror", mirror.url, "--sources-dest", str(tmp_path / "s"))
        failed = trex_eval(*args, columns=300, expect=None, env={"TREX_CACHE_DIR": str(tmp_path / "cache")})
    assert failed.returncode != 0
    said = " ".join(failed.stderr.split())
    assert "HTTP 404" in said
    assert "--mirror MIRROR" in said and "--url" not in said
    # The T-Rex archive's own failure keeps advising --url (its override).
    with _Mirror({}) as mirror, pytest.raises(DataError) as raised:
        data.pull(tmp_path / "trex", url=f"{mirror.url}/missing.tar.gz")
    assert "--url" in (raised.value.hint or "") and "--mirror" not in (raised.value.hint or "")
