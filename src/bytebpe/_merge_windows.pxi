# Included by _core.pyx: pieces of WINDOWS_MIN_BYTES or more merge window by window, cut where no token can
# span the cut, so that the merge state (16 bytes per byte and the queued pairs) is that of one window of
# about WINDOW_BYTES instead of the whole piece.
#
# Why it is exact (both merge rules). Let c be a byte offset inside a piece P such that no token's bytes
# equal P[a:b] for any a < c < b. A merge across c would make such a token, so none happens: every merge
# joins two parts on the same side of c. Each rule merges, at each step, the pending pair of lowest rank
# (the rank depending only on the pair's two parts), the leftmost on ties. The pairs on the left of c are
# those of P[:c] alone, and the pair across c is never pending; so whenever the merge of P takes a pair on
# the left, it is the lowest and leftmost of the left's pairs (a tie with a pair on the right goes to the
# left) -- the step the merge of P[:c] alone takes next. The same holds on the right (a tie with a pair on
# the left is taken first there, which changes nothing on the right). So the merge of P ends with the
# parts of P[:c] merged alone followed by those of P[c:] merged alone, and cutting again inside P[c:] is
# the same argument applied to P[c:].
#
# Telling that no token spans c: every such token of 2 or 3 bytes is one of the three 2- and 3-byte spans
# across c, and every longer one holds one of the three 4-byte spans across c. The table keeps a bitset of
# hashed 2- and 3-byte tokens and 4-byte substrings of every token (all the tokens of the vocabulary, so
# under the pair-rank rule every merge's result too); a hash collision only makes a cut look unsafe, never
# the reverse. Under the pair-rank rule a byte without a token is left out and joins its neighbours, so
# there the three bytes on each side of the cut must have tokens.
#
# Where cuts exist: in random data (letters, CJK, ...) and in words run together, offsets that no token spans
# come every few bytes; a piece that repeats a token-sized pattern ("ababab...") has none, and merges whole
# (and one repeated byte as runs, _merge_run). benchmarks/README.md has the measurements.

cdef enum:
    WINDOWS_MIN_BYTES = 131072      # pieces at least this long are cut (2 * WINDOW_BYTES)
    WINDOW_BYTES = 65536            # each window is at least this long: the search for a cut starts there
    SPAN_GRAM_BITS = 22             # the bitset: 2**22 bits = 512 KiB


cdef inline uint64_t _span_gram_bit(const uint8_t* data, Py_ssize_t length) noexcept nogil:
    """The bitset index of the 2-, 3- or 4-byte string data[:length]."""
    cdef uint64_t word = <uint64_t>length << 40
    cdef Py_ssize_t i
    for i in range(length):
        word |= <uint64_t>data[i] << (8 * i)
    return (word * 0x9E3779B97F4A7C15ULL) >> (64 - SPAN_GRAM_BITS)


cdef inline bint _span_gram_set(const uint64_t* bits, const uint8_t* data, Py_ssize_t length) noexcept nogil:
    cdef uint64_t bit = _span_gram_bit(data, length)
    return (bits[bit >> 6] >> (bit & 63)) & 1


cdef int _build_span_grams(MergeTable table) except -1:
    """Fill `table.span_grams` (once, with the GIL held; read-only afterwards)."""
    if table.span_grams_built:
        return 0
    cdef vector[uint64_t] bits
    fill_vector(bits, (<size_t>1 << SPAN_GRAM_BITS) // 64, 0)
    cdef Py_ssize_t rank, n, i
    cdef const uint8_t* token
    cdef uint64_t bit
    with nogil:
        for rank in range(table.max_rank + 1):
            n = table.token_len[rank]
            if n < 2:
                continue
            token = table.blob.data() + table.token_start[rank]
            if n <= 3:
                bit = _span_gram_bit(token, n)
                bits[bit >> 6] |= 1ULL << (bit & 63)
            for i in range(n - 3):
                bit = _span_gram_bit(token + i, 4)
                bits[bit >> 6] |= 1ULL << (bit & 63)
    table.span_grams.swap(bits)
    table.span_grams_built = True
    return 0


cdef inline bint _no_token_spans(MergeTable table, const uint8_t* data, Py_ssize_t c) noexcept nogil:
    """Whether no token's bytes are data[a:b] with a < c < b (data[c - 3 : c + 3] must be readable)."""
    cdef const uint64_t* bits = table.span_grams.data()
    cdef Py_ssize_t a
    if _span_gram_set(bits, data + c - 1, 2):
        return False
    for a in range(c - 2, c):
        if _span_gram_set(bits, data + a, 3):
            return False
    for a in range(c - 3, c):
        if _span_gram_set(bits, data + a, 4):
            return False
    if table.by_pair_rank:
        for a in range(c - 3, c + 3):
            if table.byte_rank[data[a]] == NO_RANK:
                return False
    return True


cdef Py_ssize_t _next_cut(MergeTable table, const uint8_t* data, Py_ssize_t from_, Py_ssize_t n) noexcept nogil:
    """The first offset c >= from_ at a character boundary with c + 3 <= n where no token spans c, or -1."""
    cdef Py_ssize_t c
    for c in range(from_, n - 2):
        if (data[c] & 0xC0) != 0x80 and _no_token_spans(table, data, c):
            return c
    return -1


cdef Py_ssize_t _window_end(MergeTable table, const uint8_t* data, Py_ssize_t start, Py_ssize_t n) noexcept nogil:
    """Where the window that starts at `start` ends: the first cut at least WINDOW_BYTES on, or n when what
    is left is shorter than WINDOWS_MIN_BYTES or holds no cut."""
    if n - start < WINDOWS_MIN_BYTES:
        return n
    cdef Py_ssize_t cut = _next_cut(table, data, start + WINDOW_BYTES, n)
    return cut if cut >= 0 else n


cdef int _merge_in_windows(MergeTable table, const uint8_t* data, Py_ssize_t n, vector[Rank]& out,
                           PairMemo* memo) except -1 nogil:
    """merge_piece for a piece of WINDOWS_MIN_BYTES or more: the merge of each window between cuts."""
    cdef Py_ssize_t start = 0, end
    if not table.span_grams_built:
        with gil:
            _build_span_grams(table)
    while start < n:
        end = _window_end(table, data, start, n)
        if table.merge_whole(data + start, end - start, out, memo):
            return 1
        start = end
    return 0
