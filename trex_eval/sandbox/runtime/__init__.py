"""Code that runs INSIDE the sandbox.

Everything under this package executes in the sandboxed worker processes, never in the
harness. It imports only the standard library and the solver libraries it hooks; it imports
nothing from the rest of ``trex_eval`` (the harness loads it under the private package name
``trex_runtime`` with ``python -I``, see :mod:`trex_eval.sandbox.launch`).

Modules:

``server``     the warm worker: pre-imports solver libraries, forks one child per job,
               supervises it (wall clock, output size, process count) and replies.
``confinement`` the worker's start-up checks: per-job PID namespaces, job uid, RLIMIT_NPROC.
``workdir``    a job's directories: written before the fork, collected from and wiped after.
``processes``  the process table below the worker, and the sweep of a job's leftovers.
``warming``    the worker importing the libraries its jobs use, for later forks.
``child``      what the forked child does: confine itself, run the program as ``__main__``,
               report through the private result channel.
``channel``    the result channel (an anonymous memfd, one JSON line per record, per-job nonce).
``capture``    the recorder the solver hooks report to, plus helpers for the matrix form.
``hooks/``     one small module per solver library, found without a list: wrap its solve
               calls, read status, objective and matrix; declare what the harness lists.
``imports``    post-import hooks and the gurobipy ``real``/``highs`` switch.
``native``     the few Linux system calls the standard library lacks (unshare, setns, prctl,
               capset), via ctypes.
``syscalls``   the seccomp filter each job installs (memfd, System V IPC, AF_UNIX sockets,
               io_uring and foreign ABIs refused).
``framing``    length-prefixed JSON messages on file descriptors (worker <-> harness).
``contract``   what both sides agree on: names, the protocol version, the worker configuration,
               a job's order and the worker's reply (``JobReply``).
``probe``      the isolation self-check run by :func:`trex_eval.sandbox.probe_isolation`.
``licence``    the solver licence check run by :func:`trex_eval.sandbox.licence_preflight`.
"""
