"""transformers' fast tokenizers on bytebpe (`bytebpe.hf.patch_transformers`) against stock transformers.

Each real file bytebpe serves is loaded twice, stock and accelerated, and every output key of the call
patterns that training and serving code uses must be equal: single texts, batches, pairs, words, padding
(longest, max_length, multiples, left), truncation with overflowing windows and a stride, offsets, special
masks, lengths, numpy tensors, decode, tokenize, added tokens. A file bytebpe cannot serve stays on HF's
backend (`is_accelerated` False) with outputs unchanged. Threads sharing one tokenizer, each with its own
padding and truncation, get what one thread gets.
"""
from __future__ import annotations

import concurrent.futures
import logging
from pathlib import Path

import numpy as np
import pytest

import bytebpe.hf
from tests.real_files import RealFile, locate, real_files

transformers = pytest.importorskip("transformers")

TEXTS = ["Hello world, it's me again.", "", "  two  spaces\n\nand lines", "x" * 60 + " tail",
         "def f(x):\n    return x ** 2", "日本語のテキストと English", "😀🇺🇸 emoji, 123456789", "e\u0301 ü ﬁ"]
PAIRS = [(TEXTS[0], TEXTS[2]), (TEXTS[4], TEXTS[5]), ("", "b")]
CALLS = [
    {},
    {"padding": True},
    {"padding": "max_length", "max_length": 40, "padding_side": "left"},
    {"padding": True, "pad_to_multiple_of": 8, "return_special_tokens_mask": True, "return_length": True},
    {"truncation": True, "max_length": 9, "return_overflowing_tokens": True, "stride": 2, "padding": True},
    {"truncation": True, "max_length": 12, "truncation_side": "left", "return_offsets_mapping": True},
    {"return_offsets_mapping": True, "add_special_tokens": False},
    {"return_tensors": "np", "padding": True, "truncation": True, "max_length": 16},
    {"return_tensors": "np"},                                   # ragged rows: an array of lists
    {"return_tensors": "np", "padding": True, "return_token_type_ids": True, "return_length": True},
    {"padding": "max_length", "max_length": 6, "split_special_tokens": True},   # rows longer than the length
]


def _outcome(method, *args):
    """What a call gives: ("value", its result), or ("raises", the exception's type)."""
    try:
        return "value", method(*args)
    except Exception as error:  # noqa: BLE001 — compared, not hidden: the other side must raise the same
        return "raises", type(error)


def _served() -> list[RealFile]:
    """The files bytebpe.hf serves: those bytebpe's encodings take, and those refused only for the truncation
    and padding they set (bytebpe.hf applies them)."""
    return [entry for entry in real_files() if entry.format == "tokenizer.json" and (
        entry.expect == "exact" or entry.refused_because == "truncation is not supported")]


def _not_served() -> list[RealFile]:
    """Files HF loads and bytebpe does not serve (Unigram, WordPiece)."""
    return [entry for entry in real_files() if entry.format == "tokenizer.json" and entry.expect == "refused"
            and not entry.hf_refuses and entry not in _served()]


def _load(path: Path, accelerated: bool):
    if accelerated:
        bytebpe.hf.patch_transformers()
    try:
        tok = transformers.PreTrainedTokenizerFast(tokenizer_file=str(path))
    finally:
        bytebpe.hf.unpatch_transformers()
    tok.pad_token = tok.convert_ids_to_tokens(0)
    return tok


@pytest.fixture(scope="module", params=_served(), ids=str)
def stock_and_fast(request: pytest.FixtureRequest):
    path = locate(request.param)
    if path is None:
        pytest.skip(f"{request.param.name} is not in BYTEBPE_REAL_FILES_DIR (tools/fetch_real_files.py)")
    stock, fast = _load(path, accelerated=False), _load(path, accelerated=True)
    assert not bytebpe.hf.is_accelerated(stock)
    assert bytebpe.hf.is_accelerated(fast), f"{request.param.name} is served by bytebpe, yet stayed on HF"
    return stock, fast


def assert_same_outputs(want, got, where: str) -> None:
    assert set(got.keys()) == set(want.keys()), where
    for key in want:
        w, g = want[key], got[key]
        if isinstance(w, np.ndarray) and w.dtype == object:     # (ragged rows: an array of lists)
            assert isinstance(g, np.ndarray) and g.dtype == object and w.shape == g.shape, f"{where}: {key}"
            assert [list(row) for row in w] == [list(row) for row in g], f"{where}: {key}"
        elif isinstance(w, np.ndarray):
            assert isinstance(g, np.ndarray) and w.dtype == g.dtype and np.array_equal(w, g), f"{where}: {key}"
        else:
            assert g == w, f"{where}: {key}"


def test_call_patterns_give_stock_outputs(stock_and_fast) -> None:
    stock, fast = stock_and_fast
    for options in CALLS:
        for inputs in (TEXTS, TEXTS[0], PAIRS):
            args = ([p[0] for p in inputs], [p[1] for p in inputs]) if inputs is PAIRS else (inputs,)
            try:
                want = stock(*args, **options)
            except BaseException as refused:    # stock refuses: bytebpe must refuse the same way
                if isinstance(refused, KeyboardInterrupt):
                    raise
                if type(refused).__name__ == "PanicException":  # (HF panics at a stride too long for what is left)
                    assert "stride" in str(refused)
                    with pytest.raises(ValueError, match="stride"):
                        fast(*args, **options)
                else:
                    with pytest.raises(type(refused)) as ours:
                        fast(*args, **options)
                    assert str(ours.value) == str(refused)
                continue
            got = fast(*args, **options)
            assert_same_outputs(want, got, f"{options} on {str(inputs)[:30]}")
            if not isinstance(inputs, str) and "return_tensors" not in options:
                for index in range(len(want["input_ids"])):
                    assert got.tokens(index) == want.tokens(index)
                    assert got.sequence_ids(index) == want.sequence_ids(index)
    words = [["Hello", " world"], ["日本", "語"]]
    assert_same_outputs(stock(words, is_split_into_words=True), fast(words, is_split_into_words=True), "words")


def test_decoding_and_lookups_give_stock_outputs(stock_and_fast) -> None:
    stock, fast = stock_and_fast
    batches = stock(TEXTS)["input_ids"]
    for skip in (False, True):
        assert fast.batch_decode(batches, skip_special_tokens=skip) == stock.batch_decode(
            batches, skip_special_tokens=skip)
        assert fast.decode(batches[0], skip_special_tokens=skip) == stock.decode(batches[0],
                                                                                  skip_special_tokens=skip)
    shapes = [[np.int64(i) for i in batches[0]], tuple(batches[1]), np.asarray(batches[0]), [np.asarray(batches[0])],
              stock(TEXTS, padding=True, return_tensors="np")["input_ids"], [], [[]], batches[0][:1]]
    for ids in shapes:     # (numpy's integers and arrays, tuples, empty lists: what to_py_obj takes)
        # (transformers 4.x refuses a list of lists in decode, with a TypeError; 5.x decodes each)
        assert _outcome(fast.decode, ids) == _outcome(stock.decode, ids)
        if not isinstance(ids, list) or (ids and not isinstance(ids[0], (int, np.integer))):
            assert fast.batch_decode(ids) == stock.batch_decode(ids)
    for text in TEXTS:
        assert fast.tokenize(text) == stock.tokenize(text)
        assert fast.encode(text) == stock.encode(text)
    assert fast.convert_ids_to_tokens(batches[0]) == stock.convert_ids_to_tokens(batches[0])
    assert fast.get_vocab() == stock.get_vocab() and len(fast) == len(stock)
    assert fast.vocab_size == stock.vocab_size
    assert fast.num_special_tokens_to_add(True) == stock.num_special_tokens_to_add(True)
    padded_want = stock.pad({"input_ids": batches}, padding=True, return_tensors="np")
    assert_same_outputs(padded_want, fast.pad({"input_ids": batches}, padding=True, return_tensors="np"), "pad")


def test_tokens_added_after_loading_reach_bytebpe(stock_and_fast) -> None:
    stock, fast = stock_and_fast
    for tok in (stock, fast):
        tok.add_special_tokens({"additional_special_tokens": ["<|bytebpe_test|>"]})
        tok.add_tokens(["brandnewword"])
    text = "a <|bytebpe_test|> brandnewword b"
    assert_same_outputs(stock(text), fast(text), "after add_tokens")
    assert bytebpe.hf.is_accelerated(fast)


@pytest.mark.parametrize("entry", _not_served(), ids=str)
def test_a_file_bytebpe_cannot_serve_stays_on_hf(entry: RealFile, caplog: pytest.LogCaptureFixture) -> None:
    path = locate(entry)
    if path is None:
        pytest.skip(f"{entry.name} is not in BYTEBPE_REAL_FILES_DIR")
    with caplog.at_level(logging.INFO, logger="bytebpe.hf"):
        fast = _load(path, accelerated=True)
    stock = _load(path, accelerated=False)
    assert not bytebpe.hf.is_accelerated(fast)
    assert any("stays on HF tokenizers" in record.getMessage() for record in caplog.records)
    assert_same_outputs(stock(TEXTS, padding=True), fast(TEXTS, padding=True), "refused file")


def test_threads_sharing_a_tokenizer_each_get_their_own_settings(stock_and_fast) -> None:
    stock, fast = stock_and_fast
    settings = [{"padding": "max_length", "max_length": 30}, {"truncation": True, "max_length": 5},
                {"padding": True, "padding_side": "left"}, {"truncation": True, "max_length": 7, "stride": 1,
                                                            "return_overflowing_tokens": True}]
    expected = [stock(TEXTS, **options) for options in settings]

    def call(index: int):
        return index % len(settings), fast(TEXTS, **settings[index % len(settings)])

    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        for which, got in pool.map(call, range(64)):
            assert_same_outputs(expected[which], got, f"thread with {settings[which]}")


def test_serving_codes_decode_stream_runs_on_the_accelerated_backend(stock_and_fast) -> None:
    """Serving code builds `tokenizers.decoders.DecodeStream` and steps it with the tokenizer's backend; after
    patch_transformers that class is bytebpe's, which takes the accelerated backend and gives HF's chunks."""
    import tokenizers.decoders

    stock, fast = stock_and_fast
    ids = stock(TEXTS[0] + TEXTS[5] + TEXTS[6])["input_ids"]
    hf_stream = tokenizers.decoders.DecodeStream(skip_special_tokens=True)
    want = [hf_stream.step(stock._tokenizer, token_id) for token_id in ids]
    bytebpe.hf.patch_transformers()
    try:
        assert tokenizers.decoders.DecodeStream is bytebpe.hf.DecodeStream
        stream = tokenizers.decoders.DecodeStream(skip_special_tokens=True)
        assert [stream.step(fast._tokenizer, token_id) for token_id in ids] == want
    finally:
        bytebpe.hf.unpatch_transformers()
    assert tokenizers.decoders.DecodeStream is not bytebpe.hf.DecodeStream
