"""The training corpus: put it in place (the shipped .xz copy, a local file or a URL), check its
sha256, encode it (constants: depthlab.vocabulary.corpus)."""

from __future__ import annotations

import hashlib
import lzma
import shutil
import urllib.request
from pathlib import Path

import numpy as np

from depthlab.core.io import atomic_path


class CorpusError(RuntimeError):
    """The corpus could not be read or fetched, or its checksum does not match."""


def sha256_of(path: str | Path) -> str:
    """Hex sha256 of a file's bytes."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _copy(source: str, dest: Path) -> None:
    """Copy `source` to `dest`: a URL (http, https, file) is downloaded, a path ending in .xz is
    decompressed, any other path copied."""
    if "://" in source:
        try:
            with urllib.request.urlopen(source, timeout=60) as response, open(dest, "wb") as f:
                shutil.copyfileobj(response, f)
        except OSError as err:
            raise CorpusError(f"could not download the corpus from {source} ({err}); set "
                              "corpus_path to a local copy") from err
        return
    if not Path(source).is_file():
        raise CorpusError(f"corpus source {source!r} is not a file")
    opener = lzma.open if source.endswith(".xz") else open
    with opener(source, "rb") as f, open(dest, "wb") as out:
        shutil.copyfileobj(f, out)


def fetch_corpus(dest: str | Path, source: str | Path, sha256: str) -> None:
    """Put the corpus text at `dest` from `source` (a URL, a .xz file or a text file). The text
    is checked against `sha256` before `dest` appears (written atomically); CorpusError naming
    the source, both checksums and the size on a mismatch."""
    with atomic_path(dest) as tmp:
        _copy(str(source), tmp)
        got = sha256_of(tmp)
        if got != sha256:
            raise CorpusError(
                f"sha256 mismatch for corpus {str(source)!r}: expected {sha256}, got {got} "
                f"({tmp.stat().st_size} bytes); for another corpus set corpus_sha256"
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
