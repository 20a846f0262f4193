#!/usr/bin/env python
"""Counting and streaming: `count_ordinary` against `encode_ordinary`, `decode_stream` against a Python
incremental decoder.

  count     `count_ordinary(doc)` and `len(encode_ordinary(doc))` over ~4,000-character documents of a 1 MB slice,
            one call each. Both run on one encoding, whose piece cache is primed on the 1 MB before the first
            slice; each round takes two new slices, one per method, and alternates which goes first, so that
            neither sees text the other has already cached. Counts are checked equal first.
  offsets   `encode_with_offsets(doc)` against `encode(doc)` over ~4,000-character documents of 1 MB, warm.
  prefix    `encode(text, max_tokens=100)` against `encode(text)` of a 4 MB text (ids checked equal first).
  truncate  `truncate(text, 100)` and `truncate(text, 100, side="left")` against `encode(text)` of the same
            4 MB (the result checked to fit, and one character more not to).
  chunks    `chunks(text, 512)` against `encode(text)` of 10 MB, warm (the chunks checked to join to the text and
            each to fit).
  --long-pieces  instead: `chunks(text, 512)` of texts that are one long piece (random DNA letters, random CJK,
            runs), 100,000 and 1,000,000 characters: seconds, and how they grow.
  stream    decoding the ids of 1 MB one id per step: `DecodeStream.step(id)` against the loop people write,
            `codecs`' incremental UTF-8 decoder fed `decode_single_token_bytes(id)`; texts checked equal first.

Medians over rounds of MB/s (CPU time) and of per-round ratios.

    BYTEBPE_DATA_DIR=../shared/vocab python benchmarks/bench_budgets.py               # 5 rounds, ~1 min
"""
from __future__ import annotations

import argparse
import codecs
import os
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
# numpy (imported by bench_encode) starts OpenBLAS threads that spin after any BLAS call, and CPU time counts
# every thread of the process: one thread for BLAS, which nothing here needs.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

from bench_encode import cpu_model, load_average, markdown_table, read_range, split_into_documents  # noqa: E402

import bytebpe  # noqa: E402

CORPORA = {"english": "english_prose.txt", "code": "code.txt", "multilingual": "multilingual.txt"}


def cpu_seconds(run) -> float:
    start = time.process_time()
    run()
    return time.process_time() - start


def measure_count(enc: bytebpe.Encoding, path: Path, rounds: int) -> tuple[float, float, float]:
    for doc in split_into_documents(read_range(path, 1.0, 1.0), 4000):
        enc.encode_ordinary(doc)
    counted, encoded, ratios = [], [], []
    for k in range(rounds):
        slices = [split_into_documents(read_range(path, 2.0 + 2 * k + j, 1.0), 4000) for j in (0, 1)]
        megabytes = [sum(len(doc.encode()) for doc in docs) / 1e6 for docs in slices]
        count_docs, encode_docs = slices if k % 2 else slices[::-1]
        count_mb, encode_mb = megabytes if k % 2 else megabytes[::-1]
        runs = [("count", lambda: [enc.count_ordinary(doc) for doc in count_docs]),
                ("encode", lambda: [len(enc.encode_ordinary(doc)) for doc in encode_docs])]
        timings = {}
        for name, run in runs if k % 2 else runs[::-1]:
            timings[name] = cpu_seconds(run)
        assert [enc.count_ordinary(d) for d in count_docs] == [len(enc.encode_ordinary(d)) for d in count_docs]
        counted.append(count_mb / timings["count"])
        encoded.append(encode_mb / timings["encode"])
        ratios.append(counted[-1] / encoded[-1])
    return statistics.median(counted), statistics.median(encoded), statistics.median(ratios)


def measure_stream(enc: bytebpe.Encoding, path: Path, rounds: int) -> tuple[float, float, float]:
    text = read_range(path, 2.0, 1.0)
    ids = enc.encode_ordinary(text)
    megabytes = len(text.encode()) / 1e6

    def ours() -> str:
        stream = enc.decode_stream()
        step = stream.step
        return "".join([step(token) for token in ids]) + stream.flush()

    def theirs() -> str:
        decoder = codecs.getincrementaldecoder("utf-8")("replace")
        token_bytes = enc.decode_single_token_bytes
        return "".join([decoder.decode(token_bytes(token)) for token in ids]) + decoder.decode(b"", final=True)

    assert ours() == theirs() == enc.decode(ids)
    mine, baseline, ratios = [], [], []
    for k in range(rounds):
        for name, run in [("ours", ours), ("theirs", theirs)][:: 1 if k % 2 else -1]:
            (mine if name == "ours" else baseline).append(megabytes / cpu_seconds(run))
        ratios.append(mine[-1] / baseline[-1])
    return statistics.median(mine), statistics.median(baseline), statistics.median(ratios)


def measure_prefix(enc: bytebpe.Encoding, path: Path, rounds: int) -> tuple[float, float, float]:
    text = read_range(path, 2.0, 4.0)
    assert enc.encode(text, max_tokens=100) == enc.encode(text)[:100]
    whole, prefix = [], []
    for k in range(rounds):
        runs = [(whole, lambda: enc.encode(text)), (prefix, lambda: enc.encode(text, max_tokens=100))]
        for timings, run in runs[:: 1 if k % 2 else -1]:
            timings.append(cpu_seconds(run) * 1000)
    return statistics.median(prefix), statistics.median(whole), statistics.median(p / w for p, w in zip(prefix, whole))


def measure_truncate(enc: bytebpe.Encoding, path: Path, rounds: int, side: str = "right"
                     ) -> tuple[float, float, float]:
    text = read_range(path, 2.0, 4.0)
    cut = enc.truncate(text, 100, side=side)
    longer = text[:len(cut) + 1] if side == "right" else text[len(text) - len(cut) - 1:]
    assert enc.count(cut) <= 100 < enc.count(longer)
    whole, truncated = [], []
    for k in range(rounds):
        runs = [(whole, lambda: enc.encode(text)), (truncated, lambda: enc.truncate(text, 100, side=side))]
        for timings, run in runs[:: 1 if k % 2 else -1]:
            timings.append(cpu_seconds(run) * 1000)
    return (statistics.median(truncated), statistics.median(whole),
            statistics.median(t / w for t, w in zip(truncated, whole)))


def measure_chunks(enc: bytebpe.Encoding, path: Path, rounds: int) -> float:
    """chunks(text, 512)'s speed / encode(text)'s on the same 10 MB."""
    text = read_range(path, 2.0, 10.0)
    found = enc.chunks(text, 512)
    assert "".join(found) == text and all(count <= 512 for count in enc.count_batch(found))
    ratios = []
    for k in range(rounds):
        timings = {}
        runs = [("chunks", lambda: enc.chunks(text, 512)), ("encode", lambda: enc.encode(text))]
        for name, run in runs[:: 1 if k % 2 else -1]:
            timings[name] = cpu_seconds(run)
        ratios.append(timings["encode"] / timings["chunks"])
    return statistics.median(ratios)


def measure_offsets(enc: bytebpe.Encoding, path: Path, rounds: int) -> tuple[float, float]:
    """(encode_with_offsets / encode, encode_with_offsets_to_numpy / encode_to_numpy)"""
    docs = split_into_documents(read_range(path, 2.0, 1.0), 4000)
    assert [enc.encode_with_offsets(doc)[0] for doc in docs] == [enc.encode(doc) for doc in docs]
    lists, arrays = [], []
    for k in range(rounds):
        timings = {}
        runs = [("offsets", lambda: [enc.encode_with_offsets(doc) for doc in docs]),
                ("encode", lambda: [enc.encode(doc) for doc in docs]),
                ("offsets_numpy", lambda: [enc.encode_with_offsets_to_numpy(doc) for doc in docs]),
                ("encode_numpy", lambda: [enc.encode_to_numpy(doc) for doc in docs])]
        for name, run in runs[:: 1 if k % 2 else -1]:
            timings[name] = cpu_seconds(run)
        lists.append(timings["offsets"] / timings["encode"])
        arrays.append(timings["offsets_numpy"] / timings["encode_numpy"])
    return statistics.median(lists), statistics.median(arrays)


def long_piece_texts(chars: int) -> dict[str, str]:
    """Texts of one long piece (or a few): what a budget search meets in DNA, unbroken CJK, runs."""
    rng = random.Random(1)
    return {"random DNA letters": "".join(rng.choice("ACGT") for _ in range(chars)),
            "random CJK": "".join(rng.choice("的一是不了人我在有他这中大来上") for _ in range(chars)),
            "one letter repeated": "a" * chars, '"ab" repeated': "ab" * (chars // 2),
            "newlines": "\n" * chars, "spaces": " " * chars}


def measure_long_pieces(enc: bytebpe.Encoding, sizes: tuple[int, ...] = (100_000, 1_000_000)) -> None:
    """Seconds of `chunks(text, 512)` on each long-piece text at each size (linear: 10x the text, ~10x the
    time). The chunks are checked to join to the text and each to fit first."""
    rows = []
    for name in long_piece_texts(10):
        times = []
        for size in sizes:
            text = long_piece_texts(size)[name]
            start = time.process_time()
            found = enc.chunks(text, 512)
            times.append(time.process_time() - start)
            assert "".join(found) == text and all(count <= 512 for count in enc.count_batch(found))
        rows.append([name, *(f"{seconds:.2f}" for seconds in times), f"{times[-1] / times[0]:.1f}"])
    print(markdown_table(["text", *(f"chunks(512) of {size:,} characters, s" for size in sizes),
                          "ratio of the two"], rows))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--encoding", default="cl100k_base")
    parser.add_argument("--corpus-dir", type=Path, default=Path(__file__).resolve().parents[2] / "shared" / "corpus")
    parser.add_argument("--long-pieces", action="store_true",
                        help="instead: chunks of texts that are one long piece, at two sizes")
    args = parser.parse_args()
    print(f"# bench_budgets: {args.encoding}, {args.rounds} rounds, CPU {cpu_model()}, load {load_average()}, "
          f"bytebpe {bytebpe.__version__}, Python {sys.version.split()[0]}\n")
    if args.long_pieces:
        measure_long_pieces(bytebpe.get_encoding(args.encoding))
        return
    rows = []
    for corpus, file in CORPORA.items():
        enc = bytebpe.get_encoding(args.encoding)
        count, encode, count_ratio = measure_count(enc, args.corpus_dir / file, args.rounds)
        stream, loop, stream_ratio = measure_stream(enc, args.corpus_dir / file, args.rounds)
        prefix, whole, prefix_ratio = measure_prefix(enc, args.corpus_dir / file, args.rounds)
        offsets_ratio, offsets_numpy_ratio = measure_offsets(enc, args.corpus_dir / file, args.rounds)
        truncated, whole_again, truncate_ratio = measure_truncate(enc, args.corpus_dir / file, args.rounds)
        left, whole_left, left_ratio = measure_truncate(enc, args.corpus_dir / file, args.rounds, side="left")
        chunks_ratio = measure_chunks(enc, args.corpus_dir / file, args.rounds)
        rows.append([corpus, f"{count:.1f}", f"{encode:.1f}", f"{count_ratio:.2f}", f"{stream:.1f}", f"{loop:.1f}",
                     f"{stream_ratio:.2f}", f"{prefix:.1f} / {whole:.1f}", f"{prefix_ratio:.3f}", f"{offsets_ratio:.2f}",
                     f"{offsets_numpy_ratio:.2f}", f"{truncated:.2f} / {whole_again:.1f}", f"{truncate_ratio:.4f}",
                     f"{left:.2f} / {whole_left:.1f}", f"{left_ratio:.4f}", f"{chunks_ratio:.2f}"])
    print(markdown_table(["text", "count_ordinary MB/s", "len(encode_ordinary) MB/s", "ratio",
                          "decode_stream, 1 id a step, MB/s", "codecs loop MB/s", "ratio",
                          "4 MB: max_tokens=100 / whole, ms", "ratio",
                          "encode_with_offsets / encode", "..._to_numpy / encode_to_numpy",
                          "4 MB: truncate(100) / encode, ms", "ratio", "4 MB: truncate(100, side='left') / encode, ms",
                          "ratio", "chunks(512) speed / encode's (10 MB)"], rows))
    print("\nSingle thread, CPU time; count: ~4,000-character documents of 1 MB slices unseen by the method timed "
          "(cache primed on other text); stream: the ids of 1 MB decoded one id per step; prefix: the same 4 MB, "
          "warm, both ways by turns.")


if __name__ == "__main__":
    main()
