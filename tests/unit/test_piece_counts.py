"""Counted pre-tokens saved and loaded: one counting pass serves several vocabulary sizes, counts from several
machines add up, the pattern travels with them, and a damaged file is refused naming it."""
from __future__ import annotations

import json
import warnings

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import bytebpe
from bytebpe import _train

TEXTS = ["low low low low low lower lower newest newest newest newest newest newest widest widest widest",
         "Hello, world! 1234567 — naïve café 数字", "  indented\n\tcode(x) = y ** 2\n"] * 5


def counts_of(mapping: dict[bytes, int]) -> _train.PieceCounts:
    counts = _train.PieceCounts()
    counts.add_counts(mapping)
    return counts


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(st.binary(min_size=1, max_size=40), st.integers(1, 2**40), max_size=50))
def test_to_bytes_and_add_bytes_give_back_the_same_counts(mapping):
    restored = _train.PieceCounts()
    restored.add_bytes(counts_of(mapping).to_bytes())
    assert restored.to_dict() == mapping
    assert restored.total_pieces == sum(mapping.values())


@pytest.mark.parametrize("cut", [0, 7, 8, 19, 20, -1])
def test_a_truncated_or_padded_payload_is_refused_and_changes_nothing(cut):
    data = counts_of({b"ab": 3, b"hello": 7}).to_bytes()
    counts = counts_of({b"zz": 1})
    for bad in (data[:cut] if cut >= 0 else data[:-1], data + b"\0"):
        with pytest.raises(ValueError, match="piece counts"):
            counts.add_bytes(bad)
    assert counts.to_dict() == {b"zz": 1} and counts.total_pieces == 1


def test_a_payload_whose_counts_would_overflow_is_refused_before_adding():
    counts = counts_of({b"ab": 2**62 - 1})
    counts.add_bytes(counts_of({b"cd": 2**62 - 1}).to_bytes())
    with pytest.raises(OverflowError):
        counts.add_bytes(counts_of({b"ef": 2**62 - 1}).to_bytes())
    assert b"ef" not in counts.to_dict()


def test_train_from_saved_counts_equals_training_on_the_texts(tmp_path):
    counts = bytebpe.count_pieces(TEXTS, pattern="o200k_base")
    bytebpe.save_piece_counts(counts, tmp_path / "all.counts")
    for vocab_size in (270, 300):
        from_file = bytebpe.train_from_counts(bytebpe.load_piece_counts(tmp_path / "all.counts"), vocab_size)
        direct = bytebpe.train(TEXTS, vocab_size, pattern="o200k_base")
        assert dict(from_file.mergeable_ranks) == dict(direct.mergeable_ranks)
        assert from_file._pat_str == direct._pat_str


def test_counts_of_several_parts_add_up_to_the_counts_of_the_whole(tmp_path):
    bytebpe.save_piece_counts(bytebpe.count_pieces(TEXTS[:7]), tmp_path / "a.counts")
    bytebpe.save_piece_counts(bytebpe.count_pieces(TEXTS[7:]), tmp_path / "b.counts")
    added = bytebpe.load_piece_counts(tmp_path / "a.counts", tmp_path / "b.counts")
    assert added.to_dict() == bytebpe.count_pieces(TEXTS).to_dict()
    assert dict(bytebpe.train_from_counts(added, 290).mergeable_ranks) == dict(bytebpe.train(TEXTS, 290).mergeable_ranks)


def test_counts_of_different_patterns_cannot_be_added(tmp_path):
    bytebpe.save_piece_counts(bytebpe.count_pieces(TEXTS, pattern="gpt2"), tmp_path / "a.counts")
    bytebpe.save_piece_counts(bytebpe.count_pieces(TEXTS, pat_str=r"\S+|\s+"), tmp_path / "b.counts")
    with pytest.raises(ValueError, match="another pattern"):
        bytebpe.load_piece_counts(tmp_path / "a.counts", tmp_path / "b.counts")
    assert bytebpe.load_piece_counts(tmp_path / "b.counts").pat_str == r"\S+|\s+"


@pytest.mark.parametrize("damage", ["flip", "truncate", "header", "foreign"])
def test_a_damaged_file_is_refused_naming_it(tmp_path, damage):
    path = tmp_path / "x.counts"
    bytebpe.save_piece_counts(bytebpe.count_pieces(TEXTS), path)
    data = bytearray(path.read_bytes())
    if damage == "flip":
        data[-3] ^= 0x01
    elif damage == "truncate":
        del data[-5:]
    elif damage == "header":
        data[:data.index(b"\n")] = json.dumps({"format": "bytebpe piece counts", "version": 99}).encode()
    else:
        data = bytearray(b"YQ== 0\n")
    path.write_bytes(bytes(data))
    with pytest.raises(ValueError, match=str(path)):
        bytebpe.load_piece_counts(path)


def test_counts_without_a_known_pattern_need_one_to_be_saved_or_trained(tmp_path):
    counts = counts_of({b"ab": 3})
    with pytest.raises(ValueError, match="pass pat_str="):
        bytebpe.save_piece_counts(counts, tmp_path / "x.counts")
    with pytest.raises(ValueError, match="pass pat_str="):
        bytebpe.train_from_counts(counts, 257)
    bytebpe.save_piece_counts(counts, tmp_path / "x.counts", pat_str=r"\S+")
    assert bytebpe.load_piece_counts(tmp_path / "x.counts").to_dict() == {b"ab": 3}


# ==== max_distinct_pieces: pruning ==================================================================


def pruned_by_the_rule(pieces: list[bytes], bound: int) -> tuple[dict[bytes, int], tuple[int, int, int]]:
    """The documented rule, written plainly: count piece by piece; whenever the table reaches 2 * bound
    pieces, and once at the end if it holds more than bound, drop every piece whose count is at most the
    (bound+1)-th largest count. Returns the counts and (passes, pieces dropped, occurrences dropped)."""
    counts: dict[bytes, int] = {}
    passes = dropped_pieces = dropped_occurrences = 0

    def prune() -> None:
        nonlocal passes, dropped_pieces, dropped_occurrences
        if len(counts) <= bound:
            return
        threshold = sorted(counts.values(), reverse=True)[bound]
        for piece in [piece for piece, count in counts.items() if count <= threshold]:
            dropped_occurrences += counts.pop(piece)
            dropped_pieces += 1
        passes += 1

    for piece in pieces:
        counts[piece] = counts.get(piece, 0) + 1
        if len(counts) >= 2 * bound:
            prune()
    prune()
    return counts, (passes, dropped_pieces, dropped_occurrences)


def pruning_of(counts: _train.PieceCounts) -> tuple[int, int, int]:
    return counts.prune_passes, counts.pruned_pieces, counts.pruned_occurrences


def test_pruning_by_hand():
    # Counts 7, 5, 3, 3, 1 with room for 3: the 4th largest count is 3, so both 3s go with the 1
    # (ties go together) and two pieces remain.
    counts = counts_of({b"a": 5, b"b": 3, b"c": 3, b"d": 1, b"e": 7})
    counts.prune(3)
    assert counts.to_dict() == {b"a": 5, b"e": 7} and counts.total_pieces == 12
    assert pruning_of(counts) == (1, 3, 7)
    counts.prune(3)                 # nothing above the bound: no pass
    assert pruning_of(counts) == (1, 3, 7)
    # Automatic, with a bound of 2: a a b b b c d reaches 4 = 2 * 2 pieces at "d"; the 3rd largest count is
    # 1, so c and d go.
    counts = _train.PieceCounts()
    counts.max_distinct_pieces = 2
    counts.add_pieces(list("aabbbcd"))
    assert counts.to_dict() == {b"a": 2, b"b": 3} and counts.total_pieces == 5
    assert pruning_of(counts) == (1, 2, 2)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from("abcdefghij") | st.text("xyzé", min_size=1, max_size=3), max_size=300),
       st.integers(1, 12), st.integers(1, 50))
def test_pruning_follows_the_rule_piece_by_piece_whatever_the_batches(pieces, bound, batch):
    counts = _train.PieceCounts()
    counts.max_distinct_pieces = bound
    for start in range(0, len(pieces), batch):
        counts.add_pieces(pieces[start:start + batch])
    counts.prune(bound)
    expected, stats = pruned_by_the_rule([piece.encode() for piece in pieces], bound)
    assert counts.to_dict() == expected and pruning_of(counts) == stats
    assert len(counts) <= bound and counts.total_pieces == sum(expected.values())


def test_pruned_counts_of_real_text_are_the_same_whatever_the_batch_size(corpus_dir, monkeypatch):
    from bytebpe import training

    lines = (corpus_dir / "multilingual.txt").read_text(encoding="utf-8")[:300_000].splitlines(keepends=True)
    results = []
    for batch_chars in (1, 5_000, 1 << 16):
        monkeypatch.setattr(training, "BATCH_CHARS", batch_chars)
        counts = bytebpe.count_pieces(lines, max_distinct_pieces=2_000)
        results.append((counts.to_dict(), pruning_of(counts)))
    assert results[0][1][0] > 1 and all(len(result[0]) <= 2_000 for result in results)
    assert results[1] == results[0] and results[2] == results[0]
    # The rule as written, on the same pieces (the compiled scanner's, cut from the same lines).
    pieces = [piece.encode() for line in lines for piece in training.pretokenizer_for(counts.pat_str)(line)]
    assert results[0] == pruned_by_the_rule(pieces, 2_000)


def test_a_bound_at_or_above_the_distinct_pieces_changes_nothing():
    whole = bytebpe.count_pieces(TEXTS)
    for bound in (len(whole), len(whole) + 1, 10**9):
        counts = bytebpe.count_pieces(TEXTS, max_distinct_pieces=bound)
        assert counts.to_dict() == whole.to_dict() and pruning_of(counts) == (0, 0, 0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")      # and no warning
        assert bytebpe.train(TEXTS, 300, max_distinct_pieces=len(whole)).mergeable_ranks == \
            bytebpe.train(TEXTS, 300).mergeable_ranks


def test_training_with_a_bound_trains_on_the_pruned_counts_and_warns(tmp_path):
    pruned = bytebpe.count_pieces(TEXTS, max_distinct_pieces=5)
    assert len(pruned) <= 5 and pruned.prune_passes >= 1
    note = (f"dropped {pruned.pruned_pieces:,} rare pieces, {pruned.pruned_occurrences:,} of "
            f"{pruned.total_pieces + pruned.pruned_occurrences:,} occurrences")
    expected = dict(bytebpe.train_from_counts(pruned, 270).mergeable_ranks)
    with pytest.warns(UserWarning, match="max_distinct_pieces=5") as caught:
        assert dict(bytebpe.train(TEXTS, 270, max_distinct_pieces=5).mergeable_ranks) == expected
    assert note in str(caught[0].message)
    (tmp_path / "t.txt").write_text("".join(TEXTS), encoding="utf-8")
    with pytest.warns(UserWarning, match="max_distinct_pieces=5"):
        bytebpe.train_from_files(tmp_path / "t.txt", 270, max_distinct_pieces=5)
    with pytest.raises(ValueError, match="max_distinct_pieces must be"):
        bytebpe.train(TEXTS, 270, max_distinct_pieces=0)


def test_saved_counts_keep_what_pruning_dropped_and_add_it_up(tmp_path):
    first = bytebpe.count_pieces(TEXTS[:7], max_distinct_pieces=4)
    second = bytebpe.count_pieces(TEXTS[7:], max_distinct_pieces=4)
    bytebpe.save_piece_counts(first, tmp_path / "a.counts")
    bytebpe.save_piece_counts(second, tmp_path / "b.counts")
    added = bytebpe.load_piece_counts(tmp_path / "a.counts", tmp_path / "b.counts")
    assert pruning_of(added) == tuple(map(sum, zip(pruning_of(first), pruning_of(second))))
    assert added.prune_passes >= 2


def test_count_pieces_from_files_counts_what_train_from_files_trains_on(tmp_path):
    (tmp_path / "a.txt").write_text("".join(TEXTS[:7]), encoding="utf-8")
    (tmp_path / "b.jsonl").write_text("".join(json.dumps({"body": text}) + "\n" for text in TEXTS[7:]),
                                      encoding="utf-8")
    counts = bytebpe.count_pieces_from_files(tmp_path, field="body", pattern="gpt2")
    assert counts.to_dict() == bytebpe.count_pieces(["".join(TEXTS[:7]), *TEXTS[7:]], pattern="gpt2").to_dict()
    assert dict(bytebpe.train_from_counts(counts, 300).mergeable_ranks) == dict(
        bytebpe.train_from_files(tmp_path, 300, field="body", pattern="gpt2").mergeable_ranks)


# ==== counting on several threads ================================================================


@settings(max_examples=60, deadline=None)
@given(texts=st.lists(st.text(st.characters(codec="utf-8"), max_size=60) | st.sampled_from(TEXTS), max_size=40),
       batch_chars=st.integers(1, 200), workers=st.integers(2, 4))
def test_counting_on_threads_gives_the_serial_counts_whatever_the_batches(texts, batch_chars, workers):
    from bytebpe import training

    scanner = training.pretokenizer_for(training.resolve_pattern("cl100k_base", None))
    serial = training.count_split_pieces(texts, scanner, workers=1)
    original = training.PARALLEL_BATCH_CHARS
    training.PARALLEL_BATCH_CHARS = batch_chars
    try:
        threaded = training.count_split_pieces(texts, scanner, workers=workers)
        again = training.count_split_pieces(texts, scanner, workers=workers)
    finally:
        training.PARALLEL_BATCH_CHARS = original
    assert threaded.to_dict() == serial.to_dict()
    assert threaded.total_pieces == serial.total_pieces
    assert threaded.to_bytes() == again.to_bytes()      # the same table, in the same order, run after run


def test_counting_on_threads_on_real_text_trains_the_serial_vocabulary(corpus_dir):
    from bytebpe import training

    with open(corpus_dir / "multilingual.txt", encoding="utf-8") as file:
        lines = [line for _, line in zip(range(40_000), file)]
    scanner = training.pretokenizer_for(training.resolve_pattern("o200k_base", None))
    serial = training.count_split_pieces(lines, scanner, workers=1)
    threaded = training.count_split_pieces(lines, scanner, workers=2)
    assert threaded.to_dict() == serial.to_dict() and len(serial) > 10_000
    pat_str = training.resolve_pattern("o200k_base", None)
    vocabularies = [training.train_from_counts(counts, 1500, pat_str=pat_str).mergeable_ranks
                    for counts in (serial, threaded)]
    assert vocabularies[0] == vocabularies[1]


def test_an_error_on_a_counting_thread_is_raised_and_the_threads_stop():
    from bytebpe import training

    scanner = training.pretokenizer_for(training.resolve_pattern("cl100k_base", None))
    with pytest.raises(TypeError, match=r"texts\[3\] is a int"):
        training.count_split_pieces(["a b", "c d", "e", 5, "f"], scanner, workers=2)


def test_the_number_of_counting_threads_changes_no_count_nor_file(tmp_path, corpus_dir):
    from bytebpe import cli

    source = corpus_dir / "train_1mb.txt"
    for workers in ("1", "2", "3"):
        assert cli.main(["count-pieces", str(source), "-o", str(tmp_path / f"{workers}.counts"), "--workers", workers,
                         "-q"]) == 0
    one, two, three = (bytebpe.load_piece_counts(tmp_path / f"{n}.counts") for n in "123")
    assert one.to_dict() == two.to_dict() == three.to_dict() and len(one) > 1000
    assert cli.main(["train", str(source), "--vocab-size", "600", "-o", str(tmp_path / "a.json"), "--workers", "1",
                     "-q"]) == 0
    assert cli.main(["train", str(source), "--vocab-size", "600", "-o", str(tmp_path / "b.json"), "--workers", "2",
                     "-q"]) == 0
    assert (tmp_path / "a.json").read_bytes() == (tmp_path / "b.json").read_bytes()
    enc = bytebpe.train(["hello world"] * 10 + ["a b c"] * 5, 265, workers=2)
    assert enc.mergeable_ranks == bytebpe.train(["hello world"] * 10 + ["a b c"] * 5, 265, workers=1).mergeable_ranks
