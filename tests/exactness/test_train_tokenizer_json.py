"""Training straight to a Hugging Face tokenizer.json: `bytebpe train ... -o mine.tokenizer.json`, and in Python
`bytebpe.train(...)` then `enc.to_tokenizer_json(path)`. HF `tokenizers` is the oracle: the file it loads gives
the trained encoding's exact ids on corpus text and special tokens, and `bytebpe.from_tokenizer_json` loads it
back with the same ids."""
from __future__ import annotations

import json

import numpy as np
import pytest

import bytebpe
from bytebpe import cli

from ..integration.test_cli import first_lines

tokenizers = pytest.importorskip("tokenizers")

SPECIAL_TEXTS = ["a <|endoftext|> b", "<|endoftext|><|pad|>", "", "  spaces\n\n", "naïve café 1234567"]


def check_same_ids(enc: bytebpe.Encoding, path, texts: list[str]) -> None:
    """HF reading `path`, and bytebpe reading it back, give `enc`'s ids."""
    tok = tokenizers.Tokenizer.from_file(str(path))
    loaded = bytebpe.from_tokenizer_json(path)
    ours = enc.encode_ordinary_batch(texts)
    assert [e.ids for e in tok.encode_batch(texts, add_special_tokens=False)] == ours
    assert loaded.encode_ordinary_batch(texts) == ours
    for text in SPECIAL_TEXTS:
        ids = enc.encode(text, allowed_special="all")
        assert tok.encode(text, add_special_tokens=False).ids == ids, text
        assert loaded.encode(text, allowed_special="all") == ids, text
        assert tok.decode(ids, skip_special_tokens=False) == loaded.decode(ids) == enc.decode(ids)


def test_train_with_a_tokenizer_json_name_writes_hfs_format(tmp_path, corpus_dir, capsys):
    corpus = first_lines(corpus_dir / "train_1mb.txt", tmp_path / "corpus.txt", 2000)
    common = ["--vocab-size", "600", "-q", "--special", "<|endoftext|>", "--special", "<|pad|>",
              "--pattern", "o200k_base"]
    assert cli.main(["train", str(corpus), "-o", str(tmp_path / "mine.json"), *common]) == 0
    assert cli.main(["train", str(corpus), "-o", str(tmp_path / "out" / "mine.tokenizer.json"), *common]) == 0
    written = tmp_path / "out" / "mine.tokenizer.json"
    assert sorted(p.name for p in written.parent.iterdir()) == ["mine.tokenizer.json"]     # no partial file left
    spec = json.loads(written.read_text(encoding="utf-8"))
    assert spec["model"]["type"] == "BPE" and "format" not in spec
    assert {t["content"] for t in spec["added_tokens"]} == {"<|endoftext|>", "<|pad|>"}
    # Training is deterministic: the bytebpe file of the same run is the trained encoding.
    enc = bytebpe.load(tmp_path / "mine.json")
    assert len(enc.mergeable_ranks) > 500
    text = corpus.read_text(encoding="utf-8")
    check_same_ids(enc, written, text.split("\n"))
    # and the file drives `encode --tokenizer`
    assert cli.main(["encode", str(corpus), "--tokenizer", str(written), "-o", str(tmp_path / "o"), "-q"]) == 0
    assert np.load(tmp_path / "o.tokens.npy").tolist() == enc.encode_ordinary(text)


def test_the_summary_says_which_format(tmp_path, corpus_dir):
    from ..integration.test_cli import run

    corpus = first_lines(corpus_dir / "train_1mb.txt", tmp_path / "corpus.txt", 200)
    hf = run("train", str(corpus), "--vocab-size", "300", "-o", str(tmp_path / "tokenizer.json"))
    own = run("train", str(corpus), "--vocab-size", "300", "-o", str(tmp_path / "t.json"))
    assert hf.returncode == own.returncode == 0, hf.stderr.decode() + own.stderr.decode()
    assert "(a Hugging Face tokenizer.json)" in hf.stderr.decode()
    assert "Hugging Face" not in own.stderr.decode()
    assert json.loads((tmp_path / "t.json").read_text(encoding="utf-8"))["format"] == "bytebpe"


def test_python_train_then_to_tokenizer_json(tmp_path, corpus_dir):
    texts = (corpus_dir / "train_1mb.txt").read_text(encoding="utf-8")[:200_000].split("\n")
    enc = bytebpe.train(texts, 800, pattern="cl100k_base", special_tokens=["<|endoftext|>", "<|pad|>"])
    path = tmp_path / "trained.tokenizer.json"
    enc.to_tokenizer_json(path)
    code = (corpus_dir / "code.txt").read_text(encoding="utf-8")[:20_000]
    check_same_ids(enc, path, texts[:500] + code.split("\n\n"))
