#!/usr/bin/env bash
# Build bytebpe with AddressSanitizer + UndefinedBehaviorSanitizer into its own virtualenv and run the
# memory-sensitive tests (.ci/memory-tests.txt) against it.
#
#   tools/sanitize.sh                      build, then run every module of .ci/memory-tests.txt
#   tools/sanitize.sh -k special           build, then the same modules with extra pytest arguments
#   tools/sanitize.sh -- tests/test_x.py   build, then exactly the pytest arguments after "--"
#   tools/sanitize.sh --no-build ...       reuse the last build
#   tools/sanitize.sh --build-only         build, run nothing (fuzz/run.sh uses this)
#   tools/sanitize.sh --env                print the environment a sanitized run needs (for `eval`)
#   BYTEBPE_SANITIZE_LOG_DIR=DIR ...       reports to files in DIR, printed at the end (for `-n auto` runs)
#
# Python itself is not instrumented: the ASan runtime is preloaded, and PYTHONMALLOC=malloc sends every
# Python object through malloc, where ASan sees it (pymalloc's arenas would hide a freed str's buffer).
# CPython's "leaks" are by design, so leak detection is off. The virtualenv is $BYTEBPE_SANITIZE_VENV
# (default .venv-sanitize); the build starts from a fresh copy of the checkout, so that no object file or
# generated .cpp of another build flavour is reused. A sanitizer error ends the run with exit code 86 (ASan)
# or 87 (UBSan) after its report. BYTEBPE_SANITIZE_EXTRAS (default "test") names the extras whose
# requirements are installed beside it.
set -euo pipefail
cd "$(dirname "$0")/.."

venv="${BYTEBPE_SANITIZE_VENV:-$PWD/.venv-sanitize}"
flavour="${BYTEBPE_SANITIZE:-1}"     # "fuzzer" adds clang's coverage hooks for atheris (fuzz/run.sh)

sanitizer_env() {
    local cc="${CC:-gcc}"
    local asan ubsan
    asan=$("$cc" -print-file-name=libasan.so)
    ubsan=$("$cc" -print-file-name=libubsan.so)
    if [ "$flavour" = fuzzer ]; then
        # The ASan runtime that atheris ships (LLVM's, with libFuzzer and UBSan's handlers in it): with gcc's
        # libasan preloaded instead, its coverage stubs would swallow atheris' Python coverage.
        local atheris_dir
        atheris_dir=$("$venv/bin/python" -c 'import atheris; print(atheris.path())')
        asan="$atheris_dir/asan_with_fuzzer.so"
        ubsan=""
    fi
    if [ ! -e "$asan" ]; then
        echo "sanitize: no ASan runtime at '$asan' (install libasan for $cc)" >&2
        exit 1
    fi
    echo "export LD_PRELOAD='$asan${ubsan:+ $ubsan}'"
    echo "export PYTHONMALLOC=malloc"
    local asan_exit=":exitcode=86" ubsan_exit=":exitcode=87"
    if [ "$flavour" = fuzzer ]; then
        asan_exit="" ubsan_exit=""    # one runtime for both, and libFuzzer reports the crash anyway
    fi
    local asan_log="" ubsan_log=""
    if [ -n "${BYTEBPE_SANITIZE_LOG_DIR:-}" ]; then
        # Reports to files (one per process): a pytest-xdist worker's stderr does not reach the terminal.
        asan_log=":log_path=$BYTEBPE_SANITIZE_LOG_DIR/asan" ubsan_log=":log_path=$BYTEBPE_SANITIZE_LOG_DIR/ubsan"
    fi
    echo "export ASAN_OPTIONS='detect_leaks=0:allocator_may_return_null=1$asan_exit$asan_log'"
    echo "export UBSAN_OPTIONS='halt_on_error=1:print_stacktrace=1$ubsan_exit$ubsan_log'"
}

build=1
run=1
case "${1:-}" in
    --env) sanitizer_env; exit 0 ;;
    --no-build) build=0; shift ;;
    --build-only) run=0; shift ;;
esac

if [ "$build" = 1 ]; then
    start=$SECONDS
    if [ ! -x "$venv/bin/python" ]; then
        python3 -m venv "$venv"
        "$venv/bin/python" -m pip install --quiet --upgrade pip
    fi
    # The runtime and test dependencies, then bytebpe itself (built from a clean copy, never from cache).
    BYTEBPE_SANITIZE_EXTRAS="${BYTEBPE_SANITIZE_EXTRAS:-test}" "$venv/bin/python" - > "$venv/requirements.txt" <<'PY'
import os
import tomllib
project = tomllib.load(open("pyproject.toml", "rb"))["project"]
requirements = list(project["dependencies"])
for extra in os.environ["BYTEBPE_SANITIZE_EXTRAS"].split():
    requirements += project["optional-dependencies"][extra]
print("\n".join(requirements))
PY
    "$venv/bin/python" -m pip install --quiet -r "$venv/requirements.txt"
    src=$(mktemp -d)
    trap 'rm -rf "$src"' EXIT
    git ls-files -z --cached --others --exclude-standard | tar --null -T - -cf - | tar -xf - -C "$src"
    BYTEBPE_SANITIZE="$flavour" "$venv/bin/python" -m pip install --quiet --no-cache-dir --no-deps \
        --force-reinstall "$src"
    echo "sanitize: built BYTEBPE_SANITIZE=$flavour into $venv in $((SECONDS - start)) s"
fi
[ "$run" = 1 ] || exit 0

if [ "${1:-}" = -- ]; then
    shift
    args=("$@")
else
    source .ci/memory-tests.sh
    args=("${MEMORY_TESTS[@]}" "$@")
fi

if [ -n "${BYTEBPE_SANITIZE_LOG_DIR:-}" ]; then
    mkdir -p "$BYTEBPE_SANITIZE_LOG_DIR"
fi
eval "$(sanitizer_env)"
start=$SECONDS
status=0
# --capture=sys: pytest's fd-level capture would swallow a sanitizer report, which the runtime writes straight
# to file descriptor 2 just before it ends the process.
"$venv/bin/python" -m pytest -q -p no:cacheprovider --capture=sys "${args[@]}" || status=$?
echo "sanitize: tests ran in $((SECONDS - start)) s under ASan+UBSan (exit $status)"
if [ -n "${BYTEBPE_SANITIZE_LOG_DIR:-}" ] && [ -n "$(ls -A "$BYTEBPE_SANITIZE_LOG_DIR")" ]; then
    for report in "$BYTEBPE_SANITIZE_LOG_DIR"/*; do
        echo "sanitize: $report"
        cat "$report"
    done
    [ "$status" != 0 ] || status=86
fi
exit "$status"
