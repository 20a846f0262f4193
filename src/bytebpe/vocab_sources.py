"""tiktoken's `tiktoken.load` API: vocabulary files by path, by contents, or by address (`bytebpe.load_tiktoken_bpe`).

An address (http, https) is read as tiktoken reads it but offline wherever possible: an official file that
bytebpe bundles is rebuilt from the bundle (byte for byte, pinned); any other is found or downloaded like a
vocabulary file (`registry.resolve_vocabulary_file`), and cached like tiktoken's. The formats themselves are
vocab_io's; this module only adds the addresses.
"""
from __future__ import annotations

import os
from typing import Union

from . import bundled
from .registry import ENCODING_SPECS, AddressFile, VocabularyFile, resolve_vocabulary_file
from .tiktoken_cache import original_files
from .vocab_io import (
    Fetched,
    VocabularyHashError,
    hash_mismatch_message,
    read_data_gym_ranks,
    read_tiktoken_bpe,
)

__all__ = ["load_tiktoken_bpe", "data_gym_to_mergeable_bpe_ranks", "read_address"]

# A path, an http(s) address, or a file's contents.
PathOrAddress = Union[str, "os.PathLike[str]", bytes]


def read_address(url: str, expected_hash: str | None = None) -> bytes:
    """The file at `url`, as tiktoken's read_file_cached gives it, offline wherever possible (see above);
    checked against `expected_hash` if given (VocabularyHashError)."""
    import hashlib      # imported where needed: OpenSSL costs ~4 MB of resident memory per process

    official = {file.url: (spec, file) for spec in ENCODING_SPECS.values() for file in spec.files}
    spec, file = official.get(url, (None, None))
    if spec is not None and file is not None and spec.bundled is not None and bundled.is_bundled(spec.bundled):
        contents = original_files(spec.name)[file]
    else:
        pin = expected_hash.lower() if expected_hash else file.sha256 if file else None
        contents = resolve_vocabulary_file(VocabularyFile(url, pin) if file else AddressFile(url, pin)).read_bytes()
    if expected_hash is not None:
        actual = hashlib.sha256(contents).hexdigest()
        if actual != expected_hash.lower():
            raise VocabularyHashError(hash_mismatch_message(url, expected_hash, actual))
    return contents


def _fetched(source: PathOrAddress, expected_hash: str | None) -> PathOrAddress | Fetched:
    if isinstance(source, str) and "://" in source:
        return Fetched(read_address(source, expected_hash), source)
    return source


def load_tiktoken_bpe(source: PathOrAddress, expected_hash: str | None = None, *,
                      require_dense: bool = False) -> dict[bytes, int]:
    """Parses a `.tiktoken` file: one line per token, ``base64(token bytes) SPACE rank``.

    tiktoken's `tiktoken.load.load_tiktoken_bpe(path_or_url, expected_hash=None)`, with the same arguments:
    `source` is a path, an http(s) address (an official file bytebpe bundles is never downloaded; any other
    is cached like tiktoken's), or the file's contents as bytes; with `expected_hash`, a file whose sha256
    differs raises VocabularyHashError (a ValueError). Ranks must strictly increase down the file, which is
    how every real file is written: a duplicate or out-of-order rank raises ValueError naming the file and
    line, as do bad base64, a duplicate token and a line that is not two fields. A gap in the ranks is
    allowed, because the official p50k_base file has one (rank 50256 is left free for ``<|endoftext|>``);
    pass ``require_dense=True`` to reject any ranks other than exactly 0..n-1.

    A truncated file can still be a valid, smaller vocabulary; only the pinned sha256 of a named encoding
    (see the registry) catches that.

    >>> load_tiktoken_bpe(b"YQ== 0\\nYg== 1\\n")
    {b'a': 0, b'b': 1}
    """
    return read_tiktoken_bpe(_fetched(source, expected_hash), expected_hash, require_dense=require_dense)


def data_gym_to_mergeable_bpe_ranks(vocab_bpe: PathOrAddress, encoder_json: PathOrAddress,
                                    vocab_bpe_hash: str | None = None, encoder_json_hash: str | None = None,
                                    clobber_one_byte_tokens: bool = False) -> dict[bytes, int]:
    """Converts GPT-2's original files (`vocab.bpe`, `encoder.json`) to ``mergeable_ranks``, cross-checking one
    with the other: tiktoken's `tiktoken.load.data_gym_to_mergeable_bpe_ranks` with the same arguments. Each
    file is a path, an http(s) address or the contents as bytes; the rules are `vocab_io.read_data_gym_ranks`'.
    """
    return read_data_gym_ranks(_fetched(vocab_bpe, vocab_bpe_hash), _fetched(encoder_json, encoder_json_hash),
                               vocab_bpe_hash, encoder_json_hash, clobber_one_byte_tokens)
