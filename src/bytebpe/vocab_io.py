"""Vocabulary files: reading and writing the `.tiktoken` format, converting GPT-2's original
"data gym" files, and checking a file's sha256.

A vocabulary is ``mergeable_ranks: dict[bytes, int]`` (token bytes -> rank). The rank is both the
token id and the merge priority, so the ranks must be exactly 0..n-1; a file that breaks that rule
is corrupt, and every reader here says where (file and 1-based line) instead of guessing.

No network code lives here: `vocab_sources` (tiktoken's `tiktoken.load` API) reads an address through the
registry and hands the contents over as `Fetched`.
"""
from __future__ import annotations

import base64
import binascii
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import NamedTuple, Union

from .atomic_write import write_bytes_atomically

__all__ = [
    "Fetched",
    "VocabularyHashError",
    "read_tiktoken_bpe",
    "parse_tiktoken_bpe",
    "dump_tiktoken_bpe",
    "dump_tiktoken_bpe_bytes",
    "read_data_gym_ranks",
    "mergeable_bpe_ranks_to_data_gym",
    "sha256_of",
    "verify_sha256",
]

class Fetched(NamedTuple):
    """A file's contents read from elsewhere (an address: `vocab_sources`), and the name errors give it."""
    contents: bytes
    label: str


# A path to read, the file's contents already in memory, or contents fetched from an address. A `str` is
# always a path.
Source = Union[str, "os.PathLike[str]", bytes, Fetched]

_HASH_CHUNK_BYTES = 1 << 20


class VocabularyHashError(ValueError):
    """A vocabulary file's sha256 is not the pinned one: the file is corrupt, truncated or foreign."""


def _read_source(source: Source, expected_hash: str | None = None) -> tuple[bytes, str]:
    """Returns (contents, label); the label names the file in error messages. With `expected_hash`, contents
    whose sha256 differs raise VocabularyHashError, as in tiktoken."""
    if isinstance(source, Fetched):
        contents, label = source
    elif isinstance(source, (bytes, bytearray, memoryview)):
        contents, label = bytes(source), "<bytes>"
    elif isinstance(source, str) and "://" in source:
        raise ValueError(f"{source}: an address; bytebpe.load_tiktoken_bpe and "
                         "bytebpe.data_gym_to_mergeable_bpe_ranks read addresses")
    else:
        label = os.fspath(source)
        with open(label, "rb") as file:
            contents = file.read()
    if expected_hash is not None:
        import hashlib

        actual = hashlib.sha256(contents).hexdigest()
        if actual != expected_hash.lower():
            raise VocabularyHashError(hash_mismatch_message(label, expected_hash, actual))
    return contents, str(label)


def _lines_without_trailing_blanks(contents: bytes) -> list[bytes]:
    # Lines end with b"\n" or b"\r\n" (a file saved on Windows: tiktoken reads it); a lone b"\r" is not a
    # line end (bytes.splitlines() would make it one, hiding a mangled file). A final line without newline
    # and blank lines at the very end are both harmless.
    if b"\r\n" in contents:
        contents = contents.replace(b"\r\n", b"\n")
    lines = contents.split(b"\n")
    while lines and lines[-1] == b"":
        lines.pop()
    return lines


# --------------------------------------------------------------------------- .tiktoken format


def read_tiktoken_bpe(source: Source, expected_hash: str | None = None, *,
                      require_dense: bool = False) -> dict[bytes, int]:
    """Parses a `.tiktoken` file: one line per token, ``base64(token bytes) SPACE rank``.

    `source` is a path, the file's contents as bytes, or `Fetched` contents (`bytebpe.load_tiktoken_bpe`
    reads addresses too); with `expected_hash`, a file whose sha256
    differs raises VocabularyHashError (a ValueError). Ranks must strictly increase down the
    file, which is how every real file is written: a duplicate or out-of-order rank raises
    ValueError naming the file and line, as do bad base64, a duplicate token and a line that is
    not two fields. A gap in the ranks is allowed, because the official p50k_base file has one
    (rank 50256 is left free for ``<|endoftext|>``); pass ``require_dense=True`` to reject any
    ranks other than exactly 0..n-1.

    A truncated file can still be a valid, smaller vocabulary; only the pinned sha256 of a named
    encoding (see the registry) catches that.

    >>> read_tiktoken_bpe(b"YQ== 0\\nYg== 1\\n")
    {b'a': 0, b'b': 1}
    """
    contents, label = _read_source(source, expected_hash)
    return parse_tiktoken_bpe(contents, label, require_dense=require_dense)


def parse_tiktoken_bpe(contents: bytes, label: str, *, require_dense: bool = False) -> dict[bytes, int]:
    """`load_tiktoken_bpe` of contents already read; errors name `label` as the file."""
    lines = _lines_without_trailing_blanks(contents)
    if not lines:
        raise ValueError(f"{label}: empty vocabulary file (expected lines of 'base64 rank')")

    b64decode = base64.b64decode
    mergeable_ranks: dict[bytes, int] = {}
    rank = -1
    # The hot loop compares the rank field with the next rank's decimal bytes instead of parsing
    # it: o200k has 200k lines, and this keeps a load under a tenth of a second. Only a line that
    # does not match (a gap, or an error) takes the slow path, which also explains what is wrong.
    for line_index, line in enumerate(lines):
        fields = line.split(b" ")
        if len(fields) != 2:
            raise _line_error(label, line_index, f"expected 'base64 rank', got {_shorten(line)}")
        encoded_token, rank_field = fields
        try:
            # ("=" alone is the empty byte string, a token tiktoken reads: Whisper's multilingual has one)
            token = b64decode(encoded_token, validate=True) if encoded_token != b"=" else b""
        except binascii.Error:
            raise _line_error(label, line_index, f"invalid base64 {_shorten(encoded_token)}") from None
        if not encoded_token:       # (tiktoken's reader fails on such a line too)
            raise _line_error(label, line_index, "empty token field (the empty byte string is written '=')")
        if rank_field == b"%d" % (rank + 1):
            rank += 1
        else:
            rank = _parse_rank_after(label, line_index, rank_field, rank, mergeable_ranks, require_dense)
        if token in mergeable_ranks:
            first_line = list(mergeable_ranks).index(token) + 1
            raise _line_error(label, line_index, f"duplicate token {token!r} (first on line {first_line})")
        mergeable_ranks[token] = rank
    return mergeable_ranks


def _parse_rank_after(
    label: str,
    line_index: int,
    rank_field: bytes,
    previous_rank: int,
    mergeable_ranks: dict[bytes, int],
    require_dense: bool,
) -> int:
    """The rank on a line that is not simply `previous_rank` + 1: a gap, or a precise error."""
    if rank_field.startswith(b"-") and rank_field[1:].isdigit():
        raise _line_error(label, line_index, f"negative rank {rank_field.decode()}")
    # bytes.isdigit() is ASCII-only, so this also rejects '+5', ' 5', '5_0' and '5\r' that int()
    # would accept.
    if not rank_field.isdigit():
        raise _line_error(label, line_index, f"rank is not an integer: {_shorten(rank_field)}")
    rank = int(rank_field)
    if rank == previous_rank + 1:  # written with leading zeros: unusual, but the same number
        return rank
    if rank <= previous_rank:
        for first_line, earlier_rank in enumerate(mergeable_ranks.values(), start=1):
            if earlier_rank == rank:
                raise _line_error(label, line_index, f"duplicate rank {rank} (first on line {first_line})")
        raise _line_error(
            label, line_index, f"rank {rank} after rank {previous_rank}: ranks must increase down the file"
        )
    if require_dense:
        raise _line_error(
            label,
            line_index,
            f"rank {rank} where {previous_rank + 1} was expected: ranks {previous_rank + 1}..{rank - 1} "
            "are missing (require_dense=True asks for exactly 0..n-1)",
        )
    return rank


def _line_error(label: str, line_index: int, problem: str) -> ValueError:
    return ValueError(f"{label}, line {line_index + 1}: {problem}")


def _shorten(raw: bytes, limit: int = 60) -> str:
    text = repr(raw)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def dump_tiktoken_bpe(mergeable_ranks: Mapping[bytes, int], path: str | os.PathLike[str]) -> None:
    """Writes `mergeable_ranks` as a `.tiktoken` file, sorted by rank, replacing `path` atomically.

    Refuses (ValueError) what `load_tiktoken_bpe` would refuse to read back: non-bytes
    tokens, and negative, non-integer or repeated ranks. Loading the result gives back an equal dict.
    """
    write_bytes_atomically(path, dump_tiktoken_bpe_bytes(mergeable_ranks))


def dump_tiktoken_bpe_bytes(mergeable_ranks: Mapping[bytes, int]) -> bytes:
    """The contents `dump_tiktoken_bpe` writes."""
    if not mergeable_ranks:
        raise ValueError("refusing to write an empty vocabulary: the reader rejects empty files")
    token_of_rank: dict[int, bytes] = {}
    for token, rank in mergeable_ranks.items():
        if not isinstance(token, bytes):
            raise ValueError(f"token {token!r} is not a bytes object")
        if type(rank) is not int or rank < 0:  # bool is an int subclass, and not a rank
            raise ValueError(f"rank {rank!r} of token {token!r} is not a non-negative integer")
        if rank in token_of_rank:
            raise ValueError(f"rank {rank} is used by both {token_of_rank[rank]!r} and {token!r}")
        token_of_rank[rank] = token
    return b"".join(
        (base64.b64encode(token_of_rank[rank]) or b"=") + b" %d\n" % rank for rank in sorted(token_of_rank)
    )


# --------------------------------------------------------------------------- GPT-2 "data gym"


def _data_gym_byte_order() -> tuple[list[int], dict[str, int]]:
    """GPT-2's byte <-> character mapping, which lets its files store bytes as printable text.

    Returns (bytes in rank order, character -> byte). Printable bytes other than space stand for
    themselves; the remaining 68 bytes get chr(256), chr(257), ... in increasing byte order. The
    single-byte tokens are ranked printable bytes first, then the remapped ones.
    """
    printable = [b for b in range(256) if chr(b).isprintable() and chr(b) != " "]
    remapped = [b for b in range(256) if not (chr(b).isprintable() and chr(b) != " ")]
    byte_of_char = {chr(b): b for b in printable}
    byte_of_char.update({chr(256 + k): b for k, b in enumerate(remapped)})
    return printable + remapped, byte_of_char


def read_data_gym_ranks(vocab_bpe: Source, encoder_json: Source, vocab_bpe_hash: str | None = None,
                        encoder_json_hash: str | None = None,
                        clobber_one_byte_tokens: bool = False) -> dict[bytes, int]:
    """Converts GPT-2's original files to ``mergeable_ranks``, cross-checking one with the other.

    `vocab_bpe` lists merges (a ``#version`` line, then ``first second`` per line); the 256 single
    bytes come first and merge i gets rank 256 + i. `encoder_json` maps token text to id and must
    describe exactly the same vocabulary (its ``<|endoftext|>``/``<|startoftext|>`` entries are
    special tokens and are left out); any difference raises ValueError naming the token.
    Each file is a path, the contents as bytes or `Fetched` contents, checked against its hash if one is
    given (`bytebpe.data_gym_to_mergeable_bpe_ranks` reads addresses too). As in tiktoken,
    `clobber_one_byte_tokens=True` takes the single-byte tokens' ranks from `encoder_json` instead (for
    vocabularies that number the 256 bytes in another order than GPT-2's).
    """
    bpe_contents, bpe_label = _read_source(vocab_bpe, vocab_bpe_hash)
    json_contents, json_label = _read_source(encoder_json, encoder_json_hash)
    byte_order, byte_of_char = _data_gym_byte_order()

    def decode(text: str, label: str, where: str) -> bytes:
        try:
            return bytes([byte_of_char[char] for char in text])
        except KeyError as missing:
            raise ValueError(
                f"{label}{where}: character {missing.args[0]!r} in {text!r} is not in "
                "GPT-2's byte-to-character mapping"
            ) from None

    mergeable_ranks: dict[bytes, int] = {bytes([b]): rank for rank, b in enumerate(byte_order)}
    try:
        bpe_text = bpe_contents.decode("utf-8")
    except UnicodeDecodeError as error:
        raise ValueError(f"{bpe_label}: not UTF-8 text ({error})") from None
    for line_index, line in enumerate(bpe_text.split("\n")):
        if not line or (line_index == 0 and line.startswith("#version")):
            continue
        where = f", line {line_index + 1}"
        parts = line.split(" ")
        if len(parts) != 2 or not parts[0] or not parts[1]:
            raise ValueError(f"{bpe_label}{where}: expected 'first second', got {line!r}")
        first = decode(parts[0], bpe_label, where)
        second = decode(parts[1], bpe_label, where)
        # A merge joins two tokens that already exist; anything else means a damaged list.
        for part, text in ((first, parts[0]), (second, parts[1])):
            if part not in mergeable_ranks:
                raise ValueError(f"{bpe_label}{where}: {text!r} is merged before it is a token")
        merged = first + second
        if merged in mergeable_ranks:
            raise ValueError(f"{bpe_label}{where}: merge {line!r} repeats token {merged!r}")
        mergeable_ranks[merged] = len(mergeable_ranks)

    try:
        encoder = json.loads(json_contents)
    except ValueError as error:
        raise ValueError(f"{json_label}: not valid JSON ({error})") from None
    if not isinstance(encoder, dict):
        raise ValueError(f"{json_label}: expected a JSON object mapping token text to id")
    encoder.pop("<|endoftext|>", None)
    encoder.pop("<|startoftext|>", None)
    if clobber_one_byte_tokens:
        for text, token_id in encoder.items():
            token = decode(text, json_label, "")
            if len(token) == 1:
                mergeable_ranks[token] = token_id
    _check_encoder_matches(encoder, mergeable_ranks, json_label, decode)
    return mergeable_ranks


def _check_encoder_matches(encoder: dict, mergeable_ranks: dict[bytes, int], label: str, decode) -> None:
    """Raises ValueError at the first token where encoder.json and the merges disagree."""
    seen: set[bytes] = set()
    for text, token_id in encoder.items():
        token = decode(text, label, "")
        seen.add(token)
        rank = mergeable_ranks.get(token)
        if rank is None:
            raise ValueError(f"{label}: token {text!r} (id {token_id}) is not produced by the merges")
        if token_id != rank:
            raise ValueError(f"{label}: token {text!r} has id {token_id}, but the merges rank it {rank}")
    if len(seen) != len(mergeable_ranks):
        missing = next(token for token in mergeable_ranks if token not in seen)
        raise ValueError(
            f"{label}: token {missing!r} (rank {mergeable_ranks[missing]}) from the merges is missing"
        )


def mergeable_bpe_ranks_to_data_gym(mergeable_ranks: Mapping[bytes, int]) -> tuple[bytes, bytes]:
    """The inverse of `data_gym_to_mergeable_bpe_ranks`: the contents of (vocab.bpe, encoder.json).

    Written as OpenAI wrote GPT-2's files, so the r50k_base ranks give them back byte for byte (their pinned
    sha256 match; ~0.5 s). The merge that made the token of rank r is what BPE with only the merges below r
    leaves of its bytes: two parts. encoder.json ends with ``<|endoftext|>`` after the last rank.
    """
    byte_order, byte_of_char = _data_gym_byte_order()
    if any(mergeable_ranks.get(bytes([b])) != rank for rank, b in enumerate(byte_order)):
        raise ValueError("the single bytes are not ranked in GPT-2's order: no data gym form exists")
    char_of_byte = {b: char for char, b in byte_of_char.items()}

    def text(token: bytes) -> str:
        return "".join([char_of_byte[b] for b in token])

    token_of_rank = sorted(mergeable_ranks, key=mergeable_ranks.__getitem__)
    merges = ["#version: 0.2"]
    for rank in range(len(byte_order), len(token_of_rank)):
        parts = _bpe_below(token_of_rank[rank], rank, mergeable_ranks)
        if len(parts) != 2 or mergeable_ranks[token_of_rank[rank]] != rank:
            raise ValueError(f"token {token_of_rank[rank]!r} is not one merge of two earlier tokens")
        merges.append(f"{text(parts[0])} {text(parts[1])}")
    encoder = {text(token): rank for token, rank in mergeable_ranks.items()}
    encoder["<|endoftext|>"] = len(token_of_rank)
    return ("\n".join(merges) + "\n").encode("utf-8"), json.dumps(encoder).encode("utf-8")


def _bpe_below(piece: bytes, limit: int, mergeable_ranks: Mapping[bytes, int]) -> list[bytes]:
    """`piece` merged by BPE with only the tokens ranked below `limit`, stopping at two parts."""
    parts = [piece[i : i + 1] for i in range(len(piece))]
    while len(parts) > 2:
        best_index, best_rank = -1, limit
        for i in range(len(parts) - 1):
            rank = mergeable_ranks.get(parts[i] + parts[i + 1], limit)
            if rank < best_rank:
                best_index, best_rank = i, rank
        if best_index < 0:
            break
        parts[best_index : best_index + 2] = [parts[best_index] + parts[best_index + 1]]
    return parts


# --------------------------------------------------------------------------- integrity


def sha256_of(path: str | os.PathLike[str]) -> str:
    """The hex sha256 of a file, read in 1 MiB chunks."""
    import hashlib  # imported where needed: OpenSSL costs ~4 MB of resident memory per process

    digest = hashlib.sha256()
    with open(path, "rb") as file:
        while chunk := file.read(_HASH_CHUNK_BYTES):
            digest.update(chunk)
    return digest.hexdigest()


def verify_sha256(path: str | os.PathLike[str], expected: str) -> None:
    """Raises VocabularyHashError (naming the file and both hashes) unless `path` hashes to `expected`."""
    actual = sha256_of(path)
    if actual != expected.lower():
        raise VocabularyHashError(hash_mismatch_message(Path(path), expected, actual))


def hash_mismatch_message(where: os.PathLike[str] | str, expected: str, actual: str) -> str:
    return (
        f"sha256 mismatch for {os.fspath(where)}: expected {expected.lower()}, got {actual}. "
        "The file is corrupt, truncated or not the official one; replace it."
    )
