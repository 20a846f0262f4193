#!/usr/bin/env bash
# Fuzz bytebpe against its pure-Python oracle (fuzz/fuzz_bytebpe.py) under AddressSanitizer + UBSan.
#
#   fuzz/run.sh -max_total_time=600        fuzz for 10 minutes
#   fuzz/run.sh -runs=100000               fuzz for 100,000 executions
#   fuzz/run.sh fuzz/artifacts/crash-XXX   replay one saved input (BYTEBPE_FUZZ_SHOW=1 prints the case)
#   FUZZ_NO_BUILD=1 fuzz/run.sh ...        reuse the last build
#
# Arguments are libFuzzer's (-help=1 lists them). The build is tools/sanitize.sh's with
# BYTEBPE_SANITIZE=fuzzer, into .venv-fuzz (BYTEBPE_SANITIZE_VENV) with the `fuzz` extra (atheris): the
# compiled modules are instrumented for ASan/UBSan but carry no runtime, and the process preloads the one
# atheris ships (LLVM's, with libFuzzer inside), so that atheris' coverage of the Python layer reaches
# libFuzzer. gcc gives the compiled code no coverage counters; CC=clang CXX=clang++ adds them
# (-fsanitize=fuzzer-no-link). The corpus grows in $FUZZ_CORPUS (default fuzz/corpus, seeded with random
# inputs when empty); failing inputs are written to fuzz/artifacts/.
set -euo pipefail
cd "$(dirname "$0")/.."

export BYTEBPE_SANITIZE="${BYTEBPE_SANITIZE:-fuzzer}"
export BYTEBPE_SANITIZE_VENV="${BYTEBPE_SANITIZE_VENV:-$PWD/.venv-fuzz}"
venv="$BYTEBPE_SANITIZE_VENV"
corpus_dir="${FUZZ_CORPUS:-fuzz/corpus}"
if [ "${FUZZ_NO_BUILD:-0}" != 1 ]; then
    BYTEBPE_SANITIZE_EXTRAS=fuzz tools/sanitize.sh --build-only
fi

mkdir -p "$corpus_dir" fuzz/artifacts
if [ -z "$(ls -A "$corpus_dir")" ]; then
    "$venv/bin/python" - "$corpus_dir" <<'PY'
import random
import sys
rng = random.Random(0)
for i in range(64):
    with open(f"{sys.argv[1]}/seed-{i:02d}", "wb") as f:
        f.write(rng.randbytes(rng.randint(16, 3000)))
PY
fi

replay=0
for arg in "$@"; do
    [ -f "$arg" ] && replay=1
done
corpus=()
[ "$replay" = 1 ] || corpus=("$corpus_dir")

eval "$(tools/sanitize.sh --env)"
# -len_control=0: inputs of any length from the start (a case needs a few hundred bytes to be interesting);
# -rss_limit_mb: ASan's shadow memory and quarantine are large; leaks are not checked (CPython keeps objects
# alive by design).
exec "$venv/bin/python" fuzz/fuzz_bytebpe.py -max_len=4096 -len_control=0 -rss_limit_mb=8192 \
    -detect_leaks=0 -artifact_prefix=fuzz/artifacts/ -print_final_stats=1 "$@" "${corpus[@]}"
