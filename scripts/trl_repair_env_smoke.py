#!/usr/bin/env python3
"""A real TRL ``GRPOTrainer`` run on CPU whose rollouts are repair episodes of a ``trex-eval serve``
server (``environment_factory=RepairEnvironment.factory(url, turns=...)``, ``POST /v1/step``).

Run it like ``scripts/trl_grpo_smoke.py`` (an interpreter with torch, transformers and trl, this
checkout on ``PYTHONPATH``; only ``trex_eval.reward.repair_client`` is imported)::

    trex-eval export-rl -b nl4opt --out /tmp/nl4opt.jsonl
    trex-eval serve -b nl4opt --port 8000 &
    PYTHONPATH=. VENV/bin/python scripts/trl_repair_env_smoke.py --url http://127.0.0.1:8000 \
        --dataset /tmp/nl4opt.jsonl --model MODEL_DIR [--steps 2] [--turns 2]

The policy is an untrained SmolLM2-135M, which writes no JSON tool call of its own. So the chat
template is Qwen2.5's tool-calling one (ChatML, SmolLM2's tokens) whose generation prompt opens the
call (``<tool_call>``: a required tool choice), and the response template reads the whole turn as
the ``program`` argument of ``run_program``. Every turn is then a program the environment runs; what
the model writes in it is its own (mostly prose: a syntax error the environment feeds back).

Prints one JSON line: the steps done, each rollout as its environment saw it (the row it was reset
with, the server's answers, the reward ``get_reward`` gave) and the trainer's logged mean reward of
the environment per step. Exit status 0 when the run trained ``--steps`` steps.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from typing import Any, ClassVar

from trex_eval.reward.repair_client import RepairEnvironment

SYSTEM = (
    "You solve optimisation problems. Reply with a complete Python program only: it models the "
    "problem with gurobipy, solves it and prints the optimal value. Your reply is run as it is."
)
GENERATION_PROMPT = "{{- '<|im_start|>assistant\\n' }}\n{%- endif %}"
TOOL_CHOICE_REQUIRED = "{{- '<|im_start|>assistant\\n<tool_call>\\n' }}\n{%- endif %}"
WHOLE_TURN_IS_THE_PROGRAM = {
    "defaults": {"role": "assistant"},
    "start_anchor": "<|im_start|>assistant\n",
    "fields": {
        "tool_calls": {
            "open": "<tool_call>\n",
            "close_pattern": r"(?:</tool_call>\s*)?(?:<\|im_end\|>\s*)?$",
            "repeats": True,
            "content": "text",
            "transform": {
                "type": "function",
                "function": {"name": "run_program", "arguments": {"program": "{content}"}},
            },
        }
    },
}


class SeenEnvironment(RepairEnvironment):
    """The repair environment, keeping what each rollout did (class-level: TRL makes the
    instances). Public methods would become tools, hence none is added."""

    rollouts: ClassVar[list[dict[str, Any]]] = []
    _row: dict[str, Any]

    def reset(self, **row: Any) -> str | None:
        self._row = {key: row.get(key) for key in ("benchmark", "problem_id")}
        return super().reset(**row)

    def get_reward(self) -> float | None:
        reward = super().get_reward()
        steps = [
            {key: answer[key] for key in ("session", "turn", "done", "failure", "reward")}
            | {"record_reward": answer["record"]["reward"]}
            for answer in self.answers
        ]
        self.rollouts.append({**self._row, "steps": steps, "reward": reward})
        return reward


def tokenizer(model: str) -> Any:
    """SmolLM2's tokenizer with the tool-calling template and the whole-turn response parser."""
    from transformers import AutoTokenizer
    from trl.chat_template_utils import qwen2_5_chat_template

    loaded = AutoTokenizer.from_pretrained(model)
    template = qwen2_5_chat_template.replace(GENERATION_PROMPT, TOOL_CHOICE_REQUIRED)
    if template == qwen2_5_chat_template:
        raise SystemExit("trl's qwen2_5.jinja changed: its generation prompt was not found")
    loaded.chat_template = template
    loaded.response_template = WHOLE_TURN_IS_THE_PROGRAM
    return loaded


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", required=True, help="the trex-eval serve address")
    parser.add_argument("--dataset", required=True, help="a JSONL file written by `trex-eval export-rl`")
    parser.add_argument("--model", required=True, help="a Hugging Face model folder")
    parser.add_argument("--steps", type=int, default=2)
    parser.add_argument("--turns", type=int, default=2)
    args = parser.parse_args()

    import torch
    from datasets import Dataset
    from trl import GRPOConfig, GRPOTrainer

    torch.manual_seed(0)
    torch.set_num_threads(2)
    with open(args.dataset, encoding="utf-8") as handle:
        rows = [json.loads(line) for line, _ in zip(handle, range(args.steps), strict=False)]
    for row in rows:
        row["prompt"] = [{"role": "system", "content": SYSTEM}, *row["prompt"][1:]]
    with tempfile.TemporaryDirectory() as out:
        config = GRPOConfig(
            output_dir=out,
            max_steps=args.steps,
            per_device_train_batch_size=2,
            num_generations=2,
            max_completion_length=160,
            max_tool_calling_iterations=args.turns,
            learning_rate=1e-6,
            logging_steps=1,
            save_strategy="no",
            report_to=[],
            use_cpu=True,
            bf16=False,
            seed=0,
        )
        trainer = GRPOTrainer(
            model=args.model,
            processing_class=tokenizer(args.model),
            args=config,
            train_dataset=Dataset.from_list(rows),
            environment_factory=SeenEnvironment.factory(args.url, turns=args.turns, timeout_s=300.0),
        )
        trainer.train()
        column = f"rewards/{SeenEnvironment.__name__}/mean"
        logged = [entry[column] for entry in trainer.state.log_history if column in entry]
        steps = trainer.state.global_step
    print(json.dumps({"steps": steps, "rollouts": SeenEnvironment.rollouts, "logged": logged}))
    return 0 if steps == args.steps else 1


if __name__ == "__main__":
    sys.exit(main())
