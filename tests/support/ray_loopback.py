"""A real two-node Ray cluster on loopback for tests: a head and a second raylet (Ray's own
``cluster_utils.Cluster``), each with one CPU.

Ray binds to the machine's outward address, and rewrites 127.0.0.1 in an address into it
(``services.resolve_ip_for_localhost``), unless it is told this is no cluster of machines: tests
never reach an address off loopback. The variable set here reaches the CLI subprocesses a test
starts inside the context.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import pytest


@contextmanager
def loopback_cluster() -> Iterator[str]:
    """Start the cluster; yields its address (``127.0.0.1:PORT``); shuts it down on exit."""
    ray = pytest.importorskip("ray")
    cluster_utils = pytest.importorskip("ray.cluster_utils")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
        patch.setattr(ray._private.ray_constants, "ENABLE_RAY_CLUSTER", False)
        loopback = {"node_ip_address": "127.0.0.1", "object_store_memory": 80 << 20}
        started = cluster_utils.Cluster(
            initialize_head=True, head_node_args={"num_cpus": 1, "include_dashboard": False, **loopback}
        )
        try:
            started.add_node(num_cpus=1, **loopback)
            started.wait_for_nodes()
            assert started.address.startswith("127.0.0.1:"), started.address
            yield started.address
        finally:
            if ray.is_initialized():
                ray.shutdown()
            started.shutdown()
