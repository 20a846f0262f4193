#!/usr/bin/env python
"""Where a 2-thread `encode_batch_to_numpy` spends its wall time: wall and CPU time on one and two threads.

For each of three 1 MB slices of 1-4 KB documents (at 6, 7 and 8 MB of the corpus), `--turns` times: the
piece cache emptied and primed with the 2 MB before the slices, then the batch timed on one thread and again
(emptied, primed) on two. Medians of wall time, CPU time (both threads) and their ratio. The ids of each
slice are first checked equal to tiktoken's, one document at a time.

    BYTEBPE_DATA_DIR=../shared/vocab OPENBLAS_NUM_THREADS=1 python benchmarks/bench_two_threads.py \\
        cl100k_base english_prose.txt --turns 5                          # ~15 s
"""
from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from bench_encode import (  # noqa: E402
    cut_random_documents, link_offline_tiktoken_cache, read_range, vocab_dir_from_env)

import bytebpe  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("encoding")
    parser.add_argument("corpus", help="a file of ../shared/corpus")
    parser.add_argument("--corpus-dir", default=str(Path(__file__).resolve().parents[2] / "shared" / "corpus"))
    parser.add_argument("--turns", type=int, default=5)
    args = parser.parse_args()
    path = Path(args.corpus_dir) / args.corpus
    enc = bytebpe.get_encoding(args.encoding)
    bound = enc.piece_cache_info().max_bytes
    priming = read_range(path, 4.0, 2.0)
    batches = [cut_random_documents(read_range(path, 6.0 + i, 1.0), random.Random(i)) for i in range(3)]

    import tiktoken

    with tempfile.TemporaryDirectory() as cache_dir:    # tiktoken loads the same files, offline
        link_offline_tiktoken_cache(vocab_dir_from_env(), Path(cache_dir))
        reference = tiktoken.get_encoding(args.encoding)
    for docs in batches:
        ids, offsets = enc.encode_batch_to_numpy(docs, num_threads=2, disallowed_special=())
        for i, doc in enumerate(docs):
            if ids[offsets[i]:offsets[i + 1]].tolist() != reference.encode_ordinary(doc):
                sys.exit(f"ids differ from tiktoken's on document {i}")

    timings: dict[int, list[tuple[float, float]]] = {1: [], 2: []}
    for docs in batches:
        for _ in range(args.turns):
            for threads in (1, 2):
                enc.set_piece_cache_bytes(0)
                enc.set_piece_cache_bytes(bound)
                enc.encode_to_numpy(priming)
                cpu, wall = time.process_time(), time.perf_counter()
                enc.encode_batch_to_numpy(docs, num_threads=threads, disallowed_special=())
                timings[threads].append((time.perf_counter() - wall, time.process_time() - cpu))
    size = sum(len(doc.encode()) for doc in batches[0]) / 1e6
    print(f"{args.encoding} {args.corpus}: 3 slices of {size:.2f} MB, {len(batches[0])} documents in the first, "
          f"{args.turns} turns, cache primed on 2 MB; ids equal to tiktoken's")
    for threads, runs in timings.items():
        wall = statistics.median(w for w, _ in runs) * 1e3
        cpu = statistics.median(c for _, c in runs) * 1e3
        ratio = statistics.median(c / w for w, c in runs)
        print(f"  {threads} thread{'s' if threads > 1 else ''}: wall {wall:.2f} ms, CPU {cpu:.2f} ms, "
              f"CPU / wall {ratio:.2f}")


if __name__ == "__main__":
    main()
