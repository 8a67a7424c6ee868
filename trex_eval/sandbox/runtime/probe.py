"""Isolation self-check, run by the harness under a candidate sandbox command.

The harness listens on a loopback port and passes its number; prints one JSON object: whether
that port (i.e. the host's network) is unreachable, whether the root file system is
mounted read-only, whether ``/tmp`` is writable, and the effective uid. No side effects outside ``/tmp``
(and its own mount namespace, see :data:`READ_ONLY_HOST`).
"""

from __future__ import annotations

import json
import os
import socket
import tempfile


def _network_blocked(port: int) -> tuple[bool, str]:
    """Whether the harness's listening socket on 127.0.0.1:``port`` is out of reach."""
    try:
        probe = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    except OSError as error:
        return True, f"socket(): {error}"
    probe.settimeout(2.0)
    try:
        probe.connect(("127.0.0.1", port))
    except OSError as error:
        return True, f"connect(127.0.0.1:{port}): {error}"
    finally:
        probe.close()
    return False, f"connect(127.0.0.1:{port}) reached the harness"


def _tmp_writable() -> bool:
    try:
        with tempfile.TemporaryFile(dir="/tmp"):
            return True
    except OSError:
        return False


READ_ONLY_HOST = "read-only-host"
"""Second argument: first make the host read-only as a worker with ``read_only_host`` does (only
under a mount namespace of the probe's own)."""


def main(argv: list[str]) -> int:
    if argv[1:] == [READ_ONLY_HOST]:
        from .confinement import read_only_mounts

        read_only_mounts()
    blocked, how = _network_blocked(int(argv[0]))
    print(
        json.dumps(
            {
                "network_blocked": blocked,
                "network_check": how,
                "root_read_only": all(os.statvfs(path).f_flag & os.ST_RDONLY for path in ("/", "/usr")),
                "tmp_writable": _tmp_writable(),
                "euid": os.geteuid(),
            }
        )
    )
    return 0
