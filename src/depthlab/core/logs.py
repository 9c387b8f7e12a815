"""Logging set-up for workflow scripts: everything to the rule's log file, and one progress line
per finished cell or checkpoint to the console (stderr, which Snakemake shows)."""

from __future__ import annotations

import logging
import sys
import time

PROGRESS = logging.getLogger("depthlab.progress")


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
    PROGRESS.handlers = [console]

    def log_then_raise(kind, error, tb):
        logging.getLogger("depthlab").error("%s: %s", kind.__name__, error)
        sys.__excepthook__(kind, error, tb)

    sys.excepthook = log_then_raise


class Progress:
    """Reports units of work as they finish: elapsed time, and what remains estimated from the
    units' relative costs (`weights`, e.g. FLOPs) at the rate so far."""

    def __init__(self, name: str, weights: list[float]):
        self.name, self.weights = name, weights
        self.done_weight, self.count = 0.0, 0
        self.start = time.perf_counter()

    def step(self, what: str) -> None:
        """Unit number `count` (in the order of `weights`) finished; log one line."""
        self.done_weight += self.weights[self.count]
        self.count += 1
        elapsed = time.perf_counter() - self.start
        left = elapsed * (sum(self.weights) / self.done_weight - 1) if self.done_weight else 0.0
        PROGRESS.info("%s: %s (%d/%d) done, %.0f s so far, about %.0f s left", self.name, what,
                      self.count, len(self.weights), elapsed, left)
