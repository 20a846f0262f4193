#!/usr/bin/env python
"""Text whose pieces merge at random: `encode_to_numpy` MB/s on random words and base64, where a change to the
merge loop that pays on prose can cost (benchmarks/README.md, "A short piece's spans looked up before it
merges").

Four kinds of text, each four ~1 MB texts from a fixed seed: 70,000 words of 9-15 random lowercase letters,
the same in mixed case, 120,000 mixed-case words of 4-8 letters, and base64 of random bytes in 76-character
lines. Every piece that is not a token is new, so nearly every piece is merged. For each kind and encoding,
`--turns` fresh processes each encode the first text (priming) and time the other three by CPU time; the
table gives the median over turns of each process's median MB/s. The ids of every text are first checked
equal to tiktoken's.

    BYTEBPE_DATA_DIR=../shared/vocab OPENBLAS_NUM_THREADS=1 python benchmarks/bench_random_text.py   # ~1 min
"""
from __future__ import annotations

import argparse
import base64
import json
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

KINDS = ("lower 9-15", "mixed 9-15", "mixed 4-8", "base64")
LOWER = "abcdefghijklmnopqrstuvwxyz"
MIXED = LOWER + LOWER.upper()


def texts_of(kind: str) -> list[str]:
    """The four texts of `kind` (the same on every call)."""
    rng = random.Random(KINDS.index(kind) + 5)

    def words(letters: str, count: int, shortest: int, longest: int) -> str:
        return " ".join("".join(rng.choice(letters) for _ in range(rng.randint(shortest, longest)))
                        for _ in range(count))

    if kind == "lower 9-15":
        return [words(LOWER, 70_000, 9, 15) for _ in range(4)]
    if kind == "mixed 9-15":
        return [words(MIXED, 70_000, 9, 15) for _ in range(4)]
    if kind == "mixed 4-8":
        return [words(MIXED, 120_000, 4, 8) for _ in range(4)]
    return ["\n".join(base64.b64encode(rng.randbytes(57)).decode() for _ in range(13_000)) for _ in range(4)]


def child(encoding: str, kind: str) -> None:
    """One turn: prime on the first text, time the other three; print the median MB/s as JSON."""
    import bytebpe

    enc = bytebpe.get_encoding(encoding)
    texts = texts_of(kind)
    enc.encode_to_numpy(texts[0])
    rates = []
    for text in texts[1:]:
        start = time.process_time_ns()
        enc.encode_to_numpy(text)
        rates.append(len(text.encode()) / (time.process_time_ns() - start) * 1e3)
    print(json.dumps(statistics.median(rates)))


def check_ids(encodings: list[str]) -> None:
    """Every text's ids equal to tiktoken's (loaded offline from the same vocabulary files)."""
    import tiktoken

    import bytebpe

    sys.path.insert(0, str(Path(__file__).parent))
    from bench_encode import link_offline_tiktoken_cache, vocab_dir_from_env

    with tempfile.TemporaryDirectory() as cache_dir:
        link_offline_tiktoken_cache(vocab_dir_from_env(), Path(cache_dir))
        for encoding in encodings:
            reference = tiktoken.get_encoding(encoding)
            ours = bytebpe.get_encoding(encoding)
            for kind in KINDS:
                for i, text in enumerate(texts_of(kind)):
                    if ours.encode_to_numpy(text).tolist() != reference.encode_ordinary(text):
                        sys.exit(f"{encoding}, {kind} text {i}: ids differ from tiktoken's")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--encodings", nargs="+", default=["cl100k_base", "o200k_base"])
    parser.add_argument("--kinds", nargs="+", default=list(KINDS), choices=KINDS)
    parser.add_argument("--turns", type=int, default=5)
    parser.add_argument("--child", nargs=2, metavar=("ENCODING", "KIND"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(*args.child)
        return
    check_ids(args.encodings)
    print(f"encode_to_numpy, MB/s: median over {args.turns} fresh processes of each one's median of three ~1 MB "
          "texts (CPU time, primed on a fourth); ids equal to tiktoken's\n")
    print("| encoding | " + " | ".join(args.kinds) + " |")
    print("|---|" + "---:|" * len(args.kinds))
    for encoding in args.encodings:
        cells = []
        for kind in args.kinds:
            rates = [json.loads(subprocess.run([sys.executable, __file__, "--child", encoding, kind], check=True,
                                               capture_output=True, text=True).stdout)
                     for _ in range(args.turns)]
            cells.append(f"{statistics.median(rates):.1f}")
        print(f"| {encoding} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
