"""The table of the monitor note: the scale of the head's input across depths."""

from __future__ import annotations

import pandas as pd

from depthlab.analysis.select import pick
from depthlab.analysis.tables import spread
from depthlab.studies.monitor.fit import one_final_norm
from depthlab.vocabulary.variants import label, order


def head_input_scale(fits: pd.DataFrame) -> pd.DataFrame:
    """Median sd of the head's input (seed range beside) by placement and depth, with the
    final LayerNorm on and off, and the stream's growth rms(x_L)/rms(x_0) before it."""
    head = pick(fits, quantity="head_input_sd")
    growth = one_final_norm(pick(fits, quantity="stream_rms_growth"))
    rows = []
    for placement in order(set(head["placement"])):
        for depth in sorted(head["depth"].unique()):
            cell = head[(head["placement"] == placement) & (head["depth"] == depth)]
            if cell.empty:
                continue
            row = {"placement": label(placement), "L": int(depth)}
            g = growth[(growth["placement"] == placement) & (growth["depth"] == depth)]
            row["stream rms(x_L) / rms(x_0)"] = g["median"].iloc[0]
            for final_norm, r in cell.set_index("final_norm").sort_index(
                    ascending=False).iterrows():
                row[f"head input sd, final norm {final_norm}"] = r["median"]
                row[f"seed range ({final_norm})"] = spread(r["min"], r["max"])
            rows.append(row)
    return pd.DataFrame(rows)
