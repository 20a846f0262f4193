"""Exactness: bytebpe gives tiktoken's ids, token for token, on the real vocabularies and corpora.

Every encoding is checked on a sample of every corpus (its head plus slices from across the file, so
that each kind of text is seen); cl100k_base and o200k_base, the encodings in use today, on whole files.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

import bytebpe

from ..conftest import ALL_ENCODINGS

CORPUS_FILES = [
    "english_prose.txt",
    "english_tech.txt",
    "code.txt",
    "multilingual.txt",
    "multi/emoji.txt",
    "multi/emoji_test_unicode15.txt",
    "taylorswift.txt",
]
SAMPLE_CHARS = 400_000
SAMPLE_SLICES = 8


def sample_of(text: str) -> str:
    """The head of `text` plus evenly spaced slices of it, joined by newlines."""
    if len(text) <= SAMPLE_CHARS:
        return text
    slice_chars = SAMPLE_CHARS // (2 * SAMPLE_SLICES)
    step = len(text) // SAMPLE_SLICES
    slices = [text[i * step : i * step + slice_chars] for i in range(1, SAMPLE_SLICES)]
    return "\n".join([text[: SAMPLE_CHARS // 2], *slices])


def assert_same_ids(ours: list[int], theirs: list[int], text: str, enc: bytebpe.Encoding) -> None:
    """Equal id lists, or a failure that shows where they part and the text there."""
    if ours == theirs:
        return
    first = next((i for i, (a, b) in enumerate(zip(ours, theirs)) if a != b), min(len(ours), len(theirs)))
    byte_offset = len(enc.decode_bytes(theirs[:first]))
    context = text.encode("utf-8", "surrogatepass")[max(0, byte_offset - 40) : byte_offset + 40]
    pytest.fail(
        f"{enc.name}: ids differ at token {first} of {len(theirs)} (byte {byte_offset}): "
        f"bytebpe {ours[first:first + 8]} vs tiktoken {theirs[first:first + 8]}; text there: {context!r}")


@pytest.fixture(scope="module")
def corpus_samples(corpus_dir: Path) -> dict[str, str]:
    return {name: sample_of((corpus_dir / name).read_text(encoding="utf-8")) for name in CORPUS_FILES}


@pytest.mark.parametrize("encoding_name", ALL_ENCODINGS)
def test_every_named_encoding_uses_the_compiled_pretokenizer(encoding_name):
    assert bytebpe.get_encoding(encoding_name).pretokenizer == "compiled"


@pytest.mark.parametrize("engine", ["compiled", "regex"])
@pytest.mark.parametrize("encoding_name", ALL_ENCODINGS)
def test_encode_ordinary_equals_tiktoken_on_every_corpus(encoding_name, engine, corpus_samples, tiktoken_ids):
    ours = bytebpe.get_encoding(encoding_name).with_pretokenizer(engine)
    assert ours.pretokenizer == engine
    for name, text in corpus_samples.items():
        assert_same_ids(ours.encode_ordinary(text), list(tiktoken_ids(encoding_name, "encode_ordinary", text)), text,
                        ours)


@pytest.mark.parametrize("engine", ["compiled", "regex"])
@pytest.mark.parametrize("encoding_name", ALL_ENCODINGS)
def test_encode_with_all_specials_allowed_equals_tiktoken(encoding_name, engine, corpus_samples, tiktoken_encoding,
                                                         tiktoken_ids):
    ours = bytebpe.get_encoding(encoding_name).with_pretokenizer(engine)
    specials = sorted(tiktoken_encoding(encoding_name).special_tokens_set)[:50]
    # Special tokens between, inside and around ordinary text, including glued to words and spaces.
    text = "".join(
        f"{special}{chunk} {special}" for special, chunk in zip(specials * 40, corpus_samples["code.txt"].split("\n")))
    assert_same_ids(ours.encode(text, allowed_special="all"), list(tiktoken_ids(encoding_name, "encode", text, "all")),
                    text, ours)


@pytest.mark.parametrize("encoding_name", ALL_ENCODINGS)
def test_decode_round_trips_every_corpus(encoding_name, corpus_samples):
    enc = bytebpe.get_encoding(encoding_name)
    for text in corpus_samples.values():
        ids = enc.encode_ordinary(text)
        assert enc.decode_bytes(ids) == text.encode("utf-8")
        assert enc.decode(ids) == text


@pytest.mark.parametrize("engine", ["compiled", "regex"])
@pytest.mark.parametrize("jsonl", ["docs_english.jsonl", "docs_code.jsonl", "docs_multilingual.jsonl"])
@pytest.mark.parametrize("encoding_name", ["r50k_base", "cl100k_base", "o200k_base"])
def test_batches_of_documents_equal_tiktoken_and_a_plain_loop(encoding_name, jsonl, engine, corpus_dir,
                                                              tiktoken_ids):
    docs = [json.loads(line)["text"] for line in (corpus_dir / jsonl).read_text(encoding="utf-8").split("\n") if line]
    if engine == "regex":
        docs = docs[: len(docs) // 4]   # the `regex` package on cl100k's pattern takes ~20 s for all of them
    ours = bytebpe.get_encoding(encoding_name).with_pretokenizer(engine)
    expected = [list(ids) for ids in tiktoken_ids(encoding_name, "encode_ordinary_batch", tuple(docs))]
    assert ours.encode_ordinary_batch(docs) == expected
    assert ours.encode_batch(docs, allowed_special="all") == [
        list(ids) for ids in tiktoken_ids(encoding_name, "encode_batch", tuple(docs), "all")]
    assert [ours.encode_ordinary(doc) for doc in docs] == expected
    ids, offsets = ours.encode_batch_to_numpy(docs)
    assert offsets[0] == 0 and offsets[-1] == len(ids) and len(offsets) == len(docs) + 1
    assert [ids[offsets[i] : offsets[i + 1]].tolist() for i in range(len(docs))] == expected


# A call makes its merge cache when the first piece that is no token comes (a text of whole tokens never makes
# it), sized for the whole call: that piece may come first, last, after the size where the core drops the
# GIL, in a later text of a batch, or never.
WHOLE_TOKENS = " the" * 3000
TO_MERGE = " Pneumonoultramicroscopic"
FIRST_MERGE_PLACES = [WHOLE_TOKENS, TO_MERGE, WHOLE_TOKENS + TO_MERGE, TO_MERGE + WHOLE_TOKENS,
                      " the" + TO_MERGE + WHOLE_TOKENS, WHOLE_TOKENS + TO_MERGE + WHOLE_TOKENS + TO_MERGE * 3, " the"]


@pytest.mark.parametrize("engine", ["compiled", "regex"])
@pytest.mark.parametrize("encoding_name", ["gpt2", "cl100k_base", "o200k_base"])
def test_the_first_piece_to_merge_may_come_anywhere_in_a_call(encoding_name, engine, tiktoken_encoding):
    tik = tiktoken_encoding(encoding_name)
    ours = bytebpe.get_encoding(encoding_name).with_pretokenizer(engine)
    expected = [tik.encode_ordinary(text) for text in FIRST_MERGE_PLACES]
    assert [ours.encode_ordinary(text) for text in FIRST_MERGE_PLACES] == expected
    assert [ours.encode(text) for text in FIRST_MERGE_PLACES] == expected
    assert [ours.encode_to_numpy(text).tolist() for text in FIRST_MERGE_PLACES] == expected
    for batch in (FIRST_MERGE_PLACES, FIRST_MERGE_PLACES[::-1], [WHOLE_TOKENS] * 30 + [TO_MERGE]):
        assert ours.encode_ordinary_batch(batch) == [tik.encode_ordinary(text) for text in batch]


@pytest.mark.slow
@pytest.mark.parametrize("encoding_name", ["cl100k_base", "o200k_base"])
@pytest.mark.parametrize("filename", ["english_prose.txt", "code.txt", "multilingual.txt"])
def test_whole_corpus_files_equal_tiktoken(encoding_name, filename, corpus_dir, tiktoken_encoding):
    text = (corpus_dir / filename).read_text(encoding="utf-8")
    ours, theirs = bytebpe.get_encoding(encoding_name), tiktoken_encoding(encoding_name)
    assert_same_ids(ours.encode_ordinary(text), theirs.encode_ordinary(text), text, ours)
    assert (ours.encode_to_numpy(text).tolist() == theirs.encode_ordinary(text))
