# Included by _core.pyx: the rank-bucket merge for pieces of BUCKETS_MIN_BYTES bytes or more (tiktoken's
# rule): pending pairs by rank, a small heap over the ranks.

cdef struct Part:
    # A part of a long piece being merged, named by the offset of its first byte.
    uint32_t next          # offset of the next part (the piece length for the last)
    uint32_t prev          # offset of the previous part, NO_PART for the first
    Rank rank              # the token this part is
    Rank pair_rank         # rank of this part merged with the next one, NO_RANK if that is no token

cdef cppclass PairBucket:
    # The positions of pending pairs of one rank (see MergeTable._merge_by_buckets). Positions queued in
    # increasing order are appended to `in_order` and read from `cursor` on; a position queued behind
    # the last one goes to the `out_of_order` heap (as ~position, so its top is the smallest).
    vector[uint32_t] in_order
    size_t cursor
    priority_queue[uint32_t] out_of_order
    bint queued         # its rank is in the rank heap


cdef enum:
    RECENT_BUCKETS = 64     # direct-mapped memo of rank -> bucket in front of the hash map


cdef cppclass PendingPairs:
    # Every pending pair of a long piece, by rank: the buckets, the heap of their ranks (~rank, so its top
    # is the lowest), and a memo of recently used buckets (a long piece keeps queueing pairs of a few
    # ranks; the hash map alone took a fifth of the time on a megabyte of one letter).
    unordered_map[Rank, PairBucket] buckets
    priority_queue[uint64_t] ranks
    Rank recent_rank[RECENT_BUCKETS]
    PairBucket* recent_bucket[RECENT_BUCKETS]


cdef inline PairBucket* _bucket_of(PendingPairs& pending, Rank rank) except NULL nogil:
    cdef size_t memo = rank & (RECENT_BUCKETS - 1)
    if pending.recent_bucket[memo] == NULL or pending.recent_rank[memo] != rank:
        # unordered_map never moves its elements, so the pointer stays valid as the map grows.
        pending.recent_bucket[memo] = &pending.buckets[rank]
        pending.recent_rank[memo] = rank
    return pending.recent_bucket[memo]


cdef inline int _queue_pair(PendingPairs& pending, Rank rank, uint32_t position) except -1 nogil:
    cdef PairBucket* bucket = _bucket_of(pending, rank)
    if bucket.in_order.empty() or position > bucket.in_order.back():
        bucket.in_order.push_back(position)
    else:
        bucket.out_of_order.push(~position)
    if not bucket.queued:
        pending.ranks.push(~(<uint64_t>rank))
        bucket.queued = True
    return 0


cdef int _merge_by_buckets(MergeTable self, const uint8_t* data, Py_ssize_t n, vector[Rank]& out,
                           PairMemo* memo) except -1 nogil:
    # The heap path's rule and bookkeeping (parts named by their first byte, lazy invalidation), but the
    # pending pairs are kept in one bucket per rank, each holding positions in increasing order, with a
    # small heap over the ranks that have pairs. A long piece has many pairs of few ranks ("aaaa...",
    # runs of spaces or dashes): taking the leftmost pair of the lowest rank is then O(1) instead of a
    # walk down a heap of a million entries. Ranks usually grow as merges proceed, but not always (a
    # merge may complete a token ranked below the pair just merged), so the rank heap is consulted again
    # whenever that happens.
    cdef vector[Part] parts      # by first byte; one 16-byte record so a merge touches one cache line
    cdef PendingPairs pending
    parts.resize(n)
    cdef Py_ssize_t p, q, after, before
    cdef Rank rank, current, lowest_new
    cdef PairBucket* bucket
    for p in range(RECENT_BUCKETS):
        pending.recent_bucket[p] = NULL
    for p in range(n):
        parts[p].next = <uint32_t>(p + 1)
        parts[p].prev = <uint32_t>(p - 1)      # wraps to NO_PART for the first
        parts[p].rank = self.byte_rank[data[p]]
        rank = self.pair_of_bytes_rank[data[p] << 8 | data[p + 1]] if p + 1 < n else NO_RANK
        parts[p].pair_rank = rank
        if rank != NO_RANK:
            _queue_pair(pending, rank, <uint32_t>p)
    while not pending.ranks.empty():
        current = <Rank>(~pending.ranks.top())
        pending.ranks.pop()
        bucket = _bucket_of(pending, current)
        bucket.queued = False
        while True:
            if bucket.cursor < bucket.in_order.size() and (
                    bucket.out_of_order.empty() or bucket.in_order[bucket.cursor] < ~bucket.out_of_order.top()):
                p = bucket.in_order[bucket.cursor]
                bucket.cursor += 1
            elif not bucket.out_of_order.empty():
                p = <Py_ssize_t>(<uint32_t>(~bucket.out_of_order.top()))
                bucket.out_of_order.pop()
            else:
                break
            if parts[p].pair_rank != current:
                continue    # stale: the pair was merged away or changed
            parts[p].rank = current
            q = parts[p].next
            after = parts[q].next
            parts[p].next = <uint32_t>after
            parts[q].pair_rank = NO_RANK
            lowest_new = NO_RANK
            if after < n:
                parts[after].prev = <uint32_t>p
                rank = self._pair_rank(memo, data + p, parts[after].next - p, current, parts[after].rank)
            else:
                rank = NO_RANK
            parts[p].pair_rank = rank
            if rank != NO_RANK:
                _queue_pair(pending, rank, <uint32_t>p)
                lowest_new = rank
            if parts[p].prev != NO_PART:
                before = parts[p].prev
                rank = self._pair_rank(memo, data + before, after - before, parts[before].rank, current)
                parts[before].pair_rank = rank
                if rank != NO_RANK:
                    _queue_pair(pending, rank, <uint32_t>before)
                    if rank < lowest_new:
                        lowest_new = rank
            if lowest_new < current:
                # A lower rank just appeared: it goes first. Put this bucket back if it has pairs left.
                if not bucket.queued and (bucket.cursor < bucket.in_order.size() or
                                          not bucket.out_of_order.empty()):
                    pending.ranks.push(~(<uint64_t>current))
                    bucket.queued = True
                break
    p = 0
    while p < n:
        if parts[p].rank == NO_RANK:     # a single byte the vocabulary lacks
            return 1
        out.push_back(parts[p].rank)
        p = parts[p].next
    return 0

# ---- the pair-rank rule (HF BPE) ------------------------------------------------------------------
