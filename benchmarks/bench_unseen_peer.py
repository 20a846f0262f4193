#!/usr/bin/env python
"""bytebpe and gigatoken on the same unseen slices, in one process, taking turns: flat (numpy) output.

Issue 37's cells (`bench_encode.py --sections peers`) time each library in a fresh process of its own, once
per slice; on this shared host two sets of those runs an hour apart differ by up to ±10% a cell. This script
is the steadier second opinion: both libraries in one process, on the same text, slice after slice, so that
the host's slow minutes fall on both.

For each slice i of 1..--slices (1 MB each, from --start MB on) and each round: bytebpe's persistent piece
cache is dropped (`set_piece_cache_bytes`) and primed on slice i - 1, and a fresh gigatoken `Tokenizer` is
made and primed on slice i - 1; then each encodes slice i, timed by CPU time (`time.process_time`; both run
one thread for one call). Which library goes first alternates by round. The ids of both are checked equal
to tiktoken's on every slice before anything is timed.

Reported per encoding and corpus: each library's ms per MB (total CPU time over total bytes), the ratio of
those totals (gigatoken ÷ bytebpe: above 1 means bytebpe is faster), and the median of the per-slice ratios.

    BYTEBPE_DATA_DIR=../shared/vocab OPENBLAS_NUM_THREADS=1 python benchmarks/bench_unseen_peer.py   # ~3 min
"""
from __future__ import annotations

import argparse
import gc
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from bench_encode import (  # noqa: E402
    add_peer_text_arguments, link_offline_tiktoken_cache, read_range, vocab_dir_from_env)

import bytebpe  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_peer_text_arguments(parser)
    parser.add_argument("--start", type=float, default=8.0, help="MB into each corpus where slice 0 starts")
    parser.add_argument("--slices", type=int, default=6, help="unseen slices timed, each after the one before")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    vocab_dir = vocab_dir_from_env()
    import gigatoken
    import tiktoken

    print(f"# Unseen slices in one process: ms per MB of UTF-8, CPU time, {args.rounds} rounds x "
          f"{args.slices} slices of 1 MB from {args.start:g} MB, each primed on the slice before\n")
    print("| encoding | corpus | bytebpe | gigatoken | gigatoken ÷ bytebpe (totals) | median of slices |")
    print("|---|---|---:|---:|---:|---:|")
    with tempfile.TemporaryDirectory() as cache_dir:
        link_offline_tiktoken_cache(vocab_dir, Path(cache_dir))
        for name in args.encodings:
            enc = bytebpe.get_encoding(name)
            reference = tiktoken.get_encoding(name)
            vocab_file = vocab_dir / f"{name}.tiktoken"

            def encode_ordinary_to_numpy(text: str, enc: bytebpe.Encoding = enc) -> object:
                # Special tokens' text as ordinary text, as encode_ordinary (the check's reference) reads it.
                return enc.encode_to_numpy(text, disallowed_special=())

            for corpus in args.corpora:
                slices = [read_range(args.corpus_dir / corpus, args.start + i, 1) for i in range(args.slices + 1)]
                checker = gigatoken.Tokenizer.from_tiktoken(vocab_file)
                for i, text in enumerate(slices[1:], 1):
                    expected = reference.encode_ordinary(text)
                    for library, call in (("bytebpe", encode_ordinary_to_numpy), ("gigatoken", checker.encode)):
                        if call(text).tolist() != expected:
                            raise SystemExit(f"{name} / {corpus} slice {i}: {library}'s ids differ from tiktoken's")
                del checker
                bound = enc.piece_cache_info().max_bytes    # the default (4 MiB) or BYTEBPE_PIECE_CACHE_BYTES
                if bound == 0:
                    raise SystemExit("bytebpe's piece cache is off (BYTEBPE_PIECE_CACHE_BYTES=0): nothing to compare")
                totals = {"bytebpe": 0.0, "gigatoken": 0.0}
                ratios = []
                for round_ in range(args.rounds):
                    for i in range(1, args.slices + 1):
                        taken = {}
                        order = ("bytebpe", "gigatoken") if round_ % 2 == 0 else ("gigatoken", "bytebpe")
                        for library in order:
                            if library == "bytebpe":
                                enc.set_piece_cache_bytes(bound)     # dropped: empty, same bound
                                call = encode_ordinary_to_numpy
                            else:
                                call = gigatoken.Tokenizer.from_tiktoken(vocab_file).encode
                            call(slices[i - 1])
                            gc.collect()
                            gc.disable()
                            start = time.process_time()
                            result = call(slices[i])
                            taken[library] = time.process_time() - start
                            gc.enable()
                            del result, call
                        ratios.append(taken["gigatoken"] / taken["bytebpe"])
                        for library, seconds in taken.items():
                            totals[library] += seconds
                size = args.rounds * sum(len(text.encode("utf-8")) for text in slices[1:])
                ms = {library: seconds / size * 1e9 for library, seconds in totals.items()}
                print(f"| {name} | {corpus} | {ms['bytebpe']:.2f} | {ms['gigatoken']:.2f} | "
                      f"{totals['gigatoken'] / totals['bytebpe']:.2f} | {statistics.median(ratios):.2f} |", flush=True)
    print(f"\nLoad average at the end: {' / '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
