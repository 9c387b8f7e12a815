"""What a metric of a shard's rows is (Metric) and the table of every metric, light: the jobs
without torch read it (a copied cell drops the rows its settings do not take, the figures take
their labels). Each metric is declared once, at the function that makes its rows
(depthlab.core.probes: `@probe` and `@measures`); `python -m depthlab.planner.generated`
copies the declarations into METRICS below and into config/README.md's table of metrics, and
tests/test_architecture.py fails where the copy is stale."""

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


# every metric, by name, in the order the engine declares them
# >>> generated: metrics (python -m depthlab.planner.generated; do not edit)
METRICS: dict[str, Metric] = {m.name: m for m in (
    Metric(name='grad_norm', unit='loss / parameter unit', label='$\\|g_l\\|$', meaning='Frobenius norm of the loss gradient of block l (grad_of: its parameters, its six weight matrices, or its input stream)', sublayers='block', log=True, needs='gradient'),
    Metric(name='grad_ratio', unit='1', label='$\\|g_1\\| \\,/\\, \\|g_L\\|$', meaning="first over last block's gradient norm (1 = balanced), at layer L", sublayers='block', log=True, needs='gradient'),
    Metric(name='stream_sd', unit='input sd', label='sd$(x_l)$', meaning='sd of the residual stream after block l (layer 0 the input), before any final norm', sublayers='block', log=True, needs=''),
    Metric(name='stream_var', unit='(input sd)²', label='Var$(x_l)$', meaning='variance of the residual stream after block l', sublayers='block', log=True, needs=''),
    Metric(name='stream_max_abs', unit='input sd', label='max$|x_l|$', meaning='largest absolute coordinate of the stream after block l (activation growth)', sublayers='block', log=True, needs=''),
    Metric(name='head_input_sd', unit='input sd', label='head input sd', meaning="sd of what the head reads (after the final norm; ResiDual's x_a + LN(x_d))", sublayers='head', log=True, needs=''),
    Metric(name='branch_var', unit='(input sd)²', label='branch variance', meaning='variance of each raw branch output of block l', sublayers='attn, mlp', log=True, needs=''),
    Metric(name='carry_var', unit='(input sd)²', label='Var$(x_{d,l})$', meaning="variance of a second stream after block l (ResiDual's x_d)", sublayers='block', log=True, needs=''),
    Metric(name='delta', unit='(input sd)²', label='$\\delta_l$', meaning='variance a branch adds on top of its skip path, where the stream telescopes (Pre-LN)', sublayers='attn, mlp', log=False, needs=''),
    Metric(name='token_corr', unit='1', label='token cosine', meaning='mean pairwise cosine of the token vectors of the stream after block l', sublayers='block', log=False, needs=''),
    Metric(name='head_token_corr', unit='1', label='token cosine (head)', meaning='mean pairwise token cosine of what the head reads', sublayers='head', log=False, needs=''),
    Metric(name='omega_abs', unit='1', label='$\\omega_k$', meaning="mean absolute value of LN(x_k) - LN(x_{k-1}): the change of the normalised state made by block k (theory096's omega_k)", sublayers='block', log=True, needs=''),
    Metric(name='omega_var', unit='1', label='Var$(\\Delta \\mathrm{LN})$', meaning='variance of LN(x_k) - LN(x_{k-1})', sublayers='block', log=True, needs=''),
    Metric(name='head_omega_abs', unit='1', label='$\\omega_k$ of the head input', meaning="mean absolute value of LN(y_k) - LN(y_{k-1}), y_k what the head would read after block k (ResiDual's x_a + LN(x_d)): the change block k makes to the output (ResiDual's representation collapse)", sublayers='block', log=True, needs=''),
    Metric(name='block_var', unit='(input sd)²', label='Var$(f_k)$', meaning='variance of what block k adds, f_k = x_k - c² x_{k-1} (telescoping streams)', sublayers='block', log=True, needs=''),
    Metric(name='block_abs', unit='input sd', label='mean$|f_k|$', meaning='mean absolute value of f_k, what block k adds', sublayers='block', log=True, needs=''),
    Metric(name='block_stream_corr', unit='1', label='corr$(f_k, x_{k-1})$', meaning='correlation of what block k adds with the stream it is added to', sublayers='block', log=False, needs=''),
    Metric(name='block_corr', unit='1', label='corr$(f_i, f_j)$', meaning='correlation of the outputs of blocks i < j (sublayer f<i>, layer j)', sublayers='f1, f2, ...', log=False, needs='block_corr'),
    Metric(name='stream_rms', unit='input sd', label='rms$(x_l)$', meaning='root mean square of the stream after block l', sublayers='block', log=True, needs=''),
    Metric(name='branch_ratio', unit='1', label='branch / stream', meaning='rms of what a sublayer adds over rms of the stream it is added to', sublayers='attn, mlp, block', log=True, needs=''),
    Metric(name='branch_in_sd', unit='input sd', label='branch input sd', meaning='sd of the tensor the attention or FFN branch reads', sublayers='attn, mlp', log=False, needs=''),
    Metric(name='ffn_active', unit='1', label='active FFN units', meaning="fraction of the FFN's hidden units with a positive pre-activation", sublayers='mlp', log=False, needs=''),
    Metric(name='loss', unit='loss units', label='loss', meaning="the pass's loss per seed (mse or nats)", sublayers='head', log=False, needs=''),
    Metric(name='jacobian_rms_sv', unit='1', label='Jacobian rms singular value', meaning='rms singular value of the input-output Jacobian (random directions)', sublayers='head', log=True, needs='jacobian'),
    Metric(name='jacobian_max_sv', unit='1', label='Jacobian largest singular value', meaning='largest singular value of the input-output Jacobian (power iteration)', sublayers='head', log=True, needs='jacobian'),
    Metric(name='model_update', unit='input sd', label='rms$(\\Delta F)$', meaning='how far the first optimiser step moves what the head reads', sublayers='head', log=True, needs='update'),
    Metric(name='update_stream', unit='input sd', label='rms$(\\Delta x_l)$', meaning='how far the first optimiser step moves the stream after block l', sublayers='block', log=True, needs='update'),
    Metric(name='branch_scale', unit='1', label='$\\alpha_l$', meaning="the branch scale a calibration stage applied to block l's attn and mlp", sublayers='attn, mlp', log=False, needs='calibration'),
    Metric(name='relative_update', unit='1', label='$\\|\\Delta F\\| / \\|F\\|$', meaning="relative change of the trained model's output from initialisation after `step` updates", sublayers='head', log=True, needs='training'),
    Metric(name='ablated_val_loss', unit='nats', label='validation loss without block l (nats)', meaning='validation loss of the trained stack with block l removed', sublayers='block', log=False, needs='training'),
    Metric(name='train_loss', unit='nats', label='training loss (nats)', meaning='next-character loss of the batch of update step+1', sublayers='head', log=False, needs='training'),
    Metric(name='val_loss', unit='nats', label='validation loss (nats)', meaning='next-character loss on the fixed validation batches', sublayers='head', log=False, needs='training'),
    Metric(name='unigram_entropy', unit='nats', label='unigram entropy (nats)', meaning="entropy of the corpus's characters, the loss of a model that ignores context", sublayers='head', log=False, needs='training'),
)}
# <<< generated: metrics


def needing(need: str) -> tuple[str, ...]:
    """The metrics that need `need` (one of NEEDS)."""
    if need not in NEEDS:
        raise ValueError(f"no need {need!r}: one of {NEEDS}")
    return tuple(name for name, m in METRICS.items() if m.needs == need)


GRADIENT_METRICS = needing("gradient")  # with a backward pass (grad_of not 'none')
JACOBIAN_METRICS = needing("jacobian")  # with jacobian_dirs
UPDATE_METRICS = needing("update")  # with update_lr
BLOCK_CORR_METRICS = needing("block_corr")  # with block_corr
