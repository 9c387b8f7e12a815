"""The tables of the scale study: the local exponents at the octave ends of the deepest cells,
and the gradient ratio against depth under both readings of a block's gradient."""

from __future__ import annotations

import pandas as pd

from depthlab.analysis.select import pick
from depthlab.analysis.tables import mean_interval, median_range
from depthlab.studies.scale.fit import deepest
from depthlab.vocabulary.variants import label, order

SHOWN_ENDS = (32, 128, 512, 1024)  # the octave ends a table shows, where present (else all)
GRAD_READING = {"params": "all parameters", "weights": "weight matrices"}


def local_exponents(fits: pd.DataFrame) -> pd.DataFrame:
    """Per placement and octave end l of the deepest cell of the depth arm: the stream's local
    exponent d ln rms / d ln l and the finite-depth prediction's (mean and 95% CI), and omega's
    local log-log slope."""
    deep = deepest(fits, "depth")
    ends = sorted(pick(deep, quantity="stream_local_exponent")["layer"].unique())
    rows = []
    for placement in order(set(deep["placement"])):
        for end in [e for e in ends if e in SHOWN_ENDS] or ends:
            row = {"placement": label(placement), "octave (blocks)": f"{int(end) // 2}–{int(end)}"}
            for quantity, column in (("stream_local_exponent", "stream exponent"),
                                     ("stream_local_prediction", "sqrt(V_0 + l σ²) exponent"),
                                     ("omega_local_slope", "ω slope")):
                cell = pick(deep, quantity=quantity, placement=placement, layer=end)
                row[column] = mean_interval(cell.iloc[0]) if len(cell) == 1 else "—"
            if any(v != "—" for k, v in row.items() if k not in ("placement", "octave (blocks)")):
                rows.append(row)
    return pd.DataFrame(rows)


def grad_ratio_by_depth(fits: pd.DataFrame) -> pd.DataFrame:
    """The first/last gradient ratio per placement, reading and depth (median and seed range),
    with its local exponent between consecutive depths."""
    rows = []
    ratios = pick(fits, quantity="grad_ratio")
    ratios = ratios[ratios["arm"] != "depth"]
    for (placement, grad_of, depth), cell in ratios.groupby(["placement", "grad_of", "depth"],
                                                             sort=True):
        local = pick(fits, quantity="grad_ratio_local_exponent", placement=placement,
                     grad_of=grad_of, depth=depth)
        rows.append({"placement": label(placement), "gradient": GRAD_READING[grad_of],
                     "L": int(depth), "‖g_1‖/‖g_L‖": median_range(cell.iloc[0]),
                     "local exponent vs L": mean_interval(local.iloc[0]) if len(local) else "—",
                     "_order": order(ratios["placement"]).index(placement)})
    frame = pd.DataFrame(rows)
    if frame.empty:
        return frame
    return frame.sort_values(["_order", "gradient", "L"]).drop(columns="_order")
