"""The file format of one saved encoding: `Encoding.save(path)` writes it, `bytebpe.load(path)` reads it
(both in encoding.py; this module knows the format, not the `Encoding` class, so it imports nothing of it).

The file is UTF-8 JSON:

    {"format": "bytebpe", "version": 1, "name": ..., "pattern": ...,
     "special_tokens": {text: id, ...},
     "mergeable_ranks": [[base64 token, rank], ...],      # in rank order
     "sha256": hex digest of the canonical JSON of every other field}

The checksum turns any damage (a flipped byte inside base64 still parses) into a clear error. Every
problem is an `EncodingFileError`, a ValueError naming the file: never a crash, never a wrong vocabulary.
"""
from __future__ import annotations

import base64
import binascii
import json
import os
from collections.abc import Mapping
from typing import Any

from .atomic_write import write_bytes_atomically
from .file_formats import FORMATS, NESTED_TOO_DEEPLY, TokenizerFileError, recognise, recognise_document, wrong_format

__all__ = ["EncodingFileError", "FORMAT_VERSION", "write_encoding_file", "read_encoding_file", "encoding_arguments"]

FORMAT_NAME = "bytebpe"
FORMAT_VERSION = 1
# The version of files whose encoding normalizes its text (the "normalizer" field): version 1 readers refuse them.
NORMALIZER_VERSION = 2


class EncodingFileError(TokenizerFileError):
    """A saved encoding file that is truncated, corrupt, of another format or of an unknown version."""


def _checksum(fields: dict[str, Any]) -> str:
    import hashlib  # imported where needed: OpenSSL costs ~4 MB of resident memory per process

    canonical = json.dumps(fields, sort_keys=True, ensure_ascii=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode("ascii")).hexdigest()


def write_encoding_file(
    path: str | os.PathLike[str], *, name: str, pat_str: str, mergeable_ranks: Mapping[bytes, int],
    special_tokens: Mapping[str, int], normalizer: str | None = None,
) -> None:
    """Writes an encoding's constructor arguments to `path` (atomically: readers see the old file or the new
    one). An encoding with a normalizer is written as version NORMALIZER_VERSION, which bytebpe releases that
    would ignore the normalizer refuse to read."""
    fields: dict[str, Any] = {
        "format": FORMAT_NAME,
        "version": FORMAT_VERSION if normalizer is None else NORMALIZER_VERSION,
        "name": name,
        "pattern": pat_str,
        "special_tokens": dict(special_tokens),
        "mergeable_ranks": [
            [base64.b64encode(token).decode("ascii"), rank]
            for token, rank in sorted(mergeable_ranks.items(), key=lambda item: item[1])
        ],
    }
    if normalizer is not None:
        fields["normalizer"] = normalizer
    fields["sha256"] = _checksum(fields)
    write_bytes_atomically(path, json.dumps(fields, ensure_ascii=True, indent=0).encode("ascii") + b"\n")


def read_encoding_file(path: str | os.PathLike[str]) -> dict[str, Any]:
    """The `Encoding` arguments (name, pat_str, mergeable_ranks, special_tokens) saved at `path` by
    `write_encoding_file`; damage of any kind is an EncodingFileError, and so is a tokenizer file of another
    format (the message names it, and its loader)."""
    label = os.fspath(path)
    with open(path, "rb") as file:
        contents = file.read()
    try:
        fields = json.loads(contents)
    except RecursionError:
        raise EncodingFileError(f"{label}: {NESTED_TOO_DEEPLY}") from None
    except (ValueError, UnicodeDecodeError) as error:
        found = recognise(contents).kind
        if found in FORMATS and (FORMATS[found].loader or found == "gguf"):     # a tokenizer file of another format
            raise EncodingFileError(wrong_format(label, found, "bytebpe")) from None
        raise EncodingFileError(f"{label}: not a saved bytebpe encoding, or truncated ({error})") from None
    return encoding_arguments(fields, label)


def encoding_arguments(fields: Any, label: str) -> dict[str, Any]:
    """`read_encoding_file` of the parsed file (`label` names it in errors)."""
    if not isinstance(fields, dict) or fields.get("format") != FORMAT_NAME:
        found = recognise_document(fields)
        if FORMATS[found].loader:
            raise EncodingFileError(wrong_format(label, found, "bytebpe"))
        raise EncodingFileError(f"{label}: not a saved bytebpe encoding (no \"format\": \"bytebpe\")")
    version = fields.get("version")
    if version not in (FORMAT_VERSION, NORMALIZER_VERSION):
        raise EncodingFileError(f"{label}: format version {version!r}; this bytebpe reads versions "
                                f"{FORMAT_VERSION} and {NORMALIZER_VERSION}")
    normalizer = fields.get("normalizer")
    if (version == NORMALIZER_VERSION) != (normalizer is not None) or normalizer not in (None, "NFC"):
        raise EncodingFileError(f"{label}: version {version!r} with normalizer {normalizer!r}; a normalizer (only "
                                f"\"NFC\" is known) comes with version {NORMALIZER_VERSION} and only with it")
    fields = dict(fields)   # (the caller's document stays as it was)
    stored = fields.pop("sha256", None)
    if stored != _checksum(fields):
        raise EncodingFileError(f"{label}: checksum mismatch: the file is corrupt or was edited")
    try:
        name, pattern, special_tokens = fields["name"], fields["pattern"], fields["special_tokens"]
        mergeable_ranks = {base64.b64decode(token, validate=True): rank for token, rank in fields["mergeable_ranks"]}
    except (KeyError, TypeError, ValueError, binascii.Error) as error:
        raise EncodingFileError(f"{label}: malformed field ({error!r})") from None
    if len(mergeable_ranks) != len(fields["mergeable_ranks"]):
        raise EncodingFileError(f"{label}: a token is listed twice")
    arguments = {"name": name, "pat_str": pattern, "mergeable_ranks": mergeable_ranks,
                 "special_tokens": special_tokens}
    if normalizer is not None:
        arguments["normalizer"] = normalizer
    return arguments
