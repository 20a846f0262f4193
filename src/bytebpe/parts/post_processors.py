"""A tokenizer.json's post-processor: the ids HF's post-processors put around a sequence's ids.

bytebpe encodes single sequences (pairs are for `bytebpe.hf`'s surface), so a post-processor is what it adds
before and after one sequence with ``add_special_tokens=True``: TemplateProcessing's single template,
RobertaProcessing's and BertProcessing's cls/sep, ByteLevel (nothing: it only trims offsets), a Sequence of
these with at most one that adds ids. The private part names (`post_part`) are how these ids reach the
core, as parts of the added-token splitter's output that no added token's content can be.
"""
from __future__ import annotations

from typing import Any

from ..file_formats import TokenizerJsonError
from .fields import field

__all__ = ["POST_PROCESSORS", "post_part", "post_processor_ids", "token_pair"]

POST_PROCESSORS = ("ByteLevel", "TemplateProcessing", "RobertaProcessing", "BertProcessing", "Sequence")


def token_pair(spec: dict[str, Any], key: str, component: str) -> tuple[int, str]:
    """RobertaProcessing's / BertProcessing's ["<s>", 0] form: (id, token)."""
    value = spec.get(key)
    if (not isinstance(value, list) or len(value) != 2 or not isinstance(value[0], str)
            or not isinstance(value[1], int) or isinstance(value[1], bool)):
        raise TokenizerJsonError(f"{component}: {key!r} must be [token, id], got {value!r}")
    return value[1], value[0]


def _pair_id(spec: dict[str, Any], key: str, component: str) -> int:
    return token_pair(spec, key, component)[0]


def _template_ids(spec: dict[str, Any]) -> tuple[list[int], list[int]]:
    """TemplateProcessing's single-sequence template as (ids before $A, ids after it)."""
    component = "post_processor TemplateProcessing"
    single = field(spec, "single", list, component)
    special_tokens = field(spec, "special_tokens", dict, component, {})
    around: tuple[list[int], list[int]] = ([], [])
    sequences = 0
    for piece in single:
        if isinstance(piece, dict) and len(piece) == 1 and isinstance(piece.get("Sequence"), dict):
            if piece["Sequence"].get("id") != "A":
                raise TokenizerJsonError(f"{component}: the single template names sequence "
                                         f"{piece['Sequence'].get('id')!r}; only $A is a single sequence")
            sequences += 1
            continue
        if not (isinstance(piece, dict) and len(piece) == 1 and isinstance(piece.get("SpecialToken"), dict)):
            raise TokenizerJsonError(f"{component}: template piece {piece!r} is neither a Sequence nor a SpecialToken")
        name = piece["SpecialToken"].get("id")
        token = special_tokens.get(name)
        ids = token.get("ids") if isinstance(token, dict) else None
        if not isinstance(ids, list) or not all(isinstance(i, int) and not isinstance(i, bool) for i in ids):
            raise TokenizerJsonError(f"{component}: special token {name!r} of the template has no ids in "
                                     "'special_tokens'")
        around[min(sequences, 1)].extend(ids)
    if sequences != 1:
        raise TokenizerJsonError(f"{component}: the single template must hold $A exactly once (it holds it "
                                 f"{sequences} times)")
    return around


def post_part(token_id: int) -> str:
    """The splitter's part for a post-processor id (the core looks token parts up by name)."""
    return f"\0post_processor {token_id}"


def post_processor_ids(spec: Any) -> tuple[list[int], list[int]]:
    """The ids HF's post-processor puts (before, after) one sequence's ids with add_special_tokens=True."""
    if spec is None:
        return [], []
    kind = spec.get("type") if isinstance(spec, dict) else None
    if kind == "ByteLevel":
        return [], []       # it only trims offsets
    if kind in ("RobertaProcessing", "BertProcessing"):
        component = f"post_processor {kind}"
        return [_pair_id(spec, "cls", component)], [_pair_id(spec, "sep", component)]
    if kind == "TemplateProcessing":
        return _template_ids(spec)
    if kind == "Sequence":
        processors = field(spec, "processors", list, "post_processor Sequence")
        adding = [inner for inner in processors if not (isinstance(inner, dict) and inner.get("type") == "ByteLevel")]
        if len(adding) > 1:
            # HF hands the next processor the pieces of the previous template as separate sequences: RoBERTa
            # after a template wraps each piece in <s> </s>. No real file does this; refuse rather than guess.
            kinds = ", ".join(str(inner.get("type") if isinstance(inner, dict) else inner) for inner in adding)
            raise TokenizerJsonError(f"post_processor Sequence: more than one processor that adds ids ({kinds}) "
                                     "is not supported")
        return post_processor_ids(adding[0]) if adding else ([], [])
    raise TokenizerJsonError(f"post_processor {kind!r} is not supported with add_special_tokens=True (supported: "
                             "TemplateProcessing, RobertaProcessing, BertProcessing, ByteLevel, Sequence)")
