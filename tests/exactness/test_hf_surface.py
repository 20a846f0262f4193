"""`bytebpe.hf.Tokenizer` against `tokenizers.Tokenizer`, method by method, on the real files bytebpe serves.

Every column of every `Encoding` (ids, type ids, tokens, offsets, masks, word and sequence ids, overflowing
pieces, the mappings) must equal HF's for single texts, pairs and pre-tokenized words, under truncation
(each strategy, direction and a stride) and padding (each direction, fixed lengths, multiples), one at a time
and in batches. Where bytebpe cannot give HF's offsets for a file, asking for them must raise, never answer.
"""
from __future__ import annotations

import copy
import itertools
import json
import pickle
from pathlib import Path

import pytest

import bytebpe.hf
from tests.real_files import RealFile, locate, real_files

tokenizers = pytest.importorskip("tokenizers")

TEXTS = ["Hello world, it's me again.", "", " ", "  two  spaces\n\nand lines", "x" * 40 + " tail",
         "def f(x):\n    return x ** 2  # squared", "日本語のテキストと English 混ざり", "😀🇺🇸 emoji, 123456789",
         "e\u0301 ü ﬁ", "one\ttwo\r\nthree"]
PAIRS = [(TEXTS[0], TEXTS[3]), (TEXTS[5], TEXTS[6]), ("", "b"), (TEXTS[4], TEXTS[7])]
WORDS = [["Hello", " world", "!"], ["日本", "語", " x"], ["a"], []]

TRUNCATIONS = [{"max_length": 7}, {"max_length": 9, "stride": 2}, {"max_length": 8, "direction": "left", "stride": 1},
               {"max_length": 10, "strategy": "only_first"},
               {"max_length": 12, "strategy": "only_second", "stride": 3}, {"max_length": 1}, {"max_length": 0}]
PADDINGS = [{}, {"direction": "left", "pad_id": 3, "pad_token": "<pad>"}, {"length": 24, "pad_type_id": 1},
            {"pad_to_multiple_of": 8, "direction": "left"}]


def _entries() -> list[RealFile]:
    """The files bytebpe.hf serves: those bytebpe's encodings take, and those refused only for the truncation
    and padding they set (bytebpe.hf applies them)."""
    return [entry for entry in real_files() if entry.format == "tokenizer.json" and (
        entry.expect == "exact" or entry.refused_because == "truncation is not supported")]


def _path(entry: RealFile) -> Path:
    path = locate(entry)
    if path is None:
        pytest.skip(f"{entry.name} is not in BYTEBPE_REAL_FILES_DIR (tools/fetch_real_files.py)")
    return path


@pytest.fixture(scope="module", params=_entries(), ids=str)
def pair_of(request: pytest.FixtureRequest) -> tuple[object, bytebpe.hf.Tokenizer]:
    path = _path(request.param)
    return tokenizers.Tokenizer.from_file(str(path)), bytebpe.hf.Tokenizer.from_file(path)


COLUMNS = ["ids", "type_ids", "tokens", "attention_mask", "special_tokens_mask", "sequence_ids", "n_sequences"]
WITH_OFFSETS = ["offsets", "word_ids"]


def _offsets_given(ours: bytebpe.hf.Encoding) -> bool:
    try:
        _ = ours.offsets
    except NotImplementedError:
        return False
    return True


def assert_same(want, got, where: str, depth: int = 0) -> None:
    assert len(got) == len(want), f"{where}: {len(got)} tokens, HF {len(want)}"
    for column in COLUMNS:
        assert getattr(got, column) == getattr(want, column), f"{where}: {column}"
    if _offsets_given(got):
        for column in WITH_OFFSETS:
            assert getattr(got, column) == getattr(want, column), f"{where}: {column}"
        for token in range(len(want) + 1):
            assert got.token_to_chars(token) == want.token_to_chars(token), f"{where}: token_to_chars({token})"
            assert got.token_to_word(token) == want.token_to_word(token), f"{where}: token_to_word({token})"
            assert got.token_to_sequence(token) == want.token_to_sequence(token), where
        for sequence in range(want.n_sequences):
            for char in range(0, 50, 3):
                assert got.char_to_token(char, sequence) == want.char_to_token(char, sequence), \
                    f"{where}: char_to_token({char}, {sequence})"
                assert got.char_to_word(char, sequence) == want.char_to_word(char, sequence), where
            for word in range(12):
                assert got.word_to_tokens(word, sequence) == want.word_to_tokens(word, sequence), \
                    f"{where}: word_to_tokens({word}, {sequence})"
                assert got.word_to_chars(word, sequence) == want.word_to_chars(word, sequence), where
    else:
        with pytest.raises(NotImplementedError, match="not HF's"):
            _ = got.word_ids
    assert len(got.overflowing) == len(want.overflowing), f"{where}: overflowing pieces"
    for index, (w, g) in enumerate(zip(want.overflowing, got.overflowing)):
        assert_same(w, g, f"{where} overflowing[{index}]", depth + 1)


def _configure(tok, truncation: dict | None, padding: dict | None) -> None:
    if truncation is None:
        tok.no_truncation()
    else:
        tok.enable_truncation(**truncation)
    if padding is None:
        tok.no_padding()
    else:
        tok.enable_padding(**padding)


def test_single_texts_pairs_and_words_give_hfs_encodings(pair_of) -> None:
    hf, ours = pair_of
    for special in (True, False):
        for text in TEXTS:
            assert_same(hf.encode(text, add_special_tokens=special), ours.encode(text, add_special_tokens=special),
                        f"{text!r} add_special_tokens={special}")
        for first, second in PAIRS:
            assert_same(hf.encode(first, second, add_special_tokens=special),
                        ours.encode(first, second, add_special_tokens=special), f"pair {first[:10]!r}")
        for words in WORDS:
            assert_same(hf.encode(words, is_pretokenized=True, add_special_tokens=special),
                        ours.encode(words, is_pretokenized=True, add_special_tokens=special), f"words {words}")
        assert_same(hf.encode(WORDS[0], WORDS[1], is_pretokenized=True),
                    ours.encode(WORDS[0], WORDS[1], is_pretokenized=True), "a pair of word lists")
    for inputs, words in ((TEXTS, False), (PAIRS, False), (WORDS, True)):     # (no strings, offsets or words)
        for want, got in zip(hf.encode_batch_fast(inputs, is_pretokenized=words),
                             ours.encode_batch_fast(inputs, is_pretokenized=words)):
            assert_same(want, got, f"encode_batch_fast {inputs[0]!r}")
    assert ours.num_special_tokens_to_add(False) == hf.num_special_tokens_to_add(False)
    assert ours.num_special_tokens_to_add(True) == hf.num_special_tokens_to_add(True)


def _run_with(tok, call: str):
    if call == "single":
        return [tok.encode(text) for text in TEXTS]
    if call == "pair":
        return [tok.encode(first, second) for first, second in PAIRS]
    if call == "batch":
        return tok.encode_batch(TEXTS)
    if call == "pair batch":
        return tok.encode_batch(PAIRS)
    return tok.encode_batch(WORDS, is_pretokenized=True)


@pytest.mark.parametrize("call", ["single", "pair", "batch", "pair batch", "words batch"])
def test_truncation_and_padding_give_hfs_encodings(pair_of, call: str) -> None:
    hf, ours = pair_of
    try:
        for truncation, padding in itertools.product([None, *TRUNCATIONS], [None, *PADDINGS]):
            where = f"{call} truncation={truncation} padding={padding}"
            try:
                _configure(hf, truncation, padding)
            except ValueError as refused:      # HF refuses the setting: so must bytebpe
                with pytest.raises(ValueError):
                    _configure(ours, truncation, padding)
                assert "stride" in str(refused)
                continue
            _configure(ours, truncation, padding)
            assert ours.truncation == hf.truncation and ours.padding == hf.padding, where
            try:
                want = _run_with(hf, call)
            except BaseException as refused:    # (HF panics at a stride too long for what is left to cut)
                if isinstance(refused, KeyboardInterrupt):
                    raise
                # (In a batch, which input's error HF reports depends on its threads: either is right.)
                words = "stride|Truncation error" if "batch" in call else \
                    "stride" if "stride" in str(refused) else "Truncation error"
                with pytest.raises(ValueError, match=words):
                    _run_with(ours, call)
                continue
            got = _run_with(ours, call)
            assert len(got) == len(want)
            for index, (w, g) in enumerate(zip(want, got)):
                assert_same(w, g, f"{where} [{index}]")
    finally:
        _configure(hf, None, None)
        _configure(ours, None, None)


def test_decoding_and_the_vocabulary_are_hfs(pair_of) -> None:
    hf, ours = pair_of
    batches = [hf.encode(text).ids for text in TEXTS] + [[0, 1, 2, 10**9], list(hf.get_added_tokens_decoder())[:5]]
    for skip in (True, False):
        assert ours.decode_batch(batches, skip_special_tokens=skip) == hf.decode_batch(
            batches, skip_special_tokens=skip)
    assert ours.get_vocab() == hf.get_vocab()
    assert ours.get_vocab(with_added_tokens=False) == hf.get_vocab(with_added_tokens=False)
    assert ours.get_vocab_size() == hf.get_vocab_size()
    assert ours.get_vocab_size(with_added_tokens=False) == hf.get_vocab_size(with_added_tokens=False)
    assert {k: repr(v) for k, v in ours.get_added_tokens_decoder().items()} == \
        {k: repr(v) for k, v in hf.get_added_tokens_decoder().items()}
    for token_id in [0, 1, 100, hf.get_vocab_size() - 1, hf.get_vocab_size(), 10**8]:
        assert ours.id_to_token(token_id) == hf.id_to_token(token_id), token_id
    for token in ["hello", "Ġthe", "<s>", "<|endoftext|>", "nope-not-a-token", ""]:
        assert ours.token_to_id(token) == hf.token_to_id(token), token


def test_special_tokens_as_text_give_hfs_encodings(pair_of) -> None:
    hf, ours = pair_of
    specials = [token.content for token in hf.get_added_tokens_decoder().values() if token.special][:3]
    texts = [f"{s}hello {s} world" for s in specials] + TEXTS[:3]
    hf.encode_special_tokens = ours.encode_special_tokens = True
    try:
        for text in texts:
            assert_same(hf.encode(text), ours.encode(text), f"as text: {text!r}")
    finally:
        hf.encode_special_tokens = ours.encode_special_tokens = False


def test_added_tokens_are_added_as_hf_adds_them(pair_of) -> None:
    hf, ours = pair_of
    hf, ours = tokenizers.Tokenizer.from_str(hf.to_str()), copy.deepcopy(ours)
    additions = [["<new_one>", "hello"], [tokenizers.AddedToken("<new_two>", lstrip=True)], ["<new_one>"]]
    for tokens in additions:
        mine = [bytebpe.hf.AddedToken(t.content, t.single_word, t.lstrip, t.rstrip, t.normalized, t.special)
                if isinstance(t, tokenizers.AddedToken) else t for t in tokens]
        assert ours.add_tokens(mine) == hf.add_tokens(tokens)
    assert ours.add_special_tokens(["<special_new>"]) == hf.add_special_tokens(["<special_new>"])
    for text in ["a <new_one> b  <new_two>c", "<special_new>hello"]:
        assert_same(hf.encode(text), ours.encode(text), f"after adding: {text!r}")
    assert ours.decode(hf.encode("x <special_new> y").ids) == hf.decode(hf.encode("x <special_new> y").ids)
    assert ours.get_vocab() == hf.get_vocab()


def test_the_file_round_trips_through_to_str_pickle_and_deepcopy(pair_of) -> None:
    _, ours = pair_of
    ours.enable_truncation(16, stride=2)
    ours.enable_padding(direction="left", length=20)
    try:
        written = ours.to_str()
        back = tokenizers.Tokenizer.from_str(written)   # HF reads what bytebpe writes
        assert back.truncation == ours.truncation and back.padding == ours.padding
        for twin in (bytebpe.hf.Tokenizer.from_str(written), pickle.loads(pickle.dumps(ours)), copy.deepcopy(ours)):
            for text in TEXTS[:4]:
                assert_same(back.encode(text), twin.encode(text), f"round trip {text!r}")
        assert json.loads(ours.to_str(pretty=True)) == json.loads(written)
    finally:
        ours.no_truncation()
        ours.no_padding()


def test_decode_stream_gives_hfs_chunks(pair_of) -> None:
    """Step by step, on random ids (split characters, special tokens, out-of-range ids included)."""
    import random

    from tokenizers.decoders import DecodeStream as HFDecodeStream

    hf, ours = pair_of
    rng = random.Random(57)
    size = hf.get_vocab_size()
    specials = list(hf.get_added_tokens_decoder())
    streams = [hf.encode(text).ids for text in TEXTS] + [
        [rng.choice(specials) if specials and rng.random() < 0.1 else rng.randrange(size) for _ in range(60)]
        for _ in range(8)]
    for skip in (False, True):
        for ids in streams:
            want_stream, got_stream = HFDecodeStream(skip_special_tokens=skip), bytebpe.hf.DecodeStream(
                skip_special_tokens=skip)
            for position, token_id in enumerate(ids):
                try:
                    want = want_stream.step(hf, token_id)
                except Exception:   # noqa: BLE001  (HF raises a bare Exception for an invalid prefix)
                    with pytest.raises(bytebpe.hf.DecodeStreamError):
                        got_stream.step(ours, token_id)
                    break
                assert got_stream.step(ours, token_id) == want, (skip, ids[:position + 1])
        prefill = streams[0][:3]
        want_stream, got_stream = HFDecodeStream(prefill, skip), bytebpe.hf.DecodeStream(prefill, skip)
        assert [got_stream.step(ours, i) for i in streams[0][3:]] == [want_stream.step(hf, i) for i in streams[0][3:]]


# The files whose stream decodes in C (`_Pipeline.stream_tokens`): byte-level ones, and Llama 2-style tables.
# The rest (CLIP's and ChatGLM3's decoders, Tortoise's and pix2tex's, which have no decoder) step by decode.
STREAMS_BY_DECODE = {"tortoise.tokenizer.json", "pix2tex.tokenizer.json", "chatglm3.tokenizer.json",
                     "clip.tokenizer.json"}


def test_a_streams_compiled_decode_is_hfs_decode(pair_of, request) -> None:
    """The table a stream decodes by gives HF's decode of any ids (split characters, byte tokens, specials,
    ids that are no token), with and without skip_special_tokens."""
    import random

    hf, ours = pair_of
    name = request.node.callspec.id
    table = ours._pipeline.stream_tokens()
    assert (table is None) == (name in STREAMS_BY_DECODE), name
    if table is None:
        return
    rng = random.Random(60)
    size = hf.get_vocab_size()
    specials = list(hf.get_added_tokens_decoder())
    bytes_ = [i for i in (hf.token_to_id(f"<0x{b:02X}>") for b in range(256)) if i is not None]
    for _ in range(300):
        ids = [rng.choice(specials) if specials and rng.random() < 0.1 else
               rng.choice(bytes_) if bytes_ and rng.random() < 0.3 else
               size + rng.randrange(5) if rng.random() < 0.02 else rng.randrange(size)
               for _ in range(rng.randrange(12))]
        for skip in (False, True):
            assert table.text_of(ids, skip) == hf.decode(ids, skip_special_tokens=skip), (ids, skip)


def test_a_stream_follows_its_tokenizer_as_it_changes(pair_of) -> None:
    """Tokens added mid-stream, HF's own tokenizer stepped with, a copy taken mid-stream: HF's chunks."""
    from tokenizers.decoders import DecodeStream as HFDecodeStream

    hf, ours = pair_of
    hf, ours = copy.deepcopy(hf), copy.deepcopy(ours)
    ids = hf.encode(TEXTS[6] + TEXTS[7] + TEXTS[0]).ids
    want_stream, got_stream = HFDecodeStream(), bytebpe.hf.DecodeStream()
    half = len(ids) // 2
    want = [want_stream.step(hf, i) for i in ids[:half]]
    got = [got_stream.step(ours, i) for i in ids[:half]]
    hf.add_tokens(["zqxj-new"])
    ours.add_tokens(["zqxj-new"])
    new_id = hf.token_to_id("zqxj-new")
    want_twin, got_twin = copy.copy(want_stream), copy.copy(got_stream)
    rest = ids[half:] + [new_id] + ids[:3]
    want += [want_stream.step(hf, i) for i in rest]
    got += [got_stream.step(ours, i) for i in rest]
    assert got == want
    # (the copy goes on from where it was taken, by HF's own tokenizer's decode)
    assert [got_twin.step(hf, i) for i in rest] == [want_twin.step(hf, i) for i in rest]
    assert got_stream.step(ours, ids[:4]) == want_stream.step(hf, ids[:4])      # (several ids at once)


def test_a_stream_refuses_what_is_not_an_id_and_goes_on() -> None:
    """HF's TypeError for what is not an id, and the stream as it was; a stream is not pickled (nor HF's)."""
    entry = next(entry for entry in _entries() if entry.name == "llama3.tokenizer.json")
    path = _path(entry)
    hf, ours = tokenizers.Tokenizer.from_file(str(path)), bytebpe.hf.Tokenizer.from_file(path)
    from tokenizers.decoders import DecodeStream as HFDecodeStream

    ids = hf.encode("日本語 text").ids
    want_stream, got_stream = HFDecodeStream(), bytebpe.hf.DecodeStream()
    for bad in (-1, 1 << 32, 1.0, "7", [1, -2], None):     # (HF's TypeError for each; the stream goes on)
        with pytest.raises(TypeError):
            HFDecodeStream().step(hf, bad)
        with pytest.raises(TypeError, match="takes an id"):
            got_stream.step(ours, bad)
    for good in (True, (1, 2), [3]):                          # (bools and tuples are ids to HF too)
        assert bytebpe.hf.DecodeStream().step(ours, good) == HFDecodeStream().step(hf, good)
    with pytest.raises(TypeError, match="takes a tokenizer"):
        got_stream.step(object(), ids[0])
    assert [got_stream.step(ours, i) for i in ids] == [want_stream.step(hf, i) for i in ids]
    with pytest.raises(TypeError, match="cannot be pickled"):
        pickle.dumps(got_stream)
