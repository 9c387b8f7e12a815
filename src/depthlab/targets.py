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
        """Output paths by extension: md+csv for tables, png+svg for figures."""
        folder, exts = ("tables", ("md", "csv")) if self.kind == "table" else (
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
)

BY_NAME = {t.name: t for t in TARGETS}
