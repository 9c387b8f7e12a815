"""Process set-up for compute jobs (measure, train): threads, the C allocator, and the log line
of what a job used on a GPU."""

from __future__ import annotations

import atexit
import ctypes
import ctypes.util
import logging
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


def log_device_use() -> None:
    """Where this process used a GPU, log `device cuda peak_mb=<the most memory PyTorch's
    allocator reserved on it, MB>` (benchmarks/resources.py reads it: the job ran on cuda, and
    what it held there against depthlab.planner.resources.device_mb)."""
    if torch.cuda.is_initialized():
        logging.info("device cuda peak_mb=%.1f", torch.cuda.max_memory_reserved() / 2**20)


def start_compute_job(threads: int) -> None:
    """Use `threads` intra-op threads (what the scheduler granted), keep freed memory, and log
    the job's GPU use when it exits (`log_device_use`)."""
    torch.set_num_threads(threads)
    keep_freed_memory()
    atexit.register(log_device_use)
