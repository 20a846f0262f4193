"""A tokenizer.json's normalizer: HF `tokenizers`' normalizers as one table of variants.

Each variant maps a text to its normalized text as HF's does (tokenizers/src/normalizers/), is read from its
JSON object through `NORMALIZERS` and written back by `to_json`. The character predicates HF takes from Rust
(whitespace, marks, control characters) are `chars.py`'s.
"""
from __future__ import annotations

from typing import Any

from ..file_formats import TokenizerJsonError
from . import chars
from .fields import field, kind_of
from .patterns import compiled_pattern, matches

__all__ = ["NORMALIZERS", "Normalizer", "normalizer_from_json"]


class Normalizer:
    type_name = ""

    def __call__(self, text: str) -> str:
        raise NotImplementedError

    def to_json(self) -> dict[str, Any]:
        return {"type": self.type_name}

    def keeps_the_start(self) -> bool:
        """Whether the normalized text's first character still comes from the text's first one (nothing
        taken from the start): Metaspace's "first" prepend scheme asks where the text starts."""
        return True


class UnicodeForm(Normalizer):
    def __init__(self, spec: dict[str, Any]) -> None:
        self.type_name = spec["type"]

    def __call__(self, text: str) -> str:
        return chars.normalize(self.type_name, text)


class Lowercase(Normalizer):
    type_name = "Lowercase"

    def __init__(self, spec: dict[str, Any]) -> None:
        pass

    def __call__(self, text: str) -> str:
        return chars.lowercase(text)


class Prepend(Normalizer):
    type_name = "Prepend"

    def __init__(self, spec: dict[str, Any]) -> None:
        self.prepend = field(spec, "prepend", str, "normalizer Prepend")

    def __call__(self, text: str) -> str:
        return self.prepend + text if text else text

    def to_json(self) -> dict[str, Any]:
        return {"type": "Prepend", "prepend": self.prepend}


class Replace(Normalizer):
    type_name = "Replace"

    def __init__(self, spec: dict[str, Any]) -> None:
        self.pattern = spec.get("pattern")
        self.content = field(spec, "content", str, "normalizer Replace")
        self._compiled = compiled_pattern(self.pattern, "normalizer Replace")
        self._literal = self.pattern.get("String") if isinstance(self.pattern, dict) else None
        self._anchored = self._literal is None and self.pattern["Regex"].startswith("\\A")

    def __call__(self, text: str) -> str:
        if self._literal:
            return text.replace(self._literal, self.content)
        if not self.content:
            # Deleting: an empty match deletes nothing, whichever way an engine steps over it (SentencePiece
            # models' remove_extra_whitespaces is such a pattern, sentencepiece_model.py).
            return self._compiled.sub("", text, concurrent=False)
        pieces, last = [], 0
        for start, end in matches(self._compiled, text, "normalizer Replace", self._anchored):
            pieces += [text[last:start], self.content]
            last = end
        return "".join(pieces) + text[last:]

    def to_json(self) -> dict[str, Any]:
        return {"type": "Replace", "pattern": dict(self.pattern), "content": self.content}

    def keeps_the_start(self) -> bool:
        return False


class Strip(Normalizer):
    """Leading and/or trailing whitespace (Rust's `char::is_whitespace`) removed."""

    type_name = "Strip"

    def __init__(self, spec: dict[str, Any]) -> None:
        self.left = field(spec, "strip_left", bool, "normalizer Strip", True)
        self.right = field(spec, "strip_right", bool, "normalizer Strip", True)

    def __call__(self, text: str) -> str:
        return chars.strip(text, self.left, self.right)

    def to_json(self) -> dict[str, Any]:
        return {"type": "Strip", "strip_left": self.left, "strip_right": self.right}

    def keeps_the_start(self) -> bool:
        return not self.left


class StripAccents(Normalizer):
    """Combining marks removed (no decomposition first: HF files put NFD before it)."""

    type_name = "StripAccents"

    def __init__(self, spec: dict[str, Any]) -> None:
        pass

    def __call__(self, text: str) -> str:
        return chars.strip_accents(text)

    def keeps_the_start(self) -> bool:
        return False


class BertNormalizer(Normalizer):
    type_name = "BertNormalizer"

    def __init__(self, spec: dict[str, Any]) -> None:
        component = "normalizer BertNormalizer"
        self.clean_text = field(spec, "clean_text", bool, component, True)
        self.handle_chinese_chars = field(spec, "handle_chinese_chars", bool, component, True)
        self.strip_accents = field(spec, "strip_accents", (bool, type(None)), component, None)
        self.lowercase = field(spec, "lowercase", bool, component, True)

    def __call__(self, text: str) -> str:
        return chars.bert_normalize(text, self.clean_text, self.handle_chinese_chars, self.strip_accents,
                                    self.lowercase)

    def to_json(self) -> dict[str, Any]:
        return {"type": "BertNormalizer", "clean_text": self.clean_text,
                "handle_chinese_chars": self.handle_chinese_chars, "strip_accents": self.strip_accents,
                "lowercase": self.lowercase}

    def keeps_the_start(self) -> bool:
        return False


class Sequence(Normalizer):
    type_name = "Sequence"

    def __init__(self, spec: dict[str, Any]) -> None:
        self.normalizers = [normalizer_from_json(inner)
                            for inner in field(spec, "normalizers", list, "normalizer Sequence")]

    def __call__(self, text: str) -> str:
        for normalizer in self.normalizers:
            text = normalizer(text)
        return text

    def to_json(self) -> dict[str, Any]:
        return {"type": "Sequence", "normalizers": [normalizer.to_json() for normalizer in self.normalizers]}

    def keeps_the_start(self) -> bool:
        return all(normalizer.keeps_the_start() for normalizer in self.normalizers)


NORMALIZERS: dict[str, type[Normalizer]] = {
    "NFC": UnicodeForm, "NFD": UnicodeForm, "NFKC": UnicodeForm, "NFKD": UnicodeForm,
    **{cls.type_name: cls for cls in (Lowercase, Prepend, Replace, Strip, StripAccents, BertNormalizer, Sequence)}}
# HF has these too; bytebpe refuses them, naming what to use.
_REFUSED = {
    "Precompiled": "SentencePiece's precompiled character map (load the model's tokenizer.model with "
                   "bytebpe.load, or use HF tokenizers)",
    "Nmt": "SentencePiece's NMT normalizer",
    "ByteLevel": "the byte-level normalizer (bytebpe maps bytes in the pre-tokenizer's ByteLevel)",
}


def normalizer_from_json(spec: Any) -> Normalizer | None:
    """The normalizer a tokenizer.json's "normalizer" describes; None for null (or an empty Sequence)."""
    if spec is None:
        return None
    kind = kind_of(spec, "normalizer")
    variant = NORMALIZERS.get(kind)
    if variant is None:
        if kind in _REFUSED:
            raise TokenizerJsonError(f"normalizer {kind!r} ({_REFUSED[kind]}) is not supported")
        raise TokenizerJsonError(f"normalizer {kind[:40]!r} is not supported (supported: {', '.join(NORMALIZERS)})")
    normalizer = variant(spec)
    if isinstance(normalizer, Sequence) and not normalizer.normalizers:
        return None
    return normalizer


def unicode_form(normalizer: Normalizer | None) -> str | None:
    """"NFC" (etc.) when the normalizer is only that Unicode normal form, else None."""
    return normalizer.type_name if isinstance(normalizer, UnicodeForm) else None

