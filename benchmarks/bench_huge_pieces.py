"""One huge piece (a pre-token of megabytes: random data, text without spaces): peak memory and time of
`encode_to_numpy` / `encode` of it as one document.

Each measurement runs in a fresh process: the peak is /proc/self/status's VmHWM, reset after the text is built,
minus the resident size at that point, divided by the piece's size. First, the ids of the merge by windows
(_merge_windows.pxi) are checked equal to one merge of the whole piece (`merge_bytes(windows=False)`); on a
build without windows (before 2026-12-05) that check is skipped and "cuts" shows -1, so the same script
measures both builds.

    python benchmarks/bench_huge_pieces.py [--mb 20] [--encoding cl100k_base]
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import subprocess
import sys
import textwrap

KINDS = {
    # name: Python expression of the text (size in bytes: SIZE); `random` and `re` are imported
    "random letters": "random.Random(1).randbytes(SIZE).translate(bytes(b'abcdefghijklmnopqrstuvwxyz"
                      "ABCDEFGHIJKLMNOPQRSTUVWXYZ'[i % 52] for i in range(256))).decode()",
    "random CJK": "''.join(chr(0x4E00 + (b % 0x5200)) for b in random.Random(1).randbytes(SIZE // 3))",
    "prose, letters only": "(lambda t: (t * (SIZE // len(t) + 1))[:SIZE])(re.sub(r'[^A-Za-z]', '', "
                           "open(CORPUS + '/english_prose.txt', encoding='utf-8').read()))",
    "'ab' repeated": "'ab' * (SIZE // 2)",
    "'日' repeated": "'日' * (SIZE // 3)",
}

CHILD = """
import random, re, time, bytebpe
def status(key):
    for line in open("/proc/self/status"):
        if line.startswith(key):
            return int(line.split()[1]) * 1024
SIZE, CORPUS = {size}, {corpus!r}
enc = bytebpe.get_encoding({encoding!r})
enc.encode_to_numpy("warm up"), enc.encode("warm up")
text = {expression}
piece = text.encode()
how = {how!r}
if how == "check":
    if not hasattr(enc._table, "window_cuts"):
        print(-1)
        raise SystemExit
    assert enc._table.merge_bytes(piece) == enc._table.merge_bytes(piece, windows=False)
    print(len(enc._table.window_cuts(piece)))
    raise SystemExit
base = status("VmRSS")
open("/proc/self/clear_refs", "w").write("5")
started = time.process_time()
ids = getattr(enc, how)(text)
seconds = time.process_time() - started
print((status("VmHWM") - base) / len(piece), seconds, len(ids))
"""


def run(how: str, kind: str, args) -> list[str]:
    code = CHILD.format(size=args.mb * 1_000_000, corpus=args.corpus_dir, encoding=args.encoding,
                        expression=KINDS[kind], how=how)
    result = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True)
    if result.returncode:
        raise SystemExit(f"{kind}, {how}: {result.stderr}")
    return result.stdout.split()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=int, default=20)
    parser.add_argument("--encoding", default="cl100k_base")
    parser.add_argument("--corpus-dir", default=os.path.join(os.path.dirname(__file__), "..", "..", "shared", "corpus"))
    parser.add_argument("--json")
    args = parser.parse_args()
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    print(f"# Huge pieces: {args.mb} MB, {args.encoding} — {stamp}")
    print(f"{platform.processor() or platform.machine()}; load average {os.getloadavg()[0]:.2f}; Python {platform.python_version()}")
    print("Peak resident memory above the text, / the piece's bytes; CPU seconds; a fresh process each; windowed ids "
          "checked equal to the whole merge's first.\n")
    print("| piece | cuts | encode_to_numpy: peak ×, s | encode: peak ×, s |")
    print("|---|---:|---|---|")
    rows = {}
    for kind in KINDS:
        cuts = int(run("check", kind, args)[0])
        cells = {how: run(how, kind, args) for how in ("encode_to_numpy", "encode")}
        rows[kind] = {"cuts": cuts, **{how: [float(v) for v in cell] for how, cell in cells.items()}}
        print(f"| {kind} | {cuts} | " + " | ".join(f"{float(cell[0]):.1f}, {float(cell[1]):.2f}"
                                                for cell in cells.values()) + " |", flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"when": stamp, "mb": args.mb, "encoding": args.encoding, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
