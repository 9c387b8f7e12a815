"""The tables and figures of the stack96 note (“What breaks when you stack 96 blocks”),
declared once."""

from depthlab.vocabulary.targets import Target, declare

GRADIENT = ("Gradient = Frobenius norm of dLoss/dθ over all parameters of the block (units of "
            "the loss per unit parameter; the loss is MSE to N(0, 1) targets).")

# the stream targets where the stream arm holds more than Pre-LN, the default configs' one
# placement (other placements, own blocks: depthlab.vocabulary.variants.per_placement)
PER_PLACEMENT = "per placement (a built-in placement or an own block, under its own label)"
PANELS = ("a row of panels per placement (a built-in placement or an own block, titled with its "
          "own label), a panel per output scale (with one output scale, a panel per placement)")

# where the study's targets come in every list of them (the notes' order, then the fixes
# study's, then the scale study's; depthlab.studies finds the study by its package)
POSITION = 1

TARGETS = declare(
    "stack96",
    Target(
        "table_twenty_layers",
        "stack96 table 1: layer-1/layer-L gradients and ratio at one depth (L=20)",
        draw="tables:twenty_layers", reads=("grad",), options=("single_depth",),
        on_grid=(("single_depth", "depth"),),
        title="First and last block gradient at one depth",
        note="Gradient = Frobenius norm of dLoss/dθ over all parameters of the block.",
        caption="Gradient norm of the first and the last block at one depth (config "
        "`analysis.single_depth`, the note's L = 20) for seed 0, and the first/last ratio for "
        f"seed 0 and as the median across seeds with the seed range. {GRADIENT} A row per "
        "placement measured (the note's: Post-LN, Pre-LN and no residual).",
    ),
    Target(
        "table_grad_ratio_by_depth",
        "stack96 table 2: first/last gradient ratio by depth and placement",
        draw="tables:grad_ratio_by_depth", reads=("grad",),
        title="First/last gradient ratio by depth (median across seeds, seed range beside)",
        note="Above 1 the late blocks starve, below 1 the early ones.",
        caption="First-block over last-block gradient norm ‖g_1‖/‖g_L‖ (dimensionless; 1 = "
        "balanced, below 1 the early blocks starve, above 1 the late ones) by depth L and "
        "placement: median across seeds, seed range beside.",
    ),
    Target(
        "table_stream_growth",
        "stack96 table 3: stream sd growth, exponent and variance-budget fit (each placement)",
        draw="tables:stream_growth", reads=("stream",),
        title="Pre-LN residual-stream growth (medians across seeds)",
        note="The exponent is the note's one-depth estimate ln(factor)/ln(L); the budget columns "
        "fit V_l = V_0 + c·l across layers.",
        caption="Pre-LN residual-stream sd (x.std() over all entries, in units of the input's "
        "sd) after block 1 and after block L, their ratio (factor), sqrt(L), the note's "
        "one-depth exponent ln(factor)/ln(L), and a variance-budget fit V_l = V_0 + c·l across "
        "blocks; medians across seeds.",
        per_placement=(
            "Residual-stream growth per placement (medians across seeds)",
            "Residual-stream sd (x.std() over all entries, in units of the input's sd) after "
            "block 1 and after block L, their ratio (factor), sqrt(L), the note's one-depth "
            "exponent ln(factor)/ln(L), and a variance-budget fit V_l = V_0 + c·l across blocks, "
            f"{PER_PLACEMENT}; medians across seeds."),
    ),
    Target(
        "table_output_scale",
        "stack96 table 4: stream growth factor and exponent per output scale",
        draw="tables:output_scale", reads=("stream",),
        title="Stream growth against the output scale of Wo and W2",
        note="One-depth exponent ln(factor)/ln(L) at the deepest depth, and the slope of "
        "ln(factor) on ln(L) across depths with a 95% t-interval across seeds.",
        caption="Stream growth factor and one-depth exponent ln(factor)/ln(L) at the deepest "
        "depth, per output scale of the initial Wo and W2 (1, 3, 10), and the exponent fitted "
        "across depths (slope of ln factor on ln L, mean and 95% t-interval across seeds). "
        "Dimensionless.",
        per_placement=(
            "Stream growth per placement against the output scale of Wo and W2",
            "Stream growth factor and one-depth exponent ln(factor)/ln(L) at the deepest depth, "
            f"{PER_PLACEMENT} and output scale of the initial Wo and W2 (applied by depthlab's "
            "built-in blocks only: an own block's row says it was given it), and the exponent "
            "fitted across depths (slope of ln factor on ln L, mean and 95% t-interval across "
            "seeds). Dimensionless."),
    ),
    Target(
        "table_grad_ratio_sensitivity",
        "stack96: gradient ratio under each open setting changed one at a time",
        draw="tables:grad_ratio_sensitivity", reads=("grad", "sens_*"),
        title="Gradient ratio under each open setting, changed one at a time (medians)",
        note="baseline = the study's settings; each other row changes one setting.",
        caption="Median first/last gradient ratio (dimensionless) when one setting the note "
        "leaves open (loss, tokens, mask, attention init, which gradient) is changed at a "
        "time; baseline = the study's settings.",
    ),
    Target(
        "fig_grad_profile",
        "stack96: gradient norm by block, panel per depth, line per placement",
        draw="figures:grad_profile", reads=("grad",),
        caption="Gradient norm of each block (Frobenius norm of dLoss/dθ over the block's "
        "parameters) against its index, a panel per depth, a line per placement; median and "
        "seed range, log scale.",
    ),
    Target(
        "fig_grad_ratio_by_depth",
        "stack96: first/last gradient ratio against depth per placement",
        draw="figures:grad_ratio_by_depth", reads=("grad",),
        caption="First/last block gradient ratio ‖g_1‖/‖g_L‖ (dimensionless) against depth L, "
        "a curve per placement measured (colour and marker from the registry), log-log; "
        "median, band: seed range.",
    ),
    Target(
        "fig_stream_sd",
        "stack96: stream sd by block per depth and output scale (each placement), sqrt reference",
        draw="figures:stream_sd", reads=("stream",),
        caption="Pre-LN residual-stream sd after each block (units of the input sd), a panel "
        "per output scale, a line per depth (median; band: seed range), beside two "
        "predictions: the finite-depth law sd_l = sd_0·√((V_0 + l·σ²)/V_0) with σ² = "
        "(V_L − V_0)/L, the mean per-block variance increment measured at the deepest depth "
        "(medians of the fit's stream variance), and the note's sd_1·√l.",
        per_placement=(
            "", f"Residual-stream sd after each block (units of the input sd), {PANELS}, a line "
            "per depth (median; band: seed range), beside two predictions: the finite-depth law "
            "sd_l = sd_0·√((V_0 + l·σ²)/V_0) with σ² = (V_L − V_0)/L, the mean per-block "
            "variance increment measured at the deepest depth (medians of the fit's stream "
            "variance), and the note's sd_1·√l."),
    ),
    Target(
        "fig_variance_budget",
        "stack96: measured stream variance against V_0 + increments and the linear fit",
        draw="figures:variance_budget", reads=("stream",),
        caption="Measured Pre-LN stream variance after each block (units of the input "
        "variance) against V_0 plus the summed branch increments, and the linear fit "
        "V_0 + c·l, at the deepest depth.",
        per_placement=(
            "", "Measured stream variance after each block (units of the input variance) "
            "against V_0 plus the summed branch increments (where the block marks its branches) "
            f"and the linear fit V_0 + c·l, at the deepest depth; {PANELS}."),
    ),
)
