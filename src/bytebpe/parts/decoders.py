"""A tokenizer.json's decoder: HF `tokenizers`' decoders as one table of variants, each with one job.

HF decodes ids by turning each id into its token string (an added token's content, or the model's vocabulary
entry) and handing the list to the decoder, whose `decode_chain` maps a list of strings to a list of strings;
the text is their concatenation (tokenizers/src/decoders/). Each variant here is the same function over
Python strs, read from its JSON by `decoder_from_json` through `DECODERS`, and written back by `to_json`.

The byte-level decoder alone is not run from here on ids: for a file whose decoder is just ByteLevel the
encoding joins the tokens' bytes in the compiled core and decodes them as UTF-8 with replacement, which is
the same text (`needs_token_strings` says when the chain must run instead).
"""
from __future__ import annotations

import functools
import re
from collections.abc import Callable
from typing import Any

from ..file_formats import TokenizerJsonError
from ..hf_json import _byte_to_char
from .patterns import compiled_pattern
from .pre_tokenizers import metaspace_options

__all__ = ["DECODERS", "Decoder", "JoinedDecoder", "byte_level_bytes", "decoder_from_json", "joined_decoder",
           "needs_token_strings"]


def _text(spec: dict[str, Any], key: str, component: str, default: Any = None) -> Any:
    value = spec.get(key, default)
    if not isinstance(value, str):
        raise TokenizerJsonError(f"decoder {component}: {key!r} must be a string, got {value!r}")
    return value


def _char(spec: dict[str, Any], key: str, component: str) -> str:
    value = _text(spec, key, component)
    if len(value) != 1:
        raise TokenizerJsonError(f"decoder {component}: {key!r} must be one character, got {value!r}")
    return value


def _count(spec: dict[str, Any], key: str, component: str) -> int:
    value = spec.get(key, 0)
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise TokenizerJsonError(f"decoder {component}: {key!r} must be a count (an integer >= 0), got {value!r}")
    return value


class Decoder:
    """One variant: `decode_chain` as HF's, `to_json` the file's object."""

    type_name = ""

    def decode_chain(self, tokens: list[str]) -> list[str]:
        raise NotImplementedError

    def to_json(self) -> dict[str, Any]:
        raise NotImplementedError

    def decode(self, tokens: list[str]) -> str:
        return "".join(self.decode_chain(tokens))


class ByteLevel(Decoder):
    """Each token whose characters are all GPT-2 byte characters is those bytes, any other its UTF-8; then
    the whole is UTF-8 with replacement, as one string."""

    type_name = "ByteLevel"

    def __init__(self, spec: dict[str, Any]) -> None:
        self.spec = dict(spec)

    def decode_chain(self, tokens: list[str]) -> list[str]:
        return [b"".join(map(byte_level_bytes, tokens)).decode("utf-8", "replace")]

    def to_json(self) -> dict[str, Any]:
        return dict(self.spec)


_CHAR_BYTES = {char: byte for byte, char in enumerate(_byte_to_char())}


def byte_level_bytes(token: str) -> bytes:
    """ByteLevel's bytes of one token: the bytes its characters stand for when all are GPT-2 byte
    characters, else its UTF-8."""
    char_bytes = _CHAR_BYTES
    if all(char in char_bytes for char in token):
        return bytes(char_bytes[char] for char in token)
    return token.encode("utf-8", "surrogatepass")


class Replace(Decoder):
    """Every match of the pattern (a string, or an Oniguruma regex) in each token replaced by `content`."""

    type_name = "Replace"

    def __init__(self, spec: dict[str, Any]) -> None:
        pattern = spec.get("pattern")
        if not (isinstance(pattern, dict) and len(pattern) == 1 and isinstance(next(iter(pattern.values())), str)
                and next(iter(pattern)) in ("String", "Regex")):
            raise TokenizerJsonError(f"decoder Replace: pattern must be {{'String': ...}} or {{'Regex': ...}}, "
                               f"got {pattern!r}")
        self.pattern = pattern
        self.content = _text(spec, "content", "Replace")
        (kind, source), = pattern.items()
        if kind == "String":
            self._replace: Callable[[str], str] = functools.partial(_replace_string, source, self.content) \
                if source else (lambda token: token)
        else:
            compiled = compiled_pattern(pattern, "decoder Replace")
            content = self.content
            self._replace = lambda token: compiled.sub(lambda _: content, token)

    def decode_chain(self, tokens: list[str]) -> list[str]:
        return [self._replace(token) for token in tokens]

    def to_json(self) -> dict[str, Any]:
        return {"type": "Replace", "pattern": dict(self.pattern), "content": self.content}


def _replace_string(old: str, new: str, token: str) -> str:
    return token.replace(old, new)


_BYTE_TOKEN = re.compile(r"<0x([0-9A-Fa-f]{2})>")


class ByteFallback(Decoder):
    """Runs of tokens like ``<0x41>`` become the text of their bytes; a run that is not valid UTF-8 becomes
    one U+FFFD per byte (not per invalid sequence, as Python's "replace" would give)."""

    type_name = "ByteFallback"

    def __init__(self, spec: dict[str, Any]) -> None:
        pass

    def decode_chain(self, tokens: list[str]) -> list[str]:
        out: list[str] = []
        run = bytearray()

        def flush() -> None:
            try:
                out.append(run.decode("utf-8"))
            except UnicodeDecodeError:
                out.extend("\ufffd" * len(run))
            run.clear()

        for token in tokens:
            # Rust's check: six bytes of UTF-8, "<0x" .. ">", two hex digits (either case) between.
            if len(token) == 6 and (found := _BYTE_TOKEN.fullmatch(token)) is not None:
                run.append(int(found.group(1), 16))
                continue
            if run:
                flush()
            out.append(token)
        if run:
            flush()
        return out

    def to_json(self) -> dict[str, Any]:
        return {"type": "ByteFallback"}


class Fuse(Decoder):
    """All the tokens as one string."""

    type_name = "Fuse"

    def __init__(self, spec: dict[str, Any]) -> None:
        pass

    def decode_chain(self, tokens: list[str]) -> list[str]:
        return ["".join(tokens)]

    def to_json(self) -> dict[str, Any]:
        return {"type": "Fuse"}


class Strip(Decoder):
    """Up to `start` leading and `stop` trailing `content` characters removed from each token."""

    type_name = "Strip"

    def __init__(self, spec: dict[str, Any]) -> None:
        self.content = _char(spec, "content", "Strip")
        self.start = _count(spec, "start", "Strip")
        self.stop = _count(spec, "stop", "Strip")

    def decode_chain(self, tokens: list[str]) -> list[str]:
        return [self._strip(token) for token in tokens]

    def _strip(self, token: str) -> str:
        start = 0
        while start < min(self.start, len(token)) and token[start] == self.content:
            start += 1
        stop = len(token)
        # HF counts the trailing ones from the end of the whole token, whatever the leading cut took.
        for i in range(min(self.stop, len(token))):
            if token[len(token) - i - 1] != self.content:
                break
            stop = len(token) - i - 1
        return token[start:stop] if start <= stop else ""

    def to_json(self) -> dict[str, Any]:
        return {"type": "Strip", "content": self.content, "start": self.start, "stop": self.stop}


class Metaspace(Decoder):
    """The replacement character back to a space; in the first token it is dropped instead, unless the
    prepend scheme is "never"."""

    type_name = "Metaspace"

    def __init__(self, spec: dict[str, Any]) -> None:
        self.replacement, self.prepend_scheme, self.split = metaspace_options(spec, "decoder Metaspace")

    def decode_chain(self, tokens: list[str]) -> list[str]:
        out = [token.replace(self.replacement, " ") for token in tokens]
        if out and self.prepend_scheme != "never":
            out[0] = tokens[0].replace(self.replacement, "")
        return out

    def to_json(self) -> dict[str, Any]:
        return {"type": "Metaspace", "replacement": self.replacement, "prepend_scheme": self.prepend_scheme,
                "split": self.split}


class BPEDecoder(Decoder):
    """The end-of-word `suffix` becomes a space in every token but the last, where it is dropped."""

    type_name = "BPEDecoder"

    def __init__(self, spec: dict[str, Any]) -> None:
        self.suffix = _text(spec, "suffix", "BPEDecoder", "</w>")

    def decode_chain(self, tokens: list[str]) -> list[str]:
        last = len(tokens) - 1
        return [token.replace(self.suffix, "" if i == last else " ") if self.suffix else token
                for i, token in enumerate(tokens)]

    def to_json(self) -> dict[str, Any]:
        return {"type": "BPEDecoder", "suffix": self.suffix}


class Sequence(Decoder):
    """Each decoder's chain on the previous one's output."""

    type_name = "Sequence"

    def __init__(self, spec: dict[str, Any]) -> None:
        inner = spec.get("decoders")
        if not isinstance(inner, list):
            raise TokenizerJsonError(f"decoder Sequence: 'decoders' must be a list, got {inner!r}")
        self.decoders = [decoder_from_json(item) for item in inner]

    def decode_chain(self, tokens: list[str]) -> list[str]:
        for decoder in self.decoders:
            tokens = decoder.decode_chain(tokens)
        return tokens

    def to_json(self) -> dict[str, Any]:
        return {"type": "Sequence", "decoders": [decoder.to_json() for decoder in self.decoders]}


class JoinWithSpaces(Decoder):
    """No decoder in the file: HF joins the token strings with spaces."""

    type_name = ""

    def decode_chain(self, tokens: list[str]) -> list[str]:
        return [" ".join(tokens)]

    def to_json(self) -> Any:
        return None


# Every variant bytebpe has, by the "type" the file names; the others HF has are refused naming what they
# belong to.
DECODERS: dict[str, type[Decoder]] = {cls.type_name: cls for cls in (
    ByteLevel, Replace, ByteFallback, Fuse, Strip, Metaspace, BPEDecoder, Sequence)}
_OTHER_MODELS = {"WordPiece": "a WordPiece model's", "CTC": "a CTC (speech) model's"}


def decoder_from_json(spec: Any) -> Decoder:
    """The decoder a tokenizer.json's "decoder" object describes (null: `JoinWithSpaces`)."""
    if spec is None:
        return JoinWithSpaces()
    if not isinstance(spec, dict):
        raise TokenizerJsonError(f"decoder must be an object or null, got {type(spec).__name__}")
    kind = spec.get("type")
    variant = DECODERS.get(kind) if isinstance(kind, str) else None
    if variant is None:
        if kind in _OTHER_MODELS:
            raise TokenizerJsonError(f"decoder {kind!r} is {_OTHER_MODELS[kind]} decoder: bytebpe serves BPE tokenizers "
                               "(use HF tokenizers for this file)")
        raise TokenizerJsonError(f"decoder {str(kind)[:40]!r} is not supported (supported: {', '.join(DECODERS)})")
    return variant(spec)


def needs_token_strings(decoder: Decoder) -> bool:
    """Whether decoding must run the chain over token strings: all but ByteLevel alone, whose text the core's
    byte join gives (see the module's docstring)."""
    return not isinstance(decoder, ByteLevel)


# Stand-ins in the joined text of `joined_decoder`: a byte token's byte (U+F0000 + byte), and the break of a
# run of byte tokens by a token whose string maps to nothing (U+F0100); in Unicode's private plane 15.
_BYTE_MARK = 0xF0000
_RUN_BREAK = chr(0xF0100)
_MARKS = re.compile("[\U000F0000-\U000F00FF]+")
_ANY_MARK = re.compile("[\U000F0000-\U000F0100]")
_MARK_TO_LATIN1 = {_BYTE_MARK + byte: byte for byte in range(256)}


def _flatten(decoder: Decoder) -> list[Decoder]:
    if isinstance(decoder, Sequence):
        return [step for inner in decoder.decoders for step in _flatten(inner)]
    return [decoder]


def joined_decoder(decoder: Decoder, strings: dict[int, str]) -> JoinedDecoder | None:
    """Decoding by a table, for a chain of the shape per-token steps (Replace, Strip), then ByteFallback or
    not, then Fuse, then any steps on the one fused string (Llama 2's, Mistral's, Phi-3's): each id's string
    is mapped once, here, and a decode joins the mapped strings in C -- the chain's text exactly, since every
    step before Fuse maps each token alone. A byte token joins as a stand-in character, and each run of
    them is then decoded as ByteFallback decodes it (a token mapping to "" breaks a run there, as in HF).
    `strings`: id -> token string. None for other chains, and where a token's string holds a stand-in."""
    steps = _flatten(decoder)
    fuse = next((i for i, step in enumerate(steps) if isinstance(step, Fuse)), None)
    if fuse is None:
        return None
    before, after = steps[:fuse], steps[fuse + 1:]
    byte_fallback = bool(before) and isinstance(before[-1], ByteFallback)
    per_token = before[:-1] if byte_fallback else before
    if not all(isinstance(step, (Replace, Strip)) for step in per_token):
        return None
    tokens = list(strings.values())
    for step in per_token:      # (each maps every token alone: one call over all of them)
        tokens = step.decode_chain(tokens)
    if _ANY_MARK.search("".join(tokens)):
        return None
    mapped = dict(zip(strings, tokens))
    if byte_fallback:
        for token_id, token in mapped.items():
            if len(token) == 6 and (found := _BYTE_TOKEN.fullmatch(token)) is not None:
                mapped[token_id] = chr(_BYTE_MARK + int(found.group(1), 16))
            elif not token:
                mapped[token_id] = _RUN_BREAK
    return JoinedDecoder(mapped, byte_fallback, after)


class JoinedDecoder:
    """`joined_decoder`'s table: `mapped` (id -> its string after the per-token steps; a byte token's as its
    stand-in character, U+F0000 + its byte, and with ByteFallback a token of no text as U+F0100, which
    breaks a run of them), whether runs of byte tokens decode as ByteFallback's, and the steps on the fused
    string (`_decode_streams.StreamTokens` reads the same table)."""

    def __init__(self, mapped: dict[int, str], byte_fallback: bool, after: list[Decoder]) -> None:
        self.mapped = mapped
        self.byte_fallback = byte_fallback
        self.after = after
        self._lookup = mapped.__getitem__
        self._texts: dict[str, str] = {}    # a run's stand-ins -> its text (the same characters' bytes recur)

    def _run_text(self, found: re.Match[str]) -> str:
        marks = found.group()
        texts = self._texts
        text = texts.get(marks)
        if text is None:
            run = marks.translate(_MARK_TO_LATIN1).encode("latin-1")
            try:
                text = run.decode("utf-8")
            except UnicodeDecodeError:
                text = "\ufffd" * len(run)
            if len(texts) >= 1 << 16:      # (bounded, whatever the ids are)
                texts.clear()
            texts[marks] = text
        return text

    def __call__(self, ids: list[int]) -> str:
        text = "".join(map(self._lookup, ids))
        if self.byte_fallback and _ANY_MARK.search(text):
            text = _MARKS.sub(self._run_text, text).replace(_RUN_BREAK, "")
        for step in self.after:
            text = "".join(step.decode_chain([text]))
        return text

    def strips(self) -> list[tuple[str, int, int]] | None:
        """The steps on the fused string as (content, start, stop), where all are Strips; else None."""
        if not all(isinstance(step, Strip) for step in self.after):
            return None
        return [(step.content, step.start, step.stop) for step in self.after if isinstance(step, Strip)]
