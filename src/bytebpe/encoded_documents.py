"""Encoded documents, whichever engine encoded them: a batch's arrays (`Encoded`), and the special tokens
that mark where each document begins and ends.

Shared by the local engine (datasets.py) and the Ray engine (ray.py); it knows nothing of either.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

if TYPE_CHECKING:
    import numpy.typing as npt

    from .encoding import Encoding

__all__ = ["BEGIN_OF_TEXT_TOKENS", "END_OF_TEXT_TOKENS", "Encoded", "append_eot", "cut_documents", "document_token_id",
           "select_documents", "wrap_documents"]


class Encoded(NamedTuple):
    """A batch of encoded documents, whichever engine encoded it: what the writers and tallies consume."""

    ids: npt.NDArray[Any]               # every document's ids back to back (end-of-text ids included)
    offsets: npt.NDArray[np.int64]      # documents + 1, from 0
    sizes: npt.NDArray[np.int64]        # each document's UTF-8 bytes
    doc_file: npt.NDArray[np.intp]      # each document's input file (index into the inputs)
    read_position: int                  # bytes of the input files read so far (the progress bar's)


def select_documents(batch: Encoded, keep: npt.NDArray[np.bool_]) -> Encoded:
    """The documents of `batch` where `keep`, in order."""
    lengths = np.diff(batch.offsets)
    offsets = np.concatenate([np.zeros(1, np.int64), np.cumsum(lengths[keep])])
    return Encoded(batch.ids[np.repeat(keep, lengths)], offsets, batch.sizes[keep], batch.doc_file[keep],
                   batch.read_position)


# The special tokens that end (begin) a document, in the order ``eot=True`` (``bos=True``) looks for them:
# tiktoken's and Qwen's <|endoftext|>, Llama 3's, Mistral's and most SentencePiece-born files', DeepSeek's.
END_OF_TEXT_TOKENS = ("<|endoftext|>", "<|end_of_text|>", "</s>", "<｜end▁of▁sentence｜>")
BEGIN_OF_TEXT_TOKENS = ("<|begin_of_text|>", "<s>", "<｜begin▁of▁sentence｜>", "<|startoftext|>")


def document_token_id(enc: Encoding, token: bool | str | int | None, what: str = "eot") -> int | None:
    """The id that `eot` (or, with ``what="bos"``, `bos`) asks for: None for False/None; for True the
    encoding's first special token of END_OF_TEXT_TOKENS (BEGIN_OF_TEXT_TOKENS); for a str, that token (any
    text that is one token); for an int, that id, checked to be one. ValueError / TypeError otherwise, naming
    what the encoding has."""
    if token is None or token is False:
        return None
    usual = END_OF_TEXT_TOKENS if what == "eot" else BEGIN_OF_TEXT_TOKENS
    if token is True:
        for name in usual:
            if name in enc.special_tokens_set:
                return enc.encode_single_token(name)
        specials = sorted(enc.special_tokens_set)
        raise ValueError(f"encoding {enc.name!r} has none of the usual {what} tokens ({', '.join(usual)}): name "
                         f"one ({what}_token=... or --{what}-token), e.g. one of its special tokens "
                         f"{', '.join(specials[:8]) or '(it has none)'}{' ...' if len(specials) > 8 else ''}")
    if isinstance(token, str):
        try:
            return enc.encode_single_token(token)
        except KeyError:
            raise ValueError(f"{what} token {token!r} is not one token of encoding {enc.name!r}") from None
    if isinstance(token, int):
        try:
            enc.decode_single_token_bytes(token)
        except (KeyError, ValueError, OverflowError):
            raise ValueError(f"{what} token id {token} is not a token of encoding {enc.name!r} "
                             f"(ids 0..{enc.n_vocab - 1})") from None
        return token
    raise TypeError(f"{what} must be True/False, a token's text or its id, got {type(token).__name__}")


def wrap_documents(
    ids: npt.NDArray[np.uint32], offsets: npt.NDArray[np.int64], bos_id: int | None, eot_id: int | None
) -> tuple[npt.NDArray[np.uint32], npt.NDArray[np.int64]]:
    """Each document's ids after `bos_id` and before `eot_id` (either None: not added), inside its span.

    >>> wrap_documents(np.array([5, 6, 7], np.uint32), np.array([0, 2, 2, 3]), 1, 9)
    (array([1, 5, 6, 9, 1, 9, 1, 7, 9], dtype=uint32), array([0, 4, 6, 9]))
    """
    if eot_id is not None:
        ids, offsets = append_eot(ids, offsets, eot_id)
    if bos_id is not None:
        n_docs = len(offsets) - 1
        ids, offsets = np.insert(ids, offsets[:-1], np.uint32(bos_id)), offsets + np.arange(n_docs + 1)
    return ids, offsets


def cut_documents(
    ids: npt.NDArray[np.uint32], offsets: npt.NDArray[np.int64], max_tokens: int
) -> tuple[npt.NDArray[np.uint32], npt.NDArray[np.int64]]:
    """Each document's first `max_tokens` ids (``encode(text)[:max_tokens]``, as `encode(..., max_tokens=N)`).

    >>> cut_documents(np.array([5, 6, 7, 8, 9], np.uint32), np.array([0, 3, 3, 5]), 2)
    (array([5, 6, 8, 9], dtype=uint32), array([0, 2, 2, 4]))
    """
    lengths = np.diff(offsets)
    if not len(lengths) or lengths.max() <= max_tokens:
        return ids, offsets
    kept = np.minimum(lengths, max_tokens)
    new_offsets = np.concatenate([np.zeros(1, np.int64), np.cumsum(kept)])
    # Position of each kept id in `ids`: its document's start, plus its index inside the document.
    within = np.arange(int(new_offsets[-1]), dtype=np.int64) - np.repeat(new_offsets[:-1], kept)
    return ids[np.repeat(offsets[:-1], kept) + within], new_offsets


def append_eot(
    ids: npt.NDArray[np.uint32], offsets: npt.NDArray[np.int64], eot_id: int
) -> tuple[npt.NDArray[np.uint32], npt.NDArray[np.int64]]:
    """Each document's ids followed by `eot_id`, inside its span.

    >>> append_eot(np.array([5, 6, 7], np.uint32), np.array([0, 2, 2, 3]), 9)
    (array([5, 6, 9, 9, 7, 9], dtype=uint32), array([0, 3, 4, 6]))
    """
    n_docs = len(offsets) - 1
    return np.insert(ids, offsets[1:], np.uint32(eot_id)), offsets + np.arange(n_docs + 1)
