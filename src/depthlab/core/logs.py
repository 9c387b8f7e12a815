"""Logging set-up for workflow scripts: everything to the rule's log file, one line per finished
cell or checkpoint among it, and at most one progress line every CONSOLE_EVERY seconds of a
job to the console (stderr, which Snakemake shows): a long job says how far it is, a short one
stays quiet."""

from __future__ import annotations

import atexit
import logging
import os
import sys
import time
from typing import NoReturn

PROGRESS = logging.getLogger("depthlab.progress")
CONSOLE = logging.getLogger("depthlab.progress.console")
CONSOLE_EVERY = 30.0  # seconds between a job's console lines


def to_file(path: str) -> None:
    """Send this process's logging (INFO and up) and Python warnings to `path`, the progress
    lines also to stderr, and the error that ends the process to the log too (Snakemake prints
    a failed job's log; stderr may be lost, e.g. on a cluster). The console then shows
    Snakemake's progress and one line per finished cell, no library warning."""
    logging.basicConfig(
        filename=path, level=logging.INFO, force=True,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    logging.captureWarnings(True)  # warnings.warn -> logger 'py.warnings' -> the file
    console = logging.StreamHandler(sys.stderr)
    console.setFormatter(logging.Formatter("%(message)s"))
    CONSOLE.handlers, CONSOLE.propagate = [console], False

    def log_then_raise(kind, error, tb):
        logging.getLogger("depthlab").error("%s: %s", kind.__name__, error)
        sys.__excepthook__(kind, error, tb)

    sys.excepthook = log_then_raise


def end_job() -> NoReturn:
    """End a job's process once its outputs are written and closed: the exit handlers run (the
    usage line, the log file's last lines), the console is flushed, and the process exits 0
    without the interpreter's teardown (os._exit, as multiprocessing's forked children end).
    Tearing down the modules of torch, pandas and matplotlib does nothing a finished job needs
    and costs 0.2-0.5 s of CPU a job (docs/PERFORMANCE.md). A job that fails never gets here:
    it ends as Python ends it, with its error and status 1."""
    atexit._run_exitfuncs()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


class Progress:
    """Reports units of work as they finish: elapsed time, and what remains estimated from the
    units' relative costs (`weights`, e.g. FLOPs) at the rate so far."""

    def __init__(self, name: str, weights: list[float]):
        self.name, self.weights = name, weights
        self.done_weight, self.count = 0.0, 0
        self.start = time.perf_counter()
        self.shown = 0.0  # when the last console line was (seconds into the job)

    def step(self, what: str) -> None:
        """Unit number `count` (in the order of `weights`) finished; log one line, and show it
        on the console when CONSOLE_EVERY seconds have passed since the job's last one (and the
        last unit of a job that showed any)."""
        self.done_weight += self.weights[self.count]
        self.count += 1
        elapsed = time.perf_counter() - self.start
        left = elapsed * (sum(self.weights) / self.done_weight - 1) if self.done_weight else 0.0
        line = (f"{self.name}: {what} ({self.count}/{len(self.weights)}) done, {elapsed:.0f} s "
                f"so far, about {left:.0f} s left")
        PROGRESS.info(line)
        last = self.count == len(self.weights)
        if elapsed - self.shown >= CONSOLE_EVERY or (last and self.shown):
            CONSOLE.info(line)
            self.shown = elapsed
