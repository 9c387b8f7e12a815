"""A study's fit tables as the claims ledger reads them: every arm's (each fitted on its own),
and the rows the study derives across its arms (its fit module's `across_arms`, where it has
one: the fixes training comparison's best recipes). In the studies layer, which may look a
study's fit module up by name; the claims layer receives the tables."""

from __future__ import annotations

import importlib
from pathlib import Path

import pandas as pd

from depthlab.analysis.fits import read_fits


def study_fits(study: str, paths: list[str | Path]) -> pd.DataFrame:
    """The fit tables of `study` at `paths` (read_fits), with its across-arm rows appended."""
    fits = read_fits(paths)
    derive = getattr(importlib.import_module(f"depthlab.studies.{study}.fit"), "across_arms",
                     None)
    return fits if derive is None else pd.concat([fits, derive(fits)], ignore_index=True)
