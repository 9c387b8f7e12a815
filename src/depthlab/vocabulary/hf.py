"""A Hugging Face decoder layer as the block (setting `block: {hf: <family>, ...}`), as the
settings and every table name it; light (no torch, no transformers): the layers are built by
depthlab.core.hf_layers.

A config gives a mapping, `{hf: llama}`, with optional overrides of the family's config class
(`{hf: gemma2, initializer_range: 0.02}`) and the init reading (`init: own`, the family's
`_init_weights`, or `init: torch_default`, nn.Linear's own). The settings hold it as one string,
its spec, `hf-<family>` then `;key=value` per option in key order (the value as JSON): it
hashes, travels in a job's cells and a shard's `block` column as any block, and holds no ':' or
brace (never in a job id: a `block` axis is one arm per block, `grad@hf_llama`).
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Mapping

PREFIX = "hf-"
# family -> its name in tables and captions
FAMILIES = {
    "llama": "Llama",
    "qwen2": "Qwen2",
    "mistral": "Mistral",
    "gemma2": "Gemma 2",
    "olmo2": "OLMo 2",
    "gpt_neox": "GPT-NeoX",
    "gpt2": "GPT-2",
    "phi": "Phi",
}
# the init readings: the family's own `_init_weights`, or nn.Linear's default as built
INITS = ("own", "torch_default")
# an init reading in a name (`name`, `short_name`); GPT-2's maps are Conv1D, with their own
# default draw
INIT_NAMES = {"own": "own init", "torch_default": "nn.Linear init"}
GPT2_DEFAULT = "Conv1D init"
_NUMBER = re.compile(r"[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?")


def is_hf(block: str) -> bool:
    """Whether a block setting names a Hugging Face layer (a spec), not module:function."""
    return block.startswith(PREFIX)


def _value(value):
    """A scalar option as the spec holds it: a number YAML left a string ('1e-6') as a number."""
    if isinstance(value, str) and _NUMBER.fullmatch(value):
        return float(value) if any(c in value for c in ".eE") else int(value)
    return value


def spec(block: Mapping) -> str:
    """The spec of a config's mapping: `hf-<family>;key=value...` (keys sorted)."""
    options = {k: _value(v) for k, v in block.items() if k != "hf"}
    return PREFIX + str(block.get("hf", "")) + "".join(
        f";{k}={json.dumps(options[k])}" for k in sorted(options))


def parse(block: str) -> tuple[str, dict]:
    """A spec's family and options (the config overrides and `init`)."""
    family, *pairs = block[len(PREFIX):].split(";")
    options = {}
    for pair in pairs:
        key, _, value = pair.partition("=")
        options[key] = json.loads(value)
    return family, options


def problem(block: str) -> str:
    """What is wrong with a spec, in one line naming the key and value ('' where nothing is): a
    family not of FAMILIES (with the nearest), an `init` not of INITS, an option that is not a
    number, true/false or a string. The override keys are checked against the family's config
    class where a layer is built (depthlab.core.hf_layers)."""
    try:
        family, options = parse(block)
    except json.JSONDecodeError:
        return (f"block={block!r}: an option's value is not a number, true/false or a string "
                "without ';'")
    if family not in FAMILIES:
        near = difflib.get_close_matches(family, FAMILIES, n=1)
        hint = f" (did you mean {near[0]!r}?)" if near else ""
        return f"block.hf={family!r} is not one of {list(FAMILIES)}{hint}"
    for key, value in options.items():
        if isinstance(value, dict | list) or value is None:
            return f"block.{key}={value!r} must be a number, true/false or a string"
    if options.get("init", "own") not in INITS:
        return f"block.init={options['init']!r} is not one of {list(INITS)}"
    return ""


def _options(family: str, options: dict) -> list[str]:
    """A spec's options as a name says them: the init in words (INIT_NAMES), others key=value."""
    words = []
    for key, value in options.items():
        if key == "init" and value in INIT_NAMES:
            default = value == "torch_default" and family == "gpt2"
            words.append(GPT2_DEFAULT if default else INIT_NAMES[value])
        else:
            words.append(f"{key}={value}")
    return words


def name(block: str) -> str:
    """A spec's name in captions: 'HF Llama decoder layer', then its options ('HF Gemma 2
    decoder layer, nn.Linear init, rms_norm_eps=1e-06')."""
    family, options = parse(block)
    return ", ".join([f"HF {FAMILIES.get(family, family)} decoder layer",
                      *_options(family, options)])


def short_name(block: str) -> str:
    """A spec's name in table columns and legends: the family, then its options ('Gemma 2',
    'Gemma 2, nn.Linear init', 'Gemma 2, rms_norm_eps=1e-06')."""
    family, options = parse(block)
    return ", ".join([FAMILIES.get(family, family), *_options(family, options)])
