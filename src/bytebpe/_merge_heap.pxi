# Included by _core.pyx: the heap merge for pieces of SCAN_MAX_BYTES to BUCKETS_MIN_BYTES bytes (tiktoken's
# rule): a binary heap of (rank, position) over linked parts, lazy invalidation. `memo` is the call's (NULL
# outside encode calls); only its character starts are read here.

cdef int _merge_by_heap(MergeTable self, const uint8_t* data, Py_ssize_t n, vector[Rank]& out,
                        PairMemo* memo) except -1 nogil:
    # Parts are named by their first byte. next_part[p] is where part p ends (n for the last part),
    # prev_part[p] the part before it (-1 for none); pair_rank[p] ranks part p merged with its successor,
    # NO_RANK when it is not a token or p is gone. The heap holds ~(rank << 32 | p) so that the largest
    # key is the lowest rank, leftmost on ties; an entry is stale when pair_rank[p] no longer equals its
    # rank (a part only ever grows, so a rank never comes back for the same p).
    cdef vector[uint32_t] next_part
    cdef vector[int64_t] prev_part
    cdef vector[Rank] pair_rank
    cdef vector[Rank] part_rank     # the token each surviving part is
    cdef priority_queue[uint64_t] heap
    next_part.resize(n)
    prev_part.resize(n)
    pair_rank.resize(n)
    part_rank.resize(n)
    cdef Py_ssize_t p, q, after, before, length
    cdef Rank rank
    cdef uint64_t key
    cdef const uint32_t* char_starts = memo.char_starts if memo != NULL else NULL
    # The first parts: bytes, or where the table allows, whole characters (_merge_char_starts.pxi): long
    # pieces of Japanese and Telugu come here. (The call's pair memo is not used here: _pair_rank, with a
    # second caller, was then no longer inlined into _merge_by_scan.)
    p = 0
    before = -1
    while p < n:
        length = _char_start_at(char_starts, data, p, n, &rank) if char_starts != NULL else 0
        if length == 0:
            length = 1
            rank = self.byte_rank[data[p]]
        part_rank[p] = rank
        next_part[p] = <uint32_t>(p + length)
        prev_part[p] = before
        pair_rank[p] = NO_RANK
        for q in range(p + 1, p + length):     # inside a part: never named, never in the heap
            pair_rank[q] = NO_RANK
        before = p
        p += length
    p = 0
    while p < n:
        q = next_part[p]
        if q < n:
            if q == p + 1 and next_part[q] == q + 1:
                rank = self.pair_of_bytes_rank[data[p] << 8 | data[q]]
            else:
                rank = self.rank_of(data + p, next_part[q] - p)
            pair_rank[p] = rank
            if rank != NO_RANK:
                heap.push(~((<uint64_t>rank << 32) | <uint64_t>p))
        p = q
    while not heap.empty():
        key = ~heap.top()
        heap.pop()
        p = <Py_ssize_t>(key & 0xFFFFFFFFULL)
        rank = <Rank>(key >> 32)
        if pair_rank[p] != rank:
            continue
        part_rank[p] = rank
        q = next_part[p]
        after = next_part[q]
        next_part[p] = <uint32_t>after
        pair_rank[q] = NO_RANK
        if after < n:
            prev_part[after] = p
            rank = self.rank_of(data + p, next_part[after] - p)
        else:
            rank = NO_RANK
        pair_rank[p] = rank
        if rank != NO_RANK:
            heap.push(~((<uint64_t>rank << 32) | <uint64_t>p))
        before = prev_part[p]
        if before >= 0:
            rank = self.rank_of(data + before, after - before)
            pair_rank[before] = rank
            if rank != NO_RANK:
                heap.push(~((<uint64_t>rank << 32) | <uint64_t>before))
    p = 0
    while p < n:
        if part_rank[p] == NO_RANK:     # a single byte the vocabulary lacks
            return 1
        out.push_back(part_rank[p])
        p = next_part[p]
    return 0
