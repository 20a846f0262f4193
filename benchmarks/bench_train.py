#!/usr/bin/env python
"""Training time and peak memory of bytebpe next to rustbpe, HF `tokenizers` and bpeasy, same run.

Each training runs in a fresh subprocess (this script with --worker), which reads the corpus line by line
(every trainer gets the same iterator of lines and tiktoken's cl100k pattern), times only the training
call, and reports its own peak resident memory (VmHWM: the interpreter and imports included, so the
baseline after imports is printed too). The learned vocabularies are compared before any time is reported:
bytebpe, rustbpe and bpeasy must be identical, or the script exits with status 1. HF breaks ties
differently (and counts in 32 bits), so its vocabulary is only reported as the share of tokens in common.

    python benchmarks/bench_train.py                 # train_10mb.txt and a ~75 MB concatenation, 8192 + 32768
    python benchmarks/bench_train.py --quick         # train_1mb.txt, vocab 2048: a smoke test
    python benchmarks/bench_train.py --sizes 250mb 1gb --vocab 32768 --trainers bytebpe rustbpe

The 250 MB and 1 GB corpora repeat the ~75 MB concatenation (as the corpus's PROVENANCE.md suggests), the
last copy cut at a line end: their distinct pre-tokens are the 75 MB's, their counts 3.2x / 13x.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TRAINERS = ["bytebpe", "bytebpe_files", "rustbpe", "hf", "bpeasy"]
# Concatenated into the large corpus, as PROVENANCE.md of the shared corpus suggests (~75 MiB).
LARGE_PARTS = ["english_prose.txt", "english_tech.txt", "code.txt", "multilingual.txt"]


# ==== the worker: one training in this process ==================================================


def _status_mb(field: str) -> float:
    """A memory figure of this process from /proc/self/status: VmHWM (peak resident) or VmRSS (now)."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    raise RuntimeError(f"no {field} in /proc/self/status")


def _train_bytebpe(path: Path, vocab_size: int, pattern: str) -> dict[bytes, int]:
    import bytebpe

    with open(path, encoding="utf-8") as lines:
        return dict(bytebpe.train(lines, vocab_size, pat_str=pattern).mergeable_ranks)


def _train_bytebpe_files(path: Path, vocab_size: int, pattern: str) -> dict[bytes, int]:
    """`bytebpe train FILE` / train_from_files: bytebpe's reader (the file in ~1 MiB chunks cut where no
    pre-token crosses), not an iterator of lines."""
    import bytebpe

    return dict(bytebpe.train_from_files([path], vocab_size, pat_str=pattern).mergeable_ranks)


def _train_rustbpe(path: Path, vocab_size: int, pattern: str) -> dict[bytes, int]:
    import rustbpe

    tokenizer = rustbpe.Tokenizer()
    with open(path, encoding="utf-8") as lines:
        tokenizer.train_from_iterator(lines, vocab_size, pattern=pattern)
    return dict(tokenizer.get_mergeable_ranks())


def _train_bpeasy(path: Path, vocab_size: int, pattern: str) -> dict[bytes, int]:
    import bpeasy

    with open(path, encoding="utf-8") as lines:
        # max_token_length is required; 2**20 bytes is no limit in practice.
        return bpeasy.train_bpe(lines, pattern, 1 << 20, vocab_size)


def _train_hf(path: Path, vocab_size: int, pattern: str) -> dict[bytes, int]:
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers, trainers

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(pattern), behavior="isolated"),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
    ])
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False,
        special_tokens=[])
    with open(path, encoding="utf-8") as lines:
        tokenizer.train_from_iterator(lines, trainer)
    byte_of_char = {char: b for b, char in enumerate(_gpt2_byte_chars())}
    return {bytes(byte_of_char[c] for c in token): rank for token, rank in tokenizer.get_vocab().items()}


def _gpt2_byte_chars() -> list[str]:
    """GPT-2's printable stand-in character for each byte (HF's ByteLevel alphabet)."""
    printable = [b for b in range(256) if chr(b).isprintable() and chr(b) != " "]
    chars = {b: chr(b) for b in printable}
    extra = 0
    for b in range(256):
        if b not in chars:
            chars[b] = chr(256 + extra)
            extra += 1
    return [chars[b] for b in range(256)]


def worker(trainer: str, path: Path, vocab_size: int, out: Path, pattern: str) -> None:
    train = {"bytebpe": _train_bytebpe, "bytebpe_files": _train_bytebpe_files, "rustbpe": _train_rustbpe,
             "bpeasy": _train_bpeasy, "hf": _train_hf}[trainer]
    if trainer == "hf":
        import tokenizers  # noqa: F401  (imports are outside the timed region for every trainer)
    elif not trainer.startswith("bytebpe"):
        __import__(trainer)
    else:
        import bytebpe  # noqa: F401
    baseline = _status_mb("VmRSS")
    start = time.perf_counter()
    ranks = train(path, vocab_size, pattern)
    seconds = time.perf_counter() - start
    peak = _status_mb("VmHWM")
    ordered = [token.hex() for token, _ in sorted(ranks.items(), key=lambda item: item[1])]
    out.write_text(json.dumps({"seconds": seconds, "peak_mb": peak, "baseline_mb": baseline, "tokens": ordered}))


# ==== the driver ================================================================================


def run_worker(trainer: str, path: Path, vocab_size: int, scratch: Path) -> dict:
    out = scratch / f"{trainer}-{path.stem}-{vocab_size}.json"
    # The pattern travels on the command line, so that only bytebpe's worker imports bytebpe.
    from bytebpe.patterns import CL100K_PATTERN

    subprocess.run([sys.executable, __file__, "--worker", trainer, str(path), str(vocab_size), str(out),
                    CL100K_PATTERN], check=True)
    return json.loads(out.read_text())


def available(trainer: str) -> bool:
    module = {"hf": "tokenizers", "bytebpe_files": "bytebpe"}.get(trainer, trainer)
    try:
        __import__(module)
    except ImportError:
        return False
    return True


def default_corpus_dir() -> Path:
    """Where tests/conftest.py looks too: BYTEBPE_CORPUS_DIR, or `corpus` beside BYTEBPE_DATA_DIR."""
    if os.environ.get("BYTEBPE_CORPUS_DIR"):
        return Path(os.environ["BYTEBPE_CORPUS_DIR"])
    data_dir = os.environ.get("BYTEBPE_DATA_DIR", "").split(os.pathsep)[0]
    if data_dir:
        return Path(data_dir).parent / "corpus"
    return Path(__file__).resolve().parents[2] / "shared" / "corpus"


def repeated_corpus(corpus_dir: Path, path: Path, target_bytes: int) -> Path:
    """The concatenation of LARGE_PARTS written again and again to `path` until `target_bytes`, the last copy
    cut after a newline."""
    once = b"".join((corpus_dir / part).read_bytes() for part in LARGE_PARTS)
    with open(path, "wb") as out:
        written = 0
        while written + len(once) <= target_bytes:
            out.write(once)
            written += len(once)
        rest = once[:target_bytes - written]
        out.write(rest[:rest.rfind(b"\n") + 1])
    return path


def load_average() -> str:
    return " / ".join(f"{x:.2f}" for x in os.getloadavg())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus-dir", type=Path, default=default_corpus_dir(),
                        help="default: $BYTEBPE_CORPUS_DIR, else corpus beside $BYTEBPE_DATA_DIR, else ../shared/corpus")
    parser.add_argument("--quick", action="store_true", help="train_1mb.txt at vocab 2048 only")
    parser.add_argument("--vocab", type=int, nargs="+", default=None)
    parser.add_argument("--repeat", type=int, default=1, help="runs per trainer; the fastest counts")
    parser.add_argument("--sizes", nargs="+", default=["10mb", "75mb"], choices=["10mb", "75mb", "250mb", "1gb"],
                        help="train_10mb.txt, the ~75 MB concatenation, and/or it repeated to 250 MB or 1 GB "
                             "(default: 10mb 75mb)")
    parser.add_argument("--trainers", nargs="+", default=TRAINERS, choices=TRAINERS)
    parser.add_argument("--worker", nargs=5, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        trainer, path, vocab, out, pattern = args.worker
        worker(trainer, Path(path), int(vocab), Path(out), pattern)
        return 0

    trainers = [t for t in args.trainers if available(t)]
    missing = sorted(set(args.trainers) - set(trainers))
    vocabs = args.vocab or ([2048] if args.quick else [8192, 32768])
    import bytebpe

    print(f"### bytebpe training benchmark — {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC\n")
    print(f"- machine: {platform.platform()}; os.cpu_count()={os.cpu_count()}; "
          f"usable by this process: {len(os.sched_getaffinity(0))}")
    print(f"- load average at start (1 / 5 / 15 min; other processes share these cores): {load_average()}")
    versions = [f"bytebpe {bytebpe.__version__}"]
    for trainer in trainers:
        if trainer.startswith("bytebpe"):
            continue
        from importlib.metadata import version
        package = {"hf": "tokenizers"}.get(trainer, trainer)
        versions.append(f"{package} {version(package)}")
    print(f"- Python {platform.python_version()}; " + ", ".join(versions)
          + (f"; not installed: {', '.join(missing)}" if missing else ""))
    print("- every trainer reads the file line by line with tiktoken's cl100k_base pattern; time = the training "
          f"call only, best of {args.repeat}; peak = VmHWM of the worker process (interpreter + imports "
          "included; `base` = its RSS after imports, before training)")
    print("- bytebpe, rustbpe and bpeasy vocabularies are checked identical before times are printed; "
          "HF's is reported as tokens in common with rustbpe's (other tie-break), and so is bytebpe_files' "
          "(`bytebpe train FILE`: the file read whole in chunks, not line by line, so blank lines cut "
          "differently)\n")

    status = 0
    with tempfile.TemporaryDirectory(prefix="bytebpe-bench-") as scratch_name:
        scratch = Path(scratch_name)
        corpora = []
        if args.quick or "10mb" in args.sizes:
            corpora.append(args.corpus_dir / ("train_1mb.txt" if args.quick else "train_10mb.txt"))
        if not args.quick and "75mb" in args.sizes:
            large = scratch / "concat_75mb.txt"
            with open(large, "wb") as out:
                for part in LARGE_PARTS:
                    out.write((args.corpus_dir / part).read_bytes())
            corpora.append(large)
        for size, megabytes in (("250mb", 250), ("1gb", 1000)):
            if not args.quick and size in args.sizes:
                corpora.append(repeated_corpus(args.corpus_dir, scratch / f"repeated_{size}.txt", megabytes * 10**6))
        header = ("| corpus | MB | vocab | trainer | seconds | peak MB | base MB | vs bytebpe time | "
                  "vs bytebpe peak | vocab check |")
        print(header)
        print("|---|---:|---:|---|---:|---:|---:|---:|---:|---|")
        for corpus in corpora:
            mb = corpus.stat().st_size / 1e6
            for vocab_size in vocabs:
                results: dict[str, dict] = {}
                for _ in range(args.repeat):
                    for trainer in trainers:     # trainers take turns, so load changes hit all of them
                        result = run_worker(trainer, corpus, vocab_size, scratch)
                        best = results.get(trainer)
                        if best is None or result["seconds"] < best["seconds"]:
                            results[trainer] = result
                reference = results.get("rustbpe", results["bytebpe"])["tokens"]
                checks = {}
                for trainer, result in results.items():
                    if trainer in ("hf", "bytebpe_files"):
                        # HF breaks ties otherwise; bytebpe_files reads the file whole (a blank line is one
                        # "\n\n" piece there, two "\n" pieces in a line-by-line iterator).
                        common = len(set(result["tokens"]) & set(reference))
                        checks[trainer] = f"{common}/{len(reference)} tokens in common"
                    elif result["tokens"] == reference:
                        checks[trainer] = "identical"
                    else:
                        first = next((k for k, (a, b) in enumerate(zip(result["tokens"], reference)) if a != b),
                                     min(len(result["tokens"]), len(reference)))
                        checks[trainer] = f"DIFFERENT from rank {first}"
                        status = 1
                ours = results["bytebpe"]
                for trainer, result in results.items():
                    print(f"| {corpus.name} | {mb:.1f} | {vocab_size} | {trainer} | {result['seconds']:.2f} | "
                          f"{result['peak_mb']:.0f} | {result['baseline_mb']:.0f} | "
                          f"{result['seconds'] / ours['seconds']:.2f}× | {result['peak_mb'] / ours['peak_mb']:.2f}× | "
                          f"{checks[trainer]} |", flush=True)
    print(f"\n(vs bytebpe > 1: bytebpe is faster / uses less memory. load average at end: {load_average()})")
    if status:
        print("VOCABULARIES DIFFER: see the vocab check column", file=sys.stderr)
    return status


if __name__ == "__main__":
    sys.exit(main())
