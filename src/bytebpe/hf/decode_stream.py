"""`tokenizers.decoders.DecodeStream`: text of a stream of ids, a chunk as soon as it is whole.

HF's rule (tokenizers/src/tokenizer/mod.rs, `step_decode_stream`), kept exactly: the ids since the last chunk
are decoded with the ids before them (the *prefix*, which makes a decoder that looks at a token's neighbours
decode it as it would in the whole text); a chunk is what the decode adds to the prefix's text, given once that
text is longer (in UTF-8 bytes) than the prefix's and does not end in U+FFFD (an incomplete character). A
decode that does not start with the prefix's text is HF's `InvalidPrefix` error.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

__all__ = ["DecodeStream", "DecodeStreamError"]


class DecodeStreamError(ValueError):
    """A stream's text no longer starts with what it already gave (HF's InvalidPrefix)."""


class DecodeStream:
    """`step(tokenizer, id_or_ids)` gives the new text, or None while it is not whole. `tokenizer`: a
    `bytebpe.hf.Tokenizer`, a transformers tokenizer's backend, or anything with HF's
    ``decode(ids, skip_special_tokens)``."""

    __slots__ = ("_ids", "_prefix", "_prefix_index", "skip_special_tokens")

    def __init__(self, ids: Sequence[int] | None = None, skip_special_tokens: bool = False) -> None:
        self.skip_special_tokens = bool(skip_special_tokens)
        self._ids: list[int] = _checked_ids(ids) if ids is not None else []
        self._prefix = ""
        self._prefix_index = 0

    def step(self, tokenizer: Any, id: int | Sequence[int]) -> str | None:
        new_ids = [id] if isinstance(id, int) and not isinstance(id, bool) else _checked_ids(id)
        decode = _decoder_of(tokenizer)
        skip = self.skip_special_tokens
        ids = self._ids
        if not self._prefix and ids:
            prefix = decode(ids, skip)
            if not prefix.endswith("\ufffd"):
                self._prefix = prefix
                self._prefix_index = len(ids)
        ids += new_ids
        text = decode(ids, skip)
        prefix = self._prefix
        if text.endswith("\ufffd") or len(text.encode("utf-8", "surrogatepass")) <= \
                len(prefix.encode("utf-8", "surrogatepass")):
            return None
        if not text.startswith(prefix):
            raise DecodeStreamError(f"Invalid prefix encountered while decoding stream. Token ID: {ids[-1]}, "
                                    f"Expected prefix: '{prefix}', Actual string: '{text}'")
        chunk = text[len(prefix):]
        new_index = len(ids) - self._prefix_index
        del ids[:self._prefix_index]
        self._prefix = decode(ids, skip)
        self._prefix_index = new_index
        return chunk

    def __repr__(self) -> str:
        return f"DecodeStream(skip_special_tokens={self.skip_special_tokens})"


def _checked_ids(ids: Any) -> list[int]:
    if isinstance(ids, (str, bytes)) or not isinstance(ids, Sequence):
        raise TypeError(f"DecodeStream takes an id or a list of ids, got {type(ids).__name__}")
    out = list(ids)
    for token_id in out:
        if not isinstance(token_id, int) or isinstance(token_id, bool) or token_id < 0:
            raise TypeError(f"DecodeStream takes ids (ints >= 0), got {token_id!r}")
    return out


def _decoder_of(tokenizer: Any) -> Any:
    fast = getattr(tokenizer, "_rebuild", None)      # an AcceleratedBackend: its bytebpe tokenizer
    if fast is not None:
        tokenizer = fast()
    decode = getattr(tokenizer, "decode", None)
    if decode is None:
        raise TypeError(f"DecodeStream.step takes a tokenizer, got {type(tokenizer).__name__}")
    return decode
