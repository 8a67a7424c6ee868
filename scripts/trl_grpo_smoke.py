#!/usr/bin/env python3
"""A real TRL ``GRPOTrainer`` run on CPU whose rewards come from a ``trex-eval serve`` server.

Run it with an interpreter that has torch, transformers and trl (the vLLM virtualenv that
``scripts/setup_vllm_cpu.sh`` builds, plus ``pip install trl datasets``) and this checkout on
``PYTHONPATH`` (only ``trex_eval.reward.client`` is imported: standard library and httpx)::

    trex-eval export-rl -b nl4opt --out /tmp/nl4opt.jsonl
    trex-eval serve -b nl4opt --port 8000 --log /tmp/rewards.jsonl &
    PYTHONPATH=. VENV/bin/python scripts/trl_grpo_smoke.py --reward-url http://127.0.0.1:8000 \
        --dataset /tmp/nl4opt.jsonl --model MODEL_DIR [--steps 2]

It trains ``--steps`` optimiser steps of a small model (SmolLM2-135M-Instruct, converted by the
setup script) on the first rows of the exported dataset, two completions per prompt, and prints one
JSON line: the steps done, the reward calls made, the rewards each call received and the trainer's
logged mean reward per step. Exit status 0 when every step took its rewards from the server.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile

from trex_eval.reward.client import RemoteReward


class CountingReward(RemoteReward):
    """The remote reward, keeping each call's rewards."""

    def __init__(self, url: str) -> None:
        super().__init__(url, timeout_s=300.0)
        self.calls: list[list[float]] = []

    def __call__(self, prompts: object = None, completions: object = None, **columns: object) -> list[float]:
        rewards = super().__call__(prompts, completions, **columns)
        self.calls.append(rewards)
        return rewards


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reward-url", required=True)
    parser.add_argument("--dataset", required=True, help="a JSONL file written by `trex-eval export-rl`")
    parser.add_argument("--model", required=True, help="a Hugging Face model folder")
    parser.add_argument("--steps", type=int, default=2)
    parser.add_argument("--rows", type=int, default=4)
    args = parser.parse_args()

    import torch
    from datasets import load_dataset
    from trl import GRPOConfig, GRPOTrainer

    torch.manual_seed(0)
    torch.set_num_threads(2)
    dataset = load_dataset("json", data_files=args.dataset, split="train").select(range(args.rows))
    reward = CountingReward(args.reward_url)
    with tempfile.TemporaryDirectory() as out:
        config = GRPOConfig(
            output_dir=out,
            max_steps=args.steps,
            per_device_train_batch_size=2,
            num_generations=2,
            max_completion_length=32,
            learning_rate=1e-6,
            logging_steps=1,
            save_strategy="no",
            report_to=[],
            use_cpu=True,
            bf16=False,
            seed=0,
        )
        trainer = GRPOTrainer(model=args.model, reward_funcs=[reward], args=config, train_dataset=dataset)
        trainer.train()
        logged = [
            entry.get("reward", entry.get("rewards/trex_eval/mean"))
            for entry in trainer.state.log_history
            if "reward" in entry or "rewards/trex_eval/mean" in entry
        ]
        steps = trainer.state.global_step
    print(
        json.dumps(
            {"steps": steps, "reward_calls": len(reward.calls), "rewards": reward.calls, "logged": logged}
        )
    )
    return 0 if steps == args.steps and len(reward.calls) >= args.steps else 1


if __name__ == "__main__":
    sys.exit(main())
