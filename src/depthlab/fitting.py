"""Which fit function each study uses."""

from __future__ import annotations

import pandas as pd

from depthlab import stack96

FITTERS = {"stack96": stack96.fit}


def fit_study(study: str, table: pd.DataFrame) -> pd.DataFrame:
    """The fits of one study's aggregated table."""
    return FITTERS[study](table)
