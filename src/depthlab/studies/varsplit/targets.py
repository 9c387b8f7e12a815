"""The tables and figures of the varsplit note (“varsplit”), declared once."""

from depthlab.vocabulary.targets import Target, declare

UNSCALED = ("base", "init")  # the arms without a residual scale
# the note's arms at its primary activation (ReLU) and the readings' arms; the gelu_* arms,
# which the claims ledger reads where GELU is identified, are not drawn
NOTE_ARMS = (*UNSCALED, "uniform_*", "layerwise", "tokens", "activation")

# the hook points the study's fit reads beyond the stream (the variance increments delta_attn
# and delta_mlp: the stream between the two sublayers): an own block must mark them
HOOK_POINTS = ("mid",)

# where the study's targets come in every list of them (the notes' order, then the fixes
# study's, then the scale study's; depthlab.studies finds the study by its package)
POSITION = 5

TARGETS = declare(
    "varsplit",
    Target(
        "table_increment_slopes",
        "varsplit: depth slope of the MLP and attention increments (95% CI), V_L/L, link",
        draw="tables:increment_slopes", reads=UNSCALED,
        title="Pre-LN variance increments: depth slope per sublayer, V_L/L, link to token "
        "correlation",
        note="Slope = OLS slope of the increment against the block index, mean of per-seed "
        "slopes (= the pooled slope) with its 95% t-interval across seeds. r = Pearson "
        "correlation across layers of delta_attn(l) with the token correlation of the stream "
        "block l reads, per seed (mean, 95% CI) and between the seed-mean curves.",
        caption="OLS slope of the MLP and attention variance increments against the block "
        "index (units of the input variance per block; mean of per-seed slopes with 95% "
        "t-interval), V_L/L, and the correlation across layers between the attention "
        "increment and the token correlation it reads.",
    ),
    Target(
        "table_contribution_ratio",
        "varsplit: MLP/attn at layer 1, attn/MLP at layer 3L/4, crossover layer",
        draw="tables:contribution_ratio", reads=UNSCALED,
        title="Contribution ratio of the two sublayers: early, deep, and where they cross",
        note="Deep layer = 3L/4 (the note's 48 of 64). Crossover = first block where the "
        "seed-mean attention increment exceeds the seed-mean MLP increment.",
        caption="delta_mlp/delta_attn at block 1 and delta_attn/delta_mlp at block 3L/4 (the "
        "note's 48 of 64), as ratios of seed means and medians of per-seed ratios "
        "(dimensionless), and the first block where the attention increment exceeds the MLP "
        "one.",
    ),
    Target(
        "table_uniform_scale",
        "varsplit: late/early increment ratio per residual-scaling scheme and alpha",
        draw="tables:uniform_scale", reads=NOTE_ARMS,
        title="Late/early increment ratio under each residual-scaling scheme",
        note="late/early = mean increment over the last quarter of the blocks / over the first "
        "quarter, per seed; mean and 95% t-interval across seeds. Skip rows are in the "
        "unit-skip frame (increment / skip_scale^(2k) at sublayer k): by LayerNorm's scale "
        "invariance a skip scale c is a branch multiplier c^-k, geometric in depth.",
        caption="Late/early increment ratio (mean increment over the last quarter of the "
        "blocks over the first quarter; dimensionless; mean and 95% CI across seeds) of each "
        "branch under each residual-scaling scheme and alpha, and under the layerwise "
        "per-branch scales.",
    ),
    Target(
        "fig_increments_by_layer",
        "varsplit: delta_attn and delta_mlp by layer, seed range, crossover marked",
        draw="figures:increments_by_layer", reads=UNSCALED,
        caption="Pre-LN variance increments delta_attn(l) and delta_mlp(l) (units of the input "
        "variance) by block, mean across seeds with the seeds' range as a band, crossover marked.",
    ),
    Target(
        "fig_token_correlation",
        "varsplit: mean pairwise token cosine by layer",
        draw="figures:token_correlation", reads=(*UNSCALED, "uniform_branch"),
        caption="Mean pairwise token cosine (dimensionless) of the stream after each block; "
        "mean across seeds with the seeds' range as a band.",
    ),
    Target(
        "fig_attn_increment_vs_correlation",
        "varsplit: delta_attn against token correlation across layers with the fitted line",
        draw="figures:attn_increment_vs_correlation", reads=UNSCALED,
        caption="Attention increment delta_attn(l) (units of the input variance) against the "
        "token correlation of the stream it reads, across blocks, with the fitted line.",
    ),
    Target(
        "fig_residual_scaling",
        "varsplit: per-layer contributions under uniform and layerwise residual scales",
        draw="figures:residual_scaling", reads=(*UNSCALED, "uniform_*", "layerwise"),
        caption="Per-block variance increments of each branch (attention top, MLP bottom) "
        "relative to their mean over the first quarter of the blocks, under uniform residual "
        "scales (several alpha, a column per scheme) and under the layerwise per-branch "
        "scales; seed means.",
    ),
)
