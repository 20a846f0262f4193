"""`tokenizers.Tokenizer`'s surface over bytebpe: the same methods, settings and outputs for a tokenizer.json.

A `Tokenizer` holds a *pipeline* (the file's parts, read once: the bytebpe encoding that gives HF's ids, the
post-processor, the token strings) and its *settings* (truncation, padding, `encode_special_tokens`). Both
are immutable values that a change replaces whole, and every call reads each once: threads sharing one
Tokenizer while another changes its settings each get the answer of one setting or the other, never a mix,
and never HF's "Already borrowed".

What HF does is the specification (tokenizers/src/tokenizer/mod.rs `encode_char_offsets`, `post_process`,
`encode_batch`; added_vocabulary.rs `add_tokens`); tests/exactness/test_hf_surface.py compares every method
and every `Encoding` column with HF's on real files.
"""
from __future__ import annotations

import bisect
import copy
import json
import operator
import os
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, NamedTuple

from .. import _decode_streams
from .. import encoding as _bytebpe_encoding
from ..atomic_write import write_bytes_atomically
from ..file_formats import CutMerges, TokenizerJsonError
from ..hf_import import (
    TokenizerJsonEncoding,
    _AddedTokenSplitter,
    _checked_spec,
    _load_json,
    _TokenStrings,
    parse_tokenizer_json,
)
from ..parts.post_processors import post_processor_ids
from .encoding import Encoding, TextRun
from .processing import (
    Padding,
    PostProcessor,
    Truncation,
    default_process,
    pad_encodings,
    post_processor_of,
    truncate_encodings,
)

__all__ = ["AddedToken", "Tokenizer"]


class AddedToken:
    """`tokenizers.AddedToken`: a token's content and how it is matched in text."""

    __slots__ = ("content", "lstrip", "normalized", "rstrip", "single_word", "special")

    def __init__(self, content: str = "", single_word: bool = False, lstrip: bool = False, rstrip: bool = False,
                 normalized: bool | None = None, special: bool = False) -> None:
        if not isinstance(content, str):
            raise TypeError(f"AddedToken content must be a str, got {type(content).__name__}")
        self.content = content
        self.single_word, self.lstrip, self.rstrip, self.special = single_word, lstrip, rstrip, special
        self.normalized = not special if normalized is None else normalized

    @classmethod
    def _of(cls, spec: dict[str, Any]) -> AddedToken:
        special = bool(spec.get("special", False))
        return cls(spec["content"], bool(spec.get("single_word", False)), bool(spec.get("lstrip", False)),
                   bool(spec.get("rstrip", False)), bool(spec.get("normalized", not special)), special)

    def _spec(self, token_id: int) -> dict[str, Any]:
        return {"id": token_id, "content": self.content, "single_word": self.single_word, "lstrip": self.lstrip,
                "rstrip": self.rstrip, "normalized": self.normalized, "special": self.special}

    def _key(self) -> tuple[Any, ...]:
        return self.content, self.single_word, self.lstrip, self.rstrip, self.normalized, self.special

    def __eq__(self, other: object) -> bool:
        if isinstance(other, AddedToken):
            return self._key() == other._key()
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self.content)

    def __str__(self) -> str:
        return self.content

    def __repr__(self) -> str:
        def flag(value: bool) -> str:
            return "True" if value else "False"
        return (f'AddedToken("{self.content}", rstrip={flag(self.rstrip)}, lstrip={flag(self.lstrip)}, '
                f"single_word={flag(self.single_word)}, normalized={flag(self.normalized)}, "
                f"special={flag(self.special)})")

    def __getstate__(self) -> dict[str, Any]:
        return {"content": self.content, "single_word": self.single_word, "lstrip": self.lstrip,
                "rstrip": self.rstrip, "normalized": self.normalized, "special": self.special}

    def __setstate__(self, state: dict[str, Any]) -> None:
        for key, value in state.items():
            setattr(self, key, value)


# ==== the pipeline: a file's parts, read once =================================================================


class _Pipeline:
    """Everything a Tokenizer reads of its file: immutable once made (a change makes a new one)."""

    def __init__(self, spec: dict[str, Any], name: str, cut: CutMerges | None = None,
                 text: str | None = None) -> None:
        """`spec`: the file as HF would write it, truncation and padding set to None (they live in the
        settings); `cut`: its model's merges, where they were left in the file's text (the spec's model then
        holds [] for them: `spec` makes the whole); `text`: the file's text, where it holds no truncation or
        padding (it is then the encoding's, unwritten)."""
        self._parsed_spec, self._cut = spec, cut
        inner = dict(spec, truncation=None, padding=None)
        if text is None:
            text = json.dumps(dict(self.spec, truncation=None, padding=None), ensure_ascii=False)
        self.encoding = TokenizerJsonEncoding._from_json_text(text, name, spec=inner, cut=cut)
        parts = self.encoding.file_parts
        self.processor: PostProcessor | None = post_processor_of(spec.get("post_processor"))
        self.vocab: dict[str, int] = dict(parts.model.vocab)
        self.added = {token.id: token for token in parts.added}
        self.added_ids = {token.content: token.id for token in parts.added}
        self.special_contents = frozenset(token.content for token in parts.added if token.special)
        self.strings: dict[int, str] = {token_id: token for token, token_id in self.vocab.items()}
        # (an added token's string is its normalized form where it has one: HF's normalized cache)
        self.strings.update((token.id, token.decoded) for token in parts.added)
        # (every id whose string is a special token's: what skip_special_tokens leaves out)
        self.special_ids = frozenset(token_id for token_id, token in self.strings.items()
                                     if token in self.special_contents)
        # The ids the post-processor puts around one sequence (add_special_tokens=True), for the batch shortcut
        # (`Tokenizer._single_rows`); None where that is not one fixed list before and one after.
        try:
            self.around: tuple[list[int], list[int]] | None = post_processor_ids(spec.get("post_processor"))
        except TokenizerJsonError:
            self.around = None
        # Added tokens whose string in an Encoding is the text they matched (whitespace included).
        self.stripping = frozenset(token.id for token in parts.added if token.lstrip or token.rstrip)
        self.offsets_issue = parts.offsets_issue
        self.normalize = parts.normalize
        # HF's own offsets and word ids of a text, where bytebpe cannot give them: (text, specials as text)
        # -> (ids, offsets, word ids). Set by bytebpe.hf.accelerate, which has HF's tokenizer at hand.
        self.oracle: Callable[[str, bool], tuple[list[int], list[tuple[int, int]], list[int | None]]] | None = None
        # (made at the first DecodeStream step)
        self._stream_tokens: _decode_streams.StreamTokens | None | bool = False

    @property
    def spec(self) -> dict[str, Any]:
        """The whole file as HF would write it (its model's merges parsed when first asked: few calls need
        them, and they are most of the file)."""
        if self._cut is not None:
            model = dict(self._parsed_spec["model"], merges=self._cut.as_list())
            self._parsed_spec, self._cut = dict(self._parsed_spec, model=model), None
        return self._parsed_spec

    def part_spec(self, key: str) -> Any:
        """The file's entry `key`, any but "model" (without parsing the merges)."""
        return self._parsed_spec.get(key)

    def stream_tokens(self) -> _decode_streams.StreamTokens | None:
        """What a DecodeStream decodes by in C (`_decode_streams.StreamTokens`): the core's token bytes for a
        ByteLevel decoder, the decoder's table for a Llama 2-style chain (`JoinedDecoder` ending in Strip
        steps); None for any other decoder (each step then runs `decode`)."""
        made = self._stream_tokens
        if made is False:
            made = self._stream_tokens = self._new_stream_tokens()
        return made     # type: ignore[return-value]

    def _new_stream_tokens(self) -> _decode_streams.StreamTokens | None:
        enc = self.encoding
        kinds = _decode_streams.stream_token_kinds(enc._core, enc.n_vocab)    # (n_vocab: one past the last id)
        if kinds.count(0) != len(self.strings):     # (the core decodes ids HF has no token for: drop them)
            kinds = bytearray(b"\x02") * (1 + max(self.strings, default=-1))    # (STREAM_NO_TOKEN)
            for token_id in self.strings:
                kinds[token_id] = 0                                         # (STREAM_TOKEN)
        for token_id in self.special_ids:
            kinds[token_id] = 1                                             # (STREAM_SPECIAL)
        if enc._decode_text is None:
            return _decode_streams.StreamTokens(kinds, enc._core)
        joined = enc._decode_text.joined() if isinstance(enc._decode_text, _TokenStrings) else None
        strips = None if joined is None else joined.strips()
        if joined is None or strips is None:
            return None
        try:
            return _decode_streams.StreamTokens(kinds, texts=joined.mapped, strips=[
                (content.encode("utf-8"), start, stop) for content, start, stop in strips])
        except UnicodeEncodeError:      # (a token holding a lone surrogate: its decode stays the chain's)
            return None

    def n_added(self, is_pair: bool) -> int:
        return self.processor.added_tokens(is_pair) if self.processor is not None else 0

    # ---- the columns beyond ids, for one text (TextRun) ----

    def offsets_and_words(self, text: str, ids: list[int], special_as_text: bool
                          ) -> tuple[list[tuple[int, int]], list[int | None]]:
        """HF's offsets and word ids for the tokens `ids` of `text` (NotImplementedError naming the part
        where bytebpe cannot give HF's)."""
        issue = self.offsets_issue
        if issue is None and self.normalize is not None and self.normalize(text) != text:
            issue = "the normalizer changes this text"
        if issue is not None and self.oracle is not None:
            oracle_ids, offsets, words = self.oracle(text, special_as_text)
            if oracle_ids != ids:
                raise RuntimeError(f"bytebpe's ids of a text differ from HF's for {self.encoding.name!r} (a bug: "
                                   "please report it)")
            return offsets, words
        if issue is not None:
            raise NotImplementedError(f"offsets and word ids of {self.encoding.name!r} are not HF's yet: {issue} "
                                      "(use HF tokenizers for them)")
        enc = self.encoding
        if self.stripping and not self.stripping.isdisjoint(ids):
            found_ids, spans = self._offsets_by_parts(text, special_as_text)
        else:
            allowed: Any = "all" if not special_as_text else set()
            disallowed: Any = () if special_as_text else "all"
            found_ids, spans = _bytebpe_encoding.Encoding._encode_with_offsets(enc, text, allowed, disallowed,
                                                                              as_numpy=False)
        if found_ids != ids:
            raise RuntimeError("bytebpe gave different ids with offsets than without (a bug: please report it)")
        words = self._words(text, spans, special_as_text)
        if enc._offset_trim is not None and spans:
            import numpy as np

            # (trimmed by each token's string: a stripping added token's holds the whitespace it took)
            strings = self.matched_strings(text, ids, special_as_text) \
                if self.stripping and not self.stripping.isdisjoint(ids) else None
            trimmed = enc._offset_trim.trimmed(np.asarray(ids), np.asarray(spans, dtype=np.int64).reshape(-1, 2),
                                               strings)
            spans = list(map(tuple, trimmed.tolist()))
        return spans, words

    def _split_parts(self, text: str, special_as_text: bool) -> list[tuple[str, str]]:
        """The added-token splitter's parts of `text` as (part, matched text): they alternate ordinary text,
        token, ... (an odd index is a token; empty parts left in); an added token's part is its content, its
        matched text that with the whitespace lstrip/rstrip took; ordinary text (normalized) matches itself."""
        specials = self.encoding.file_parts.specials
        split = specials.split(frozenset() if special_as_text else specials._special)
        if split is None:
            return [(text, text)]
        if not isinstance(split, _AddedTokenSplitter):
            return [(part, part) for part in split(text)]
        matches: list[str] = []
        parts = split(text, matches)
        return [(part, matches[index // 2] if index % 2 else part) for index, part in enumerate(parts)]

    def _located_parts(self, text: str, special_as_text: bool) -> list[tuple[int, str, str]]:
        """`_split_parts`, each with where its matched text starts in `text`. NotImplementedError where a part
        is not the text's own (a normalizer changed it)."""
        located = []
        position = 0
        for part, piece in self._split_parts(text, special_as_text):
            found = text.find(piece, position) if piece else position
            if found < 0:
                raise NotImplementedError("offsets and word ids of this text are not HF's yet: an added token's "
                                          "match or the normalizer moves characters")
            located.append((found, part, piece))
            position = found + len(piece)
        return located

    def matched_strings(self, text: str, ids: list[int], special_as_text: bool) -> list[str]:
        """Each token's HF string for `text` where an added token took whitespace with it: its matched text
        (HF's split value), the others their vocabulary strings."""
        core, pretokenize, strings = self.encoding._core, self.encoding._pretokenize, self.strings
        out: list[str] = []
        for index, (part, piece) in enumerate(self._split_parts(text, special_as_text)):
            if index % 2:
                out.append(piece)
            elif part:
                out += [strings[token_id] for token_id in core.encode(pretokenize, None, part)]
        if len(out) != len(ids):
            raise RuntimeError("bytebpe's token strings do not line up with its ids (a bug: please report it)")
        return out

    def _offsets_by_parts(self, text: str, special_as_text: bool) -> tuple[list[int], list[tuple[int, int]]]:
        """Ids and offsets part by part: an added token that took whitespace with it spans that whitespace
        too, which the core's offsets (read off the tokens' bytes) cannot show."""
        core, pretokenize = self.encoding._core, self.encoding._pretokenize
        ids: list[int] = []
        spans: list[tuple[int, int]] = []
        for index, (found, part, piece) in enumerate(self._located_parts(text, special_as_text)):
            if not piece:
                continue
            if index % 2:
                ids.append(self.added_ids[part])
                spans.append((found, found + len(piece)))
            else:
                part_ids, part_spans = core.encode_with_offsets(pretokenize, None, piece, None, False)
                ids += part_ids
                spans += [(start + found, end + found) for start, end in part_spans]
        return ids, spans

    def _words(self, text: str, spans: list[tuple[int, int]], special_as_text: bool) -> list[int | None]:
        """Each token's word: the index of HF's split (an added token, or a pre-tokenizer's piece) holding
        the token's first character."""
        pretokenize = self.encoding._pretokenize
        starts: list[int] = []
        position = 0
        for index, (found, part, piece) in enumerate(self._located_parts(text, special_as_text)):
            if not piece:
                continue
            if index % 2:           # an added token: one split, from where the text before it ended
                starts.append(position)
            else:
                at = found
                for word in (pretokenize(part) if pretokenize is not None else [part]):
                    if isinstance(word, bytes):
                        word = word.decode("utf-8", "surrogatepass")
                    elif not isinstance(word, str):
                        raise NotImplementedError("word ids of this file are not HF's yet")
                    starts.append(at)
                    at += len(word)
                if at != found + len(part):
                    raise NotImplementedError("word ids of this file are not HF's yet: its pre-tokenizer drops "
                                              "characters")
            position = found + len(piece)
        return [bisect.bisect_right(starts, start) - 1 if starts else None for start, _ in spans]


class Rows(NamedTuple):
    """A batch of single texts as arrays (`Tokenizer._single_rows`): int64 (n, width) ids, attention mask and
    special-tokens mask, and the pipeline and settings they were made with."""
    input_ids: Any
    attention_mask: Any
    special_tokens_mask: Any
    pipeline: _Pipeline
    settings: _Settings


@dataclass(frozen=True)
class _Settings:
    truncation: Truncation | None = None
    padding: Padding | None = None
    encode_special_tokens: bool = False


# ==== the tokenizer ===========================================================================================


class Tokenizer:
    """`tokenizers.Tokenizer` for a BPE tokenizer.json that bytebpe serves: make one with `from_file`,
    `from_str`, `from_buffer` or `from_pretrained` (a local directory)."""

    def __init__(self, tokenizer_json: str | dict[str, Any], *, name: str = "tokenizer.json") -> None:
        cut, text = None, None
        if isinstance(tokenizer_json, str):
            if tokenizer_json.lstrip("\ufeff \t\r\n")[:1] == "{":
                spec, cut = _parsed(tokenizer_json, name)
                text = tokenizer_json
            else:
                raise TypeError("Tokenizer(...) takes the text of a tokenizer.json or its parsed object: use "
                                "Tokenizer.from_file(path) for a path")
        elif isinstance(tokenizer_json, dict):
            spec = copy.deepcopy(tokenizer_json)
        else:
            raise TypeError(f"Tokenizer(...) takes the text of a tokenizer.json or its parsed object, got "
                            f"{type(tokenizer_json).__name__} (tokenizers' models are not taken: save the "
                            "tokenizers.Tokenizer and use Tokenizer.from_str(tok.to_str()))")
        truncation, padding = spec.get("truncation"), spec.get("padding")
        spec = _checked_spec(dict(spec, truncation=None, padding=None), name)
        self._name = name
        self._oracle: Any = None
        self._pipeline = self._new_pipeline(spec, cut, text if truncation is None and padding is None else None)
        self._shared_settings = _Settings(_truncation_of(truncation), _padding_of(padding))
        self._local = threading.local()

    # Settings are the tokenizer's, and each thread's own once it changes them: transformers sets truncation
    # and padding before each call, so threads sharing a tokenizer each get their own call's settings. A
    # thread that never changed them reads the latest any thread set.
    @property
    def _settings(self) -> _Settings:
        return getattr(self._local, "settings", None) or self._shared_settings

    @_settings.setter
    def _settings(self, settings: _Settings) -> None:
        self._shared_settings = settings
        self._local.settings = settings

    def _new_pipeline(self, spec: dict[str, Any], cut: CutMerges | None = None, text: str | None = None) -> _Pipeline:
        pipeline = _Pipeline(spec, self._name, cut, text)
        pipeline.oracle = self._oracle
        return pipeline

    # ---- making one ----

    @classmethod
    def from_str(cls, json: str) -> Tokenizer:
        if not isinstance(json, str):
            raise TypeError(f"from_str takes the JSON text, got {type(json).__name__}")
        return cls(json)

    @classmethod
    def from_buffer(cls, buffer: bytes) -> Tokenizer:
        if not isinstance(buffer, (bytes, bytearray, memoryview)):
            raise TypeError(f"from_buffer takes bytes, got {type(buffer).__name__}")
        try:
            text = bytes(buffer).decode("utf-8")
        except UnicodeDecodeError as error:
            raise TokenizerJsonError(f"the buffer is not UTF-8 JSON: {error}") from None
        return cls(text)

    @classmethod
    def from_file(cls, path: str | os.PathLike[str]) -> Tokenizer:
        if not isinstance(path, (str, os.PathLike)):
            raise TypeError(f"from_file takes a path, got {type(path).__name__}")
        try:
            text = Path(path).read_text(encoding="utf-8")
        except UnicodeDecodeError:
            raise TokenizerJsonError(f"{str(path)!r} is not a UTF-8 JSON file (a tokenizer.json?)") from None
        except OSError as error:
            raise TokenizerJsonError(f"cannot read {str(path)!r}: {error.strerror or error}") from None
        if text.lstrip("\ufeff \t\r\n")[:1] != "{":
            raise TokenizerJsonError(f"{str(path)!r} is not a tokenizer.json (no JSON object in it)")
        return cls(text, name=Path(path).name)

    @classmethod
    def from_pretrained(cls, identifier: str | os.PathLike[str], revision: str = "main",
                        token: str | None = None) -> Tokenizer:
        """A local directory holding tokenizer.json (or the file itself): bytebpe does not download."""
        path = Path(identifier)
        if path.is_dir():
            path = path / "tokenizer.json"
        if not path.is_file():
            raise FileNotFoundError(f"no tokenizer.json at {str(identifier)!r}: bytebpe.hf reads local files "
                                    "only (download with huggingface_hub.snapshot_download(repo_id) and give its "
                                    "directory)")
        return cls.from_file(path)

    # ---- writing ----

    def to_str(self, pretty: bool = False) -> str:
        settings = self._settings
        spec = dict(self._pipeline.spec)
        spec["truncation"] = _truncation_json(settings.truncation) if settings.truncation else None
        spec["padding"] = _padding_json(settings.padding) if settings.padding else None
        ordered: dict[str, Any] = {key: spec[key] for key in ("version", "truncation", "padding", "added_tokens", "normalizer",
                                              "pre_tokenizer", "post_processor", "decoder", "model") if key in spec}
        ordered.update((key, value) for key, value in spec.items() if key not in ordered)
        if pretty:
            return json.dumps(ordered, ensure_ascii=False, indent=2)
        return json.dumps(ordered, ensure_ascii=False, separators=(",", ":"))

    def save(self, path: str | os.PathLike[str], pretty: bool = True) -> None:
        write_bytes_atomically(path, self.to_str(pretty).encode("utf-8"))

    def __getstate__(self) -> dict[str, Any]:
        return {"json": self.to_str(), "name": self._name,
                "encode_special_tokens": self._settings.encode_special_tokens}

    def __setstate__(self, state: dict[str, Any]) -> None:
        fresh = Tokenizer(state["json"], name=state.get("name", "tokenizer.json"))
        self.__dict__.update(fresh.__dict__)
        self._settings = replace(self._settings, encode_special_tokens=bool(state.get("encode_special_tokens")))

    def __deepcopy__(self, memo: dict[int, Any]) -> Tokenizer:
        twin = Tokenizer.__new__(Tokenizer)
        twin.__dict__.update(self.__dict__)      # (the pipeline and settings are immutable: shared safely)
        twin._local = threading.local()
        twin._shared_settings = self._settings
        return twin

    def __repr__(self) -> str:
        return f"bytebpe.hf.Tokenizer({self._name!r}, vocab_size={self.get_vocab_size()})"

    # ---- settings ----

    @property
    def truncation(self) -> dict[str, Any] | None:
        settings = self._settings
        return settings.truncation.as_dict() if settings.truncation else None

    def enable_truncation(self, max_length: int, stride: int = 0, strategy: str = "longest_first",
                          direction: str = "right") -> None:
        params = Truncation(max_length, stride, strategy, direction)
        effective = max_length - self._pipeline.n_added(False)
        if effective >= 0 and effective < stride:
            raise ValueError(f"Truncation error: tokenizer stride set to {stride}, which is greater than or equal "
                             f"to its effective max length of {effective} (= {max_length} original max length - "
                             f"{self._pipeline.n_added(False)} added special tokens), ")
        self._settings = replace(self._settings, truncation=params)

    def no_truncation(self) -> None:
        self._settings = replace(self._settings, truncation=None)

    @property
    def padding(self) -> dict[str, Any] | None:
        settings = self._settings
        return settings.padding.as_dict() if settings.padding else None

    def enable_padding(self, direction: str = "right", pad_id: int = 0, pad_type_id: int = 0,
                       pad_token: str = "[PAD]", length: int | None = None,
                       pad_to_multiple_of: int | None = None) -> None:
        self._settings = replace(self._settings, padding=Padding(length, pad_to_multiple_of, pad_id, pad_type_id,
                                                                 pad_token, direction))

    def no_padding(self) -> None:
        self._settings = replace(self._settings, padding=None)

    @property
    def encode_special_tokens(self) -> bool:
        return self._settings.encode_special_tokens

    @encode_special_tokens.setter
    def encode_special_tokens(self, value: bool) -> None:
        self._settings = replace(self._settings, encode_special_tokens=bool(value))

    # ---- encoding ----

    def encode(self, sequence: Any, pair: Any = None, is_pretokenized: bool = False,
               add_special_tokens: bool = True) -> Encoding:
        pipeline, settings = self._pipeline, self._settings
        first = self._encoded_input(pipeline, settings, sequence, 0, is_pretokenized)
        second = None if pair is None else self._encoded_input(pipeline, settings, pair, 1, is_pretokenized)
        return _post_process(pipeline, settings, first, second, add_special_tokens)

    def encode_batch(self, input: Sequence[Any], is_pretokenized: bool = False,
                     add_special_tokens: bool = True) -> list[Encoding]:
        return self._encode_batch_with(self._pipeline, self._settings, input, is_pretokenized, add_special_tokens)

    def encode_batch_fast(self, input: Sequence[Any], is_pretokenized: bool = False,
                          add_special_tokens: bool = True) -> list[Encoding]:
        """`encode_batch` without what HF leaves out here: the text's tokens have no strings (""), no offsets
        ((0, 0)) and no words (None); the post-processor's tokens keep theirs."""
        return self._encode_batch_with(self._pipeline, self._settings, input, is_pretokenized, add_special_tokens,
                                       bare=True)

    def _encode_batch_with(self, pipeline: _Pipeline, settings: _Settings, input: Sequence[Any],
                           is_pretokenized: bool, add_special_tokens: bool, bare: bool = False) -> list[Encoding]:
        if isinstance(input, (str, bytes)) or not isinstance(input, Iterable):
            raise TypeError(f"encode_batch takes a list of inputs, got {type(input).__name__}")
        items = list(input)
        singles: list[Any] = []
        pairs: list[Any] = []
        for item in items:
            if _is_pair(item, is_pretokenized):
                singles.append(item[0])
                pairs.append(item[1])
            else:
                singles.append(item)
                pairs.append(None)
        firsts = self._encoded_inputs(pipeline, settings, singles, 0, is_pretokenized, bare)
        seconds: list[Encoding | None] = [None] * len(items)
        wanted = [index for index, item in enumerate(pairs) if item is not None]
        if wanted:
            # (HF's fast path gives the second sequence type id 0 too, before any post-processor sets them)
            for index, encoded in zip(wanted, self._encoded_inputs(pipeline, settings, [pairs[i] for i in wanted],
                                                                   0 if bare else 1, is_pretokenized, bare)):
                seconds[index] = encoded
        out = [_post_process(pipeline, settings, first, second, add_special_tokens)
               for first, second in zip(firsts, seconds)]
        if settings.padding is not None:
            pad_encodings(out, settings.padding)
        return out

    def _encoded_input(self, pipeline: _Pipeline, settings: _Settings, value: Any, type_id: int,
                       is_pretokenized: bool) -> Encoding:
        return self._encoded_inputs(pipeline, settings, [value], type_id, is_pretokenized)[0]

    def _encoded_inputs(self, pipeline: _Pipeline, settings: _Settings, values: list[Any], type_id: int,
                        is_pretokenized: bool, bare: bool = False) -> list[Encoding]:
        as_text = settings.encode_special_tokens
        texts: list[str] = []
        shape: list[int] = []           # per value: how many texts (pre-tokenized words) it is
        for value in values:
            if is_pretokenized:
                if isinstance(value, str) or not isinstance(value, (list, tuple)) or \
                        not all(isinstance(word, str) for word in value):
                    raise TypeError("with is_pretokenized=True each input is a list of str (its words), got "
                                    f"{type(value).__name__}")
                texts += value
                shape.append(len(value))
            else:
                if not isinstance(value, str):
                    raise TypeError(f"each input must be a str (or a pair of str), got {type(value).__name__}")
                texts.append(value)
                shape.append(1)
        enc = pipeline.encoding
        ids_of = enc.encode_ordinary_batch(texts) if as_text else enc.encode_batch(texts, allowed_special="all")
        out = []
        at = 0
        for count in shape:
            runs = [_bare_run(ids_of[at + k]) if bare else
                    _run(pipeline, texts[at + k], ids_of[at + k], as_text, k if is_pretokenized else None)
                    for k in range(count)]
            at += count
            encodings = [Encoding.of_run(run, type_id) for run in runs]
            out.append(encodings[0] if len(encodings) == 1 and not is_pretokenized
                       else Encoding.merge(encodings, growing_offsets=False))
        return out

    def _single_rows(self, texts: list[str], add_special_tokens: bool, as_lists: bool) -> Rows | None:
        """What `encode_batch(texts, add_special_tokens)` gives as numpy arrays, without making an Encoding:
        each text's ids truncated, put between the post-processor's ids and padded as HF's post_process and
        batch padding do, from the core's flat output. For the batch calls transformers makes for a batch of
        single texts (bytebpe.hf.patch's shortcut); `as_lists`: lists of lists rather than arrays (rows may then
        differ in length). None where the shortcut does not apply (a post-processor that is not one fixed list
        of ids before and after; rows of different lengths as arrays)."""
        import numpy as np

        pipeline, settings = self._pipeline, self._settings
        if not texts:
            return None
        before, after = pipeline.around if add_special_tokens and pipeline.around is not None else ([], [])
        if add_special_tokens and pipeline.processor is not None and pipeline.around is None:
            return None
        enc = pipeline.encoding
        if settings.encode_special_tokens:
            flat, bounds = enc.encode_batch_to_numpy(texts, allowed_special=set(), disallowed_special=())
        else:
            flat, bounds = enc.encode_batch_to_numpy(texts, allowed_special="all")
        length = np.diff(bounds)
        keep, first = length, bounds[:-1]
        truncation = settings.truncation
        if truncation is not None:
            n_added = pipeline.n_added(False)
            limit = truncation.max_length - (n_added if add_special_tokens and n_added > 0 else 0)
            if limit >= 0:
                cut = length > limit
                if cut.any():
                    if truncation.strategy == "only_second":
                        raise ValueError("Truncation error: Second sequence not provided")
                    if limit > 0 and truncation.stride >= limit:
                        raise ValueError(f"`stride` must be strictly less than `max_len={limit}` (note that "
                                         "`max_len` may be shorter than the max length of the original model, as "
                                         "it subtracts the number of special characters")
                    keep = np.minimum(length, limit)
                    if truncation.direction == "left":
                        first = first + (length - keep)
        rows = keep + (len(before) + len(after))
        padding = settings.padding
        width = int(rows.max())
        if padding is not None:
            width = padding.length if padding.length is not None else width
            multiple = padding.pad_to_multiple_of
            if multiple and width % multiple:
                width += multiple - width % multiple
            if int(rows.max()) > width:
                return None         # (rows longer than a fixed length stay ragged: the general path's output)
        elif int(rows.min()) != width:
            if not as_lists:
                return None         # (ragged rows are no array: the general path's error)
            values = flat.tolist()
            ids_lists = [before + values[start:start + count] + after
                         for start, count in zip(first.tolist(), keep.tolist())]
            return Rows(ids_lists, [[1] * len(row) for row in ids_lists],
                        [[1] * len(before) + [0] * (len(row) - len(before) - len(after)) + [1] * len(after)
                         for row in ids_lists], pipeline, settings)
        n = len(texts)
        pad_id = padding.pad_id if padding is not None else 0
        ids = np.full((n, width), pad_id, dtype=np.int64)
        special = np.ones((n, width), dtype=np.int64)
        columns = np.arange(width)
        start = (width - rows) if padding is not None and padding.direction == "left" else np.zeros(n, np.int64)
        attention = ((columns >= start[:, None]) & (columns < (start + rows)[:, None])).astype(np.int64)
        for position, token_id in enumerate(before):
            ids[np.arange(n), start + position] = token_id
        total = int(keep.sum())
        row_of = np.repeat(np.arange(n), keep)
        within = np.arange(total) - np.repeat(np.cumsum(keep) - keep, keep)
        column = start[row_of] + len(before) + within
        ids[row_of, column] = flat[first[row_of] + within]
        special[row_of, column] = 0
        for position, token_id in enumerate(after):
            ids[np.arange(n), start + len(before) + keep + position] = token_id
        if as_lists:
            return Rows(ids.tolist(), attention.tolist(), special.tolist(), pipeline, settings)
        return Rows(ids, attention, special, pipeline, settings)

    def post_process(self, encoding: Encoding, pair: Encoding | None = None,
                     add_special_tokens: bool = True) -> Encoding:
        if not isinstance(encoding, Encoding) or (pair is not None and not isinstance(pair, Encoding)):
            raise TypeError("post_process takes bytebpe.hf Encodings")
        return _post_process(self._pipeline, self._settings, encoding._copy(),
                             None if pair is None else pair._copy(), add_special_tokens)

    def num_special_tokens_to_add(self, is_pair: bool) -> int:
        return self._pipeline.n_added(bool(is_pair))

    # ---- decoding ----

    def decode(self, ids: Sequence[int], skip_special_tokens: bool = True) -> str:
        pipeline = self._pipeline
        if isinstance(ids, (str, bytes)):
            raise TypeError(f"decode takes a list of ids, got {type(ids).__name__}")
        if type(ids) is not list:
            ids = list(ids)
        if not (skip_special_tokens and not pipeline.special_ids.isdisjoint(ids)):
            try:    # (every id a token, none to skip: the core's decode, which checks each id)
                return pipeline.encoding.decode(ids)
            except (TypeError, ValueError, OverflowError):
                pass    # an id that is no token (HF drops it) or no id: the checks below say which
        strings = pipeline.strings
        kept = []
        for token_id in ids:
            if isinstance(token_id, bool) or not hasattr(token_id, "__index__"):
                raise TypeError(f"decode takes ints, got {type(token_id).__name__}")
            token_id = operator.index(token_id)    # (numpy's integers too, as HF takes them)
            if token_id < 0:
                raise OverflowError("can't convert negative int to unsigned")
            token = strings.get(token_id)
            if token is None:
                continue        # (HF drops ids that are no token)
            if skip_special_tokens and token in pipeline.special_contents:
                continue
            kept.append(token_id)
        return pipeline.encoding.decode(kept)

    def decode_batch(self, sequences: Sequence[Sequence[int]], skip_special_tokens: bool = True) -> list[str]:
        if isinstance(sequences, (str, bytes)) or not isinstance(sequences, Iterable):
            raise TypeError(f"decode_batch takes a list of lists of ids, got {type(sequences).__name__}")
        return [self.decode(ids, skip_special_tokens) for ids in sequences]

    # ---- the vocabulary ----

    def token_to_id(self, token: str) -> int | None:
        pipeline = self._pipeline
        found = pipeline.added_ids.get(token)
        return found if found is not None else pipeline.vocab.get(token)

    def id_to_token(self, id: int) -> str | None:
        return self._pipeline.strings.get(id)

    def get_vocab(self, with_added_tokens: bool = True) -> dict[str, int]:
        pipeline = self._pipeline
        vocab = dict(pipeline.vocab)
        if with_added_tokens:
            vocab.update(pipeline.added_ids)
        return vocab

    def get_vocab_size(self, with_added_tokens: bool = True) -> int:
        pipeline = self._pipeline
        if with_added_tokens:
            return len(pipeline.vocab.keys() | pipeline.added_ids.keys())
        return len(pipeline.vocab)

    def get_added_tokens_decoder(self) -> dict[int, AddedToken]:
        by_id = {entry["id"]: entry for entry in self._added_specs()}
        return {token_id: AddedToken._of(by_id[token_id]) for token_id in sorted(by_id)}

    def _added_specs(self) -> list[dict[str, Any]]:
        """The file's added tokens, one per id with the id HF gives it (the last entry of a content wins)."""
        pipeline = self._pipeline
        specs: dict[int, dict[str, Any]] = {}
        for entry in pipeline.part_spec("added_tokens") or []:
            token_id = pipeline.added_ids.get(entry.get("content"))
            if token_id is not None:
                specs[token_id] = dict(entry, id=token_id)
        return [specs[token_id] for token_id in sorted(specs)]

    def add_tokens(self, tokens: Sequence[str | AddedToken]) -> int:
        return self._add(tokens, special=False)

    def add_special_tokens(self, tokens: Sequence[str | AddedToken]) -> int:
        return self._add(tokens, special=True)

    def _add(self, tokens: Sequence[str | AddedToken], special: bool) -> int:
        """HF's AddedVocabulary::add_tokens: a token already added as it is counts as not added; one whose
        content is a vocabulary token keeps that id; any other gets the next free id."""
        if isinstance(tokens, (str, AddedToken)) or not isinstance(tokens, Iterable):
            raise TypeError("Input must be a List[Union[str, AddedToken]]")
        given = []
        for token in tokens:
            if isinstance(token, str):
                given.append(AddedToken(token, special=special))
            elif isinstance(token, AddedToken) or _looks_like_added_token(token):
                made = AddedToken(token.content, token.single_word, token.lstrip, token.rstrip, token.normalized,
                                  True if special else token.special)
                given.append(made)
            else:
                raise TypeError("Input must be a List[Union[str, AddedToken]]")
        pipeline = self._pipeline
        by_id = {entry["id"]: AddedToken._of(entry) for entry in self._added_specs()}
        ids = dict(pipeline.added_ids)
        size = len(pipeline.vocab)
        ignored = 0
        for token in given:
            if not token.content or token in by_id.values():
                ignored += 1
                continue
            token_id = ids.get(token.content, pipeline.vocab.get(token.content))
            if token_id is None:
                highest = max(ids.values(), default=None)
                token_id = size if highest is None or (highest < size and size) else highest + 1
            ids[token.content] = token_id
            by_id[token_id] = token
        if ignored == len(given):
            return 0
        spec = dict(pipeline.spec, added_tokens=[by_id[token_id]._spec(token_id) for token_id in sorted(by_id)])
        self._pipeline = self._new_pipeline(spec)
        return len(given) - ignored

    # ---- the parts, as objects transformers reads and sets ----

    def _part(self, key: str) -> Any:
        value = self._pipeline.part_spec(key)
        return None if value is None else Part(key, value)

    def _set_part(self, key: str, value: Any) -> None:
        spec = dict(self._pipeline.spec)
        spec[key] = _part_json(value, key)
        self._pipeline = self._new_pipeline(_checked_spec(spec, self._name))

    normalizer = property(lambda self: self._part("normalizer"), lambda self, v: self._set_part("normalizer", v))
    pre_tokenizer = property(lambda self: self._part("pre_tokenizer"),
                             lambda self, v: self._set_part("pre_tokenizer", v))
    post_processor = property(lambda self: self._part("post_processor"),
                              lambda self, v: self._set_part("post_processor", v))
    decoder = property(lambda self: self._part("decoder"), lambda self, v: self._set_part("decoder", v))
    model = property(lambda self: Part("model", self._pipeline.spec["model"]))


class Part:
    """One part of the file (its normalizer, pre-tokenizer, post-processor, decoder or model) as its JSON:
    what `tokenizers`' part objects give through `__getstate__`."""

    __slots__ = ("spec", "stage")

    def __init__(self, stage: str, spec: dict[str, Any]) -> None:
        self.stage, self.spec = stage, spec

    def __getstate__(self) -> bytes:
        return json.dumps(self.spec, ensure_ascii=False).encode("utf-8")

    def __repr__(self) -> str:
        return f"{self.spec.get('type', self.stage)}(...)"

    def __getattr__(self, name: str) -> Any:
        spec = object.__getattribute__(self, "spec")
        if name in spec:
            return spec[name]
        raise AttributeError(name)


def _part_json(value: Any, key: str) -> Any:
    """A part given as a `Part`, a `tokenizers` part object (its JSON from __getstate__), a dict, or None."""
    if value is None:
        return None
    if isinstance(value, Part):
        return copy.deepcopy(value.spec)
    if isinstance(value, dict):
        return copy.deepcopy(value)
    state = getattr(value, "__getstate__", None)
    if state is not None:
        try:
            raw = state()
            found = json.loads(raw if isinstance(raw, (str, bytes)) else json.dumps(raw))
        except (TypeError, ValueError):
            found = None
        if isinstance(found, dict):
            return found
    raise TypeError(f"{key} must be a tokenizers {key} object, its JSON as a dict, or None; got "
                    f"{type(value).__name__}")


def _parsed(text: str, name: str) -> tuple[dict[str, Any], CutMerges | None]:
    """The file's JSON object, its truncation and padding (which `_load_json` refuses) taken aside, and its
    merges where they were left in the text (`parse_tokenizer_json`)."""
    try:
        spec, cut = parse_tokenizer_json(text)
    except json.JSONDecodeError as error:
        raise TokenizerJsonError(f"{name}: not valid JSON: {error}") from None
    except RecursionError:
        return _load_json(text, name), None       # (its error)
    if not isinstance(spec, dict):
        return _load_json(text, name), None
    return spec, cut


def _looks_like_added_token(token: object) -> bool:
    """A `tokenizers.AddedToken` (or transformers' copy of it) without importing either."""
    return all(hasattr(token, name) for name in ("content", "single_word", "lstrip", "rstrip", "normalized",
                                                 "special"))


def _is_pair(item: Any, is_pretokenized: bool) -> bool:
    if not isinstance(item, (list, tuple)):
        return False
    if not is_pretokenized:
        if len(item) != 2 or not all(isinstance(part, str) for part in item):
            raise TypeError("each input of encode_batch is a str or a pair (str, str)")
        return True
    return len(item) == 2 and all(isinstance(part, (list, tuple)) for part in item)


class _NoStrings:
    """The strings of encode_batch_fast's tokens: none ("")."""

    def __getitem__(self, token_id: int) -> str:
        return ""


def _bare_run(ids: list[int]) -> TextRun:
    return TextRun(ids, _NoStrings(), lambda: ([(0, 0)] * len(ids), [None] * len(ids)))  # type: ignore[arg-type]


def _run(pipeline: _Pipeline, text: str, ids: list[int], as_text: bool, word: int | None) -> TextRun:
    matched = None
    if pipeline.stripping and not pipeline.stripping.isdisjoint(ids):
        def matched() -> list[str]:
            return pipeline.matched_strings(text, ids, as_text)
    return TextRun(ids, pipeline.strings, lambda: pipeline.offsets_and_words(text, ids, as_text), word, matched)


def _post_process(pipeline: _Pipeline, settings: _Settings, encoding: Encoding, pair: Encoding | None,
                  add_special_tokens: bool) -> Encoding:
    """HF's Tokenizer::post_process: truncate, then the post-processor (or the default merge), then pad."""
    truncation = settings.truncation
    if truncation is not None:
        n_added = pipeline.n_added(pair is not None)
        max_length = truncation.max_length
        if add_special_tokens and n_added > 0:
            max_length -= n_added
        if max_length >= 0:         # (HF's unsigned subtraction wraps: a negative limit cuts nothing)
            truncate_encodings(encoding, pair, truncation, max_length)
    processor = pipeline.processor
    if processor is not None:
        final = processor.process(encoding, pair, add_special_tokens)
    elif pair is None:
        final = encoding
    else:
        final = default_process([encoding, pair])[0]
    if settings.padding is not None:
        pad_encodings([final], settings.padding)
    return final


def _truncation_of(spec: Any) -> Truncation | None:
    if spec is None:
        return None
    if not isinstance(spec, dict):
        raise TokenizerJsonError(f"truncation must be an object or null, got {spec!r}")
    strategy = str(spec.get("strategy", "LongestFirst"))
    strategy = {"LongestFirst": "longest_first", "OnlyFirst": "only_first", "OnlySecond": "only_second"}.get(
        strategy, strategy)
    direction = str(spec.get("direction", "Right")).lower()
    try:
        return Truncation(spec.get("max_length", 512), spec.get("stride", 0), strategy, direction)
    except (TypeError, ValueError) as error:
        raise TokenizerJsonError(f"truncation: {error}") from None


def _padding_of(spec: Any) -> Padding | None:
    if spec is None:
        return None
    if not isinstance(spec, dict):
        raise TokenizerJsonError(f"padding must be an object or null, got {spec!r}")
    strategy = spec.get("strategy", "BatchLongest")
    length = strategy.get("Fixed") if isinstance(strategy, dict) else None
    try:
        return Padding(length, spec.get("pad_to_multiple_of"), spec.get("pad_id", 0), spec.get("pad_type_id", 0),
                       spec.get("pad_token", "[PAD]"), str(spec.get("direction", "Right")).lower())
    except (TypeError, ValueError) as error:
        raise TokenizerJsonError(f"padding: {error}") from None


def _truncation_json(truncation: Truncation) -> dict[str, Any]:
    return {"direction": truncation.direction.capitalize(), "max_length": truncation.max_length,
            "strategy": "".join(word.capitalize() for word in truncation.strategy.split("_")),
            "stride": truncation.stride}


def _padding_json(padding: Padding) -> dict[str, Any]:
    return {"strategy": "BatchLongest" if padding.length is None else {"Fixed": padding.length},
            "direction": padding.direction.capitalize(), "pad_to_multiple_of": padding.pad_to_multiple_of,
            "pad_id": padding.pad_id, "pad_type_id": padding.pad_type_id, "pad_token": padding.pad_token}
