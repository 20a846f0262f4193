# Included by _core.pyx: HF tokenizers' rule (merge the listed pair of lowest merge rank), by flat scan for
# short pieces and by heap for long ones; tables made by MergeTable.from_pair_merges.

cdef int _merge_by_pair_rank(MergeTable self, const uint8_t* data, Py_ssize_t n, vector[Rank]& out) except -1 nogil:
    # HF's BPE (tokenizers/src/models/bpe/word.rs, merge_all): the parts start as the single-byte tokens,
    # and while some adjacent pair is listed in the merges, the pair of lowest merge rank merges into its
    # result token, the leftmost on ties. A byte without a token is left out before merging (HF skips a
    # character with no id when the model has no unk token), so its neighbours become adjacent.
    # The same two loops as tiktoken's rule: a flat scan for short pieces, a heap for long ones.
    cdef Rank small[SCAN_MAX_BYTES]
    cdef vector[Rank] ids
    cdef Py_ssize_t k, m = 0
    cdef Rank token
    if n <= SCAN_MAX_BYTES:
        for k in range(n):
            token = self.byte_rank[data[k]]
            if token != NO_RANK:
                small[m] = token
                m += 1
        return _pair_merge_scan(self, small, m, out, data if m == n else NULL)
    if n >= NO_PART:
        with gil:
            raise ValueError(f"cannot encode a single pre-token of {n} bytes (the limit is 4 GiB - 1)")
    if n >= RUN_MIN_BYTES and _pair_merge_run(self, data, n, out):
        return 0
    ids.reserve(n)
    for k in range(n):
        token = self.byte_rank[data[k]]
        if token != NO_RANK:
            ids.push_back(token)
    if ids.size() <= SCAN_MAX_BYTES:
        return _pair_merge_scan(self, ids.data(), ids.size(), out, NULL)
    return _pair_merge_heap(self, ids.data(), ids.size(), out, data if <Py_ssize_t>ids.size() == n else NULL)


cdef int _pair_merge_scan(MergeTable self, const Rank* ids, Py_ssize_t m, vector[Rank]& out,
                          const uint8_t* data) except -1 nogil:
    # _merge_by_scan's loop over parts numbered 0..m-1: key[p] = (merge rank of part p with its successor)
    # << 6 | p, and result[p] the token that pair makes.
    cdef uint64_t key[SCAN_MAX_BYTES]
    cdef Rank result[SCAN_MAX_BYTES]
    cdef Rank part[SCAN_MAX_BYTES]
    cdef uint8_t next_part[SCAN_MAX_BYTES]
    cdef uint8_t prev_part[SCAN_MAX_BYTES]
    cdef uint64_t best_key
    cdef Py_ssize_t padded = (m + 3) & ~3
    cdef Py_ssize_t k, p, q, after, before
    cdef const PairMerge* merge
    if m == 0:
        return 0
    for k in range(m):
        next_part[k] = <uint8_t>(k + 1)
        prev_part[k] = <uint8_t>(k - 1)
        part[k] = ids[k]
        merge = self._first_merge(ids, data, k) if k + 1 < m else NULL
        key[k] = (<uint64_t>(merge.merge_rank if merge != NULL else NO_RANK) << 6) | <uint64_t>k
        result[k] = merge.result if merge != NULL else NO_RANK
    for k in range(m, padded):
        key[k] = (<uint64_t>NO_RANK << 6) | <uint64_t>k
    while True:
        best_key = _smallest_key(key, padded)
        if <Rank>(best_key >> 6) == NO_RANK:
            break
        p = <Py_ssize_t>(best_key & 63)
        q = next_part[p]
        after = next_part[q]
        part[p] = result[p]
        next_part[p] = <uint8_t>after
        key[q] = (<uint64_t>NO_RANK << 6) | <uint64_t>q      # part q is gone
        # Both neighbours' lookups miss the cache more often than not (the pair table is megabytes: half
        # of this loop's time waited on them, perf, DeepSeek on multilingual text); start both loads first.
        before = prev_part[p]
        if after < m:
            self._prefetch_merge(part[p], part[after])
        if p > 0:
            self._prefetch_merge(part[before], part[p])
        merge = NULL
        if after < m:
            prev_part[after] = <uint8_t>p
            merge = self._find_merge(part[p], part[after])
        key[p] = (<uint64_t>(merge.merge_rank if merge != NULL else NO_RANK) << 6) | <uint64_t>p
        result[p] = merge.result if merge != NULL else NO_RANK
        if p > 0:
            merge = self._find_merge(part[before], part[p])
            key[before] = (<uint64_t>(merge.merge_rank if merge != NULL else NO_RANK) << 6) | <uint64_t>before
            result[before] = merge.result if merge != NULL else NO_RANK
    p = 0
    while p < m:
        out.push_back(part[p])
        p = next_part[p]
    return 0


cdef int _pair_merge_heap(MergeTable self, const Rank* ids, Py_ssize_t m, vector[Rank]& out,
                          const uint8_t* data) except -1 nogil:
    # _merge_by_heap's loop over parts numbered 0..m-1: the heap holds ~(merge rank << 32 | p); an entry
    # is stale when pair_rank[p] no longer equals its rank (one rank names one pair, and a pair that
    # merged cannot come back at the same p: its left part has grown).
    cdef vector[uint32_t] next_part
    cdef vector[int64_t] prev_part
    cdef vector[Rank] pair_rank
    cdef vector[Rank] result
    cdef vector[Rank] part
    cdef priority_queue[uint64_t] heap
    next_part.resize(m)
    prev_part.resize(m)
    pair_rank.resize(m)
    result.resize(m)
    part.assign(ids, ids + m)
    cdef Py_ssize_t p, q, after, before
    cdef Rank rank
    cdef uint64_t key
    cdef const PairMerge* merge
    for p in range(m):
        next_part[p] = <uint32_t>(p + 1)
        prev_part[p] = p - 1
        merge = self._first_merge(ids, data, p) if p + 1 < m else NULL
        pair_rank[p] = merge.merge_rank if merge != NULL else NO_RANK
        result[p] = merge.result if merge != NULL else NO_RANK
        if merge != NULL:
            heap.push(~((<uint64_t>merge.merge_rank << 32) | <uint64_t>p))
    while not heap.empty():
        key = ~heap.top()
        heap.pop()
        p = <Py_ssize_t>(key & 0xFFFFFFFFULL)
        rank = <Rank>(key >> 32)
        if pair_rank[p] != rank:
            continue
        part[p] = result[p]
        q = next_part[p]
        after = next_part[q]
        next_part[p] = <uint32_t>after
        pair_rank[q] = NO_RANK
        before = prev_part[p]
        if after < m:     # both lookups' loads started first, as in _pair_merge_scan
            self._prefetch_merge(part[p], part[after])
        if before >= 0:
            self._prefetch_merge(part[before], part[p])
        merge = NULL
        if after < m:
            prev_part[after] = p
            merge = self._find_merge(part[p], part[after])
        pair_rank[p] = merge.merge_rank if merge != NULL else NO_RANK
        result[p] = merge.result if merge != NULL else NO_RANK
        if merge != NULL:
            heap.push(~((<uint64_t>merge.merge_rank << 32) | <uint64_t>p))
        if before >= 0:
            merge = self._find_merge(part[before], part[p])
            pair_rank[before] = merge.merge_rank if merge != NULL else NO_RANK
            result[before] = merge.result if merge != NULL else NO_RANK
            if merge != NULL:
                heap.push(~((<uint64_t>merge.merge_rank << 32) | <uint64_t>before))
    p = 0
    while p < m:
        out.push_back(part[p])
        p = next_part[p]
    return 0


cdef inline Rank _pair_rank_of(MergeTable self, Rank left, Rank right, Rank* result) noexcept nogil:
    """The merge rank of (left, right) and, through `result`, the token it makes; NO_RANK when unlisted."""
    cdef const PairMerge* merge = self._find_merge(left, right)
    if merge == NULL:
        return NO_RANK
    result[0] = merge.result
    return merge.merge_rank


cdef int _pair_merge_run(MergeTable self, const uint8_t* data, Py_ssize_t n, vector[Rank]& out) except -1 nogil:
    # _merge_run (_merge_run.pxi) under the pair-rank rule: a piece of RUN_MIN_BYTES or more that repeats one
    # byte b merges as runs of equal parts b^L, (length, count, token). A pair of parts merges by the rank
    # of its two tokens in the merges, into the token the merge lists, so every part's token is known
    # without a lookup by bytes (the whole-piece table may leave b^L out, see _keep_whole_tokens_of_rule).
    # A pair inside a run merges the whole run at once, left to right, when none of the pairs that creates
    # ((2L, L), (2L, 2L), and with the neighbours) ranks below it; merge ranks never tie between different
    # pairs. Otherwise, or with too many runs or steps, returns 0 with `out` untouched, and the general path
    # merges the piece; returns 1 when `out` holds the piece's ids. 10 MB of "a" on GPT-2's tokenizer.json:
    # 2.25 s and a 484 MB peak by heap before this, 0.04 s and 104 MB (the process) with it.
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
                rank = _pair_rank_of(self, token[i], token[i], &made)
                if rank < best_rank:
                    best, best_rank, inside, best_made = i, rank, True, made
            if i + 1 < runs:
                rank = _pair_rank_of(self, token[i], token[i + 1], &made)
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
            if (_pair_rank_of(self, doubled, token[i], &made) < best_rank
                    or (c >= 4 and _pair_rank_of(self, doubled, doubled, &made) < best_rank)
                    or (i > 0 and _pair_rank_of(self, token[i - 1], doubled, &made) < best_rank)
                    or (c % 2 == 0 and i + 1 < runs
                        and _pair_rank_of(self, doubled, token[i + 1], &made) < best_rank)):
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
