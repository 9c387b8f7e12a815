"""depthlab's benchmark suite: `python -m benchmarks.run` (see docs/PERFORMANCE.md)."""
