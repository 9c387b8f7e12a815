"""Every table of the studies as LaTeX (depthlab.analysis.tables.table_latex), from its real
strings: the titles and notes declared in the studies' targets.py, the literals of their
tables.py, and the column names and a few rows of each table from a real run
(tests/data/latex_tables.json; the scale study's, not run there, shaped like its tables.py's),
and the .tex files the session's tiny runs write (config/tiny.yaml, config/tiny_fixes.yaml),
which a table without a sample (a new study's) is checked on. No character reaches the .tex
outside ASCII, no text is left outside maths that needs it, and where pdflatex is installed
each table compiles in an article and fits its text width."""

from __future__ import annotations

import ast
import json
import re

import pandas as pd
import pytest
from conftest import PDFLATEX, ROOT, compile_latex, tiny_targets

from depthlab.analysis.notation import latex_text
from depthlab.analysis.tables import table_latex
from depthlab.planner.overlay import config_of
from depthlab.studies import TARGETS

TABLES = {t.stem: t for t in TARGETS if t.kind == "table"}
SAMPLES = json.loads((ROOT / "tests/data/latex_tables.json").read_text())
# the tables the session's tiny runs build: the tiny study's, and the tiny fixes run's
TINY_TABLES = {t.stem for t in tiny_targets() if t.kind == "table"}
FIXES_TABLES = {t.stem for t in TABLES.values() if t.study in ("fixes", "fixestraining")
                and t.arms(list(config_of(ROOT, "config/tiny_fixes.yaml")["studies"][t.study]
                                ["arms"]))}
NO_PDFLATEX = pytest.mark.skipif(PDFLATEX is None, reason="pdflatex is not installed (texlive)")


def literals(path) -> set[str]:
    """The string literals of a module (f-strings' literal parts included), docstrings not."""
    tree = ast.parse(path.read_text())
    docs = {id(node.body[0].value) for node in ast.walk(tree)
            if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef)
            and node.body and isinstance(node.body[0], ast.Expr)}
    return {node.value for node in ast.walk(tree) if isinstance(node, ast.Constant)
            and isinstance(node.value, str) and id(node) not in docs}


def real_strings() -> set[str]:
    """Every string a table is written from: titles, notes, column names, sample cells and the
    studies' tables.py literals (labels, column names, parts of cells)."""
    strings = {text for t in TABLES.values() for text in (t.title, t.note, *t.per_placement[:1])}
    for sample in SAMPLES.values():
        strings |= set(sample["columns"]) | {cell for row in sample["rows"] for cell in row}
    for module in (ROOT / "src/depthlab/studies").glob("*/tables.py"):
        strings |= literals(module)
    return strings


def sample(stem: str) -> pd.DataFrame:
    """The sample of a table's real rows, as write_table shows them (formatted strings)."""
    data = SAMPLES[stem]
    return pd.DataFrame(data["rows"], columns=data["columns"])


def test_every_table_has_a_sample_of_its_real_strings_or_a_tiny_run_builds_it():
    assert set(SAMPLES) <= set(TABLES)
    assert set(TABLES) <= set(SAMPLES) | TINY_TABLES | FIXES_TABLES


def check_written(run, stems: set[str], folder) -> None:
    """Every table of `stems` as the run in `run` wrote its .tex: ASCII, its packages named,
    and where pdflatex is installed all of them compile in one article, none wider than the
    text width (each table's name typed out before it, to say which one overflows)."""
    texts = []
    for stem in sorted(stems):
        tex = (run / TABLES[stem].outputs["tex"]).read_text()
        assert tex.isascii() and tex.startswith(r"% needs \usepackage{booktabs}"), stem
        texts.append(rf"\typeout{{table {stem}}}" + "\n" + tex)
    assert len(texts) == len(stems) > 0
    if PDFLATEX is None:
        return
    needs = texts[0].splitlines()[1]  # the packages' line, first for compile_latex
    log = compile_latex(needs + "\n" + "\n\\clearpage\n".join(texts), folder)
    for part in log.split("table ")[1:]:
        assert "Overfull \\hbox" not in part, part.split("\n")[0]
    assert re.search(r"^! ", log, re.M) is None


@pytest.mark.workflow
def test_the_tiny_run_s_tables_are_latex_that_compiles(tiny_run, tmp_path):
    check_written(tiny_run, TINY_TABLES, tmp_path)


@pytest.mark.workflow
def test_the_tiny_fixes_run_s_tables_are_latex_that_compiles(tiny_fixes_run, tmp_path):
    check_written(tiny_fixes_run, FIXES_TABLES, tmp_path)


def test_every_real_string_is_ascii_latex_with_its_maths_in_dollars():
    r"""Nothing non-ASCII left anywhere, and outside $...$ no unescaped special character."""
    for text in sorted(real_strings()):
        latex = latex_text(text)
        assert latex.isascii(), (text, latex)
        assert len(re.findall(r"(?<!\\)\$", latex)) % 2 == 0, (text, latex)
        outside = re.sub(r"(?<!\\)\$.*?(?<!\\)\$", "", latex)
        assert re.search(r"(?<!\\)[_^&%#]", outside) is None, (text, latex)


@pytest.mark.parametrize("text", ["café", "x ∮ y", "a\u200bb"])
def test_a_character_without_latex_fails_the_table_loudly(text):
    with pytest.raises(ValueError, match="no LaTeX for"):
        table_latex(pd.DataFrame({"a": [text]}), "title")


@pytest.mark.parametrize("stem", sorted(SAMPLES))
def test_every_table_is_ascii_and_names_its_packages(stem):
    tex = table_latex(sample(stem), TABLES[stem].title, TABLES[stem].note)
    assert tex.isascii()
    assert tex.startswith(r"% needs \usepackage{booktabs}, \usepackage{graphicx}")


@NO_PDFLATEX
@pytest.mark.parametrize("stem", sorted(SAMPLES))
def test_every_table_compiles_and_fits_the_text_width(stem, tmp_path):
    """In an article with T1 fonts and utf8 input (the user's preamble), pdflatex stops on no
    error and typesets no line wider than the text width (345 pt; TeX's \\hfuzz, 0.1 pt)."""
    tex = table_latex(sample(stem), TABLES[stem].title, TABLES[stem].note)
    log = compile_latex(tex, tmp_path)
    assert "Overfull \\hbox" not in log
    assert re.search(r"^! ", log, re.M) is None
