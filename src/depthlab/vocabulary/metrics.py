"""Every metric a shard's rows hold, declared once: its name, unit, axis label (mathtext),
whether it is drawn on a log axis, where it is read (the sublayer column), what it needs beyond
the forward pass, and what it is. The engine's probes take their names from here (a Probe of
an undeclared metric is an error), the records drop a probe's rows by what it needs, the
figures take their labels, and config/README.md's table of metrics is generated from it
(depthlab.planner.generated)."""

from __future__ import annotations

from dataclasses import dataclass

# what a probe needs beyond the forward pass: a backward pass (grad_of), the Jacobian probe
# (jacobian_dirs), the update probe (update_lr), the pairwise block correlations (block_corr),
# a calibration stage (calibrate_from), a training run
NEEDS = ("", "gradient", "jacobian", "update", "block_corr", "calibration", "training")
INPUT_SD = "input sd"  # the model's activations are in units of the input's sd, which is 1


@dataclass(frozen=True)
class Metric:
    """One metric of the tidy rows (column `metric`)."""

    name: str
    unit: str  # "1" for a dimensionless number
    label: str  # an axis label, mathtext
    meaning: str
    sublayers: str = "block"  # the sublayer column's values for it
    log: bool = False  # drawn on a log axis
    needs: str = ""  # one of NEEDS

    def __post_init__(self):
        if self.needs not in NEEDS:
            raise ValueError(f"metric {self.name}: needs={self.needs!r} is not one of {NEEDS}")


_DECLARED = (
    Metric("grad_norm", "loss / parameter unit", r"$\|g_l\|$",
           "Frobenius norm of the loss gradient of block l (grad_of: its parameters, its six "
           "weight matrices, or its input stream)", log=True, needs="gradient"),
    Metric("grad_ratio", "1", r"$\|g_1\| \,/\, \|g_L\|$",
           "first over last block's gradient norm (1 = balanced), at layer L", log=True,
           needs="gradient"),
    Metric("stream_sd", INPUT_SD, r"sd$(x_l)$",
           "sd of the residual stream after block l (layer 0 the input), before any final "
           "norm", log=True),
    Metric("stream_var", f"({INPUT_SD})²", r"Var$(x_l)$",
           "variance of the residual stream after block l", log=True),
    Metric("stream_max_abs", INPUT_SD, r"max$|x_l|$",
           "largest absolute coordinate of the stream after block l (activation growth)", log=True),
    Metric("stream_rms", INPUT_SD, r"rms$(x_l)$",
           "root mean square of the stream after block l", log=True),
    Metric("head_input_sd", INPUT_SD, "head input sd",
           "sd of what the head reads (after the final norm; ResiDual's x_a + LN(x_d))",
           sublayers="head", log=True),
    Metric("branch_var", f"({INPUT_SD})²", "branch variance",
           "variance of each raw branch output of block l", sublayers="attn, mlp", log=True),
    Metric("delta", f"({INPUT_SD})²", r"$\delta_l$",
           "variance a branch adds on top of its skip path, where the stream telescopes "
           "(Pre-LN)", sublayers="attn, mlp"),
    Metric("carry_var", f"({INPUT_SD})²", r"Var$(x_{d,l})$",
           "variance of a second stream after block l (ResiDual's x_d)", log=True),
    Metric("token_corr", "1", "token cosine",
           "mean pairwise cosine of the token vectors of the stream after block l"),
    Metric("head_token_corr", "1", "token cosine (head)",
           "mean pairwise token cosine of what the head reads", sublayers="head"),
    Metric("omega_abs", "1", r"$\omega_k$",
           "mean absolute value of LN(x_k) - LN(x_{k-1}): the change of the normalised state "
           "made by block k (theory096's omega_k)", log=True),
    Metric("head_omega_abs", "1", r"$\omega_k$ of the head input",
           "mean absolute value of LN(y_k) - LN(y_{k-1}), y_k what the head would read after "
           "block k (ResiDual's x_a + LN(x_d)): the change block k makes to the output "
           "(ResiDual's representation collapse)", log=True),
    Metric("omega_var", "1", r"Var$(\Delta \mathrm{LN})$",
           "variance of LN(x_k) - LN(x_{k-1})", log=True),
    Metric("block_var", f"({INPUT_SD})²", r"Var$(f_k)$",
           "variance of what block k adds, f_k = x_k - c² x_{k-1} (telescoping streams)",
           log=True),
    Metric("block_abs", INPUT_SD, r"mean$|f_k|$", "mean absolute value of f_k, what block k adds",
           log=True),
    Metric("block_stream_corr", "1", r"corr$(f_k, x_{k-1})$",
           "correlation of what block k adds with the stream it is added to"),
    Metric("block_corr", "1", r"corr$(f_i, f_j)$",
           "correlation of the outputs of blocks i < j (sublayer f<i>, layer j)",
           sublayers="f1, f2, ...", needs="block_corr"),
    Metric("branch_ratio", "1", "branch / stream",
           "rms of what a sublayer adds over rms of the stream it is added to",
           sublayers="attn, mlp, block", log=True),
    Metric("branch_in_sd", INPUT_SD, "branch input sd",
           "sd of the tensor the attention or FFN branch reads", sublayers="attn, mlp"),
    Metric("ffn_active", "1", "active FFN units",
           "fraction of the FFN's hidden units with a positive pre-activation", sublayers="mlp"),
    Metric("loss", "loss units", "loss", "the pass's loss per seed (mse or nats)",
           sublayers="head"),
    Metric("jacobian_rms_sv", "1", "Jacobian rms singular value",
           "rms singular value of the input-output Jacobian (random directions)",
           sublayers="head", log=True, needs="jacobian"),
    Metric("jacobian_max_sv", "1", "Jacobian largest singular value",
           "largest singular value of the input-output Jacobian (power iteration)",
           sublayers="head", log=True, needs="jacobian"),
    Metric("model_update", INPUT_SD, r"rms$(\Delta F)$",
           "how far the first optimiser step moves what the head reads", sublayers="head",
           log=True, needs="update"),
    Metric("update_stream", INPUT_SD, r"rms$(\Delta x_l)$",
           "how far the first optimiser step moves the stream after block l", log=True,
           needs="update"),
    Metric("branch_scale", "1", r"$\alpha_l$",
           "the branch scale a calibration stage applied to block l's attn and mlp",
           sublayers="attn, mlp", needs="calibration"),
    Metric("train_loss", "nats", "training loss (nats)",
           "next-character loss of the batch of update step+1", sublayers="head",
           needs="training"),
    Metric("val_loss", "nats", "validation loss (nats)",
           "next-character loss on the fixed validation batches", sublayers="head",
           needs="training"),
    Metric("unigram_entropy", "nats", "unigram entropy (nats)",
           "entropy of the corpus's characters, the loss of a model that ignores context",
           sublayers="head", needs="training"),
    Metric("relative_update", "1", r"$\|\Delta F\| / \|F\|$",
           "relative change of the trained model's output after its first update",
           sublayers="head", log=True, needs="training"),
    Metric("ablated_val_loss", "nats", "validation loss without block l (nats)",
           "validation loss of the trained stack with block l removed", needs="training"),
)
METRICS = {m.name: m for m in _DECLARED}


def needing(need: str) -> tuple[str, ...]:
    """The metrics that need `need` (one of NEEDS)."""
    if need not in NEEDS:
        raise ValueError(f"no need {need!r}: one of {NEEDS}")
    return tuple(m.name for m in _DECLARED if m.needs == need)


GRADIENT_METRICS = needing("gradient")  # with a backward pass (grad_of not 'none')
JACOBIAN_METRICS = needing("jacobian")  # with jacobian_dirs
UPDATE_METRICS = needing("update")  # with update_lr
BLOCK_CORR_METRICS = needing("block_corr")  # with block_corr
