"""The training corpus: fetch Tiny Shakespeare (local copy or URL), check its sha256, encode it.

Light on purpose (numpy only, no torch or pandas): the Snakefile reads its constants at parse
time.
"""

from __future__ import annotations

import hashlib
import shutil
import urllib.request
from pathlib import Path

import numpy as np

CORPUS_URL = (
    "https://raw.githubusercontent.com/karpathy/char-rnn/master/data/tinyshakespeare/input.txt"
)
CORPUS_SHA256 = "86c4e6aa9db7c042ec79f339dcb96d42b0075e16b8fc2e86bf0ca57e2dc565ed"


class CorpusError(RuntimeError):
    """The corpus could not be fetched or its checksum does not match."""


def sha256_of(path: str | Path) -> str:
    """Hex sha256 of a file's bytes."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def fetch_corpus(
    dest: str | Path, source: str | Path | None = None, url: str = CORPUS_URL,
    sha256: str = CORPUS_SHA256,
) -> None:
    """Put the corpus at `dest`: a copy of the local file `source` if given, else a download of
    `url`. The bytes are checked against `sha256` before `dest` appears (written atomically);
    raises CorpusError naming the source, both checksums and the size on a mismatch."""
    from depthlab.io import atomic_path  # pandas and pyarrow: not at parse time

    with atomic_path(dest) as tmp:
        if source:
            if not Path(source).is_file():
                raise CorpusError(f"corpus_path {str(source)!r} is not a file")
            shutil.copyfile(source, tmp)
            origin = f"corpus_path {str(source)!r}"
        else:
            try:
                with urllib.request.urlopen(url, timeout=60) as response, open(tmp, "wb") as f:
                    shutil.copyfileobj(response, f)
            except OSError as err:
                raise CorpusError(
                    f"could not download the corpus from {url} ({err}); set corpus_path to a "
                    "local copy"
                ) from err
            origin = url
        got = sha256_of(tmp)
        if got != sha256:
            raise CorpusError(
                f"sha256 mismatch for {origin}: expected {sha256}, got {got} "
                f"({tmp.stat().st_size} bytes); this is not the Tiny Shakespeare corpus"
            )


def encode(text: str) -> tuple[np.ndarray, str]:
    """Character-level encoding: the ids (int64, one per character) and the vocabulary (the
    sorted distinct characters; id i is vocab[i])."""
    vocab = "".join(sorted(set(text)))
    lookup = np.zeros(max(map(ord, vocab)) + 1, dtype=np.int64)
    lookup[[ord(c) for c in vocab]] = np.arange(len(vocab))
    codes = np.frombuffer(text.encode("utf-32-le"), dtype=np.uint32)
    return lookup[codes], vocab


def read_corpus(path: str | Path) -> tuple[np.ndarray, str]:
    """The encoded corpus at `path` (see `encode`)."""
    return encode(Path(path).read_text(encoding="utf-8"))


def unigram_entropy(ids: np.ndarray) -> float:
    """Entropy of the character frequencies, in nats per character: the cross-entropy of the
    best model that ignores context, the bar a language model's loss has to go below."""
    p = np.bincount(ids) / len(ids)
    p = p[p > 0]
    return float(-(p * np.log(p)).sum())


def split(ids: np.ndarray, val_fraction: float) -> tuple[np.ndarray, np.ndarray]:
    """The first 1 - val_fraction of the characters for training, the rest for validation."""
    cut = int(round(len(ids) * (1 - val_fraction)))
    return ids[:cut], ids[cut:]
