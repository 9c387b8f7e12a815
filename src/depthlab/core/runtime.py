"""Process set-up for compute jobs (measure, train): threads and the C allocator."""

from __future__ import annotations

import atexit
import ctypes
import ctypes.util
import logging
import os
import sys

import torch

# glibc mallopt parameters (malloc.h)
M_TRIM_THRESHOLD = -1
M_MMAP_THRESHOLD = -3
MMAP_THRESHOLD_MAX = 32 << 20  # bytes: glibc's upper limit on 64-bit
NEVER_TRIM = -1  # M_TRIM_THRESHOLD -1: never return the heap top to the kernel


def keep_freed_memory() -> bool:
    """Make glibc's malloc keep freed memory for reuse instead of returning it to the kernel.

    A forward and backward pass allocates and frees activations of a few MB each; by default
    glibc serves these from mmap and gives them back on free, so every new tensor costs page
    faults on first touch (about 0.8 ms per MB on this project's virtual machines). Returns
    whether the setting took (False off glibc, where nothing is changed).
    """
    if not sys.platform.startswith("linux"):
        return False
    name = ctypes.util.find_library("c")
    if name is None:
        return False
    libc = ctypes.CDLL(name)
    if not hasattr(libc, "mallopt"):
        return False
    return bool(libc.mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD_MAX)) and bool(
        libc.mallopt(M_TRIM_THRESHOLD, NEVER_TRIM)
    )


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
    """Log the CPU seconds (user + system, all threads) and the peak memory the process used,
    the line benchmarks/requests.py reads: Snakemake's `benchmark:` files sample both every
    30 s after a job's first 15 s, so they miss the end of a job's CPU time and can miss its
    peak."""
    times = os.times()
    logging.info("used cpu_s=%.2f peak_mb=%.1f", times.user + times.system, peak_mb())


def start_compute_job(threads: int) -> None:
    """Use `threads` intra-op threads (what the scheduler granted), keep freed memory, and log
    what the job used when it exits (`log_use`)."""
    torch.set_num_threads(threads)
    keep_freed_memory()
    atexit.register(log_use)
