"""An own block (setting `block`, depthlab.core.own_block) as a variant of its own in every table,
figure and caption: never under the label of the built-in placement it follows.

The fits carry a cell's placement, not its block; `with_blocks` rewrites the `placement` (and
the fixes study's `fix`) of the rows of each arm measured with an own block into a key of its
own, `<placement>@<module:function>`, before a table or figure is drawn (depthlab.analysis.draw).
Light (no pandas import): the Snakefile's catalogue writes the captions with it at parse time.
Every table and figure then labels, orders and styles a placement key through `label`,
`order`, `base` and `own_style` here: a built-in placement as the registry has it, an own block
by its factory's name, "make_parallel (own block)", a Hugging Face layer by its family,
"Gemma 2 (HF layer)", "Gemma 2, nn.Linear init (HF layer)"; each drawn in a colour no
placement of the registry has and a marker none uses (`own_style`). A target declared for
Pre-LN alone (stack96's stream targets) is drawn, titled and captioned per placement where its
rows hold any other key (`per_placement`).

A `block` axis is one arm per block (depthlab.planner.grid.split_block_axes), each fitted on its
own: `arm_names` names them `<arm>@<block's name>` (`grad@make_parallel`), which every target
reading `<arm>` reads (`origin`), and `with_blocks` draws them as rows of `<arm>`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

from depthlab.vocabulary import hf
from depthlab.vocabulary.placements import LABELS, ORDER

OWN = "@"  # in a placement key: <placement>@<module:function>
OWN_SUFFIX = " (own block)"
HF_SUFFIX = " (HF layer)"
# a Hugging Face family's look, whatever else a figure draws: a hue of Paul Tol's "muted"
# scheme and a marker, neither a placement's of the registry (tested)
HF_LOOKS = {
    "llama": ("#332288", (3, 1, 0)),
    "qwen2": ("#88ccee", (3, 1, 180)),
    "mistral": ("#44aa99", (4, 1, 45)),
    "gemma2": ("#117733", (5, 0, 180)),
    "olmo2": ("#cc6677", (4, 0, 22.5)),
    "gpt_neox": ("#882255", (3, 0, 45)),
    "gpt2": ("#ddcc77", (5, 1, 180)),
    "phi": ("#aa4499", (8, 1, 0)),
}
# an HF layer's dash is its init reading: its family's own solid, nn.Linear's dashed; any other
# variant of a family in one figure (overrides) takes the next free of HF_MORE_DASHES
HF_DASHES = {"own": "", "torch_default": (4, 1.5)}
HF_MORE_DASHES = ((1, 1), (5, 1, 1, 1), (2, 2), (3, 1.5))
# a factory's look, one after another: black and greys, then the HF hues no HF layer of the
# figure has; markers and dashes no placement of the registry (nor an HF family) uses
OWN_COLORS = ("black", "0.45", "0.65", "0.3")
OWN_MARKERS = ((7, 1, 0), (3, 0, 15), (4, 1, 22.5), (5, 1, 90))
OWN_DASHES = ((3, 1.5), (1, 1), (5, 1, 1, 1), (2, 2))
SPLIT = "@"  # in an arm's name: <arm>@<block's name>, one block of a `block` axis
BUILT_IN = "built_in"  # the built-in block's name in an arm's name


def origin(arm: str) -> str:
    """The arm of the config a split arm comes from ('grad' of 'grad@make_parallel')."""
    return str(arm).partition(SPLIT)[0]


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "_", text).strip("_") or "block"


def _names(block) -> tuple[str, str]:
    """A block's short and full name in an arm's name: letters, digits and _ only."""
    if isinstance(block, Mapping):
        block = hf.spec(block)
    block = str(block)
    if not block:
        return BUILT_IN, BUILT_IN
    if hf.is_hf(block):
        return _slug(f"hf_{hf.parse(block)[0]}"), _slug(block)
    return _slug(block.rpartition(":")[2]), _slug(block)


def arm_names(arm: str, blocks: list, measured="") -> list[str]:
    """The arm of each block of `arm`'s `block` axis (module:function, a {hf: ...} mapping, ''
    for the built-in): `<arm>@<name>`, its factory's name ('grad@make_parallel'), a Hugging Face
    layer's family ('grad@hf_llama'), the whole block where two names would be one, then its
    position; the built-in keeps the arm's name where the arm measures it without the axis
    (`measured`, its block setting, is empty), else it is `<arm>@built_in`. No ':' (a path)."""
    short, full = zip(*map(_names, blocks), strict=True) if blocks else ((), ())
    names = []
    for i, block in enumerate(blocks):
        if not block and not measured:
            names.append(arm)
            continue
        name = short[i] if short.count(short[i]) == 1 else full[i]
        if full.count(full[i]) > 1:
            name = f"{full[i]}_{i + 1}"
        names.append(f"{arm}{SPLIT}{name}")
    return names


def own_key(placement: str, block: str) -> str:
    """The placement key of a cell of own block `block` (module:function) that follows
    `placement`; the placement itself where `block` is empty (the built-in block)."""
    return f"{placement}{OWN}{block}" if block else placement


def is_own(key: str) -> bool:
    return OWN in str(key)


def base(key: str) -> str:
    """The built-in placement a key follows (its final norm, its telescoping)."""
    return str(key).partition(OWN)[0]


def block_of(key: str) -> str:
    """The own block (module:function) of a key, '' for a built-in placement."""
    return str(key).partition(OWN)[2]


def block_name(block: str) -> str:
    """An own block's name in captions: its factory's, 'make_parallel'; a Hugging Face
    layer's, 'HF Llama decoder layer' (depthlab.vocabulary.hf.name)."""
    if hf.is_hf(block):
        return hf.name(block)
    return block.rpartition(":")[2] or block


def label(key: str) -> str:
    """A placement key as a reader sees it: the registry's label of a built-in placement
    ('Pre-LN'), an own block's factory name ('make_parallel (own block)'), a Hugging Face
    layer's family and options ('Gemma 2, nn.Linear init (HF layer)', hf.short_name)."""
    if not is_own(key):
        return LABELS[key]
    block = block_of(key)
    if hf.is_hf(block):
        return f"{hf.short_name(block)}{HF_SUFFIX}"
    return f"{block_name(block)}{OWN_SUFFIX}"


def per_placement(keys: Iterable[str], alone: str = "pre") -> bool:
    """Whether rows of the placement keys `keys` (after `with_blocks`) are shown per placement,
    each under its `label`: unless they are all of `alone` (stack96's stream arm: Pre-LN, the
    one placement its default configs measure and its declared titles and captions name), so
    that no other placement and no own block is ever shown under that name."""
    return bool({str(k) for k in keys} - {alone})


def _family(key: str) -> str:
    """The Hugging Face family of an own block's key (one of HF_LOOKS), '' for a factory."""
    block = block_of(key)
    family = hf.parse(block)[0] if hf.is_hf(block) else ""
    return family if family in HF_LOOKS else ""


def _own_rank(key: str) -> tuple:
    """Own blocks of one placement: factories by name, then HF layers in HF_LOOKS's order,
    each family's plain layer first."""
    family = _family(key)
    return (list(HF_LOOKS).index(family) + 1 if family else 0, key)


def order(keys: Iterable[str]) -> list[str]:
    """The keys present, in the registry's order, each own block right after the placement it
    follows (own blocks of one placement: `_own_rank`)."""
    present = set(keys)
    out = []
    for placement in ORDER:
        if placement in present:
            out.append(placement)
        out += sorted((k for k in present if is_own(k) and base(k) == placement),
                      key=_own_rank)
    return out


def own_style(keys: Iterable[str]) -> dict[str, dict]:
    """The look of each own block among `keys` (label, colour, marker, dashes), in `order`: an
    HF layer its family's hue and marker (HF_LOOKS), dashed by its init (HF_DASHES; a further
    variant of a family the next free of HF_MORE_DASHES); a factory one of OWN_COLORS and then of
    the hues of the HF families absent, of OWN_MARKERS and of OWN_DASHES. No two own blocks
    of one figure look alike while its factories are at most 4 + the absent families and each
    family has at most 6 variants."""
    own = [k for k in order(keys) if is_own(k)]
    families = {_family(k) for k in own}
    colors = [*OWN_COLORS, *(c for f, (c, _) in HF_LOOKS.items() if f not in families)]
    out: dict[str, dict] = {}
    taken: dict[str, set] = {}  # family -> the dashes its layers have
    factories = 0
    for k in own:
        family = _family(k)
        if family:
            color, marker = HF_LOOKS[family]
            options = hf.parse(block_of(k))[1]
            used = taken.setdefault(family, set())
            plain = set(options) <= {"init"}  # its init's dash, where no layer before took it
            dashes = HF_DASHES.get(options.get("init", "own")) if plain else None
            if dashes is None or dashes in used:
                free = [d for d in HF_MORE_DASHES if d not in used]
                dashes = free[0] if free else HF_MORE_DASHES[len(used) % len(HF_MORE_DASHES)]
            used.add(dashes)
        else:
            i = factories
            factories += 1
            color, marker = colors[i % len(colors)], OWN_MARKERS[i % len(OWN_MARKERS)]
            dashes = OWN_DASHES[i % len(OWN_DASHES)]
        out[k] = {"label": label(k), "color": color, "marker": marker, "dashes": dashes}
    return out


def with_blocks(fits, blocks: Mapping[str, str] | None):
    """`fits` (a DataFrame) with the placement key (`own_key`) of each arm measured with an own
    block (`blocks`: arm -> module:function, the arms of the built-in block left out) in its
    `placement` column, and in `fix` where that is the placement (the fixes study); and each
    row's block in a column `block` ('' for the built-in). Where the fits have a placement, the
    rows of an arm split from a `block` axis (`grad@make_parallel`) are then the rows of the
    arm it comes from (`origin`), which the studies' tables and figures pick by name: their
    placement keys keep the blocks apart."""
    if "arm" not in fits:
        return fits
    blocks = blocks or {}
    rows = fits["arm"].isin(list(blocks))
    split = fits["arm"].astype(str).str.contains(SPLIT, regex=False)
    if not rows.any() and not (split.any() and "placement" in fits):
        return fits
    fits = fits.copy()
    if rows.any():
        fits = _own_rows(fits, rows, blocks)
    if "placement" in fits and split.any():
        fits["arm"] = fits["arm"].astype(object)
        fits.loc[split, "arm"] = [origin(a) for a in fits.loc[split, "arm"]]
    return fits


def _own_rows(fits, rows, blocks: Mapping[str, str]):
    """with_blocks's placement keys and `block` column, set on its copy `fits`."""
    # the block itself, for a study whose fits name no placement (varsplit's: Pre-LN only)
    fits["block"] = [blocks.get(a, "") for a in fits["arm"]]
    if "placement" not in fits:
        return fits
    # each own block's row's key, by row index, computed once for both columns
    keys = {i: own_key(str(p), blocks[a]) for i, a, p in zip(
        fits.index[rows], fits.loc[rows, "arm"], fits.loc[rows, "placement"], strict=True)}
    if "fix" in fits:
        same = rows & (fits["fix"].astype(str) == fits["placement"].astype(str))
        fits["fix"] = fits["fix"].astype(object)
        fits.loc[same, "fix"] = [keys[i] for i in fits.index[same]]
    fits["placement"] = fits["placement"].astype(object)
    fits.loc[rows, "placement"] = [keys[i] for i in fits.index[rows]]
    return fits


def caption_note(blocks: Mapping[str, str],
                 placements: Mapping[str, Iterable[str]] | None = None) -> str:
    """The sentence a report caption ends with where a target reads own blocks: each block's
    name, module:function, the arms measured with it and the placements whose final norm it
    follows (`placements`: arm -> placements); '' where it reads none."""
    if not blocks:
        return ""
    by_block: dict[str, list[str]] = {}
    for arm, block in blocks.items():
        by_block.setdefault(block, []).append(arm)
    parts = []
    for block, arms in by_block.items():
        follows = [p for p in ORDER if any(p in (placements or {}).get(a, ()) for a in arms)]
        after = (f", following the final norm of {', '.join(LABELS[p] for p in follows)}"
                 if follows else "")
        parts.append(f"{block_name(block)} ({block}; arm {', '.join(arms)}{after})")
    return ("Own blocks, labelled by name and never as the built-in placement they follow: "
            + "; ".join(parts) + ".")


def ignored(setting: str, block: str, value) -> str:
    """A setting's value in a table row of an own block: depthlab applies `init`, `out_scale`,
    `residual_scale`, `skip_scale`, `bias` (and the other settings of its built-in blocks) to
    its own blocks only; an own block's factory is handed them and may read them or not, so
    rows of one block that differ only in one of them may be the same model."""
    if not block:
        return value
    return f"{value} (given to {block_name(block)}, which may ignore it)"
