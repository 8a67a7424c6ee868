"""Child-process entry point: serve one GGUF file over OpenAI-compatible HTTP with xllamacpp.

The ``local`` backend runs ``python -m trex_eval.backends.llama_server --model PATH --port N ...``
and talks to it over loopback; the harness itself never imports xllamacpp. llama.cpp's server
runs on its own native threads inside this process, so keeping it out of the harness process
keeps those threads out of every sandbox worker the harness forks.

The process serves until it receives SIGTERM or SIGINT, or until its parent (``--parent-pid``)
dies (checked once a second), then shuts the server down and exits 0. A model that fails to load
exits 1 with the reason on stderr, which the parent's log captures.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
from collections.abc import Sequence

_STOP_SIGNALS = {signal.SIGTERM, signal.SIGINT}


def _parse(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m trex_eval.backends.llama_server")
    parser.add_argument("--model", required=True, help="GGUF file to serve")
    parser.add_argument("--alias", required=True, help="model id reported by /v1/models and responses")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument(
        "--parent-pid",
        type=int,
        default=None,
        help="exit when this process is no longer the parent (default: the parent at start-up)",
    )
    parser.add_argument("--threads", type=int, default=2, help="CPU threads for decoding and prompt")
    parser.add_argument("--ctx-size", type=int, default=8192, help="context tokens per parallel slot")
    parser.add_argument("--parallel", type=int, default=1, help="requests decoded concurrently")
    parser.add_argument("--cache-ram-mib", type=int, default=1024, help="prompt-cache RAM cap")
    parser.add_argument(
        "--prompt-cache",
        action="store_true",
        help="reuse the KV cache of earlier requests by default (faster, but answers for a seed "
        "then depend on which request came before)",
    )
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    """Serve until told to stop; returns the process exit status."""
    args = _parse(argv)
    # Passed explicitly because a parent killed while this interpreter was still starting would
    # already have been replaced by init when os.getppid() is first read.
    parent = args.parent_pid if args.parent_pid is not None else os.getppid()
    # Block the stop signals before llama.cpp starts its threads (they inherit the mask), so that
    # only the sigtimedwait below receives them and the server is shut down from one place.
    signal.pthread_sigmask(signal.SIG_BLOCK, _STOP_SIGNALS)

    if os.getppid() != parent:
        return 0

    import xllamacpp

    params = xllamacpp.CommonParams()
    params.model.path = args.model
    params.model_alias = {args.alias}
    params.hostnames = [args.host]
    params.port = args.port
    params.n_parallel = args.parallel
    params.n_ctx = args.ctx_size * args.parallel
    params.cpuparams.n_threads = args.threads
    params.cpuparams_batch.n_threads = args.threads
    params.cache_ram_mib = args.cache_ram_mib
    params.cache_prompt = args.prompt_cache
    try:
        server = xllamacpp.Server(params)
    except Exception as error:  # the binding raises plain exceptions for load failures
        print(f"llama_server: cannot serve {args.model}: {error}", file=sys.stderr, flush=True)
        return 1
    print(f"llama_server: serving {args.alias} at {server.listening_address}", flush=True)
    while signal.sigtimedwait(_STOP_SIGNALS, 1.0) is None:
        if os.getppid() != parent:
            print("llama_server: parent process died, shutting down", flush=True)
            break
    del server  # joins llama.cpp's threads and closes the socket
    return 0


if __name__ == "__main__":
    sys.exit(main())
