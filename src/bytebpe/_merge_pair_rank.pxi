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
    if n >= RUN_MIN_BYTES and _merge_run(self, data, n, out):
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
