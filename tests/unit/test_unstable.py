"""`encode_with_unstable`: tiktoken's, compared with tiktoken itself.

The stable ids and the set of completions must equal tiktoken's for every text — its rules, approximations
included, are the contract (unstable.py). Texts: cut points that end inside words, numbers, whitespace runs
(where tiktoken widens the unstable part), multi-byte characters, and special tokens under each policy.
"""
from __future__ import annotations

import random

import pytest

import bytebpe

NAMES = ["gpt2", "cl100k_base", "o200k_base"]
TEXTS = ["hello fanta", "hello world  ", "x = 1\n\n", "日本語のテ", "I'm goin", "  !", "abc\n\n0", "tab\t\t", "é",
         "a\n \n", "\u3000", "a\u3000", "1234567", "def f(x):\n    return", "😀", " ", "\n", "."]


def same_as_tiktoken(ours: bytebpe.Encoding, theirs, text: str, **options) -> None:
    stable, completions = ours.encode_with_unstable(text, **options)
    expected_stable, expected_completions = theirs.encode_with_unstable(text, **options)
    assert stable == expected_stable, text
    assert set(map(tuple, completions)) == set(map(tuple, expected_completions)), text
    assert completions == sorted(completions)
    data = text.encode("utf-8")
    assert data.startswith(ours.decode_bytes(stable))
    assert all(ours.decode_bytes(stable + completion).startswith(data) for completion in completions)


@pytest.mark.parametrize("name", NAMES)
def test_the_stable_ids_and_completions_are_tiktokens(name, tiktoken_encoding, corpus_dir):
    ours, theirs = bytebpe.get_encoding(name), tiktoken_encoding(name)
    corpus = "".join((corpus_dir / file).read_text(encoding="utf-8")[:20_000]
                     for file in ("english_prose.txt", "code.txt", "multilingual.txt"))
    rng = random.Random(name)
    cuts = [corpus[start:start + rng.randrange(1, 60)] for start in rng.sample(range(len(corpus) - 60), 12)]
    for text in TEXTS + cuts:
        same_as_tiktoken(ours, theirs, text)


@pytest.mark.parametrize("name", ["cl100k_base", "o200k_base"])
def test_special_tokens_follow_encodes_rules(name, tiktoken_encoding):
    ours, theirs = bytebpe.get_encoding(name), tiktoken_encoding(name)
    eot = "<|endoftext|>"
    for text in [eot, f"a{eot}", f"{eot}b", f"hello {eot} wor", f"x{eot}{eot}"]:
        same_as_tiktoken(ours, theirs, text, allowed_special={eot})
        same_as_tiktoken(ours, theirs, text, allowed_special="all")
        same_as_tiktoken(ours, theirs, text, disallowed_special=())
        with pytest.raises(ValueError, match="disallowed special token"):
            ours.encode_with_unstable(text)
    assert ours.encode_with_unstable("") == ([], [])


def test_an_encoding_read_from_a_tokenizer_json_is_refused(tmp_path):
    path = tmp_path / "tokenizer.json"
    bytebpe.get_encoding("cl100k_base").to_tokenizer_json(path)
    with pytest.raises(TypeError, match="tokenizer.json"):
        bytebpe.from_tokenizer_json(path).encode_with_unstable("hello")
