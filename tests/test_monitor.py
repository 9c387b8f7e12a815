"""monitor: the final-norm toggle at the probe level, the per-block curves, the tiny study.

tests/test_model.py checks that the toggle leaves the stream alone in the forward pass; here
every forward probe of a measured cell must agree, and only the head input (and what the loss
reads through it: gradients and loss) may change.
"""

from __future__ import annotations

import pandas as pd
import pytest
import torch
from conftest import planned

from depthlab.core.measure import run_pass
from depthlab.vocabulary.settings import RunSettings

GRADIENT_PROBES = {"grad_norm", "grad_ratio"}


def small(**kw) -> RunSettings:
    return RunSettings(**{**dict(d_model=16, heads=4, tokens=8, depth=4, seeds=2), **kw})


@pytest.mark.parametrize("placement", ["pre", "post"])
def test_final_norm_changes_only_the_head_input_probe(placement):
    on, _ = run_pass(*planned(small(placement=placement, final_norm="on")), [0, 1])
    off, _ = run_pass(*planned(small(placement=placement, final_norm="off")), [0, 1])
    on = {(p.metric, p.sublayer): p for p in on}
    off = {(p.metric, p.sublayer): p for p in off}
    assert on.keys() == off.keys()
    assert ("omega_abs", "block") in on and ("branch_ratio", "attn") in on
    for key, p in on.items():
        if key[0] in GRADIENT_PROBES or key[0] in ("head_input_sd", "head_token_corr",
                                                   "head_omega_abs"):
            continue
        assert torch.equal(p.values, off[key].values), key
    # without a final norm the head reads the last stream: its omega is the stream's, exactly
    assert torch.equal(off[("head_omega_abs", "block")].values, off[("omega_abs", "block")].values)
    head_on = on[("head_input_sd", "head")].values
    head_off = off[("head_input_sd", "head")].values
    # with the final norm the head reads tokens of mean 0 and biased variance 1, whose
    # unbiased sd over all n entries is sqrt(n / (n - 1)); without it, the last stream itself
    n = 8 * 16
    torch.testing.assert_close(head_on, torch.full_like(head_on, (n / (n - 1)) ** 0.5),
                               rtol=1e-4, atol=0)
    torch.testing.assert_close(head_off[:, 0], on[("stream_sd", "block")].values[:, -1],
                               rtol=1e-14, atol=0)
    if placement == "pre":
        assert not torch.allclose(head_on, head_off, rtol=1e-2)
    # the head's token correlation: that of the last stream without the final norm, and with
    # it that of the normalised tokens (LN centres each token, so the cosines change)
    corr_off = off[("head_token_corr", "head")].values[:, 0]
    torch.testing.assert_close(corr_off, on[("token_corr", "block")].values[:, -1],
                               rtol=1e-12, atol=0)


def test_branch_ratios_follow_the_placement():
    pre, _ = run_pass(*planned(small(placement="pre", depth=6, out_scale=3.0)), [0, 1])
    post, _ = run_pass(*planned(small(placement="post", depth=6, out_scale=3.0)), [0, 1])
    pre = {(p.metric, p.sublayer): p.values for p in pre}
    post = {(p.metric, p.sublayer): p.values for p in post}
    # Post-LN re-standardises after every block: unit RMS stream (LN with unit gain, no bias)
    rms = post[("stream_rms", "block")][:, 1:]
    torch.testing.assert_close(rms, torch.ones_like(rms), rtol=1e-3, atol=0)
    assert ("branch_ratio", "block") not in post
    # Pre-LN: block l adds f_l to x_{l-1}, so rms(x_l)^2 <= (rms(x_{l-1}) (1 + ratio_l))^2
    s, r = pre[("stream_rms", "block")], pre[("branch_ratio", "block")]
    assert (s[:, 1:] <= s[:, :-1] * (1 + r) * (1 + 1e-12)).all()
    assert (s[:, 1:] >= s[:, :-1] * (1 - r).abs() * (1 - 1e-12)).all()


@pytest.mark.workflow
def test_tiny_head_input_scale(tiny_run):
    head = pd.read_csv(tiny_run / "results/tables/head_input_scale.csv")
    assert set(head["placement"]) == {"Pre-LN", "Post-LN"}
    assert head["head input sd, final norm on"].to_numpy() == pytest.approx(1, rel=2e-3)
    pre = head[head["placement"] == "Pre-LN"].sort_values("L")
    # without the final norm the Pre-LN head reads the grown stream
    assert (pre["head input sd, final norm off"].diff().dropna() > 0).all()
    post = head[head["placement"] == "Post-LN"]
    assert post["head input sd, final norm off"].to_numpy() == pytest.approx(1, rel=2e-3)
