"""Logging set-up for workflow scripts: everything to the rule's log file."""

from __future__ import annotations

import logging
import sys


def to_file(path: str) -> None:
    """Send this process's logging (INFO and up) to `path`, and the error that ends it too
    (Snakemake prints a failed job's log; stderr may be lost, e.g. on a cluster)."""
    logging.basicConfig(
        filename=path, level=logging.INFO, force=True,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )

    def log_then_raise(kind, error, tb):
        logging.getLogger("depthlab").error("%s: %s", kind.__name__, error)
        sys.__excepthook__(kind, error, tb)

    sys.excepthook = log_then_raise
