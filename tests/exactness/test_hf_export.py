"""`Encoding.to_tokenizer_json`: the file HF `tokenizers` loads gives bytebpe's ids, with HF as the oracle —
for the seven named encodings, one with added special tokens, and trained ones; special tokens keep their ids
across the gaps some vocabularies leave; what HF's BPE cannot express is refused."""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

import bytebpe
from bytebpe import hf_json

from ..conftest import ALL_ENCODINGS

TRICKY = [
    "hello world", "Hello, World! It's 2024 — naïve café, I'll we've they're DON'T", "1234567890 12 123 1234",
    "१२३४५६ ٣٤٥٦٧ ๑๒๓๔", "    indented\n\n\n  spaces   \t\ttabs \r\n", "emoji 👩‍👩‍👧‍👦 🇫🇷 👍🏽!!", "中文字符和日本語のテキスト",
    "Ünïcödé ÀÉÎÕÜ ǅungla", "x" * 300, "  ", "", "a\u00a0b\u2028c", "def f(x):\n    return x**2  # ok",
]


@pytest.fixture(scope="module")
def hf_tokenizer():
    if os.environ.get("BYTEBPE_REQUIRE_DATA") == "1":
        import tokenizers       # in the test extra: required in CI
    else:
        tokenizers = pytest.importorskip("tokenizers")

    def load(enc: bytebpe.Encoding, tmp_path: Path):
        path = tmp_path / f"{enc.name}.tokenizer.json"
        enc.to_tokenizer_json(path)
        return tokenizers.Tokenizer.from_file(str(path))

    return load


def assert_same_ids(enc, tok, texts):
    ours = enc.encode_ordinary_batch(texts)
    theirs = [encoding.ids for encoding in tok.encode_batch(texts, add_special_tokens=False)]
    for text, a, b in zip(texts, ours, theirs):
        assert a == b, f"{enc.name}: {text[:80]!r}"


def sample_documents(corpus_dir: Path, chars: int) -> list[str]:
    documents = []
    for name in ("english_prose.txt", "code.txt", "multilingual.txt"):
        text = (corpus_dir / name).read_text(encoding="utf-8")[:chars]
        documents += text.split("\n\n")
    return documents


@pytest.mark.parametrize("name", ["gpt2", "cl100k_base"])
def test_an_exported_named_encoding_gives_its_ids_in_hf(name, hf_tokenizer, tmp_path):
    enc = bytebpe.get_encoding(name)
    tok = hf_tokenizer(enc, tmp_path)
    assert_same_ids(enc, tok, TRICKY)
    assert tok.get_vocab_size() == enc.n_vocab


@pytest.mark.slow
@pytest.mark.parametrize("name", ALL_ENCODINGS)
def test_all_seven_exported_give_their_ids_in_hf_on_the_corpora(name, hf_tokenizer, tmp_path, corpus_dir):
    enc = bytebpe.get_encoding(name)
    tok = hf_tokenizer(enc, tmp_path)
    assert_same_ids(enc, tok, TRICKY + sample_documents(corpus_dir, 300_000))


@pytest.mark.parametrize("name", ["cl100k_base", "p50k_edit", "o200k_harmony"])
def test_special_tokens_keep_their_ids_across_the_vocabularys_gaps(name, hf_tokenizer, tmp_path):
    enc = bytebpe.get_encoding(name)
    tok = hf_tokenizer(enc, tmp_path)
    for content, token_id in enc._special_tokens.items():
        if enc.decode([token_id]) != content:
            # o200k_harmony's 200018 is <|endofprompt|> and <|reserved_200018|>: HF holds one string per id,
            # the one bytebpe decodes it to, and cannot match the other.
            assert (name, token_id, content) == ("o200k_harmony", 200018, "<|reserved_200018|>")
            continue
        assert tok.token_to_id(content) == token_id
        text = f"before {content} after"
        ids = enc.encode(text, allowed_special="all")
        assert tok.encode(text, add_special_tokens=False).ids == ids
        assert tok.decode(ids, skip_special_tokens=False) == enc.decode(ids)


def test_the_placeholders_of_free_ids_are_never_produced(hf_tokenizer, tmp_path):
    enc = bytebpe.get_encoding("cl100k_base")
    data = hf_json.tokenizer_json(enc)
    placeholders = {token_id for text, token_id in data["model"]["vocab"].items() if text.startswith("\ue000")}
    assert placeholders == {100256, *range(100261, 100276)}
    tok = hf_tokenizer(enc, tmp_path)
    produced = {i for e in tok.encode_batch(TRICKY + ["\ue000unused 100256"], add_special_tokens=False) for i in e.ids}
    assert not produced & placeholders


def test_an_encoding_with_added_special_tokens_exports_them(hf_tokenizer, tmp_path):
    enc = bytebpe.get_encoding("cl100k_base").with_special_tokens(
        {"<|im_start|>": 100264, "<|im_end|>": 100265}, name="cl100k_im")
    tok = hf_tokenizer(enc, tmp_path)
    text = "<|im_start|>user\nhi<|im_end|>"
    assert tok.encode(text, add_special_tokens=False).ids == enc.encode(text, allowed_special="all")


def test_a_trained_encoding_exports_with_its_ids(hf_tokenizer, tmp_path, corpus_dir):
    text = (corpus_dir / "train_1mb.txt").read_text(encoding="utf-8")[:300_000]
    enc = bytebpe.train(text.split("\n"), 2000, pattern="o200k_base", special_tokens=["<|endoftext|>"],
                        name="mine")
    tok = hf_tokenizer(enc, tmp_path)
    assert_same_ids(enc, tok, TRICKY + sample_documents(corpus_dir, 50_000))
    assert tok.encode("a<|endoftext|>", add_special_tokens=False).ids == enc.encode("a<|endoftext|>",
                                                                                    allowed_special="all")


def test_possessive_intervals_become_atomic_groups_for_oniguruma():
    assert hf_json.oniguruma_pattern(r"\p{N}{1,3}+") == r"(?>\p{N}{1,3})"
    assert hf_json.oniguruma_pattern(r"[0-9]{2}+x") == r"(?>[0-9]{2})x"
    assert hf_json.oniguruma_pattern(r"\p{L}++|\s*+") == r"\p{L}++|\s*+"      # Oniguruma's own possessives


def test_a_token_no_two_lower_tokens_make_cannot_be_exported(tmp_path):
    ranks = {bytes([b]): b for b in range(256)}
    ranks[b"abc"] = 256         # no "ab" or "bc": BPE on its bytes stops at three parts
    enc = bytebpe.Encoding("not_bpe", pat_str=r"\S+|\s+", mergeable_ranks=ranks, special_tokens={})
    with pytest.raises(ValueError, match=r"token b'abc' \(rank 256\) is not made by merging two"):
        enc.to_tokenizer_json(tmp_path / "x.json")
    assert not (tmp_path / "x.json").exists()


def test_the_file_is_plain_json_in_hfs_layout(tmp_path):
    enc = bytebpe.get_encoding("gpt2")
    enc.to_tokenizer_json(tmp_path / "tokenizer.json")
    data = json.loads((tmp_path / "tokenizer.json").read_text(encoding="utf-8"))
    assert data["model"]["type"] == "BPE" and data["model"]["ignore_merges"] is True
    assert len(data["model"]["merges"]) == 50000 and data["model"]["merges"][0] == ["Ġ", "t"]
    assert data["added_tokens"][0]["content"] == "<|endoftext|>" and data["added_tokens"][0]["id"] == 50256
