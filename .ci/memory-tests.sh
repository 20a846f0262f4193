# Sourced by .ci/run and tools/sanitize.sh: fills the array MEMORY_TESTS from .ci/memory-tests.txt.
# Run from the repository root.
MEMORY_TESTS=()
while IFS= read -r line || [ -n "$line" ]; do
    line="${line%%#*}"
    line="${line//[[:space:]]/}"
    [ -z "$line" ] && continue
    if [ ! -e "$line" ]; then
        echo "memory-tests: $line is listed in .ci/memory-tests.txt but does not exist" >&2
        exit 1
    fi
    MEMORY_TESTS+=("$line")
done < .ci/memory-tests.txt
