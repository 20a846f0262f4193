"""Load time of model files, side by side with each file's reference, in one process.

    python benchmarks/bench_json_load.py [--files-dir DIR] [--rounds 9] [FILE ...]

For a tokenizer.json: `bytebpe.from_tokenizer_json(text)` against HF `tokenizers.Tokenizer.from_str(text)`,
the file's text already read (neither pays for the disk). For a SentencePiece `.model`:
`bytebpe.load_tokenizer(path)` against `sentencepiece.SentencePieceProcessor(model_file=path)`. The two
loads take turns, round after round, so that load from elsewhere on this shared machine hits both alike;
printed: the best and the median wall time of each, and the ratio of the medians (under 1: bytebpe loads
faster). Before timing, both loaded tokenizers encode the same sample text and must give the same ids.
Files: those named, else every tokenizer.json and .model in --files-dir (BYTEBPE_REAL_FILES_DIR, as
tools/fetch_real_files.py fills it) that bytebpe serves.
"""
from __future__ import annotations

import argparse
import gc
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

SAMPLE = ("The quick brown fox jumps over the lazy dog 1234567 times.\n  def f(x): return x ** 2  # code\n"
          "Ünïcödé, 日本語のテキスト, русский текст, عربى, emoji 🤖🚀.")


def _timed(load: Callable[[], Any]) -> float:
    gc.collect()
    start = time.perf_counter()
    load()
    return time.perf_counter() - start


def _loaders(path: Path) -> tuple[Callable[[], Any], Callable[[], Any], Callable[[Any, str], list[int]],
                                  Callable[[Any, str], list[int]], str]:
    import bytebpe

    if ".model" in path.name:
        import sentencepiece

        return (lambda: bytebpe.load_tokenizer(path),
                lambda: sentencepiece.SentencePieceProcessor(model_file=str(path)),
                lambda enc, text: enc.encode(text), lambda sp, text: sp.encode(text), "sentencepiece")
    import tokenizers

    text = path.read_text(encoding="utf-8")
    return (lambda: bytebpe.from_tokenizer_json(text), lambda: tokenizers.Tokenizer.from_str(text),
            lambda enc, sample: enc.encode(sample, allowed_special="all"),
            lambda tok, sample: tok.encode(sample, add_special_tokens=False).ids, "HF from_str")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("files", nargs="*", type=Path)
    parser.add_argument("--files-dir", type=Path, default=os.environ.get("BYTEBPE_REAL_FILES_DIR"))
    parser.add_argument("--rounds", type=int, default=9)
    args = parser.parse_args()
    files = args.files or sorted(
        path for path in (args.files_dir.iterdir() if args.files_dir else ())
        if path.name.endswith((".tokenizer.json", ".model")))
    if not files:
        sys.exit("no files: name them, or give --files-dir (tools/fetch_real_files.py fills one)")
    import sentencepiece
    import tokenizers

    import bytebpe

    print(f"# Model file loads, bytebpe against each file's reference — "
          f"{datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC")
    print(f"Python {platform.python_version()}, bytebpe {bytebpe.__version__}, tokenizers {tokenizers.__version__}, "
          f"sentencepiece {sentencepiece.__version__}; {os.cpu_count()} cores, load average "
          f"{os.getloadavg()[0]:.2f}; {args.rounds} rounds, the two loads taking turns; wall ms\n")
    print("| file | reference | bytebpe best | bytebpe median | reference best | reference median | "
          "bytebpe / reference (medians) |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for path in files:
        ours, theirs, our_ids, their_ids, reference = _loaders(path)
        try:
            ours_loaded = ours()
        except Exception as error:  # noqa: BLE001 -- a file bytebpe refuses is reported, not timed
            print(f"| {path.name} | {reference} | refused: {str(error)[:80]} | | | | |")
            continue
        if our_ids(ours_loaded, SAMPLE) != their_ids(theirs(), SAMPLE):
            sys.exit(f"{path.name}: bytebpe's ids differ from {reference}'s on the sample: not timed")
        del ours_loaded
        times: dict[str, list[float]] = {"ours": [], "theirs": []}
        for _ in range(args.rounds):
            times["ours"].append(_timed(ours))
            times["theirs"].append(_timed(theirs))
        ours_ms = [1000 * seconds for seconds in times["ours"]]
        theirs_ms = [1000 * seconds for seconds in times["theirs"]]
        print(f"| {path.name} | {reference} | {min(ours_ms):.1f} | {statistics.median(ours_ms):.1f} | "
              f"{min(theirs_ms):.1f} | {statistics.median(theirs_ms):.1f} | "
              f"{statistics.median(ours_ms) / statistics.median(theirs_ms):.2f} |", flush=True)


if __name__ == "__main__":
    main()
