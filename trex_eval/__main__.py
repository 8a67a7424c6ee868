"""``python -m trex_eval`` and the ``trex-eval`` command: the CLI, loaded so that a Ctrl-C that
comes while it loads (the first few tenths of a second) exits 130 with a word, as one later does,
instead of a traceback of whatever module was being imported."""

from __future__ import annotations

import sys


def entry() -> None:
    """Load the CLI and run it (the console script's target)."""
    try:
        from trex_eval import config

        config.single_threaded_blas()
        from trex_eval.cli import main
    except KeyboardInterrupt:
        print("interrupted before anything was stored", file=sys.stderr)
        raise SystemExit(130) from None
    main()


if __name__ == "__main__":
    entry()
