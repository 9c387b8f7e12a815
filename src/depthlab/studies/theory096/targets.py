"""The tables and figures of the theory096 note (“THEORY-096: A Pre-LN residual stream's
per-layer change decays as one over root k, so deep blocks cannot refine the representation”),
declared once."""

from depthlab.vocabulary.targets import Target, declare

# where the study's targets come in every list of them (the notes' order, then the fixes
# study's, then the scale study's; depthlab.studies finds the study by its package)
POSITION = 2

TARGETS = declare(
    "theory096",
    Target(
        "fig_omega_vs_theory",
        "theory096: mean |LN(x_k) - LN(x_k-1)| against k with omega_k, log-log, seed band",
        draw="figures:omega_vs_theory", reads=("*",),
        caption=r"Mean \|LN(x_k) − LN(x_{k−1})\| per coordinate (units of a normalised "
        "coordinate) against block k, log-log, beside theory, each curve named by its source: "
        "the note's ω_k·√(2/π) (input counted as term 0 or 1), the note's general form "
        "ω_k² = 2 − 2√(V_{k−1}/V_k) with each seed's measured stream variance V_k, and the "
        "theorem with the measured block-output variances; median, band: seed range (theory: "
        "median across seeds), per output scale and for the premise arm (Sandwich-LN, both "
        "branches ×10: equal-σ blocks, the input 1/200 of a block).",
    ),
    Target(
        "table_omega_exponent",
        "theory096: slope of mean |D_k| on k with 95% CI, the k=24/k=1 ratio, vs the formula",
        draw="tables:omega_exponent", reads=("*",), options=("omega_tolerance",),
        title="Change of the normalised Pre-LN state, D_k = LN(x_k) − LN(x_{k−1}), against "
        "theory096",
        note="k = block index, x_0 = the input. Slopes: OLS of ln mean|D_k| on ln k per seed, "
        "mean and 95% t-interval across seeds; the formula rows are the note's omega_k·√(2/π) "
        "counting the input as term 0 (block k ↔ ω_k) or as a first term (block k ↔ ω_{k+1}); "
        "the asymptote is the O(1/√k) rate (the note's 'about a fifth' = 1/√24). The "
        "independence prediction is the theorem with the measured variances of the input and "
        "of each block's output.",
        caption=r"Log-log slope of mean \|D_k\| on k (dimensionless) over all blocks and over "
        "the deepest three quarters (mean and 95% CI across seeds), the ratio at k = 24 over "
        "k = 1 (median, seed range), and the blocks where the measurement agrees with the "
        "formula within config `analysis.omega_tolerance`; the formula's own values head the "
        "table.",
    ),
    Target(
        "table_block_independence",
        "theory096: the independence assumption: variance additivity, block correlations",
        draw="tables:block_independence", reads=("*",),
        title="theory096's independence assumption at init: f_k = x_k − x_{k−1}, what block k "
        "adds",
        note="Independent block outputs give (V_L − V_0) / Σ Var f_k = 1 and zero "
        "correlations; one σ² gives a drift of 1. Correlations are Pearson over all tokens and "
        "coordinates; means across seeds with 95% t-intervals.",
        caption="The independence assumption at init: variance additivity (V_L − V_0)/Σ Var "
        "f_k (1 if independent), the drift of Var f_k over depth (1 for one σ), and mean "
        "correlations of block outputs with the stream and with each other (0 if "
        "independent); means and 95% CIs across seeds, per output scale and for the premise "
        "arm (Sandwich-LN, both branches ×10).",
    ),
    Target(
        "fig_block_output_correlation",
        "theory096: correlation matrix of block outputs, one panel per output scale and premise",
        draw="figures:block_output_correlation", reads=("*",),
        caption="Seed-mean correlation corr(f_i, f_j) of the outputs of blocks i and j "
        "(Pearson over all tokens and coordinates, dimensionless), one panel per output scale "
        "and one for the premise arm (Sandwich-LN, both branches ×10).",
    ),
)
