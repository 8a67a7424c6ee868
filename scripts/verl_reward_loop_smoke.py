#!/usr/bin/env python3
"""verl's own reward loop scoring rollouts with trex-eval's ``compute_score_async``.

Run it with an interpreter that imports both verl (0.9: ``verl.experimental.reward_loop``) and
trex-eval: verl installed without its GPU dependencies (``pip install --no-deps verl==0.9.1``
plus torch (CPU), tensordict, omegaconf, transformers, aiohttp and codetiming) beside the
harness::

    VENV/bin/python scripts/verl_reward_loop_smoke.py ROLLOUTS.json REWARD_KWARGS.json

``ROLLOUTS.json`` is a list of ``{"ground_truth", "completion", "extra_info"?}`` (the verl layout
``export-rl --layout verl`` writes: ``ground_truth`` is the row's ``reward_model.ground_truth``),
``REWARD_KWARGS.json`` the ``reward.custom_reward_function.reward_kwargs`` mapping.

verl builds everything here: its 0.9 config keys (``reward.custom_reward_function``,
``reward.reward_manager``), its ``RewardLoopWorker`` (which loads the function through
``verl.trainer.ppo.reward.load_reward_manager`` and ``get_custom_reward_fn``), its ``naive``
reward manager, its ``DataProto`` of token ids. Only the tokenizer is made here: a byte-level one
with no merges, so that a completion decodes to exactly its text (the trainer's tokenizer is the
trainer's; no model is downloaded). The batch is scored with ``compute_score_batch``, which
awaits one ``run_single`` per rollout concurrently inside the running event loop.

Then verl's ``get_custom_reward_fn`` loads the same function by package
(``path: pkg://trex_eval.reward.verl``), which is awaited on the first rollout.

Prints one JSON line: verl's version, whether the function verl loaded is a coroutine function
its manager awaits, each rollout's ``reward_score`` and ``reward_extra_info``, and the package
form's answer for the first rollout. Exit status 0 when every rollout
was scored.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import torch
import verl
from omegaconf import OmegaConf
from tokenizers import Tokenizer, decoders, models, pre_tokenizers
from transformers import PreTrainedTokenizerFast
from verl import DataProto
from verl.experimental.reward_loop.reward_loop import RewardLoopWorker
from verl.trainer.ppo.reward import get_custom_reward_fn

import trex_eval.reward.verl as shipped

PAD = "<pad>"


def byte_tokenizer(folder: Path) -> Path:
    """A byte-level BPE tokenizer without merges saved in ``folder`` (one token per byte, so
    ``decode(encode(text)) == text`` for any text), loadable by ``AutoTokenizer``."""
    alphabet = pre_tokenizers.ByteLevel.alphabet()
    vocab = {PAD: 0, **{symbol: index + 1 for index, symbol in enumerate(sorted(alphabet))}}
    core = Tokenizer(models.BPE(vocab=vocab, merges=[]))
    core.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    core.decoder = decoders.ByteLevel()
    PreTrainedTokenizerFast(tokenizer_object=core, pad_token=PAD).save_pretrained(folder)
    return folder


def config(tokenizer_dir: Path, reward_kwargs: dict[str, Any], *, path: str = shipped.__file__) -> Any:
    """verl 0.9's trainer config, the keys its reward loop reads; ``path`` names the module (a
    file, or ``pkg://`` and its dotted name)."""
    return OmegaConf.create(
        {
            "actor_rollout_ref": {"model": {"path": str(tokenizer_dir), "tokenizer_path": None}},
            "reward": {
                "num_workers": 1,
                "custom_reward_function": {
                    "path": path,
                    "name": "compute_score_async",
                    "reward_kwargs": reward_kwargs,
                },
                "reward_manager": {"source": "register", "name": "naive", "module": {"path": None}},
                "reward_model": {"enable": False},
                "sandbox_fusion": None,
            },
        }
    )


def batch(tokenizer: Any, rollouts: list[dict[str, Any]]) -> DataProto:
    """The rollouts as verl's agent loop hands them to the reward loop: left-padded prompt ids,
    right-padded response ids, the attention mask over both, and the dataset's columns."""
    responses = [tokenizer.encode(item["completion"], add_special_tokens=False) for item in rollouts]
    width = max(len(ids) for ids in responses)
    padded = torch.zeros(len(rollouts), width, dtype=torch.long)
    response_mask = torch.zeros(len(rollouts), width, dtype=torch.long)
    for row, ids in enumerate(responses):
        padded[row, : len(ids)] = torch.tensor(ids)
        response_mask[row, : len(ids)] = 1
    prompts = torch.ones(len(rollouts), 1, dtype=torch.long)
    return DataProto.from_dict(
        tensors={
            "prompts": prompts,
            "responses": padded,
            "attention_mask": torch.cat([torch.ones_like(prompts), response_mask], dim=1),
        },
        non_tensors={
            "data_source": np.array(
                [item.get("data_source", "trex-eval") for item in rollouts], dtype=object
            ),
            "reward_model": np.array(
                [{"style": "rule", "ground_truth": item["ground_truth"]} for item in rollouts], dtype=object
            ),
            "extra_info": np.array([dict(item.get("extra_info") or {}) for item in rollouts], dtype=object),
        },
    )


async def score(rollouts: list[dict[str, Any]], reward_kwargs: dict[str, Any]) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as folder:
        worker = RewardLoopWorker(config(byte_tokenizer(Path(folder)), reward_kwargs))
    loaded = worker.reward_manager.compute_score
    outputs = await worker.compute_score_batch(batch(worker.input_tokenizer, rollouts))
    # The same function named as a package (no site-packages path to find), loaded by verl.
    by_package = get_custom_reward_fn(config(Path(), reward_kwargs, path=f"pkg://{shipped.__name__}"))
    assert by_package is not None
    first = rollouts[0]
    package_answer = await by_package(
        data_source="trex-eval",
        solution_str=first["completion"],
        ground_truth=first["ground_truth"],
        extra_info=dict(first.get("extra_info") or {}),
    )
    return {
        "verl": verl.__version__,
        "manager": type(worker.reward_manager).__name__,
        "awaited": inspect.iscoroutinefunction(loaded) and worker.reward_manager.is_async_reward_score,
        "results": [
            {"reward_score": float(out["reward_score"]), "reward_extra_info": out["reward_extra_info"]}
            for out in outputs
        ],
        "package_first": package_answer,
    }


def main(argv: list[str]) -> int:
    rollouts = json.loads(Path(argv[0]).read_text(encoding="utf-8"))
    reward_kwargs = json.loads(Path(argv[1]).read_text(encoding="utf-8"))
    answer = asyncio.run(score(rollouts, reward_kwargs))
    print(json.dumps(answer), flush=True)
    return 0 if len(answer["results"]) == len(rollouts) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
