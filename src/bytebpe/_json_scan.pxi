# Included by _core.pyx: reading the one large array of a JSON tokenizer file (a Tekken file's "vocab") in C,
# so that loading it does not build a Python dict per entry.
#
# Both functions accept only a plain subset of JSON and answer None for anything else; the caller then
# parses with the json module, whose result and errors are the reference. So a file they accept is read
# exactly as json.loads reads it, and a file they refuse is read as before:
# - `json_member_span` finds where the value of one top-level member of an object lies, knowing only what
#   JSON's lexer needs (strings and their escapes, brackets). The caller parses the rest of the file with
#   json.loads, the member's value replaced by [], so everything outside that value is checked by json.
# - `tekken_vocab_lines` checks that value completely (an array of objects {"rank": int, "token_bytes":
#   str, "token_str": str | null}, strings as JSON requires them: valid UTF-8 without surrogates, no control
#   bytes, only JSON's escapes) and writes the kept entries as `.tiktoken` lines for `MergeTable.from_tiktoken`.

cdef inline Py_ssize_t _json_space(const uint8_t* s, Py_ssize_t i, Py_ssize_t n) noexcept nogil:
    while i < n and (s[i] == 32 or s[i] == 10 or s[i] == 13 or s[i] == 9):
        i += 1
    return i


cdef inline bint _hex_digit(uint8_t c) noexcept nogil:
    return (48 <= c <= 57) or (65 <= c <= 70) or (97 <= c <= 102)


cdef Py_ssize_t _json_string_end(const uint8_t* s, Py_ssize_t i, Py_ssize_t n, bint* escaped) noexcept nogil:
    """One past the closing quote of the JSON string opening at s[i] ('"'); -1 if it is not a valid one.
    `escaped` is set when it holds an escape. UTF-8 is checked strictly (no surrogates, no overlong forms):
    json.loads would accept encoded surrogates, and refusing them only sends such a file to the json path."""
    cdef uint8_t c, low, high
    cdef int follow, k
    escaped[0] = False
    i += 1
    while i < n:
        c = s[i]
        if c == 34:     # '"'
            return i + 1
        if c < 32:
            return -1
        if c == 92:     # '\\'
            escaped[0] = True
            if i + 1 >= n:
                return -1
            c = s[i + 1]
            if c == 117:    # \uXXXX
                if i + 5 >= n or not (_hex_digit(s[i + 2]) and _hex_digit(s[i + 3]) and _hex_digit(s[i + 4])
                                      and _hex_digit(s[i + 5])):
                    return -1
                i += 6
            elif c in (34, 92, 47, 98, 102, 110, 114, 116):     # " \ / b f n r t
                i += 2
            else:
                return -1
            continue
        if c < 0x80:
            i += 1
            continue
        # UTF-8: the lead byte fixes the length and the range of the first continuation byte.
        if 0xC2 <= c <= 0xDF:
            follow = 1
            low, high = 0x80, 0xBF
        elif 0xE0 <= c <= 0xEF:
            follow = 2
            low = 0xA0 if c == 0xE0 else 0x80
            high = 0x9F if c == 0xED else 0xBF
        elif 0xF0 <= c <= 0xF4:
            follow = 3
            low = 0x90 if c == 0xF0 else 0x80
            high = 0x8F if c == 0xF4 else 0xBF
        else:
            return -1
        if i + follow >= n or not (low <= s[i + 1] <= high):
            return -1
        for k in range(2, follow + 1):
            if not (0x80 <= s[i + k] <= 0xBF):
                return -1
        i += follow + 1
    return -1


# Bytes that matter to the lexical structure of JSON: 1 for brackets, 2 for '"', 3 for '\\'.
cdef uint8_t _JSON_LEXICAL[256]
for _byte in range(256):
    _JSON_LEXICAL[_byte] = 1 if _byte in b"{}[]" else 2 if _byte == 34 else 3 if _byte == 92 else 0
del _byte


cdef Py_ssize_t _json_value_end(const uint8_t* s, Py_ssize_t i, Py_ssize_t n) noexcept nogil:
    """One past the JSON value starting at s[i], by its lexical structure only (strings and their escapes,
    brackets); -1 when even that is wrong. Whether it is valid JSON is the json module's to say (the caller
    parses it), or tekken_vocab_lines's."""
    cdef Py_ssize_t depth = 0
    cdef bint in_string = False
    cdef uint8_t kind
    if i >= n:
        return -1
    if s[i] != 123 and s[i] != 91 and s[i] != 34:    # not { [ ": a scalar, up to the next delimiter
        while i < n and s[i] not in (44, 125, 93, 32, 10, 13, 9):     # , } ] and whitespace
            i += 1
        return i
    while i < n:
        kind = _JSON_LEXICAL[s[i]]
        if kind == 0:
            i += 1
        elif in_string:
            if kind == 3:
                i += 2
                continue
            in_string = kind != 2
            i += 1
            if not in_string and depth == 0:
                return i
        elif kind == 2:
            in_string = True
            i += 1
        elif kind == 1:
            if s[i] == 123 or s[i] == 91:
                depth += 1
            elif s[i] == 125 or s[i] == 93:
                depth -= 1
                if depth <= 0:
                    return i + 1 if depth == 0 else -1
            i += 1
        else:
            return -1   # a backslash outside a string
    return -1


def json_member_span(const uint8_t[::1] contents not None, str key not None):
    """(start, end): the bytes of the value of member `key` of the JSON object `contents` holds, or None
    when the file is not plainly such an object (it does not start with '{', a member name holds an escape,
    `key` is missing or there twice, the structure is broken). See the top of _json_scan.pxi."""
    cdef bytes wanted = key.encode("utf-8")
    cdef const uint8_t* s = &contents[0] if contents.shape[0] else NULL
    cdef Py_ssize_t n = contents.shape[0], i, name_start, name_end, value_end
    cdef Py_ssize_t found_start = -1, found_end = -1
    cdef bint escaped
    i = _json_space(s, 0, n)
    if i >= n or s[i] != 123:
        return None
    i = _json_space(s, i + 1, n)
    if i < n and s[i] == 125:
        return None
    while True:
        if i >= n or s[i] != 34:
            return None
        name_start = i + 1
        i = _json_string_end(s, i, n, &escaped)
        if i < 0 or escaped:
            return None
        name_end = i - 1
        i = _json_space(s, i, n)
        if i >= n or s[i] != 58:    # ':'
            return None
        i = _json_space(s, i + 1, n)
        value_end = _json_value_end(s, i, n)
        if value_end < 0:
            return None
        if name_end - name_start == len(wanted) and memcmp(s + name_start, <const char*>wanted, len(wanted)) == 0:
            if found_start >= 0:
                return None
            found_start, found_end = i, value_end
        i = _json_space(s, value_end, n)
        if i < n and s[i] == 44:    # ','
            i = _json_space(s, i + 1, n)
            continue
        if i < n and s[i] == 125:
            break
        return None
    if _json_space(s, i + 1, n) != n or found_start < 0:
        return None
    return found_start, found_end


cdef enum:
    _KEY_RANK = 1
    _KEY_TOKEN_BYTES = 2
    _KEY_TOKEN_STR = 4


cdef Py_ssize_t _tekken_entry(const uint8_t* s, Py_ssize_t i, Py_ssize_t n, int64_t* rank,
                              Py_ssize_t* token_start, Py_ssize_t* token_end) noexcept nogil:
    """One past the entry {"rank": ..., "token_bytes": ..., "token_str": ...} at s[i] ('{'), each member
    once in any order, "token_str" optional; -1 for anything else."""
    cdef int seen = 0, member
    cdef Py_ssize_t name_start, name_length, end, k
    cdef bint escaped
    i = _json_space(s, i + 1, n)
    while True:
        if i >= n or s[i] != 34:
            return -1
        name_start = i + 1
        i = _json_string_end(s, i, n, &escaped)
        if i < 0 or escaped:
            return -1
        name_length = i - 1 - name_start
        if name_length == 4 and memcmp(s + name_start, b"rank", 4) == 0:
            member = _KEY_RANK
        elif name_length == 11 and memcmp(s + name_start, b"token_bytes", 11) == 0:
            member = _KEY_TOKEN_BYTES
        elif name_length == 9 and memcmp(s + name_start, b"token_str", 9) == 0:
            member = _KEY_TOKEN_STR
        else:
            return -1
        if seen & member:
            return -1
        seen |= member
        i = _json_space(s, i, n)
        if i >= n or s[i] != 58:
            return -1
        i = _json_space(s, i + 1, n)
        if i >= n:
            return -1
        if member == _KEY_RANK:     # a plain non-negative integer: no sign, fraction, exponent or leading 0
            end = i
            while end < n and 48 <= s[end] <= 57 and end - i <= 10:
                end += 1
            if end == i or end - i > 10 or (s[i] == 48 and end - i > 1):
                return -1
            if end < n and (s[end] == 46 or s[end] == 101 or s[end] == 69):    # . e E
                return -1
            rank[0] = 0
            for k in range(i, end):
                rank[0] = rank[0] * 10 + (s[k] - 48)
            i = end
        elif member == _KEY_TOKEN_BYTES:    # base64 only: nothing that could end a .tiktoken line
            if s[i] != 34:
                return -1
            end = _json_string_end(s, i, n, &escaped)
            if end < 0 or escaped:
                return -1
            for k in range(i + 1, end - 1):
                if _BASE64_VALUE[s[k]] == 64 and s[k] != 61:
                    return -1
            token_start[0], token_end[0] = i + 1, end - 1
            i = end
        elif s[i] == 34:
            i = _json_string_end(s, i, n, &escaped)
            if i < 0:
                return -1
        elif n - i >= 4 and memcmp(s + i, b"null", 4) == 0:
            i += 4
        else:
            return -1
        i = _json_space(s, i, n)
        if i < n and s[i] == 44:
            i = _json_space(s, i + 1, n)
            continue
        if i < n and s[i] == 125 and (seen & (_KEY_RANK | _KEY_TOKEN_BYTES)) == (_KEY_RANK | _KEY_TOKEN_BYTES):
            return i + 1
        return -1


cdef int _append_decimal(vector[uint8_t]& out, int64_t value) except -1 nogil:
    cdef char digits[24]
    cdef int count = 0
    while True:
        digits[count] = <char>(48 + value % 10)
        count += 1
        value //= 10
        if value == 0:
            break
    while count:
        count -= 1
        out.push_back(<uint8_t>digits[count])
    return 0


def tekken_vocab_lines(const uint8_t[::1] array not None, Py_ssize_t first_id, Py_ssize_t n_kept):
    """The `.tiktoken` lines ("token_bytes id") of entries 0..n_kept-1 of a Tekken "vocab" array, entry i
    numbered first_id + i; None unless the whole array is plain (see the top of _json_scan.pxi), holds at
    least n_kept entries, and entry i has "rank" i for every kept i (mistral-common numbers the entries by
    their "rank"; a file where the two differ goes to the json path, which names the entry)."""
    cdef const uint8_t* s = &array[0] if array.shape[0] else NULL
    cdef Py_ssize_t n = array.shape[0], i, index = 0, token_start = 0, token_end = 0
    cdef int64_t rank = 0
    cdef vector[uint8_t] lines
    if first_id < 0 or n_kept < 0:
        raise ValueError("first_id and n_kept are counts")
    with nogil:
        lines.reserve(n // 4)
        i = _json_space(s, 0, n)
        if i >= n or s[i] != 91:
            i = -1
        else:
            i = _json_space(s, i + 1, n)
            if i < n and s[i] == 93:
                i += 1
            else:
                while True:
                    if i >= n or s[i] != 123:
                        i = -1
                        break
                    i = _tekken_entry(s, i, n, &rank, &token_start, &token_end)
                    if i < 0:
                        break
                    if index < n_kept:
                        if rank != index:
                            i = -1
                            break
                        lines.insert(lines.end(), s + token_start, s + token_end)
                        lines.push_back(32)
                        _append_decimal(lines, first_id + index)
                        lines.push_back(10)
                    index += 1
                    i = _json_space(s, i, n)
                    if i < n and s[i] == 44:
                        i = _json_space(s, i + 1, n)
                        continue
                    if i < n and s[i] == 93:
                        i += 1
                        break
                    i = -1
                    break
        if i >= 0 and _json_space(s, i, n) != n:
            i = -1
    if i < 0 or index < n_kept:
        return None
    return PyBytes_FromStringAndSize(<const char*>lines.data(), lines.size())
