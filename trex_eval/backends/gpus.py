"""The GPUs a managed model server will see, and whether a model's weights fit on them.

Visible GPUs (:func:`visible_gpus`), as CUDA will number them for the server process:

1. ``CUDA_VISIBLE_DEVICES`` when set: its entries up to the first invalid one (CUDA's own rule;
   ``""`` and ``"-1"`` mean none). Memory sizes come from ``nvidia-smi`` for those entries
   (matched by index or UUID) when it runs.
2. else every GPU ``nvidia-smi --query-gpu=index,uuid,memory.total`` lists;
3. else none (no driver, no GPU): the server keeps vLLM's own defaults.

Nothing here imports CUDA or torch: the harness process must stay free of a CUDA context (see
:mod:`trex_eval.backends.vllm`).

Weights (:func:`weight_bytes`): the ``metadata.total_size`` of a ``*.safetensors.index.json``
(the exact byte count of the checkpoint, written by ``save_pretrained`` and published with
every sharded hub model), else the total size of the weight files, in a local folder or a hub
snapshot in the local cache; else the preset's ``weights_gib`` (an estimate written by hand:
parameters times bytes per parameter of its dtype). :func:`fit_problem` compares them with what
one replica's GPUs offer at the configured ``gpu_memory_utilization``.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from trex_eval import config

_SMI_TIMEOUT_S = 20.0
_WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth", ".gguf")
_VLLM_DEFAULT_UTILISATION = 0.9
GIB = 1024**3


@dataclass(frozen=True)
class VisibleGPUs:
    """GPUs a server started now would see.

    Attributes:
        count: how many (0: none found).
        memory_mib: total memory of each, in MiB, when ``nvidia-smi`` told; else empty.
        source: how they were found (``CUDA_VISIBLE_DEVICES=...``, ``nvidia-smi``, ``none``).
    """

    count: int
    memory_mib: tuple[int, ...]
    source: str

    def facts(self) -> dict[str, object]:
        return {"count": self.count, "memory_mib": list(self.memory_mib), "source": self.source}


@dataclass(frozen=True)
class _SmiGPU:
    index: str
    uuid: str
    memory_mib: int


def visible_gpus() -> VisibleGPUs:
    """The GPUs a server started from this process would see (see the module docstring)."""
    listed = _nvidia_smi()
    mask = config.getenv_raw("CUDA_VISIBLE_DEVICES")
    if mask is not None:
        entries = _cuda_entries(mask)
        by_key = {g.index: g for g in listed or ()} | {g.uuid: g for g in listed or ()}
        chosen = [by_key.get(entry) for entry in entries]
        memory = tuple(g.memory_mib for g in chosen if g is not None) if all(chosen) else ()
        return VisibleGPUs(count=len(entries), memory_mib=memory, source=f"CUDA_VISIBLE_DEVICES={mask}")
    if listed:
        return VisibleGPUs(
            count=len(listed), memory_mib=tuple(g.memory_mib for g in listed), source="nvidia-smi"
        )
    return VisibleGPUs(count=0, memory_mib=(), source="none (no CUDA_VISIBLE_DEVICES, no nvidia-smi GPU)")


def _cuda_entries(mask: str) -> list[str]:
    # CUDA stops at the first entry it cannot parse; "-1" (or any negative index) hides the rest.
    entries: list[str] = []
    for raw in mask.split(","):
        entry = raw.strip()
        if re.fullmatch(r"\d+", entry) or re.fullmatch(r"(GPU|MIG)-[0-9A-Za-z-]+", entry):
            entries.append(entry)
        else:
            break
    return entries


def _nvidia_smi() -> list[_SmiGPU] | None:
    executable = shutil.which("nvidia-smi")
    if executable is None:
        return None
    try:
        result = subprocess.run(
            [executable, "--query-gpu=index,uuid,memory.total", "--format=csv,noheader,nounits"],
            capture_output=True,
            text=True,
            timeout=_SMI_TIMEOUT_S,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    if result.returncode != 0:
        return None
    gpus: list[_SmiGPU] = []
    for line in result.stdout.splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) != 3:
            continue
        try:
            gpus.append(_SmiGPU(index=parts[0], uuid=parts[1], memory_mib=int(float(parts[2]))))
        except ValueError:
            continue
    return gpus


def weight_bytes(model_dir: Path | None, *, weights_gib: float | None) -> tuple[int | None, str]:
    """Bytes of the model's weights and how that was found (see the module docstring).

    ``model_dir`` is a local model folder or hub snapshot (``None``: none on this machine).
    """
    if model_dir is not None and model_dir.is_dir():
        for index in sorted(model_dir.glob("*.safetensors.index.json")):
            try:
                total = json.loads(index.read_text(encoding="utf-8")).get("metadata", {}).get("total_size")
            except (OSError, ValueError, AttributeError):
                continue
            if isinstance(total, int) and total > 0:
                return total, f"{index.name} metadata.total_size"
        files = [f for f in model_dir.iterdir() if f.suffix in _WEIGHT_SUFFIXES and f.is_file()]
        if files:
            return sum(f.stat().st_size for f in files), f"{len(files)} weight file(s) in {model_dir}"
    if weights_gib is not None:
        return int(weights_gib * GIB), f"the preset's weights_gib estimate ({weights_gib:g} GiB)"
    return None, "unknown (no local files, no weights_gib)"


def fit_problem(
    *, weights: int | None, gpus: VisibleGPUs, gpus_per_replica: int, utilisation: float | None
) -> str | None:
    """Why one replica's GPUs cannot hold the weights, or ``None`` when they can (or nobody
    knows: no size, no memory figures)."""
    if weights is None or not gpus.memory_mib or gpus_per_replica < 1:
        return None
    share = utilisation if utilisation is not None else _VLLM_DEFAULT_UTILISATION
    used = sorted(gpus.memory_mib)[:gpus_per_replica]
    if len(used) < gpus_per_replica:
        return None  # more GPUs per replica than this node has: a multi-node layout
    capacity = sum(used) * 1024**2 * share
    if weights <= capacity:
        return None
    return (
        f"the weights need {weights / GIB:.1f} GiB but {gpus_per_replica} GPU(s) of "
        f"{used[0] / 1024:.0f} GiB at gpu_memory_utilization {share:g} hold {capacity / GIB:.1f} GiB"
    )
