# Included by _core.pyx: which 2- and 3-byte characters may enter the merge loop already merged into their
# token (tiktoken's rule), so that a piece of CJK, Cyrillic, Arabic ... text starts from about one part per
# character instead of one per byte.
#
# Why it is exact. Let c be a character whose bytes, merged alone, become one token through merges of ranks
# at most M(c). In the merge loop over a piece, while c is still in parts, one of its own merges (rank <= M)
# is always pending. Suppose (1) every token that joins a proper part of c's bytes to bytes outside c and
# that could occur here has a rank above M, and (2) every token that holds c's bytes whole and more has a
# rank above M. Then no merge touches c's bytes from outside before c is whole: by (1) such a merge ranks
# above a pending merge of c's own. And the merges that starting from c whole could make earlier, those of
# c with a neighbour, rank above M by (2), so they cannot overtake a merge that the byte-by-byte loop makes
# while c is still in parts: if that merge ranks below the one of c with its neighbour, the loop from whole
# characters makes it first too. Each merge elsewhere is made in the same order either way. So both loops
# end with the same parts. (Tested against tiktoken on every piece of the multilingual corpus and by
# hypothesis in tests/unit/test_char_starts.py.)
#
# "Could occur here": condition (1) is kept per side of c and per class of the byte across the boundary
# (ASCII or not), so that " \xe6" (a space and a lead byte, an early token of o200k_base) only rules out
# characters after an ASCII byte; the class is read from the text at each character.
#
# The table: one uint32 per code point below 0x10000, 0 where the character is not a token that can start
# whole, else (rank + 1) | flags << 28, the flags saying on which side, next to which class of byte, it can.
# Built on first use by a text that is not all ASCII (with the GIL: one build, then read-only); ~256 KiB.
# (Cyrillic gains least: bigram tokens of Cyrillic come before some of its letters, so (2) rules them out.)

cdef enum:
    CHAR_START_LEFT_ASCII = 1 << 28     # may start whole after an ASCII byte
    CHAR_START_LEFT_OTHER = 1 << 29     # ... after a byte of another character that is not ASCII
    CHAR_START_RIGHT_ASCII = 1 << 30    # ... before an ASCII byte
    CHAR_START_RIGHT_OTHER = 1 << 31    # ... before a lead byte of a character that is not ASCII
    CHAR_START_RANK_MASK = (1 << 28) - 1


cdef inline bint _is_continuation(uint8_t b) noexcept nogil:
    return (b & 0xC0) == 0x80


cdef inline Py_ssize_t _utf8_length(uint8_t lead) noexcept nogil:
    """Bytes of the character a lead byte starts (0 for a continuation or invalid byte)."""
    if lead < 0x80:
        return 1
    if lead < 0xC0:
        return 0
    if lead < 0xE0:
        return 2
    if lead < 0xF0:
        return 3
    if lead < 0xF8:
        return 4
    return 0


cdef inline bint _has_high_byte(const uint8_t* data, Py_ssize_t n) noexcept nogil:
    """Whether data[:n] holds a byte of 0x80 or more, 8 bytes at a time."""
    cdef Py_ssize_t i
    for i in range(0, n, 8):
        if _head_word(data + i, n - i if n - i < 8 else 8) & 0x8080808080808080ULL:
            return True
    return False


cdef inline void _lower(vector[Rank]& lowest, Py_ssize_t index, Rank rank) noexcept nogil:
    if rank < lowest[index]:
        lowest[index] = rank


cdef int _build_char_starts(MergeTable table) except -1:
    """Fill table.char_starts (see above); leaves it empty when the table's rule or size does not allow it."""
    table.char_starts_built = True
    if table.by_pair_rank or table.max_rank >= CHAR_START_RANK_MASK:
        return 0
    # Lowest rank of a token that joins a proper part of a character to bytes across a boundary, indexed by
    # [class of the byte across it (1: ASCII)][the part's bytes]: part_after: a character's last 1-2 bytes
    # (continuation bytes) at the token's start; part_before: a character's first 1-2 bytes at its end.
    # Index: one byte b -> b, two bytes (b0, b1) -> 256 + (b0 << 8 | b1).
    cdef vector[Rank] part_after_ascii, part_after_other, part_before_ascii, part_before_other
    cdef vector[Rank] whole_within     # code point -> lowest rank of a longer token holding that character
    fill_vector(part_after_ascii, 256 + 65536, NO_RANK)
    fill_vector(part_after_other, 256 + 65536, NO_RANK)
    fill_vector(part_before_ascii, 256 + 65536, NO_RANK)
    fill_vector(part_before_other, 256 + 65536, NO_RANK)
    fill_vector(whole_within, 0x10000, NO_RANK)
    cdef Py_ssize_t rank, n, k, j, i, length, index
    cdef const uint8_t* t
    cdef uint32_t code
    for rank in range(table.max_rank + 1):
        n = table.token_len[rank]
        if n < 2:
            continue
        t = table.blob.data() + table.token_start[rank]
        if not _has_high_byte(t, n):    # ASCII (most of any vocabulary): no part of a character in it
            continue
        k = 0
        while k < n and _is_continuation(t[k]):
            k += 1
        if 0 < k < n and k <= 2:
            index = t[0] if k == 1 else 256 + (t[0] << 8 | t[1])
            if t[k] < 0x80:     # (an if, not a conditional expression: that would lower a copy)
                _lower(part_after_ascii, index, <Rank>rank)
            else:
                _lower(part_after_other, index, <Rank>rank)
        j = n - 1
        while j > 0 and _is_continuation(t[j]):
            j -= 1
        if j > 0 and n - j <= 2 and _utf8_length(t[j]) > n - j:
            index = t[j] if n - j == 1 else 256 + (t[j] << 8 | t[j + 1])
            if t[j - 1] < 0x80:
                _lower(part_before_ascii, index, <Rank>rank)
            else:
                _lower(part_before_other, index, <Rank>rank)
        # Every whole 2-3-byte character in the token. A token's bytes need not be valid UTF-8 (_decode does
        # not check continuation bytes; done here), and a byte that starts no valid character is stepped over
        # one at a time: finding a character too many only rules it out, one too few could admit it wrongly.
        i = k
        while i < n:
            code = _decode(t, i, n, &length)
            if (length == 2 or length == 3) and n > length and _is_continuation(t[i + 1]) and \
                    (length == 2 or _is_continuation(t[i + 2])):
                _lower(whole_within, code, <Rank>rank)
                i += length
            else:
                i += 1
    fill_vector(table.char_starts, 0x10000, 0)
    cdef uint8_t b[3]
    cdef Rank whole, first, second, highest, before_ascii, before_other, after_ascii, after_other
    for code in range(0x80, 0x10000):
        if 0xD800 <= code < 0xE000:
            continue
        if code < 0x800:
            b[0] = <uint8_t>(0xC0 | (code >> 6))
            b[1] = <uint8_t>(0x80 | (code & 0x3F))
            whole = table.pair_of_bytes_rank[b[0] << 8 | b[1]]
            highest = whole
            before_ascii = part_before_ascii[b[0]]
            before_other = part_before_other[b[0]]
            after_ascii = part_after_ascii[b[1]]
            after_other = part_after_other[b[1]]
        else:
            b[0] = <uint8_t>(0xE0 | (code >> 12))
            b[1] = <uint8_t>(0x80 | ((code >> 6) & 0x3F))
            b[2] = <uint8_t>(0x80 | (code & 0x3F))
            # The character's bytes merged alone: the lower-ranked of its two byte pairs first, then the
            # rest, if the whole is a token.
            first = table.pair_of_bytes_rank[b[0] << 8 | b[1]]
            second = table.pair_of_bytes_rank[b[1] << 8 | b[2]]
            if first == NO_RANK and second == NO_RANK:
                continue
            whole = table.rank_of(b, 3)
            if whole == NO_RANK:
                continue
            highest = first if first < second else second
            highest = whole if whole > highest else highest
            before_ascii = min(part_before_ascii[b[0]], part_before_ascii[256 + (b[0] << 8 | b[1])])
            before_other = min(part_before_other[b[0]], part_before_other[256 + (b[0] << 8 | b[1])])
            after_ascii = min(part_after_ascii[b[2]], part_after_ascii[256 + (b[1] << 8 | b[2])])
            after_other = min(part_after_other[b[2]], part_after_other[256 + (b[1] << 8 | b[2])])
        if whole == NO_RANK or highest >= whole_within[code]:
            continue
        table.char_starts[code] = (whole + 1) \
            | (CHAR_START_LEFT_ASCII if highest < before_ascii else 0) \
            | (CHAR_START_LEFT_OTHER if highest < before_other else 0) \
            | (CHAR_START_RIGHT_ASCII if highest < after_ascii else 0) \
            | (CHAR_START_RIGHT_OTHER if highest < after_other else 0)
    return 0


cdef inline Py_ssize_t _char_start_at(const uint32_t* char_starts, const uint8_t* data, Py_ssize_t k,
                                      Py_ssize_t n, Rank* rank) noexcept nogil:
    """The length of the character at data[k] if it may enter the merge loop whole (its token in `rank`),
    else 0. data[:n] is a piece of whole characters of valid UTF-8 (the compiled scanner's)."""
    cdef Py_ssize_t length
    cdef uint32_t code, entry
    if data[k] < 0xC0:
        return 0
    code = _decode(data, k, n, &length)     # (never cut short in a piece of whole characters; no read past it)
    if length != 2 and length != 3:
        return 0
    entry = char_starts[code]
    if entry == 0:
        return 0
    if k > 0 and not (entry & (CHAR_START_LEFT_ASCII if data[k - 1] < 0x80 else CHAR_START_LEFT_OTHER)):
        return 0
    if k + length < n and not (entry & (CHAR_START_RIGHT_ASCII if data[k + length] < 0x80 else
                                        CHAR_START_RIGHT_OTHER)):
        return 0
    rank[0] = (entry & CHAR_START_RANK_MASK) - 1
    return length
