"""Benchmarks and drills of mindnet, run from the repository root (`python -m benchmarks.bench_scale`).

Not shipped: the wheel holds only `mindnet` (pyproject.toml; .ci/wheel-smoke checks it).
"""
