"""Where the training corpus comes from: the copy shipped in data/ (default, no network), a local
file or a URL, and the sha256 its text must have. Light: the Snakefile reads it at parse time."""

from __future__ import annotations

# the text of Tiny Shakespeare (data/README.md; from karpathy/char-rnn's
# data/tinyshakespeare/input.txt): its sha256 and the size of its vocabulary
CORPUS_SHA256 = "86c4e6aa9db7c042ec79f339dcb96d42b0075e16b8fc2e86bf0ca57e2dc565ed"
CORPUS_VOCAB = 65  # distinct characters
SHIPPED = "data/tinyshakespeare.txt.xz"  # relative to the repository (the workflow's folder)
