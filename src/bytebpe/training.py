"""Training a byte-level BPE vocabulary: inputs, validation, progress, and the result as an `Encoding`.

The work happens in the compiled trainer (`_train.pyx`); this module checks every argument before any
work, streams the texts through the pre-tokenizer, and builds the `Encoding`.

Rules (identical to rustbpe's, so both learn the same vocabulary from the same texts and pattern):

- The 256 single bytes get ranks 0..255 (rank = byte value); merge i gets rank 256 + i.
- Each round merges the pair of adjacent tokens with the highest count over all pre-tokens; among equal
  counts, the pair with the smallest (left id, right id). A merge replaces every non-overlapping occurrence,
  leftmost first ("aaa" with the pair (a, a) becomes "aa" + "a").
- `min_frequency`: a pair is merged only if it occurs at least that often; training stops at the first best
  pair below it (HF `tokenizers`' meaning; rustbpe has no such option). Pairs below it never enter the heap.
- `max_token_length` (bytes): a pair whose merged token would be longer is never merged; the next best
  pair is taken instead.
- Special tokens are not learned: their text in the corpus is trained on as ordinary text.
- `max_distinct_pieces` (none by default): counting keeps at most that many distinct pre-tokens, pruning the
  rarest by `PieceCounts`' deterministic rule, with a warning saying what was dropped. Without it nothing
  is ever dropped and the vocabulary is rustbpe's.
"""
from __future__ import annotations

import os
import warnings
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

from . import _pretokenize, _train, batching
from ._core import MAX_TOKEN_ID  # the largest token id bytebpe accepts (_shared.pxd)
from .encoding import Encoding, check_special_text
from .pretokenizer import SplitFunction, check_pattern, replace_surrogates, split_function
from .progress import progress_bar
from .readers import PathLike, ReadOptions, ReadTally, check_read_options, find_input_files, read_texts
from .registry import ENCODING_SPECS

__all__ = ["train", "train_from_files", "resolve_pattern", "count_split_pieces", "count_files_pieces", "EmptyCorpusWarning"]

# Texts are pre-tokenized and counted in batches of about this many characters. A batch's pieces are
# ~50-byte str objects, about 10 per 40 characters of English, so a batch costs ~1 MB of Python objects
# while alive; larger batches are no faster and cost memory.
BATCH_CHARS = 1 << 16
# Counting on several threads hands each a batch of about this many characters: large enough that handing
# over costs nothing next to scanning it, small enough that `workers` batches in flight stay a few MB.
PARALLEL_BATCH_CHARS = 1 << 20
# Merges run in steps of this many, returning to Python between steps for the progress bar and Ctrl-C.
MERGE_STEP = 512
# A split regex must cut at least one (non-empty) piece out of this, or it is refused (see resolve_pattern).
PROBE_TEXT = "hello world 123"


class EmptyCorpusWarning(UserWarning):
    """The texts held no pre-token pair to merge: the vocabulary is the 256 single bytes (plus specials)."""


def resolve_pattern(pattern: str | None = None, pat_str: str | None = None) -> str:
    """The split regex for `train`: a named encoding's pattern (`pattern`, default "cl100k_base"), or a regex
    of your own given explicitly as `pat_str`.

    A name is never read as a regex: a mistyped one ("cl100k") would otherwise train on whatever that regex
    happens to match. An unknown name, a regex that does not compile, or one that cuts no piece out of
    PROBE_TEXT (its tokenizer would encode everything as []) is a ValueError.
    """
    if pattern is not None and pat_str is not None:
        raise ValueError("give pattern= (a known name) or pat_str= (a regex), not both")
    if pat_str is None:
        name = "cl100k_base" if pattern is None else pattern
        if not isinstance(name, str):
            raise TypeError(f"pattern must be a str (a known pattern's name), got {type(name).__name__}")
        spec = ENCODING_SPECS.get(name)
        if spec is None:
            raise ValueError(f"unknown pattern name {name!r}: known names are {', '.join(ENCODING_SPECS)}; for a "
                             f"regex of your own, give it as pat_str= (--pat-str on the command line)")
        return spec.pattern
    if not isinstance(pat_str, str):
        raise TypeError(f"pat_str must be a str (a regex), got {type(pat_str).__name__}")
    if not pat_str:
        raise ValueError("pat_str must not be empty")
    try:
        check_pattern(pat_str)
    except ValueError as error:
        raise ValueError(f"pat_str {pat_str!r} is not a valid regex: {error}") from None
    if not any(pretokenizer_for(pat_str)(PROBE_TEXT)):
        raise ValueError(f"pat_str {pat_str!r} cuts no piece out of {PROBE_TEXT!r}: nothing would be learned, and "
                         f"the tokenizer would encode such text as []")
    return pat_str


def pretokenizer_for(pat_str: str) -> SplitFunction:
    """str -> list of pieces, as `Encoding` pre-tokenizes (pretokenizer.split_function).

    For a pattern of the family (pattern_compiler) this is the compiled `Scanner`, which `count_split_pieces`
    feeds whole texts to.
    """
    return split_function(pat_str)


def _plan_special_tokens(
    special_tokens: Sequence[str] | Mapping[str, int] | None, vocab_size: int
) -> tuple[dict[str, int | None], int]:
    """(special token -> explicit id or None, number of merges to learn). Raises on any bad input."""
    if special_tokens is None:
        planned: dict[str, int | None] = {}
    elif isinstance(special_tokens, Mapping):
        planned = {}
        for text, token in special_tokens.items():
            if not isinstance(token, int) or isinstance(token, bool):
                raise TypeError(f"id of special token {text!r} must be an int, got {type(token).__name__}")
            planned[text] = token
    elif isinstance(special_tokens, (str, bytes)) or not isinstance(special_tokens, Iterable):
        raise TypeError(
            "special_tokens must be a list of str (ids follow the merges) or a mapping of str to id, "
            f"got {type(special_tokens).__name__}")
    else:
        planned = {}
        for text in special_tokens:
            if text in planned:
                raise ValueError(f"special token {text!r} is listed twice")
            planned[text] = None
    for text in planned:
        check_special_text(text)
    if not isinstance(vocab_size, int) or isinstance(vocab_size, bool):
        raise TypeError(f"vocab_size must be an int, got {type(vocab_size).__name__}")
    minimum = 256 + len(planned)
    if vocab_size < minimum:
        raise ValueError(
            f"vocab_size={vocab_size} is below the minimum {minimum}: 256 single bytes"
            + (f" + {len(planned)} special tokens" if planned else ""))
    if vocab_size > MAX_TOKEN_ID + 1:
        raise ValueError(f"vocab_size={vocab_size} is above the largest supported, {MAX_TOKEN_ID + 1}")
    n_mergeable = vocab_size - len(planned)
    owner: dict[int, str] = {}
    for text, token in planned.items():
        if token is None:
            continue
        if not n_mergeable <= token <= MAX_TOKEN_ID:
            raise ValueError(
                f"special token {text!r} has id {token}, which collides with the mergeable ranks 0.."
                f"{n_mergeable - 1} or is above {MAX_TOKEN_ID}; give ids from {n_mergeable} up")
        if token in owner:
            raise ValueError(f"special tokens {owner[token]!r} and {text!r} both have id {token}")
        owner[token] = text
    return planned, n_mergeable - 256


def check_max_distinct_pieces(max_distinct_pieces: int | None) -> None:
    if max_distinct_pieces is not None and (not isinstance(max_distinct_pieces, int)
                                            or isinstance(max_distinct_pieces, bool) or max_distinct_pieces < 1):
        raise ValueError(f"max_distinct_pieces must be None or an int >= 1, got {max_distinct_pieces!r}")


def pruning_note(counts: _train.PieceCounts) -> str:
    """One line on what pruning dropped from `counts`, or "" when nothing was."""
    if not counts.prune_passes:
        return ""
    seen = counts.total_pieces + counts.pruned_occurrences
    bound = f"={counts.max_distinct_pieces:,}" if counts.max_distinct_pieces else ""
    return (f"pruned the pre-token counts (max_distinct_pieces{bound}) in "
            f"{counts.prune_passes:,} pass{'es' if counts.prune_passes != 1 else ''}: dropped "
            f"{counts.pruned_pieces:,} rare pieces, {counts.pruned_occurrences:,} of {seen:,} occurrences "
            f"({100 * counts.pruned_occurrences / max(seen, 1):.2f}%)")


def _check_options(min_frequency: int, max_token_length: int | None, name: str | None) -> None:
    if not isinstance(min_frequency, int) or isinstance(min_frequency, bool) or min_frequency < 1:
        raise ValueError(f"min_frequency must be an int >= 1, got {min_frequency!r}")
    if max_token_length is not None and (
        not isinstance(max_token_length, int) or isinstance(max_token_length, bool) or max_token_length < 1
    ):
        raise ValueError(f"max_token_length must be None or an int >= 1, got {max_token_length!r}")
    if name is not None and not isinstance(name, str):
        raise TypeError(f"name must be a str, got {type(name).__name__}")


def _batches(texts: Iterable[str | bytes], batch_chars: int = BATCH_CHARS,
             utf8: bool = False) -> Iterator[list[str | bytes]]:
    """Texts in lists of about `batch_chars` characters; a non-str item is a TypeError naming its index
    (with `utf8`, bytes of valid UTF-8 are texts too: see `PieceCounts._add_utf8`)."""
    if isinstance(texts, (str, bytes)):
        raise TypeError(f"texts must be an iterable of str, not a single {type(texts).__name__}")
    try:
        iterator = iter(texts)
    except TypeError:
        raise TypeError(f"texts must be an iterable of str, got {type(texts).__name__}") from None
    batch: list[str | bytes] = []
    chars = 0
    for index, text in enumerate(iterator):
        if not isinstance(text, str) and not (utf8 and type(text) is bytes):
            raise TypeError(f"texts[{index}] is a {type(text).__name__}, not a str")
        batch.append(text)
        chars += len(text)
        if chars >= batch_chars:
            yield batch
            batch, chars = [], 0
    if batch:
        yield batch


def _pieces_of(pretokenize: SplitFunction, batch: list[str]) -> list[str]:
    pieces: list[str] = []
    for text in batch:
        pieces += pretokenize(text)
    return pieces


def _add_texts(counts: _train.PieceCounts, scanner: _pretokenize.Scanner, texts: list[str | bytes]) -> None:
    try:
        counts._add_utf8(scanner, texts)
    except UnicodeEncodeError:
        counts._add_utf8(scanner, [replace_surrogates(text) if isinstance(text, str) else text for text in texts])


def _add_pieces(counts: _train.PieceCounts, pretokenize: SplitFunction, texts: list[str]) -> None:
    try:
        counts.add_pieces(_pieces_of(pretokenize, texts))    # all or nothing: nothing counted if it raises
    except UnicodeEncodeError:
        # Surrogates: the whole texts are repaired as `Encoding.encode` repairs them, *then* cut. Repairing
        # the pieces instead would cut a surrogate pair as two characters rather than the one it joins into.
        counts.add_pieces(_pieces_of(pretokenize, [replace_surrogates(text) for text in texts]))


def count_split_pieces(
    texts: Iterable[str], pretokenize: SplitFunction, *, progress: bool = False, max_distinct_pieces: int | None = None,
    workers: int | None = None,
) -> _train.PieceCounts:
    """Distinct pre-tokens of `texts` and their counts, one batch of texts at a time; with
    `max_distinct_pieces`, at most that many, pruned by `PieceCounts`' rule (whatever the batches).

    With a compiled `Scanner` (a pattern of the family) each batch is scanned and counted without the GIL and
    without piece objects, on `workers` threads (default and most: one per usable core): this thread reads the
    texts and hands batches of ~PARALLEL_BATCH_CHARS round-robin to one table per worker, and the tables are
    added at the end. The counts are the serial ones (sums do not depend on who counted what), and the
    order of the pieces in the table depends only on the texts and the number of workers. Pruning
    (`max_distinct_pieces`) decides on the sequence of pieces, so it counts serially.

    With the `regex` engine, which holds the GIL while it matches, counting is serial: two threads of
    `findall` run no faster than one.
    """
    return _count(texts, pretokenize, progress=progress, max_distinct_pieces=max_distinct_pieces, workers=workers)


def _count(
    texts: Iterable[str | bytes], pretokenize: SplitFunction, *, progress: bool = False,
    max_distinct_pieces: int | None = None, workers: int | None = None, utf8: bool = False,
) -> _train.PieceCounts:
    """`count_split_pieces`; with `utf8` (a compiled scanner only) the texts may also be bytes of valid UTF-8."""
    check_max_distinct_pieces(max_distinct_pieces)
    # More threads than cores count no faster, and each holds a table of its own: at most one per core, as
    # encode_batch's threads (the counts never depend on the number).
    workers = batching.pool_size() if workers is None else min(batching.checked_num_threads(workers),
                                                                  batching.pool_size())
    # Texts of unknown total size: the bar counts characters (`count_files_pieces` shows bytes of files).
    bar = progress_bar(progress, desc="counting pre-tokens", unit="char", unit_scale=True)
    try:
        if isinstance(pretokenize, _pretokenize.Scanner) and workers > 1 and max_distinct_pieces is None:
            return _count_in_parallel(texts, pretokenize, workers, bar, utf8)
        counts = _train.PieceCounts()
        counts.max_distinct_pieces = max_distinct_pieces
        for batch in _batches(texts, utf8=utf8):
            if isinstance(pretokenize, _pretokenize.Scanner):
                _add_texts(counts, pretokenize, batch)
            else:
                _add_pieces(counts, pretokenize, batch)
            if bar is not None:
                bar.update(sum(map(len, batch)))
    finally:
        if bar is not None:
            bar.close()
    if max_distinct_pieces is not None:
        counts.prune(max_distinct_pieces)   # the table may end anywhere below twice the bound
    return counts


def _count_in_parallel(texts: Iterable[str | bytes], scanner: _pretokenize.Scanner, workers: int,
                       bar: Any, utf8: bool = False) -> _train.PieceCounts:
    """count_split_pieces' threads: batch i goes to table i % workers once that table's previous batch is done."""
    from concurrent.futures import Future, ThreadPoolExecutor

    tables = [_train.PieceCounts() for _ in range(workers)]
    pending: list[Future[None] | None] = [None] * workers
    with ThreadPoolExecutor(workers, thread_name_prefix="bytebpe-count") as pool:
        try:
            for index, batch in enumerate(_batches(texts, PARALLEL_BATCH_CHARS, utf8)):
                slot = index % workers
                previous = pending[slot]
                if previous is not None:
                    previous.result()       # the table is free again (and its error, if any, raised here)
                pending[slot] = pool.submit(_add_texts, tables[slot], scanner, batch)
                if bar is not None:
                    bar.update(sum(map(len, batch)))
            for future in pending:
                if future is not None:
                    future.result()
        except BaseException:
            for future in pending:
                if future is not None:
                    future.cancel()
            raise
    total = tables[0]
    for table in tables[1:]:
        total.update(table)
    return total


def count_files_pieces(
    paths: PathLike | Iterable[PathLike],
    pretokenize: SplitFunction,
    *,
    field: str = "text",
    lines: bool = False,
    skip_bad: bool = False,
    errors: str = "strict",
    ignore_unknown: bool = False,
    stdin_format: str = "txt",
    tally: ReadTally | None = None,
    progress: bool = False,
    max_distinct_pieces: int | None = None,
    caller: str = "count_pieces_from_files",
    workers: int | None = None,
) -> _train.PieceCounts:
    """`count_split_pieces` over the documents of the files `paths` names (`readers`; a `.txt` cut where no
    piece crosses), for `train_from_files` and `count_pieces_from_files` (`caller`, named in the warning
    about skipped or replaced documents when no `tally` is given).

    The bar counts bytes as stored on disk (compressed bytes of compressed files, Parquet in proportion to
    its rows), so its total is the files' size and tqdm shows MB/s and an ETA; with standard input among
    the inputs the total is unknown.
    """
    files = find_input_files(_path_list(paths), ignore_unknown=ignore_unknown, stdin_format=stdin_format)
    check_read_options(files, lines=lines, errors=errors)
    counted = tally if tally is not None else ReadTally()
    total = None if any(file.is_stdin for file in files) else sum(file.size for file in files)
    bar = progress_bar(progress, desc="counting pre-tokens", unit="B", unit_scale=True, total=total)
    try:
        # A compiled scanner takes a .txt's bytes as they are (no str decoded and encoded back).
        utf8 = isinstance(pretokenize, _pretokenize.Scanner)
        texts = read_texts(files, counted, field=field, lines=lines, skip_bad=skip_bad, errors=errors, cut=True,
                           on_progress=None if bar is None else bar.update, utf8=utf8)
        counts = _count(texts, pretokenize, max_distinct_pieces=max_distinct_pieces, workers=workers, utf8=utf8)
    finally:
        if bar is not None:
            bar.close()
    if tally is None and (counted.skipped or counted.replaced):
        warnings.warn(f"{caller}: {counted.describe()}", UserWarning, stacklevel=3)
    return counts


def train_from_counts(
    counts: _train.PieceCounts,
    vocab_size: int,
    *,
    pat_str: str,
    special_tokens: Sequence[str] | Mapping[str, int] | None = None,
    min_frequency: int = 1,
    max_token_length: int | None = None,
    name: str | None = None,
    progress: bool = False,
) -> Encoding:
    """Learn merges from counted pre-tokens (consumed: `counts` is empty afterwards) and build the Encoding."""
    planned, n_merges = _plan_special_tokens(special_tokens, vocab_size)
    _check_options(min_frequency, max_token_length, name)
    # Beyond 2**62 both limits mean "none": clamped so that the C integers cannot overflow.
    trainer = _train.BPETrainer(counts, min(min_frequency, 2**62), min(max_token_length or 0, 2**62))
    bar = progress_bar(progress, desc="learning merges", unit="merge", total=n_merges)
    try:
        while trainer.n_merges < n_merges:
            done = trainer.merge(min(MERGE_STEP, n_merges - trainer.n_merges))
            if bar is not None:
                bar.update(done)
            if done == 0:
                break
    finally:
        if bar is not None:
            bar.close()
    merges, n_words = trainer.merges, trainer.n_words
    # Free the trainer's tables before the Encoding builds its own: the peaks do not add up.
    del trainer
    if len(merges) < n_merges:
        why = "no pre-token pair" if n_words == 0 else f"only {len(merges)} merges"
        warnings.warn(
            f"the corpus allows {why} (asked for {n_merges}"
            + (f" with min_frequency={min_frequency}" if min_frequency > 1 else "")
            + (f" and max_token_length={max_token_length}" if max_token_length else "")
            + f"): the vocabulary has {256 + len(merges)} mergeable tokens, not {256 + n_merges}",
            EmptyCorpusWarning if n_words == 0 else UserWarning,
            stacklevel=3,
        )
    return _encoding_from_merges(merges, pat_str, planned, name or f"bpe_{vocab_size}")


def _encoding_from_merges(
    merges: list[tuple[int, int]], pat_str: str, planned: dict[str, int | None], name: str
) -> Encoding:
    token_bytes = [bytes([b]) for b in range(256)]
    for left, right in merges:
        token_bytes.append(token_bytes[left] + token_bytes[right])
    mergeable_ranks = {token: rank for rank, token in enumerate(token_bytes)}
    special_tokens: dict[str, int] = {}
    next_id = len(token_bytes)
    taken = {token for token in planned.values() if token is not None}
    for text, token in planned.items():
        if token is None:
            while next_id in taken:
                next_id += 1
            token = next_id
            next_id += 1
        special_tokens[text] = token
    return Encoding(name, pat_str=pat_str, mergeable_ranks=mergeable_ranks, special_tokens=special_tokens)


def train(
    texts: Iterable[str],
    vocab_size: int,
    *,
    pattern: str | None = None,
    pat_str: str | None = None,
    special_tokens: Sequence[str] | Mapping[str, int] | None = None,
    min_frequency: int = 1,
    max_token_length: int | None = None,
    name: str | None = None,
    progress: bool = False,
    max_distinct_pieces: int | None = None,
    workers: int | None = None,
) -> Encoding:
    """Learn a byte-level BPE vocabulary of `vocab_size` tokens from `texts`; returns a ready `Encoding`.

    `texts` is any iterable of str (a generator over a huge file is fine: only distinct pre-tokens are
    kept). The text is split with `pattern`, the name of an encoding whose split pattern to use ("gpt2",
    "r50k_base", "p50k_base", "cl100k_base" (the default), "o200k_base", ...), or with `pat_str`, any regex
    for the `regex` module (see `resolve_pattern` for what is refused). `special_tokens` is a list of
    str (their ids follow the merges, in order) or a mapping str -> id. `vocab_size` counts the 256 bytes,
    the merges and the special tokens. See the module docstring for the tie rule, `min_frequency` and
    `max_token_length`. When the corpus runs out of pairs the vocabulary is smaller, with a warning.
    `max_distinct_pieces` bounds the memory of counting by pruning rare pre-tokens (`PieceCounts` states
    the rule; a warning says what was dropped); by default nothing is dropped. Pre-tokens are counted on
    `workers` threads (default and most: one per usable core; the counts do not depend on it).

    >>> enc = bytebpe.train(["low low lower newest widest"] * 10, 270)     # doctest: +SKIP
    >>> enc.decode(enc.encode("lowest"))                                   # doctest: +SKIP
    'lowest'
    """
    pat_str = check_train_arguments(vocab_size, pattern, pat_str, special_tokens, min_frequency, max_token_length,
                                     name, max_distinct_pieces)
    counts = count_split_pieces(texts, pretokenizer_for(pat_str), progress=progress, max_distinct_pieces=max_distinct_pieces,
                          workers=workers)
    _warn_if_pruned(counts)
    # Called from here, so that its warning's stacklevel points at our caller too.
    return train_from_counts(counts, vocab_size, pat_str=pat_str, special_tokens=special_tokens,
                             min_frequency=min_frequency, max_token_length=max_token_length, name=name,
                             progress=progress)


def check_train_arguments(
    vocab_size: int, pattern: str | None, pat_str: str | None,
    special_tokens: Sequence[str] | Mapping[str, int] | None, min_frequency: int, max_token_length: int | None,
    name: str | None, max_distinct_pieces: int | None,
) -> str:
    """The split regex; everything is checked before the (possibly long) pass over the texts."""
    pat_str = resolve_pattern(pattern, pat_str)
    _plan_special_tokens(special_tokens, vocab_size)
    _check_options(min_frequency, max_token_length, name)
    check_max_distinct_pieces(max_distinct_pieces)
    return pat_str


def _warn_if_pruned(counts: _train.PieceCounts) -> None:
    note = pruning_note(counts)
    if note:
        warnings.warn(note, UserWarning, stacklevel=3)      # at the caller of train / train_from_files


# ==== files ======================================================================================


def train_from_files(
    paths: PathLike | Iterable[PathLike],
    vocab_size: int,
    *,
    field: str = "text",
    jsonl_field: str | None = None,
    lines: bool = False,
    skip_bad: bool = False,
    errors: str = "strict",
    ignore_unknown: bool = False,
    stdin_format: str = "txt",
    tally: ReadTally | None = None,
    pattern: str | None = None,
    pat_str: str | None = None,
    special_tokens: Sequence[str] | Mapping[str, int] | None = None,
    min_frequency: int = 1,
    max_token_length: int | None = None,
    name: str | None = None,
    progress: bool = False,
    max_distinct_pieces: int | None = None,
    workers: int | None = None,
    read: ReadOptions | None = None,
) -> Encoding:
    """`train` on the documents of files, read exactly as `encode_files` reads them (`readers`: `.txt`,
    `.jsonl`/`.ndjson`, `.json`, `.parquet`, compressed text, ``-``, folders; `field`, `lines`, `skip_bad`,
    `errors`, `ignore_unknown` and `stdin_format` mean what they mean there; `jsonl_field` is `field`'s
    older name). A `.txt` is read in pieces cut where no pre-token crosses, so memory stays bounded whatever
    its size and the vocabulary is that of the whole text. The counting bar (`progress`) counts bytes of
    the files, with their total size.

    Every input and option is checked before any work. What was skipped or replaced is counted into
    `tally` when one is given, else reported as a `UserWarning`. The other options are `train`'s.
    """
    if jsonl_field is not None:
        field = jsonl_field
    # One set of reading options, as `read=` or as keywords (ReadOptions.resolve checks and refuses both).
    field, lines, skip_bad, errors, ignore_unknown, stdin_format = ReadOptions.resolve(
        read, field=field, lines=lines, skip_bad=skip_bad, errors=errors, ignore_unknown=ignore_unknown,
        stdin_format=stdin_format).keywords().values()
    pat_str = check_train_arguments(vocab_size, pattern, pat_str, special_tokens, min_frequency, max_token_length,
                                     name, max_distinct_pieces)
    counts = count_files_pieces(paths, pretokenizer_for(pat_str), field=field, lines=lines, skip_bad=skip_bad,
                                errors=errors, ignore_unknown=ignore_unknown, stdin_format=stdin_format, tally=tally,
                                progress=progress, max_distinct_pieces=max_distinct_pieces, caller="train_from_files",
                                workers=workers)
    _warn_if_pruned(counts)
    # Called from here, so that its warning's stacklevel points at our caller too.
    return train_from_counts(counts, vocab_size, pat_str=pat_str, special_tokens=special_tokens,
                             min_frequency=min_frequency, max_token_length=max_token_length, name=name,
                             progress=progress)


def _path_list(paths: PathLike | Iterable[PathLike]) -> list[PathLike]:
    if isinstance(paths, (str, os.PathLike)):
        return [paths]
    return list(paths)
