#!/usr/bin/env python
"""Where flat output spends its time on pieces already seen: bytebpe's scan and lookups next to gigatoken.

Issue 37 compares `encode_to_numpy` with gigatoken's `Tokenizer.encode` on text neither has seen. That time is
three parts: the UTF-8 of the str, the pieces met before (found in a table or a cache), and the pieces met for
the first time (merged). This script times the second part on its own, by encoding 1 MB that the call before
already encoded (every piece is then a whole token or a cached one), on an ASCII copy of the text (its
non-ASCII characters dropped): an ASCII str is its own UTF-8 for both libraries, so no conversion is timed.

- `seen`: the whole call, best of --repeat, after one untimed call on the same str;
- `scan`: bytebpe's pre-tokenizer alone (`Scanner.count`, less the `str.encode` copy it makes);
- `lookups`: `seen - scan`, bytebpe's finding of every piece's ids and writing them out.

The original text is timed too, but not compared: after its first call gigatoken reads the UTF-8 that CPython
caches inside the str, while bytebpe converts it again at every call (a cache inside the str would double its
memory for as long as it lives), so that row's bytebpe figure holds a conversion that gigatoken's does not.

Ids are checked equal to tiktoken's (loaded offline) first, for both libraries and both texts. CPU time, one
thread, one process for everything (nothing here is new text). Command:

    BYTEBPE_DATA_DIR=../shared/vocab OPENBLAS_NUM_THREADS=1 python benchmarks/bench_seen_path.py
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

sys.path.insert(0, str(Path(__file__).parent))

from bench_encode import (  # noqa: E402
    add_peer_text_arguments, link_offline_tiktoken_cache, read_range, vocab_dir_from_env)

import bytebpe  # noqa: E402

START_MB = 6.0


def best_ms_per_mb(call: Callable[[Any], Any], arg: Any, size: int, repeat: int) -> float:
    call(arg)
    best = float("inf")
    for _ in range(repeat):
        start = time.process_time()
        call(arg)
        best = min(best, time.process_time() - start)
    return best / size * 1e9


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_peer_text_arguments(parser)
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    vocab_dir = vocab_dir_from_env()
    import gigatoken
    import tiktoken

    print(f"# Pieces seen before: ms per MB of UTF-8, CPU time, best of {args.repeat} after one untimed call\n")
    print("| encoding | text | bytebpe seen | scan | lookups | gigatoken seen | gigatoken ÷ bytebpe |")
    print("|---|---|---:|---:|---:|---:|---:|")
    with tempfile.TemporaryDirectory() as cache_dir:
        link_offline_tiktoken_cache(vocab_dir, Path(cache_dir))
        for name in args.encodings:
            enc = bytebpe.get_encoding(name)
            scanner = enc._pretokenize
            reference = tiktoken.get_encoding(name)
            giga = gigatoken.Tokenizer.from_tiktoken(vocab_dir / f"{name}.tiktoken")
            for corpus in args.corpora:
                text = read_range(args.corpus_dir / corpus, START_MB, 1)
                ascii_text = text.encode("ascii", "ignore").decode("ascii")
                for label, sample in ((f"{corpus}, ASCII copy", ascii_text), (f"{corpus} (not comparable)", text)):
                    expected = reference.encode_ordinary(sample)
                    for library, call in (("bytebpe", enc.encode_to_numpy), ("gigatoken", giga.encode)):
                        ids = call(sample)
                        if ids.tolist() != expected:
                            raise SystemExit(f"{name} / {label}: {library}'s ids differ from tiktoken's")
                    size = len(sample.encode("utf-8"))
                    seen = best_ms_per_mb(enc.encode_to_numpy, sample, size, args.repeat)
                    scan = best_ms_per_mb(scanner.count, sample, size, args.repeat) - best_ms_per_mb(
                        str.encode, sample, size, args.repeat)
                    giga_seen = best_ms_per_mb(giga.encode, sample, size, args.repeat)
                    print(f"| {name} | {label} | {seen:.2f} | {scan:.2f} | {seen - scan:.2f} | {giga_seen:.2f} | "
                          f"{giga_seen / seen:.2f} |", flush=True)
    print(f"\nLoad average at the end: {' / '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
