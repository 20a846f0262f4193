#!/usr/bin/env python
"""The compiled scanner (pattern_compiler) against the hand-written ones, on the patterns both run.

r50k, cl100k and o200k's split patterns have hand-written scanners (_pretokenize.pyx); every other pattern of
the family runs on the program pattern_compiler makes of it. This measures what the hand-written ones still
buy, in one process, by turns, on the same text:

  scan    `Scanner.count(text)`: the split alone, without the GIL, no Python object per piece.
  encode  `encode_ordinary(text)` of two encodings with the same ranks: the named one (hand-written scanner)
          and one whose pattern is spelled differently (`\\p{L}` as `\\pL`), which only the compiled
          scanner runs. Each encoding has its own piece cache; both are primed on the same 1 MB, then each
          round encodes a new 1 MB slice, unseen by both.

Pieces and ids are compared before anything is timed; the run stops on a difference. Each cell is the median
over rounds of MB/s; the ratio is the median of per-round ratios (compiled / hand-written; 1.0 = as fast).

    BYTEBPE_DATA_DIR=../shared/vocab python benchmarks/bench_scanners.py            # 5 rounds (~2 min)
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from bench_encode import cpu_model, load_average, markdown_table, read_range  # noqa: E402

import bytebpe  # noqa: E402
from bytebpe import patterns  # noqa: E402
from bytebpe._pretokenize import Scanner  # noqa: E402

ENCODINGS = {"r50k_base": patterns.R50K_PATTERN, "cl100k_base": patterns.CL100K_PATTERN,
             "o200k_base": patterns.O200K_PATTERN}
CORPORA = {"english": "english_prose.txt", "code": "code.txt", "multilingual": "multilingual.txt"}
PRIME_START_MB = 2.0    # the 1 MB that primes both encodings' caches; rounds start after it


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--corpus-dir", type=Path, default=Path(__file__).resolve().parents[2] / "shared" / "corpus")
    return parser.parse_args()


def cpu_seconds(run) -> float:
    start = time.process_time()
    run()
    return time.process_time() - start


def compiled_twin(named: bytebpe.Encoding, pattern: str) -> bytebpe.Encoding:
    """An encoding with `named`'s ranks and a spelling of its pattern that no hand-written scanner knows."""
    spelled = pattern.replace(r"\p{L}", r"\pL")
    assert spelled != pattern and Scanner.for_pattern(spelled, compile=False) is None
    twin = bytebpe.Encoding(named.name + "-compiled", pat_str=spelled, mergeable_ranks=dict(named.mergeable_ranks),
                            special_tokens={})
    assert twin.pretokenizer == "compiled"
    return twin


def measure(name: str, pattern: str, corpus: Path, rounds: int) -> dict[str, float]:
    hand, compiled = Scanner.for_pattern(pattern, compile=False), Scanner.compiled(pattern)
    named = bytebpe.get_encoding(name)
    twin = compiled_twin(named, pattern)
    priming = read_range(corpus, PRIME_START_MB, 1.0)
    named.encode_ordinary(priming)
    twin.encode_ordinary(priming)
    scan_hand, scan_compiled, enc_hand, enc_compiled = [], [], [], []
    for k in range(rounds):
        text = read_range(corpus, PRIME_START_MB + 1.0 + k, 1.0)
        megabytes = len(text.encode("utf-8")) / 1e6
        if hand.split(text) != compiled.split(text):
            sys.exit(f"{name} on {corpus.name}: the compiled scanner cuts differently from the hand-written one")
        for timings, scanner in ((scan_hand, hand), (scan_compiled, compiled))[::1 if k % 2 else -1]:
            timings.append(megabytes / cpu_seconds(lambda: scanner.count(text)))
        # Encode: ids compared after timing (encoding for the check first would prime the cache on the text).
        order = [(enc_hand, named), (enc_compiled, twin)][::1 if k % 2 else -1]
        ids = {}
        for timings, encoding in order:
            seconds = cpu_seconds(lambda: ids.__setitem__(encoding.name, encoding.encode_ordinary(text)))
            timings.append(megabytes / seconds)
        if ids[named.name] != ids[twin.name]:
            sys.exit(f"{name} on {corpus.name}: ids differ between the two scanners")
    ratio = lambda a, b: statistics.median(x / y for x, y in zip(a, b))  # noqa: E731
    return {"scan_hand": statistics.median(scan_hand), "scan_compiled": statistics.median(scan_compiled),
            "scan_ratio": ratio(scan_compiled, scan_hand), "encode_hand": statistics.median(enc_hand),
            "encode_compiled": statistics.median(enc_compiled), "encode_ratio": ratio(enc_compiled, enc_hand)}


def main() -> None:
    args = parse_args()
    print(f"# bench_scanners: {args.rounds} rounds, CPU {cpu_model()}, load {load_average()}, "
          f"bytebpe {bytebpe.__version__}, Python {sys.version.split()[0]}\n")
    rows = []
    for name, pattern in ENCODINGS.items():
        for corpus_name, file_name in CORPORA.items():
            print(f"[measuring {name} / {corpus_name}]", file=sys.stderr)
            r = measure(name, pattern, args.corpus_dir / file_name, args.rounds)
            rows.append([name, corpus_name, f"{r['scan_hand']:.0f}", f"{r['scan_compiled']:.0f}",
                         f"{r['scan_ratio']:.2f}", f"{r['encode_hand']:.1f}", f"{r['encode_compiled']:.1f}",
                         f"{r['encode_ratio']:.2f}"])
    print(markdown_table(["encoding", "text", "scan MB/s hand-written", "scan MB/s compiled", "scan ratio",
                          "encode MB/s hand-written", "encode MB/s compiled", "encode ratio"], rows))
    print("\nSingle thread, CPU time, 1 MB per round, each round a slice neither encoding has seen (both primed "
          "on the same other 1 MB); ratio = compiled / hand-written, median of per-round ratios.")


if __name__ == "__main__":
    main()
