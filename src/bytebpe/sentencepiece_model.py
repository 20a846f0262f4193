"""Reading SentencePiece ``.model`` files, without protobuf or sentencepiece at runtime.

A ``.model`` file is a serialized ``sentencepiece.ModelProto`` (google/sentencepiece,
src/sentencepiece_model.proto).  :func:`read_model_proto` parses the protobuf wire format itself, for the
fields a tokenizer needs, with every length and varint bounds-checked: a corrupt or hostile file raises
:class:`SentencePieceModelError` naming what is wrong, in time linear in the file's size and with memory
bounded by it.

:func:`to_tokenizer_json_spec` states a BPE model as a Hugging Face ``tokenizer.json`` dict whose
``tokenizers`` pipeline gives the ``sentencepiece`` package's ids:

* SentencePiece's BPE encoder (bpe_model.cc) starts from the characters of the whole normalized text (no
  pre-tokenization: split_digits, split_by_whitespace and the other ``split_*`` options only constrain
  training, and are already in the vocabulary) and repeatedly merges the adjacent pair whose concatenation
  is a piece of the vocabulary with the highest score, the leftmost on ties.  The merges list holds every
  split of every reachable piece into two reachable pieces, ordered by the merged piece's score, highest
  first, which is the same order for HF's rank-ordered BPE.
* user-defined pieces are never merged (SentencePiece matches them in the normalized text first): they are
  non-special, normalized added tokens.  Control pieces are never matched in the text by SentencePiece and
  decode to nothing: by default they are vocabulary entries no merge forms, which the decoder drops
  (``special_control_tokens=True`` makes them special added tokens instead, as transformers does).
* the normalizer is the model's precompiled_charsmap (HF ``Precompiled``), then remove_extra_whitespaces as
  ``Replace`` normalizers (only U+0020 is whitespace to SentencePiece, so HF's ``Strip``, which strips every
  Unicode whitespace, is not used), then add_dummy_prefix as ``Prepend("▁")`` and escape_whitespaces as
  ``Replace(" ", "▁")``.  A precompiled_charsmap is refused unless ``allow_precompiled=True``: HF's
  ``Precompiled`` works grapheme by grapheme, SentencePiece by longest match, and they differ on some
  combining sequences.

What that pipeline cannot state exactly is refused with :class:`SentencePieceModelError` naming the option.
"""
from __future__ import annotations

import base64
import itertools
import math
import struct
from dataclasses import dataclass, field
from typing import Any, ClassVar, NamedTuple

from . import _load
from .file_formats import TokenizerFileError

__all__ = [
    "NormalizerSpec",
    "PieceType",
    "SentencePiece",
    "SentencePieceModel",
    "SentencePieceModelError",
    "TrainerSpec",
    "read_model_proto",
    "to_tokenizer_json_spec",
]


class SentencePieceModelError(TokenizerFileError):
    """A SentencePiece ``.model`` file is malformed, or holds a model bytebpe cannot state exactly."""


class PieceType:
    """``ModelProto.SentencePiece.Type``."""

    NORMAL = 1
    UNKNOWN = 2
    CONTROL = 3
    USER_DEFINED = 4
    UNUSED = 5
    BYTE = 6

    NAMES: ClassVar[dict[int, str]] = {1: "NORMAL", 2: "UNKNOWN", 3: "CONTROL", 4: "USER_DEFINED", 5: "UNUSED", 6: "BYTE"}


MODEL_TYPE_NAMES = {1: "UNIGRAM", 2: "BPE", 3: "WORD", 4: "CHAR"}
_MODEL_TYPE_PROSE = {1: "a Unigram", 3: "a Word", 4: "a Char"}
BPE = 2


class SentencePiece(NamedTuple):
    # (a NamedTuple, not a frozen dataclass: a model makes 32,000 of them, at a third of the cost)
    piece: str
    score: float
    type: int = PieceType.NORMAL


@dataclass
class TrainerSpec:
    """The ``TrainerSpec`` fields bytebpe reads, with the proto's defaults.

    ``present`` names the fields the file sets (protobuf's ``has_...``)."""

    model_type: int = 1  # UNIGRAM
    vocab_size: int = 8000
    byte_fallback: bool = False
    unk_id: int = 0
    bos_id: int = 1
    eos_id: int = 2
    pad_id: int = -1
    unk_piece: str = "<unk>"
    bos_piece: str = "<s>"
    eos_piece: str = "</s>"
    pad_piece: str = "<pad>"
    unk_surface: str = " \u2047 "
    split_digits: bool = False
    split_by_whitespace: bool = True
    split_by_unicode_script: bool = True
    split_by_number: bool = True
    treat_whitespace_as_suffix: bool = False
    allow_whitespace_only_pieces: bool = False
    max_sentencepiece_length: int = 16
    character_coverage: float = 0.9995
    control_symbols: list[str] = field(default_factory=list)
    user_defined_symbols: list[str] = field(default_factory=list)
    pretokenization_delimiter: str = ""
    required_chars: str = ""
    vocabulary_output_piece_score: bool = True
    hard_vocab_limit: bool = True
    use_all_vocab: bool = False
    present: frozenset[str] = frozenset()


@dataclass
class NormalizerSpec:
    """``NormalizerSpec`` (also the type of ``denormalizer_spec``), with the proto's defaults."""

    name: str = ""
    precompiled_charsmap: bytes = b""
    add_dummy_prefix: bool = True
    remove_extra_whitespaces: bool = True
    escape_whitespaces: bool = True
    normalization_rule_tsv: str = ""
    present: frozenset[str] = frozenset()


@dataclass
class SentencePieceModel:
    """What :func:`read_model_proto` reads of a ``ModelProto``."""

    pieces: list[SentencePiece]
    trainer_spec: TrainerSpec
    normalizer_spec: NormalizerSpec
    denormalizer_spec: NormalizerSpec | None = None

    @property
    def model_type_name(self) -> str:
        return MODEL_TYPE_NAMES.get(self.trainer_spec.model_type, str(self.trainer_spec.model_type))

    def piece_to_id(self) -> dict[str, int]:
        return {p.piece: i for i, p in enumerate(self.pieces)}


# ------------------------------------------------------------------------------------------------------------
# The protobuf wire format.

_VARINT, _I64, _LEN, _SGROUP, _EGROUP, _I32 = 0, 1, 2, 3, 4, 5
_WIRE_NAMES = {0: "varint", 1: "64-bit", 2: "length-delimited", 3: "start-group", 4: "end-group", 5: "32-bit"}
_MAX_VARINT_BYTES = 10


class _Reader:
    """A bounds-checked cursor over ``data[pos:end]``."""

    __slots__ = ("data", "end", "pos", "where")

    def __init__(self, data: bytes, pos: int, end: int, where: str) -> None:
        self.data = data
        self.pos = pos
        self.end = end
        self.where = where

    def error(self, what: str) -> SentencePieceModelError:
        return SentencePieceModelError(
            f"not a valid SentencePiece model file: {what} (in {self.where}, at byte offset {self.pos})"
        )

    def varint(self, what: str) -> int:
        data, pos, end = self.data, self.pos, self.end
        result = 0
        shift = 0
        for i in range(_MAX_VARINT_BYTES):
            if pos >= end:
                raise self.error(f"truncated varint ({what})")
            b = data[pos]
            pos += 1
            if i == _MAX_VARINT_BYTES - 1 and b > 1:
                raise self.error(f"varint longer than 64 bits ({what})")
            result |= (b & 0x7F) << shift
            if b < 0x80:
                self.pos = pos
                return result
            shift += 7
        raise self.error(f"varint longer than 10 bytes ({what})")

    def take(self, n: int, what: str) -> bytes:
        if n > self.end - self.pos:
            raise self.error(
                f"{what} claims {n} bytes but only {self.end - self.pos} remain"
            )
        out = self.data[self.pos : self.pos + n]
        self.pos += n
        return out

    def length_delimited(self, what: str) -> tuple[int, int]:
        n = self.varint(f"length of {what}")
        if n > self.end - self.pos:
            raise self.error(f"length of {what} is {n} bytes but only {self.end - self.pos} remain")
        start = self.pos
        self.pos += n
        return start, start + n

    def skip(self, wire: int, field_no: int) -> None:
        if wire == _VARINT:
            self.varint(f"unknown field {field_no}")
        elif wire == _I64:
            self.take(8, f"unknown 64-bit field {field_no}")
        elif wire == _I32:
            self.take(4, f"unknown 32-bit field {field_no}")
        elif wire == _LEN:
            self.length_delimited(f"unknown field {field_no}")
        else:
            # Groups are deprecated, and no message of sentencepiece_model.proto has one: refusing them keeps the
            # parser free of recursion (no nesting depth to bound).
            raise self.error(f"field {field_no} has the {_WIRE_NAMES.get(wire, wire)} wire type, unsupported")

    def fields(self):
        while self.pos < self.end:
            key = self.varint("field key")
            field_no, wire = key >> 3, key & 7
            if field_no == 0 or field_no > 0x1FFFFFFF:
                raise self.error(f"invalid field number {field_no}")
            if wire > 5:
                raise self.error(f"invalid wire type {wire} for field {field_no}")
            yield field_no, wire


def _expect(r: _Reader, wire: int, expected: int, name: str) -> None:
    if wire != expected:
        raise r.error(
            f"field {name!r} has the {_WIRE_NAMES[wire]} wire type, expected {_WIRE_NAMES[expected]}"
        )


def _int32(r: _Reader, wire: int, name: str) -> int:
    _expect(r, wire, _VARINT, name)
    v = r.varint(name) & 0xFFFFFFFF
    return v - (1 << 32) if v >= 1 << 31 else v


def _uint(r: _Reader, wire: int, name: str) -> int:
    _expect(r, wire, _VARINT, name)
    return r.varint(name)


def _bool(r: _Reader, wire: int, name: str) -> bool:
    _expect(r, wire, _VARINT, name)
    return r.varint(name) != 0


def _float(r: _Reader, wire: int, name: str) -> float:
    _expect(r, wire, _I32, name)
    return struct.unpack("<f", r.take(4, name))[0]


def _bytes(r: _Reader, wire: int, name: str) -> bytes:
    _expect(r, wire, _LEN, name)
    start, end = r.length_delimited(name)
    return bytes(r.data[start:end])


def _string(r: _Reader, wire: int, name: str) -> str:
    raw = _bytes(r, wire, name)
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise r.error(f"field {name!r} is not valid UTF-8 ({e.reason} at byte {e.start})") from None


def _sub(r: _Reader, wire: int, name: str, where: str) -> _Reader:
    _expect(r, wire, _LEN, name)
    start, end = r.length_delimited(name)
    return _Reader(r.data, start, end, where)


# Each spec's fields: number -> (name, reader, repeated). Fields not listed are skipped.
_TRAINER_FIELDS = {
    **{no: (name, _int32, False) for no, name in {
        3: "model_type", 4: "vocab_size", 20: "max_sentencepiece_length", 40: "unk_id", 41: "bos_id",
        42: "eos_id", 43: "pad_id"}.items()},
    **{no: (name, _bool, False) for no, name in {
        35: "byte_fallback", 25: "split_digits", 22: "split_by_whitespace", 21: "split_by_unicode_script",
        23: "split_by_number", 24: "treat_whitespace_as_suffix", 26: "allow_whitespace_only_pieces",
        32: "vocabulary_output_piece_score", 33: "hard_vocab_limit", 34: "use_all_vocab"}.items()},
    **{no: (name, _string, False) for no, name in {
        45: "unk_piece", 46: "bos_piece", 47: "eos_piece", 48: "pad_piece", 44: "unk_surface",
        53: "pretokenization_delimiter", 36: "required_chars"}.items()},
    30: ("control_symbols", _string, True), 31: ("user_defined_symbols", _string, True),
    10: ("character_coverage", _float, False),
}
_NORMALIZER_FIELDS = {1: ("name", _string, False), 2: ("precompiled_charsmap", _bytes, False),
                      3: ("add_dummy_prefix", _bool, False), 4: ("remove_extra_whitespaces", _bool, False),
                      5: ("escape_whitespaces", _bool, False), 6: ("normalization_rule_tsv", _string, False)}


def _parse_spec(r: _Reader, spec: Any, fields: dict[int, tuple[str, Any, bool]], label: str) -> None:
    """Read a TrainerSpec's or NormalizerSpec's `fields` into `spec`, noting in ``spec.present`` those set."""
    present = set(spec.present)
    for no, wire in r.fields():
        found = fields.get(no)
        if found is None:
            r.skip(wire, no)
            continue
        name, read, repeated = found
        value = read(r, wire, f"{label}.{name}")
        if repeated:
            getattr(spec, name).append(value)
        else:
            setattr(spec, name, value)
        present.add(name)
    spec.present = frozenset(present)


def _parse_piece(r: _Reader, index: int) -> SentencePiece:
    piece: str | None = None
    score = 0.0
    ptype = PieceType.NORMAL
    for no, wire in r.fields():
        if no == 1:
            piece = _string(r, wire, f"pieces[{index}].piece")
        elif no == 2:
            score = _float(r, wire, f"pieces[{index}].score")
        elif no == 3:
            ptype = _int32(r, wire, f"pieces[{index}].type")
            if ptype not in PieceType.NAMES:
                raise r.error(f"piece {index} has the unknown type {ptype}")
        else:
            r.skip(wire, no)
    if not piece:
        raise SentencePieceModelError(f"not a valid SentencePiece model file: piece {index} is empty")
    return SentencePiece(piece, score, ptype)


def _parse(data: bytes) -> SentencePieceModel:
    read_in_c = _load.sentencepiece_pieces(data)
    if read_in_c is None:
        return _parse_all(data)
    strings, scores, types, specs = read_in_c
    trainer = TrainerSpec()
    normalizer = NormalizerSpec()
    denormalizer: NormalizerSpec | None = None
    for number, start, end in specs:
        if number == 2:
            _parse_spec(_Reader(data, start, end, "trainer_spec"), trainer, _TRAINER_FIELDS, "trainer_spec")
        else:
            spec = normalizer if number == 3 else denormalizer or NormalizerSpec()
            label = "normalizer_spec" if number == 3 else "denormalizer_spec"
            _parse_spec(_Reader(data, start, end, label), spec, _NORMALIZER_FIELDS, label)
            if number == 5:
                denormalizer = spec
    return SentencePieceModel(list(map(SentencePiece, strings, scores, types)), trainer, normalizer, denormalizer)


def _parse_all(data: bytes) -> SentencePieceModel:
    """The whole ModelProto in Python (where `_load.sentencepiece_pieces` declines: its errors name the
    field and the byte offset)."""
    r = _Reader(data, 0, len(data), "ModelProto")
    pieces: list[SentencePiece] = []
    trainer = TrainerSpec()
    normalizer = NormalizerSpec()
    denormalizer: NormalizerSpec | None = None
    for no, wire in r.fields():
        if no == 1:
            pieces.append(_parse_piece(_sub(r, wire, "pieces", f"pieces[{len(pieces)}]"), len(pieces)))
        elif no == 2:
            _parse_spec(_sub(r, wire, "trainer_spec", "trainer_spec"), trainer, _TRAINER_FIELDS, "trainer_spec")
        elif no == 3:
            _parse_spec(_sub(r, wire, "normalizer_spec", "normalizer_spec"), normalizer, _NORMALIZER_FIELDS,
                        "normalizer_spec")
        elif no == 5:
            if denormalizer is None:
                denormalizer = NormalizerSpec()
            _parse_spec(_sub(r, wire, "denormalizer_spec", "denormalizer_spec"), denormalizer,
                        _NORMALIZER_FIELDS, "denormalizer_spec")
        else:
            r.skip(wire, no)
    return SentencePieceModel(pieces, trainer, normalizer, denormalizer)


def _byte_of_piece(piece: str) -> int:
    if len(piece) == 6 and piece.startswith("<0x") and piece.endswith(">"):
        digits = piece[3:5]
        if all(c in "0123456789ABCDEF" for c in digits):
            return int(digits, 16)
    return -1


def _validate(model: SentencePieceModel) -> None:
    """The checks of SentencePiece's ``ModelInterface::InitializePieces``."""
    if not model.pieces:
        raise SentencePieceModelError("not a valid SentencePiece model file: it has no pieces")
    normal: dict[str, int] = {}
    reserved: dict[str, int] = {}
    unk_id = -1
    bytes_found = set()
    byte_fallback = model.trainer_spec.byte_fallback
    for i, p in enumerate(model.pieces):
        table = normal if p.type in (PieceType.NORMAL, PieceType.USER_DEFINED, PieceType.UNUSED) else reserved
        if p.piece in table:
            raise SentencePieceModelError(
                f"not a valid SentencePiece model file: piece {p.piece!r} is defined twice "
                f"(ids {table[p.piece]} and {i})"
            )
        table[p.piece] = i
        if p.type == PieceType.UNKNOWN:
            if unk_id >= 0:
                raise SentencePieceModelError(
                    f"not a valid SentencePiece model file: two unknown pieces (ids {unk_id} and {i})"
                )
            unk_id = i
        elif p.type == PieceType.BYTE:
            if not byte_fallback:
                raise SentencePieceModelError(
                    f"not a valid SentencePiece model file: byte piece {p.piece!r} although byte_fallback is false"
                )
            b = _byte_of_piece(p.piece)
            if b < 0:
                raise SentencePieceModelError(f"not a valid SentencePiece model file: invalid byte piece {p.piece!r}")
            bytes_found.add(b)
    if unk_id < 0:
        raise SentencePieceModelError("not a valid SentencePiece model file: no unknown piece (unk is not defined)")
    if byte_fallback and len(bytes_found) != 256:
        raise SentencePieceModelError(
            f"not a valid SentencePiece model file: byte_fallback is true but only {len(bytes_found)} of the 256 "
            "byte pieces are defined"
        )


def read_model_proto(data: bytes | bytearray | memoryview, *, require_bpe: bool = True) -> SentencePieceModel:
    """Parse a SentencePiece ``.model`` file's bytes.

    Raises :class:`SentencePieceModelError` on a malformed file, and (unless ``require_bpe=False``) on a model
    that is not BPE, naming its type."""
    if isinstance(data, (bytearray, memoryview)):
        data = bytes(data)
    if not isinstance(data, bytes):
        raise TypeError(f"read_model_proto() takes bytes, not {type(data).__name__}")
    model = _parse(data)
    if model.trainer_spec.byte_fallback:
        # As sentencepiece (0.2, sentencepiece_processor.cc) reads it: with byte_fallback a normal piece "\0"
        # is an unused one, so that a NUL in the text falls back to <0x00> (InternLM's model has one).
        model.pieces = [SentencePiece(p.piece, p.score, PieceType.UNUSED)
                        if p.piece == "\x00" and p.type == PieceType.NORMAL else p for p in model.pieces]
    _validate(model)
    if require_bpe:
        _require_bpe(model)
    return model


def _require_bpe(model: SentencePieceModel) -> None:
    mt = model.trainer_spec.model_type
    if mt != BPE:
        what = _MODEL_TYPE_PROSE.get(mt, f"a model_type={mt}")
        raise SentencePieceModelError(
            f"{what} SentencePiece model: bytebpe serves BPE models only; use the sentencepiece package"
        )


# ------------------------------------------------------------------------------------------------------------
# The precompiled charsmap (a Darts double-array trie over UTF-8, then the NUL-separated replacements).


class _CharsMap:
    def __init__(self, blob: bytes) -> None:
        if len(blob) <= 4:
            raise SentencePieceModelError("normalizer_spec.precompiled_charsmap is broken (shorter than 5 bytes)")
        (trie_size,) = struct.unpack("<I", blob[:4])
        if trie_size >= len(blob) or trie_size % 4:
            raise SentencePieceModelError(
                f"normalizer_spec.precompiled_charsmap is broken (trie size {trie_size} for a {len(blob)}-byte blob)"
            )
        self.units = struct.unpack(f"<{trie_size // 4}I", blob[4 : 4 + trie_size])
        self.normalized = blob[4 + trie_size :]

    def longest_prefix(self, key: bytes) -> tuple[int, int]:
        """(length, value) of the longest rule matching a prefix of ``key``; (0, 0) if none."""
        units = self.units
        n = len(units)
        best = (0, 0)
        if not n:
            return best
        unit = units[0]
        node = (unit >> 10) << ((unit & (1 << 9)) >> 6)
        for i, c in enumerate(key):
            node ^= c
            if node >= n:
                return best
            unit = units[node]
            if (unit & ((1 << 31) | 0xFF)) != c:
                return best
            node ^= (unit >> 10) << ((unit & (1 << 9)) >> 6)
            if (unit >> 8) & 1:
                if node >= n:
                    return best
                best = (i + 1, units[node] & ((1 << 31) - 1))
        return best

    def replacement(self, value: int) -> bytes:
        end = self.normalized.find(b"\0", value)
        return self.normalized[value : end if end >= 0 else len(self.normalized)]

    def normalize(self, text: str) -> str:
        """SentencePiece's charsmap normalization of ``text`` (no whitespace handling)."""
        data = text.encode("utf-8")
        out = bytearray()
        pos = 0
        while pos < len(data):
            length, value = self.longest_prefix(data[pos:pos + 64])
            if length:
                out += self.replacement(value)
                pos += length
            else:
                b = data[pos]
                step = 1 if b < 0x80 else 2 if b < 0xE0 else 3 if b < 0xF0 else 4
                out += data[pos : pos + step]
                pos += step
        return out.decode("utf-8", "replace")


# ------------------------------------------------------------------------------------------------------------
# The tokenizer.json spec.

_SPACE = "\u2581"


def _refuse(option: str, why: str) -> SentencePieceModelError:
    return SentencePieceModelError(f"cannot state this SentencePiece model as a tokenizer.json exactly: {option} ({why}); "
                                   "the sentencepiece package serves it")


def _regex_escape(s: str) -> str:
    """``s`` as a literal in an Oniguruma (HF ``Regex``) pattern."""
    return "".join("\\" + c if c in "\\^$.|?*+()[]{}-&~#/ " else c for c in s)


def _derive_merges(model: SentencePieceModel) -> list[tuple[str, str]]:
    """Every split of every formable piece into two formable parts, in the order HF must rank them.

    SentencePiece's symbols are the normalized text's characters (any character: one outside the vocabulary
    is still a symbol, and becomes <unk> or bytes only at the end) and the pieces merged from them; a pair
    merges if its concatenation is a NORMAL, USER_DEFINED or UNUSED piece, the highest score first and the
    leftmost pair on ties.  User-defined pieces are frozen (never merged, never formed by merging: they are
    matched in the text first); an UNUSED piece, once formed, is split back into its two parts at the end,
    which HF cannot do, so a formable UNUSED piece is refused.

    Ranks follow the merged piece's score, highest first; among merges of one score, the longer left part
    first, which gives SentencePiece's leftmost-first growth of a run of one character (Llama-style models
    give all their whitespace-run pieces one score).  Two different pieces of one score that are not runs of
    one character would compete by position in SentencePiece but by rank in HF: refused."""
    pieces = model.pieces
    types = {p.piece: p.type for p in pieces}
    mergeable = (PieceType.NORMAL, PieceType.UNUSED)
    candidates = sorted((index for index, p in enumerate(pieces) if p.type in mergeable and len(p.piece) > 1),
                        key=lambda index: len(pieces[index].piece))
    # A symbol: one character that is not a user-defined piece, or a formable piece (all longer than one).
    frozen = {p.piece for p in pieces if p.type == PieceType.USER_DEFINED and len(p.piece) == 1}

    merges: list[tuple[float, int, int, int, str, str]] = []
    by_score: dict[float, int] = {}
    # (compiled: every split of every candidate whose two parts are symbols)
    splits = _load.formable_splits([p.piece for p in pieces], candidates, frozen)
    for wid, group in itertools.groupby(splits, key=lambda split: split[0]):
        w = pieces[wid].piece
        found = [(w[:k], w[k:]) for _, k in group]
        if types[w] == PieceType.UNUSED:
            raise _refuse(
                f"UNUSED piece {w!r} (id {wid})",
                "sentencepiece merges it, then splits it back into the pieces it was merged from",
            )
        score = pieces[wid].score
        if not math.isfinite(score):
            raise _refuse(f"piece {w!r} (id {wid})", f"its score is {score!r}")
        other = by_score.setdefault(score, wid)
        if other != wid and not (len(set(w)) == 1 and len(set(pieces[other].piece)) == 1):
            raise _refuse(
                f"pieces {pieces[other].piece!r} (id {other}) and {w!r} (id {wid})",
                f"two mergeable pieces share the score {score!r}: sentencepiece breaks the tie by position, "
                "HF's merges by rank",
            )
        for u, v in found:
            for part in (u, v):
                if types.get(part) not in mergeable:
                    raise _refuse(
                        f"piece {w!r} (id {wid})",
                        f"sentencepiece can merge it from {part!r}, which is not a normal piece of the vocabulary",
                    )
            merges.append((-score, -len(u), len(v), wid, u, v))
    merges.sort()
    return [(u, v) for _, _, _, _, u, v in merges]


def _check_supported(model: SentencePieceModel, allow_precompiled: bool) -> None:
    _require_bpe(model)
    t, n = model.trainer_spec, model.normalizer_spec
    if n.precompiled_charsmap and not allow_precompiled:
        raise _refuse(
            f"normalizer_spec.precompiled_charsmap (normalizer {n.name or '?'!r})",
            "HF's Precompiled normalizer applies the charsmap grapheme by grapheme, sentencepiece by longest "
            "match: they differ on combining sequences (e.g. a fullwidth letter + U+0301)",
        )
    if not n.precompiled_charsmap and n.normalization_rule_tsv:
        raise _refuse("normalizer_spec.normalization_rule_tsv", "a rule table without its precompiled_charsmap")
    if not n.escape_whitespaces:
        raise _refuse("normalizer_spec.escape_whitespaces=false",
                      "the decoder could not tell a dummy-prefix space from a space of the text")
    if t.treat_whitespace_as_suffix and n.add_dummy_prefix:
        raise _refuse("trainer_spec.treat_whitespace_as_suffix with add_dummy_prefix",
                      "HF has no normalizer appending a dummy suffix")
    d = model.denormalizer_spec
    if d is not None and d.precompiled_charsmap:
        raise _refuse("denormalizer_spec.precompiled_charsmap", "HF decoders have no charsmap")


def to_tokenizer_json_spec(
    model: SentencePieceModel, *, special_control_tokens: bool = False, allow_precompiled: bool = False
) -> dict[str, Any]:
    """The model as a Hugging Face ``tokenizer.json`` dict (``json.dumps`` it for ``Tokenizer.from_str``).

    Control pieces (``<s>``, ``</s>``, ``[INST]``, ...) are never matched in the text by SentencePiece, so by
    default they are plain vocabulary entries no merge can form (a text holding ``"<s>"`` gives the ids of its
    characters, as sentencepiece does) and the decoder drops them, as sentencepiece's does.  With
    ``special_control_tokens=True`` they are special added tokens instead, as transformers' converters make
    them: HF then matches them in the text (unless ``Tokenizer.encode_special_tokens`` is set), which
    sentencepiece does not.

    A non-identity normalizer (a precompiled_charsmap, as nmt_nfkc) is refused unless
    ``allow_precompiled=True``: HF's ``Precompiled`` normalizer then stands for it, which agrees with
    sentencepiece except on some combining sequences.

    Raises :class:`SentencePieceModelError` naming the option where the HF pipeline could not give
    sentencepiece's ids exactly."""
    _check_supported(model, allow_precompiled)
    t, n = model.trainer_spec, model.normalizer_spec
    pieces = model.pieces
    vocab: dict[str, int] = {}
    for i, p in enumerate(pieces):
        if p.piece in vocab:
            raise _refuse(f"piece {p.piece!r}", f"ids {vocab[p.piece]} and {i} share it, which one HF vocabulary cannot")
        vocab[p.piece] = i
    unk_id = next(i for i, p in enumerate(pieces) if p.type == PieceType.UNKNOWN)
    unk_piece = pieces[unk_id].piece
    merges = _derive_merges(model)

    charsmap = _CharsMap(n.precompiled_charsmap) if n.precompiled_charsmap else None
    user_defined = [p.piece for p in pieces if p.type == PieceType.USER_DEFINED]
    controls = [p.piece for p in pieces if p.type == PieceType.CONTROL]
    # HF normalizes the content of a normalized added token with the whole normalizer before matching it in
    # the normalized text; sentencepiece matches user-defined pieces in its normalized text as they are.  The
    # two agree when the normalizer leaves the piece as it is: the charsmap must, the whitespace rules do for a
    # piece without spaces, and the dummy prefix is not prepended to a string that is exactly such a piece.
    matched = list(user_defined) + (controls if special_control_tokens else [])
    for u in matched:
        if charsmap is not None and charsmap.normalize(u) != u:
            raise _refuse(f"user-defined piece {u!r}", "the precompiled_charsmap normalizes it")
        if " " in u or u.endswith(_SPACE) and n.remove_extra_whitespaces:
            raise _refuse(f"user-defined piece {u!r}", "it holds whitespace the normalizer would rewrite")

    added_tokens = []
    for i, p in enumerate(pieces):
        if p.type == PieceType.USER_DEFINED or (special_control_tokens and p.type == PieceType.CONTROL):
            added_tokens.append({"id": i, "content": p.piece, "single_word": False, "lstrip": False,
                                 "rstrip": False, "normalized": True, "special": p.type == PieceType.CONTROL})

    normalizers: list[dict[str, Any]] = []
    if charsmap is not None:
        normalizers.append({"type": "Precompiled",
                            "precompiled_charsmap": base64.b64encode(n.precompiled_charsmap).decode("ascii")})
    if n.remove_extra_whitespaces:
        # Leading U+0020 spaces go, runs of them become one, and trailing spaces and U+2581s go (sentencepiece
        # strips the escaped symbol from the end, whether a space or the text made it).  Only U+0020 is
        # whitespace to sentencepiece (after its charsmap), hence no HF Strip (every Unicode whitespace).
        normalizers.append({"type": "Replace", "pattern": {"Regex": "\\A +"}, "content": ""})
        normalizers.append({"type": "Replace", "pattern": {"Regex": "[ \u2581]+\\z"}, "content": ""})
        normalizers.append({"type": "Replace", "pattern": {"Regex": " {2,}"}, "content": " "})
    if n.add_dummy_prefix:
        if matched:
            alternatives = "|".join(_regex_escape(u) for u in sorted(matched, key=lambda s: (-len(s), s)))
            # Not prepended to a text that is exactly an added token: that is HF normalizing the token itself.
            normalizers.append({"type": "Replace", "pattern": {"Regex": f"\\A(?!(?:{alternatives})\\z)(?=[\\s\\S])"},
                                "content": _SPACE})
        else:
            normalizers.append({"type": "Prepend", "prepend": _SPACE})
    normalizers.append({"type": "Replace", "pattern": {"String": " "}, "content": _SPACE})

    decoders: list[dict[str, Any]] = []
    if controls and not special_control_tokens:
        alternatives = "|".join(_regex_escape(c) for c in sorted(controls, key=lambda s: (-len(s), s)))
        decoders.append({"type": "Replace", "pattern": {"Regex": f"\\A(?:{alternatives})\\z"}, "content": ""})
    decoders.append({"type": "Replace", "pattern": {"Regex": f"\\A{_regex_escape(unk_piece)}\\z"},
                     "content": t.unk_surface})
    decoders.append({"type": "Replace", "pattern": {"String": _SPACE}, "content": " "})
    if t.byte_fallback:
        decoders.append({"type": "ByteFallback"})
    decoders.append({"type": "Fuse"})
    if n.add_dummy_prefix or n.remove_extra_whitespaces:
        decoders.append({"type": "Strip", "content": " ", "start": 1, "stop": 0})

    return {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": added_tokens,
        "normalizer": {"type": "Sequence", "normalizers": normalizers},
        "pre_tokenizer": None,
        "post_processor": None,
        "decoder": {"type": "Sequence", "decoders": decoders},
        "model": {
            "type": "BPE",
            "dropout": None,
            "unk_token": unk_piece,
            "continuing_subword_prefix": None,
            "end_of_word_suffix": None,
            "fuse_unk": True,
            "byte_fallback": bool(t.byte_fallback),
            "ignore_merges": False,
            "vocab": vocab,
            "merges": [[u, v] for u, v in merges],
        },
    }
