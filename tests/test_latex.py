"""LaTeX tables (depthlab.analysis.tables.table_latex): plain ASCII with LaTeX maths, the
packages they need named in their first line, scaled to the line width where wider, and
compiled by pdflatex where it is installed (the tiny run's twelve: tests/test_workflow.py)."""

from __future__ import annotations

import pandas as pd
import pytest
from conftest import PDFLATEX, compile_latex

from depthlab.analysis.tables import latex_text, table_latex

NO_PDFLATEX = pytest.mark.skipif(PDFLATEX is None, reason="pdflatex is not installed")


@pytest.mark.parametrize("text, latex", [
    ("D_k = LN(x_k) − LN(x_{k−1})", r"$D_{k}$ = LN($x_{k}$) $-$ LN($x_{k-1}$)"),
    ("input = term 1 (ω_{k+1})", r"input = term 1 ($\omega_{k+1}$)"),
    ("‖∂loss/∂θ_l‖", r"$\Vert \partial$loss/$\partial \theta_{l} \Vert$"),
    ("O(1/√k), omega_k·√(2/π)", r"O(1/$\sqrt{k}$), $\omega_{k} \cdot \sqrt{2/\pi}$"),
    ("-0.637 [-0.18, 7e-05]", r"$-$0.637 [$-$0.18, 7e-05]"),
    ("within ±10% of sd_L, 1–8", r"within $\pm$10\% of $\mathrm{sd}_{L}$, 1--8"),
    ("delta_attn, fan_in, torch_default", r"$\delta_{\mathrm{attn}}$, fan\_in, torch\_default"),
    ("50% & $1 {2} #3 ~ ^", r"50\% \& \$1 \{2\} \#3 \textasciitilde{} \textasciicircum{}"),
    ("mean|D| < 1", r"mean$|$D$|$ \textless{} 1"),
    ("η = 1e-3, JᵀJ, σ², 10⁻⁴, x₀", r"$\eta$ = 1e-3, J$^{T}$J, $\sigma ^{2}$, 10$^{-4}$, x$_{0}$"),
    ("“rates” ≈ 2°", r"``rates'' $\approx$ 2$^{\circ}$"),
])
def test_latex_text_writes_maths_as_maths_and_escapes_the_rest(text, latex):
    assert latex_text(text) == latex
    assert latex.isascii()


def test_a_latex_table_names_its_packages_and_fits_the_line():
    shown = pd.DataFrame({"a": ["x_k", "−1"], "θ": ["50%", "x & y"]})
    assert table_latex(shown, "T #1", "n_1") == "\n".join([
        r"% needs \usepackage{booktabs}, \usepackage{graphicx} (booktabs rules; graphicx "
        r"scales a wide table to the line width)",
        r"\begin{table}", r"\centering", r"\caption{T \#1}",
        r"\resizebox{\ifdim\width>\linewidth\linewidth\else\width\fi}{!}{%",
        r"\begin{tabular}{lr}", r"\toprule", r"a & $\theta$ \\", r"\midrule",
        r"$x_{k}$ & 50\% \\", r"$-$1 & x \& y \\", r"\bottomrule", r"\end{tabular}}",
        r"\par\smallskip\footnotesize $n_{1}$", r"\end{table}", ""])


def test_a_long_heading_or_cell_breaks_into_lines_at_spaces_outside_brackets():
    """A cell of more than CELL_CHARS characters, and a heading longer than its column's cells,
    as a nested tabular of lines; a line opening with [ is not the optional argument of \\."""
    shown = pd.DataFrame({"placement": ["Post-LN"],
                          "grad ratio ‖g_1‖/‖g_L‖": ["0.233 [0.0884, 1.35]"]})
    assert table_latex(shown, "T").splitlines()[7:10] == [
        r"placement & \begin{tabular}[b]{@{}r@{}}grad ratio \\ $\Vert g_{1} \Vert$/$\Vert g_{L} "
        r"\Vert$\end{tabular} \\", r"\midrule",
        r"Post-LN & \begin{tabular}[t]{@{}r@{}}0.233 \\ {}[0.0884, 1.35]\end{tabular} \\"]


@NO_PDFLATEX
def test_a_wide_table_with_maths_compiles_within_the_text_width(tmp_path):
    wide = pd.DataFrame({f"within ±10% of ω_{{k+{i}}} at k": ["−0.5 [−0.7, −0.3]", "1–8"]
                         for i in range(12)})
    log = compile_latex(table_latex(wide, "Wide: ‖g_1‖/‖g_L‖ against √L", "θ_l, σ²"),
                        tmp_path)
    assert "Overfull \\hbox" not in log
