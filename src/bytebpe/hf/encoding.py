"""`tokenizers.Encoding`'s surface: one encoded input (a sequence or a pair) with its columns and mappings.

Each column equals HF's for the same file and call. An Encoding is a list of *parts*: a slice of one *run*
(the tokens of one encoded text, of a post-processor's special tokens, or of padding) with the type id the
post-processor gave it and the shift its offsets got when merged. The ids are read at once; offsets, token
strings and word ids are computed per run the first time a caller asks, so that the calls transformers
makes for ids and masks only (most of them) never pay for offsets. Truncation, merging and padding move
parts, exactly as HF's `Encoding` moves its columns (tokenizers/src/tokenizer/encoding.rs): which sequence
ranges survive, which type ids an overflowing piece keeps, are HF's, quirks included.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

__all__ = ["Encoding", "FixedRun", "TextRun"]


class TextRun:
    """The tokens of one encoded text: `ids` at once, token strings from `strings`, offsets and word ids
    from `columns()` when first asked; `word` fixes every token's word (a pre-tokenized input's index)."""

    __slots__ = ("_columns", "_computed", "_matched", "_strings", "ids", "word")

    special = 0
    attention = 1

    def __init__(self, ids: list[int], strings: Mapping[int, str],
                 columns: Callable[[], tuple[list[tuple[int, int]], list[int | None]]],
                 word: int | None = None, matched: Callable[[], list[str]] | None = None) -> None:
        self.ids = ids
        self._strings = strings
        # Where an added token's string is the text it was matched on (lstrip/rstrip took whitespace with
        # it): the call giving each position's string, replaced by the list once made.
        self._matched: Callable[[], list[str]] | list[str] | None = matched
        self._columns: Callable[[], tuple[list[tuple[int, int]], list[int | None]]] | None = columns
        self._computed: tuple[list[tuple[int, int]], list[int | None]] | None = None
        self.word = word

    def tokens(self, start: int, stop: int) -> list[str]:
        matched = self._matched
        if matched is None:
            strings = self._strings
            return [strings[token_id] for token_id in self.ids[start:stop]]
        if callable(matched):
            matched = self._matched = matched()
        return matched[start:stop]

    def computed(self) -> tuple[list[tuple[int, int]], list[int | None]]:
        if self._computed is None:
            assert self._columns is not None
            offsets, words = self._columns()
            if self.word is not None:
                words = [self.word] * len(self.ids)
            self._computed = (offsets, words)
            self._columns = None    # (the text and pipeline it held can go)
        return self._computed


class FixedRun:
    """Tokens that come from no character: a post-processor's special tokens (special 1, attended) or
    padding (special 1, not attended). Offsets (0, 0), no word."""

    __slots__ = ("attention", "ids", "strings")

    special = 1

    def __init__(self, ids: list[int], strings: list[str], attention: int = 1) -> None:
        self.ids, self.strings, self.attention = ids, strings, attention

    def tokens(self, start: int, stop: int) -> list[str]:
        return self.strings[start:stop]

    def computed(self) -> tuple[list[tuple[int, int]], list[int | None]]:
        n = len(self.ids)
        return [(0, 0)] * n, [None] * n


Run = TextRun | FixedRun
# (run, start, stop, type id, offset shift)
Part = tuple[Run, int, int, int, int]


class Encoding:
    """The output of `bytebpe.hf.Tokenizer.encode`: `tokenizers.Encoding`'s properties and methods."""

    __slots__ = ("_ids", "_overflowing", "_parts", "_ranges")

    def __init__(self, parts: list[Part] | None = None, ranges: dict[int, tuple[int, int]] | None = None,
                 overflowing: list[Encoding] | None = None) -> None:
        self._parts: list[Part] = parts if parts is not None else []
        self._ranges: dict[int, tuple[int, int]] = ranges if ranges is not None else {}
        self._overflowing: list[Encoding] = overflowing if overflowing is not None else []
        self._ids: list[int] | None = None

    @classmethod
    def of_run(cls, run: Run, type_id: int = 0) -> Encoding:
        return cls([(run, 0, len(run.ids), type_id, 0)] if run.ids else [])

    def _copy(self) -> Encoding:
        return Encoding(list(self._parts), dict(self._ranges), [o._copy() for o in self._overflowing])

    def __deepcopy__(self, memo: dict[int, Any]) -> Encoding:
        return self._copy()     # (runs are never changed once made: sharing them is copying them)

    def __copy__(self) -> Encoding:
        return self._copy()

    # ---- columns ----

    @property
    def ids(self) -> list[int]:
        ids = self._ids
        if ids is None:
            parts = self._parts
            if len(parts) == 1 and parts[0][1] == 0 and parts[0][2] == len(parts[0][0].ids):
                ids = list(parts[0][0].ids)
            else:
                ids = []
                for run, start, stop, _, _ in parts:
                    ids += run.ids[start:stop]
            self._ids = ids
        return list(ids)

    def __len__(self) -> int:
        return sum(stop - start for _, start, stop, _, _ in self._parts)

    @property
    def type_ids(self) -> list[int]:
        out: list[int] = []
        for _, start, stop, type_id, _ in self._parts:
            out += [type_id] * (stop - start)
        return out

    @property
    def attention_mask(self) -> list[int]:
        out: list[int] = []
        for run, start, stop, _, _ in self._parts:
            out += [run.attention] * (stop - start)
        return out

    @property
    def special_tokens_mask(self) -> list[int]:
        out: list[int] = []
        for run, start, stop, _, _ in self._parts:
            out += [run.special] * (stop - start)
        return out

    @property
    def tokens(self) -> list[str]:
        out: list[str] = []
        for run, start, stop, _, _ in self._parts:
            out += run.tokens(start, stop)
        return out

    @property
    def offsets(self) -> list[tuple[int, int]]:
        out: list[tuple[int, int]] = []
        for run, start, stop, _, shift in self._parts:
            spans = run.computed()[0][start:stop]
            out += [(a + shift, b + shift) for a, b in spans] if shift else spans
        return out

    @property
    def word_ids(self) -> list[int | None]:
        out: list[int | None] = []
        for run, start, stop, _, _ in self._parts:
            out += run.computed()[1][start:stop]
        return out

    @property
    def words(self) -> list[int | None]:
        """`word_ids` (HF's deprecated name)."""
        import warnings

        warnings.warn("The property `words` is deprecated and will be removed in a future version. "
                      "Please use `word_ids` instead.", DeprecationWarning, stacklevel=2)
        return self.word_ids

    @property
    def overflowing(self) -> list[Encoding]:
        return list(self._overflowing)

    @property
    def n_sequences(self) -> int:
        return len(self._ranges) or 1

    @property
    def sequence_ids(self) -> list[int | None]:
        n = len(self)
        out: list[int | None] = [None] * n
        for sequence in range(self.n_sequences):
            start, stop = self._range(sequence)
            out[start:stop] = [sequence] * (stop - start)
        return out

    def __repr__(self) -> str:
        return (f"Encoding(num_tokens={len(self)}, attributes=[ids, type_ids, tokens, offsets, attention_mask, "
                "special_tokens_mask, overflowing])")

    # ---- mappings (encoding.rs: token_to_sequence, word_to_tokens, char_to_token, ...) ----

    def _range(self, sequence: int) -> tuple[int, int]:
        return self._ranges.get(sequence, (0, len(self)))

    def set_sequence_id(self, sequence_id: int) -> None:
        self._ranges[sequence_id] = (0, len(self))

    def token_to_sequence(self, token_index: int) -> int | None:
        if token_index > len(self):
            return None
        if not self._ranges:
            return 0
        for sequence, (start, stop) in self._ranges.items():
            if start <= token_index < stop:
                return sequence
        return None

    def token_to_chars(self, token_index: int) -> tuple[int, int] | None:
        sequence = self.token_to_sequence(token_index)
        offsets = self.offsets
        if sequence is None or not 0 <= token_index < len(offsets):
            return None
        return offsets[token_index]

    def token_to_word(self, token_index: int) -> int | None:
        sequence = self.token_to_sequence(token_index)
        words = self.word_ids
        if sequence is None or not 0 <= token_index < len(words):
            return None
        return words[token_index]

    def word_to_tokens(self, word_index: int, sequence_index: int = 0) -> tuple[int, int] | None:
        begin, end = self._range(sequence_index)
        first = last = None
        for index, word in enumerate(self.word_ids[begin:end]):
            if word is not None and word > word_index:
                break
            if word == word_index:
                first = index if first is None else first
                last = index + 1
        return None if first is None or last is None else (begin + first, begin + last)

    def word_to_chars(self, word_index: int, sequence_index: int = 0) -> tuple[int, int] | None:
        found = self.word_to_tokens(word_index, sequence_index)
        if found is None or found[1] == 0:
            return None
        offsets = self.offsets
        return offsets[found[0]][0], offsets[found[1] - 1][1]

    def char_to_token(self, char_pos: int, sequence_index: int = 0) -> int | None:
        begin, end = self._range(sequence_index)
        for index, (start, stop) in enumerate(self.offsets[begin:end]):
            if start <= char_pos < stop:
                return begin + index
        return None

    def char_to_word(self, char_pos: int, sequence_index: int = 0) -> int | None:
        token = self.char_to_token(char_pos, sequence_index)
        return None if token is None else self.token_to_word(token)

    # ---- changes (encoding.rs: merge_with, truncate, pad) ----

    def _set_type_ids(self, type_id: int) -> None:
        self._parts = [(run, start, stop, type_id, shift) for run, start, stop, _, shift in self._parts]

    def _slice(self, start: int, stop: int) -> Encoding:
        """Tokens [start, stop) as a new Encoding (no ranges, no overflowing)."""
        parts: list[Part] = []
        position = 0
        for run, begin, end, type_id, shift in self._parts:
            length = end - begin
            low, high = max(start - position, 0), min(stop - position, length)
            if low < high:
                parts.append((run, begin + low, begin + high, type_id, shift))
            position += length
        return Encoding(parts)

    def truncate(self, max_length: int, stride: int = 0, direction: str = "right") -> None:
        """Keep `max_length` tokens; the rest, cut in windows overlapping by `stride`, become `overflowing`."""
        if direction not in ("right", "left"):
            raise ValueError(f"Invalid truncation direction value : {direction}")
        length = len(self)
        if max_length >= length:
            return
        if max_length == 0:
            whole = Encoding(self._parts, self._ranges, self._overflowing)
            self._parts, self._ranges, self._overflowing, self._ids = [], {}, [whole], None
            return
        if stride >= max_length:
            raise ValueError(f"`stride` must be strictly less than `max_len={max_length}` (note that `max_len` may "
                             "be shorter than the max length of the original model, as it subtracts the number "
                             "of special characters")
        step = max_length - stride
        windows: list[tuple[int, int]] = []
        if direction == "right":
            for start in range(0, length, step):
                stop = min(start + max_length, length)
                windows.append((start, stop))
                if stop == length:
                    break
        else:
            for last in range(length - 1, -1, -step):
                stop = last + 1
                start = max(stop - max_length, 0)
                windows.append((start, stop))
                if start == 0:
                    break
        pieces = [self._slice(*window) for window in windows]
        self._parts = pieces[0]._parts
        self._ranges = {}
        self._overflowing = pieces[1:]
        self._ids = None

    def _merge_with(self, pair: Encoding, growing_offsets: bool) -> None:
        overflowings = []
        for own in self._overflowing:
            combined = own._copy()
            combined._merge_with(pair._copy(), growing_offsets)
            overflowings.append(combined)
            for other in pair._overflowing:
                combined = own._copy()
                combined._merge_with(other._copy(), growing_offsets)
                overflowings.append(combined)
        for other in pair._overflowing:
            combined = self._copy()
            combined._merge_with(other._copy(), growing_offsets)
            overflowings.append(combined)
        own_length = len(self)
        for sequence, (start, stop) in pair._ranges.items():
            self._ranges[sequence] = (own_length + start, own_length + stop)
        shift = 0
        if growing_offsets:
            offsets = self.offsets
            shift = offsets[-1][1] if offsets else 0
        self._parts = self._parts + [(run, start, stop, type_id, moved + shift)
                                     for run, start, stop, type_id, moved in pair._parts]
        self._overflowing = overflowings
        self._ids = None

    @staticmethod
    def merge(encodings: Iterable[Encoding], growing_offsets: bool = True) -> Encoding:
        """One Encoding of `encodings` in order, as HF's `Encoding.merge`."""
        merged = Encoding()
        for encoding in encodings:
            if not isinstance(encoding, Encoding):
                raise TypeError(f"Encoding.merge takes bytebpe.hf Encodings, got {type(encoding).__name__}")
            merged._merge_with(encoding._copy(), growing_offsets)
        return merged

    def pad(self, length: int, direction: str = "right", pad_id: int = 0, pad_type_id: int = 0,
            pad_token: str = "[PAD]") -> None:
        """Pad to `length` tokens (and every overflowing piece with it)."""
        if direction not in ("right", "left"):
            raise ValueError(f"Invalid padding direction value : {direction}")
        for overflowing in self._overflowing:
            overflowing.pad(length, direction, pad_id, pad_type_id, pad_token)
        missing = length - len(self)
        if missing <= 0:
            return
        padding: Part = (FixedRun([pad_id] * missing, [pad_token] * missing, attention=0), 0, missing,
                         pad_type_id, 0)
        if direction == "left":
            self._parts = [padding, *self._parts]
            self._ranges = {sequence: (start + missing, stop + missing)
                            for sequence, (start, stop) in self._ranges.items()}
        else:
            self._parts = [*self._parts, padding]
        self._ids = None
