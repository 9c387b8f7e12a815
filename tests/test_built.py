"""depthlab.planner.built: a report reads the cells and seeds of the fits on disk, and refuses
fits measured with another config than its own."""

import pandas as pd

from depthlab.planner.built import difference, measured, refusal


def write_fit(path, rows):
    """A fit file with the columns built reads: (label, n_seeds) per row."""
    path.parent.mkdir(parents=True, exist_ok=True)
    pd.DataFrame(rows, columns=["label", "n_seeds"]).to_parquet(path)
    return str(path)


def test_measured_reads_the_most_seeds_behind_each_cell(tmp_path):
    # a statistic of a subset of seeds (4 of 6) does not hide the cell's 6
    fit = write_fit(tmp_path / "a.parquet", [("depth-6", 6.0), ("depth-6", 4.0), ("depth-24", 6.0)])
    assert measured(fit) == {"depth-6": 6, "depth-24": 6}
    assert measured(str(tmp_path / "absent.parquet")) == {}


def test_difference_names_the_file_and_what_differs():
    known = {"a", "b", "other_arm"}
    assert difference("f.parquet", {"a": 5}, {"a": 5}, known) == ""
    assert difference("f.parquet", {}, {"a": 5}, known) == ""  # not built: nothing to refuse
    # a fit may hold cells of its study's other arms (across arms), not cells of no arm
    assert difference("f.parquet", {"a": 5, "other_arm": 2}, {"a": 5}, known) == ""
    assert difference("f.parquet", {"a": 5, "b": 5}, {"a": 7, "b": 7}, known) == (
        "f.parquet was measured with 5 seeds per cell (this config: 7)")
    assert difference("f.parquet", {"a": 5, "c": 5}, {"a": 5, "b": 5}, known) == (
        "f.parquet holds other cells than this config's (b, c)")


def test_refusal_is_one_line_for_the_first_fit_that_differs(tmp_path):
    same = write_fit(tmp_path / "same.parquet", [("x", 3)])
    other = write_fit(tmp_path / "other.parquet", [("x", 3)])
    planned = {same: {"x": 3}, other: {"x": 7}}
    known = {same: {"x"}, other: {"x"}}
    line = refusal({same: measured(same), other: measured(other)}, planned, known)
    assert line == (f"report: {other} was measured with 3 seeds per cell (this config: 7); "
                    "build it with that run's --configfile files")
    assert refusal({same: measured(same)}, {same: {"x": 3}}, known) == ""

