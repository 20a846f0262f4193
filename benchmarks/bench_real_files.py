"""Real model files (tests/real_files/manifest.json): bytebpe against each file's own reference, side by side
in one run — HF `tokenizers` for a tokenizer.json, `sentencepiece` for a .model.

One document per call (English, code and multilingual documents of the shared corpora), every id checked
equal to the reference's before anything is timed. Every library meets text new to it: the documents are
dealt into 4 sets; each library is primed on the first, then timed once on each of the others (CPU time of
this thread), and its best MB/s is kept — bytebpe's piece cache and HF's word cache hold only other text
when a set is timed. Load time is
the best of 3 wall-clock loads from the file's text (HF `Tokenizer.from_str`, bytebpe `from_tokenizer_json`),
or from the file (`SentencePieceProcessor`, `bytebpe.load_tokenizer`).

    python tools/fetch_real_files.py DIR
    python benchmarks/bench_real_files.py --files DIR [--corpus ../shared/corpus] [--docs 300] [NAME ...]
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import sys
import time
from pathlib import Path

import bytebpe

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_NAMES = ["moonshine-llama2.tokenizer.json", "mistral-7b-v0.1.tokenizer.json", "phi-3-mini.tokenizer.json",
                 "olmo2-dolma2.tokenizer.json", "llama3.tokenizer.json", "qwen2.5.tokenizer.json",
                 "whisper-base.tokenizer.json", "clip.tokenizer.json", "llama2.tokenizer.model"]


def _best(run, clock=time.process_time, rounds: int = 3) -> float:
    best = float("inf")
    for _ in range(rounds):
        start = clock()
        run()
        best = min(best, clock() - start)
    return best


def _best_unseen(encode, sets: list[list[str]]) -> float:
    """The best MB/s of `encode` over sets[1:], each met once, after priming on sets[0]."""
    for doc in sets[0]:
        encode(doc)
    rates = []
    for docs in sets[1:]:
        start = time.process_time()
        for doc in docs:
            encode(doc)
        rates.append(sum(len(d.encode()) for d in docs) / 1e6 / (time.process_time() - start))
    return max(rates)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("names", nargs="*", default=DEFAULT_NAMES)
    parser.add_argument("--files", type=Path, default=Path(os.environ.get("BYTEBPE_REAL_FILES_DIR", ".")))
    parser.add_argument("--corpus", type=Path, default=ROOT.parent / "shared" / "corpus")
    parser.add_argument("--docs", type=int, default=300, help="documents per corpus")
    args = parser.parse_args()
    docs = [json.loads(line)["text"] for kind in ("english", "code", "multilingual")
            for _, line in zip(range(args.docs), open(args.corpus / f"docs_{kind}.jsonl", encoding="utf-8"))]
    megabytes = sum(len(d.encode()) for d in docs) / 1e6
    sets = [docs[start::4] for start in range(4)]       # (each set holds every kind of text)
    import sentencepiece
    import tokenizers
    print(f"# {datetime.date.today()} {platform.python_version()} bytebpe {bytebpe.__version__} tokenizers "
          f"{tokenizers.__version__} sentencepiece {sentencepiece.__version__}; {os.cpu_count()} cores, load "
          f"average {os.getloadavg()[0]:.1f}; {len(docs)} documents, {megabytes:.2f} MB in 4 sets (1 primes, 3 timed, "
          "each once); one thread")
    print("| file | bytebpe MB/s | reference MB/s | ratio | bytebpe load s | reference load s |")
    print("|---|---|---|---|---|---|")
    for name in args.names:
        path = args.files / name
        if not path.is_file():
            print(f"| {name} | (not in {args.files}) | | | | |")
            continue
        if name.endswith(".model"):
            sp = sentencepiece.SentencePieceProcessor(model_file=str(path))
            enc = bytebpe.load_tokenizer(path)
            assert [enc.encode_ordinary(d) for d in docs] == [sp.encode(d) for d in docs], name
            ours, theirs = _best_unseen(enc.encode_ordinary, sets), _best_unseen(sp.encode, sets)
            load = _best(lambda: bytebpe.load_tokenizer(path), time.perf_counter)
            reference_load = _best(lambda: sentencepiece.SentencePieceProcessor(model_file=str(path)), time.perf_counter)
        else:
            text = path.read_text(encoding="utf-8")
            hf = tokenizers.Tokenizer.from_str(text)
            enc = bytebpe.from_tokenizer_json(text)
            assert [enc.encode(d, allowed_special="all") for d in docs] == \
                [hf.encode(d, add_special_tokens=False).ids for d in docs], name
            ours = _best_unseen(lambda d: enc.encode(d, allowed_special="all"), sets)
            theirs = _best_unseen(lambda d: hf.encode(d, add_special_tokens=False), sets)
            load = _best(lambda: bytebpe.from_tokenizer_json(text), time.perf_counter)
            reference_load = _best(lambda: tokenizers.Tokenizer.from_str(text), time.perf_counter)
        print(f"| {name} | {ours:.1f} | {theirs:.1f} | {ours / theirs:.2f} | {load:.3f} | "
              f"{reference_load:.3f} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
