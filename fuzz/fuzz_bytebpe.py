"""Atheris fuzz target: the compiled core against the pure-Python oracle (`bytebpe._reference`).

Each input is cut (atheris.FuzzedDataProvider) into one case of one of three kinds:

* encode: a text (any unicode, lone surrogates included, long runs for the heap and bucket merge paths),
  a small merge table over that text's bytes (all 256 bytes, then merges of existing tokens and stray
  tokens no merge reaches; ranks in training order, inverted, or shuffled with the bytes, with gaps),
  special tokens (overlapping, prefixes of each other, pieces of the text) spliced into the text, a
  pattern, the compiled or the regex pre-tokenizer, and an allowed/disallowed policy. Checked: `encode`,
  `encode_to_numpy` and `encode_ordinary` give the oracle's ids (or the oracle's refusal), `decode`
  round-trips, and `encode_batch`, `encode_batch_to_numpy`, `encode_ordinary_batch` (the same str object
  repeated, other texts between, threads forced on small batches) equal a loop of single encodes.
* piece: arbitrary bytes through `MergeTable.encode_single_piece` against `bpe_encode_piece`.
* train: a small corpus through `bytebpe.train` (known and custom patterns, min_frequency,
  max_token_length) against `bpe_train` on the oracle's own pieces, and arbitrary byte pieces with counts
  through the compiled trainer (merging in uneven steps) against `bpe_train`.

A mismatch is an AssertionError, which atheris reports as a crash and saves the input for. Run it with
fuzz/run.sh (ASan build, sanitizer runtime preloaded); BYTEBPE_FUZZ_SHOW=1 prints each case, so that a
saved input replays readably: `BYTEBPE_FUZZ_SHOW=1 fuzz/run.sh fuzz/artifacts/crash-...`.
"""
from __future__ import annotations

import collections
import os
import random
import sys
import warnings

import atheris

with atheris.instrument_imports(include=["bytebpe"], exclude=["bytebpe._reference"]):
    import regex

    import bytebpe
    from bytebpe import _core, _pretokenize, _train, batching
    from bytebpe._reference import bpe_encode_piece, bpe_train
    from bytebpe.patterns import CL100K_PATTERN, O200K_PATTERN, R50K_PATTERN

SHOW = os.environ.get("BYTEBPE_FUZZ_SHOW") == "1"
SERIAL_BATCH_CHARS = batching.SERIAL_BATCH_CHARS

PATTERNS = {"r50k": R50K_PATTERN, "cl100k": CL100K_PATTERN, "o200k": O200K_PATTERN}
# Not a known pattern, so the regex engine runs it (also in training); it cuts the same pieces as cl100k.
CUSTOM_PATTERN = "(?:" + CL100K_PATTERN + ")"
TRAIN_PATTERNS = ["gpt2", "cl100k_base", "o200k_base", CUSTOM_PATTERN]

# Characters that the patterns treat differently: letters of each case, digits, contractions, spaces and
# newlines, punctuation, multi-byte UTF-8 of every length, a combining mark, lone surrogates, and the two
# halves of U+1D400 (an astral *letter*, which only becomes one when the halves are joined).
ALPHABET = list("aAbz'sdlt 1234567\n\r\t.,!<|>_-") + [
    "é", "ß", "Σ", "日", "本", "😀", "\u0301", "\u00a0", "\u2028", "\ufffd", "\ud800", "\udfff", "\ud835", "\udc00"]
STOCK_SPECIALS = ["<|endoftext|>", "<|fim_prefix|>", "<|endof", "endoftext|>", "<|", "|>", "a", "ab", " ", "\n"]


# The class fragments of the split patterns, by the names of _pretokenize.CLASS_BITS.
CLASS_FRAGMENTS = {"letter": r"\p{L}", "number": r"\p{N}", "space": r"\s",
                   "upper": r"[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]", "lower": r"[\p{Ll}\p{Lm}\p{Lo}\p{M}]"}


def _regex_disagreements() -> dict[int, None]:
    """The code points the compiled scanner classes differently from `regex` (17,560 with tiktoken 0.14.0
    and regex 2026.11.19): the scanner's tables follow tiktoken, while the oracle here cuts text with
    `regex`, so drawn text leaves them out (tests/exactness/test_unicode_tables.py checks those code points against
    tiktoken itself). Computed once, at start-up (~2 s)."""
    every = "".join(map(chr, range(0x110000)))
    regex_bits = bytearray(0x110000)
    for name, fragment in CLASS_FRAGMENTS.items():
        bit = _pretokenize.CLASS_BITS[name]
        for run in regex.finditer(f"(?:{fragment})+", every):
            for cp in range(run.start(), run.end()):
                regex_bits[cp] |= bit
    table_bits = _pretokenize.code_point_classes()
    return dict.fromkeys(cp for cp in range(0x110000) if regex_bits[cp] != table_bits[cp])


REGEX_DISAGREEMENTS = _regex_disagreements()


def repaired(text: str) -> str:
    """tiktoken's repair of lone surrogates (valid pairs are joined, lone ones become U+FFFD)."""
    return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


def has_surrogates(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


# ==== drawing a case ================================================================================


def draw_text(fdp: atheris.FuzzedDataProvider, max_chars: int) -> str:
    """Arbitrary unicode (atheris' own mix of ASCII, UTF-16 and UTF-32 ranges, less REGEX_DISAGREEMENTS) or
    runs from ALPHABET."""
    if fdp.ConsumeBool():
        return fdp.ConsumeUnicode(fdp.ConsumeIntInRange(0, max_chars)).translate(REGEX_DISAGREEMENTS)
    parts: list[str] = []
    length = 0
    for _ in range(fdp.ConsumeIntInRange(0, 24)):
        char = ALPHABET[fdp.ConsumeIntInRange(0, len(ALPHABET) - 1)]
        # mostly single characters; sometimes a run long enough for the heap (>64 B) and buckets (>=256 B)
        run = 1 if fdp.ConsumeProbability() < 0.8 else fdp.ConsumeIntInRange(2, 300)
        run = min(run, max_chars - length)
        if run <= 0:
            break
        parts.append(char * run)
        length += run
    return "".join(parts)


def draw_special_tokens(fdp: atheris.FuzzedDataProvider, text: str) -> list[str]:
    tokens: list[str] = []
    for _ in range(fdp.ConsumeIntInRange(0, 4)):
        kind = fdp.ConsumeIntInRange(0, 2)
        if kind == 0:
            token = STOCK_SPECIALS[fdp.ConsumeIntInRange(0, len(STOCK_SPECIALS) - 1)]
        elif kind == 1:
            token = fdp.ConsumeUnicodeNoSurrogates(fdp.ConsumeIntInRange(1, 6))
        else:   # a piece of the text, so that it occurs there
            start = fdp.ConsumeIntInRange(0, max(0, len(text) - 1))
            token = text[start : start + fdp.ConsumeIntInRange(1, 8)]
        if token and not has_surrogates(token) and token not in tokens:
            tokens.append(token)
    return tokens


def splice(fdp: atheris.FuzzedDataProvider, text: str, specials: list[str]) -> str:
    """`text` with special tokens inserted at drawn places (so multi-character stretches lie between)."""
    if not specials:
        return text
    for _ in range(fdp.ConsumeIntInRange(0, 5)):
        at = fdp.ConsumeIntInRange(0, len(text))
        text = text[:at] + specials[fdp.ConsumeIntInRange(0, len(specials) - 1)] + text[at:]
    return text


def draw_ranks(fdp: atheris.FuzzedDataProvider, corpus: bytes) -> dict[bytes, int]:
    """All 256 bytes, then up to 40 tokens made over `corpus`'s bytes; ranks as the core allows them
    (distinct, 0..2**31-2, not too sparse), in one of three orders."""
    rng = random.Random(fdp.ConsumeIntInRange(0, 2**32 - 1))
    byte_order = list(range(256))
    if fdp.ConsumeBool():
        rng.shuffle(byte_order)
    tokens = [bytes([b]) for b in byte_order]
    known = set(tokens)
    reachable = [bytes([b]) for b in sorted(set(corpus))] or [b"a", b"b"]
    for _ in range(fdp.ConsumeIntInRange(0, 40)):
        if fdp.ConsumeProbability() < 0.85:     # a merge of two tokens that exist
            token = reachable[fdp.ConsumeIntInRange(0, len(reachable) - 1)] + \
                reachable[fdp.ConsumeIntInRange(0, len(reachable) - 1)]
        elif len(corpus) >= 2:                  # a stray: a slice of the text, whatever merges exist
            start = fdp.ConsumeIntInRange(0, len(corpus) - 2)
            token = corpus[start : start + fdp.ConsumeIntInRange(2, 8)]
        else:
            token = fdp.ConsumeBytes(fdp.ConsumeIntInRange(2, 6))
        if len(token) >= 2 and token not in known:
            known.add(token)
            tokens.append(token)
            reachable.append(token)
    order = fdp.ConsumeIntInRange(0, 2)
    ranks_in_order = list(range(len(tokens)))
    if order == 1:      # merged tokens' ranks shuffled among themselves: inversions
        merged = ranks_in_order[256:]
        rng.shuffle(merged)
        ranks_in_order[256:] = merged
    elif order == 2:    # everything shuffled: a byte may rank after a merge
        rng.shuffle(ranks_in_order)
    gap = fdp.ConsumeIntInRange(0, 3)           # holes in the rank range
    return {token: rank * (gap + 1) for token, rank in zip(tokens, ranks_in_order)}


def describe_ranks(ranks: dict[bytes, int]) -> str:
    byte_ranks = [ranks[bytes([b])] for b in range(256)]
    step = byte_ranks[1]
    if byte_ranks == [b * step for b in range(256)]:
        bytes_text = f"byte b has rank {step} * b"
    else:
        bytes_text = f"byte ranks {byte_ranks}"
    return f"multi-byte ranks {({t: r for t, r in ranks.items() if len(t) > 1})}; {bytes_text}"


def draw_policy(fdp: atheris.FuzzedDataProvider, specials: list[str]):
    def subset() -> set[str]:
        chosen = {token for token in specials if fdp.ConsumeBool()}
        if fdp.ConsumeProbability() < 0.2:      # a string that is no special token
            extra = fdp.ConsumeUnicodeNoSurrogates(fdp.ConsumeIntInRange(1, 3))
            if extra:
                chosen.add(extra)
        return chosen

    allowed = ("all", set(), None)[fdp.ConsumeIntInRange(0, 2)]
    allowed = subset() if allowed is None else allowed
    disallowed = ("all", (), None)[fdp.ConsumeIntInRange(0, 2)]
    disallowed = subset() if disallowed is None else disallowed
    return allowed, disallowed


# ==== the oracle ====================================================================================


def split_specials(text: str, allowed: set[str]) -> list[tuple[bool, str]]:
    """(is_special, part) for `text` cut at the allowed tokens: leftmost first, then longest."""
    parts: list[tuple[bool, str]] = []
    start = i = 0
    while i < len(text):
        match = max((token for token in allowed if text.startswith(token, i)), key=len, default=None)
        if match is None:
            i += 1
            continue
        if i > start:
            parts.append((False, text[start:i]))
        parts.append((True, match))
        i += len(match)
        start = i
    if start < len(text):
        parts.append((False, text[start:]))
    return parts


def reference_ordinary(text: str, pattern: str, ranks: dict[bytes, int]) -> list[int]:
    return [rank for match in regex.finditer(pattern, text)
            for rank in bpe_encode_piece(match.group().encode("utf-8"), ranks)]


def reference_encode(text, pattern, ranks, specials, allowed, disallowed):
    """("ids", ids) or ("refused", None), by tiktoken's rules written out."""
    allowed_set = set(specials) if allowed == "all" else set(allowed)
    disallowed_set = set(specials) - allowed_set if disallowed == "all" else set(disallowed)
    if any(token in text for token in disallowed_set):
        return ("refused", None)
    text = repaired(text)
    ids: list[int] = []
    for is_special, part in split_specials(text, allowed_set & set(specials)):
        ids += [specials[part]] if is_special else reference_ordinary(part, pattern, ranks)
    return ("ids", ids)


def differ(got, expected) -> str:
    """Where two results first differ, briefly (whole results of long texts would flood the log)."""
    if not (isinstance(got, list) and isinstance(expected, list)):
        return f"{str(got)[:300]} != {str(expected)[:300]}"
    i = next((i for i, (a, b) in enumerate(zip(got, expected)) if a != b), min(len(got), len(expected)))
    return (f"lengths {len(got)} and {len(expected)}, first difference at [{i}]: "
            f"{str(got[max(0, i - 3):i + 5])[:400]} != {str(expected[max(0, i - 3):i + 5])[:400]}")


def outcome(call, *args, **kwargs):
    try:
        result = call(*args, **kwargs)
    except ValueError as error:
        if "disallowed special token" not in str(error):
            raise
        return ("refused", None)
    return ("ids", result)


# ==== the cases =====================================================================================


def check_encode(fdp: atheris.FuzzedDataProvider) -> None:
    text = draw_text(fdp, 400)
    specials_text = draw_special_tokens(fdp, text)
    text = splice(fdp, text, specials_text)
    ranks = draw_ranks(fdp, text.encode("utf-8", "surrogatepass"))
    first_id = max(ranks.values()) + 1 + fdp.ConsumeIntInRange(0, 5)
    specials = {token: first_id + i for i, token in enumerate(specials_text)}
    pattern_name = list(PATTERNS)[fdp.ConsumeIntInRange(0, len(PATTERNS) - 1)]
    pattern = PATTERNS[pattern_name]
    pretokenizer = "compiled" if fdp.ConsumeBool() else "regex"
    allowed, disallowed = draw_policy(fdp, specials_text)
    others = [splice(fdp, draw_text(fdp, 80), specials_text) for _ in range(fdp.ConsumeIntInRange(0, 3))]
    batch = [text] * fdp.ConsumeIntInRange(1, 4) + others      # the same str object, repeated
    fdp_order = fdp.ConsumeIntInRange(0, 2**16)
    random.Random(fdp_order).shuffle(batch)
    num_threads = fdp.ConsumeIntInRange(1, 4)
    threaded = fdp.ConsumeBool()
    if SHOW:
        print(f"encode: pattern={pattern_name} pretokenizer={pretokenizer} text={text!r}\n"
              f"  specials={specials} allowed={allowed!r} disallowed={disallowed!r}\n"
              f"  {describe_ranks(ranks)}\n"
              f"  batch={batch!r} num_threads={num_threads} threaded={threaded}", file=sys.stderr)

    enc = bytebpe.Encoding("fuzz", pat_str=pattern, mergeable_ranks=ranks, special_tokens=specials,
                           pretokenizer=pretokenizer)
    policy = {"allowed_special": allowed, "disallowed_special": disallowed}

    expected = reference_encode(text, pattern, ranks, specials, allowed, disallowed)
    got = outcome(enc.encode, text, **policy)
    assert got == expected, f"encode != reference: {differ(list(got), list(expected))}"
    got_numpy = outcome(enc.encode_to_numpy, text, **policy)
    got_numpy = (got_numpy[0], None if got_numpy[1] is None else got_numpy[1].tolist())
    assert got_numpy == expected, f"encode_to_numpy != reference: {differ(list(got_numpy), list(expected))}"
    if expected[0] == "ids":
        decoded = enc.decode_bytes(expected[1])
        assert decoded == repaired(text).encode("utf-8"), f"decode_bytes: {decoded[:200]!r}"
        assert enc.decode(expected[1]) == repaired(text)

    ordinary = reference_ordinary(repaired(text), pattern, ranks)
    got = enc.encode_ordinary(text)
    assert got == ordinary, f"encode_ordinary != reference: {differ(got, ordinary)}"
    assert enc.encode(text, disallowed_special=()) == ordinary, "encode(disallowed_special=()) != ordinary"

    batching.SERIAL_BATCH_CHARS = 0 if threaded else SERIAL_BATCH_CHARS
    try:
        loop = [outcome(enc.encode, item, **policy) for item in batch]
        refused = any(kind == "refused" for kind, _ in loop)
        got_batch = outcome(enc.encode_batch, batch, num_threads=num_threads, **policy)
        expected_batch = ("refused", None) if refused else ("ids", [ids for _, ids in loop])
        if got_batch != expected_batch:
            if got_batch[0] != expected_batch[0]:
                raise AssertionError(f"encode_batch: {got_batch[0]}, a loop of encode: {expected_batch[0]}")
            i = next(i for i, (a, b) in enumerate(zip(got_batch[1], expected_batch[1])) if a != b)
            raise AssertionError(f"encode_batch != loop of encode at text {i} of {len(batch)}: "
                                 f"{differ(got_batch[1][i], expected_batch[1][i])}")
        got_flat = outcome(enc.encode_batch_to_numpy, batch, num_threads=num_threads, **policy)
        if refused:
            assert got_flat == ("refused", None), f"encode_batch_to_numpy: {got_flat}, loop refused"
        else:
            flat_ids, offsets = got_flat[1]
            split = [flat_ids[offsets[i]:offsets[i + 1]].tolist() for i in range(len(batch))]
            assert split == [ids for _, ids in loop], \
                f"encode_batch_to_numpy != loop of encode: {differ(split, [ids for _, ids in loop])}"
            assert len(offsets) == len(batch) + 1 and offsets[-1] == len(flat_ids)
        got_ordinary = enc.encode_ordinary_batch(batch, num_threads=num_threads)
        assert got_ordinary == [enc.encode_ordinary(item) for item in batch], "encode_ordinary_batch != loop"
        if not refused:
            assert enc.decode_batch([ids for _, ids in loop]) == [repaired(item) for item in batch]
    finally:
        batching.SERIAL_BATCH_CHARS = SERIAL_BATCH_CHARS


def check_piece(fdp: atheris.FuzzedDataProvider) -> None:
    piece = fdp.ConsumeBytes(fdp.ConsumeIntInRange(1, 400))
    if not piece:
        return
    if fdp.ConsumeBool():       # few distinct bytes: long runs, many pairs of one rank
        alphabet = sorted(set(piece))[:3]
        piece = bytes(alphabet[b % len(alphabet)] for b in piece)
    ranks = draw_ranks(fdp, piece)
    if SHOW:
        print(f"piece: {piece!r}\n  {describe_ranks(ranks)}", file=sys.stderr)
    got = _core.MergeTable(ranks).encode_single_piece(piece)
    expected = bpe_encode_piece(piece, ranks)
    assert got == expected, f"encode_single_piece != reference: {differ(got, expected)}"


def ranks_from_merges(merges: list[tuple[int, int]]) -> dict[bytes, int]:
    tokens = [bytes([b]) for b in range(256)]
    for left, right in merges:
        tokens.append(tokens[left] + tokens[right])
    return {token: rank for rank, token in enumerate(tokens)}


def check_train(fdp: atheris.FuzzedDataProvider) -> None:
    n_merges = fdp.ConsumeIntInRange(0, 40)
    min_frequency = fdp.ConsumeIntInRange(1, 4) if fdp.ConsumeProbability() < 0.3 else 1
    max_token_length = fdp.ConsumeIntInRange(1, 8) if fdp.ConsumeProbability() < 0.3 else None
    options = {"min_frequency": min_frequency, "max_token_length": max_token_length}
    if fdp.ConsumeBool():
        # The whole path: texts -> pre-tokens -> compiled trainer -> Encoding.
        texts = [draw_text(fdp, 120) for _ in range(fdp.ConsumeIntInRange(0, 8))]
        texts = texts * fdp.ConsumeIntInRange(1, 3)
        pattern = TRAIN_PATTERNS[fdp.ConsumeIntInRange(0, len(TRAIN_PATTERNS) - 1)]
        # A name selects an encoding's pattern; the custom regex is passed as one.
        how = {"pattern": pattern} if pattern in bytebpe.list_encoding_names() else {"pat_str": pattern}
        pat_str = bytebpe.training.resolve_pattern(**how)
        if SHOW:
            print(f"train: pattern={pattern!r} n_merges={n_merges} {options} texts={texts!r}", file=sys.stderr)
        counts = collections.Counter(
            match.group().encode("utf-8") for text in texts for match in regex.finditer(pat_str, repaired(text)))
        expected = ranks_from_merges(bpe_train(counts, n_merges, **options))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")     # small corpora run out of pairs
            enc = bytebpe.train(texts, 256 + n_merges, **how, **options)
        got = dict(enc.mergeable_ranks)
        if got != expected:
            only_got = {t: r for t, r in got.items() if expected.get(t) != r}
            only_expected = {t: r for t, r in expected.items() if got.get(t) != r}
            raise AssertionError(f"train: got {only_got} where the reference has {only_expected}")
        for text in texts[:3]:
            assert enc.decode(enc.encode_ordinary(text)) == repaired(text), "trained encoding does not round-trip"
    else:
        # The compiled trainer alone, on arbitrary byte pieces with counts, merging in uneven steps.
        pieces: dict[bytes, int] = {}
        for _ in range(fdp.ConsumeIntInRange(0, 20)):
            piece = fdp.ConsumeBytes(fdp.ConsumeIntInRange(1, 16))
            if fdp.ConsumeBool():
                piece = bytes(97 + b % 3 for b in piece)
            if piece:
                pieces[piece] = fdp.ConsumeIntInRange(1, 50)
        steps = [fdp.ConsumeIntInRange(0, 10) for _ in range(fdp.ConsumeIntInRange(0, 3))]
        if SHOW:
            print(f"trainer: n_merges={n_merges} {options} steps={steps} pieces={pieces!r}", file=sys.stderr)
        counts = _train.PieceCounts()
        half = dict(list(pieces.items())[: len(pieces) // 2])
        counts.add_counts(half)
        rest = _train.PieceCounts()
        rest.add_counts({piece: count for piece, count in pieces.items() if piece not in half})
        counts.update(rest)
        trainer = _train.BPETrainer(counts, min_frequency, max_token_length or 0)
        for step in steps + [n_merges]:
            trainer.merge(max(0, min(step, n_merges - trainer.n_merges)))
        expected = bpe_train(pieces, n_merges, **options)
        assert trainer.merges == expected, f"BPETrainer != reference: {differ(trainer.merges, expected)}"


def TestOneInput(data: bytes) -> None:
    fdp = atheris.FuzzedDataProvider(data)
    kind = fdp.ConsumeIntInRange(0, 9)
    if kind < 6:
        check_encode(fdp)
    elif kind < 8:
        check_train(fdp)
    else:
        check_piece(fdp)


def main() -> None:
    atheris.Setup(sys.argv, TestOneInput)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
