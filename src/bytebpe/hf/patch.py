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

import inspect
import logging
import sys
import threading
from collections.abc import Iterator, Sequence
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
        # The pipeline bytebpe's tokenizer decodes by, None while the HF object has changed since: what a
        # DecodeStream checks at each step (bytebpe.hf.decode_stream).
        object.__setattr__(self, "_pipeline", None)
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
            object.__setattr__(self, "_pipeline", fast._pipeline)
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
        self._mark_changed()

    def add_tokens(self, tokens: Any) -> int:
        return self._change("add_tokens", tokens)

    def add_special_tokens(self, tokens: Any) -> int:
        return self._change("add_special_tokens", tokens)

    def _change(self, method: str, tokens: Any) -> int:
        added = int(getattr(self._hf, method)(tokens))
        self._mark_changed()
        return added

    def _mark_changed(self) -> None:
        object.__setattr__(self, "_pipeline", None)
        object.__setattr__(self, "_dirty", True)

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


_originals: dict[Any, Any] = {}


class _LazyEncodings(Sequence):  # type: ignore[type-arg]
    """The Encodings of a batch the shortcut encoded, made the first time one is asked for (BatchEncoding's
    `tokens()`, `word_ids()`, ...), with the pipeline and settings the batch was encoded with."""

    def __init__(self, backend: Tokenizer, texts: list[str], add_special_tokens: bool, rows: Any) -> None:
        self._made: list[Any] | None = None
        self._make = lambda: backend._encode_batch_with(rows.pipeline, rows.settings, texts, False,
                                                        add_special_tokens)
        self._length = len(texts)

    def _all(self) -> list[Any]:
        if self._made is None:
            self._made = self._make()
        return self._made

    def __len__(self) -> int:
        return self._length

    def __getitem__(self, index: Any) -> Any:
        return self._all()[index]

    def __iter__(self) -> Iterator[Any]:
        return iter(self._all())


def _shortcut(tok: Any, backend: AcceleratedBackend, arguments: dict[str, Any]) -> Any:
    """transformers' `_encode_plus` for a batch of single texts, from bytebpe's arrays (no Encoding made, no
    list of lists turned into an array): what the general path returns, or None where it does not apply
    (pairs, words, offsets, overflowing windows, token type ids, tensors other than numpy's)."""
    text, tensors = arguments["text"], arguments["return_tensors"]
    if (arguments["text_pair"] is not None or arguments["is_split_into_words"] or arguments["kwargs"]
            or arguments["return_overflowing_tokens"] or arguments["return_offsets_mapping"]
            or tensors not in (None, "np")):
        return None
    batched = isinstance(text, (list, tuple))
    texts = list(text) if batched else [text]
    if not texts or not all(type(item) is str for item in texts):
        return None
    names = tok.model_input_names
    type_ids = arguments["return_token_type_ids"]
    if (type_ids if type_ids is not None else "token_type_ids" in names):
        return None
    attention = arguments["return_attention_mask"]
    attention = attention if attention is not None else "attention_mask" in names
    tok.set_truncation_and_padding(
        padding_strategy=arguments["padding_strategy"], truncation_strategy=arguments["truncation_strategy"],
        max_length=arguments["max_length"], stride=arguments["stride"],
        pad_to_multiple_of=arguments["pad_to_multiple_of"], padding_side=arguments["padding_side"])
    split = arguments["split_special_tokens"]
    split = tok.split_special_tokens if split is None else split
    if backend.encode_special_tokens != split:
        backend.encode_special_tokens = split
    fast = backend._rebuild()
    add = arguments["add_special_tokens"]
    rows = fast._single_rows(texts, add, as_lists=tensors is None)
    if rows is None:
        return None
    data: dict[str, Any] = {"input_ids": rows.input_ids}
    if attention:
        data["attention_mask"] = rows.attention_mask
    if arguments["return_special_tokens_mask"]:
        data["special_tokens_mask"] = rows.special_tokens_mask
    if arguments["return_length"]:
        data["length"] = [len(row) for row in rows.input_ids]
    for ids in rows.input_ids:
        tok._eventual_warn_about_too_long_sequence(ids, arguments["max_length"], arguments["verbose"])
    from transformers.tokenization_utils_base import BatchEncoding

    encodings = _LazyEncodings(fast, texts, add, rows)
    if not batched and tensors is None:
        return BatchEncoding({key: value[0] if value and isinstance(value[0], list) else value
                              for key, value in data.items()}, encodings, n_sequences=1)
    return BatchEncoding(data, encodings, tensor_type=tensors, n_sequences=1)


_INHERITED = object()     # (what a replaced method was where the class only inherited it)


def _replace(cls: Any, name: str, method: Any) -> None:
    _originals[(cls, name)] = vars(cls).get(name, _INHERITED)
    setattr(cls, name, method)


def _plain_batch(token_ids: Any) -> bool:
    return type(token_ids) is list and bool(token_ids) and all(type(row) is list for row in token_ids)


def _decode_with_shortcut(original: Any) -> Any:
    def decode(self: Any, token_ids: Any, skip_special_tokens: bool = False, **kwargs: Any) -> Any:
        if isinstance(self.__dict__.get("_tokenizer"), AcceleratedBackend):
            if _plain_batch(token_ids):
                clean_up = kwargs.pop("clean_up_tokenization_spaces", None)
                return [self._decode(token_ids=row, skip_special_tokens=skip_special_tokens,
                                     clean_up_tokenization_spaces=clean_up, **kwargs) for row in token_ids]
            if type(token_ids) is list and (not token_ids or type(token_ids[0]) is int):
                return self._decode(token_ids=token_ids, skip_special_tokens=skip_special_tokens, **kwargs)
        return original(self, token_ids, skip_special_tokens, **kwargs)

    decode.__wrapped__ = original  # type: ignore[attr-defined]
    return decode


def _batch_decode_with_shortcut(original: Any) -> Any:
    def batch_decode(self: Any, sequences: Any, skip_special_tokens: bool = False,
                     clean_up_tokenization_spaces: bool | None = None, **kwargs: Any) -> Any:
        if isinstance(self.__dict__.get("_tokenizer"), AcceleratedBackend) and _plain_batch(sequences):
            return self.decode(sequences, skip_special_tokens=skip_special_tokens,
                               clean_up_tokenization_spaces=clean_up_tokenization_spaces, **kwargs)
        return original(self, sequences, skip_special_tokens, clean_up_tokenization_spaces, **kwargs)

    batch_decode.__wrapped__ = original  # type: ignore[attr-defined]
    return batch_decode


def _encode_plus_with_shortcut(original: Any) -> Any:
    signature = inspect.signature(original)

    def _encode_plus(self: Any, *args: Any, **kwargs: Any) -> Any:
        backend = self.__dict__.get("_tokenizer")
        if isinstance(backend, AcceleratedBackend):
            bound = signature.bind(self, *args, **kwargs)
            bound.apply_defaults()
            found = _shortcut(self, backend, bound.arguments)
            if found is not None:
                return found
        return original(self, *args, **kwargs)

    _encode_plus.__wrapped__ = original  # type: ignore[attr-defined]
    return _encode_plus


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
        if cls.__name__ != "TokenizersBackend":
            continue    # (the shortcuts follow transformers 5's _encode_plus and decode; 4's keep their own)
        _replace(cls, "_encode_plus", _encode_plus_with_shortcut(vars(cls)["_encode_plus"]))
        # (transformers' decode and batch_decode check every id in Python first, to_py_obj: on plain lists of
        # ints bytebpe's decode checks them itself)
        _replace(cls, "decode", _decode_with_shortcut(cls.decode))
        _replace(cls, "batch_decode", _batch_decode_with_shortcut(cls.batch_decode))
    _swap_decode_stream(to_bytebpe=True)


def unpatch_transformers() -> None:
    """Undo `patch_transformers` for tokenizers made from now on (those made before keep their backend)."""
    for key, original in list(_originals.items()):
        if isinstance(key, tuple):
            if original is _INHERITED:
                delattr(key[0], key[1])
            else:
                setattr(key[0], key[1], original)
        else:
            setattr(key, "__init__", original)  # noqa: B010
        del _originals[key]
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
