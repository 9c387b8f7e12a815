"""The catalogue of rendered targets: each table and figure, its rule name, study and paths.

Light on purpose (no heavy imports): the Snakefile reads it at parse time to make one named
rule per target. depthlab.render maps each name to the function that draws it.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Target:
    name: str  # the rule name, e.g. fig_grad_ratio_by_depth
    study: str  # whose fits it reads
    description: str  # one line, shown by `snakemake --list-target-rules`

    @property
    def kind(self) -> str:
        return "table" if self.name.startswith("table_") else "figure"

    @property
    def stem(self) -> str:
        return self.name.split("_", 1)[1]

    @property
    def outputs(self) -> dict[str, str]:
        """Output paths by extension: md+csv+html for tables (html for the report), png+svg for
        figures."""
        folder, exts = ("tables", ("md", "csv", "html")) if self.kind == "table" else (
            "figures", ("png", "svg"))
        return {ext: f"results/{folder}/{self.stem}.{ext}" for ext in exts}


TARGETS = (
    Target("table_twenty_layers", "stack96",
           "stack96 table 1: layer-1/layer-L gradients and ratio at one depth (L=20)"),
    Target("table_grad_ratio_by_depth", "stack96",
           "stack96 table 2: first/last gradient ratio by depth and placement"),
    Target("table_stream_growth", "stack96",
           "stack96 table 3: Pre-LN stream sd growth, exponent and variance-budget fit"),
    Target("table_output_scale", "stack96",
           "stack96 table 4: stream growth factor and exponent per output scale"),
    Target("table_grad_ratio_sensitivity", "stack96",
           "stack96: gradient ratio under each open setting changed one at a time"),
    Target("fig_grad_profile", "stack96",
           "stack96: gradient norm by block, panel per depth, line per placement"),
    Target("fig_grad_ratio_by_depth", "stack96",
           "stack96: first/last gradient ratio against depth per placement"),
    Target("fig_stream_sd", "stack96",
           "stack96: Pre-LN stream sd by block per depth and output scale, sqrt reference"),
    Target("fig_variance_budget", "stack96",
           "stack96: measured stream variance against V_0 + increments and the linear fit"),
    Target("fig_omega_vs_theory", "theory096",
           "theory096: mean |LN(x_k) - LN(x_k-1)| against k with omega_k, log-log, seed band"),
    Target("table_omega_exponent", "theory096",
           "theory096: slope of mean |D_k| on k with 95% CI, the k=24/k=1 ratio, vs the formula"),
    Target("table_block_independence", "theory096",
           "theory096: the independence assumption: variance additivity, block correlations"),
    Target("fig_block_output_correlation", "theory096",
           "theory096: correlation matrix of block outputs, one panel per output scale"),
    Target("fig_stream_norm_by_block", "monitor",
           "monitor: residual-stream RMS by block, Pre-LN and Post-LN, several depths"),
    Target("fig_branch_to_stream_ratio", "monitor",
           "monitor: branch-to-stream RMS ratio by block, Pre-LN and Post-LN"),
    Target("table_head_input_scale", "monitor",
           "monitor: head input sd by depth with and without the final norm, Pre/Post-LN"),
    Target("fig_training_loss", "training",
           "training: train and validation loss by step per placement, depth and warmup arm"),
    Target("fig_training_grad_ratio", "training",
           "training: first/last block gradient ratio against step"),
    Target("fig_training_stream_growth", "training",
           "training: residual-stream sd by layer at each checkpoint"),
    Target("fig_training_increments", "training",
           "training: Pre-LN delta_attn and delta_mlp by layer at each checkpoint"),
    Target("fig_training_omega", "training",
           "training: mean |LN(x_k) - LN(x_k-1)| by block at each checkpoint vs the formula"),
    Target("table_training_summary", "training",
           "training: each init-time effect at step 0 and at the end: reduced/preserved/amplified"),
    Target("table_increment_slopes", "varsplit",
           "varsplit: depth slope of the MLP and attention increments (95% CI), V_L/L, link"),
    Target("table_contribution_ratio", "varsplit",
           "varsplit: MLP/attn at layer 1, attn/MLP at layer 3L/4, crossover layer"),
    Target("table_uniform_scale", "varsplit",
           "varsplit: late/early increment ratio per residual-scaling scheme and alpha"),
    Target("fig_increments_by_layer", "varsplit",
           "varsplit: delta_attn and delta_mlp by layer, 95% band, crossover marked"),
    Target("fig_token_correlation", "varsplit",
           "varsplit: mean pairwise token cosine by layer"),
    Target("fig_attn_increment_vs_correlation", "varsplit",
           "varsplit: delta_attn against token correlation across layers with the fitted line"),
    Target("fig_residual_scaling", "varsplit",
           "varsplit: per-layer contributions under uniform and layerwise residual scales"),
)

BY_NAME = {t.name: t for t in TARGETS}
