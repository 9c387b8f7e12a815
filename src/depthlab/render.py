"""Draw one named target from its study's fits (see depthlab.targets for the catalogue)."""

from __future__ import annotations

from collections.abc import Callable

import pandas as pd

from depthlab import stack96_figures, stack96_tables
from depthlab.figures import save
from depthlab.tables import write_table
from depthlab.targets import BY_NAME

# name -> (function of (fits, analysis config), title, note)
TABLES: dict[str, tuple[Callable, str, str]] = {
    "table_twenty_layers": (
        lambda f, a: stack96_tables.twenty_layers(f, a["single_depth"]),
        "First and last block gradient at one depth",
        "Gradient = Frobenius norm of dLoss/dθ over all parameters of the block.",
    ),
    "table_grad_ratio_by_depth": (
        lambda f, a: stack96_tables.grad_ratio_by_depth(f),
        "First/last gradient ratio by depth (median across seeds, seed range beside)",
        "Above 1 the late blocks starve, below 1 the early ones.",
    ),
    "table_stream_growth": (
        lambda f, a: stack96_tables.stream_growth(f),
        "Pre-LN residual-stream growth (medians across seeds)",
        "The exponent is the note's one-depth estimate ln(factor)/ln(L); the budget columns "
        "fit V_l = V_0 + c·l across layers.",
    ),
    "table_output_scale": (
        lambda f, a: stack96_tables.output_scale(f),
        "Stream growth against the output scale of Wo and W2",
        "One-depth exponent ln(factor)/ln(L) at the deepest depth, and the slope of ln(factor) "
        "on ln(L) across depths with a 95% t-interval across seeds.",
    ),
    "table_grad_ratio_sensitivity": (
        lambda f, a: stack96_tables.grad_ratio_sensitivity(f),
        "Gradient ratio under each open setting, changed one at a time (medians)",
        "baseline = the study's settings; each other row changes one setting.",
    ),
}

FIGURES: dict[str, Callable] = {
    "fig_grad_profile": stack96_figures.grad_profile,
    "fig_grad_ratio_by_depth": stack96_figures.grad_ratio_by_depth,
    "fig_stream_sd": stack96_figures.stream_sd,
    "fig_variance_budget": stack96_figures.variance_budget,
}


def render(name: str, fits: pd.DataFrame, analysis: dict, outputs: dict[str, str]) -> None:
    """Write the outputs of target `name` (md+csv or png+svg) from the study's fits."""
    target = BY_NAME[name]
    if target.kind == "table":
        build, title, note = TABLES[name]
        write_table(build(fits, analysis), outputs["md"], outputs["csv"], title, note)
    else:
        save(FIGURES[name](fits), outputs["png"], outputs["svg"])
