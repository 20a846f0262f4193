# Included by _core.pyx: the flat-scan merge for pieces up to SCAN_MAX_BYTES (tiktoken's rule), on the
# stack, with a branch-free minimum search.

cdef inline uint64_t _smallest_key(const uint64_t* key, Py_ssize_t padded) noexcept nogil:
    """min(key[:padded]) for padded a positive multiple of 4: a branch-free minimum (compare-and-branch
    mispredicted on most pairs) in four independent chains, so the compare latency overlaps."""
    cdef uint64_t b0 = key[0], b1 = key[1], b2 = key[2], b3 = key[3]
    cdef Py_ssize_t k
    for k in range(4, padded, 4):
        b0 = key[k] if key[k] < b0 else b0
        b1 = key[k + 1] if key[k + 1] < b1 else b1
        b2 = key[k + 2] if key[k + 2] < b2 else b2
        b3 = key[k + 3] if key[k + 3] < b3 else b3
    b0 = b1 if b1 < b0 else b0
    b2 = b3 if b3 < b2 else b2
    return b2 if b2 < b0 else b0


cdef int _merge_by_scan(MergeTable self, const uint8_t* data, Py_ssize_t n, vector[Rank]& out,
                        PairMemo* memo) except -1 nogil:
    # Parts are named by their first byte p and linked through next_part/prev_part; part p is token
    # part_rank[p]. key[p] = (rank of part p merged with its successor) << 6 | p, with NO_RANK for no
    # token and for parts merged away, so the next merge is simply the smallest key: lowest rank,
    # leftmost on ties. Nothing moves when parts merge (shifting arrays cost more than the scan).
    cdef uint64_t key[SCAN_MAX_BYTES]
    cdef uint64_t b0, b1, b2, b3
    cdef Py_ssize_t padded = (n + 3) & ~3     # keys past n are NO_RANK, so the scan runs 4 at a time
    cdef uint8_t next_part[SCAN_MAX_BYTES]
    cdef uint8_t prev_part[SCAN_MAX_BYTES]
    cdef Rank part_rank[SCAN_MAX_BYTES]
    cdef Py_ssize_t k, p, q, after, before
    cdef Rank rank
    cdef uint64_t best_key
    cdef const uint32_t* char_starts = memo.char_starts if memo != NULL else NULL
    if char_starts != NULL and (data[0] >= 0xC0 or (n >= 2 and data[1] >= 0xC0)):
        return _merge_characters_by_scan(self, data, n, out, memo)
    for k in range(n):
        next_part[k] = <uint8_t>(k + 1)
        prev_part[k] = <uint8_t>(k - 1)
        part_rank[k] = self.byte_rank[data[k]]
        rank = self.pair_of_bytes_rank[data[k] << 8 | data[k + 1]] if k + 1 < n else NO_RANK
        key[k] = (<uint64_t>rank << 6) | <uint64_t>k
    for k in range(n, padded):
        key[k] = (<uint64_t>NO_RANK << 6) | <uint64_t>k
    while True:
        # _smallest_key, written out: called here, gcc kept fewer of the loop's values in registers.
        b0 = key[0]
        b1 = key[1]
        b2 = key[2]
        b3 = key[3]
        for k in range(4, padded, 4):
            b0 = key[k] if key[k] < b0 else b0
            b1 = key[k + 1] if key[k + 1] < b1 else b1
            b2 = key[k + 2] if key[k + 2] < b2 else b2
            b3 = key[k + 3] if key[k + 3] < b3 else b3
        b0 = b1 if b1 < b0 else b0
        b2 = b3 if b3 < b2 else b2
        best_key = b2 if b2 < b0 else b0
        rank = <Rank>(best_key >> 6)
        if rank == NO_RANK:
            break
        p = <Py_ssize_t>(best_key & 63)
        q = next_part[p]        # a pair has a successor part: q < n
        after = next_part[q]
        part_rank[p] = rank
        next_part[p] = <uint8_t>after
        key[q] = (<uint64_t>NO_RANK << 6) | <uint64_t>q      # part q is gone
        if after < n:
            prev_part[after] = <uint8_t>p
            key[p] = (<uint64_t>self._pair_rank(memo, data + p, next_part[after] - p, rank,
                                                part_rank[after]) << 6) | <uint64_t>p
        else:
            key[p] = (<uint64_t>NO_RANK << 6) | <uint64_t>p
        if p > 0:
            before = prev_part[p]
            key[before] = (<uint64_t>self._pair_rank(memo, data + before, after - before, part_rank[before],
                                                     rank) << 6) | <uint64_t>before
    p = 0
    while p < n:
        if part_rank[p] == NO_RANK:     # a single byte the vocabulary lacks
            return 1
        out.push_back(part_rank[p])
        p = next_part[p]
    return 0


cdef int _merge_characters_by_scan(MergeTable self, const uint8_t* data, Py_ssize_t n, vector[Rank]& out,
                                   PairMemo* memo) except -1 nogil:
    """_merge_by_scan for a piece that starts with a character of 2+ bytes (CJK, Cyrillic ...; a piece that
    does not rarely holds one), from parts that are whole characters where they may enter whole
    (_merge_char_starts.pxi), else bytes. Its arrays are indexed by part, not by byte: a piece of 3-byte
    characters has a third as many keys to scan per merge. A function of its own, so that the merge loop
    stays as it was for the pieces that never come here (English comes here too, a little: its curly quotes
    and dashes start pieces that do)."""
    cdef uint64_t key[SCAN_MAX_BYTES]
    cdef uint64_t b0, b1, b2, b3
    cdef uint8_t next_part[SCAN_MAX_BYTES]
    cdef uint8_t prev_part[SCAN_MAX_BYTES]
    cdef Rank part_rank[SCAN_MAX_BYTES]
    cdef uint8_t start[SCAN_MAX_BYTES + 1]      # part i is data[start[i] : start[next_part[i]]]
    cdef Py_ssize_t k = 0, m = 0, p, q, after, before, length, padded
    cdef Rank rank
    cdef uint64_t best_key
    while k < n:
        length = _char_start_at(memo.char_starts, data, k, n, &rank)
        if length:
            part_rank[m] = rank
        else:
            length = 1
            part_rank[m] = self.byte_rank[data[k]]
        start[m] = <uint8_t>k
        m += 1
        k += length
    start[m] = <uint8_t>n
    for p in range(m):
        next_part[p] = <uint8_t>(p + 1)
        prev_part[p] = <uint8_t>(p - 1)
        if p + 1 < m:
            if start[p + 1] == start[p] + 1 and start[p + 2] == start[p + 1] + 1:
                rank = self.pair_of_bytes_rank[data[start[p]] << 8 | data[start[p + 1]]]
            else:
                rank = self._pair_rank(memo, data + start[p], start[p + 2] - start[p], part_rank[p], part_rank[p + 1])
        else:
            rank = NO_RANK
        key[p] = (<uint64_t>rank << 6) | <uint64_t>p
    padded = (m + 3) & ~3
    for p in range(m, padded):
        key[p] = (<uint64_t>NO_RANK << 6) | <uint64_t>p
    while True:
        # As in _merge_by_scan, over parts.
        b0 = key[0]
        b1 = key[1]
        b2 = key[2]
        b3 = key[3]
        for k in range(4, padded, 4):
            b0 = key[k] if key[k] < b0 else b0
            b1 = key[k + 1] if key[k + 1] < b1 else b1
            b2 = key[k + 2] if key[k + 2] < b2 else b2
            b3 = key[k + 3] if key[k + 3] < b3 else b3
        b0 = b1 if b1 < b0 else b0
        b2 = b3 if b3 < b2 else b2
        best_key = b2 if b2 < b0 else b0
        rank = <Rank>(best_key >> 6)
        if rank == NO_RANK:
            break
        p = <Py_ssize_t>(best_key & 63)
        q = next_part[p]        # a pair has a successor part: q < m
        after = next_part[q]
        part_rank[p] = rank
        next_part[p] = <uint8_t>after
        key[q] = (<uint64_t>NO_RANK << 6) | <uint64_t>q      # part q is gone
        if after < m:
            prev_part[after] = <uint8_t>p
            key[p] = (<uint64_t>self._pair_rank(memo, data + start[p], start[next_part[after]] - start[p], rank,
                                                part_rank[after]) << 6) | <uint64_t>p
        else:
            key[p] = (<uint64_t>NO_RANK << 6) | <uint64_t>p
        if p > 0:
            before = prev_part[p]
            key[before] = (<uint64_t>self._pair_rank(memo, data + start[before], start[after] - start[before],
                                                     part_rank[before], rank) << 6) | <uint64_t>before
    p = 0
    while p < m:
        if part_rank[p] == NO_RANK:     # a single byte the vocabulary lacks
            return 1
        out.push_back(part_rank[p])
        p = next_part[p]
    return 0
