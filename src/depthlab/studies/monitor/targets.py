"""The tables and figures of the monitor note (“In a pre-norm stack, how does the residual
stream's scale change with depth?”), declared once."""

from depthlab.vocabulary.targets import Target, declare

# where the study's targets come in every list of them (the notes' order, then the fixes
# study's, then the scale study's; depthlab.studies finds the study by its package)
POSITION = 3

TARGETS = declare(
    "monitor",
    Target(
        "fig_stream_norm_by_block",
        "monitor: residual-stream RMS by block, Pre-LN and Post-LN, several depths",
        draw="figures:stream_norm_by_block", reads=("*",),
        caption="Residual-stream RMS √mean(x_l²) after each block (block 0 = the input, units "
        "of the input sd; before any final norm), Pre-LN and Post-LN, a line per depth; median "
        "and seed range, log scale.",
    ),
    Target(
        "fig_branch_to_stream_ratio",
        "monitor: branch-to-stream RMS ratio by block, Pre-LN and Post-LN",
        draw="figures:branch_to_stream_ratio", reads=("*",),
        caption="RMS of what each sublayer (and, Pre-LN, the whole block) adds over the RMS of "
        "the stream it joins (dimensionless), by block, a panel per depth; median and seed "
        "range.",
    ),
    Target(
        "table_head_input_scale",
        "monitor: head input sd by depth with and without the final norm, Pre/Post-LN",
        draw="tables:head_input_scale", reads=("*",),
        title="Scale of the head's input by depth, with and without the final LayerNorm (init)",
        note="head input sd = x.std() of what the loss reads; stream growth = RMS after the "
        "last block over the input's, before any final norm (medians across seeds).",
        caption="sd of the head's input (x.std() of what the loss reads, units of the input "
        "sd) by placement and depth with the final LayerNorm on and off, and the stream growth "
        "rms(x_L)/rms(x_0); medians, seed ranges beside.",
    ),
)
