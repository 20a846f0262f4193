# Included by _core.pyx: pieces of RUN_MIN_BYTES or more that repeat one byte merge as runs of equal
# tokens, in a few runs of memory, under either merge rule (tiktoken's, or pair rank's).

cdef inline void _insert_run(Py_ssize_t* length, Py_ssize_t* count, Rank* token, Py_ssize_t* runs, Py_ssize_t at,
                             Py_ssize_t new_length, Py_ssize_t new_count, Rank new_token) noexcept nogil:
    cdef Py_ssize_t k
    for k in range(runs[0], at, -1):
        length[k] = length[k - 1]
        count[k] = count[k - 1]
        token[k] = token[k - 1]
    length[at] = new_length
    count[at] = new_count
    token[at] = new_token
    runs[0] += 1


cdef inline void _tidy_runs(Py_ssize_t* length, Py_ssize_t* count, Rank* token, Py_ssize_t* runs) noexcept nogil:
    """Drop empty runs and join neighbours of the same length (so of the same token)."""
    cdef Py_ssize_t i, kept = 0
    for i in range(runs[0]):
        if count[i] == 0:
            continue
        if kept > 0 and length[kept - 1] == length[i]:
            count[kept - 1] += count[i]
        else:
            length[kept] = length[i]
            count[kept] = count[i]
            token[kept] = token[i]
            kept += 1
    runs[0] = kept


cdef int _merge_run(MergeTable self, const uint8_t* data, Py_ssize_t n, vector[Rank]& out) except -1 nogil:
    # A piece that repeats one byte b (runs of letters, dashes, spaces...): every part is b^L, kept as runs
    # of equal parts (length L, count c, token), merged exactly as BPE does: the lowest-ranked pair, leftmost
    # first. A pair's rank and the token it makes (_run_pair) are the same wherever it is: under tiktoken's
    # rule both are the rank of b^(L1 + L2); under the pair-rank rule, the merge listed for the two tokens
    # (the whole-piece table may leave b^L out, see _keep_whole_tokens_of_rule). A pair inside a run merges
    # the whole run at once, left to right, into c // 2 parts of 2L (plus one L when c is odd) -- the BPE
    # order only when none of the pairs this creates (2L+L, 2L+2L, with the neighbours) ranks below the pair
    # merged; new pairs never tie with it (tiktoken: they are longer strings, so other tokens; pair rank:
    # ranks never tie between different pairs). Otherwise, or with too many runs or steps, returns 0 and
    # appends nothing, and the general path merges the piece. Returns 1 when `out` holds the piece's ids.
    # 10 MB of "a" on GPT-2's tokenizer.json: 2.25 s and a 484 MB peak by heap, 0.04 s and 104 MB with it.
    cdef Py_ssize_t length[RUN_MAX_RUNS + 2]
    cdef Py_ssize_t count[RUN_MAX_RUNS + 2]
    cdef Rank token[RUN_MAX_RUNS + 2]
    cdef Py_ssize_t runs = 1, i, k, best, steps, c
    cdef Rank best_rank, rank, made, best_made = 0, doubled
    cdef bint inside
    if self.byte_rank[data[0]] == NO_RANK:
        return 0
    for i in range(1, n):
        if data[i] != data[0]:
            return 0
    length[0] = 1
    count[0] = n
    token[0] = self.byte_rank[data[0]]
    for steps in range(RUN_MAX_STEPS):
        best = -1
        best_rank = NO_RANK
        inside = False
        for i in range(runs):      # left to right, the pair inside a run before the one after it
            if count[i] >= 2:
                rank = _run_pair(self, data, n, length[i], token[i], length[i], token[i], &made)
                if rank < best_rank:
                    best, best_rank, inside, best_made = i, rank, True, made
            if i + 1 < runs:
                rank = _run_pair(self, data, n, length[i], token[i], length[i + 1], token[i + 1], &made)
                if rank < best_rank:
                    best, best_rank, inside, best_made = i, rank, False, made
        if best < 0:
            for i in range(runs):
                for k in range(count[i]):
                    out.push_back(token[i])
            return 1
        if runs + 2 > RUN_MAX_RUNS:
            return 0
        i = best
        if inside:
            c = count[i]
            doubled = best_made
            if (_run_pair(self, data, n, 2 * length[i], doubled, length[i], token[i], &made) < best_rank
                    or (c >= 4 and _run_pair(self, data, n, 2 * length[i], doubled, 2 * length[i], doubled,
                                             &made) < best_rank)
                    or (i > 0 and _run_pair(self, data, n, length[i - 1], token[i - 1], 2 * length[i], doubled,
                                            &made) < best_rank)
                    or (c % 2 == 0 and i + 1 < runs
                        and _run_pair(self, data, n, 2 * length[i], doubled, length[i + 1], token[i + 1],
                                      &made) < best_rank)):
                return 0
            length[i] *= 2
            count[i] = c // 2
            if c % 2:
                _insert_run(length, count, token, &runs, i + 1, length[i] // 2, 1, token[i])
            token[i] = doubled
        else:
            # One pair across two runs: the last part of run i and the first of run i + 1.
            count[i] -= 1
            count[i + 1] -= 1
            _insert_run(length, count, token, &runs, i + 1, length[i] + length[i + 1], 1, best_made)
        _tidy_runs(length, count, token, &runs)
    return 0


cdef inline Rank _run_pair(MergeTable self, const uint8_t* data, Py_ssize_t n, Py_ssize_t left_length,
                           Rank left, Py_ssize_t right_length, Rank right, Rank* made) noexcept nogil:
    """The rank of merging part b^left_length (token `left`) with b^right_length (token `right`), and through
    `made` the token it makes; NO_RANK when they do not merge."""
    cdef const PairMerge* merge
    cdef Py_ssize_t size
    if self.by_pair_rank:
        merge = self._find_merge(left, right)
        if merge == NULL:
            return NO_RANK
        made[0] = merge.result
        return merge.merge_rank
    size = left_length + right_length      # data holds n >= size copies of b when size <= n
    made[0] = self.rank_of(data, size) if size <= n and size <= self.max_token_len else NO_RANK
    return made[0]
