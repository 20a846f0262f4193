"""The vocabularies shipped inside the package (`vocab/NAME.bin`), so that the named encodings load offline.

Four files hold the ranks of all seven encodings: r50k_base (also gpt2's: its data gym files give the same
ranks), p50k_base (p50k_edit), cl100k_base and o200k_base (o200k_harmony). A full one is a zlib stream of

    BUNDLED_VOCAB_MAGIC | n_ranks (uint32, little-endian) | n_ranks token lengths (uint8; 0 marks a gap)
                        | the tokens' bytes back to back, in rank order

Ranks are implied by the order; p50k_base has one gap (rank 50256, kept for <|endoftext|>). No real token is
longer than 128 bytes, so a length fits in a byte.

A vocabulary that only adds ranks after another one's (p50k_base: r50k_base plus 24 runs of spaces) is stored
as an extension of it (73 bytes instead of 201 KB): a zlib stream of

    EXTENDS_MARKER BASE_NAME "\\n" | n_ranks (uint32) | the lengths of the ranks after the base's | their bytes

and its content is joined to the base's before the check below, so it is checked exactly like a full one.

Why zlib and not lzma: lzma's smaller files take longer to decompress than the whole load of the
`.tiktoken` file they replace (benchmarks/README.md has the figures).

Every load checks a BLAKE2b digest of the decoded content against CONTENT_BLAKE2B, which
tools/gen_bundled_vocab.py recorded from `.tiktoken` files that matched tiktoken's pinned sha256; then the
compiled parser (`MergeTable.from_bundled`) fills the tables, checking every length against the size. A
damaged file is a VocabularyHashError, never a different vocabulary. Why BLAKE2b and not sha256: CPython's
sha256 comes from OpenSSL, whose import (`hashlib`) adds megabytes of resident memory to every process that
loads an encoding; its builtin BLAKE2b adds a fraction of that, and hashes a vocabulary in about a
millisecond more (benchmarks/README.md).
"""
from __future__ import annotations

import struct
import zlib
from collections.abc import Mapping
from pathlib import Path

from . import _core
from ._bundled_digests import CONTENT_BLAKE2B
from .vocab_io import VocabularyHashError

try:
    from _blake2 import blake2b     # CPython's own BLAKE2: no OpenSSL loaded (see above)
except ImportError:     # another Python
    from hashlib import blake2b

__all__ = ["BUNDLED_NAMES", "bundled_path", "content_digest", "is_bundled", "load_table", "pack_extension",
           "pack_ranks"]

BUNDLED_NAMES = tuple(CONTENT_BLAKE2B)
FOLDER = Path(__file__).with_name("vocab")
MAX_TOKEN_BYTES = 255   # one length byte per rank
EXTENDS_MARKER = b"bytebpe vocab extends "
_HEADER_BYTES = len(_core.BUNDLED_VOCAB_MAGIC) + 4     # the marker and n_ranks


def bundled_path(name: str) -> Path:
    """Where the bundled vocabulary `name` (a `.tiktoken` file's stem, e.g. "cl100k_base") is installed."""
    return FOLDER / f"{name}.bin"


def is_bundled(name: str) -> bool:
    """Whether this installation carries the vocabulary `name` (a build without package data would not)."""
    return name in CONTENT_BLAKE2B and bundled_path(name).is_file()


def content_digest(content: bytes) -> str:
    """The digest recorded for a bundled vocabulary's decoded content (hex BLAKE2b, 64 bytes)."""
    return blake2b(content).hexdigest()


def load_table(name: str) -> _core.MergeTable:
    """The merge table of the bundled vocabulary `name`, its decoded content checked against the recorded
    digest. Raises VocabularyHashError, naming the file and what to do, when the file is damaged."""
    path = bundled_path(name)
    content = _decompressed(name)
    if content.startswith(EXTENDS_MARKER):
        base_name, _, extension = content[len(EXTENDS_MARKER):].partition(b"\n")
        base_name = base_name.decode("ascii", "replace")
        if base_name not in CONTENT_BLAKE2B:
            raise VocabularyHashError(_damaged(path, name, f"it extends an unknown vocabulary {base_name!r}"))
        content = _joined(_decompressed(base_name), extension)
    actual = content_digest(content)
    if actual != CONTENT_BLAKE2B[name]:
        raise VocabularyHashError(
            _damaged(path, name, f"the BLAKE2b digest of its content is {actual}, expected {CONTENT_BLAKE2B[name]}"))
    try:
        return _core.MergeTable.from_bundled(content)
    except ValueError as error:     # only reachable if the recorded digest itself was of a bad file
        raise VocabularyHashError(_damaged(path, name, str(error))) from None


def _decompressed(name: str) -> bytes:
    try:
        return zlib.decompress(bundled_path(name).read_bytes())
    except zlib.error as error:
        raise VocabularyHashError(_damaged(bundled_path(name), name, f"it does not decompress: {error}")) from None
    except OSError as error:    # a base that an installation lost, while the file extending it is there
        raise VocabularyHashError(_damaged(bundled_path(name), name, f"it cannot be read: {error}")) from None


def _joined(base: bytes, extension: bytes) -> bytes:
    """The content of a vocabulary stored as an extension of `base` (both decoded). Unchecked: a damaged
    part gives content whose digest is not the recorded one (or a ValueError from the compiled reader)."""
    base_n_ranks = int.from_bytes(base[_HEADER_BYTES - 4:_HEADER_BYTES], "little")
    n_extra = int.from_bytes(extension[:4], "little") - base_n_ranks
    lengths_end = _HEADER_BYTES + base_n_ranks
    return b"".join([_core.BUNDLED_VOCAB_MAGIC, extension[:4], base[_HEADER_BYTES:lengths_end],
                     extension[4:4 + n_extra], base[lengths_end:], extension[4 + n_extra:]])


def _damaged(path: Path, name: str, problem: str) -> str:
    gpt2_note = " (for gpt2: vocab.bpe and encoder.json)" if name == "r50k_base" else ""
    return (f"bundled vocabulary {path} is damaged ({problem}). Reinstall bytebpe, or put the official "
            f"{name}.tiktoken{gpt2_note} in a folder listed in BYTEBPE_DATA_DIR to use that instead.")


def pack_ranks(mergeable_ranks: Mapping[bytes, int]) -> bytes:
    """The decoded content of a bundled vocabulary (see the module docstring) holding `mergeable_ranks`.

    >>> pack_ranks({b"a": 0, b"bc": 2})[len(_core.BUNDLED_VOCAB_MAGIC):]
    b'\\x03\\x00\\x00\\x00\\x01\\x00\\x02abc'
    """
    n_ranks = max(mergeable_ranks.values()) + 1
    token_of_rank: list[bytes] = [b""] * n_ranks
    for token, rank in mergeable_ranks.items():
        if not 1 <= len(token) <= MAX_TOKEN_BYTES:
            raise ValueError(f"token {token!r} has {len(token)} bytes; this format holds 1..{MAX_TOKEN_BYTES}")
        if token_of_rank[rank]:
            raise ValueError(f"rank {rank} is given to {token_of_rank[rank]!r} and {token!r}")
        token_of_rank[rank] = token
    return b"".join([_core.BUNDLED_VOCAB_MAGIC, struct.pack("<I", n_ranks),
                     bytes(map(len, token_of_rank)), *token_of_rank])


def pack_extension(content: bytes, base: bytes, base_name: str) -> bytes | None:
    """`content` stored as an extension of `base` (both from pack_ranks), or None when it does not extend it:
    the same tokens at the same ranks first, then more.

    >>> base, more = pack_ranks({b"a": 0}), pack_ranks({b"a": 0, b"bc": 2})
    >>> _joined(base, pack_extension(more, base, "x").partition(b"\\n")[2]) == more
    True
    """
    base_n_ranks = int.from_bytes(base[_HEADER_BYTES - 4:_HEADER_BYTES], "little")
    n_ranks = int.from_bytes(content[_HEADER_BYTES - 4:_HEADER_BYTES], "little")
    lengths_end = _HEADER_BYTES + base_n_ranks
    base_tokens = base[lengths_end:]
    tokens_start = _HEADER_BYTES + n_ranks
    if (n_ranks < base_n_ranks or content[_HEADER_BYTES:lengths_end] != base[_HEADER_BYTES:lengths_end]
            or not content[tokens_start:].startswith(base_tokens)):
        return None
    return b"".join([EXTENDS_MARKER, base_name.encode("ascii"), b"\n", content[_HEADER_BYTES - 4:_HEADER_BYTES],
                     content[lengths_end:tokens_start], content[tokens_start + len(base_tokens):]])
