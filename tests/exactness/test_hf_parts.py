"""The parts of a tokenizer.json on combinations nobody wrote by hand: generated pipelines against HF.

Hypothesis draws a normalizer, a pre-tokenizer, a decoder and added tokens (with random flags) from the
variants bytebpe's part tables hold, puts them around a small BPE model that HF trained here on the sample
corpus bytebpe ships (a byte-level one, and a character-level one with byte fallback or an unk token), and
compares bytebpe's ids and decoded text with HF `tokenizers`' on generated text. Every variant of the tables
appears in the strategies below; a new variant must be added here too (`test_every_variant_is_drawn`).
"""
from __future__ import annotations

import contextlib
import functools
import json
import os
from importlib import resources
from unittest import mock

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tokenizers import Tokenizer, models, pre_tokenizers, trainers

from bytebpe import hf_import
from bytebpe.hf_import import TokenizerJsonError, from_tokenizer_json
from bytebpe.parts.decoders import DECODERS
from bytebpe.parts.normalizers import NORMALIZERS
from bytebpe.parts.pre_tokenizers import PRE_TOKENIZERS

# Text that reaches the interesting cases: spaces and their runs, the metaspace, digits of several scripts,
# punctuation, accents (composed and combining), case pairs, CJK, emoji, characters the small vocabularies
# lack, and the added tokens' own characters.
ALPHABET = (" \t\n" + "abcdeABCDE" + "0123" + "٣" + ".,!?-'\"" + "\u2581" + "éÉ\u0301ﬁİΣσς" + "日本語" + "😀"
            + "<>|" + "\u00a0\u3000" + "Ωж")
TEXT = st.text(alphabet=ALPHABET, max_size=40)


@functools.cache
def _sample_text() -> list[str]:
    sample = resources.files("bytebpe").joinpath("sample")
    lines = []
    for name in ("english.txt", "code.txt", "multilingual.txt"):
        lines += sample.joinpath(name).read_text(encoding="utf-8").splitlines()[:400]
    return lines


@functools.cache
def _trained(kind: str) -> dict:
    """A small BPE model trained by HF on the sample corpus, as a tokenizer.json dict. "byte-level": over
    GPT-2's byte characters; "fallback": over characters, with the 256 <0xXX> tokens; "unk": over
    characters, with an unk token and no byte fallback."""
    if kind == "byte-level":
        tok = Tokenizer(models.BPE())
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
        trainer = trainers.BpeTrainer(vocab_size=600, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                      show_progress=False)
    else:
        tok = Tokenizer(models.BPE(unk_token="<unk>"))
        tok.pre_tokenizer = pre_tokenizers.Metaspace()
        trainer = trainers.BpeTrainer(vocab_size=600, special_tokens=["<unk>"], show_progress=False,
                                      limit_alphabet=120)
    tok.train_from_iterator(_sample_text(), trainer)
    spec = json.loads(tok.to_str())
    if kind == "fallback":
        vocab = spec["model"]["vocab"]
        for byte in range(256):
            vocab.setdefault(f"<0x{byte:02X}>", len(vocab))
        spec["model"]["byte_fallback"] = True
    return spec


REPLACE_PATTERNS = [{"String": " "}, {"String": "\u2581"}, {"Regex": r"\s+"}, {"Regex": r"\d"}, {"String": "ab"}]
SPLIT_PATTERNS = [{"Regex": r"\p{L}+|\p{N}|[^\s\p{L}\p{N}]+|\s+"}, {"Regex": r"\s+"}, {"Regex": r"\d+"},
                  {"String": " "}, {"String": "\u2581"}, {"Regex": r"(?i:'s|'t)| ?\p{L}+"}]
BEHAVIORS = ["Isolated", "Removed", "MergedWithPrevious", "MergedWithNext", "Contiguous"]

normalizer = st.one_of(
    st.sampled_from([{"type": form} for form in ("NFC", "NFD", "NFKC", "NFKD")]),
    st.just({"type": "Lowercase"}),
    st.builds(lambda p: {"type": "Prepend", "prepend": p}, st.sampled_from(["\u2581", " ", "x"])),
    st.builds(lambda p, c: {"type": "Replace", "pattern": p, "content": c}, st.sampled_from(REPLACE_PATTERNS),
              st.sampled_from(["\u2581", " ", "", "Z"])),
    st.builds(lambda left, right: {"type": "Strip", "strip_left": left, "strip_right": right}, st.booleans(),
              st.booleans()),
    st.just({"type": "StripAccents"}),
    st.builds(lambda clean, chinese, accents, lower: {"type": "BertNormalizer", "clean_text": clean,
                                                      "handle_chinese_chars": chinese, "strip_accents": accents,
                                                      "lowercase": lower},
              st.booleans(), st.booleans(), st.sampled_from([None, True, False]), st.booleans()),
)
normalizers = st.one_of(st.none(), normalizer,
                        st.lists(normalizer, min_size=1, max_size=3).map(
                            lambda items: {"type": "Sequence", "normalizers": items}))

pre_step = st.one_of(
    st.builds(lambda p, b, i: {"type": "Split", "pattern": p, "behavior": b, "invert": i},
              st.sampled_from(SPLIT_PATTERNS), st.sampled_from(BEHAVIORS), st.booleans()),
    st.builds(lambda i: {"type": "Digits", "individual_digits": i}, st.booleans()),
    st.builds(lambda b: {"type": "Punctuation", "behavior": b}, st.sampled_from(BEHAVIORS)),
    st.just({"type": "Whitespace"}),
    st.just({"type": "WhitespaceSplit"}),
    st.builds(lambda d: {"type": "CharDelimiterSplit", "delimiter": d}, st.sampled_from([" ", "a", "\u2581"])),
    st.builds(lambda s, split: {"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": s, "split": split},
              st.sampled_from(["always", "never"]), st.booleans()),
    st.just({"type": "BertPreTokenizer"}),
    st.builds(lambda n: {"type": "FixedLength", "length": n}, st.integers(1, 6)),
)
metaspace_first = st.builds(lambda split: {"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "first",
                                           "split": split}, st.booleans())
byte_level = st.builds(lambda prefix, regex: {"type": "ByteLevel", "add_prefix_space": prefix, "trim_offsets": True,
                                              "use_regex": regex}, st.booleans(), st.booleans())


def _sequence(steps: list) -> dict | None:
    return {"type": "Sequence", "pretokenizers": steps}


character_pre_tokenizers = st.one_of(
    st.none(), pre_step, metaspace_first,
    st.builds(lambda first, rest: _sequence(first + rest), st.lists(metaspace_first, max_size=1),
              st.lists(pre_step, min_size=1, max_size=3)))
byte_level_pre_tokenizers = st.builds(
    lambda before, level, after: _sequence(before + [level] + after) if before or after else level,
    st.lists(pre_step.filter(lambda s: s["type"] != "Metaspace"), max_size=2), byte_level,
    st.lists(pre_step.filter(lambda s: s["type"] != "Metaspace"), max_size=1))

decoder_step = st.one_of(
    st.builds(lambda p, c: {"type": "Replace", "pattern": p, "content": c},
              st.sampled_from([{"String": "\u2581"}, {"Regex": "a+"}]), st.sampled_from([" ", ""])),
    st.just({"type": "ByteFallback"}), st.just({"type": "Fuse"}),
    st.builds(lambda start, stop: {"type": "Strip", "content": " ", "start": start, "stop": stop},
              st.integers(0, 2), st.integers(0, 2)),
    st.builds(lambda s: {"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": s, "split": True},
              st.sampled_from(["always", "first", "never"])),
    st.builds(lambda s: {"type": "BPEDecoder", "suffix": s}, st.sampled_from(["</w>", "a"])),
)
character_decoders = st.one_of(st.none(), decoder_step,
                               st.lists(decoder_step, min_size=1, max_size=4).map(
                                   lambda items: {"type": "Sequence", "decoders": items}))

added_token = st.builds(
    lambda content, single_word, lstrip, rstrip, normalized, special: {
        "content": content, "single_word": single_word, "lstrip": lstrip, "rstrip": rstrip,
        "normalized": normalized, "special": special},
    st.sampled_from(["<|x|>", "ab", "the", "日本", " a", "<s>", "é", "\u2581b"]),
    st.booleans(), st.booleans(), st.booleans(), st.booleans(), st.booleans())


def _file(model: dict, normalizer_spec, pre_tokenizer_spec, decoder_spec, added: list[dict]) -> str:
    spec = json.loads(json.dumps(model))
    spec["normalizer"] = normalizer_spec
    spec["pre_tokenizer"] = pre_tokenizer_spec
    spec["decoder"] = decoder_spec
    vocab = spec["model"]["vocab"]
    spec["added_tokens"] = [{"id": vocab.get(token["content"], len(vocab) + i), **token}
                            for i, token in enumerate(added)]
    return json.dumps(spec)


def _check_same(text_file: str, texts: list[str]) -> None:
    try:
        hf = Tokenizer.from_str(text_file)
    except Exception:   # noqa: BLE001 — a combination HF itself refuses says nothing about bytebpe
        return
    try:
        enc = from_tokenizer_json(text_file)
    except TokenizerJsonError as error:
        if "HF" in str(error) or "never" in str(error):
            return
        raise
    for text in texts:
        try:
            ids = hf.encode(text, add_special_tokens=False).ids
            decoded = hf.decode(ids, skip_special_tokens=False)
        except BaseException as error:
            if type(error).__name__ != "PanicException":
                raise
            return      # HF's Rust code panicked on this input (pyo3's PanicException): there is no answer to compare
        assert enc.encode(text, allowed_special="all") == ids, (text, ids)
        assert enc.decode(ids) == decoded, (text, ids)


# A character-level model's words are cut by a compiled scanner where every byte has its <0xXX> token
# (`BPEModel.word_scanner`), else in Python (`BPEModel.cut_unknown`); a decoder of the shape
# `joined_decoder` takes decodes by a table, others by the chain: the tests of such models run both ways.
ENGINES = ["compiled", "python"]


def _engine(name: str) -> contextlib.AbstractContextManager:
    stack = contextlib.ExitStack()
    if name == "python":
        stack.enter_context(mock.patch.object(hf_import, "_character_scanner", lambda pre_tokenizer, model: None))
        stack.enter_context(mock.patch.object(hf_import, "joined_decoder", lambda decoder, strings: None))
    return stack


# The same examples on every run (CI must not fail on a combination one run happens to draw and the next does
# not); BYTEBPE_RANDOM_PIPELINES=1 draws new ones, to look for more (it found the added token listed twice of
# test_hf_import.py).
SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow],
                    derandomize="BYTEBPE_RANDOM_PIPELINES" not in os.environ, database=None)


@pytest.mark.parametrize("engine", ENGINES)
@SETTINGS
@given(normalizers, character_pre_tokenizers, character_decoders, st.lists(added_token, max_size=3),
       st.sampled_from(["fallback", "unk"]), st.booleans(), st.lists(TEXT, min_size=1, max_size=4))
def test_character_level_pipelines_give_hfs_ids(engine, normalizer_spec, pre_tokenizer_spec, decoder_spec, added,
                                                kind, fuse_unk, texts):
    model = json.loads(json.dumps(_trained(kind)))
    model["model"]["fuse_unk"] = fuse_unk
    with _engine(engine):
        _check_same(_file(model, normalizer_spec, pre_tokenizer_spec, decoder_spec, added), texts)


@SETTINGS
@given(normalizers, byte_level_pre_tokenizers, st.lists(added_token, max_size=3), st.lists(TEXT, min_size=1,
                                                                                             max_size=4))
def test_byte_level_pipelines_give_hfs_ids(normalizer_spec, pre_tokenizer_spec, added, texts):
    _check_same(_file(_trained("byte-level"), normalizer_spec, pre_tokenizer_spec,
                      {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
                      added), texts)


def test_every_variant_is_drawn():
    """The strategies above name every variant of the part tables (a new one must be generated too)."""
    source = open(__file__, encoding="utf-8").read()
    forms = '("NFC", "NFD", "NFKC", "NFKD")'
    for table in (NORMALIZERS, PRE_TOKENIZERS, DECODERS):
        for name in table:
            assert f'"type": "{name}"' in source or (name.startswith("NF") and forms in source), name


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("kind", ["fallback", "unk"])
def test_characters_the_vocabulary_lacks_are_cut_as_hf_cuts_them(kind, engine):
    model = json.loads(json.dumps(_trained(kind)))
    for fuse in (False, True):
        model["model"]["fuse_unk"] = fuse
        with _engine(engine):
            _check_same(_file(model, None, {"type": "Metaspace", "prepend_scheme": "first", "split": True},
                          {"type": "Sequence", "decoders": [{"type": "Replace", "pattern": {"String": "\u2581"},
                                                             "content": " "}, {"type": "ByteFallback"},
                                                            {"type": "Fuse"}]}, []),
                    ["Ω", "ΩΩ x Ω", "日本語😀 ok", "a\u0301b", "😀😀", "\x00\x01\x7f", "plain text only"])


@pytest.mark.parametrize("engine", ENGINES)
def test_words_are_cut_apart_only_where_no_merge_joins_across(engine):
    """A SentencePiece-style file hands the model whole texts; bytebpe cuts them before each "▁" that follows
    another character when no merge joins there. One merge that does ("d" + "▁e") turns the cut off, and the
    ids stay HF's either way."""
    spec = json.loads(json.dumps(_trained("fallback")))
    spec["pre_tokenizer"] = None
    spec["normalizer"] = {"type": "Sequence", "normalizers": [{"type": "Prepend", "prepend": "\u2581"},
                                                              {"type": "Replace", "pattern": {"String": " "},
                                                               "content": "\u2581"}]}
    texts = ["d e", "hello world", "a  b   d e", " d\u2581e", "d\u2581\u2581e", "1d e", "(d e ok"]

    def cut(text_file: str) -> str:
        """Where the words are cut: the compiled scanner's rule, or whether the Python split is on."""
        pretokenize = from_tokenizer_json(text_file)._pretokenize
        if engine == "compiled":
            return pretokenize.char_words_args[2]
        return "none" if pretokenize.model.word_split is None else "after_word"

    with _engine(engine):
        assert cut(json.dumps(spec)) == "after_word"
        _check_same(json.dumps(spec), texts)
        vocab = spec["model"]["vocab"]
        for token in ("d", "\u2581e"):
            vocab.setdefault(token, len(vocab))
        vocab["d\u2581e"] = len(vocab)
        spec["model"]["merges"][:0] = [["\u2581", "e"], ["d", "\u2581e"]]
        assert cut(json.dumps(spec)) == "none"
        hf = Tokenizer.from_str(json.dumps(spec))
        assert any("d\u2581e" in hf.encode(text).tokens for text in texts)       # (the merge is met)
        _check_same(json.dumps(spec), texts)


@pytest.mark.parametrize("behavior", BEHAVIORS)
def test_an_inverted_split_by_a_pattern_that_matches_everywhere_runs_on_the_compiled_scanner(behavior):
    """Inverted, a Split's delimiters are the text between its matches, of which a pattern that matches at
    every position leaves none: with any behaviour but Contiguous (which joins runs of matches), its pieces
    are its matches (OLMo 2's file), which the compiled scanner cuts."""
    pattern = {"Regex": SPLIT_PATTERNS[0]["Regex"]}
    text_file = _file(_trained("byte-level"), None, _sequence([
        {"type": "Split", "pattern": pattern, "behavior": behavior, "invert": True},
        {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": False}]),
        {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True}, [])
    assert from_tokenizer_json(text_file).pretokenizer == ("regex" if behavior == "Contiguous" else "compiled")
    _check_same(text_file, _sample_text()[:40] + ["", " ", "a  b\n\n c", "日本語 ok!!", "x\u2581y 12 345"])
