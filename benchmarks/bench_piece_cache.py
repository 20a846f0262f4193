#!/usr/bin/env python
"""The persistent piece cache on text the process has not seen, next to tiktoken and to the cache off.

For each encoding, corpus and call shape: the cache is emptied, primed by encoding `--prime-mb` of the
file's start, then one *unseen* slice that follows it is encoded, timed, and the next repetition takes the
next slice (so the cache never holds the timed text itself). Three call shapes: the whole slice in one call,
a loop over ~300-character documents, and a loop over 1-4 KB documents. The same slice goes through tiktoken
and through bytebpe with the cache off untimed first, so that all three find it in the
CPU caches, then timed, taking turns in a rotating order, each timed run right after an untimed run of the
other library over the same slice; off and on are one table with its primed cache taken out and put back.
Ids are checked equal.

    BYTEBPE_DATA_DIR=../shared/vocab python benchmarks/bench_piece_cache.py            # ~3 min
    BYTEBPE_DATA_DIR=../shared/vocab python benchmarks/bench_piece_cache.py --quick    # ~30 s

Printed: throughput ratios to tiktoken (median over the slices), and the persistent cache's hit rate
(hits / lookups: the pieces that needed merging and that the persistent cache takes).
"""
from __future__ import annotations

import argparse
import gc
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import bench_encode  # noqa: E402  (its offline tiktoken cache, sample reading and splitting)

import bytebpe  # noqa: E402

MB = 1e6


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--encodings", nargs="+", default=["cl100k_base", "o200k_base"])
    parser.add_argument("--corpora", nargs="+", default=["english_prose.txt", "code.txt", "multilingual.txt"])
    parser.add_argument("--corpus-dir", type=Path, default=None)
    parser.add_argument("--prime-mb", type=float, default=2.0)
    parser.add_argument("--slice-mb", type=float, default=0.5, help="unseen text per timed repetition")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--cache-bytes", type=int, default=None, help="default: the library default")
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    if args.quick:
        args.repeat, args.slice_mb = 1, 0.25
    return args


def timed(run) -> float:
    gc.disable()
    try:
        start = time.perf_counter()
        run()
        return time.perf_counter() - start
    finally:
        gc.enable()


def main() -> int:
    args = parse_args()
    vocab_dir = bench_encode.vocab_dir_from_env()
    corpus_dir = args.corpus_dir or vocab_dir.parent / "corpus"
    cache_dir = tempfile.mkdtemp(prefix="bench-tiktoken-")
    bench_encode.link_offline_tiktoken_cache(vocab_dir, Path(cache_dir))
    import tiktoken

    print(f"load average: {bench_encode.load_average()}; prime {args.prime_mb} MB, unseen slices of "
          f"{args.slice_mb} MB x {args.repeat}")
    rows = []
    for name in args.encodings:
        theirs = tiktoken.get_encoding(name)
        ours = bytebpe.get_encoding(name)
        default_bytes = ours.piece_cache_info().max_bytes
        cache_bytes = args.cache_bytes if args.cache_bytes is not None else default_bytes
        table = ours._table
        for corpus in args.corpora:
            text = bench_encode.read_sample(corpus_dir / corpus, args.prime_mb + args.slice_mb * args.repeat)
            prime_chars = len(bench_encode.read_sample(corpus_dir / corpus, args.prime_mb))
            prime, rest = text[:prime_chars], text[prime_chars:]
            step = len(rest) // args.repeat
            slices = [rest[i * step:(i + 1) * step] for i in range(args.repeat)]
            seconds: dict[str, list[float]] = {}
            lookups = hits = 0
            for index, piece in enumerate(slices):
                short = bench_encode.split_into_documents(piece, 300)
                docs = bench_encode.split_into_documents(piece, 2048)
                shapes = {
                    "whole": lambda enc: enc.encode_ordinary(piece),
                    "300 chars": lambda enc: [enc.encode_ordinary(d) for d in short],
                    "1-4 KB": lambda enc: [enc.encode_ordinary(d) for d in docs],
                }
                for shape, run in shapes.items():
                    ours.set_piece_cache_bytes(cache_bytes)    # empty again, then primed on other text
                    ours.encode_ordinary(prime)
                    # Off and on are the same encoding and table, with its primed cache taken out and put
                    # back: two tables would compete for the CPU caches, and whichever ran last would win.
                    primed = table._swap_piece_cache(None)
                    expected = run(theirs)      # untimed: brings the slice into the CPU caches for both
                    if run(ours) != expected:
                        raise SystemExit(f"ids differ from tiktoken ({name}, {corpus}, {shape}, cache off)")
                    # Taking turns, in an order that rotates from slice to slice. The cache-on run is the
                    # first time the primed cache meets this slice.
                    turns = [("tiktoken", None), ("off", None), ("on", primed)]
                    for label, cache in turns[index % 3:] + turns[:index % 3]:
                        enc = theirs if label == "tiktoken" else ours
                        # The same state before every timed run: the other library has just read the slice
                        # (a run right after another run of the same table and text found it warmer).
                        table._swap_piece_cache(None)
                        run(ours if label == "tiktoken" else theirs)
                        table._swap_piece_cache(cache)
                        if label == "on":
                            before = ours.piece_cache_info()
                        seconds.setdefault(f"{shape}/{label}", []).append(timed(lambda: run(enc)))
                        if label == "on":
                            after = ours.piece_cache_info()
                    table._swap_piece_cache(primed)
                    if shape == "whole":
                        lookups += after.lookups - before.lookups
                        hits += after.hits - before.hits
                    if run(ours) != expected:
                        raise SystemExit(f"ids differ from tiktoken ({name}, {corpus}, {shape}, cache on)")
            nbytes = len(slices[0].encode())
            row = [name, corpus]
            for shape in ("whole", "300 chars", "1-4 KB"):
                t_tk = statistics.median(seconds[f"{shape}/tiktoken"])
                t_off = statistics.median(seconds[f"{shape}/off"])
                t_on = statistics.median(seconds[f"{shape}/on"])
                row += [f"{t_tk / t_off:.2f}", f"{t_tk / t_on:.2f}"]
            row.append(f"{100 * hits / max(lookups, 1):.0f}% of {lookups}")
            row.append(f"{nbytes / statistics.median(seconds['whole/on']) / MB:.0f}")
            rows.append(row)
            print(" | ".join(row), flush=True)
        ours.set_piece_cache_bytes(default_bytes)
    print()
    print("× tiktoken (cache off / on, primed on other text of the same file):")
    header = ["encoding", "corpus", "whole off", "whole on", "300 chars off", "300 chars on", "1-4 KB off",
              "1-4 KB on", "hit rate (whole)", "MB/s whole on"]
    print(bench_encode.markdown_table(header, rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
