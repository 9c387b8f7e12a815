"""Draw one named target from its study's fits (see depthlab.targets for the catalogue)."""

from __future__ import annotations

from collections.abc import Callable

import pandas as pd

from depthlab import (
    monitor,
    monitor_figures,
    stack96_figures,
    stack96_tables,
    theory096_figures,
    theory096_tables,
    training_figures,
    training_tables,
    varsplit_figures,
    varsplit_tables,
)
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
    "table_omega_exponent": (
        lambda f, a: theory096_tables.omega_exponent(f, a.get("omega_tolerance", 0.1)),
        "Change of the normalised Pre-LN state, D_k = LN(x_k) − LN(x_{k−1}), against theory096",
        "k = block index, x_0 = the input. Slopes: OLS of ln mean|D_k| on ln k per seed, mean and "
        "95% t-interval across seeds; the formula rows are the note's omega_k·√(2/π) counting the "
        "input as term 0 (block k ↔ ω_k) or as a first term (block k ↔ ω_{k+1}); the asymptote "
        "is the O(1/√k) rate (the note's 'about a fifth' = 1/√24). The independence prediction "
        "is the theorem with the measured variances of the input and of each block's output.",
    ),
    "table_block_independence": (
        lambda f, a: theory096_tables.block_independence(f),
        "theory096's independence assumption at init: f_k = x_k − x_{k−1}, what block k adds",
        "Independent block outputs give (V_L − V_0) / Σ Var f_k = 1 and zero correlations; one "
        "σ² gives a drift of 1. Correlations are Pearson over all tokens and coordinates; means "
        "across seeds with 95% t-intervals.",
    ),
    "table_training_summary": (
        lambda f, a: training_tables.summary(f, a.get("preserved_within", 0.2)),
        "What training did to each init-time effect (median across seeds, seed range beside)",
        "change = |dev(end)| / |dev(step 0)| of the seed medians, dev = the deviation from no "
        "effect (ln of a ratio; a slope or exponent itself). An effect is clear when its seed "
        "range of dev excludes 0; both clear: preserved = change within preserved_within of 1, "
        "amplified / reduced above / below, reversed = dev changed sign; else emerged, "
        "vanished or absent. Probes on one fixed validation batch after a backward pass of its "
        "next-character loss. For the loss row, change = end / step 0.",
    ),
    "table_head_input_scale": (
        lambda f, a: monitor.head_input_scale(f),
        "Scale of the head's input by depth, with and without the final LayerNorm (init)",
        "head input sd = x.std() of what the loss reads; stream growth = RMS after the last block "
        "over the input's, before any final norm (medians across seeds).",
    ),
    "table_increment_slopes": (
        lambda f, a: varsplit_tables.increment_slopes(f),
        "Pre-LN variance increments: depth slope per sublayer, V_L/L, link to token correlation",
        "Slope = OLS slope of the increment against the block index, mean of per-seed slopes "
        "(= the pooled slope) with its 95% t-interval across seeds. r = Pearson correlation "
        "across layers of delta_attn(l) with the token correlation of the stream block l reads, "
        "per seed (mean, 95% CI) and between the seed-mean curves.",
    ),
    "table_contribution_ratio": (
        lambda f, a: varsplit_tables.contribution_ratio(f),
        "Contribution ratio of the two sublayers: early, deep, and where they cross",
        "Deep layer = 3L/4 (the note's 48 of 64). Crossover = first block where the seed-mean "
        "attention increment exceeds the seed-mean MLP increment.",
    ),
    "table_uniform_scale": (
        lambda f, a: varsplit_tables.uniform_scale(f),
        "Late/early increment ratio under each residual-scaling scheme",
        "late/early = mean increment over the last quarter of the blocks / over the first "
        "quarter, per seed; mean and 95% t-interval across seeds. Skip rows are in the unit-skip "
        "frame (increment / skip_scale^(2k) at sublayer k): by LayerNorm's scale invariance a "
        "skip scale c is a branch multiplier c^-k, geometric in depth.",
    ),
}

FIGURES: dict[str, Callable] = {
    "fig_grad_profile": stack96_figures.grad_profile,
    "fig_grad_ratio_by_depth": stack96_figures.grad_ratio_by_depth,
    "fig_omega_vs_theory": theory096_figures.omega_vs_theory,
    "fig_block_output_correlation": theory096_figures.block_output_correlation,
    "fig_stream_norm_by_block": monitor_figures.stream_norm_by_block,
    "fig_branch_to_stream_ratio": monitor_figures.branch_to_stream_ratio,
    "fig_stream_sd": stack96_figures.stream_sd,
    "fig_training_loss": training_figures.loss,
    "fig_training_grad_ratio": training_figures.grad_ratio,
    "fig_training_stream_growth": training_figures.stream_growth,
    "fig_training_increments": training_figures.increments,
    "fig_training_omega": training_figures.omega,
    "fig_variance_budget": stack96_figures.variance_budget,
    "fig_increments_by_layer": varsplit_figures.increments_by_layer,
    "fig_token_correlation": varsplit_figures.token_correlation,
    "fig_attn_increment_vs_correlation": varsplit_figures.attn_increment_vs_correlation,
    "fig_residual_scaling": varsplit_figures.residual_scaling,
}


def render(name: str, fits: pd.DataFrame, analysis: dict, outputs: dict[str, str]) -> None:
    """Write the outputs of target `name` (md+csv or png+svg) from the study's fits."""
    target = BY_NAME[name]
    if target.kind == "table":
        build, title, note = TABLES[name]
        write_table(build(fits, analysis), outputs["md"], outputs["csv"], title, note,
                    outputs.get("html"))
    else:
        save(FIGURES[name](fits), outputs["png"], outputs["svg"])
