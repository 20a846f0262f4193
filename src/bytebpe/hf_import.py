"""Hugging Face `tokenizer.json` import: a BPE tokenizer, byte-level or SentencePiece-style, as an `Encoding`
with HF's exact ids.

HF `tokenizers` encodes in stages, each a part here (bytebpe.parts: one module per stage, its variants in one
table, each reproduced from HF's source, tokenizers/src):
1. added tokens (`tokenizer/added_vocabulary.rs`): the non-normalized ones are cut out of the raw text, the
   rest of the text is normalized, then the normalized ones are cut out of that; matching is leftmost-
   longest over every added token's content, and a match that is skipped (a special token not allowed, a
   `single_word` token inside a word) still consumes its text; `lstrip`/`rstrip` widen a match over
   whitespace. Here (this module): the `special_split` callable the core already takes, returning ordinary
   text (normalized) and token contents alternately.
2. normalizer (parts/normalizers.py).
3. pre-tokenizer (parts/pre_tokenizers.py): a compiled scanner where the pieces are one split the scanners
   cut, all without the GIL; anything else a Python callable over the variants.
4. model (parts/model.py): BPE by pair rank (`MergeTable.from_pair_merges`), over a byte-level vocabulary or
   a character-level one (byte fallback, unk).
5. decoder (parts/decoders.py): ByteLevel alone is the core's byte join; any other chain runs over the
   tokens' strings as HF's does.
6. post-processor (parts/post_processors.py), only with `from_tokenizer_json(..., add_special_tokens=True)`
   (HF's `add_special_tokens=True`): the ids its single-sequence template puts before and after each
   document's ids. Here: the splitter returns those ids as extra "token" parts around the text's own, so
   every encode method (single, batch, numpy, ordinary) goes through it.
Everything else is refused with a `TokenizerJsonError` naming the part and the variant. By default bytebpe's
ids are those of HF's `add_special_tokens=False`, as tiktoken's `encode` adds nothing either.
"""
from __future__ import annotations

import functools
import json
import os
import unicodedata
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from . import _pretokenize
from .atomic_write import write_bytes_atomically
from .encoding import Encoding, _special_token_regex
from .file_formats import (NESTED_TOO_DEEPLY, CutMerges, TokenizerJsonError, cut_merges, recognise,
                           recognise_document, shortened, wrong_format)
from .parts.decoders import (Decoder, JoinedDecoder, byte_level_bytes, decoder_from_json, joined_decoder,
                             needs_token_strings)
from .parts.fields import field as _field
from .parts.model import WORD_END, BPEModel, check_model_type, model_from_json
from .parts.normalizers import normalizer_from_json, unicode_form
from .parts.post_processors import POST_PROCESSORS, post_part as _post_part, post_processor_ids
from .parts.pre_tokenizers import Metaspace, PreTokenizer

if TYPE_CHECKING:
    import regex

__all__ = ["TokenizerJsonEncoding", "TokenizerJsonError", "from_tokenizer_json"]

# `regex` is imported where a file first needs it (a Split pattern, ByteLevel's regex, a single_word or
# stripped added token), not with this module: most files need none of it, and loading one should not pay
# for its import.


class _EdgePatterns(NamedTuple):
    word_at_end: regex.Pattern[str]
    word_at_start: regex.Pattern[str]
    space_at_end: regex.Pattern[str]
    space_at_start: regex.Pattern[str]


@functools.cache
def _edge_patterns() -> _EdgePatterns:
    import regex

    return _EdgePatterns(regex.compile(r"\w\Z"), regex.compile(r"\w"), regex.compile(r"\s*\Z"), regex.compile(r"\s*"))



# ==== reading ======================================================================================


def from_tokenizer_json(source: str | os.PathLike[str], *, add_special_tokens: bool = False) -> TokenizerJsonEncoding:
    """An `Encoding` that gives HF `tokenizers`' ids for a byte-level BPE `tokenizer.json`.

    `source` is a path, or the JSON text itself (a str starting with "{" or "["). The contract, checked by the
    tests with HF as the oracle: ``enc.encode(text, allowed_special="all")`` equals
    ``tok.encode(text, add_special_tokens=False).ids``, ``enc.encode_ordinary(text)`` equals it with
    ``encode_special_tokens=True``, and ``enc.decode(ids)`` equals ``tok.decode(ids, skip_special_tokens=False)``.

    With ``add_special_tokens=True`` the encoding applies the file's `post_processor` as HF does with
    ``tok.encode(text, add_special_tokens=True)``: every encode method (`encode`, `encode_ordinary`,
    `encode_to_numpy`, `encode_batch`, `encode_ordinary_batch`, `encode_batch_to_numpy`) puts the
    template's ids before and after each document's ids — Llama 3's ``<|begin_of_text|> $A`` gives its BOS
    id first, RoBERTa's cls/sep give ``<s> ... </s>``, even for empty text; `prefix_ids` and `suffix_ids`
    say which. Only the single-sequence template matters (bytebpe encodes no pairs): TemplateProcessing
    (one ``$A``), RobertaProcessing, BertProcessing, ByteLevel (adds nothing), or a Sequence of these with at
    most one that adds ids; anything else is a `TokenizerJsonError` naming it. A file without a
    post-processor adds nothing, as in HF.
    """
    if isinstance(source, str) and source.lstrip()[:1] in ("{", "["):
        text, name = source, "tokenizer.json"
    elif isinstance(source, (str, os.PathLike)):
        path = Path(source)
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError as error:
            _refuse_other_format(path)     # (a binary file)
            raise TokenizerJsonError(f"cannot read {str(path)!r}: {error}") from None
        except OSError as error:
            raise TokenizerJsonError(f"cannot read {str(path)!r}: {error}") from None
        name = path.name
        if text.lstrip("\ufeff \t\r\n")[:1] not in ("{", "["):
            _refuse_other_format(path)     # (a .tiktoken file, ...)
    else:
        raise TypeError(f"expected a path or the JSON text, got {type(source).__name__}")
    if not isinstance(add_special_tokens, bool):
        raise TypeError(f"add_special_tokens must be a bool, got {type(add_special_tokens).__name__}")
    return TokenizerJsonEncoding._from_json_text(text, name, add_special_tokens)


def _refuse_other_format(path: Path) -> None:
    """A TokenizerJsonError naming the format of a file that is not JSON, when it is one bytebpe knows."""
    found = recognise(path.read_bytes()).kind
    if found not in ("unknown", "corrupt json"):
        raise TokenizerJsonError(wrong_format(str(path), found, "tokenizer.json"))


def _load_json(text: str, name: str = "tokenizer.json") -> dict[str, Any]:
    try:
        spec = json.loads(text)
    except json.JSONDecodeError as error:
        raise TokenizerJsonError(f"not valid JSON: {error}") from None
    except RecursionError:
        raise TokenizerJsonError(f"{name}: {NESTED_TOO_DEEPLY}") from None
    return _checked_spec(spec, name)


def parse_tokenizer_json(text: str) -> tuple[Any, CutMerges | None]:
    """json.loads(text), with the model's merges left in the text and read in C (`cut_merges`) where they
    can be (then the object holds [] in their place); json.loads reads the rest, and where that fails, the
    whole text, so that json's error is about it."""
    found = cut_merges(text)
    if found is not None:
        try:
            return json.loads(found[0]), found[1]
        except (json.JSONDecodeError, RecursionError):
            pass
    return json.loads(text), None


def _load_json_cut(text: str, name: str) -> tuple[dict[str, Any], CutMerges | None]:
    """`_load_json`, by `parse_tokenizer_json`."""
    try:
        spec, cut = parse_tokenizer_json(text)
    except (json.JSONDecodeError, RecursionError):
        return _load_json(text, name), None     # (raises, as it words the error)
    return _checked_spec(spec, name), cut


def _checked_spec(spec: Any, name: str) -> dict[str, Any]:
    """The parsed file, if it is a tokenizer.json; a file of another format is an error naming it (`name`: the
    file's)."""
    if not isinstance(spec, dict) or "model" not in spec:
        found = recognise_document(spec)
        if found not in ("json", "tokenizer.json"):
            raise TokenizerJsonError(wrong_format(name, found, "tokenizer.json"))
        raise TokenizerJsonError("not a tokenizer.json: expected an object with a 'model'")
    check_model_type(spec["model"])
    for component in ("truncation", "padding"):
        if spec.get(component) is not None:
            raise TokenizerJsonError(f"{component} is not supported (bytebpe never cuts or pads): set it to null")
    return spec



class _AddedToken:
    __slots__ = ("content", "decoded", "id", "lstrip", "normalized", "pattern", "rstrip", "single_word", "special")

    def __init__(self, spec: Any, index: int) -> None:
        component = f"added_tokens[{index}]"
        if not isinstance(spec, dict):
            raise TokenizerJsonError(f"{component} must be an object, got {spec!r}")
        token_id = spec.get("id")
        if not isinstance(token_id, int) or isinstance(token_id, bool) or not 0 <= token_id < 2**32:
            # HF refuses the file then ("expected u32"), though it gives the token an id of its own choosing.
            raise TokenizerJsonError(f"{component}.id: {token_id!r} is not an id (an integer from 0 to 2**32 - 1, "
                                     "as HF requires)" if "id" in spec else f"{component}: no field 'id'")
        self.id: int = token_id
        self.content = _field(spec, "content", str, component)
        self.single_word = _field(spec, "single_word", bool, component, False)
        self.lstrip = _field(spec, "lstrip", bool, component, False)
        self.rstrip = _field(spec, "rstrip", bool, component, False)
        self.special = _field(spec, "special", bool, component, False)
        self.normalized = _field(spec, "normalized", bool, component, not self.special)
        self.pattern = self.content     # what is matched: the normalized content for a normalized token
        self.decoded = self.content     # what decodes: HF's normalized_cache entry of the id, else the content


def _added_tokens(specs: Any, model: BPEModel, normalize: Callable[[str], str] | None) -> list[_AddedToken]:
    """The added tokens with the ids HF gives them (AddedVocabulary::add_tokens): the id of the same string
    in the vocabulary, else the next id from the vocabulary's size on, in file order. HF ignores the ids
    written in the file (it warns when they differ); so does this."""
    if not isinstance(specs, list):
        raise TokenizerJsonError(f"added_tokens must be a list, got {specs!r}")
    by_content: dict[str, _AddedToken] = {}
    next_id = len(model.vocab)
    for index, spec in enumerate(specs):
        token = _AddedToken(spec, index)
        if not token.content:
            continue
        if token.content in by_content:
            token.id = by_content[token.content].id
            token.special = token.special or by_content[token.content].special
        elif token.content in model.vocab:
            if token.id is not None and token.id != model.vocab[token.content]:
                warnings.warn(f"added token {shortened(token.content)} has id {token.id} in the file, but HF gives it "
                              f"its vocabulary id {model.vocab[token.content]}", stacklevel=3)
            token.id = model.vocab[token.content]
        else:
            if token.id is not None and token.id != next_id:
                warnings.warn(f"added token {shortened(token.content)} has id {token.id} in the file, but HF gives it "
                              f"id {next_id}", stacklevel=3)
            token.id = next_id
            next_id += 1
            if token.id in model.ids:
                raise TokenizerJsonError(f"added token {shortened(token.content)} gets id {token.id}, which the vocabulary "
                                         "already gives to another string")
        if token.normalized and normalize is not None:
            token.pattern = normalize(token.content)
        if token.pattern != token.content:
            token.decoded = token.pattern
        elif token.content in by_content:
            # HF's normalized_cache keeps the normalized form an earlier token of the same content put there,
            # though this one (which replaces it in matching) is not normalized.
            token.decoded = by_content[token.content].decoded
        by_content[token.content] = token
    return list(by_content.values())


def _starts_inside(first: list[str], second: list[str]) -> bool:
    """Whether a string of `second` can start inside one of `first` (at or after its start) and overlap it:
    held by it, or running on past its end. (All of them non-empty.)"""
    by_first_char: dict[str, list[str]] = {}
    for other in second:
        by_first_char.setdefault(other[0], []).append(other)
    return any(string.startswith(other, at) or other.startswith(string[at:])
               for string in first for at, char in enumerate(string) for other in by_first_char.get(char, ()))


class _AddedTokenSplitter:
    """HF's AddedVocabulary::extract_and_normalize as the core's `special_split`: ordinary text (normalized)
    and the contents of the added tokens found, alternately. `skipped`: special tokens whose matches are
    found but not split out (HF's encode_special_tokens)."""

    def __init__(self, tokens: list[_AddedToken], skipped: frozenset[str], normalize: Callable[[str], str] | None,
                 prefix_space: bool, around: tuple[list[str], list[str]], prepend_first: str | None = None,
                 prepared: Callable[[str], str] | None = None) -> None:
        self.by_content = {token.content: token for token in tokens}
        self.by_pattern = {token.pattern: token for token in tokens if token.normalized}
        raw = frozenset(token.content for token in tokens if not token.normalized)
        normalized = frozenset(token.pattern for token in tokens if token.normalized and token.pattern)
        self.raw_search = _special_token_regex(raw).finditer if raw else None
        self.normalized_search = _special_token_regex(normalized).finditer if normalized else None
        # Most documents hold no added token. Without a normalizer both passes search the text as given, so
        # one search for any token answers for both, instead of two Python-level passes finding nothing.
        self.any_search = _special_token_regex(raw | normalized).search if normalize is None and (raw | normalized) \
            else None
        self.skipped = skipped
        self.normalize = normalize
        self.prefix_space = prefix_space
        # Metaspace's replacement before the text's first segment (its "first" prepend scheme), unless that
        # segment starts with a space or the replacement already.
        self.prepend_first = prepend_first
        # What the pre-tokenizer does to each ordinary part first when a compiled scanner cuts its pieces and
        # cannot: Metaspace's replacement of spaces and its "always" prepend (Metaspace.prepared).
        self.prepared = prepared
        # The post-processor's ids as token parts: ["", p1, ..., "", pn] before the text's parts (which start
        # with ordinary text), [s1, "", ..., sm, ""] after them (which end with ordinary text).
        before, after = around
        self.before = [part for key in before for part in ("", key)]
        self.after = [part for key in after for part in (key, "")]

    def simplest(self) -> Any:
        """What the core can take instead of this splitter for the same parts: None when it never splits
        (no added token can be split out, nothing normalized, prepended or put around), the `re` split that
        named encodings use when it splits at plain raw tokens only, else itself: a Python call that builds
        its parts per document costs more than encoding a short document."""
        if self.before or self.after or self.normalize is not None or self.prefix_space or self.prepend_first \
                or self.prepared is not None:
            return self
        tokens = list(self.by_content.values())
        active = [token for token in tokens if not (token.special and token.content in self.skipped)]
        if not active:
            return None
        if any(token.single_word or token.lstrip or token.rstrip or not token.content for token in tokens):
            return self
        # Without a normalizer both passes search the text as given, so one leftmost-longest search for the
        # active tokens finds what the two split out, unless an active token can start inside (or where) a
        # token that wins over it: a skipped one of its own pass (whose match hides it), or, for a raw token,
        # a normalized active one (the raw pass runs first; the one search would take the earlier start).
        active_ids = {id(token) for token in active}     # (a set: Whisper's 1,608 tokens made a list slow)

        def contents(normalized: bool, skipped: bool) -> list[str]:
            return [token.content for token in tokens
                    if token.normalized == normalized and (id(token) not in active_ids) == skipped]
        if _starts_inside(contents(False, True), contents(False, False)) or \
                _starts_inside(contents(True, True), contents(True, False)) or \
                _starts_inside(contents(True, False), contents(False, False)):
            return self
        return _special_token_regex(frozenset(token.content for token in active)).split

    def _find(self, sentence: str, search: Any, tokens: dict[str, _AddedToken]) -> list[tuple[str, _AddedToken | None]]:
        if search is None or not sentence:
            return [(sentence, None)]
        splits: list[tuple[str, _AddedToken | None]] = []
        offset = 0
        for match in search(sentence):
            start, stop = match.span()
            token = tokens[match.group()]
            if token.special and token.content in self.skipped:
                continue
            edges = _edge_patterns() if token.single_word or token.lstrip or token.rstrip else None
            if token.single_word and not (
                    (start == 0 or not edges.word_at_end.search(sentence, 0, start))
                    and (stop == len(sentence) or not edges.word_at_start.match(sentence, stop))):
                continue
            if token.lstrip:
                start = max(edges.space_at_end.search(sentence, 0, start).start(), offset)
            if token.rstrip:
                stop = edges.space_at_start.match(sentence, stop).end()
            if offset < start:
                splits.append((sentence[offset:start], None))
            splits.append((sentence[start:stop], token))
            offset = stop
        if offset != len(sentence):
            splits.append((sentence[offset:], None))
        return splits

    def _at_start(self, part: str) -> str:
        """The text's first segment, with Metaspace's replacement put first when it asks for that."""
        if self.prepend_first and part and not part.startswith((" ", self.prepend_first)):
            return self.prepend_first + part
        return part

    def __call__(self, text: str, matches: list[str] | None = None) -> list[str]:
        """The parts of `text`; `matches`, when given, gets the text each added token was matched on (its
        content with the whitespace lstrip/rstrip took: HF's token string for it)."""
        if self.any_search is not None and self.any_search(text) is None:
            if self.prefix_space and text and not text.startswith(" "):
                text = " " + text
            text = self._at_start(text)
            if self.prepared is not None and text:
                text = self.prepared(text)
            return self.before + [text] + self.after if self.before or self.after else [text]
        out: list[str] = []     # ordinary, token, ordinary, token, ..., ordinary

        def ordinary(part: str) -> None:
            if self.prefix_space and part and not part.startswith(" "):
                part = " " + part
            if not out:     # (the text's first part, not after a token)
                part = self._at_start(part)
            if self.prepared is not None:
                part = self.prepared(part)
            if len(out) % 2:
                out[-1] += part     # (never happens: segments alternate) kept for safety of the format
            else:
                out.append(part)

        def token(content: str) -> None:
            if len(out) % 2 == 0:
                out.append("")
            out.append(content)

        for segment, found in self._find(text, self.raw_search, self.by_content):
            if found is not None:
                token(found.content)
                if matches is not None:
                    matches.append(segment)
                continue
            if not segment:
                continue
            if self.normalize is not None:
                segment = self.normalize(segment)
            for part, found in self._find(segment, self.normalized_search, self.by_pattern):
                if found is not None:
                    token(found.content)
                    if matches is not None:
                        matches.append(part)
                elif part:
                    ordinary(part)
        if len(out) % 2 == 0:
            out.append("")
        if self.before or self.after:
            return self.before + out + self.after
        return out


# ==== the encoding =================================================================================


class AddedTokens:
    """The special-token part of a tokenizer.json's encoding (encoding.SpecialTokens' interface): its added
    tokens, split out of text as HF's AddedVocabulary does — the special ones where allowed, the others
    always — each its own id. HF may give an added token the id of a vocabulary token (GPT-2's
    <|endoftext|>), which tiktoken's rules refuse, and decodes an added token from its normalized form. The
    post-processor's ids (`before`, `after`) reach the core as parts of the splitter's output, under names
    that no added token has (the splitter returns only added tokens' contents from text)."""

    def __init__(self, tokens: list[_AddedToken], decode_only: dict[int, bytes],
                 normalize: Callable[[str], str] | None, pre_tokenizer: PreTokenizer, before: list[int],
                 after: list[int], prepared: Callable[[str], str] | None = None) -> None:
        self.tokens = {token.content: token.id for token in tokens if token.special}
        self._added = tokens
        self._special = frozenset(self.tokens)
        self._normalize = normalize
        self._prefix_space = pre_tokenizer.prefix_space
        self._prepend_first = pre_tokenizer.prepend_first
        self._prepared = prepared
        self._around = ([_post_part(i) for i in before], [_post_part(i) for i in after])
        self._splits: dict[frozenset[str], Any] = {}
        self._decode = dict(decode_only)
        for token in tokens:
            # HF decodes an added token from its normalized form (AddedVocabulary::simple_id_to_token).
            shown = token.decoded
            self._decode[token.id] = byte_level_bytes(shown) if pre_tokenizer.byte_level else shown.encode("utf-8")
        parts = {token.content: token.id for token in tokens}
        # (after the real contents, so that those name their ids for decoding)
        post_parts = {_post_part(token_id): token_id for token_id in before + after}
        if post_parts.keys() & parts.keys():
            raise TokenizerJsonError("added_tokens: a token's content is bytebpe's private name of a "
                                     "post-processor id")
        self._core_parts = parts | post_parts
        # encode_single_token: an added token by its text, or by the bytes it decodes to (HF's token_to_id
        # looks in the added vocabulary first, as encoding splits an added token out first).
        self._ids: dict[str | bytes, int] = {token.content: token.id for token in tokens}
        self._ids.update((self._decode[token.id], token.id) for token in tokens)

    def split(self, allowed: frozenset[str]) -> Any:
        # Remembered per allowed set: with 1,283 added tokens (DeepSeek) building it again took longer than
        # encoding a paragraph.
        try:
            return self._splits[allowed]
        except KeyError:
            splitter = _AddedTokenSplitter(self._added, self._special - allowed, self._normalize, self._prefix_space,
                                           self._around, self._prepend_first, self._prepared).simplest()
            self._splits[allowed] = splitter
            return splitter

    def token_id(self, text_or_bytes: object) -> int | None:
        return self._ids.get(text_or_bytes) if isinstance(text_or_bytes, (str, bytes)) else None

    def core_parts(self) -> dict[str, int]:
        return self._core_parts

    def decode_bytes(self) -> dict[int, bytes]:
        return self._decode


class _OffsetTrim:
    """HF's ByteLevel post-processor with ``trim_offsets`` (byte_level.rs, `process_offsets`): each token's span
    leaves out its leading and trailing spaces (characters that are the byte-level space or whitespace),
    except one leading space of the first token when ``add_prefix_space`` put it there."""

    def __init__(self, leading: Any, trailing: Any, add_prefix_space: bool) -> None:
        self.leading, self.trailing, self.add_prefix_space = leading, trailing, add_prefix_space

    @classmethod
    def of(cls, processor: Any, model: BPEModel, tokens: list[_AddedToken]) -> _OffsetTrim | None:
        """The trim the file's post-processor asks for (its ByteLevel or RobertaProcessing, which trims as
        ByteLevel does, alone or in a Sequence), or None."""
        trimming = ("ByteLevel", "RobertaProcessing")
        found = [processor] if isinstance(processor, dict) and processor.get("type") in trimming else [
            inner for inner in (processor.get("processors") or [] if isinstance(processor, dict) else [])
            if isinstance(inner, dict) and inner.get("type") in trimming]
        if not found or not found[0].get("trim_offsets", True):
            return None
        import numpy as np  # (only for a file that trims offsets)

        size = max(model.n_vocab, 1 + max((token.id for token in tokens), default=0))
        leading, trailing = np.zeros(size, np.int64), np.zeros(size, np.int64)
        for data, token_id in model.token_ids.items():     # byte characters: only the space byte is a space
            leading[token_id] = len(data) - len(data.lstrip(b" "))
            trailing[token_id] = len(data) - len(data.rstrip(b" "))
        texts = {token_id: data.decode("utf-8") for token_id, data in model.decode_only.items()}
        texts.update((token.id, token.content) for token in tokens)
        for token_id, content in texts.items():
            leading[token_id] = len(content) - len(content.lstrip(_HF_SPACES))
            trailing[token_id] = len(content) - len(content.rstrip(_HF_SPACES))
        return cls(leading, trailing, bool(found[0].get("add_prefix_space", True)))

    def trimmed(self, ids: Any, spans: Any, strings: list[str] | None = None) -> Any:
        """`spans` of `ids` trimmed; `strings`: each token's string where it is not the id's own (an added
        token matched with the whitespace its lstrip/rstrip took)."""
        import numpy as np

        lead, trail = self.leading[ids], self.trailing[ids]
        if strings is not None:
            lead = np.array([len(s) - len(s.lstrip(_HF_SPACES)) for s in strings], np.int64)
            trail = np.array([len(s) - len(s.rstrip(_HF_SPACES)) for s in strings], np.int64)
        start, end = spans[:, 0].copy(), spans[:, 1].copy()
        first = (np.arange(len(ids)) == 0) | (start == 0)
        if self.add_prefix_space:
            lead[first & (lead == 1)] = 0
        start = np.where(lead > 0, np.minimum(start + lead, end), start)
        end = np.where((trail > 0) & (end >= trail), np.maximum(end - trail, start), end)
        return np.stack([start, end], axis=1)


# What HF's trim counts as a space in a token's text: the byte-level space and Rust's char::is_whitespace.
_HF_SPACES = "\u0120\t\n\x0b\x0c\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a" \
             "\u2028\u2029\u202f\u205f\u3000"


class _CharacterPieces:
    """The pre-tokenizer of a character-level model: its pieces, with the characters the vocabulary lacks cut
    out as the ids HF gives them (`BPEModel.cut_unknown`); one search first, as most texts have none."""

    def __init__(self, pretokenize: Callable[[str], list[str]] | None, model: BPEModel) -> None:
        import regex  # (a character class of every character of the vocabulary: `re` takes it too, slower)

        self.pretokenize = pretokenize
        self.model = model
        self.unknown = regex.compile(model.unknown_characters()).search

    def __call__(self, text: str) -> list[str | int]:
        pieces = [text] if self.pretokenize is None else self.pretokenize(text)
        split = self.model.word_split
        if self.unknown(text) is not None:
            return self.model.cut_unknown(pieces, split)     # (on HF's words: unknowns fuse within one)
        return pieces if split is None else [part for piece in pieces for part in split(piece)]


def _character_scanner(pre_tokenizer: PreTokenizer, model: BPEModel
                       ) -> tuple[_pretokenize.Scanner, Callable[[str], str] | None] | None:
    """For a character-level model with no pre-tokenizer or one Metaspace: the compiled scanner of its words
    (`BPEModel.word_scanner`), and what the added-token splitter then does to each ordinary part first
    (Metaspace's `prepared`, which a scanner cannot do); None where the scanner does not apply."""
    steps = pre_tokenizer.steps
    if len(steps) > 1 or (steps and not isinstance(steps[0], Metaspace)):
        return None
    metaspace = steps[0] if steps else None
    assert metaspace is None or isinstance(metaspace, Metaspace)
    scanner = model.word_scanner(metaspace.replacement if metaspace is not None and metaspace.split_pieces else None)
    if scanner is None:
        return None
    return scanner, None if metaspace is None else metaspace.prepared


class _WordEnds:
    """The pre-tokenizer of a model with an end_of_word_suffix: its pieces as bytes, each ending in WORD_END,
    which the model's first merges join to the piece's last byte (`BPEModel._word_end_merges`)."""

    def __init__(self, pretokenize: Callable[[str], list[Any]] | None) -> None:
        self.pretokenize = pretokenize

    def __call__(self, text: str) -> list[bytes]:
        pieces = ([text] if text else []) if self.pretokenize is None else self.pretokenize(text)
        return [(piece if isinstance(piece, bytes) else piece.encode("utf-8", "surrogatepass")) + WORD_END
                for piece in pieces]


class _TokenStrings:
    """Decoding by the file's decoder: the ids as HF's token strings (an added token's content, its
    normalized form for a normalized one; else the vocabulary's entry), then the decoder's chain."""

    def __init__(self, decoder: Decoder, model: BPEModel, tokens: list[_AddedToken]) -> None:
        self.decoder = decoder
        self.strings = {token_id: token for token, token_id in model.vocab.items()}
        self.strings.update((token.id, token.decoded) for token in tokens)
        self._joined: JoinedDecoder | None | bool = False     # made at the first decode

    def joined(self) -> JoinedDecoder | None:
        """The decoder's table (`joined_decoder`), None where the chain is not of its shape."""
        joined = self._joined
        if joined is False:
            joined = self._joined = joined_decoder(self.decoder, self.strings)
        return joined       # type: ignore[return-value]

    def __call__(self, ids: list[int]) -> str:
        joined = self._joined
        if joined is False:
            joined = self.joined()
        if joined is not None:
            return joined(ids)      # type: ignore[operator]
        strings = self.strings
        return self.decoder.decode([strings[token_id] for token_id in ids])


class FileParts(NamedTuple):
    """What `bytebpe.hf` reads of a file's parts beyond ids: the vocabulary's strings, the added tokens,
    the normalizer, the splitter of added tokens, and why the offsets cannot be HF's (None: they are, for a
    text the normalizer leaves as it is)."""
    model: BPEModel
    added: list[_AddedToken]
    normalize: Callable[[str], str] | None
    specials: AddedTokens
    offsets_issue: str | None


def _offsets_issue(spec: dict[str, Any], model: BPEModel) -> str | None:
    """Why this file's offsets are not HF's: the parts whose character alignments bytebpe does not carry
    (tests/exactness/test_real_files.py holds every real file to what this says)."""
    def kinds(part: Any, key: str) -> list[dict[str, Any]]:
        if not isinstance(part, dict):
            return []
        inner = part.get(key)
        return [found for each in inner for found in kinds(each, key)] if isinstance(inner, list) else [part]

    for normalizer in kinds(spec.get("normalizer"), "normalizers"):
        if normalizer.get("type") not in ("NFC", "NFD", "NFKC", "NFKD", "Lowercase"):
            return f"the normalizer {normalizer.get('type')} moves characters"
    for step in kinds(spec.get("pre_tokenizer"), "pretokenizers"):
        kind = step.get("type")
        if kind in ("Whitespace", "WhitespaceSplit", "BertPreTokenizer", "Metaspace", "CharDelimiterSplit"):
            return f"the pre-tokenizer {kind} drops or adds characters"
        if kind == "ByteLevel" and step.get("add_prefix_space", True):
            return "the pre-tokenizer ByteLevel adds a prefix space"
    if not model.byte_level:
        return "a character-level vocabulary"
    if model.end_of_word_suffix:
        return "the model's end_of_word_suffix"
    if any(bytes([byte]) not in model.token_ids for byte in range(256)):
        return "a vocabulary lacking byte characters"
    return None


class TokenizerJsonEncoding(Encoding):
    """An `Encoding` read from an HF `tokenizer.json` (see `from_tokenizer_json`); pickles as its JSON."""

    file_parts: FileParts
    _offset_trim: _OffsetTrim | None

    _json_text: str
    add_special_tokens: bool
    """Whether each document's ids are wrapped in the post-processor's (`from_tokenizer_json`)."""
    prefix_ids: tuple[int, ...]
    """The ids put before each document's ids: the post-processor's with add_special_tokens=True, else ()."""
    suffix_ids: tuple[int, ...]
    """The ids put after each document's ids: the post-processor's with add_special_tokens=True, else ()."""
    _split_for_budgets: tuple[str, str] | _pretokenize.Scanner | None     # _PreTokenizer.budget_split
    _normal_form: str | None                        # the normalizer, when it is only a Unicode normal form

    @classmethod
    def _from_json_text(cls, text: str, name: str, add_special_tokens: bool = False,
                        spec: dict[str, Any] | None = None, cut: CutMerges | None = None) -> TokenizerJsonEncoding:
        """The encoding of the file's `text`; `spec`: the text already parsed (`bytebpe.load_tokenizer` parses
        it once to recognise the format), with `cut` where its merges were left in the text
        (`parse_tokenizer_json`)."""
        if spec is None:
            spec, cut = _load_json_cut(text, name)
        else:
            spec = _checked_spec(spec, name)
        model_spec = spec.get("model")      # (its type checked already, by _checked_spec)
        processor = spec.get("post_processor")
        if processor is not None and (not isinstance(processor, dict) or processor.get("type") not in POST_PROCESSORS):
            kind = processor.get("type") if isinstance(processor, dict) else processor
            raise TokenizerJsonError(f"post_processor {str(kind)[:40]!r} is not supported (supported: "
                                     f"{', '.join(POST_PROCESSORS)})")
        pre_tokenizer = PreTokenizer(spec.get("pre_tokenizer"))
        decoder = decoder_from_json(spec.get("decoder"))
        model = model_from_json(model_spec, pre_tokenizer.byte_level, cut)
        normalize = normalizer_from_json(spec.get("normalizer"))
        tokens = _added_tokens(spec.get("added_tokens", []), model, normalize)
        before, after = post_processor_ids(processor) if add_special_tokens else ([], [])
        added_ids = {token.id for token in tokens}
        for token_id in before + after:
            if token_id not in added_ids and token_id not in model.ids:
                raise TokenizerJsonError(f"post_processor: id {token_id} is neither in the vocabulary nor an added "
                                         "token (bytebpe could not decode it)")
        pretokenize = pre_tokenizer.pretokenize
        prepared = None
        if not model.byte_level:
            scanned = _character_scanner(pre_tokenizer, model)
            if scanned is not None:
                pretokenize, prepared = scanned
            else:
                pretokenize = _CharacterPieces(pretokenize, model)
        elif model.end_of_word_suffix:
            pretokenize = _WordEnds(pretokenize)

        specials = AddedTokens(tokens, model.decode_only, normalize, pre_tokenizer, before, after, prepared)
        import hashlib  # (here: loading any other kind of file should not pay for its import)

        encoding = cls.__new__(cls)
        # The pattern is only bookkeeping when the pre-tokenizer is a Python callable.
        encoding._assemble(name, pre_tokenizer.known_pattern or r"[\s\S]+", model.table, specials,
                           pretokenize=pretokenize,
                           decode_text=_TokenStrings(decoder, model, tokens) if needs_token_strings(decoder)
                           or model.end_of_word_suffix or any(
                               # (an added token of a vocabulary id that HF decodes from its normalized form)
                               token.decoded != token.content and token.content in model.vocab
                               for token in tokens) else None,
                           n_vocab=max(model.n_vocab, 1 + max((token.id for token in tokens), default=-1)),
                           # Token files record this to check a decode against (tokens.layout.vocabulary_sha256):
                           # the whole file, since the merges, the pre-tokenizer and the added tokens decide the
                           # ids as much as the vocabulary.
                           vocabulary_sha256=hashlib.sha256(text.encode("utf-8")).hexdigest())
        encoding._json_text = text
        encoding._split_for_budgets = pre_tokenizer.budget_split
        encoding._normal_form = unicode_form(normalize)
        encoding.add_special_tokens = add_special_tokens
        encoding.prefix_ids, encoding.suffix_ids = tuple(before), tuple(after)
        encoding._offset_trim = _OffsetTrim.of(processor, model, tokens)
        encoding.file_parts = FileParts(model, tokens, normalize, specials, _offsets_issue(spec, model))
        return encoding

    def _encode_with_offsets(self, text: str, allowed_special: Any, disallowed_special: Any, as_numpy: bool) -> Any:
        """Encoding's, with the offsets trimmed as the file's ByteLevel post-processor trims them
        (``trim_offsets``), so that they equal HF's ``Encoding.offsets``. Where the file's parts move the
        text's characters (`FileParts.offsets_issue`) and the ids' bytes do not line up with the text, the
        ValueError names the part."""
        try:
            return self._offsets_of(text, allowed_special, disallowed_special, as_numpy)
        except ValueError as error:
            issue = self.file_parts.offsets_issue
            if issue is None or not str(error).startswith("the ids are not this text's"):
                raise
            raise ValueError(f"offsets of {self.name!r} for this text are not supported yet: {issue} (under "
                             "bytebpe.hf.patch_transformers, HF's own object gives them)") from None

    def _offsets_of(self, text: str, allowed_special: Any, disallowed_special: Any, as_numpy: bool) -> Any:
        if self.prefix_ids or self.suffix_ids:
            # The post-processor's ids come from no character of the text: HF gives them (0, 0).
            unwrapped = self._unwrapped_encoding()
            inner_ids, inner_offsets = Encoding._encode_with_offsets(unwrapped, text, allowed_special,
                                                                     disallowed_special, as_numpy=False)
            ids = [*self.prefix_ids, *inner_ids, *self.suffix_ids]
            offsets = [(0, 0)] * len(self.prefix_ids) + inner_offsets + [(0, 0)] * len(self.suffix_ids)
            if as_numpy:
                import numpy as np

                ids, offsets = np.asarray(ids, np.uint32), np.asarray(offsets, np.int64).reshape(-1, 2)
        else:
            ids, offsets = super()._encode_with_offsets(text, allowed_special, disallowed_special, as_numpy)
        if self._offset_trim is None or not len(ids):
            return ids, offsets
        import numpy as np  # (only for a file that trims offsets)

        spans = self._offset_trim.trimmed(np.asarray(ids), np.asarray(offsets, dtype=np.int64).reshape(-1, 2))
        return (ids, spans) if as_numpy else (ids, list(map(tuple, spans.tolist())))

    def _unwrapped_encoding(self) -> TokenizerJsonEncoding:
        """The same file without the post-processor's ids (made once)."""
        unwrapped = self.__dict__.get("_unwrapped")
        if unwrapped is None:
            unwrapped = self._unwrapped = TokenizerJsonEncoding._from_json_text(self._json_text, self.name)
        return unwrapped

    def _budget_pattern(self) -> tuple[str, str]:
        if self._split_for_budgets is None:
            raise TypeError(f"truncate and chunks are not supported for {self.name!r}: its pre-tokenizer is not one "
                            "split pattern the compiled scanner runs (use encode(..., max_tokens=N) for the first "
                            "N ids)")
        assert not isinstance(self._split_for_budgets, _pretokenize.Scanner)   # (the two methods below)
        return self._split_for_budgets

    def _budget_scanner(self) -> _pretokenize.Scanner:
        if isinstance(self._split_for_budgets, _pretokenize.Scanner):
            return self._split_for_budgets
        return super()._budget_scanner()

    def _budget_reads_the_start(self) -> bool:
        if isinstance(self._split_for_budgets, _pretokenize.Scanner):
            return False    # DeepSeek's scanner: each piece from its own start on (tests/unit/test_truncate.py)
        return super()._budget_reads_the_start()

    def _around_budget(self, max_tokens: int) -> int:
        """`max_tokens` less the post-processor's ids, which every text (the empty one too) is given."""
        if not isinstance(max_tokens, int) or isinstance(max_tokens, bool) or max_tokens < 0:
            return max_tokens   # Encoding's checks name what is wrong with it
        extra = len(self.prefix_ids) + len(self.suffix_ids)
        if max_tokens < extra:
            raise ValueError(f"max_tokens={max_tokens} is less than the {extra} ids the post-processor puts around "
                             f"every text (add_special_tokens=True): no part of the text fits")
        return max_tokens - extra

    def _without_normal_form(self, text: str) -> TokenizerJsonEncoding | None:
        """For a file whose normalizer is a Unicode normal form (Qwen's NFC): the same file without it (made
        once), which counts `text` as this one does when `text` is in that form already -- the form holds for
        every part of such a text, so the normalizer changes none. ValueError for text not in the form
        (truncate and chunks return parts of the text given). None for other files."""
        if self._normal_form is None:
            return None
        if not isinstance(text, str) or not unicodedata.is_normalized(self._normal_form, text):
            if isinstance(text, str):
                raise ValueError(f"{self.name!r} normalizes text to {self._normal_form} first: truncate and chunks "
                                 f"return a part of the text given, so give it normalized "
                                 f"(unicodedata.normalize({self._normal_form!r}, text))")
            return None     # (not a str: the checks of Encoding name it)
        twin = self.__dict__.get("_unnormalized")
        if twin is None:
            spec = json.loads(self._json_text)
            spec["normalizer"] = None
            twin = self._unnormalized = TokenizerJsonEncoding._from_json_text(
                json.dumps(spec), self.name, self.add_special_tokens)
        return twin

    def truncate(self, text: str, max_tokens: int, **options: Any) -> str:
        if (twin := self._without_normal_form(text)) is not None:
            return twin.truncate(text, max_tokens, **options)
        if self.prefix_ids or self.suffix_ids:
            # The ids the post-processor adds come from no character: the text gets the rest of the budget.
            return self._unwrapped_encoding().truncate(text, self._around_budget(max_tokens), **options)
        return super().truncate(text, max_tokens, **options)

    def chunks(self, text: str, max_tokens: int, **options: Any) -> list[str]:
        if (twin := self._without_normal_form(text)) is not None:
            return twin.chunks(text, max_tokens, **options)
        if self.prefix_ids or self.suffix_ids:
            return self._unwrapped_encoding().chunks(text, self._around_budget(max_tokens), **options)
        return super().chunks(text, max_tokens, **options)

    def __reduce__(self) -> tuple[Any, ...]:
        return (TokenizerJsonEncoding._from_json_text, (self._json_text, self.name, self.add_special_tokens))

    def to_tokenizer_json(self, path: str | os.PathLike[str]) -> None:
        """Write the `tokenizer.json` this encoding was read from (its post-processor included, whatever
        `add_special_tokens` was)."""
        write_bytes_atomically(path, self._json_text.encode("utf-8"))

    def save(self, path: str | os.PathLike[str]) -> None:
        raise TypeError("an encoding read from a tokenizer.json saves as one: use to_tokenizer_json(path)")

    def with_special_tokens(self, special_tokens: Any, *, name: str | None = None) -> Encoding:
        raise TypeError("an encoding read from a tokenizer.json takes its special tokens from the file "
                        "(its added_tokens)")

    def with_pretokenizer(self, pretokenizer: Any) -> Encoding:
        raise TypeError("an encoding read from a tokenizer.json runs the pre-tokenizer the file describes")

    @property
    def pretokenizer(self) -> Any:
        """"compiled" when a compiled scanner cuts the pieces, "regex" when the file's pre-tokenizer runs
        in Python over `regex`."""
        return "compiled" if isinstance(self._pretokenize, _pretokenize.Scanner) else "regex"

