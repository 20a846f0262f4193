#!/usr/bin/env python
"""List batches as a caller runs them: the cycle collector on, every result kept until the end.

bench_encode.py times with the collector off, as `timeit` does. A dataset job keeps its id lists while it
works, and every collection of a generation that holds tracked lists reads all their items: that cost is
real for users and invisible there. Here each library encodes `--mb` of a corpus cut into 1-4 KB
documents, as batches of `--batch-mb`, keeping every result; best of `--repeat` rounds, each library in a
process of its own (spawned), ids checked equal to tiktoken's first.

    BYTEBPE_DATA_DIR=../shared/vocab python benchmarks/bench_collector.py      # ~1 min

Printed: MB/s per library and thread count, and bytebpe's ratio to each other library.
"""
from __future__ import annotations

import argparse
import concurrent.futures
import gc
import multiprocessing
import random
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

import bench_encode  # noqa: E402  (its offline tiktoken cache, sample reading, peers)

LIBRARIES = ("bytebpe", "tiktoken", "gigatoken")


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--encodings", nargs="+", default=["cl100k_base", "o200k_base"])
    parser.add_argument("--corpora", nargs="+", default=["english_prose.txt", "code.txt"])
    parser.add_argument("--corpus-dir", type=Path, default=None, help="default: $BYTEBPE_DATA_DIR/../corpus")
    parser.add_argument("--mb", type=float, default=4.0, help="megabytes encoded per round")
    parser.add_argument("--batch-mb", type=float, default=1.0, help="megabytes per batch call")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    return parser.parse_args()


def documents(path: Path, megabytes: float) -> list[str]:
    """1-4 KB documents from the file, from 3 MB in (past the text other benchmarks prime with)."""
    text = bench_encode.read_range(path, 3.0, megabytes)
    rng = random.Random(1)
    docs, start = [], 0
    while start < len(text):
        size = rng.randint(1000, 4000)
        docs.append(text[start : start + size])
        start += size
    return docs


def batches_of(docs: list[str], megabytes: float) -> list[list[str]]:
    batches: list[list[str]] = [[]]
    size = 0
    for doc in docs:
        if size >= megabytes * 1e6:
            batches.append([])
            size = 0
        batches[-1].append(doc)
        size += len(doc)
    return batches


def encoder(library: str, encoding: str, vocab_dir: Path) -> Any:
    if library == "bytebpe":
        import bytebpe

        return bytebpe.get_encoding(encoding)
    if library == "tiktoken":
        import tiktoken

        return tiktoken.get_encoding(encoding)
    return bench_encode._gigatoken_peer(encoding, vocab_dir).make()[1]   # its tiktoken-shaped object


def time_library(library: str, encoding: str, vocab_dir: Path, cache_dir: str, batches: list[list[str]],
                 threads: int, repeat: int) -> tuple[float, list[list[int]]]:
    """Best MB/s over `repeat` rounds of all batches, the collector on, every result kept; and round 1's ids."""
    bench_encode.link_offline_tiktoken_cache(vocab_dir, Path(tempfile.mkdtemp(dir=cache_dir)))
    enc = encoder(library, encoding, vocab_dir)
    gc.enable()
    total = sum(len(doc.encode("utf-8")) for batch in batches for doc in batch) / 1e6
    best, first = 0.0, []
    for round_ in range(repeat):
        kept = []
        start = time.perf_counter()
        for batch in batches:
            kept.append(enc.encode_ordinary_batch(batch, num_threads=threads))
        best = max(best, total / (time.perf_counter() - start))
        if round_ == 0:
            first = [ids for result in kept for ids in result]
        del kept
    return best, first


def in_own_process(*args: Any) -> tuple[float, list[list[int]]]:
    with concurrent.futures.ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as pool:
        return pool.submit(time_library, *args).result()


def main() -> int:
    args = parse_args()
    vocab_dir = bench_encode.vocab_dir_from_env()
    corpus_dir = args.corpus_dir or vocab_dir.parent / "corpus"
    cache_dir = tempfile.mkdtemp(prefix="bench-collector-")
    libraries = [name for name in LIBRARIES if name != "gigatoken" or name in bench_encode.installed_peers()]
    print(f"# List batches with the cycle collector on — {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")
    print(f"\nload average {bench_encode.load_average()}; {args.mb} MB per round in 1-4 KB documents, batches of "
          f"{args.batch_mb} MB, every result kept; best of {args.repeat}; each library in its own process\n")
    print("| encoding | corpus | threads | " + " | ".join(f"{name} MB/s" for name in libraries) + " | " +
          " | ".join(f"bytebpe / {name}" for name in libraries[1:]) + " |")
    print("|---|---|---:|" + "---:|" * (2 * len(libraries) - 1))
    for encoding in args.encodings:
        for corpus in args.corpora:
            batches = batches_of(documents(corpus_dir / corpus, args.mb), args.batch_mb)
            for threads in args.threads:
                rates: dict[str, float] = {}
                reference = None
                for name in ["tiktoken", *[n for n in libraries if n != "tiktoken"]]:
                    rate, ids = in_own_process(name, encoding, vocab_dir, cache_dir, batches, threads, args.repeat)
                    if reference is None:
                        reference = ids
                    elif ids != reference:
                        raise SystemExit(f"{name} ids differ from tiktoken's ({encoding}, {corpus})")
                    rates[name] = rate
                print(f"| {encoding} | {corpus} | {threads} | " +
                      " | ".join(f"{rates[name]:.1f}" for name in libraries) + " | " +
                      " | ".join(f"{rates['bytebpe'] / rates[name]:.2f}×" for name in libraries[1:]) + " |",
                      flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
