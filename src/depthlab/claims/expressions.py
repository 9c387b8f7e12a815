"""The claims file's expressions, evaluated as data: a whitelist of Python's syntax.

An entry's `value` (a per-seed expression of its fit rows), a curve's `formula` in k and an
arithmetic entry's value are parsed with `ast` and evaluated node by node: numbers, the names
of the entry's rows and of FUNCTIONS, arithmetic, comparisons, `&`, `|`, `~`, subscripts
(`x[..., 0]`, slices) and calls of FUNCTIONS. Anything else (attributes, lambdas,
comprehensions, strings, keyword arguments) is an ExpressionError naming the entry: `eval`
with empty builtins is not safe (`().__class__.__bases__...` walks to any object), and the
claims file is a config key a user can point anywhere.

Every function works on the last axis, so the same expression evaluates per seed ((S, K) rows)
or on a batch of resampled seed means ((B, K) rows, depthlab.claims.bands).
"""

from __future__ import annotations

import ast
import operator

import numpy as np


class ExpressionError(ValueError):
    """An expression that uses something outside the whitelist (message names the entry)."""


def _first(cond: np.ndarray, at: np.ndarray) -> np.ndarray:
    """Per seed, the coordinate of the first True along the last axis (NaN if none)."""
    cond = np.asarray(cond, dtype=bool)
    idx = cond.argmax(axis=-1)
    return np.where(cond.any(axis=-1), np.asarray(at, dtype=float)[idx], np.nan)


def _orders(*series: np.ndarray) -> float:
    """How many distinct orders (by value) the given per-seed quantities take across seeds."""
    stacked = np.stack(series, axis=-1)
    return float(len({tuple(np.argsort(row)) for row in stacked}))


def _slope(y: np.ndarray, x: np.ndarray) -> np.ndarray:
    """Per seed, the OLS slope of y (S, K) on x ((K,) or (S, K))."""
    x = np.broadcast_to(np.asarray(x, dtype=float), np.shape(y))
    xc = x - x.mean(axis=-1, keepdims=True)
    yc = y - y.mean(axis=-1, keepdims=True)
    return (yc * xc).sum(axis=-1) / (xc**2).sum(axis=-1)


def _quarter(x: np.ndarray, last: bool) -> np.ndarray:
    """Mean over the first (or last) quarter of the last axis: the fits' 'early' ('late')."""
    n = max(1, np.shape(x)[-1] // 4)
    return np.mean(x[..., -n:] if last else x[..., :n], axis=-1)


class NotInGrid(Exception):
    """The entry's rows are not in this config's grid (e.g. depth 96 in config/tiny.yaml), or
    its expression reads layers the grid lacks."""


def _window(x: np.ndarray, at: np.ndarray, lo: float, hi: float) -> np.ndarray:
    """Mean of x (S, K) over the coordinates at (K,) within [lo, hi]."""
    keep = (np.asarray(at) >= lo) & (np.asarray(at) <= hi)
    if not keep.any():
        raise NotInGrid(f"no layer in [{lo}, {hi}]")
    return np.mean(x[..., keep], axis=-1)


def _windows(x: np.ndarray, n: int) -> np.ndarray:
    """Means over n consecutive equal windows of the last axis (a remainder at its end is
    dropped): a profile read where single layers are noise."""
    size = np.shape(x)[-1] // int(n)
    if size < 1:
        raise NotInGrid(f"fewer than {n} layers")
    return np.mean(np.reshape(x[..., : size * int(n)], (*np.shape(x)[:-1], int(n), size)), -1)


FUNCTIONS = {
    "log": np.log, "log10": np.log10, "sqrt": np.sqrt, "abs": np.abs, "exp": np.exp,
    "maximum": np.maximum, "minimum": np.minimum, "where": np.where, "pi": np.pi,
    "avg": lambda x: np.mean(x, axis=-1), "total": lambda x: np.sum(x, axis=-1),
    "lowest": lambda x: np.min(x, axis=-1), "highest": lambda x: np.max(x, axis=-1),
    "middle": lambda x: np.median(x, axis=-1),
    "diff": lambda x: np.diff(x, axis=-1), "frac": lambda c: np.mean(c, axis=-1),
    "every": lambda c: np.all(c, axis=-1), "first": _first, "orders": _orders,
    "slope": _slope, "stack": lambda *xs: np.stack(xs, axis=-1),
    "early": lambda x: _quarter(x, False), "late": lambda x: _quarter(x, True),
    "window": _window, "windows": _windows, "join": lambda *xs: np.concatenate(xs, axis=-1),
}

_BINARY = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
    ast.Div: operator.truediv, ast.Pow: operator.pow, ast.BitAnd: operator.and_,
    ast.BitOr: operator.or_,
}
_UNARY = {ast.USub: operator.neg, ast.UAdd: operator.pos, ast.Invert: operator.invert}
_COMPARE = {
    ast.Lt: operator.lt, ast.LtE: operator.le, ast.Gt: operator.gt, ast.GtE: operator.ge,
    ast.Eq: operator.eq, ast.NotEq: operator.ne,
}


def parse(expression: str, where: str) -> ast.Expression:
    """The parsed expression, or ExpressionError naming `where` for a syntax error or any node
    outside the whitelist (checked before anything is evaluated)."""
    try:
        tree = ast.parse(expression, mode="eval")
    except SyntaxError as err:
        raise ExpressionError(f"{where}: {expression!r} is not an expression ({err.msg})") \
            from None
    allowed = (ast.Expression, ast.Constant, ast.Name, ast.Load, ast.BinOp, ast.UnaryOp,
               ast.Compare, ast.Call, ast.Subscript, ast.Slice, ast.Tuple,
               *_BINARY, *_UNARY, *_COMPARE)
    for node in ast.walk(tree):
        if not isinstance(node, allowed):
            raise ExpressionError(f"{where}: {type(node).__name__} is not allowed in "
                                  f"{expression!r} (numbers, row names, arithmetic, "
                                  "comparisons and the ledger's functions only)")
        if isinstance(node, ast.Constant) and (isinstance(node.value, bool) or not (
                isinstance(node.value, int | float) or node.value is Ellipsis)):
            raise ExpressionError(f"{where}: the constant {node.value!r} is not allowed in "
                                  f"{expression!r}")
        if isinstance(node, ast.Call) and (node.keywords or not isinstance(node.func, ast.Name)
                                           or node.func.id not in FUNCTIONS):
            raise ExpressionError(f"{where}: only the ledger's functions may be called in "
                                  f"{expression!r} (one of {', '.join(sorted(FUNCTIONS))})")
    return tree


def evaluate(expression: str, names: dict, where: str):
    """The value of `expression` with `names` (row arrays) and FUNCTIONS; ExpressionError for a
    node outside the whitelist or an unknown name."""
    scope = {**FUNCTIONS, **names}

    def run(node):
        if isinstance(node, ast.Expression):
            return run(node.body)
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.Name):
            if node.id not in scope:
                raise ExpressionError(f"{where}: unknown name {node.id!r} in {expression!r} "
                                      f"(rows: {', '.join(names) or 'none'})")
            return scope[node.id]
        if isinstance(node, ast.BinOp):
            return _BINARY[type(node.op)](run(node.left), run(node.right))
        if isinstance(node, ast.UnaryOp):
            return _UNARY[type(node.op)](run(node.operand))
        if isinstance(node, ast.Compare):
            left, out = run(node.left), None
            for op, right_node in zip(node.ops, node.comparators, strict=True):
                right = run(right_node)
                part = _COMPARE[type(op)](left, right)
                out = part if out is None else out & part
                left = right
            return out
        if isinstance(node, ast.Call):
            return scope[node.func.id](*[run(a) for a in node.args])
        if isinstance(node, ast.Subscript):
            try:
                return run(node.value)[run(node.slice)]
            except IndexError:
                raise NotInGrid("the series is shorter than the entry reads") from None
        if isinstance(node, ast.Slice):
            return slice(*(None if p is None else run(p)
                           for p in (node.lower, node.upper, node.step)))
        if isinstance(node, ast.Tuple):
            return tuple(run(e) for e in node.elts)
        raise ExpressionError(f"{where}: {type(node).__name__} is not allowed")  # parse() stops it

    with np.errstate(divide="ignore", invalid="ignore"):
        return run(parse(expression, where))
