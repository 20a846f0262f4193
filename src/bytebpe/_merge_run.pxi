# Included by _core.pyx: pieces of RUN_MIN_BYTES or more that repeat one byte merge as runs of equal
# tokens (tiktoken's rule), in a few runs of memory.

cdef inline void _insert_run(Py_ssize_t* length, Py_ssize_t* count, Rank* token, Py_ssize_t* runs, Py_ssize_t at,
                             Py_ssize_t new_length, Py_ssize_t new_count, Rank new_token) noexcept nogil:
    # `token` (the pair-rank rule's part ids, _pair_merge_run) may be NULL.
    cdef Py_ssize_t k
    for k in range(runs[0], at, -1):
        length[k] = length[k - 1]
        count[k] = count[k - 1]
        if token != NULL:
            token[k] = token[k - 1]
    length[at] = new_length
    count[at] = new_count
    if token != NULL:
        token[at] = new_token
    runs[0] += 1


cdef inline void _tidy_runs(Py_ssize_t* length, Py_ssize_t* count, Rank* token, Py_ssize_t* runs) noexcept nogil:
    """Drop empty runs and join neighbours of the same length (so of the same token)."""
    cdef Py_ssize_t i, kept = 0
    for i in range(runs[0]):
        if count[i] == 0:
            continue
        if kept and length[kept - 1] == length[i]:
            count[kept - 1] += count[i]
        else:
            length[kept] = length[i]
            count[kept] = count[i]
            if token != NULL:
                token[kept] = token[i]
            kept += 1
    runs[0] = kept


cdef int _merge_run(MergeTable self, const uint8_t* data, Py_ssize_t n, vector[Rank]& out) except -1 nogil:
    # A piece that repeats one byte b (runs of letters, dashes, spaces...): every part is b^L, so a part
    # is its length and a pair's rank is that of b^(L1 + L2), the same wherever it is. The parts are
    # kept as runs (length L, count c), merged exactly as BPE does: the lowest-ranked pair, leftmost
    # first. A pair inside a run merges the whole run at once, left to right, into c // 2 parts of 2L
    # (plus one L when c is odd) -- the BPE order only when none of the pairs this creates (2L+L, 2L+2L,
    # with the neighbours) ranks below the pair merged; new pairs never tie with it (they are longer
    # strings, so other tokens). Otherwise, or with too many runs or steps, returns 0 and appends
    # nothing, and the general path merges the piece. Returns 1 when `out` holds the piece's ids.
    cdef Py_ssize_t length[RUN_MAX_RUNS + 2]
    cdef Py_ssize_t count[RUN_MAX_RUNS + 2]
    cdef Py_ssize_t runs = 1, i, k, best, steps, c, merged
    cdef Rank best_rank, rank
    cdef bint inside
    if self.byte_rank[data[0]] == NO_RANK:
        return 0
    for i in range(1, n):
        if data[i] != data[0]:
            return 0
    length[0] = 1
    count[0] = n
    for steps in range(RUN_MAX_STEPS):
        best = -1
        best_rank = NO_RANK
        inside = False
        for i in range(runs):      # left to right, the pair inside a run before the one after it
            if count[i] >= 2:
                rank = _run_rank(self, data, n, 2 * length[i])
                if rank < best_rank:
                    best, best_rank, inside = i, rank, True
            if i + 1 < runs:
                rank = _run_rank(self, data, n, length[i] + length[i + 1])
                if rank < best_rank:
                    best, best_rank, inside = i, rank, False
        if best < 0:
            for i in range(runs):
                rank = _run_rank(self, data, n, length[i])
                for k in range(count[i]):
                    out.push_back(rank)
            return 1
        if runs + 2 > RUN_MAX_RUNS:
            return 0
        i = best
        if inside:
            c = count[i]
            if (_run_rank(self, data, n, 3 * length[i]) < best_rank
                    or (c >= 4 and _run_rank(self, data, n, 4 * length[i]) < best_rank)
                    or (i > 0 and _run_rank(self, data, n, length[i - 1] + 2 * length[i]) < best_rank)
                    or (c % 2 == 0 and i + 1 < runs
                        and _run_rank(self, data, n, 2 * length[i] + length[i + 1]) < best_rank)):
                return 0
            length[i] *= 2
            count[i] = c // 2
            if c % 2:
                _insert_run(length, count, NULL, &runs, i + 1, length[i] // 2, 1, 0)
        else:
            # One pair across two runs: the last part of run i and the first of run i + 1.
            merged = length[i] + length[i + 1]
            count[i] -= 1
            count[i + 1] -= 1
            _insert_run(length, count, NULL, &runs, i + 1, merged, 1, 0)
        _tidy_runs(length, count, NULL, &runs)
    return 0


cdef Rank _run_rank(MergeTable self, const uint8_t* data, Py_ssize_t n, Py_ssize_t size) noexcept nogil:
    """Rank of b^size (data holds n >= size copies of b), NO_RANK when it is no token."""
    if size > n or size > self.max_token_len:
        return NO_RANK
    return self.rank_of(data, size)
