"""Token budgets: counting tokens without the ids, the first ids of a text only, decoding ids as they stream in.

- `count(text, ...)` is ``len(encode(text, ...))`` with the same arguments and errors; `count_ordinary` is
  ``len(encode_ordinary(text))``; `count_batch` is the lengths of `encode_batch`'s lists. Checked on every
  kind of encoding (named, imported tokenizer.json, a model's own file) over corpus slices, special tokens
  under each policy, and texts the encoder has to repair.
- `encode(..., max_tokens=N)` (and `encode_ordinary`, `encode_to_numpy`) is exactly ``encode(...)[:N]``, the
  whole text checked for disallowed special tokens as before, on every kind of encoding and pre-tokenizer.
- `decode_stream()`: the text of the steps, joined, and of the final flush, is what Python's incremental UTF-8
  decoder gives for the tokens' bytes (and so ``decode(ids, errors)``), whatever the step sizes, invalid bytes
  included; special tokens are dropped on request; a bad id fails the step and leaves the stream as it was.
"""
from __future__ import annotations

import codecs

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import bytebpe


NAMED = ["gpt2", "cl100k_base", "o200k_base"]
TEXTS = [
    "", "hello world", "héllo 日本語 🎉 ok", "a" * 300, "  \n\n\t x  ", "<|endoftext|> and <|fim_prefix|>",
    "emoji 👩‍👩‍👧 and combining e\u0301", "lone \ud800 surrogate",
]


@pytest.fixture(scope="module", params=NAMED)
def enc(request) -> bytebpe.Encoding:
    return bytebpe.get_encoding(request.param)


def corpus_texts(corpus_dir) -> list[str]:
    texts = []
    for name in ("english_prose.txt", "code.txt", "multilingual.txt"):
        whole = (corpus_dir / name).read_text(encoding="utf-8")
        texts += [whole[i:i + 3000] for i in range(0, 60_000, 3000)]
    return texts


# ---- count ----------------------------------------------------------------------------------------------------

def test_count_is_the_length_of_encode_for_every_policy(enc):
    for text in TEXTS:
        assert enc.count_ordinary(text) == len(enc.encode_ordinary(text))
        for allowed, disallowed in [(set(), ()), ("all", "all"), ({"<|endoftext|>"}, ())]:
            assert enc.count(text, allowed_special=allowed, disallowed_special=disallowed) \
                == len(enc.encode(text, allowed_special=allowed, disallowed_special=disallowed))


def test_count_refuses_what_encode_refuses_with_the_same_error(enc):
    for bad in ["<|endoftext|>", "x <|endoftext|>"]:
        with pytest.raises(ValueError) as counted:
            enc.count(bad)
        with pytest.raises(ValueError) as encoded:
            enc.encode(bad)
        assert str(counted.value) == str(encoded.value)
    for wrong in [None, b"bytes", 3]:
        with pytest.raises(TypeError) as counted:
            enc.count(wrong)
        with pytest.raises(TypeError) as encoded:
            enc.encode(wrong)
        assert str(counted.value) == str(encoded.value)


def test_count_batch_is_the_lengths_of_encode_batch(enc, corpus_dir):
    texts = corpus_texts(corpus_dir) + [text for text in TEXTS if "<|" not in text]
    for threads in (1, 2, 8):
        assert enc.count_batch(texts, num_threads=threads) == [len(ids) for ids in enc.encode_batch(texts)]
    assert enc.count_batch([]) == []
    assert enc.count_batch(["<|endoftext|>"], allowed_special="all") == [1]
    with pytest.raises(ValueError, match="disallowed special token"):
        enc.count_batch(["fine", "<|endoftext|>"])


def test_count_on_the_corpora_is_the_length_of_encode(enc, corpus_dir):
    for text in corpus_texts(corpus_dir):
        assert enc.count(text) == len(enc.encode(text))


def test_count_of_imported_and_model_file_encodings_is_the_length_of_encode(tmp_path, corpus_dir):
    gpt2 = bytebpe.get_encoding("gpt2")
    gpt2.to_tokenizer_json(tmp_path / "tokenizer.json")
    imported = bytebpe.from_tokenizer_json(tmp_path / "tokenizer.json")
    encodings = [imported, bytebpe.from_tokenizer_json(tmp_path / "tokenizer.json", add_special_tokens=True)]
    mistral_common = pytest.importorskip("mistral_common")
    from pathlib import Path

    tekken = Path(mistral_common.__file__).parent / "data" / "tekken_240911.json"
    encodings.append(bytebpe.load_tokenizer(tekken))
    for enc in encodings:
        for text in corpus_texts(corpus_dir)[::5] + TEXTS:
            assert enc.count(text, disallowed_special=()) == len(enc.encode(text, disallowed_special=()))
            assert enc.count_ordinary(text) == len(enc.encode_ordinary(text))


# ---- max_tokens ---------------------------------------------------------------------------------------------

def test_the_first_ids_are_those_of_the_whole_text_for_every_budget(enc, corpus_dir):
    texts = corpus_texts(corpus_dir)[::4] + [text for text in TEXTS if "<|" not in text]
    for text in texts:
        whole = enc.encode(text)
        for n in sorted({0, 1, 2, 7, 50, 333, len(whole) - 1, len(whole), len(whole) + 5} - {-1}):
            assert enc.encode(text, max_tokens=n) == whole[:n]
            assert enc.encode_ordinary(text, max_tokens=n) == enc.encode_ordinary(text)[:n]
            assert enc.encode_to_numpy(text, max_tokens=n).tolist() == whole[:n]


def test_the_first_ids_around_allowed_special_tokens_and_repaired_surrogates(enc):
    text = ("<|endoftext|>hello <|endoftext|> world " * 30) + "lone \ud800 end " * 20
    whole = enc.encode(text, allowed_special="all")
    for n in range(0, len(whole) + 2, 7):
        assert enc.encode(text, allowed_special="all", max_tokens=n) == whole[:n]
        assert enc.encode(text, disallowed_special=(), max_tokens=n) == enc.encode_ordinary(text)[:n]


def test_a_disallowed_special_token_beyond_the_budget_is_still_refused(enc):
    text = "word " * 10_000 + "<|endoftext|>"
    with pytest.raises(ValueError, match="disallowed special token"):
        enc.encode(text, max_tokens=5)


def test_the_first_ids_of_other_pre_tokenizers_and_imported_files(tmp_path, corpus_dir):
    gpt2 = bytebpe.get_encoding("gpt2")
    gpt2.to_tokenizer_json(tmp_path / "tokenizer.json")
    encodings = [gpt2.with_pretokenizer("regex"), bytebpe.from_tokenizer_json(tmp_path / "tokenizer.json"),
                 bytebpe.from_tokenizer_json(tmp_path / "tokenizer.json", add_special_tokens=True)]
    text = corpus_texts(corpus_dir)[0]
    for other in encodings:
        whole = other.encode(text)
        for n in (0, 1, 10, len(whole) + 1):
            assert other.encode(text, max_tokens=n) == whole[:n]


@pytest.mark.parametrize("bad, error", [(-1, ValueError), (1.5, TypeError), ("3", TypeError), (True, TypeError)])
def test_a_bad_budget_is_refused(enc, bad, error):
    with pytest.raises(error, match="max_tokens"):
        enc.encode("hello", max_tokens=bad)


def test_batches_cut_each_documents_ids(enc, corpus_dir):
    texts = corpus_texts(corpus_dir)[::5] + ["", "x"]
    for n in (0, 3, 100):
        assert enc.encode_batch(texts, max_tokens=n) == [ids[:n] for ids in enc.encode_batch(texts)]
        assert enc.encode_ordinary_batch(texts, max_tokens=n, num_threads=2) \
            == [ids[:n] for ids in enc.encode_ordinary_batch(texts)]
    with pytest.raises(ValueError, match="max_tokens"):
        enc.encode_batch(texts, max_tokens=-2)


@pytest.mark.parametrize("side", ["right", "left"])
@pytest.mark.parametrize("max_tokens", [0, 1, 17, 5000])
def test_a_padded_batch_holds_each_documents_ids_cut_to_the_budget_on_its_side(enc, corpus_dir, side, max_tokens):
    texts = corpus_texts(corpus_dir)[::7] + ["", "x", "hello world"]
    batch, lengths = enc.encode_batch_padded(texts, max_tokens=max_tokens, pad_id=7, side=side, num_threads=2)
    whole = enc.encode_batch(texts)
    width = min(max(len(ids) for ids in whole), max_tokens)
    assert batch.dtype == "uint32" and lengths.dtype == "int64" and batch.shape == (len(texts), width)
    for row, lengths_kept, ids in zip(batch.tolist(), lengths.tolist(), whole):
        kept = ids[:max_tokens] if side == "right" else ids[max(0, len(ids) - max_tokens):]
        pad = [7] * (width - len(kept))
        assert lengths_kept == len(kept) and row == (kept + pad if side == "right" else pad + kept)


def test_a_padded_batch_refuses_bad_arguments(enc):
    for options, error in [({"max_tokens": -1, "pad_id": 0}, ValueError), ({"max_tokens": 4, "pad_id": -1}, ValueError),
                           ({"max_tokens": 4, "pad_id": 0, "side": "middle"}, ValueError),
                           ({"max_tokens": 4.0, "pad_id": 0}, TypeError)]:
        with pytest.raises(error):
            enc.encode_batch_padded(["a"], **options)
    batch, lengths = enc.encode_batch_padded([], max_tokens=4, pad_id=0)
    assert batch.shape == (0, 0) and lengths.shape == (0,)


# ---- decode_stream ----------------------------------------------------------------------------------------------

CL100K = bytebpe.get_encoding("cl100k_base")
# Ids whose bytes split characters (one byte of a 2-4 byte sequence, or a lone continuation byte), whole tokens,
# and special tokens.
SPLITTING = [CL100K.encode_single_token(bytes([b])) for b in (0xE6, 0x97, 0xA5, 0xF0, 0x9F, 0x8E, 0x89, 0xC3, 0xA9)]
IDS = st.lists(st.one_of(st.sampled_from(SPLITTING), st.integers(0, 100_255), st.just(100_257)), max_size=60)


def reference_text(ids: list[int], errors: str, skip: frozenset[int] = frozenset()) -> str:
    decoder = codecs.getincrementaldecoder("utf-8")(errors)
    text = "".join(decoder.decode(CL100K.decode_single_token_bytes(token)) for token in ids if token not in skip)
    return text + decoder.decode(b"", final=True)


def streamed(stream: bytebpe.DecodeStream, ids: list[int], cuts: list[int]) -> str:
    parts, at = [], 0
    for size in cuts:
        step = ids[at:at + size]
        parts.append(stream.step(step[0] if len(step) == 1 and size % 2 else step))
        at += size
    parts.append(stream.step(ids[at:]))
    return "".join(parts) + stream.flush()


@settings(max_examples=300, deadline=None, derandomize=True)
@given(ids=IDS, cuts=st.lists(st.integers(1, 5), max_size=30), skip=st.booleans())
def test_streamed_text_is_the_incremental_utf8_decoders_whatever_the_steps(ids, cuts, skip):
    stream = CL100K.decode_stream(skip_special_tokens=skip)
    skipped = frozenset(CL100K.special_tokens.values()) if skip else frozenset()
    assert streamed(stream, ids, cuts) == reference_text(ids, "replace", skipped)
    if not skip:
        assert reference_text(ids, "replace") == CL100K.decode(ids)
    assert stream.pending == b""


def test_a_character_split_over_tokens_comes_out_when_its_last_byte_arrives():
    ids = CL100K.encode("日本 🎉")
    stream = CL100K.decode_stream()
    out = [stream.step(token) for token in ids]
    assert "".join(out) == "日本 🎉" and all("\ufffd" not in part for part in out)
    first = [CL100K.encode_single_token(bytes([b])) for b in "🎉".encode()]
    stream = CL100K.decode_stream()
    assert [stream.step(token) for token in first] == ["", "", "", "🎉"]


def test_strict_errors_raise_where_the_bytes_cannot_be_utf8_and_at_flush_for_an_unfinished_character():
    stream = CL100K.decode_stream(errors="strict")
    assert stream.step(SPLITTING[0]) == ""                      # 0xE6: the start of a 3-byte character
    with pytest.raises(UnicodeDecodeError):
        stream.step(CL100K.encode_single_token(b"a"))           # ... which cannot go on with "a"
    stream = CL100K.decode_stream(errors="strict")
    stream.step(SPLITTING[0])
    with pytest.raises(UnicodeDecodeError):
        stream.flush()
    assert stream.pending == b"" and stream.step(CL100K.encode("ok")) == "ok"    # usable after the flush


def test_prefill_takes_a_prompt_whose_last_character_the_next_step_completes():
    prompt, generated = [SPLITTING[0], SPLITTING[1]], [SPLITTING[2], CL100K.encode_single_token(b"!")]
    stream = CL100K.decode_stream()
    assert stream.prefill(prompt) is None
    assert stream.pending == b"\xe6\x97"
    assert stream.step(generated) + stream.flush() == "日!"


def test_a_bad_id_fails_the_step_and_leaves_the_stream_as_it_was():
    stream = CL100K.decode_stream()
    stream.step(SPLITTING[0])
    for bad in ([10**9], [-1], ["x"], 10**9, -1, 2**32, 2**64, -(2**70)):
        with pytest.raises(Exception) as stepped:
            stream.step(bad)
        with pytest.raises(type(stepped.value)):
            CL100K.decode(bad if isinstance(bad, list) else [bad])
        assert stream.pending == b"\xe6"
    assert stream.step(SPLITTING[1:3]) == "日"


def test_a_stream_shows_its_error_handler_and_unfinished_bytes():
    stream = CL100K.decode_stream(errors="strict")
    stream.step(SPLITTING[0])
    assert repr(stream) == "DecodeStream(errors='strict', pending=b'\\xe6')"


def test_bad_error_handlers_are_refused_when_the_stream_is_made():
    with pytest.raises(LookupError):
        CL100K.decode_stream(errors="no-such-handler")
    with pytest.raises(TypeError):
        CL100K.decode_stream(errors=None)


# ---- encode_with_offsets ----------------------------------------------------------------------------------------

def offsets_from_token_bytes(text: str, token_bytes: list[bytes]) -> list[tuple[int, int]]:
    """The definition, written out: walk the tokens' bytes over the text's UTF-8, a character at a time."""
    char_at_byte = []
    for index, char in enumerate(text):
        char_at_byte += [index] * len(char.encode("utf-8"))
    spans, at = [], 0
    for piece in token_bytes:
        spans.append((char_at_byte[at], char_at_byte[at + len(piece) - 1] + 1))
        at += len(piece)
    assert at == len(char_at_byte)
    return spans


def test_offsets_are_the_characters_each_tokens_bytes_come_from(enc, corpus_dir, tiktoken_encoding):
    reference = tiktoken_encoding(enc.name)
    texts = corpus_texts(corpus_dir)[::6] + [text for text in TEXTS if "\ud800" not in text]
    # Allowed special tokens (split out of the text), and none (one stretch of text, whose UTF-8 the offsets
    # reuse from the encoding, and no special id to look for).
    for policy in ({"allowed_special": "all"}, {"disallowed_special": ()}):
        for text in texts:
            ids, offsets = enc.encode_with_offsets(text, **policy)
            assert ids == reference.encode(text, **policy)
            assert offsets == offsets_from_token_bytes(text, reference.decode_tokens_bytes(ids))
            array_ids, spans = enc.encode_with_offsets_to_numpy(text, **policy)
            assert array_ids.tolist() == ids and [tuple(span) for span in spans.tolist()] == offsets


def test_offsets_of_text_with_surrogates_index_the_text_as_given():
    enc = bytebpe.get_encoding("cl100k_base")
    text = "x\ud83d\ude00y \ud800 z"        # a pair written as two code points, and a lone one
    ids, offsets = enc.encode_with_offsets(text)
    assert ids == enc.encode(text)
    assert [text[start:end] for start, end in offsets] == ["x", "\ud83d\ude00", "\ud83d\ude00", "y", " \ud800", " z"]


def test_offsets_of_imported_files_and_added_tokens(tmp_path):
    gpt2 = bytebpe.get_encoding("gpt2")
    gpt2.to_tokenizer_json(tmp_path / "tokenizer.json")
    imported = bytebpe.from_tokenizer_json(tmp_path / "tokenizer.json")
    text = "héllo <|endoftext|> 日本"
    ids, offsets = imported.encode_with_offsets(text, allowed_special="all")
    assert ids == imported.encode(text, allowed_special="all")
    assert offsets == offsets_from_token_bytes(text, imported.decode_tokens_bytes(ids))


def test_offsets_refuse_ids_that_are_not_the_texts():
    core = bytebpe.get_encoding("cl100k_base")._core
    with pytest.raises(ValueError, match="not this text's"):
        core.char_offsets([15339, 1917], "hello")
    with pytest.raises(ValueError, match="not this text's"):
        core.char_offsets([15339], "hello world")


def test_offsets_as_numpy_are_the_lists(enc, corpus_dir):
    for text in corpus_texts(corpus_dir)[::6] + TEXTS:
        ids, offsets = enc.encode_with_offsets(text, allowed_special="all")
        array_ids, spans = enc.encode_with_offsets_to_numpy(text, allowed_special="all")
        assert array_ids.dtype == "uint32" and spans.dtype == "int64" and spans.shape == (len(ids), 2)
        assert array_ids.tolist() == ids and [tuple(span) for span in spans.tolist()] == offsets
