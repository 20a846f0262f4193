"""The `regex` engine's split (pretokenizer.RegexSplit) against `regex` on the original pattern, and against the
rewritten pattern alone (classes spelled out as the oracle's code point ranges: what RegexSplit ran before
2026-12-07); every named encoding's pattern (gpt2/r50k/p50k share R50K's, o200k_harmony O200K's), texts of
82,712 characters. Best of 3, one thread.

    /work/venv/bin/python benchmarks/results/2026-12-07-regex-engine.py
"""
import random
import time

import regex

from bytebpe import patterns
from bytebpe.pretokenizer import RegexSplit, compile_pattern

N = 82712
random.seed(0)
texts = {
 "mixed \\n/space/digits": ("\n \n 12 \n\n   3\n" * 6000)[:N],
 "random \\n/space/digits": "".join(random.choice("\n 0123456789") for _ in range(N)),
 "spaces": " " * N, "newlines": "\n" * N, "digits": "1" * N,
 "spaces then letter": ((" " * 1000 + "a") * N)[:N],
 "letters": ("HelloWorld abcDEF " * N)[:N],
 "punctuation": ("!?.,;:--//" * N)[:N],
 "multilingual": ("Привет мир 你好世界 مرحبا κόσμος ἀλλά naïve 😀 नमस्ते 안녕 " * N)[:N],
 "newer Unicode (ʕ, U+0558)": ("Привет ʕ\u0558ab 12 \u0558\u0558 " * N)[:N],
}
def best(f, text, reps=3):
    ts = []
    for _ in range(reps):
        t = time.perf_counter(); f(text); ts.append(time.perf_counter() - t)
    return min(ts)
print("| text | pattern | regex, original pattern | before: spelled-out pattern | after: RegexSplit |")
print("|---|---|---|---|---|")
for name, pat in [("r50k", patterns.R50K_PATTERN), ("cl100k", patterns.CL100K_PATTERN), ("o200k", patterns.O200K_PATTERN)]:
    orig = regex.compile(pat); exact = compile_pattern(pat); split = RegexSplit(pat); split("warm")
    for tname, text in texts.items():
        a = best(lambda t, orig=orig: orig.findall(t, concurrent=False), text)
        b = best(lambda t, exact=exact: exact.findall(t, concurrent=False), text)
        c = best(split, text)
        print(f"| {tname} | {name} | {a*1000:.1f} ms | {b*1000:.1f} ms | {c*1000:.1f} ms |", flush=True)
