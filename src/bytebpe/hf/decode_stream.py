"""`tokenizers.decoders.DecodeStream`: text of a stream of ids, a chunk as soon as it is whole.

HF's rule is kept exactly by the compiled `_decode_streams.HFStream` (its docstring states it); this class
says what a tokenizer decodes by: a bytebpe tokenizer (a `bytebpe.hf.Tokenizer`, or a transformers
tokenizer's backend under the patch) by its pipeline's `StreamTokens`, in C, where its decoder has one
(ByteLevel; the Llama 2 chain); any other by its own ``decode(ids, skip_special_tokens)``.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .. import _decode_streams
from .._decode_streams import DecodeStreamError

__all__ = ["DecodeStream", "DecodeStreamError"]


class DecodeStream(_decode_streams.HFStream):
    """`step(tokenizer, id_or_ids)` gives the new text, or None while it is not whole. `tokenizer`: a
    `bytebpe.hf.Tokenizer`, a transformers tokenizer's backend, or anything with HF's
    ``decode(ids, skip_special_tokens)``."""

    __slots__ = ()

    def __init__(self, ids: Sequence[int] | None = None, skip_special_tokens: bool = False) -> None:
        super().__init__(None if ids is None else self._ids_of(ids), bool(skip_special_tokens))

    @staticmethod
    def _ids_of(ids: Any) -> list[Any]:
        """The ids of a step's or the constructor's argument: one id, or a sequence of them (each checked by
        the core, which raises HF's TypeError for what is not one)."""
        if hasattr(ids, "__index__"):
            return [ids]
        if isinstance(ids, (str, bytes)) or not isinstance(ids, Sequence) and not hasattr(ids, "tolist"):
            raise TypeError(f"DecodeStream.step takes an id (an int from 0 to 2**32 - 1) or a list of them, got "
                            f"{type(ids).__name__}")
        return list(ids.tolist() if hasattr(ids, "tolist") else ids)

    @staticmethod
    def _source_of(tokenizer: Any) -> tuple[Any, _decode_streams.StreamTokens | None, Any]:
        """(the tokenizer's key, its StreamTokens or None, its decode): see `_decode_streams.HFStream`."""
        fast = getattr(tokenizer, "_rebuild", None)      # an AcceleratedBackend: its bytebpe tokenizer
        inner = fast() if fast is not None else tokenizer
        decode = getattr(inner, "decode", None)
        if decode is None:
            raise TypeError(f"DecodeStream.step takes a tokenizer, got {type(tokenizer).__name__}")
        pipeline = getattr(inner, "_pipeline", None)
        stream_tokens = getattr(pipeline, "stream_tokens", None)
        key = getattr(tokenizer, "_pipeline", None)
        return key, stream_tokens() if stream_tokens is not None and key is pipeline else None, decode

    def __repr__(self) -> str:
        return f"DecodeStream(skip_special_tokens={self.skip_special_tokens})"
