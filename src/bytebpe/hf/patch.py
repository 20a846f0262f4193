"""bytebpe under transformers: a fast tokenizer's `tokenizers.Tokenizer` backend replaced by one that encodes
and decodes with bytebpe, wherever bytebpe serves the file.

`accelerate(tok)` swaps `tok._tokenizer` (the `tokenizers.Tokenizer` that transformers' fast tokenizers call)
for an `AcceleratedBackend`: bytebpe's `Tokenizer` answers the calls that encode, decode, count and look up
tokens, and the HF object it wraps keeps everything else (its normalizer, pre-tokenizer, model and decoder
objects, which transformers reads and sets; training). Every change made through the backend (a part set,
tokens added) goes to the HF object, and bytebpe's tokenizer is made again from the HF object's JSON at the
next call if that JSON changed, so the two never differ. (A part object changed in place, as
`backend.pre_tokenizer.add_prefix_space = False`, is not seen: set the part instead. transformers does.)
Where bytebpe cannot give a text's offsets (a normalizer that moves characters, ...) the HF object gives
them. A file bytebpe cannot serve keeps HF's backend: said once, in a log line naming the file and the part.
`patch_transformers()` does `accelerate` for every fast tokenizer transformers makes from then on, and
puts `bytebpe.hf.DecodeStream` where `tokenizers.decoders.DecodeStream` was (HF's takes only its own
tokenizers; bytebpe's takes any), for the modules that import it from then on and those of transformers that
hold it already.
"""
from __future__ import annotations

import logging
import sys
import threading
from typing import Any

from ..file_formats import TokenizerJsonError
from .decode_stream import DecodeStream
from .tokenizer import Tokenizer

__all__ = ["AcceleratedBackend", "accelerate", "is_accelerated", "patch_transformers", "unpatch_transformers"]

logger = logging.getLogger("bytebpe.hf")

# The calls bytebpe answers; the rest go to the HF object. Those that change the tokenizer are in _CHANGES.
_ANSWERED = frozenset({
    "encode", "encode_batch", "encode_batch_fast", "decode", "decode_batch", "token_to_id", "id_to_token",
    "get_vocab", "get_vocab_size", "num_special_tokens_to_add", "post_process", "truncation", "padding",
    "enable_truncation", "no_truncation", "enable_padding", "no_padding", "encode_special_tokens"})
_CHANGES = ("add_tokens", "add_special_tokens")
_PART_NAMES = ("normalizer", "pre_tokenizer", "post_processor", "decoder", "model")


class AcceleratedBackend:
    """A `tokenizers.Tokenizer` whose encoding and decoding bytebpe does (see the module's docstring)."""

    def __init__(self, hf: Any) -> None:
        object.__setattr__(self, "_hf", hf)
        object.__setattr__(self, "_lock", threading.Lock())
        object.__setattr__(self, "_built_from", None)
        object.__setattr__(self, "_fast", None)
        object.__setattr__(self, "_as_text_twin", None)
        object.__setattr__(self, "_dirty", True)
        self._rebuild()                     # (TokenizerJsonError when bytebpe cannot serve the file)

    # ---- bytebpe's tokenizer, made again when the HF object's file changes ----

    def _rebuild(self) -> Tokenizer:
        if not self._dirty:
            return self._fast
        with self._lock:
            object.__setattr__(self, "_dirty", False)
            text = self._hf.to_str()
            fast = self._fast
            if text != self._built_from:
                made = Tokenizer.from_str(text)
                made._oracle = self._offsets_of
                made._pipeline.oracle = self._offsets_of
                if fast is not None:
                    made._shared_settings = fast._shared_settings
                    made._local = fast._local
                object.__setattr__(self, "_fast", made)
                object.__setattr__(self, "_built_from", text)
                object.__setattr__(self, "_as_text_twin", None)
                fast = made
            return fast

    def _offsets_of(self, text: str, special_as_text: bool) -> tuple[list[int], list[tuple[int, int]],
                                                                      list[int | None]]:
        """HF's ids, offsets and word ids of `text` alone (no post-processor's tokens, no truncation)."""
        hf = self._hf
        if special_as_text:
            twin = self._as_text_twin
            if twin is None:
                twin = type(hf).from_str(self._built_from)
                twin.encode_special_tokens = True
                object.__setattr__(self, "_as_text_twin", twin)
            hf = twin
        elif hf.encode_special_tokens or hf.truncation is not None or hf.padding is not None:
            hf = type(hf).from_str(self._built_from)
            hf.encode_special_tokens = False
        encoded = hf.encode(text, add_special_tokens=False)
        return encoded.ids, encoded.offsets, encoded.word_ids

    # ---- what bytebpe answers ----

    def __getattr__(self, name: str) -> Any:
        if name in _ANSWERED:
            return getattr(self._rebuild(), name)
        return getattr(self._hf, name)

    def __setattr__(self, name: str, value: Any) -> None:
        if name == "encode_special_tokens":
            self._rebuild().encode_special_tokens = value
            return
        setattr(self._hf, name, value)      # (a part: bytebpe's tokenizer is made again at the next call)
        object.__setattr__(self, "_dirty", True)

    def add_tokens(self, tokens: Any) -> int:
        return self._change("add_tokens", tokens)

    def add_special_tokens(self, tokens: Any) -> int:
        return self._change("add_special_tokens", tokens)

    def _change(self, method: str, tokens: Any) -> int:
        added = int(getattr(self._hf, method)(tokens))
        object.__setattr__(self, "_dirty", True)
        return added

    # The HF object's settings are bytebpe's: transformers reads them back to decide what to set.
    def __repr__(self) -> str:
        return f"AcceleratedBackend({self._hf!r})"

    def __getstate__(self) -> dict[str, Any]:
        return {"hf": self._hf, "settings": self._rebuild()._settings}

    def __setstate__(self, state: dict[str, Any]) -> None:
        AcceleratedBackend.__init__(self, state["hf"])
        self._fast._settings = state["settings"]

    def __deepcopy__(self, memo: dict[int, Any]) -> AcceleratedBackend:
        import copy

        twin = AcceleratedBackend(copy.deepcopy(self._hf, memo))
        twin._fast._settings = self._rebuild()._settings
        return twin


def is_accelerated(tokenizer: Any) -> bool:
    """Whether `tokenizer` (a transformers tokenizer, or its backend) runs on bytebpe."""
    backend = getattr(tokenizer, "_tokenizer", tokenizer)
    return isinstance(backend, AcceleratedBackend)


def accelerate(tokenizer: Any) -> bool:
    """Run the transformers fast tokenizer `tokenizer` on bytebpe where bytebpe serves its file (True), else
    leave it on HF's backend and say why in one log line (False)."""
    backend = getattr(tokenizer, "_tokenizer", None)
    if isinstance(backend, AcceleratedBackend):
        return True
    if backend is None or not hasattr(backend, "to_str"):
        raise TypeError(f"accelerate takes a transformers fast tokenizer, got {type(tokenizer).__name__}")
    name = getattr(tokenizer, "name_or_path", "") or type(tokenizer).__name__
    try:
        accelerated = AcceleratedBackend(backend)
    except (TokenizerJsonError, NotImplementedError) as refused:
        logger.info("bytebpe.hf: %s stays on HF tokenizers: %s", name, refused)
        return False
    tokenizer._tokenizer = accelerated
    return True


_originals: dict[type, Any] = {}


def _backend_classes() -> list[Any]:
    classes: list[Any] = []
    try:    # transformers 5
        from transformers.tokenization_utils_tokenizers import TokenizersBackend
        classes.append(TokenizersBackend)
    except ImportError:
        pass
    try:    # transformers 4
        from transformers.tokenization_utils_fast import PreTrainedTokenizerFast  # type: ignore[import-not-found]
        if PreTrainedTokenizerFast not in classes:
            classes.append(PreTrainedTokenizerFast)
    except ImportError:
        pass
    if not classes:
        raise ImportError("patch_transformers needs transformers (4.57+ or 5.x) installed")
    return classes


def patch_transformers() -> None:
    """From now on every transformers fast tokenizer made runs on bytebpe where bytebpe serves its file."""
    for cls in _backend_classes():
        if cls in _originals:
            continue
        original_init = vars(cls)["__init__"]

        def __init__(self: Any, *args: Any, _original: Any = original_init, **kwargs: Any) -> None:
            _original(self, *args, **kwargs)
            accelerate(self)

        setattr(cls, "__init__", __init__)   # noqa: B010  (mypy refuses the assignment to a class's __init__)
        _originals[cls] = original_init
    _swap_decode_stream(to_bytebpe=True)


def unpatch_transformers() -> None:
    """Undo `patch_transformers` for tokenizers made from now on (those made before keep their backend)."""
    for cls, original_init in list(_originals.items()):
        setattr(cls, "__init__", original_init)  # noqa: B010
        del _originals[cls]
    _swap_decode_stream(to_bytebpe=False)


_hf_decode_stream: list[Any] = []


def _swap_decode_stream(to_bytebpe: bool) -> None:
    try:
        import tokenizers.decoders
    except ImportError:
        return
    if not _hf_decode_stream:
        if tokenizers.decoders.DecodeStream is DecodeStream:
            return
        _hf_decode_stream.append(tokenizers.decoders.DecodeStream)
    old, new = (_hf_decode_stream[0], DecodeStream) if to_bytebpe else (DecodeStream, _hf_decode_stream[0])
    setattr(tokenizers.decoders, "DecodeStream", new)  # noqa: B010  (a class of another type to mypy)
    for name, module in list(sys.modules.items()):
        if name.startswith("transformers") and getattr(module, "DecodeStream", None) is old:
            setattr(module, "DecodeStream", new)  # noqa: B010
