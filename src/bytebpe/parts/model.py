"""A tokenizer.json's model: HF's BPE on the compiled core's byte-pair merge.

HF's BPE starts a word from its characters (each a vocabulary entry), then merges the listed pair of lowest
index until none applies (`MergeTable.from_pair_merges` does the same on bytes). Two kinds of vocabulary:

- byte-level (the pre-tokenizer has ByteLevel): every character of a piece stands for one byte (GPT-2's
  byte characters), so a token is the bytes its characters stand for, and the core merges bytes directly.
  A vocabulary entry of other characters can never be made from text: it decodes as its UTF-8.
- character-level (SentencePiece-style: Llama 2, Mistral, Phi-3, ...): a token is its UTF-8. The core starts
  from bytes, so each character of 2-4 bytes that is a token is first made from its bytes by merges ranked
  before all of the file's: (lead, continuation) -> the first two bytes, and so on (a lead byte is always
  followed by its own continuation bytes in UTF-8, so these merges never reach across characters). Their
  partial results are tokens of their own, with ids above the vocabulary's, that no text can end on: a
  piece's characters that are not tokens are cut out first (`CharacterModel.cut_unknown`), each becoming
  what HF makes of it — its bytes' ``<0xXX>`` tokens with `byte_fallback`, else the unk token (one per run
  with `fuse_unk`), else nothing. Neither kind of id is in any merge (checked), so cutting them out changes
  no merge of the rest.

Refused, naming the option: `dropout`, `continuing_subword_prefix`, `end_of_word_suffix` (CLIP), merges of
byte-fallback or unk tokens, and for byte-level files an `unk_token` with bytes missing from the vocabulary.
"""
from __future__ import annotations

import array
import functools
import itertools
import re
from collections.abc import Callable, Iterator
from typing import Any

from .. import _core, _load, _pretokenize
from ..file_formats import CutMerges, TokenizerJsonError, shortened
from ..hf_json import _byte_to_char
from .fields import field

__all__ = ["WORD_END", "BPEModel", "check_model_type", "model_from_json", "model_type"]

_OTHER_MODELS = {
    "WordPiece": "a WordPiece model (BERT-style): use HF tokenizers for it",
    "Unigram": "a Unigram model (T5, ALBERT, XLNet-style SentencePiece): use HF tokenizers or sentencepiece for it",
    "WordLevel": "a WordLevel model: use HF tokenizers for it",
}

# SentencePiece's word mark, and the flags `_load.character_tokens` gives each token about it.
WORD_MARK = "\u2581"
STARTS_WITH_MARK, NOT_ENDING_IN_MARK = 1, 2

# Where a word ends, for a model with an end_of_word_suffix: the byte 0xFF, which no UTF-8 text holds.
WORD_END = b"\xff"

# GPT-2's byte characters -> the bytes they stand for, as Latin-1 characters; every other character below 256
# -> one Latin-1 cannot encode (U+FFFF), so that encoding a translated token fails unless it is all bytes.
_BYTE_CHARS = "".join(_byte_to_char())
_TO_LATIN1 = {**{code: 0xFFFF for code in range(256)},
              **{ord(char): byte for byte, char in enumerate(_byte_to_char())}}


def model_type(spec: dict[str, Any]) -> object:
    """The model's type: its "type", else what HF's untagged reading of an older file makes of its fields (a
    vocabulary of [piece, score] pairs is a Unigram's, merges a BPE's, max_input_chars_per_word a WordPiece's,
    a vocabulary and an unk_token alone a WordLevel's)."""
    if "type" in spec:
        return spec["type"]
    if isinstance(spec.get("vocab"), list):
        return "Unigram"
    if "merges" in spec:
        return "BPE"
    if "max_input_chars_per_word" in spec:
        return "WordPiece"
    return "WordLevel" if "unk_token" in spec and "vocab" in spec else "BPE"


def check_model_type(spec: Any) -> None:
    """A TokenizerJsonError naming the model type and where to go, for any model but BPE: said before
    anything else of the file is read, so that a WordPiece or Unigram file is refused as what it is."""
    if not isinstance(spec, dict):
        raise TokenizerJsonError(f"model must be an object, got {type(spec).__name__}")
    kind = model_type(spec)
    if kind != "BPE":
        reason = _OTHER_MODELS.get(kind) if isinstance(kind, str) else None
        raise TokenizerJsonError(f"model {str(kind)[:40]!r} is not supported: "
                                 f"{reason or 'bytebpe serves BPE models only'}")


def model_from_json(spec: Any, byte_level: bool, cut: CutMerges | None = None) -> BPEModel:
    """The model a tokenizer.json's "model" describes; `byte_level`: whether the pre-tokenizer maps bytes to
    characters (its ByteLevel); `cut`: its merges where they were left out of the spec (`cut_merges`)."""
    check_model_type(spec)
    return BPEModel(spec, byte_level, cut)


class BPEModel:
    """The vocabulary as bytes, its merge table, and the ids only decoding can meet.

    `token_ids`: bytes -> id of the tokens the core can make; `decode_only`: id -> bytes of the others;
    `n_vocab`: one past the largest id of the file's vocabulary (the ids of the character-level model's
    partial characters lie above it)."""

    def __init__(self, spec: dict[str, Any], byte_level: bool, cut: CutMerges | None = None) -> None:
        component = "model BPE"
        if spec.get("continuing_subword_prefix") not in (None, ""):
            raise TokenizerJsonError(f"{component}: continuing_subword_prefix is not supported (got "
                                     f"{str(spec['continuing_subword_prefix'])[:20]!r})")
        self.end_of_word_suffix = field(spec, "end_of_word_suffix", (str, type(None)), component, None) or ""
        if self.end_of_word_suffix and not byte_level:
            raise TokenizerJsonError(f"{component}: end_of_word_suffix with a character-level vocabulary (no "
                                     "ByteLevel pre-tokenizer) is not supported")
        if spec.get("dropout") not in (None, 0, 0.0):
            raise TokenizerJsonError(f"{component}: dropout is not supported (got {spec['dropout']!r}): its ids "
                                     "are random")
        self.spec = spec
        self.byte_level = byte_level
        self.ignore_merges = field(spec, "ignore_merges", bool, component, False)
        self.byte_fallback = field(spec, "byte_fallback", bool, component, False)
        self.fuse_unk = field(spec, "fuse_unk", bool, component, False)
        self.unk_token = field(spec, "unk_token", (str, type(None)), component, None)
        vocab = field(spec, "vocab", dict, component)
        merges = field(spec, "merges", list, component)
        self._cut = cut
        if cut is not None and merges:
            raise TokenizerJsonError(f"{component}: merges given twice")    # (cut_merges leaves [] there)
        n_vocab = _load.vocab_size(vocab)
        if n_vocab is None:
            _check_vocab_entries(vocab)     # raises, naming the first entry that is wrong
        self.vocab: dict[str, int] = dict(vocab)
        self.n_vocab: int = n_vocab      # type: ignore[assignment]
        self.token_ids: dict[bytes, int] = {}
        self.decode_only: dict[int, bytes] = {}
        self.unk_id: int | None = None
        if self.unk_token is not None:
            if self.unk_token not in self.vocab:
                raise TokenizerJsonError(f"{component}: unk_token {self.unk_token[:40]!r} is not in the vocabulary")
            self.unk_id = self.vocab[self.unk_token]
        if byte_level:
            self._byte_level_tokens()
            prefix_merges = self._word_end_merges() if self.end_of_word_suffix else []
        else:
            prefix_merges = self._character_tokens()
        self.word_split: Callable[[str], list[str]] | None = None
        read_in_c = None
        if not self.end_of_word_suffix:
            strings = cut.strings if cut is not None else _load.MergeStrings.of_list(merges)
            read_in_c = self._table_read_in_c(strings, prefix_merges)
            strings.release()       # (the cut keeps only its text, for `to_json`)
        if read_in_c is not None:
            self.table, pairs = read_in_c
        else:
            merges = cut.as_list() if cut is not None else merges
            pairs = _merge_pairs(merges, self.vocab, self.decode_only)
        if not byte_level:
            self._check_merges_of_cut_ids(pairs)
            self.word_split = self._word_split(pairs)
        if read_in_c is None:
            try:
                self.table = _core.MergeTable.from_pair_merges(self.token_ids, _packed(prefix_merges) + pairs,
                                                               self.ignore_merges)
            except ValueError as error:
                _merge_pairs_one_by_one(merges, self.vocab)     # names the merge whose result is not a token
                raise TokenizerJsonError(f"{component}: {error}") from None

    def _table_read_in_c(self, merges: _load.MergeStrings,
                         prefix_merges: list[tuple[int, int]]) -> tuple[_core.MergeTable, bytes] | None:
        """(the merge table, the file's merges it holds as native uint32 id pairs), read in C straight from the
        merges' code points (`_load.pair_merge_table`), or None when a merge it leaves out is not one that
        can be dropped: one of whose tokens only decodes (no piece holds it) and that makes a token. For any
        other the list path (`_merge_pairs`) reads the file as it always did, naming what is wrong."""
        try:
            table, left_out, pairs = _load.pair_merge_table(self.token_ids, merges, _BYTE_CHARS if self.byte_level
                                                            else None, self.ignore_merges, _packed(prefix_merges),
                                                            not self.byte_level)
        except ValueError:
            return None     # (a table the core refuses: the list path words the error)
        for index in left_out:
            try:
                left_id, right_id = _merge_ids(index, merges.merge(index), self.vocab)
            except TokenizerJsonError:
                return None
            if left_id not in self.decode_only and right_id not in self.decode_only:
                return None
        return table, pairs or b""

    def to_json(self) -> dict[str, Any]:
        if self._cut is not None:
            self.spec, self._cut = dict(self.spec, merges=self._cut.as_list()), None
        return self.spec

    @functools.cached_property
    def ids(self) -> frozenset[int]:
        """The vocabulary's ids (made when first asked: few loads need them)."""
        return frozenset(self.vocab.values())

    # ---- byte-level --------------------------------------------------------------------------------

    def _byte_level_tokens(self) -> None:
        # Each byte character becomes its byte (compiled: `_load.byte_level_tokens`); with an end_of_word_suffix
        # here, anything else a character Latin-1 cannot encode, one C-level translate and encode per token, and
        # a token ending in the suffix ends in WORD_END instead.
        to_latin1 = _TO_LATIN1
        suffix = self.end_of_word_suffix
        if not suffix:
            self.token_ids, self.decode_only = _load.byte_level_tokens(self.vocab, _BYTE_CHARS)
        for token, token_id in self.vocab.items() if suffix else ():
            try:
                if suffix and token.endswith(suffix) and len(token) > len(suffix):
                    data = token[:-len(suffix)].translate(to_latin1).encode("latin-1") + WORD_END
                else:
                    data = token.translate(to_latin1).encode("latin-1")
            except UnicodeEncodeError:
                self.decode_only[token_id] = token.encode("utf-8")
                continue
            if data:
                if suffix and self.token_ids.setdefault(data, token_id) != token_id:
                    # ("aÿ" and "a</w>" would both be a and 0xFF: no text holds the byte ÿ stands for)
                    raise TokenizerJsonError(f"model BPE: with the end_of_word_suffix, {shortened(token)} and another "
                                             "token ending in the byte character ÿ are the same bytes to bytebpe")
                self.token_ids[data] = token_id
            else:
                self.decode_only[token_id] = b""    # "" (Whisper's): no text makes it, HF decodes it as nothing
        missing = [byte for byte in range(256) if bytes([byte]) not in self.token_ids]
        if missing and self.unk_token is not None:
            raise TokenizerJsonError(
                f"model BPE: an unk_token with a vocabulary lacking {len(missing)} of the 256 byte characters is "
                "not supported (HF would put the unk token in place of those bytes)")
        if self.byte_fallback and missing:
            raise TokenizerJsonError("model BPE: byte_fallback on a byte-level vocabulary that lacks byte "
                                     "characters is not supported")

    def _word_end_merges(self) -> list[tuple[int, int]]:
        """HF gives a word's last character the end_of_word_suffix before any merge ("photo" starts as
        p h o t o</w>). Here each piece ends in WORD_END (a byte no UTF-8 text holds: the pre-tokenizer puts it
        there), and these merges, ranked before the file's, join it to the byte before it."""
        end_id = self.token_ids.get(WORD_END)
        missing = [byte for byte in range(256) if bytes([byte]) + WORD_END not in self.token_ids]
        if end_id is None or missing:
            raise TokenizerJsonError(f"model BPE: an end_of_word_suffix with a vocabulary lacking the suffixed form "
                                     f"of {len(missing) or 'the 0xFF'} byte character(s) is not supported")
        return [(self.token_ids[bytes([byte])], end_id) for byte in range(256)]

    # ---- character-level ---------------------------------------------------------------------------

    def _character_tokens(self) -> list[tuple[int, int]]:
        """Fill the tables of a character-level vocabulary; returns the merges that make its characters."""
        self.fallback_ids: dict[int, int] = {}      # byte -> the id of its <0xXX> token (byte_fallback only)
        self._fallback_of: dict[str, tuple[int, ...]] = {}      # `_fallback`'s results, as they are met
        if self.byte_fallback:
            for byte in range(256):
                token_id = self.vocab.get(f"<0x{byte:02X}>")
                if token_id is not None:
                    self.fallback_ids[byte] = token_id
        fallback = set(self.fallback_ids.values())
        # (compiled: the Python loop took ~30 ms on Llama 2's 32,000 tokens)
        self.token_ids, self.decode_only, characters, self._token_flags = _load.character_tokens(
            self.vocab, fallback, WORD_MARK, self.n_vocab)
        for byte, token_id in self.fallback_ids.items():
            # A byte's <0xXX> token is that byte in the table unless a character token is (ASCII "a"): then
            # it only decodes to it.
            if self.token_ids.setdefault(bytes([byte]), token_id) != token_id:
                self.decode_only[token_id] = bytes([byte])
        self.characters = frozenset(characters)
        next_id = max(self.n_vocab, 1 + max(self.token_ids.values(), default=-1))
        merges: list[tuple[int, int]] = []
        for char in sorted(self.characters):
            data = char.encode("utf-8", "surrogatepass")
            if len(data) == 1:
                continue
            # Each byte and each prefix a token (those the vocabulary lacks, with ids of their own).
            for part in [data[i:i + 1] for i in range(len(data))] + [data[:length] for length in range(2, len(data))]:
                if part not in self.token_ids:
                    self.token_ids[part] = next_id
                    next_id += 1
            merges.extend((self.token_ids[data[:length - 1]], self.token_ids[data[length - 1:length]])
                          for length in range(2, len(data) + 1))
        # One merge per (prefix, byte) pair, whichever character listed it first.
        return list(dict.fromkeys(merges))

    def _word_split(self, pairs: bytes) -> Callable[[str], list[str]] | None:
        """A cut of a piece before each "▁" that follows another character, when no token can span such a
        point (else None); the model's ids are the same on the parts as on the whole, and the parts are
        words, which the piece cache knows (a SentencePiece-style file hands the model whole texts).

        Why it holds: a token spans a point only if some merge joins there, a left part ending in another
        character to a right part starting with "▁" — this checks that no merge does; merges on the two
        sides of a point no merge crosses are independent, in whatever order their ranks interleave them.
        Not with ignore_merges (whether the whole piece is a token decides there) or when "▁" is no token
        (an unknown character cut out next to it could fuse with another across the point)."""
        mark = WORD_MARK
        if self.ignore_merges or mark not in self.characters:
            return None
        # (`pairs`: native uint32 left, right ids; a Python loop over 61k merges took 15 ms)
        if _load.any_pair_flagged(pairs, self._token_flags, NOT_ENDING_IN_MARK, STARTS_WITH_MARK, True):
            return None
        return re.compile(f"(?<=[^{mark}])(?={mark})").split

    def word_scanner(self, split_mark: str | None) -> _pretokenize.Scanner | None:
        """The compiled scanner of this character-level model's words (_char_words.h): runs of its characters,
        cut where `word_split` cuts (or before every `split_mark`: Metaspace's split), and each byte of a
        character it lacks a piece that is that byte's <0xXX> token -- HF's ids, with the pieces merged in the
        core without the GIL. None where that does not hold: a byte-level model, ignore_merges (a whole word
        that is a token wins over its characters), or a byte without its <0xXX> token (a character holding it
        becomes the unk token, which no byte piece is); `cut_unknown` serves those."""
        if self.byte_level or self.ignore_merges or len(self.fallback_ids) < 256:
            return None
        if split_mark is not None:
            mark, rule = split_mark, "every"
        else:
            mark, rule = "\u2581", "none" if self.word_split is None else "after_word"
        return _pretokenize.Scanner.char_words("".join(sorted(self.characters)), mark, rule)

    def _check_merges_of_cut_ids(self, pairs: bytes) -> None:
        cut = bytearray(self.n_vocab)
        for token_id in [*self.fallback_ids.values(), *([] if self.unk_id is None else [self.unk_id])]:
            cut[token_id] = 1
        if _load.any_pair_flagged(pairs, cut, 1, 1, False):
            raise TokenizerJsonError("model BPE: a merge of a byte-fallback or unk token is not supported")

    def cut_unknown(self, pieces: list[str], split: Callable[[str], list[str]] | None = None) -> list[str | int]:
        """The pieces with each character that is not a token cut out as HF's BPE treats it (see the module's
        docstring): its bytes' ids, the unk id, or nothing; `split` (`word_split`) then cuts each part left."""
        out: list[str | int] = []
        characters = self.characters
        unk_id, fuse_unk = self.unk_id, self.fuse_unk

        def known(part: str) -> None:
            if split is None:
                out.append(part)
            else:
                out.extend(split(part))

        for piece in pieces:
            if self.ignore_merges and piece in self.vocab:
                out.append(piece)
                continue
            unknown = set(piece).difference(characters)
            if not unknown:
                known(piece)
                continue
            start = 0
            pending_unk = False
            # A loop over the runs of unknown characters only (a newline in Llama's and Mistral's
            # vocabularies): found by a class of those few, which `re` searches fast (a class of the whole
            # vocabulary, slowly).
            for found in _finder(frozenset(unknown))(piece):
                at = found.start()
                if start < at:
                    if pending_unk:
                        out.append(unk_id)    # type: ignore[arg-type]
                        pending_unk = False
                    known(piece[start:at])
                start = found.end()
                for char in found.group():
                    fallback = self._fallback_of.get(char)
                    if fallback is None:
                        if len(self._fallback_of) >= 1 << 16:     # (bounded, whatever the texts hold)
                            self._fallback_of.clear()
                        fallback = self._fallback_of[char] = self._fallback(char)
                    if fallback:
                        # HF adds the byte tokens at once and leaves a pending unk to after them.
                        out.extend(fallback)
                    elif unk_id is not None:
                        if pending_unk and not fuse_unk:
                            out.append(unk_id)
                        pending_unk = True
            if start < len(piece):
                if pending_unk:
                    out.append(unk_id)    # type: ignore[arg-type]
                    pending_unk = False
                known(piece[start:])
            if pending_unk:
                out.append(unk_id)    # type: ignore[arg-type]
        return out

    def _fallback(self, char: str) -> tuple[int, ...]:
        """The ids of the <0xXX> tokens of `char`'s bytes, () when byte_fallback is off or one is missing."""
        data = char.encode("utf-8", "surrogatepass")
        if self.byte_fallback and all(byte in self.fallback_ids for byte in data):
            return tuple(self.fallback_ids[byte] for byte in data)
        return ()

    def unknown_characters(self) -> str:
        """A `regex` class of the characters that are not tokens (for a quick test that a text has none)."""
        codes = sorted(ord(char) for char in self.characters)
        ranges = []
        for _, run in itertools.groupby(enumerate(codes), lambda pair: pair[1] - pair[0]):
            run = list(run)
            low, high = run[0][1], run[-1][1]
            ranges.append(f"\\U{low:08x}" if low == high else f"\\U{low:08x}-\\U{high:08x}")
        return f"[^{''.join(ranges)}]" if ranges else r"[\s\S]"


@functools.lru_cache(maxsize=256)
def _finder(characters: frozenset[str]) -> Callable[[str], Iterator[re.Match[str]]]:
    """`finditer` of the runs of these characters."""
    return re.compile("[" + "".join(sorted(map(re.escape, characters))) + "]+").finditer


def _check_vocab_entries(vocab: dict[Any, Any]) -> None:
    """The error for the first entry of `vocab` that is not a token with an id of its own."""
    owner: dict[int, str] = {}
    for token, token_id in vocab.items():
        if not isinstance(token_id, int) or isinstance(token_id, bool) or not 0 <= token_id < 2**31 - 1:
            raise TokenizerJsonError(f"model BPE: id of {token[:40]!r} is {str(token_id)[:40]!r}, outside "
                                     f"0..{2**31 - 2}")
        if token_id in owner:
            raise TokenizerJsonError(f"model BPE: id {token_id} is given to both {owner[token_id][:40]!r} and "
                                     f"{token[:40]!r}")
        owner[token_id] = token


def _merge_pairs(merges: list[Any], vocab: dict[str, int], decode_only: dict[int, bytes]) -> bytes:
    """The merges as native uint32 (left id, right id) pairs (`_load.merge_pair_ids`, compiled: the largest
    part of a load in Python), leaving out those of tokens that only decode (no piece ever holds their
    parts); a malformed merge, or one naming a string that is not in the vocabulary, is an error naming it
    (`_merge_pairs_one_by_one`). (Whether a merge of tokens the core makes gives a token is for the table
    to check; for the merges left out, here.)"""
    try:
        packed, left_out = _load.merge_pair_ids(merges, vocab, decode_only)
        for index in left_out:
            left, right = merges[index].split(" ") if isinstance(merges[index], str) else merges[index]
            if left + right not in vocab:
                raise KeyError("a merge makes no token")
    except (KeyError, TypeError, ValueError, OverflowError):
        pairs = _merge_pairs_one_by_one(merges, vocab)      # raises, naming the merge that is wrong
        return _packed([(left, right) for left, right in pairs if left not in decode_only and right not in decode_only])
    return packed


def _packed(pairs: list[tuple[int, int]]) -> bytes:
    return array.array("I", itertools.chain.from_iterable(pairs)).tobytes()


def _merge_pairs_one_by_one(merges: list[Any], vocab: dict[str, int]) -> list[tuple[int, int]]:
    return [_merge_ids(index, merge, vocab) for index, merge in enumerate(merges)]


def _merge_ids(index: int, merge: Any, vocab: dict[str, int]) -> tuple[int, int]:
    """The ids of merge `index`'s two tokens; TokenizerJsonError naming the merge where it is not two tokens
    of the vocabulary that make one."""
    if isinstance(merge, str):
        parts = merge.split(" ")
    elif isinstance(merge, list) and all(isinstance(part, str) for part in merge):
        parts = merge
    else:
        raise TokenizerJsonError(f"model BPE: merge {index} must be 'a b' or ['a', 'b'], got {str(merge)[:80]}")
    if len(parts) != 2:
        raise TokenizerJsonError(f"model BPE: merge {index} must name two tokens, got {str(merge)[:80]}")
    left, right = parts
    for part in (left, right, left + right):
        if part not in vocab:
            raise TokenizerJsonError(f"model BPE: merge {index} {str(merge)[:80]}: {part[:40]!r} is not in the "
                                     "vocabulary")
    return vocab[left], vocab[right]
