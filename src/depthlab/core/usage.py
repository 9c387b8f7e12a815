"""What a job used, logged when it exits: CPU seconds and peak memory (no torch).

benchmarks/resources.py reads the line to check depthlab.planner.resources against every job:
Snakemake's `benchmark:` files sample a job every 30 s after its first 15 s, so they lose the
end of its CPU time and can miss its peak.
"""

from __future__ import annotations

import atexit
import logging
import os


def peak_mb() -> float:
    """This process's peak resident memory in MB (VmHWM of /proc/self/status, which exec
    resets, unlike getrusage's ru_maxrss, which a child inherits from its parent); NaN off
    Linux."""
    try:
        with open("/proc/self/status") as status:
            line = next(x for x in status if x.startswith("VmHWM:"))
    except (OSError, StopIteration):
        return float("nan")
    return int(line.split()[1]) / 1024


def log_use() -> None:
    """Log `used cpu_s=<user + system seconds, all threads> peak_mb=<peak_mb()>`."""
    times = os.times()
    logging.info("used cpu_s=%.2f peak_mb=%.1f", times.user + times.system, peak_mb())


def log_use_at_exit() -> None:
    """Log what the process used (`log_use`) when it exits, after whatever it logs last."""
    atexit.register(log_use)
