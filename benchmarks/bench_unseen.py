#!/usr/bin/env python
"""One line of MB/s per unseen slice, for comparing two builds of bytebpe run by turns in fresh processes.

Each slice is timed once, after the piece cache was emptied and primed with the 2 MB of the file before the
first slice; nothing timed has been encoded before in the process. Run it once per build, taking turns
(the build is whatever `bytebpe` imports, e.g. a `pip install --target DIR` put first on PYTHONPATH):

    BYTEBPE_DATA_DIR=../shared/vocab OPENBLAS_NUM_THREADS=1 python benchmarks/bench_unseen.py cl100k_base \\
        english_prose.txt whole numpy                   # five whole 1 MB calls
    ... docs 4000                                       # three loops over 0.5 MB of ~4,000-character documents
    ... batch 2 list                                    # four 1 MB batches of 1-4 KB documents on 2 threads
    ... --fresh batch 2 numpy                           # the same from an empty cache, nothing primed

The builds in benchmarks/README.md (2026-12-03) were compared this way; ids are bench_encode's business.
"""
from __future__ import annotations

import argparse
import gc
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from bench_encode import cut_random_documents, read_range, split_into_documents  # noqa: E402

import bytebpe  # noqa: E402

START_MB = 6.0      # the first slice; the 2 MB before it prime the cache
PRIMING_MB = 2.0


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("encoding")
    parser.add_argument("corpus", help="a file name in --corpus-dir")
    parser.add_argument("shape", choices=("whole", "docs", "batch"))
    parser.add_argument("detail", help="whole: list or numpy; docs: characters per document; batch: threads")
    parser.add_argument("kind", nargs="?", default="list", choices=("list", "numpy"), help="batch only")
    parser.add_argument("--corpus-dir", type=Path, default=Path(__file__).resolve().parents[2] / "shared" / "corpus")
    parser.add_argument("--start-mb", type=float, default=START_MB)
    parser.add_argument("--fresh", action="store_true",
                        help="no priming: each run starts from a cache that holds nothing, as a new process's first "
                             "call does")
    return parser.parse_args()


def main() -> None:
    args = parse_args()
    path = args.corpus_dir / args.corpus
    enc = bytebpe.get_encoding(args.encoding)
    bound = enc.piece_cache_info().max_bytes
    priming = read_range(path, args.start_mb - PRIMING_MB, PRIMING_MB)
    rng = random.Random(13)
    if args.shape == "whole":
        call = enc.encode_to_numpy if args.detail == "numpy" else enc.encode_ordinary
        texts = [read_range(path, args.start_mb + i, 1) for i in range(5)]
        work = [(lambda text=text: call(text), text) for text in texts]
    elif args.shape == "docs":
        work = []
        for i in range(3):
            docs = split_into_documents(read_range(path, args.start_mb + i, 0.5), int(args.detail))
            work.append((lambda docs=docs: [enc.encode_ordinary(doc) for doc in docs], "".join(docs)))
    else:
        batch = enc.encode_ordinary_batch if args.kind == "list" else enc.encode_batch_to_numpy
        work = []
        for i in range(4):
            docs = cut_random_documents(read_range(path, args.start_mb + i, 1), rng)
            work.append((lambda docs=docs: batch(docs, num_threads=int(args.detail)), "".join(docs)))
    rates = []
    for run, text in work:
        enc.set_piece_cache_bytes(0)        # emptied, then primed (unless --fresh)
        enc.set_piece_cache_bytes(bound)
        if not args.fresh:
            enc.encode_ordinary(priming)
        gc.collect()
        gc.disable()
        start = time.perf_counter()
        result = run()
        elapsed = time.perf_counter() - start
        gc.enable()
        del result
        rates.append(len(text.encode("utf-8")) / 1e6 / elapsed)
    print(" ".join(f"{rate:.0f}" for rate in rates))


if __name__ == "__main__":
    main()
