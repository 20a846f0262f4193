"""SentencePiece-style and byte-level tokenizer.json files: bytebpe vs HF tokenizers (and sentencepiece for the
.model), one document per call, ids checked equal first, CPU time of one thread, best of 3 rounds.

    python benchmarks/results/2026-12-07-sentencepiece-style.py   # needs ../shared/tokenizers, ../shared/corpus
"""
import json, lzma, os, sys, time
from pathlib import Path
import sentencepiece as spm
from tokenizers import Tokenizer
import bytebpe

SHARED = Path(__file__).resolve().parents[3] / "shared"
docs = [json.loads(line)["text"] for kind in ("english", "code", "multilingual")
        for _, line in zip(range(300), open(SHARED / "corpus" / f"docs_{kind}.jsonl", encoding="utf-8"))]
MB = sum(len(d.encode()) for d in docs) / 1e6


def timed(encode):
    best = float("inf")
    for _ in range(3):
        start = time.process_time()
        for d in docs:
            encode(d)
        best = min(best, time.process_time() - start)
    return MB / best


print(f"{len(docs)} documents, {MB:.2f} MB; load avg {os.getloadavg()[0]:.1f}")
for name in ("mistral-7b-v0.1/tokenizer.json.xz", "phi-3-mini/tokenizer.json.xz", "olmo2/allenai_dolma2.json.xz",
             "whisper-tiny/tokenizer.json.xz", "roberta-base/tokenizer.json.xz"):
    text = lzma.decompress((SHARED / "tokenizers" / name).read_bytes()).decode()
    start = time.perf_counter(); hf = Tokenizer.from_str(text); hf_load = time.perf_counter() - start
    start = time.perf_counter(); enc = bytebpe.from_tokenizer_json(text); load = time.perf_counter() - start
    assert all(enc.encode(d, allowed_special="all") == hf.encode(d, add_special_tokens=False).ids for d in docs)
    ours = timed(lambda d: enc.encode(d, allowed_special="all"))
    theirs = timed(lambda d: hf.encode(d, add_special_tokens=False))
    print(f"{name}: bytebpe {ours:.1f} MB/s, HF {theirs:.1f} MB/s, ratio {ours / theirs:.2f}; "
          f"load {load:.2f} s vs HF from_str {hf_load:.2f} s")
path = SHARED / "tokenizers" / "llama2-spm" / "tokenizer.model"
start = time.perf_counter(); enc = bytebpe.load_tokenizer(path); load = time.perf_counter() - start
start = time.perf_counter(); sp = spm.SentencePieceProcessor(model_file=str(path)); sp_load = time.perf_counter() - start
assert all(enc.encode_ordinary(d) == sp.encode(d) for d in docs)
ours, theirs = timed(enc.encode_ordinary), timed(sp.encode)
print(f"llama2 tokenizer.model: bytebpe {ours:.1f} MB/s, sentencepiece {theirs:.1f} MB/s, ratio {ours / theirs:.2f}; "
      f"load {load:.2f} s vs sentencepiece {sp_load:.3f} s")
