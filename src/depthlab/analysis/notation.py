"""The notation of the tables' text: its symbols (Greek letters, subscripts such as ω_{k+1} or
x_k, the minus sign U+2212, norms, roots, ...) as LaTeX maths, for a LaTeX table (`latex_text`:
plain ASCII, the rest escaped; a character it has no LaTeX for is an error, never written raw)."""

from __future__ import annotations

import re

# LaTeX's special characters and what stands for each in text
LATEX_ESCAPES = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#",
                 "_": r"\_", "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}",
                 "^": r"\textasciicircum{}", "–": "--", "—": "---", "…": r"\ldots{}",
                 "<": r"\textless{}", ">": r"\textgreater{}", "\u201c": "``", "\u201d": "''",
                 "\u2018": "`", "\u2019": "'", "\u00a0": "~", "\u2009": r"\,"}
# the symbols written as LaTeX maths (each inside $...$, adjacent ones in one pair)
LATEX_MATH = {"−": "-", "α": r"\alpha", "β": r"\beta", "γ": r"\gamma", "δ": r"\delta",
              "ε": r"\varepsilon", "ζ": r"\zeta", "η": r"\eta", "θ": r"\theta", "ι": r"\iota",
              "κ": r"\kappa", "λ": r"\lambda", "μ": r"\mu", "ν": r"\nu", "ξ": r"\xi",
              "π": r"\pi", "ρ": r"\rho", "σ": r"\sigma", "τ": r"\tau", "φ": r"\phi",
              "χ": r"\chi", "ψ": r"\psi", "ω": r"\omega", "Γ": r"\Gamma", "Δ": r"\Delta",
              "Θ": r"\Theta", "Λ": r"\Lambda", "Ξ": r"\Xi", "Π": r"\Pi", "Σ": r"\Sigma",
              "Φ": r"\Phi", "Ψ": r"\Psi", "Ω": r"\Omega",
              "‖": r"\Vert ", "±": r"\pm ", "≠": r"\neq ", "↔": r"\leftrightarrow ",
              "·": r"\cdot ", "×": r"\times ", "≤": r"\leq ", "≥": r"\geq ", "≈": r"\approx ",
              "∂": r"\partial ", "∞": r"\infty ", "→": r"\to ", "←": r"\leftarrow ",
              "∑": r"\sum ", "∈": r"\in ", "∝": r"\propto ", "∼": r"\sim ", "∇": r"\nabla ",
              "ℓ": r"\ell ", "°": r"^{\circ}", "√": r"\surd ", "|": "|"}
# superscript and subscript characters (x², Jᵀ, 10⁻⁴, x₀): a run of them is one ^{...} or _{...}
SUPERSCRIPTS = dict(zip("⁰¹²³⁴⁵⁶⁷⁸⁹⁺⁻ᵀ", "0123456789+-T", strict=True))
SUBSCRIPTS = dict(zip("₀₁₂₃₄₅₆₇₈₉₊₋", "0123456789+-", strict=True))
# ASCII names of Greek letters that stand for the letter before a subscript (omega_k)
GREEK_NAMES = ("alpha", "beta", "gamma", "delta", "omega", "theta", "sigma", "lambda", "mu")
# a maths atom: a subscripted symbol (x_k, sd_L, ω_{k+1}, omega_k, delta_attn), a square root
# of a symbol or a bracket (√k, √(2/π)), a minus sign before a number, a run of superscript or
# subscript characters, or one maths symbol
_GREEK = "".join(c for c in LATEX_MATH if c.isalpha())
LATEX_PATTERNS = (
    rf"(?<![A-Za-z0-9_])(?P<base>{'|'.join(GREEK_NAMES)}|[A-Za-z]{{1,2}}|[{_GREEK}])"
    r"_(?P<sub>\{[^{}]*\}|[A-Za-z0-9]+(?![A-Za-z0-9_]))",
    r"√(?P<root>\([^()]*\)|[A-Za-z0-9]+)",
    r"(?<![\w.)\]])(?P<minus>-)(?=\d)",
    rf"(?P<sup>[{''.join(SUPERSCRIPTS)}]+)|(?P<subs>[{''.join(SUBSCRIPTS)}]+)",
    rf"(?P<symbol>[{''.join(re.escape(c) for c in LATEX_MATH)}])")
LATEX_ATOM = re.compile("|".join(LATEX_PATTERNS))


def _math(text: str) -> str:
    """A fragment in LaTeX maths: its symbols as commands, braces kept as grouping."""
    return "".join(LATEX_MATH.get(c, c) for c in text).strip()


def _atom(m: re.Match) -> str:
    """One maths atom of LATEX_ATOM as LaTeX maths (without the $)."""
    if m["base"]:
        base = m["base"]
        base = (rf"\{base}" if base in GREEK_NAMES else
                _math(base) if len(base) == 1 else rf"\mathrm{{{base}}}")
        sub = m["sub"][1:-1] if m["sub"].startswith("{") else m["sub"]
        sub = rf"\mathrm{{{sub}}}" if sub.isalpha() and len(sub) > 1 else _math(sub)
        return f"{base}_{{{sub}}}"
    groups = m.groupdict()
    if groups.get("root"):
        inner = m["root"][1:-1] if m["root"].startswith("(") else m["root"]
        return rf"\sqrt{{{_math(inner)}}}"
    if groups.get("sup"):
        return "^{" + "".join(SUPERSCRIPTS[c] for c in m["sup"]) + "}"
    if groups.get("subs"):
        return "_{" + "".join(SUBSCRIPTS[c] for c in m["subs"]) + "}"
    return "-" if groups.get("minus") else LATEX_MATH[m["symbol"]].strip()


def _parts(text: str) -> list[tuple[str, str]]:
    """`text` as ("text", ...) and ("math", ...) pieces, adjacent maths atoms in one piece."""
    parts, last, math = [], 0, []
    for m in LATEX_ATOM.finditer(text):
        if text[last:m.start()]:
            if math:
                parts.append(("math", " ".join(math)))
                math = []
            parts.append(("text", text[last:m.start()]))
        math.append(_atom(m))
        last = m.end()
    if math:
        parts.append(("math", " ".join(math)))
    if text[last:]:
        parts.append(("text", text[last:]))
    return parts


def latex_text(value) -> str:
    r"""A cell, title or note as LaTeX in plain ASCII: text with LaTeX's special characters
    escaped, and maths (subscripts such as ω_{k+1} or x_k, Greek letters, U+2212 minus, norms,
    roots, ±, x², ...) as $...$ (`$\omega_{k+1}$`, `$-$`), adjacent maths atoms in one pair.
    A character with no LaTeX here raises ValueError (fails the table) rather than reaching the
    .tex raw, where pdflatex would stop on it."""
    text = str(value)
    latex = "".join(f"${piece}$" if kind == "math" else
                    "".join(LATEX_ESCAPES.get(c, c) for c in piece)
                    for kind, piece in _parts(text))
    unknown = sorted({c for c in latex if not c.isascii()})
    if unknown:
        names = ", ".join(f"{c!r} (U+{ord(c):04X})" for c in unknown)
        raise ValueError(f"no LaTeX for {names} in {text!r}: add it to "
                         "depthlab.analysis.notation (LATEX_MATH or LATEX_ESCAPES)")
    return latex
