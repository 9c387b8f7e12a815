"""theory096's formula for the change of the normalised Pre-LN state, shared by the studies that
compare a measured change against it (theory096, training).

The note (“THEORY-096: …”): with independent block outputs of variance sigma^2, the state
before block k has variance (k-1) sigma^2 and D_k = LN(x_{k+1}) - LN(x_k) ~ N(0, omega_k^2 I),
omega_k^2 = 2 / (sqrt(k) (sqrt(k-1) + sqrt(k))), so E|D_k| = omega_k sqrt(2/pi) = O(1/sqrt k).
"""

from __future__ import annotations

import numpy as np

GAUSS_ABS = np.sqrt(2 / np.pi)  # E|z| / sd of a Gaussian


def omega_sq(k) -> np.ndarray:
    """The note's omega_k^2 = 2 / (sqrt(k) (sqrt(k-1) + sqrt(k))), k >= 1 (units: a normalised
    coordinate's variance)."""
    k = np.asarray(k, dtype=float)
    return 2 / (np.sqrt(k) * (np.sqrt(k - 1) + np.sqrt(k)))


def formula_abs(block, input_terms: int = 0) -> np.ndarray:
    """E|D| = omega_k sqrt(2/pi) at block `block`, with k = block + input_terms: 0 counts the
    input as the note's term 0 (no variance), 1 as a first independent term."""
    return GAUSS_ABS * np.sqrt(omega_sq(np.asarray(block) + input_terms))


def general_abs(stream_var: np.ndarray) -> np.ndarray:
    """E|D_k|, k = 1..L, from the note's general form omega_k^2 = 2 - 2 sqrt(V_{k-1} / V_k),
    V_k the variance of the state after block k (stream_var[..., k], V_0 the input's): the
    theorem's step before it assumes V_k = k sigma^2. NaN where V_k < V_{k-1} (the form
    assumes a block output independent of the state, which cannot lower the variance)."""
    v = np.asarray(stream_var, dtype=float)
    sq = 2 - 2 * np.sqrt(v[..., :-1] / v[..., 1:])
    return GAUSS_ABS * np.sqrt(np.where(sq >= 0, sq, np.nan))


def independent_abs(v0: np.ndarray, block_var: np.ndarray) -> np.ndarray:
    """E|D_k| if the input (variance v0) and the block outputs (variances block_var[..., k-1])
    were independent: general_abs of S_k = v0 + sum_{i<=k} Var f_i, the variances that
    independence implies. Equal sizes and v0 -> 0 give the note's formula."""
    return general_abs(np.concatenate([v0[..., None], v0[..., None] + np.cumsum(block_var, -1)],
                                      -1))


def fit_range(depth: int) -> list[tuple[int, int]]:
    """The block ranges of the log-log slope: every block, and the deepest three quarters."""
    return [(1, depth), (max(1, int(np.ceil(depth / 4))), depth)]


