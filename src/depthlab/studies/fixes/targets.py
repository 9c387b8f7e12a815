"""The tables and figures of the fixes study (docs/FIXES.md: do the literature's fixes fix it?),
declared once."""

from depthlab.vocabulary.placements import PLACEMENTS
from depthlab.vocabulary.targets import Target, declare

DEPTH_ARMS = ("depth", "calibrated")  # every placement across depths; calibrated Pre-LN
WIDTH_ARMS = ("depth", "width_*")  # the depth arm gives the study's own width
READING_ARMS = ("depth", "grad_*")  # the gradient ratio under each reading of block and loss
INIT_ARMS = ("init", "init_weights", "own_init")  # the init axis x the bias axis
OWN_INIT = ", ".join(p.label for p in PLACEMENTS.values() if p.own_init)
READINGS = ("Readings: the block's gradient over all its parameters (weights, biases, its "
            "LayerNorms, its gates) or over its six weight matrices only; MSE to N(0, 1) "
            "targets or cross-entropy of a linear head against uniform random classes. With "
            "weight matrices no LayerNorm counts for any placement: the LN that ends Post-LN's, "
            "DeepNorm's and ResiDual's last block (their final norm) and Pre-LN's final norm "
            "(no block's) alike. ReZero's weight matrices get no gradient at init (alpha = 0).")
MODEL = ("At initialisation: d = 128, 4 heads, 4x ReLU FFN, PyTorch's default init, float64, "
         "one sequence of 128 tokens, causal, MSE loss to N(0, 1) targets (stack96's "
         "settings); every placement of the registry (depthlab.vocabulary.placements), 6 seeds")
SETUP = (f"{MODEL}, and at L = 6-96 Pre-LN with layerwise branch scales calibrated on seeds 0-11 "
         "of an unscaled Pre-LN run and measured on held-out seeds 12-23.")
CENTRAL_ARMS = ("central",)  # every placement with the Jacobian and update probes
CENTRAL = ("J = d(head input)/dx per seed, x the drawn input (before any input LN): its rms "
           "singular value is the square root of Hutchinson's estimate, the mean of "
           "‖J v‖²/‖v‖² over k = 2 Gaussian directions v, its largest singular value k "
           "power-iteration steps on JᵀJ from the first direction (a lower bound: for seed 0 "
           "at L = 96, 2 steps give 68% of Pre-LN's 12-step value, 79% of Post-LN's); ReZero's "
           "J is the identity at init. The update: rms over the head input of F(θ + Δθ) − F(θ) "
           "after Adam's first step from init at lr = 1e-3 on every parameter, "
           "Δθ = −lr·g/(abs(g) + 1e-8) ≈ −lr·sign(g) (input-sd units); its exponent: per seed "
           "the slope of ln rms(ΔF) on ln L across L = 6, 24, 96.")
CENTRAL_SETUP = f"{MODEL}, at L = 6, 24 and 96 (arm central)."
# the update as a linear response: lr x first step, on every parameter and on DeepNet's θ
RESPONSE_ARMS = ("update_response", "update_theta")
RESPONSE = ("dF/η = rms over the head input of F(θ + Δθ) − F(θ), divided by the learning "
            "rate η, after the first step from init on every parameter or on each block's six "
            "weight matrices alone (DeepNet's θ, arm update_theta; the others keep their "
            "init), by Adam "
            "(Δθ = −η·g/(abs(g) + 1e-8) ≈ −η·sign(g): a step of η on every weight) or by SGD "
            "(Δθ = −η·g, the small-step linear response DeepNet's bound ‖ΔF‖ = O(η) is about), "
            "g the same gradient; input-sd units per unit η. Its exponent: per seed the OLS "
            "slope of ln(dF/η) on ln L across the arm's depths, the mean across seeds with the "
            "95% t-interval of the seed mean. Linear regime: dF/η at η over dF/η at the next "
            "smaller η (1e-4 over 1e-5, 1e-3 over 1e-4), every seed's ratio within 5% of 1 at "
            "that depth; the smallest η is linear where the next one is, and untested where "
            "it is not.")
RESPONSE_SETUP = (f"{MODEL}; Post-LN, Pre-LN and both DeepNorms at L = 6, 12, 24, 48, 96 and "
                  "192, η = 1e-5, 1e-4, 1e-3 (arm update_response); SGD's step on θ of "
                  "Post-LN, Pre-LN and DeepNorm at η = 1e-5 and 1e-4 (arm update_theta).")
BAND = ("A panel per placement family (where the LayerNorm sits); median across seeds, seed "
        "range as a band; curves that lie on each other are named in the legend.")
CELLS = "Each cell: median across seeds [seed min, max]."
EXPONENTS = ("Exponents: per seed the slope of ln(quantity) on ln L across the arm's depths "
             "(6-192).")
DEFINITIONS = ("ω = mean |LN(x_k) − LN(x_{k−1})| per coordinate; its decay rate is the log-log "
               "slope over the deepest three quarters of the blocks (theory096's formula: "
               "−0.5). Branch/stream = RMS of what the sublayer adds over RMS of its skip path. "
               "— = not defined: no skip path (no residual), ω and branch ratios are 0 "
               "(ReZero: the identity at init), or no second stream (all but ResiDual). "
               "ResiDual's stream x_a is Post-LN's exactly (same weights per seed), so its "
               "stream probes equal Post-LN's.")
TABLE_NOTE = f"{CELLS} {EXPONENTS} {DEFINITIONS}"


def _table(name: str, draw: str, depth: int) -> Target:
    """The probes table at one depth (its name and drawing function written out, so that a
    search for either finds it)."""
    return Target(
        name,
        f"fixes: every placement x probe at L = {depth} (median, seed range)",
        draw=draw, reads=DEPTH_ARMS, at=(("depth", depth),),
        title=f"Every placement on every probe at L = {depth}, at initialisation",
        note=TABLE_NOTE,
        caption=f"Every placement (rows) on every probe of the notes (columns) at L = {depth}: "
        "first/last gradient ratio ‖g_1‖/‖g_L‖ and its exponent across depths, stream growth "
        "rms(x_L)/rms(x_0) (input-sd units, before any final norm) and its exponent, ω at the "
        "last block and its log-log decay rate over k, the mean pairwise token cosine after "
        "the last block, the branch-to-stream ratio of the last block's sublayers, the sd of "
        "the head's input and ResiDual's second stream; all dimensionless; median across "
        f"seeds with the seed range. {SETUP}",
    )


# where the study's targets come in every list of them (the notes' order, then the fixes
# study's, then the scale study's; depthlab.studies finds the study by its package)
POSITION = 6

TARGETS = declare(
    "fixes",
    _table("table_fixes_probes_L96", "tables:probes_at_96", 96),
    _table("table_fixes_probes_L192", "tables:probes_at_192", 192),
    Target(
        "table_fixes_width",
        "fixes: every placement x probe at L = 24 across widths d = 64..256",
        draw="tables:width", reads=WIDTH_ARMS, needs=("width_*",),
        title="Every placement on every probe at L = 24 across the width d, at initialisation",
        note=f"{CELLS} heads = d/32 (head size 32); d = 128 is the depth arm's L = 24 cell. "
        f"{DEFINITIONS}",
        caption="The per-cell probes of table_fixes_probes_L96 at L = 24 for each width d = "
        "64, 128, 256 (heads = d/32), per placement; dimensionless; median across "
        f"seeds with the seed range. {SETUP}",
    ),
    Target(
        "table_fixes_grad_readings",
        "fixes: first/last gradient ratio of every placement under each gradient and loss",
        draw="tables:grad_readings", reads=READING_ARMS,
        title="First/last block gradient ratio ‖g_1‖/‖g_L‖ under each reading, at "
        "initialisation",
        note=f"{CELLS} {READINGS}",
        caption="The first/last block gradient ratio (dimensionless) of every placement at "
        "L = 24 and 96 under four readings: the block's gradient over all its parameters or "
        "its weight matrices only, under MSE or cross-entropy; median across seeds with the "
        f"seed range. {READINGS} {SETUP}",
    ),
    Target(
        "table_fixes_init",
        "fixes: every placement under each init, with and without biases (L = 96)",
        draw="tables:init_axis", reads=INIT_ARMS,
        title="Every placement under each init and with or without biases, at initialisation",
        note=f"{CELLS} Inits: PyTorch's default (U(±1/√fan_in), biases too); N(0, 0.02²); "
        "GPT-2's (N(0, 0.02²), W_o and W_2 at 0.02/√(2L)); xavier (normal, gain 1); all but "
        "the default zero the biases, drawn from a second generator per seed so that every "
        "init sees the same input and target. Biases off: the same draws, then no bias in "
        f"the forward pass or the gradient. {OWN_INIT} draw their own init (their paper's or "
        f"official code's). MSE loss. {READINGS} {DEFINITIONS}",
        caption="The init-time probes of every placement under four inits and with or "
        "without biases at L = 96: the first/last gradient ratio under both readings "
        "of a block's gradient, stream growth, ω's decay rate and the token cosine after the "
        "last block and of the head's input; dimensionless; median across seeds with the "
        f"seed range. {SETUP}",
    ),
    Target(
        "fig_fixes_grad_readings",
        "fixes: first/last gradient ratio under each gradient and loss reading, per placement",
        draw="figures:grad_readings", reads=READING_ARMS,
        caption="First/last block gradient ratio ‖g_1‖/‖g_L‖ (dimensionless, log scale) of "
        "every placement under four readings (x: which parameters count, which loss), a panel "
        f"per depth; median across seeds, seed range as a band. {READINGS} {SETUP}",
    ),
    Target(
        "table_fixes_central",
        "fixes: Jacobian singular values and the update after one Adam step, by depth",
        draw="tables:central", reads=CENTRAL_ARMS,
        title="The papers' central claims at initialisation: the input-output Jacobian's "
        "singular values and the model update after one Adam step",
        note=f"{CELLS} {CENTRAL}",
        caption="Every placement (rows) on ReZero's dynamical isometry (Bachlechner et al. "
        "2020: the input-output Jacobian's rms and largest singular value, dimensionless) and "
        "DeepNet's bounded update (Wang et al. 2022: the head input's rms change after one "
        "Adam step, input-sd units) at L = 6, 24 and 96, and the update's exponent across "
        f"depths; median across seeds with the seed range. {CENTRAL} {CENTRAL_SETUP}",
    ),
    Target(
        "fig_fixes_model_update",
        "fixes: the head input's change after one Adam step against depth, per placement",
        draw="figures:model_update", reads=CENTRAL_ARMS,
        caption="DeepNet's bounded update (Wang et al. 2022): rms(F(θ + Δθ) − F(θ)) over the "
        "head input after Adam's first step from init at lr = 1e-3 (input-sd units) against "
        "depth L, log-log, a curve per placement (flat: bounded in depth). "
        f"{BAND} {CENTRAL} {CENTRAL_SETUP}",
    ),
    Target(
        "table_fixes_update_response",
        "fixes: the update per unit learning rate dF/η by depth, optimiser and learning rate",
        draw="tables:update_response", reads=RESPONSE_ARMS,
        title="The model update after one step as a linear response: dF/η by depth, for "
        "Adam's and SGD's first step at each learning rate",
        note=f"{CELLS} Exponents: mean across seeds [95% t-interval of the seed mean]. "
        f"{RESPONSE}",
        caption="Every placement x first step (Adam's, SGD's) x parameters it moves x "
        "learning rate η (rows): the "
        "head input's rms change per unit learning rate, dF/η (input-sd units per unit η), at "
        "each depth L (median across seeds with the seed range), its log-log exponent across "
        "the depths (dimensionless; mean across seeds with the 95% t-interval of the seed "
        f"mean) and whether η is in the linear regime. {RESPONSE} {RESPONSE_SETUP}",
    ),
    Target(
        "fig_fixes_update_response",
        "fixes: the update per unit learning rate dF/η against depth, per optimiser",
        draw="figures:update_response", reads=RESPONSE_ARMS,
        caption="DeepNet's bounded update as a linear response (Wang et al. 2022): the head "
        "input's rms change per unit learning rate, dF/η (input-sd units per unit η), against "
        "depth L, log-log, a panel per first step (Adam's, SGD's), a curve per placement "
        "(colour and marker) and learning rate η (line style; in the linear regime the curves "
        "of every η lie on each other); the line is the mean across seeds and the band the "
        f"seeds' range. {RESPONSE} {RESPONSE_SETUP}",
    ),
    Target(
        "fig_fixes_grad_ratio",
        "fixes: first/last gradient ratio against depth, a curve per placement",
        draw="figures:grad_ratio", reads=DEPTH_ARMS,
        caption="First/last block gradient ratio ‖g_1‖/‖g_L‖ (dimensionless; gradient = "
        "Frobenius norm of dLoss/dθ over the block's parameters, ReZero's alpha alone) "
        "against depth L, log-log, a curve per placement. Sandwich-LN and Peri-LN share a "
        f"block and lie close together. {BAND} {SETUP}",
    ),
    Target(
        "fig_fixes_grad_profile",
        "fixes: gradient norm by block at the three deepest depths, a curve per placement",
        draw="figures:grad_profile", reads=DEPTH_ARMS,
        caption="Gradient norm of each block (Frobenius norm of dLoss/dθ over its parameters, "
        "loss units per parameter unit) against its index, a row per depth (48, 96, 192), a "
        f"curve per placement, log y. {BAND} {SETUP}",
    ),
    Target(
        "fig_fixes_stream_growth",
        "fixes: stream growth rms(x_L)/rms(x_0) against depth and stream RMS by block",
        draw="figures:stream_growth", reads=DEPTH_ARMS,
        caption="Top: the residual stream's RMS after the last block over the input's "
        "(before any final norm; dimensionless) against depth, log-log, with √L; bottom: the "
        "stream RMS after each block at L = 192 (input-sd units). ResiDual: x_a, the stream "
        "the blocks read (its second stream: fig_fixes_carry). Post-LN, DeepNorm and ResiDual "
        "(an LN after each join), no residual and ReZero (the identity at init) lie on 1. "
        f"{BAND} {SETUP}",
    ),
    Target(
        "fig_fixes_omega",
        "fixes: omega mean|D_k| by block at L = 192 and its log-log decay rate by depth",
        draw="figures:omega", reads=DEPTH_ARMS,
        caption=r"Top: ω = mean \|LN(x_k) − LN(x_{k−1})\| per coordinate (LN without affine; "
        "units of a normalised coordinate) against block k at L = 192, log-log, with "
        "theory096's ω_k·√(2/π); bottom: its log-log slope over k = L/4..L against depth "
        f"(formula: −0.5). ReZero's ω is 0 at init (not shown). {BAND} {SETUP}",
    ),
    Target(
        "fig_fixes_head_omega",
        "fixes: omega of the head input by block at L = 192 and its decay rate by depth "
        "(ResiDual's representation collapse)",
        draw="figures:head_omega", reads=DEPTH_ARMS,
        caption=r"Top: mean \|LN(y_k) − LN(y_{k−1})\| per coordinate, y_k what the head would "
        "read after block k (after the final norm; ResiDual: x_a + LN(x_d); LN without affine; "
        "units of a normalised coordinate), against block k at L = 192, log-log, with "
        "theory096's ω_k·√(2/π); bottom: its log-log slope over k = L/4..L against depth. "
        "ResiDual (Xie et al. 2023, sec. 3.2) calls a stack whose deep blocks no longer move "
        "its output collapsed: a slope well below 0. ReZero's is 0 at init (not shown). "
        f"{BAND} {SETUP}",
    ),
    Target(
        "fig_fixes_token_corr",
        "fixes: mean pairwise token cosine after the last block against depth (rank collapse)",
        draw="figures:token_corr", reads=DEPTH_ARMS,
        caption="Mean pairwise cosine between the token vectors (0 orthogonal, 1 one shared "
        "direction: rank collapse) after the last block against depth (top) and after each "
        f"block at L = 192 (bottom). {BAND} {SETUP}",
    ),
    Target(
        "fig_fixes_branch_ratio",
        "fixes: branch-to-stream ratio of the last block against depth, and by block",
        draw="figures:branch_ratio", reads=DEPTH_ARMS,
        caption="RMS of what the attention (top) and MLP (middle) sublayer of the last block "
        "adds over the RMS of the skip path it joins (dimensionless) against depth, and the "
        "MLP ratio by block at L = 192 (bottom); log axes. No residual: no skip path; ReZero: "
        f"0 at init (not shown). {BAND} {SETUP}",
    ),
    Target(
        "fig_fixes_head_input",
        "fixes: sd of the head's input against depth, a curve per placement",
        draw="figures:head_input_sd", reads=DEPTH_ARMS,
        caption="sd of the tensor the loss head reads (after the final norm where the "
        "placement has one; ResiDual: x_a + LN(x_d); units of the input sd) against depth, "
        f"log-log. {BAND} {SETUP}",
    ),
    Target(
        "fig_fixes_carry",
        "fixes: ResiDual's second stream x_d against depth and by block",
        draw="figures:carry", reads=DEPTH_ARMS, at=(("placement", "resi_dual"),),
        caption="ResiDual's second stream x_d (the unnormalised sum of every branch output, "
        "from the input): its sd after the last block over the input's against depth beside "
        "x_a's (the Post-LN stream the blocks read) and Pre-LN's stream growth, log-log "
        "(left), and sd(x_d) after each block at L = 192 (right); input-sd units. "
        f"{BAND} {SETUP}",
    ),
    Target(
        "fig_fixes_width",
        "fixes: the probes against width d at L = 24, a curve per placement",
        draw="figures:width", reads=WIDTH_ARMS, needs=("width_*",),
        caption="Gradient ratio, stream growth, ω decay rate, token cosine after the last "
        "block, the last block's MLP branch-to-stream ratio and the head's input sd at "
        "L = 24 against the width d = 64, 128, 256 (heads = d/32), a panel per probe, a "
        f"curve per placement; dimensionless. {BAND} {SETUP}",
    ),
)
