#!/usr/bin/env python
"""Issue 13's or 37's targets from several runs of bench_encode.py's peer sections, each figure the median over
runs.

One run times each unseen slice once per library, one library after another in processes of their own, so
a slow minute of the shared host lands on one library's cells only: on 2026-12-03 two runs 25 minutes apart
gave tiktoken 10.5 and 6.6 MB/s on the same cl100k English slices. Every ratio here is taken within one
run (bytebpe and the peer it is compared with measured minutes apart, not hours), then the median over the
runs is printed, with the lowest and highest beside it.

    BYTEBPE_DATA_DIR=../shared/vocab python benchmarks/bench_encode.py --sections peers \\
        --encodings cl100k_base o200k_base --peers gigatoken quicktok --json run1.json   # and run2, run3 ...
    python benchmarks/summarize_peers.py run1.json run2.json run3.json
    python benchmarks/summarize_peers.py --issue 37 run1.json run2.json run3.json

Issue 37's figures come twice: as the tables print them (each library's best slice) and slice by slice (the
median over the slices of bytebpe's rate ÷ the peer's on the same slice, table 12), since the best slices of
the multilingual corpus can be different languages for the two libraries.
"""
from __future__ import annotations

import argparse
import json
import statistics
from collections.abc import Callable
from pathlib import Path
from typing import Any

# Each target: (what is compared, how to get the figure from one run's result for one encoding and corpus,
# the level it must reach). A figure is a ratio: 1.00 or more meets a "≥ peer" target.
Figure = Callable[[dict[str, Any]], "float | None"]


def rate(result: dict[str, Any], key: str) -> float | None:
    found = result["rates"].get(key)
    return None if found is None else found["mb_per_s"]


def ratio(result: dict[str, Any], key: str, reference: str) -> float | None:
    mine, theirs = rate(result, key), rate(result, reference)
    return None if mine is None or theirs is None else mine / theirs


# The encodings issue 13 sets targets for.
ENCODINGS = ("cl100k_base", "o200k_base")


def targets(corpus: str, encoding: str) -> list[tuple[str, Figure, float]]:
    multilingual = corpus.startswith("multilingual")
    english_or_code = not multilingual
    cl100k = encoding == "cl100k_base"
    times_tiktoken = (8.0 if cl100k else 6.0) if english_or_code else (4.0 if cl100k else 3.5)
    listed: list[tuple[str, Figure, float]] = [
        ("list primed / gigatoken list primed",
         lambda r: ratio(r, "bytebpe list primed", "gigatoken list primed"), 1.0),
        ("list fresh / gigatoken list primed", lambda r: ratio(r, "bytebpe list fresh", "gigatoken list primed"), 1.0),
        ("list primed × tiktoken", lambda r: ratio(r, "bytebpe list primed", "tiktoken list fresh"),
         times_tiktoken),
        ("list fresh × tiktoken", lambda r: ratio(r, "bytebpe list fresh", "tiktoken list fresh"),
         times_tiktoken),
        ("numpy fresh / gigatoken numpy fresh",
         lambda r: ratio(r, "bytebpe numpy fresh", "gigatoken numpy fresh"), 1.0),
        ("numpy primed / gigatoken numpy primed",
         lambda r: ratio(r, "bytebpe numpy primed", "gigatoken numpy primed"), 1.0),
        ("numpy fresh / list fresh", lambda r: ratio(r, "bytebpe numpy fresh", "bytebpe list fresh"), 1.0),
        ("numpy primed / list primed", lambda r: ratio(r, "bytebpe numpy primed", "bytebpe list primed"), 1.0),
        ("2-thread numpy batch / list batch (fresh)",
         lambda r: ratio(r, "bytebpe batch_numpy fresh", "bytebpe batch_list fresh"), 1.0),
    ]
    if multilingual:
        listed += [
            ("list fresh / quicktok list fresh", lambda r: ratio(r, "bytebpe list fresh", "quicktok list fresh"), 1.0),
            ("numpy fresh / quicktok numpy fresh",
             lambda r: ratio(r, "bytebpe numpy fresh", "quicktok numpy fresh"), 1.0),
            ("2-thread numpy batch / quicktok batch",
             lambda r: ratio(r, "bytebpe batch_numpy fresh", "quicktok batch_numpy fresh"), 1.0),
        ]
    if corpus.startswith("english"):
        listed += [
            ("2-thread list batch / own 1-thread loop", lambda r: r["scaling"]["list"], 1.7),
            ("2-thread numpy batch / own 1-thread loop", lambda r: r["scaling"]["numpy"], 1.7),
        ]
    return listed


def slice_ratios(result: dict[str, Any], key: str, reference: str) -> list[float] | None:
    """Rate `key` ÷ rate `reference` on each slice both timed (bench_encode's table 12 prints them too), or
    None without per-slice rates (runs from before 2026-12-05, or a kind not timed)."""
    mine, theirs = result["rates"].get(key), result["rates"].get(reference)
    if mine is None or theirs is None or not mine.get("per_slice") or not theirs.get("per_slice"):
        return None
    return [a / b for a, b in zip(mine["per_slice"], theirs["per_slice"])]


def same_slice(result: dict[str, Any], key: str, reference: str) -> float | None:
    """The median over the slices of bytebpe's rate ÷ the peer's on the same slice."""
    ratios = slice_ratios(result, key, reference)
    return statistics.median(ratios) if ratios else None


def targets_37(corpus: str, encoding: str) -> list[tuple[str, Figure, float]]:
    """Issue 37: flat numpy and list output >= 1.25x gigatoken's on unseen text; the 2-thread flat batch
    >= 1.8x bytebpe's own single thread."""
    listed: list[tuple[str, Figure, float]] = []
    for kind in ("numpy", "list"):
        key, reference = f"bytebpe {kind} primed", f"gigatoken {kind} primed"
        listed += [
            (f"{kind} primed / gigatoken's, best slices",
             lambda r, key=key, reference=reference: ratio(r, key, reference), 1.25),
            (f"{kind} primed / gigatoken's, same slice",
             lambda r, key=key, reference=reference: same_slice(r, key, reference), 1.25),
        ]
    listed += [("2-thread numpy batch / own 1-thread loop (fresh)", lambda r: r["scaling"]["numpy"], 1.8),
               ("2-thread numpy batch / own 1-thread loop (primed)",
                lambda r: r["scaling"].get("numpy_primed"), 1.8)]
    return listed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("runs", nargs="+", type=Path, help="--json outputs of bench_encode.py")
    parser.add_argument("--issue", type=int, choices=(13, 37), default=13, help="whose targets (default 13)")
    args = parser.parse_args()
    chosen = targets_37 if args.issue == 37 else targets
    runs = [json.loads(path.read_text(encoding="utf-8"))["peers"] for path in args.runs]
    cells = sorted({(r["encoding"], r["corpus"]) for run in runs for r in run if r["encoding"] in ENCODINGS})
    print(f"Medians over {len(runs)} runs ({', '.join(str(path) for path in args.runs)}); "
          "[lowest–highest]; ✓ = the median meets the target.\n")
    print("| encoding | corpus | figure | target | median | range | met |")
    print("|---|---|---|---:|---:|---|---|")
    for encoding, corpus in cells:
        results = [r for run in runs for r in run if (r["encoding"], r["corpus"]) == (encoding, corpus)]
        for name, figure, level in chosen(corpus, encoding):
            values = [v for v in (figure(r) for r in results) if v is not None]
            if not values:
                continue
            middle = statistics.median(values)
            print(f"| {encoding} | {corpus} | {name} | {level:g} | {middle:.2f} | "
                  f"{min(values):.2f}–{max(values):.2f} | {'✓' if middle >= level else '✗'} |")


if __name__ == "__main__":
    main()
