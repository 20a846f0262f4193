#!/usr/bin/env python
"""The persistent piece cache in batches: on against off, in one process, taking turns.

For each round (a 1 MB slice of 1-4 KB documents, three slices in turn), every combination of empty or
primed cache (2 MB of other text first), 1 or 2 threads and list or numpy output is timed with the cache on
and then off; a ratio is taken within the round (so a slow minute of a shared host lands on both), and the
median of those paired ratios is printed with its interquartile range. Ids are bench_encode's business.

    BYTEBPE_DATA_DIR=../shared/vocab OPENBLAS_NUM_THREADS=1 python benchmarks/bench_cache_batches.py \\
        cl100k_base english_prose.txt --rounds 12                       # ~1 min
"""
from __future__ import annotations

import argparse
import gc
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from bench_encode import cut_random_documents, read_range  # noqa: E402

import bytebpe  # noqa: E402

CACHE_BYTES = 4 << 20       # the default bound
FIRST_SLICE_MB = 6.0        # slices at 6, 7 and 8 MB; the 2 MB before them prime the cache


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("encoding")
    parser.add_argument("corpus", help="a file name in --corpus-dir")
    parser.add_argument("--rounds", type=int, default=12)
    parser.add_argument("--corpus-dir", type=Path, default=Path(__file__).resolve().parents[2] / "shared" / "corpus")
    args = parser.parse_args()
    enc = bytebpe.get_encoding(args.encoding)
    path = args.corpus_dir / args.corpus
    slices = [cut_random_documents(read_range(path, FIRST_SLICE_MB + i, 1), random.Random(13)) for i in range(3)]
    priming = read_range(path, FIRST_SLICE_MB - 2, 2)
    rates: dict[tuple[bool, int, str, bool], list[float]] = {}
    gc.disable()
    for round_ in range(args.rounds):
        docs = slices[round_ % len(slices)]
        size = sum(len(doc.encode("utf-8")) for doc in docs)
        for primed in (False, True):
            for threads in (1, 2):
                for kind in ("numpy", "list"):
                    batch = enc.encode_batch_to_numpy if kind == "numpy" else enc.encode_ordinary_batch
                    for cache_on in (True, False):
                        enc.set_piece_cache_bytes(0)        # emptied, then primed or not, then on or off
                        enc.set_piece_cache_bytes(CACHE_BYTES)
                        if primed:
                            enc.encode_ordinary(priming)
                        if not cache_on:
                            enc.set_piece_cache_bytes(0)
                        start = time.perf_counter()
                        result = batch(docs, num_threads=threads)
                        elapsed = time.perf_counter() - start
                        del result
                        rates.setdefault((primed, threads, kind, cache_on), []).append(size / 1e6 / elapsed)
    gc.enable()
    print(f"{args.encoding} / {args.corpus}: batches of 1-4 KB documents, {args.rounds} rounds, MB/s medians")
    print("| cache at start | threads | output | on MB/s | off MB/s | on / off (paired, median) | IQR |")
    print("|---|---:|---|---:|---:|---:|---|")
    for primed in (False, True):
        for threads in (1, 2):
            for kind in ("numpy", "list"):
                on, off = rates[(primed, threads, kind, True)], rates[(primed, threads, kind, False)]
                paired = sorted(a / b for a, b in zip(on, off))
                quartile = len(paired) // 4
                print(f"| {'primed' if primed else 'empty'} | {threads} | {kind} | {statistics.median(on):.1f} | "
                      f"{statistics.median(off):.1f} | {statistics.median(paired):.2f} | "
                      f"{paired[quartile]:.2f}–{paired[-1 - quartile]:.2f} |")


if __name__ == "__main__":
    main()
