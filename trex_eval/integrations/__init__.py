"""Adapters that let other evaluation frameworks run trex-eval's benchmarks and grading.

Each subpackage imports its framework lazily, on first use: nothing in trex-eval's core imports a
framework, and an adapter is usable only where its extra is installed (``trex-eval[integrations]``).
"""
