"""What each run setting is, written once: its meaning (config/README.md's table), a one-line
summary (the config schema's description) and its bound, which RunSettings.check enforces from
here. The names, defaults, types and choices are RunSettings' and CHOICES'
(depthlab.vocabulary.settings); depthlab.planner.generated writes the schema's settings and
config/README.md's table from them (a test checks they are current)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Key:
    """One setting's documentation and bound (beyond its type and choices)."""

    meaning: str  # what it sets (config/README.md; markdown)
    summary: str = ""  # one line for the config schema's description ("" = the meaning)
    least: float | None = None  # the smallest value allowed
    above: float | None = None  # a bound the value must exceed
    values: str = ""  # the allowed values in words, where the type and bound do not say it
    also: str = ""  # a JSON type the setting takes beside its own (the config schema)


KEYS: dict[str, Key] = {
    "placement": Key(
        "where the LayerNorms and the residual sit (`src/depthlab/vocabulary/placements.py`, "
        "each with its paper)",
        summary="where the LayerNorms and the residual sit (depthlab.vocabulary.placements)",
    ),
    "depth": Key("number of blocks L", least=1),
    "d_model": Key("width d", least=1),
    "heads": Key(
        "attention heads",
        summary="attention heads (must divide d_model)",
        least=1,
        values="divides d_model",
    ),
    "ffn_mult": Key("FFN hidden width / d", least=1),
    "activation": Key("FFN non-linearity"),
    "attention": Key(
        "whose initialisation the attention weights follow (the maths is the same): four "
        "`nn.Linear(d, d)` with biases, or `nn.MultiheadAttention` (xavier-uniform "
        "in-projection, zero biases)",
        summary="whose init the attention weights follow (four nn.Linear, or "
                "nn.MultiheadAttention)",
    ),
    "causal": Key("causal attention mask"),
    "init": Key(
        "`torch_default`: what `nn.Linear` / `nn.MultiheadAttention` draw; `fan_in`: weights "
        "N(0, 1/fan_in), zero biases; `normal`: weights N(0, 0.02²) (GPT-2's, BERT's), zero "
        "biases; `gpt2`: `normal` with W_o and W_2 at std 0.02/√(2L) (GPT-2's scaled residual"
        " init); `xavier`: `xavier_normal_` gain 1, zero biases; `fairseq`: fairseq's "
        "attention init (W_q, W_k, W_v `xavier_uniform_` gain 1/√2, W_o gain 1, b_o zero) over"
        " the default draw of the other weights and biases. `normal`, `gpt2`, `xavier` and "
        "`fairseq` are drawn after the default draw from the seed's own-init generator, so the"
        " input and target are those of `torch_default` (paired). `paper`: the placement's "
        "paper init (its registry entry's `paper_init`, from its official code), which sets "
        "`init` and `bias` (the rows record them); a placement without one rejects it. "
        "Placements with their own init (`deepnorm`, `deepnorm_beta`, `t_fixup`, ...) need "
        "`torch_default` (or `paper`, the same)",
        summary=(
            "torch_default (what nn.Linear draws), fan_in (N(0, 1/fan_in)), normal (N(0, "
            "0.02^2)), gpt2 (normal, W_o and W_2 at 0.02/sqrt(2L)), xavier (xavier_normal_), "
            "fairseq (fairseq's attention init) or paper (the placement's paper's, sets bias "
            "too); fan_in, normal, gpt2 and xavier zero the biases, fairseq b_o only"
        ),
    ),
    "bias": Key(
        "the blocks' linear maps have biases; `false`: they are drawn (so the weights are "
        "those of the cell with biases) and then left out: no bias in the forward pass, none "
        "in the gradient or the optimiser (the official LN-Scaling code has none); "
        "`init: paper` sets it to the paper's",
        summary=(
            "the blocks' linear maps have biases (false: drawn, to keep the weights paired, then "
            "left out)"
        ),
    ),
    "out_scale": Key(
        "multiplies the initial weights of the attention output projection Wo and the second "
        "FFN matrix W2 (not their biases)",
        summary="multiplies the initial attention output projection Wo and second FFN matrix W2",
        above=0,
    ),
    "residual_scale": Key(
        "Pre-LN only: multiplies both branch outputs before they join the stream",
        summary="multiplies both branch outputs before they join the stream",
        above=0,
    ),
    "skip_scale": Key(
        "multiplies the skip path of every sublayer, as DeepNorm's alpha: Pre-LN h = c·x + "
        "a(LN(x)), Post-LN h = LN(c·x + a(x)); not with `none`",
        summary="multiplies the skip path of every sublayer (as DeepNorm's alpha)",
        above=0,
    ),
    "final_norm": Key(
        "a LayerNorm between the last block and the loss; `auto` = Pre-LN only",
        summary="a LayerNorm between the last block and the loss (auto = the placement's own)",
    ),
    "dtype": Key("precision of weights and activations"),
    "device": Key(
        "where the run executes (weights and inputs are drawn on the CPU first, so numbers do"
        " not depend on it beyond round-off)",
        summary="where the run executes",
    ),
    "batch": Key("sequences per seed", least=1),
    "tokens": Key("sequence length", least=2),
    "loss": Key(
        "MSE to N(0, 1) targets; or a linear head to `head_classes` classes with uniform "
        "random class targets",
        summary="MSE to N(0, 1) targets, or cross-entropy of a linear head",
    ),
    "head_classes": Key("classes of the cross-entropy head", least=2),
    "grad_of": Key(
        "the \"layer gradient\": Frobenius norm over all parameters of the block (LayerNorm "
        "gains and biases included), over its six weight matrices only, or of the gradient at"
        " the block's input stream; `none`: no backward pass and no gradient probes (a "
        "forward-only study, about 3x faster)",
        summary="the layer gradient (all block parameters, its weight matrices, its input) or none",
    ),
    "seeds": Key("seeds per cell", least=1),
    "seed_offset": Key(
        "seed i of a cell is `torch.manual_seed(seed_offset + i)` "
        "(`depthlab.vocabulary.settings.run_seed`)",
        summary="seed i of a cell is torch.manual_seed(seed_offset + i)",
        least=0,
    ),
    "seed_batch": Key(
        "seeds per batched pass (0 = as many as `pass_mb` allows); lower it when memory is "
        "tight",
        summary="seeds per batched pass (0 = as many as pass_mb allows)",
        least=0,
    ),
    "pass_mb": Key(
        "with `seed_batch` 0: the seeds are split into the fewest equal passes whose "
        "estimated memory (`depthlab.planner.cost.pass_bytes`, 1.5x to 2x what a pass holds) "
        "stays under this many MB; 0 = all seeds in one pass. The default splits stack96's L "
        "= 96 cells into 2 passes of 3 seeds (1.4 GB instead of 2.4) and leaves L ≤ 48 whole,"
        " where splitting costs about 10%; the numbers do not change with the split (bit for "
        "bit in passes of 2 to 6 seeds, to round-off, 1e-14, in a pass of one seed: tested)",
        summary="memory bound of one batched pass in MB (0 = all seeds in one pass)",
        least=0,
    ),
    "block_corr": Key(
        "Pre-LN only: also record corr(f_i, f_j) of every pair of block outputs, L(L−1)/2 "
        "values per seed (theory096); off elsewhere to keep tables small",
        summary="also record the correlation of every pair of block outputs (theory096)",
    ),
    "jacobian_dirs": Key(
        "k > 0: also record the input-output Jacobian J = d(head input)/dx per seed (ReZero's"
        " dynamical isometry, Bachlechner et al. 2020): `jacobian_rms_sv`, sqrt of the "
        "Hutchinson estimate of the mean squared singular value over k Gaussian directions, "
        "and `jacobian_max_sv`, the largest singular value after k power-iteration steps on "
        "JᵀJ (a lower bound); about 3k + 1 extra forward passes and twice the saved "
        "activations (`depthlab.core.response.jacobian`); needs every block held (not with "
        "`grad_of: none` or a recomputed pass)",
        summary=(
            "also record the input-output Jacobian's rms and largest singular value from this "
            "many random directions and power-iteration steps (0 = off)"
        ),
        least=0,
    ),
    "update_lr": Key(
        "lr > 0: also record how far the first step from init of `update_optimizer` at this "
        "learning rate moves the head input, `model_update`, and the stream after each block, "
        "`update_stream` (rms, input-sd units; DeepNet's bounded update, Wang et al. 2022); "
        "about 4 extra forward passes (`depthlab.core.response.model_update`); needs every "
        "block held, as `jacobian_dirs`",
        summary=(
            "also record how far the first optimiser step at this learning rate moves the head "
            "input and the stream (0 = off)"
        ),
        least=0,
    ),
    "update_optimizer": Key(
        "the first step the update probe (`update_lr`) takes: `adam`, Adam's first step, "
        "Δθ = −lr·g/(abs(g) + 1e-8) ≈ −lr·sign(g) on every parameter (a step of lr whatever "
        "the gradient); `sgd`, Δθ = −lr·g (the linear response DeepNet's bound is about); g "
        "the same gradient of the loss in every parameter "
        "(`depthlab.core.response.first_step`); `sgd` needs `update_lr` > 0",
        summary=(
            "the update probe's first step: adam (−lr·g/(|g| + 1e-8), about −lr·sign(g)) or "
            "sgd (−lr·g)"
        ),
    ),
    "update_params": Key(
        "which parameters the update probe's first step (`update_lr`) moves: `all`, every "
        "parameter (the blocks' weights, biases, LayerNorms, gates, and the final LN and "
        "head); `weights`, the six weight matrices of each block (W_q, W_k, W_v, W_o, W_1, "
        "W_2: the θ of DeepNet's bound, Wang et al. 2022, sec. 4); `sublayer`, those and the "
        "linear maps' biases (no norm, gate or head). The others keep their init; the "
        "gradient is that of the same loss (`depthlab.core.response.first_step`), as "
        "`grad_of` picks the parameters of the layer gradient; not `all` needs `update_lr` > 0"
        " and weights that get a gradient at init (not ReZero's)",
        summary="the parameters the update probe's first step moves: all, weights (the six "
                "weight matrices of each block) or sublayer (and their biases)",
    ),
    "block": Key(
        "your own block instead of the placement's: a factory called as `function(settings)` "
        "once per block under the seed's generator, returning an `nn.Module` that maps the "
        "stream (batch, tokens, d) to the stream; its sublayers are recorded where it marks "
        "them (`depthlab_points`), and `placement` names the built-in whose final norm and "
        "telescoping it follows (`depthlab.core.own_block`; README, \"Your own block\"). Or a "
        "Hugging Face decoder layer, `{hf: llama}` with overrides of the family's config "
        "(\"A Hugging Face layer as the block\" below). MSE loss, `grad_of` params, weights or "
        "none",
        summary=(
            "your own block: 'module:function', a factory of an nn.Module "
            "(depthlab.core.own_block), or {hf: <family>, <config key>: <value>}, a Hugging Face "
            "decoder layer (depthlab.core.hf_layers); empty = the placement's built-in block"
        ),
        values="`module:function`, `{hf: <family>}`",
        also="object",
    ),
}
