"""What HF's `Tokenizer.post_process` does to encoded sequences: truncate, add the post-processor's tokens
(single sequences and pairs), pad — each as tokenizers/src does it, on `bytebpe.hf.Encoding`s.

The post-processors are one table of variants (`PROCESSORS`), each with HF's `added_tokens(is_pair)` and
`process_encodings(encodings, add_special_tokens)`; `process` is HF's trait default (sequence ids, then the
variant, then a merge), so that a `Sequence` hands its next processor what HF's does.
ByteLevel's and RoBERTa's offset trimming is done where the tokens' offsets are made (hf_import), so here
they only add tokens and type ids.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..file_formats import TokenizerJsonError
from ..parts.post_processors import token_pair
from .encoding import Encoding, FixedRun

__all__ = ["PROCESSORS", "Padding", "PostProcessor", "Truncation", "default_process", "pad_encodings",
           "post_processor_of", "truncate_encodings"]


def _fixed(ids: list[int], tokens: list[str], type_id: int) -> Encoding:
    return Encoding.of_run(FixedRun(ids, tokens), type_id)


def _around(encoding: Encoding, before: list[tuple[int, str]], after: list[tuple[int, str]],
            type_before: int, type_after: int, sequence: int, content_type: int | None) -> Encoding:
    """`encoding` between fixed tokens, its range `sequence` excluding them (Roberta's and Bert's shape);
    `content_type`: the type id its tokens get (None: they keep theirs)."""
    inner = encoding._copy()
    inner._overflowing = []
    if content_type is not None:
        inner._set_type_ids(content_type)
    pieces = []
    if before:
        pieces.append(_fixed([i for i, _ in before], [t for _, t in before], type_before))
    pieces.append(inner)
    if after:
        pieces.append(_fixed([i for i, _ in after], [t for _, t in after], type_after))
    wrapped = Encoding([part for piece in pieces for part in piece._parts])
    wrapped._ranges = {sequence: (len(before), len(wrapped) - len(after))}
    return wrapped


class PostProcessor:
    type_name = ""

    def __init__(self, spec: dict[str, Any]) -> None:
        pass

    def added_tokens(self, is_pair: bool) -> int:
        return 0

    def process_encodings(self, encodings: list[Encoding], add_special_tokens: bool) -> list[Encoding]:
        raise NotImplementedError

    def process(self, encoding: Encoding, pair: Encoding | None, add_special_tokens: bool) -> Encoding:
        encodings = [encoding] if pair is None else [encoding, pair]
        for sequence, each in enumerate(encodings):
            each.set_sequence_id(sequence)
            for overflowing in each._overflowing:
                overflowing.set_sequence_id(sequence)
            each._set_type_ids(sequence)
        return Encoding.merge(self.process_encodings(encodings, add_special_tokens), growing_offsets=False)


def default_process(encodings: list[Encoding]) -> list[Encoding]:
    """HF's `default_process`: a pair merged into one encoding, each part its sequence."""
    if len(encodings) == 1:
        return encodings
    merged = Encoding()
    for sequence, encoding in enumerate(encodings):
        encoding.set_sequence_id(sequence)
        merged._merge_with(encoding, growing_offsets=False)
    return [merged]


class ByteLevel(PostProcessor):
    type_name = "ByteLevel"

    def process_encodings(self, encodings: list[Encoding], add_special_tokens: bool) -> list[Encoding]:
        for sequence, encoding in enumerate(encodings):
            encoding.set_sequence_id(sequence)
        return encodings


class _ClsSep(PostProcessor):
    """A processor of two tokens, `cls` and `sep` ([token, id] each), adding `added_pair` to a pair."""

    added_pair = 0

    def __init__(self, spec: dict[str, Any]) -> None:
        self.cls = token_pair(spec, "cls", f"post_processor {self.type_name}")
        self.sep = token_pair(spec, "sep", f"post_processor {self.type_name}")

    def added_tokens(self, is_pair: bool) -> int:
        return self.added_pair if is_pair else 2


class Roberta(_ClsSep):
    """<s> A </s> and <s> A </s></s> B </s>; every type id 0."""

    type_name = "RobertaProcessing"
    added_pair = 4

    def process_encodings(self, encodings: list[Encoding], add_special_tokens: bool) -> list[Encoding]:
        for encoding in encodings:
            encoding._set_type_ids(0)
        if not add_special_tokens:
            return encodings
        out = []
        for sequence, encoding in enumerate(encodings):
            before = [self.cls] if sequence == 0 else [self.sep]
            wrapped = _around(encoding, before, [self.sep], 0, 0, sequence, None)
            wrapped._overflowing = [_around(o, before, [self.sep], 0, 0, sequence, 0) for o in encoding._overflowing]
            out.append(wrapped)
        return out


class Bert(_ClsSep):
    """[CLS] A [SEP] and [CLS] A [SEP] B [SEP]; the pair's [SEP] of type 1."""

    type_name = "BertProcessing"
    added_pair = 3

    def process_encodings(self, encodings: list[Encoding], add_special_tokens: bool) -> list[Encoding]:
        if not add_special_tokens:
            return encodings
        out = []
        for sequence, encoding in enumerate(encodings):
            before, type_after = ([self.cls], 0) if sequence == 0 else ([], 1)
            wrapped = _around(encoding, before, [self.sep], 0, type_after, sequence, None)
            wrapped._overflowing = [_around(o, before, [self.sep], 0, type_after, sequence, None)
                                    for o in encoding._overflowing]
            out.append(wrapped)
        return out


class Template(PostProcessor):
    """TemplateProcessing: the single or pair template's pieces, each sequence given its type id."""

    type_name = "TemplateProcessing"

    def __init__(self, spec: dict[str, Any]) -> None:
        component = "post_processor TemplateProcessing"
        tokens = spec.get("special_tokens") or {}
        if not isinstance(tokens, dict):
            raise TokenizerJsonError(f"{component}: 'special_tokens' must be an object")
        self.special: dict[str, tuple[list[int], list[str]]] = {}
        for name, token in tokens.items():
            ids, strings = (token.get("ids"), token.get("tokens")) if isinstance(token, dict) else (None, None)
            if not (isinstance(ids, list) and isinstance(strings, list) and len(ids) == len(strings)
                    and all(isinstance(i, int) and not isinstance(i, bool) for i in ids)):
                raise TokenizerJsonError(f"{component}: special token {name!r} needs as many 'ids' as 'tokens'")
            self.special[name] = (ids, strings)
        self.single = self._template(spec.get("single"), component, "single")
        self.pair = self._template(spec.get("pair"), component, "pair")

    def _template(self, pieces: Any, component: str, which: str) -> list[tuple[str, Any, int]]:
        if not isinstance(pieces, list):
            raise TokenizerJsonError(f"{component}: the {which} template must be a list")
        out = []
        for piece in pieces:
            kind, body = next(iter(piece.items())) if isinstance(piece, dict) and len(piece) == 1 else (None, None)
            body = body if isinstance(body, dict) else {}
            type_id = body.get("type_id", 0)
            if kind == "Sequence" and body.get("id") in ("A", "B") and isinstance(type_id, int):
                out.append(("Sequence", 0 if body["id"] == "A" else 1, type_id))
            elif kind == "SpecialToken" and body.get("id") in self.special and isinstance(type_id, int):
                out.append(("SpecialToken", body["id"], type_id))
            else:
                raise TokenizerJsonError(f"{component}: {which} template piece {piece!r} is neither a Sequence "
                                         "A/B nor a SpecialToken of 'special_tokens'")
        return out

    def added_tokens(self, is_pair: bool) -> int:
        return sum(len(self.special[name][0]) for kind, name, _ in (self.pair if is_pair else self.single)
                   if kind == "SpecialToken")

    def process_encodings(self, encodings: list[Encoding], add_special_tokens: bool) -> list[Encoding]:
        template = self.pair if len(encodings) == 2 else self.single
        out = []
        for kind, which, type_id in template:
            if kind == "Sequence":
                if which >= len(encodings):
                    raise ValueError("the template names sequence B, but only one sequence was given")
                encoding = encodings[which]
                encoding._set_type_ids(type_id)
                encoding.set_sequence_id(which)
                out.append(encoding._copy())
            elif add_special_tokens:
                ids, strings = self.special[which]
                out.append(_fixed(ids, strings, type_id))
        return out


class Sequence(PostProcessor):
    type_name = "Sequence"

    def __init__(self, spec: dict[str, Any]) -> None:
        processors = spec.get("processors")
        if not isinstance(processors, list):
            raise TokenizerJsonError("post_processor Sequence: 'processors' must be a list")
        self.processors = [_one(inner) for inner in processors]

    def added_tokens(self, is_pair: bool) -> int:
        return sum(processor.added_tokens(is_pair) for processor in self.processors)

    def process_encodings(self, encodings: list[Encoding], add_special_tokens: bool) -> list[Encoding]:
        for processor in self.processors:
            encodings = processor.process_encodings(encodings, add_special_tokens)
        return encodings


PROCESSORS: dict[str, type[PostProcessor]] = {
    "ByteLevel": ByteLevel, "TemplateProcessing": Template, "RobertaProcessing": Roberta,
    "BertProcessing": Bert, "Sequence": Sequence,
}


def _one(spec: Any) -> PostProcessor:
    kind = spec.get("type") if isinstance(spec, dict) else None
    if kind not in PROCESSORS:
        raise TokenizerJsonError(f"post_processor {str(kind)[:40]!r} is not supported (supported: "
                                 f"{', '.join(PROCESSORS)})")
    return PROCESSORS[kind](spec)


def post_processor_of(spec: Any) -> PostProcessor | None:
    """The file's post-processor (None when it has none)."""
    return None if spec is None else _one(spec)


# ==== truncation and padding (tokenizers/src/utils/truncation.rs, padding.rs) ===============================

STRATEGIES = ("longest_first", "only_first", "only_second")
DIRECTIONS = ("right", "left")


@dataclass(frozen=True)
class Truncation:
    max_length: int
    stride: int = 0
    strategy: str = "longest_first"
    direction: str = "right"

    def __post_init__(self) -> None:
        for name in ("max_length", "stride"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise TypeError(f"truncation {name} must be an int >= 0, got {value!r}")
        if self.strategy not in STRATEGIES:
            raise ValueError(f"Unknown `strategy`: `{self.strategy}`. Use one of {list(STRATEGIES)}")
        if self.direction not in DIRECTIONS:
            raise ValueError(f"Invalid truncation direction value : {self.direction}")

    def as_dict(self) -> dict[str, Any]:
        return {"max_length": self.max_length, "stride": self.stride, "strategy": self.strategy,
                "direction": self.direction}


@dataclass(frozen=True)
class Padding:
    length: int | None = None       # None: the batch's longest
    pad_to_multiple_of: int | None = None
    pad_id: int = 0
    pad_type_id: int = 0
    pad_token: str = "[PAD]"
    direction: str = "right"

    def __post_init__(self) -> None:
        for name in ("length", "pad_to_multiple_of"):
            value = getattr(self, name)
            if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 0):
                raise TypeError(f"padding {name} must be an int >= 0 or None, got {value!r}")
        for name in ("pad_id", "pad_type_id"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise TypeError(f"padding {name} must be an int >= 0, got {value!r}")
        if not isinstance(self.pad_token, str):
            raise TypeError(f"padding pad_token must be a str, got {self.pad_token!r}")
        if self.direction not in DIRECTIONS:
            raise ValueError(f"Invalid padding direction value : {self.direction}")

    def as_dict(self) -> dict[str, Any]:
        return {"length": self.length, "pad_to_multiple_of": self.pad_to_multiple_of, "pad_id": self.pad_id,
                "pad_token": self.pad_token, "pad_type_id": self.pad_type_id, "direction": self.direction}


def truncate_encodings(encoding: Encoding, pair: Encoding | None, params: Truncation, max_length: int) -> None:
    """Truncate `encoding` (and `pair`) in place to `max_length` tokens in all, as HF's `truncate_encodings`."""
    stride, direction = params.stride, params.direction
    if max_length == 0:
        encoding.truncate(0, stride, direction)
        if pair is not None:
            pair.truncate(0, stride, direction)
        return
    total = len(encoding) + (len(pair) if pair is not None else 0)
    if total <= max_length:
        return
    to_remove = total - max_length
    if params.strategy == "longest_first":
        if pair is None:
            encoding.truncate(total - to_remove, stride, direction)
            return
        n1, n2 = len(encoding), len(pair)
        swap = n1 > n2
        if swap:
            n1, n2 = n2, n1
        n2 = n1 if n1 > max_length else max(n1, max_length - n1)
        if n1 + n2 > max_length:
            n1 = max_length // 2
            n2 = n1 + max_length % 2
        if swap:
            n1, n2 = n2, n1
        encoding.truncate(n1, stride, direction)
        pair.truncate(n2, stride, direction)
        return
    if params.strategy == "only_first":
        target = encoding
    elif pair is None:
        raise ValueError("Truncation error: Second sequence not provided")
    else:
        target = pair
    if len(target) <= to_remove:
        raise ValueError("Truncation error: Sequence to truncate too short to respect the provided max_length")
    target.truncate(len(target) - to_remove, stride, direction)


def pad_encodings(encodings: list[Encoding], params: Padding) -> None:
    if not encodings:
        return
    length = params.length if params.length is not None else max(len(e) for e in encodings)
    multiple = params.pad_to_multiple_of
    if multiple and length % multiple:
        length += multiple - length % multiple
    for encoding in encodings:
        encoding.pad(length, params.direction, params.pad_id, params.pad_type_id, params.pad_token)
