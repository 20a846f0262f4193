"""Counted pre-tokens saved and loaded: one counting pass serves several vocabulary sizes, counts from several
machines add up, the pattern travels with them, and a damaged file is refused naming it."""
from __future__ import annotations

import json

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
