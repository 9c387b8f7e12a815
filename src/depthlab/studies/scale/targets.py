"""The tables and figures of the scale study (docs/SCALE.md): the notes' asymptotic claims where
they are asymptotic, at depths to 1024 and widths to 1024, declared once."""

from depthlab.vocabulary.targets import Target, declare

# where the study's targets come in every list of them (the notes' order, then the fixes
# study's, then the scale study's; depthlab.studies finds the study by its package)
POSITION = 8

TARGETS = declare(
    "scale",
    Target(
        "table_scale_exponents",
        "scale: local stream exponent and omega slope per octave of depth, to L = 1024",
        draw="tables:local_exponents", reads=("depth",),
        title="Local exponents at depth, at init: d ln rms(x_l) / d ln l and omega's log-log "
        "slope over one octave of blocks, in the deepest cell of each placement",
        note="Per seed, over the octave l/2–l of the deepest cell's own profile: the stream's "
        "local exponent ln(rms(x_l)/rms(x_{l/2}))/ln 2 (0.5: sqrt(depth)), the same for the "
        "finite-depth prediction sqrt(V_0 + l σ²) with the seed's σ² = (V_L − V_0)/L, and the "
        "OLS slope of ln mean|D_k| on ln k (theory096: −0.5); mean and 95% t-interval across "
        "seeds.",
        caption="Local exponents (dimensionless) per octave of blocks in each placement's "
        "deepest cell: the stream's, the finite-depth prediction's and omega's; mean and 95% "
        "CI across seeds.",
    ),
    Target(
        "fig_scale_local_exponents",
        "scale: the stream's local exponent and omega's local slope against depth to 1024",
        draw="figures:local_exponents", reads=("depth",),
        caption="Left: the stream's local exponent d ln rms(x_l)/d ln l over the octave l/2–l "
        "(dimensionless; 0.5 = sqrt(depth)) with Pre-LN's finite-depth prediction "
        "sqrt(V_0 + l σ²) (dashed); right: omega's local log-log slope over the same octave "
        "(theory096: −0.5); each placement's deepest cell, mean across seeds with the seeds' "
        "range as a band.",
    ),
    Target(
        "table_scale_grad_ratio",
        "scale: first/last gradient ratio against depth to 1024, both readings of the gradient",
        draw="tables:grad_ratio_by_depth", reads=("grad*",),
        title="First/last block gradient ratio ‖g_1‖/‖g_L‖ at depth, at init (MSE)",
        note="A block's gradient over all its parameters, or over its six weight matrices (no "
        "LayerNorm counted for any placement); median and seed range; the local exponent "
        "ln(r(L)/r(L'))/ln(L/L') to the next shallower depth L', mean and 95% t-interval.",
        caption="‖g_1‖/‖g_L‖ (dimensionless) per placement, reading and depth, median and seed "
        "range, with its local exponent against depth (mean and 95% CI).",
    ),
    Target(
        "fig_scale_grad_ratio",
        "scale: first/last gradient ratio against depth to 1024, a panel per reading",
        draw="figures:grad_ratio", reads=("grad*",),
        caption="‖g_1‖/‖g_L‖ (dimensionless, log) against depth L (blocks, log), a panel per "
        "reading of a block's gradient (all parameters; weight matrices), a curve per "
        "placement: median, band: seed range.",
    ),
    Target(
        "fig_scale_width",
        "scale: stream growth and last token correlation against width to 1024",
        draw="figures:width", reads=("width*",),
        caption="rms(x_L)/rms(x_0) and the mean pairwise token cosine after block L "
        "(dimensionless) against width d (log), a row per depth, a curve per placement: "
        "median, band: seed range.",
    ),
)
