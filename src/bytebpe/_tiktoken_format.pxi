# Included by _core.pyx: the .tiktoken parser behind MergeTable.from_tiktoken (lines of "base64 rank"),
# in C, every length and offset checked before it is read.

# Value of each byte as a base64 digit (standard alphabet), 64 for bytes that are not one.
cdef uint8_t _BASE64_VALUE[256]
for _byte in range(256):
    _BASE64_VALUE[_byte] = 64
_BASE64_DIGITS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
for _value in range(64):
    _BASE64_VALUE[ord(_BASE64_DIGITS[_value])] = _value
del _byte, _value, _BASE64_DIGITS


cdef int _parse_tiktoken(MergeTable self, const uint8_t* text, Py_ssize_t size) except -1 nogil:
    """Fill blob/token_start/token_len from `.tiktoken` contents; 0 when they are not plainly valid."""
    cdef Py_ssize_t pos = 0, line_end, space, k
    cdef int64_t rank, previous = -1
    cdef uint32_t quad, value
    cdef int padding, j
    cdef size_t written = 0, token_begin
    cdef const uint8_t* found
    cdef uint8_t* out
    # The tokens take at most 3/4 of the file's bytes: decoded straight into the blob, cut to size at the end.
    self.blob.resize(size * 3 // 4 + 3)
    out = self.blob.data()
    self.token_start.reserve(size // 16)
    self.token_len.reserve(size // 16)
    while pos < size:
        found = <const uint8_t*>memchr(text + pos, 10, size - pos)
        line_end = size if found == NULL else found - text
        if line_end == pos:     # blank lines may only end the file
            while pos < size and text[pos] == 10:
                pos += 1
            if pos < size:
                return _parse_failed(self)
            break
        space = pos
        while space < line_end and text[space] != 32:
            space += 1
        if space == line_end or (space - pos) % 4 != 0 or space == pos:
            return _parse_failed(self)
        # the rank: ASCII digits only, strictly above the previous one
        if line_end - space - 1 < 1 or line_end - space - 1 > 10:
            return _parse_failed(self)
        rank = 0
        for k in range(space + 1, line_end):
            if text[k] < 48 or text[k] > 57:
                return _parse_failed(self)
            rank = rank * 10 + (text[k] - 48)
        if rank <= previous or rank > MAX_TOKEN_ID or rank > previous + 65536:
            return _parse_failed(self)   # (a wide gap is left to the Python reader and the sparsity check)
        # the token: standard base64 with padding only at the very end
        token_begin = written
        k = pos
        while k < space:
            quad = 0
            padding = 0
            for j in range(4):
                value = _BASE64_VALUE[text[k + j]]
                if text[k + j] == 61 and k + 4 == space and j >= 2:    # '='
                    padding += 1
                    value = 0
                elif value == 64 or padding:
                    return _parse_failed(self)
                quad = (quad << 6) | value
            out[written] = <uint8_t>(quad >> 16)
            out[written + 1] = <uint8_t>((quad >> 8) & 0xFF)
            out[written + 2] = <uint8_t>(quad & 0xFF)
            written += 3 - padding
            k += 4
        while <int64_t>self.token_len.size() < rank:     # a gap in the ranks
            self.token_start.push_back(0)
            self.token_len.push_back(-1)
        self.token_start.push_back(<uint32_t>token_begin)
        self.token_len.push_back(<int32_t>(written - token_begin))
        previous = rank
        pos = line_end + 1
    self.blob.resize(written)
    return 1


cdef int _parse_failed(MergeTable self) except -1 nogil:
    self.blob.clear()
    return 0
