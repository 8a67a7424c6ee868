"""``python -m trex_eval.integrations.lm_eval [--path | --write | --check]``.

``--path`` (the default) prints the folder of the task configs for lm-eval's ``--include_path``;
``--write`` rewrites them from trex-eval's registry (after a benchmark, suite or rule changed, in a
checkout); ``--check`` exits 1 naming each config that differs from what ``--write`` would write.
"""

from __future__ import annotations

import argparse
import sys

from trex_eval.integrations.lm_eval import tasks_dir


def main(argv: list[str] | None = None) -> int:
    """Run the command line; returns the exit status."""
    parser = argparse.ArgumentParser(prog="python -m trex_eval.integrations.lm_eval", description=__doc__)
    action = parser.add_mutually_exclusive_group()
    action.add_argument("--path", action="store_true", help="print the task configs' folder (default)")
    action.add_argument("--write", action="store_true", help="rewrite the task configs from the registry")
    action.add_argument("--check", action="store_true", help="exit 1 if a task config is out of date")
    args = parser.parse_args(argv)
    if not (args.write or args.check):
        print(tasks_dir())
        return 0
    from trex_eval.integrations.lm_eval.configs import render_configs

    folder = tasks_dir()
    rendered = {file.name: file.text for file in render_configs()}
    present = {path.name: path.read_text(encoding="utf-8") for path in folder.glob("*.yaml")}
    stale = sorted(
        name for name in rendered.keys() | present.keys() if rendered.get(name) != present.get(name)
    )
    if args.check:
        for name in stale:
            print(f"{folder / name}: out of date (run `python -m trex_eval.integrations.lm_eval --write`)")
        return 1 if stale else 0
    folder.mkdir(exist_ok=True)
    for name in stale:
        if name in rendered:
            (folder / name).write_text(rendered[name], encoding="utf-8")
        else:
            (folder / name).unlink()
        print(f"{'wrote' if name in rendered else 'removed'} {folder / name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
