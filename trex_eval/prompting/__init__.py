"""Problem -> Prompt: :mod:`.render` (upstream T-Rex templates and the project's jinja2 prompt
sets) and :mod:`.fewshot` (deterministic few-shot selection that never shows a twin)."""
