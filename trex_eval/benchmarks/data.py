"""The benchmark data directory: where it is, whether it is intact, and how to download it.

The data are the upstream SLAI-T-Rex ``or_benchmark_eval/`` files at one pinned commit. The
project never ships them; ``trex-eval data pull`` downloads the upstream archive, keeps only the
files listed in ``data_manifest.json`` (committed, with a sha256 per file) and installs them
atomically: the target folder either holds a complete, verified copy or is left untouched.

Resolution order of the data directory, one rule for ``run``, ``grade``, ``audit`` and the tests:
an explicit ``--data-dir``, then ``TREX_DATA_DIR``, then ``../shared/benchmarks/t-rex`` beside a
source checkout (:func:`checkout_data_dir`), then ``<user cache>/data/<commit>`` (where
``data pull`` installs by default).
"""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from trex_eval import config
from trex_eval.benchmarks import download
from trex_eval.benchmarks.download import ProgressCallback as ProgressCallback
from trex_eval.errors import DataError
from trex_eval.files import sha256_file as sha256_file  # moved there for the backends; re-exported
from trex_eval.records import Record

_CHUNK = 1 << 16


@dataclass(frozen=True)
class DataManifest:
    """The pinned upstream snapshot: where to download it and the sha256 of every file kept.

    ``optional`` files (the upstream licence) are copied when the archive has them at one of the
    listed member paths, without a checksum: they are attribution, not benchmark data.
    """

    repository: str
    commit: str
    archive_url: str
    archive_root: str
    default_member_prefix: str
    members: Mapping[str, str]
    files: Mapping[str, str]
    optional: Mapping[str, tuple[str, ...]]

    def archive_member(self, relpath: str) -> str:
        """Path of ``relpath`` inside the archive (below ``archive_root``)."""
        return self.members.get(relpath, self.default_member_prefix + relpath)

    @property
    def member_to_relpath(self) -> dict[str, str]:
        return {f"{self.archive_root}/{self.archive_member(rel)}": rel for rel in self.files}

    @property
    def optional_members(self) -> dict[str, str]:
        return {
            f"{self.archive_root}/{member}": rel
            for rel, members in self.optional.items()
            for member in members
        }


def load_manifest() -> DataManifest:
    """Read the committed ``data_manifest.json``."""
    raw = json.loads((Path(__file__).resolve().parent / "data_manifest.json").read_text(encoding="utf-8"))
    return DataManifest(
        repository=raw["repository"],
        commit=raw["commit"],
        archive_url=raw["archive_url"],
        archive_root=raw["archive_root"],
        default_member_prefix=raw["default_member_prefix"],
        members=raw.get("members", {}),
        files=raw["files"],
        optional={rel: tuple(members) for rel, members in raw.get("optional", {}).items()},
    )


def default_data_dir(manifest: DataManifest | None = None) -> Path:
    """Where ``data pull`` installs by default: ``<user cache>/data/<commit>``."""
    manifest = manifest or load_manifest()
    return config.cache_dir() / "data" / manifest.commit


def checkout_data_dir() -> Path | None:
    """``../shared/benchmarks/t-rex`` beside the source checkout this package runs from, where it
    holds a ``data/`` folder (the layout CI and the tests use); None for an installed wheel."""
    checkout = Path(__file__).resolve().parents[2]
    found = checkout.parent / "shared" / "benchmarks" / "t-rex"
    return found if (checkout / "pyproject.toml").is_file() and (found / "data").is_dir() else None


_HOW_TO_POINT = (
    "run `trex-eval data pull`, or point the harness at an existing copy of the upstream "
    "or_benchmark_eval/ folder with --data-dir DIR or TREX_DATA_DIR=DIR"
)


_DOWNLOAD_FAILED = (
    "check the network (behind a proxy, set HTTPS_PROXY) and run the same command again; or fetch the "
    "pinned archive on another machine and give it with --url http://<mirror>/<file>.tar.gz, or point the "
    "harness at an existing copy of or_benchmark_eval/ with --data-dir DIR or TREX_DATA_DIR=DIR"
)
"""Hint of a failed download of the T-Rex data: said by ``data pull`` itself, so it never advises
running it."""

_SOURCES_DOWNLOAD_FAILED = (
    "check the network (behind a proxy, set HTTPS_PROXY) and run the same command again; or fetch the "
    "repository's archive at its pinned commit on another machine, serve it as "
    "MIRROR/<owner>/<name>/tar.gz/<commit> and give --mirror MIRROR (http://, https:// or file://), or "
    "point the harness at an existing copy of the <owner>+<name> folders with TREX_SOURCES_DIR=DIR"
)
"""Hint of a failed download of a field source: its option is ``--mirror`` (``--url`` is the T-Rex
archive's)."""


def resolve_data_dir(explicit: Path | None = None) -> Path:
    """The data directory in force (see module docstring for the order).

    Raises:
        DataError: the chosen directory does not exist or has no ``data/`` folder.
    """
    if explicit is not None:
        root, origin = explicit, "--data-dir"
    elif (env := config.data_dir_from_env()) is not None:
        root, origin = env, "TREX_DATA_DIR"
    elif (checkout := checkout_data_dir()) is not None:
        root, origin = checkout, "../shared/benchmarks/t-rex beside the checkout"
    else:
        root, origin = default_data_dir(), "the default location"
    if not (root / "data").is_dir():
        raise DataError(f"no benchmark data at {root} (from {origin})", hint=_HOW_TO_POINT)
    return root.resolve()


class VerifyReport(Record):
    """Result of checking a data directory against the manifest."""

    root: str
    checked: int
    missing: tuple[str, ...]
    corrupt: tuple[str, ...]

    @property
    def ok(self) -> bool:
        return not self.missing and not self.corrupt


def verify_data_dir(root: Path, *, manifest: DataManifest | None = None) -> VerifyReport:
    """Check every manifest file under ``root``: reports all missing and corrupt files."""
    manifest = manifest or load_manifest()
    missing: list[str] = []
    corrupt: list[str] = []
    for rel, expected in manifest.files.items():
        path = root / rel
        if not path.is_file():
            missing.append(rel)
        elif sha256_file(path) != expected:
            corrupt.append(rel)
    return VerifyReport(
        root=str(root), checked=len(manifest.files), missing=tuple(missing), corrupt=tuple(corrupt)
    )


def pull(
    dest: Path | None = None,
    *,
    url: str | None = None,
    force: bool = False,
    connect_timeout_s: float = 10.0,
    read_timeout_s: float = 60.0,
    progress: ProgressCallback | None = None,
) -> Path:
    """Download the pinned upstream archive and install the manifest's files into ``dest``.

    Args:
        dest: target folder (default :func:`default_data_dir`).
        url: archive URL override (tests, mirrors); default: the manifest's.
        force: re-install even if ``dest`` already verifies.
        connect_timeout_s: seconds to wait for a connection (offline machines fail fast).
        read_timeout_s: seconds without data before the download is abandoned.
        progress: download progress callback.

    Returns:
        ``dest``, holding exactly the manifest's files, every one sha256-checked.

    Raises:
        DataError: download failed, archive incomplete or a checksum mismatched. ``dest`` is
            then unchanged (a previous complete copy stays in place).
    """
    manifest = load_manifest()
    dest = (dest or default_data_dir(manifest)).absolute()
    return _install(
        manifest, dest, url or manifest.archive_url, force, connect_timeout_s, read_timeout_s, progress
    )


def _install(
    manifest: DataManifest,
    dest: Path,
    url: str,
    force: bool,
    connect_timeout_s: float,
    read_timeout_s: float,
    progress: ProgressCallback | None,
    hint: str = _DOWNLOAD_FAILED,
) -> Path:
    """Download ``url``, check it against ``manifest`` and install it at ``dest``; ``hint`` is what
    a failed download or a broken archive advises (the option that overrides ``url``)."""
    if not force and dest.is_dir() and verify_data_dir(dest, manifest=manifest).ok:
        return dest
    dest.parent.mkdir(parents=True, exist_ok=True)
    download.remove_stale_staging(dest)
    staging = Path(tempfile.mkdtemp(prefix=f".{dest.name}.partial-", dir=dest.parent))
    try:
        archive = staging / "archive.tar.gz"
        download.download(url, archive, connect_timeout_s, read_timeout_s, progress, hint)
        tree = staging / "tree"
        download.extract_verified(archive, tree, manifest, hint)
        download.swap_into_place(tree, dest)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return dest


# --------------------------------------------------------------------------- the field's sources
#
# The field's other benchmarks (MAMO, IndustryOR, OptMATH, ...) live in their own public
# repositories. ``data_manifest.json`` pins each one (``sources``: repository -> commit, the
# sha256 of every file kept); ``pull_sources`` installs each into ``<sources dir>/<owner>+<name>/``
# at its upstream paths, the layout of ``../shared/benchmarks`` that tests and CI read.


@dataclass(frozen=True)
class SourceRepository:
    """One pinned public repository holding benchmark files (``files``: upstream path -> sha256).

    ``unhashed``: files of the pinned commit that no hashed copy exists of (MIPLIB-NL's largest
    data files, which the snapshot the pins were taken from lacked). A pull installs them from
    the commit's archive where it has them, unchecked; a copy without them still verifies, and
    the benchmark leaves out the rows that need them, saying which file is absent.
    """

    repository: str
    commit: str
    files: Mapping[str, str]
    licence: str | None = None
    unhashed: tuple[str, ...] = ()

    @property
    def folder_name(self) -> str:
        """``owner+name``: the folder this repository's files are installed in."""
        return self.repository.replace("/", "+")

    @property
    def url(self) -> str:
        """The repository's web address at the pinned commit."""
        return f"https://github.com/{self.repository}/tree/{self.commit}"

    def as_manifest(self) -> DataManifest:
        name = self.repository.split("/", 1)[1]
        return DataManifest(
            repository=self.repository,
            commit=self.commit,
            archive_url=f"https://codeload.github.com/{self.repository}/tar.gz/{self.commit}",
            archive_root=f"{name}-{self.commit}",
            default_member_prefix="",
            members={},
            files=self.files,
            optional={rel: (rel,) for rel in self.unhashed},
        )


def load_sources() -> dict[str, SourceRepository]:
    """The pinned repositories of ``data_manifest.json`` (``owner/name`` -> its pin)."""
    raw = json.loads((Path(__file__).resolve().parent / "data_manifest.json").read_text(encoding="utf-8"))
    return {
        repo: SourceRepository(
            repo, item["commit"], item["files"], item.get("licence"), tuple(item.get("unhashed", ()))
        )
        for repo, item in raw.get("sources", {}).items()
    }


def default_sources_dir() -> Path:
    """Where ``pull_sources`` installs by default: ``<user cache>/sources``."""
    return config.cache_dir() / "sources"


def sources_root(data_dir: Path | None) -> Path:
    """The folder holding one ``owner+name`` folder per pinned repository: ``TREX_SOURCES_DIR``,
    else the data directory's parent when it holds any of them (the ``../shared/benchmarks``
    layout: ``t-rex/`` beside the others), else :func:`default_sources_dir`."""
    env = config.getenv("TREX_SOURCES_DIR")
    if env:
        return Path(env)
    if data_dir is not None:
        parent = data_dir.resolve().parent
        if any((parent / source.folder_name).is_dir() for source in load_sources().values()):
            return parent
    return default_sources_dir()


def source_dir(repository: str, data_dir: Path | None) -> Path:
    """The folder of ``repository``'s pinned files (see :func:`sources_root`).

    Raises:
        DataError: ``repository`` is not pinned in ``data_manifest.json``.
    """
    sources = load_sources()
    if repository not in sources:
        raise DataError(
            f"repository {repository!r} is not pinned in data_manifest.json",
            hint=f"pinned: {', '.join(sorted(sources))}",
        )
    return sources_root(data_dir) / sources[repository].folder_name


def verify_sources(root: Path, repositories: Sequence[str] | None = None) -> dict[str, VerifyReport]:
    """Check each pinned repository's files under ``root/<owner>+<name>`` (all, or those named)."""
    sources = load_sources()
    return {
        repo: verify_data_dir(root / sources[repo].folder_name, manifest=sources[repo].as_manifest())
        for repo in (repositories or sorted(sources))
    }


def source_archive_url(source: SourceRepository, mirror: str | None = None) -> str:
    """Where ``source``'s archive at its pinned commit is downloaded from: GitHub's codeload, or
    ``MIRROR/<owner>/<name>/tar.gz/<commit>`` (the same layout) on a mirror (``http(s)://`` or
    ``file://``)."""
    if mirror is None:
        return source.as_manifest().archive_url
    return f"{mirror.rstrip('/')}/{source.repository}/tar.gz/{source.commit}"


def pull_sources(
    dest_root: Path | None = None,
    *,
    repositories: Sequence[str] | None = None,
    mirror: str | None = None,
    force: bool = False,
    connect_timeout_s: float = 10.0,
    read_timeout_s: float = 60.0,
    progress: ProgressCallback | None = None,
) -> dict[str, Path]:
    """Download each pinned repository (all, or ``repositories``) at its commit and install the
    files it pins, sha256-checked, into ``dest_root/<owner>+<name>`` (atomically, as :func:`pull`).
    ``mirror``: see :func:`source_archive_url`. A repository whose folder already verifies is not
    downloaded again unless ``force``.

    Raises:
        DataError: an unknown repository, a failed download or a checksum mismatch.
    """
    sources = load_sources()
    root = (dest_root or default_sources_dir()).absolute()
    installed: dict[str, Path] = {}
    for repo in repositories or sorted(sources):
        if repo not in sources:
            raise DataError(
                f"repository {repo!r} is not pinned", hint=f"pinned: {', '.join(sorted(sources))}"
            )
        manifest = sources[repo].as_manifest()
        installed[repo] = _install(
            manifest,
            root / sources[repo].folder_name,
            source_archive_url(sources[repo], mirror),
            force,
            connect_timeout_s,
            read_timeout_s,
            progress,
            _SOURCES_DOWNLOAD_FAILED,
        )
    return installed
