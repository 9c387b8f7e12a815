"""Which fit function each study uses."""

from __future__ import annotations

import pandas as pd

from depthlab import monitor, stack96, theory096, training, varsplit

FITTERS = {
    "stack96": stack96.fit,
    "theory096": theory096.fit,
    "monitor": monitor.fit,
    "training": training.fit,
    "varsplit": varsplit.fit,
}


def fit_study(study: str, table: pd.DataFrame) -> pd.DataFrame:
    """The fits of one study's aggregated table."""
    return FITTERS[study](table)
