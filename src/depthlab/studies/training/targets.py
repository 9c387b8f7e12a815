"""The tables and figures of the training study: what training does to the init-time effects."""

from depthlab.vocabulary.targets import Target, declare

# where the study's targets come in every list of them (the notes' order, then the fixes
# study's, then the scale study's; depthlab.studies finds the study by its package)
POSITION = 4

TARGETS = declare(
    "training",
    Target(
        "fig_training_loss",
        "training: train and validation loss by step per placement, depth and warmup arm",
        draw="figures:loss", reads=("*",),
        caption="Training and validation loss (nats per character) against optimiser step, per "
        "placement, depth and warmup arm; median and seed range.",
    ),
    Target(
        "fig_training_grad_ratio",
        "training: first/last block gradient ratio against step",
        draw="figures:grad_ratio", reads=("*",),
        caption="First/last block gradient ratio (dimensionless) at each checkpoint against "
        "step; median and seed range.",
    ),
    Target(
        "fig_training_stream_growth",
        "training: residual-stream sd by layer at each checkpoint",
        draw="figures:stream_growth", reads=("*",),
        caption="Residual-stream sd by block (units of the embedding sd) at each checkpoint.",
    ),
    Target(
        "fig_training_increments",
        "training: Pre-LN delta_attn and delta_mlp by layer at each checkpoint",
        draw="figures:increments", reads=("*",),
        caption="Pre-LN attention and MLP variance increments by block at each checkpoint.",
    ),
    Target(
        "fig_training_omega",
        "training: mean |LN(x_k) - LN(x_k-1)| by block at each checkpoint vs the formula",
        draw="figures:omega", reads=("*",),
        caption=r"Mean \|LN(x_k) − LN(x_{k−1})\| by block at each checkpoint against the note's "
        "formula.",
    ),
    Target(
        "table_training_summary",
        "training: each init-time effect at step 0 and at the end: reduced/preserved/amplified",
        draw="tables:summary", reads=("*",), options=("preserved_within",),
        title="What training did to each init-time effect (median across seeds, seed range "
        "beside)",
        note="change = |dev(end)| / |dev(step 0)| of the seed medians, dev = the deviation from "
        "no effect (ln of a ratio; a slope or exponent itself). An effect is clear when its "
        "seed range of dev excludes 0; both clear: preserved = change within preserved_within "
        "of 1, amplified / reduced above / below, reversed = dev changed sign; else emerged, "
        "vanished or absent. Probes on one fixed validation batch after a backward pass of its "
        "next-character loss. For the loss row, change = end / step 0.",
        caption="Each init-time effect reduced to one number per seed (gradient ratio, stream "
        "exponent, omega slope, increment slopes, token correlation, branch ratio) at step 0 "
        "and at the end, and what training did to it (preserved, amplified, reduced, reversed, "
        "emerged, vanished, absent); medians, seed ranges beside.",
    ),
)
