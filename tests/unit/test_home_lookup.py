"""The fused encode loop's first two passes (hash each piece, find the tokens in their home slots) run with
more than one instruction set (_home_lookup.h): the widest the CPU has from import on, and the scalar code
everywhere. Every variant gives tiktoken's ids, on real text and on the texts where the vector pass hands
pieces back to the scalar code: pieces longer than 8 bytes, pieces too near the text's end to read 8 bytes,
batches whose piece count is no multiple of 8, tables whose tokens are all shorter than 8 bytes.
"""
from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import regex
from hypothesis import given, settings
from hypothesis import strategies as st

import bytebpe
from bytebpe import Encoding, _core
from bytebpe._reference import bpe_encode_piece
from bytebpe.patterns import CL100K_PATTERN


@pytest.fixture(params=_core.lookup_isas())
def lookup_isa(request: pytest.FixtureRequest) -> Iterator[str]:
    previous = _core.set_lookup_isa(request.param)
    yield request.param
    _core.set_lookup_isa(previous)


def test_the_widest_instruction_set_the_cpu_runs_is_in_use():
    isas = _core.lookup_isas()
    assert isas[0] == "scalar" and set(isas) <= set(_core.LOOKUP_ISAS)
    previous = _core.set_lookup_isa("scalar")
    assert previous == isas[-1]
    assert _core.set_lookup_isa(previous) == "scalar"


def test_an_instruction_set_the_cpu_lacks_or_an_unknown_one_is_refused():
    with pytest.raises(ValueError, match="not available here"):
        _core.set_lookup_isa("sse9")


@pytest.mark.parametrize("name", ["r50k_base", "cl100k_base", "o200k_base"])
@pytest.mark.parametrize("corpus", ["english_prose.txt", "code.txt", "multilingual.txt"])
def test_every_variant_gives_tiktokens_ids_on_real_text(lookup_isa, name, corpus, corpus_dir: Path,
                                                        tiktoken_encoding: Any, data_dir: Path):
    text = (corpus_dir / corpus).read_text(encoding="utf-8")[:150_000]
    ours, theirs = bytebpe.get_encoding(name), tiktoken_encoding(name)
    expected = theirs.encode_ordinary(text)
    assert ours.encode_ordinary(text) == expected
    assert ours.encode_to_numpy(text).tolist() == expected
    documents = [text[i:i + 3000] for i in range(0, 60_000, 3000)]
    flat, offsets = ours.encode_batch_to_numpy(documents, num_threads=2)
    assert [flat[offsets[i]:offsets[i + 1]].tolist() for i in range(len(documents))] == \
        theirs.encode_ordinary_batch(documents)


def _pieces_near_the_end() -> list[str]:
    """Texts whose last pieces start 0 to 16 bytes before the end, each of 1 to 20 bytes, after enough
    pieces to fill whole vector steps and part of one."""
    rng = random.Random(3)
    words = ["a", "an", "the", "ing", "tion", "apple", "banana", "understand", "hypothetical", "!", "??",
             "123", "4567", "\n", "  ", "é", "日本", "😀"]
    texts = []
    for before in range(0, 25):
        for size in range(1, 21):
            prefix = " ".join(rng.choice(words) for _ in range(before))
            texts.append(f"{prefix} {'x' * size}")
            texts.append(f"{prefix} {'thequickbrownfoxjumps'[:size]}.")
    return texts


@pytest.mark.parametrize("name", ["cl100k_base", "o200k_base"])
def test_every_variant_gives_tiktokens_ids_where_the_vector_pass_hands_pieces_back(lookup_isa, name,
                                                                                   tiktoken_encoding: Any,
                                                                                   data_dir: Path):
    ours, theirs = bytebpe.get_encoding(name), tiktoken_encoding(name)
    for text in _pieces_near_the_end():
        expected = theirs.encode_ordinary(text)
        assert ours.encode_ordinary(text) == expected, text
        assert ours.encode_to_numpy(text).tolist() == expected, text


@pytest.mark.parametrize("pieces", [1, 7, 8, 9, 255, 256, 257, 263, 264, 265, 513, 4099])
def test_every_variant_gives_tiktokens_ids_for_any_count_of_pieces(lookup_isa, pieces, tiktoken_encoding: Any,
                                                                   data_dir: Path):
    # A batch of the scan holds up to SCAN_BATCH pieces, and the vector pass takes 8 at a time.
    rng = random.Random(pieces)
    words = [" the", " of", " and", " a", " extraordinarily", " hypothetically", ",", ".", " 42", " x"]
    text = "".join(rng.choice(words) for _ in range(pieces))
    ours, theirs = bytebpe.get_encoding("cl100k_base"), tiktoken_encoding("cl100k_base")
    expected = theirs.encode_ordinary(text)
    assert ours.encode_ordinary(text) == expected
    assert ours.encode_to_numpy(text).tolist() == expected


def test_every_variant_gives_the_reference_ids_with_tokens_all_shorter_than_8_bytes(lookup_isa):
    # No token reaches 8 bytes: the vector pass is not used (its pieces must be within the longest token).
    ranks = {bytes([b]): b for b in range(256)}
    for word in (b" th", b"the", b" the", b"ing", b" a", b"an", b" and"):
        ranks.setdefault(word, len(ranks))
    encoding = Encoding("short-tokens", pat_str=CL100K_PATTERN, mergeable_ranks=ranks, special_tokens={})
    rng = random.Random(7)
    for _ in range(50):
        text = " ".join(rng.choice(["the", "and", "thing", "a", "bandanna", "antithesis"])
                        for _ in range(rng.randint(1, 300)))
        expected = [rank for part in regex.findall(CL100K_PATTERN, text)
                    for rank in bpe_encode_piece(part.encode(), ranks)]
        assert encoding.encode_ordinary(text) == expected
        assert encoding.encode_to_numpy(text).tolist() == expected


@settings(max_examples=150, deadline=None, derandomize=True, database=None)
@given(text=st.lists(st.sampled_from(["a", "b", "z", "Z", " ", "  ", "\n", "'s", "0", "9", ".", "!", "é", "ß",
                                      "日", "😀", "\t", "abcdefgh", "abcdefghi", "xyzxyzxyzxyzxyzxyz"]),
                     max_size=1000).map("".join))
def test_the_variants_agree_with_each_other_and_tiktoken_on_any_text(text, tiktoken_encoding: Any,
                                                                     data_dir: Path):
    ours, theirs = bytebpe.get_encoding("o200k_base"), tiktoken_encoding("o200k_base")
    expected = theirs.encode_ordinary(text)
    previous = _core.set_lookup_isa("scalar")
    try:
        for isa in _core.lookup_isas():
            _core.set_lookup_isa(isa)
            assert ours.encode_to_numpy(text).tolist() == expected, isa
    finally:
        _core.set_lookup_isa(previous)
