"""Logging set-up for workflow scripts: everything to the rule's log file."""

from __future__ import annotations

import logging


def to_file(path: str) -> None:
    """Send this process's logging (INFO and up) to `path`."""
    logging.basicConfig(
        filename=path, level=logging.INFO, force=True,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
