# cython: language_level=3
# distutils: language = c++
"""The loops of reading a model file that took most of a load in Python (parts/model.py,
sentencepiece_model.py).

A tokenizer.json lists its merges as strings of two tokens ("a b", as older files write them) or as two-item
lists, by the tokens' text; the merge table takes them as ids. `cut_merges` reads them straight from the
file's text into one array of code points (`MergeStrings`), leaving json.loads the rest, and
`pair_merge_table` looks each merge's tokens up in the merge table itself, as bytes: Llama 3's 280,147
merges took 0.23 s to split and look up in Python, then ~0.1 s as substrings and dict lookups here. The
vocabulary's tokens become bytes (`byte_level_tokens`, `character_tokens`); a SentencePiece model's pieces
are read from its protobuf (`sentencepiece_pieces`) and its merges' splits found (`formable_splits`). Each
reader of file bytes either reads exactly what the Python reader would or declines (None), leaving the
file and its error to that reader. `merge_pair_ids` is the list path those fall back to.
"""
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize
from cpython.long cimport PyLong_AsLongLongAndOverflow
from cpython.unicode cimport PyUnicode_DecodeUTF8, PyUnicode_Substring
from libc.stdint cimport int64_t, uint8_t, uint16_t, uint32_t, uint64_t
from libc.string cimport memcpy
from libcpp.vector cimport vector

from bytebpe._core cimport NO_RANK, MergeTable, Rank

cdef extern from "Python.h":
    Py_ssize_t PyUnicode_GET_LENGTH(object text)
    Py_UCS4 PyUnicode_READ_CHAR(object text, Py_ssize_t index)
    Py_ssize_t PyUnicode_FindChar(object text, Py_UCS4 ch, Py_ssize_t start, Py_ssize_t end,
                                  int direction) except -2
    int PyUnicode_KIND(object text)
    void* PyUnicode_DATA(object text)
    Py_UCS4 PyUnicode_READ(int kind, void* data, Py_ssize_t index) nogil


def merge_pair_ids(list merges not None, dict vocab not None, skipped_ids not None):
    """(the merges as their two tokens' ids: a bytes of native uint32 pairs, in order; the indices of the
    merges left out of it, those naming an id in `skipped_ids`).

    Raises KeyError for a token not in `vocab`, ValueError for a string that is not two tokens with one space
    between, TypeError for a merge of another shape, and OverflowError for an id outside uint32 (the caller
    then names the merge that is wrong). `vocab`'s ids are ints (checked by the caller)."""
    cdef Py_ssize_t n = len(merges), i, at, length, kept = 0
    cdef bytes out = PyBytes_FromStringAndSize(NULL, 8 * n)
    cdef uint32_t* ids = <uint32_t*>PyBytes_AS_STRING(out)
    cdef uint32_t left_id, right_id
    cdef list skipped = []
    cdef bint skipping = len(skipped_ids) > 0
    for i in range(n):
        merge = merges[i]
        if type(merge) is str:
            length = PyUnicode_GET_LENGTH(merge)
            at = PyUnicode_FindChar(merge, 32, 0, length, 1)
            if at < 0 or PyUnicode_FindChar(merge, 32, at + 1, length, 1) >= 0:
                raise ValueError(f"merge {i} is not two tokens")
            left, right = PyUnicode_Substring(merge, 0, at), PyUnicode_Substring(merge, at + 1, length)
        elif type(merge) is list and len(<list>merge) == 2:
            left, right = (<list>merge)[0], (<list>merge)[1]
            if type(left) is not str or type(right) is not str:
                raise TypeError(f"merge {i} is not two strings")
        else:
            raise TypeError(f"merge {i} is not a string or a list of two")
        left_id, right_id = vocab[left], vocab[right]
        if skipping and (left_id in skipped_ids or right_id in skipped_ids):
            skipped.append(i)
            continue
        ids[2 * kept] = left_id
        ids[2 * kept + 1] = right_id
        kept += 1
    return (out if kept == n else out[:8 * kept]), skipped


cdef int _byte_of_chars(str byte_chars, int* byte_of) except -1:
    """Fill `byte_of` (512 entries): code point -> the byte its character stands for, or -1."""
    if len(byte_chars) != 256:
        raise ValueError("byte_chars must hold 256 characters")
    cdef Py_ssize_t i
    cdef Py_UCS4 cp
    for i in range(512):
        byte_of[i] = -1
    for i in range(256):
        cp = byte_chars[i]
        if cp >= 512:
            raise ValueError("byte characters must lie below U+0200")
        byte_of[cp] = <int>i
    return 0


# ---- the merges as code points -----------------------------------------------------------------------------
#
# A file's merges, read once into one array of code points (`MergeStrings`), either from the list json.loads
# made or straight from the file's text (`cut_merges`, which leaves no Python object per merge: Qwen 2.5's
# 151,387 two-item lists cost json.loads ~60 ms). `pair_merge_table` then looks the tokens up.

ctypedef fused code_unit:
    uint8_t
    uint16_t
    uint32_t


cdef class MergeStrings:
    """The merges of a file as code points: merge i is cps[begin[i]:begin[i + 1]], its first token the
    first split[i] of them (a merge that is not two tokens has split NOT_TWO). `merge(i)` gives the merge as
    json.loads gives it, for the few the table leaves out."""
    cdef vector[uint32_t] cps
    cdef vector[uint32_t] begin         # one more entry than merges
    cdef vector[uint32_t] split
    cdef vector[Py_ssize_t] element     # with `text`: where merge i's JSON value starts in it
    cdef object source                  # the list of merges, or the file's text

    @staticmethod
    def of_list(list merges not None):
        """The merges of a list as json.loads gives it: strings "a b" or lists of two strings."""
        cdef MergeStrings strings = MergeStrings.__new__(MergeStrings)
        cdef Py_ssize_t i
        cdef uint32_t at
        strings.source = merges
        strings.begin.push_back(0)
        for i in range(len(merges)):
            merge = merges[i]
            if type(merge) is str:
                at = strings._append(merge, True)
            elif type(merge) is list and len(<list>merge) == 2 and type((<list>merge)[0]) is str \
                    and type((<list>merge)[1]) is str:
                strings._append((<list>merge)[0], False)
                at = strings.cps.size() - strings.begin.back()
                strings._append((<list>merge)[1], False)
            else:
                at = NOT_TWO
            strings.split.push_back(at)
            strings.begin.push_back(strings.cps.size())
        return strings

    cdef uint32_t _append(self, str token, bint space_splits) except? 0xFFFFFFFE:
        """Append the code points of `token`; with `space_splits` ("a b"), leave its space out and return
        where it was in the merge, NOT_TWO when there is no space or more than one."""
        cdef int kind = PyUnicode_KIND(token)
        cdef void* data = PyUnicode_DATA(token)
        cdef Py_ssize_t i, n = PyUnicode_GET_LENGTH(token), spaces = 0
        cdef uint32_t at = NOT_TWO
        cdef Py_UCS4 cp
        for i in range(n):
            cp = PyUnicode_READ(kind, data, i)
            if cp == 32 and space_splits:
                spaces += 1
                at = self.cps.size() - self.begin.back()
            else:
                self.cps.push_back(cp)
        return at if spaces == 1 else NOT_TWO

    def __len__(self):
        return self.begin.size() - 1 if self.begin.size() else 0

    def release(self):
        """Free the code points once the table is made (Llama 3's: ~13 MB, which an encoding would keep
        for nothing); `pair` and `merge` then know no merge."""
        self.cps.clear()
        self.cps.shrink_to_fit()
        self.begin.clear()
        self.begin.shrink_to_fit()
        self.split.clear()
        self.split.shrink_to_fit()
        self.element.clear()
        self.element.shrink_to_fit()

    def __reduce__(self):
        raise TypeError("MergeStrings is a loader's scratch: it cannot be pickled")

    def pair(self, Py_ssize_t index):
        """Merge `index`'s two tokens as read here, or None where it is not two tokens."""
        if not 0 <= index < len(self):
            raise IndexError(index)
        if self.split[index] == NOT_TWO:
            return None
        cdef Py_ssize_t begin = self.begin[index], at = begin + self.split[index], end = self.begin[index + 1]
        return (_text_of(&self.cps[0] + begin if end > begin else NULL, at - begin),
                _text_of(&self.cps[0] + at if end > at else NULL, end - at))

    def merge(self, Py_ssize_t index):
        """Merge `index` as json.loads gives it."""
        if not 0 <= index < len(self):
            raise IndexError(index)
        if type(self.source) is list:
            return self.source[index]
        return _JSON_DECODER.raw_decode(self.source, self.element[index])[0]


cdef str _text_of(const uint32_t* cps, Py_ssize_t n):
    return "".join([chr(cps[i]) for i in range(n)])


import json as _json
_JSON_DECODER = _json.JSONDecoder()
del _json

cdef enum:
    NOT_TWO = 0xFFFFFFFF


cdef inline Py_ssize_t _space(const code_unit* s, Py_ssize_t i, Py_ssize_t n) noexcept nogil:
    while i < n and (s[i] == 32 or s[i] == 10 or s[i] == 13 or s[i] == 9):
        i += 1
    return i


cdef Py_ssize_t _lexical_string_end(const code_unit* s, Py_ssize_t i, Py_ssize_t n, bint* escaped) noexcept nogil:
    """One past the closing quote of the string opening at s[i], by JSON's lexer only (json.loads checks
    the rest of what it holds); -1 when it does not close."""
    cdef code_unit c
    escaped[0] = False
    i += 1
    while i < n:
        c = s[i]
        if c == 34:
            return i + 1
        if c == 92:
            escaped[0] = True
            i += 2
        else:
            i += 1
    return -1


cdef inline int _hex_value(uint32_t c) noexcept nogil:
    if 48 <= c <= 57:
        return c - 48
    if 65 <= c <= 70:
        return c - 55
    if 97 <= c <= 102:
        return c - 87
    return -1


cdef Py_ssize_t _escape(const code_unit* s, Py_ssize_t i, Py_ssize_t n, uint32_t* cp) noexcept nogil:
    """s[i] is the 'u' of an escape: one past its four hex digits with their value in `cp`, or -1."""
    cdef int k, digit
    cp[0] = 0
    if i + 4 >= n:
        return -1
    for k in range(1, 5):
        digit = _hex_value(s[i + k])
        if digit < 0:
            return -1
        cp[0] = cp[0] * 16 + <uint32_t>digit
    return i + 5


cdef Py_ssize_t _merge_string(const code_unit* s, Py_ssize_t i, Py_ssize_t n, bint space_splits,
                              MergeStrings out) except -2:
    """Decode the JSON string opening at s[i] as json.loads does (strict: no raw control character, only
    JSON's escapes, a high surrogate escape joined to a low one after it) onto `out`'s code points; with
    `space_splits`, the merge's split is where its space is. One past the closing quote, or -1 where it is
    not a string json.loads reads."""
    cdef uint32_t c, low
    cdef Py_ssize_t after
    cdef uint32_t at = NOT_TWO
    cdef bint second_space = False
    i += 1
    while i < n:
        c = s[i]
        if c == 34:
            if space_splits:
                out.split.push_back(NOT_TWO if second_space else at)
            return i + 1
        if c < 32:
            return -1
        if c == 92:
            if i + 1 >= n:
                return -1
            c = s[i + 1]
            if c == 117:    # \uXXXX
                i = _escape(s, i + 1, n, &c)
                if i < 0:
                    return -1
                if 0xD800 <= c <= 0xDBFF and i + 6 < n and s[i] == 92 and s[i + 1] == 117:
                    after = _escape(s, i + 1, n, &low)
                    if after < 0:
                        return -1
                    if 0xDC00 <= low <= 0xDFFF:
                        c = 0x10000 + ((c - 0xD800) << 10) + (low - 0xDC00)
                        i = after
            elif c == 34 or c == 92 or c == 47:
                i += 2
            elif c == 98 or c == 102 or c == 110 or c == 114 or c == 116:    # b f n r t
                c = 8 if c == 98 else 12 if c == 102 else 10 if c == 110 else 13 if c == 114 else 9
                i += 2
            else:
                return -1
        else:
            i += 1
        if c == 32 and space_splits:
            if at != NOT_TWO:
                second_space = True
            at = out.cps.size() - out.begin.back()
        else:
            out.cps.push_back(c)
    return -1


cdef Py_ssize_t _list_string(const code_unit* s, Py_ssize_t i, Py_ssize_t n, MergeStrings out) except -2:
    """A string of a two-item merge, after whitespace from s[i]: one past it, or -1."""
    i = _space(s, i, n)
    if i >= n or s[i] != 34:
        return -1
    return _merge_string(s, i, n, False, out)


cdef Py_ssize_t _merges_array(const code_unit* s, Py_ssize_t i, Py_ssize_t n, MergeStrings out) except -2:
    """Read the array of merges opening at s[i] ('['): each a string "a b" or a list of two strings, as
    json.loads reads them; one past its ']', or -1 for anything else (the caller then parses with json)."""
    i = _space(s, i + 1, n)
    if i < n and s[i] == 93:
        return i + 1
    while i < n:
        out.element.push_back(i)
        if s[i] == 34:
            i = _merge_string(s, i, n, True, out)
        elif s[i] == 91:
            i = _list_string(s, i + 1, n, out)
            if i < 0:
                return -1
            out.split.push_back(out.cps.size() - out.begin.back())
            i = _space(s, i, n)
            if i >= n or s[i] != 44:
                return -1
            i = _list_string(s, i + 1, n, out)
            if i < 0:
                return -1
            i = _space(s, i, n)
            if i >= n or s[i] != 93:
                return -1
            i += 1
        else:
            return -1
        if i < 0:
            return -1
        out.begin.push_back(out.cps.size())
        i = _space(s, i, n)
        if i < n and s[i] == 44:
            i = _space(s, i + 1, n)
            continue
        if i < n and s[i] == 93:
            return i + 1
        return -1
    return -1


cdef inline bint _names(const code_unit* s, Py_ssize_t start, Py_ssize_t end, const char* name) noexcept nogil:
    cdef Py_ssize_t k = 0
    while start + k < end:
        if name[k] == 0 or s[start + k] != <uint8_t>name[k]:
            return False
        k += 1
    return name[k] == 0


cdef Py_ssize_t _cut(const code_unit* s, Py_ssize_t n, MergeStrings out, Py_ssize_t* merges_end) except -2:
    """Where the value of the member "merges" of the member "model" of the JSON object `s` holds starts
    (its merges read onto `out`, `merges_end` one past it), or -1 when the text is not plainly such an
    object: either member missing or there twice, a member name with an escape where it could be one, the
    model not an object, the merges not what `_merges_array` reads. By JSON's lexer only, the rest of the
    text being json.loads's to check (the caller parses it with the merges replaced by [])."""
    cdef Py_ssize_t i = _space(s, 0, n), j, k, start = -1
    cdef Py_ssize_t depth = 0
    cdef bint in_model = False, model_seen = False, escaped
    cdef uint32_t c
    if i >= n or s[i] != 123:
        return -1
    while i < n:
        c = s[i]
        if c == 34:
            j = _lexical_string_end(s, i, n, &escaped)
            if j < 0:
                return -1
            k = _space(s, j, n)
            if k < n and s[k] == 58 and (depth == 1 or (depth == 2 and in_model)):    # a member name
                if escaped:
                    return -1
                if depth == 1 and _names(s, i + 1, j - 1, b"model"):
                    if model_seen:
                        return -1
                    model_seen = True
                    k = _space(s, k + 1, n)
                    if k >= n or s[k] != 123:
                        return -1
                    in_model = True
                    depth = 2
                    i = k + 1
                    continue
                if depth == 2 and _names(s, i + 1, j - 1, b"merges"):
                    if start >= 0:
                        return -1
                    start = _space(s, k + 1, n)
                    if start >= n or s[start] != 91:
                        return -1
                    i = _merges_array(s, start, n, out)
                    if i < 0:
                        return -1
                    merges_end[0] = i
                    continue
            i = j
            continue
        if c == 123 or c == 91:
            depth += 1
        elif c == 125 or c == 93:
            depth -= 1
            if depth == 1:
                in_model = False
            elif depth < 0:
                return -1
        i += 1
    return start


def cut_merges(str text not None):
    """(start, end, merges): where the model's "merges" lie in a tokenizer.json's text, and the merges
    read from there (a `MergeStrings`); None when `_cut` cannot tell (then json.loads reads them)."""
    cdef MergeStrings out = MergeStrings.__new__(MergeStrings)
    cdef int kind = PyUnicode_KIND(text)
    cdef void* data = PyUnicode_DATA(text)
    cdef Py_ssize_t n = PyUnicode_GET_LENGTH(text), start, end = -1
    out.source = text
    out.begin.push_back(0)
    if kind == 1:
        start = _cut(<const uint8_t*>data, n, out, &end)
    elif kind == 2:
        start = _cut(<const uint16_t*>data, n, out, &end)
    else:
        start = _cut(<const uint32_t*>data, n, out, &end)
    if start < 0 or end < 0 or out.split.size() != out.begin.size() - 1:
        return None
    return start, end, out


def pair_merge_table(dict token_ids not None, MergeStrings merges not None, str byte_chars, bint ignore_merges,
                     bytes prefix not None, bint want_pairs):
    """(the merge table of `token_ids`, a vocabulary's tokens as bytes; the indices of the merges left out of
    it; with `want_pairs`, the kept merges' (left, right) ids as native uint32, else None).

    Each merge's tokens become their bytes -- what the byte characters stand for (`byte_chars`, as for
    `byte_level_tokens`), or with None their UTF-8 (a character-level vocabulary) -- and are looked up in
    the table itself, with their result, the two tokens' bytes together: no Python object per merge.
    `prefix` (native uint32 (left, right) id pairs) is ranked before them. A merge is left out when that
    fails: a token with another character (a token that only decodes, whose merges no piece can use), a
    token or result not in the vocabulary, or a merge that is not two tokens. The caller tells those apart;
    on Llama 3's 280,147 merges, none is left out."""
    cdef int byte_of[512]
    if byte_chars is not None:
        _byte_of_chars(byte_chars, byte_of)
    cdef MergeTable table = MergeTable(token_ids)
    cdef Py_ssize_t i, k, n = len(merges), at
    cdef vector[uint8_t] joined     # the merge's two tokens' bytes, one after the other
    cdef vector[Rank] triples
    cdef Rank left, right, result
    cdef uint32_t cp
    cdef const uint32_t* prefix_ids = <const uint32_t*>PyBytes_AS_STRING(prefix)
    cdef list left_out = []
    if len(prefix) % 8:
        raise ValueError("prefix must be whole uint32 pairs")
    triples.reserve(3 * (n + len(prefix) // 8))
    for i in range(len(prefix) // 8):
        left, right = prefix_ids[2 * i], prefix_ids[2 * i + 1]
        joined.clear()
        _append_token(table, left, joined)
        at = joined.size()
        _append_token(table, right, joined)
        result = table.rank_of(joined.data(), joined.size())
        if at == 0 or <Py_ssize_t>joined.size() == at or result == NO_RANK:
            raise ValueError(f"prefix merge {i} ({left}, {right}) does not make a token")
        triples.push_back(left)
        triples.push_back(right)
        triples.push_back(result)
    for i in range(n):
        joined.clear()
        at = merges.split[i]
        if at == NOT_TWO:
            left_out.append(i)
            continue
        if byte_chars is None:
            for k in range(merges.begin[i], merges.begin[i] + at):
                _append_utf8(merges.cps[k], joined)
            at = joined.size()      # (the split, in bytes)
            for k in range(merges.begin[i] + merges.split[i], merges.begin[i + 1]):
                _append_utf8(merges.cps[k], joined)
        else:
            for k in range(merges.begin[i], merges.begin[i + 1]):
                cp = merges.cps[k]
                if cp >= 512 or byte_of[cp] < 0:
                    at = -1
                    break
                joined.push_back(<uint8_t>byte_of[cp])
        if at >= 0:
            left = table.rank_of(joined.data(), at)
            right = table.rank_of(joined.data() + at, joined.size() - at)
            result = table.rank_of(joined.data(), joined.size())
            if left != NO_RANK and right != NO_RANK and result != NO_RANK:
                triples.push_back(left)
                triples.push_back(right)
                triples.push_back(result)
                continue
        left_out.append(i)
    table._set_pair_merges(triples, ignore_merges, True)
    if not want_pairs:
        return table, left_out, None
    cdef Py_ssize_t first = 3 * (len(prefix) // 8), kept = (triples.size() - first) // 3
    cdef bytes pairs = PyBytes_FromStringAndSize(NULL, 8 * kept)
    cdef uint32_t* out = <uint32_t*>PyBytes_AS_STRING(pairs)
    for i in range(kept):
        out[2 * i] = triples[first + 3 * i]
        out[2 * i + 1] = triples[first + 3 * i + 1]
    return table, left_out, pairs


cdef int _append_token(MergeTable table, Rank token, vector[uint8_t]& out) except -1:
    if token > <Rank>table.max_rank or table.token_len[token] < 0:
        raise ValueError(f"id {token} is not a token")
    cdef const uint8_t* start = table.blob.data() + table.token_start[token]
    out.insert(out.end(), start, start + table.token_len[token])
    return 0


cdef inline void _append_utf8(uint32_t cp, vector[uint8_t]& out) noexcept:
    """`cp`'s UTF-8 (a surrogate's too, as "surrogatepass" writes it)."""
    if cp < 0x80:
        out.push_back(<uint8_t>cp)
    elif cp < 0x800:
        out.push_back(<uint8_t>(0xC0 | (cp >> 6)))
        out.push_back(<uint8_t>(0x80 | (cp & 0x3F)))
    elif cp < 0x10000:
        out.push_back(<uint8_t>(0xE0 | (cp >> 12)))
        out.push_back(<uint8_t>(0x80 | ((cp >> 6) & 0x3F)))
        out.push_back(<uint8_t>(0x80 | (cp & 0x3F)))
    else:
        out.push_back(<uint8_t>(0xF0 | (cp >> 18)))
        out.push_back(<uint8_t>(0x80 | ((cp >> 12) & 0x3F)))
        out.push_back(<uint8_t>(0x80 | ((cp >> 6) & 0x3F)))
        out.push_back(<uint8_t>(0x80 | (cp & 0x3F)))


def byte_level_tokens(dict vocab not None, str byte_chars not None):
    """(token bytes -> id, id -> UTF-8) of a byte-level vocabulary: a token all of whose characters are in
    `byte_chars` (GPT-2's byte characters, byte i's at index i) is the bytes they stand for; any other
    token only decodes, as its UTF-8 (the empty one as b""). `vocab`'s ids are ints (checked by the caller).
    Llama 3's 128,000 tokens took 46 ms as translate-and-encode per token; here each is one pass."""
    cdef int byte_of[512]       # code point -> the byte its character stands for, or -1
    _byte_of_chars(byte_chars, byte_of)
    cdef Py_ssize_t i, n
    cdef Py_UCS4 cp
    cdef char* out
    cdef dict token_ids = {}, decode_only = {}
    for token, token_id in vocab.items():
        if type(token) is not str:
            raise TypeError(f"a token must be a str, got {type(token).__name__}")
        n = PyUnicode_GET_LENGTH(token)
        if n == 0:
            decode_only[token_id] = b""
            continue
        data = PyBytes_FromStringAndSize(NULL, n)
        out = PyBytes_AS_STRING(data)
        for i in range(n):
            cp = PyUnicode_READ_CHAR(token, i)
            if cp >= 512 or byte_of[cp] < 0:
                break
            out[i] = <char>byte_of[cp]
        else:
            token_ids[data] = token_id
            continue
        decode_only[token_id] = (<str>token).encode("utf-8", "surrogatepass")
    return token_ids, decode_only


def character_tokens(dict vocab not None, skipped_ids not None, str mark not None, Py_ssize_t n_vocab):
    """(token bytes -> id, id -> bytes, the one-character tokens, the tokens' flags) of a character-level
    vocabulary: a token is its UTF-8 ("surrogatepass"), the empty one only decodes, and the ids in
    `skipped_ids` are left to the caller (byte-fallback tokens). Flags, a bytearray by id (`n_vocab` long,
    every token's): STARTS_WITH_MARK where the token starts with `mark` (one character), NOT_ENDING_IN_MARK
    where it is not empty and does not end in it (for `any_pair_flagged`). `vocab`'s ids are ints from 0 to
    n_vocab - 1 (checked by the caller)."""
    if len(mark) != 1:
        raise ValueError("mark must be one character")
    cdef Py_UCS4 mark_cp = mark[0]
    cdef dict token_ids = {}, decode_only = {}
    cdef list characters = []
    cdef bytearray flags = bytearray(n_vocab)
    cdef unsigned char* flag = flags
    cdef Py_ssize_t n, at
    cdef int kind
    cdef void* data
    cdef bint skipping = len(skipped_ids) > 0
    for token, token_id in vocab.items():
        if type(token) is not str:
            raise TypeError(f"a token must be a str, got {type(token).__name__}")
        at = token_id
        if not 0 <= at < n_vocab:
            raise ValueError(f"id {at} is outside 0..{n_vocab - 1}")
        n = PyUnicode_GET_LENGTH(token)
        if n:
            kind = PyUnicode_KIND(token)
            data = PyUnicode_DATA(token)
            flag[at] = (STARTS_WITH_MARK if PyUnicode_READ(kind, data, 0) == mark_cp else 0) | \
                (NOT_ENDING_IN_MARK if PyUnicode_READ(kind, data, n - 1) != mark_cp else 0)
        if skipping and token_id in skipped_ids:
            continue
        if n == 0:
            decode_only[token_id] = b""
            continue
        token_ids[(<str>token).encode("utf-8", "surrogatepass")] = token_id
        if n == 1:
            characters.append(token)
    return token_ids, decode_only, characters, flags


cdef enum:
    STARTS_WITH_MARK = 1
    NOT_ENDING_IN_MARK = 2


def any_pair_flagged(const uint8_t[::1] pairs not None, const uint8_t[::1] flags not None, int left_mask,
                     int right_mask, bint both):
    """Whether some (left, right) pair of `pairs` (native uint32 id pairs) has `left_mask` in its left id's
    flags and (`both`) / or (not `both`) `right_mask` in its right id's; ids past `flags` have none."""
    if pairs.shape[0] % 8:
        raise ValueError("pairs must be whole uint32 pairs")
    cdef const uint32_t* ids = <const uint32_t*>&pairs[0] if pairs.shape[0] else NULL
    cdef Py_ssize_t i, n_flags = flags.shape[0]
    cdef bint on_left, on_right
    for i in range(pairs.shape[0] // 8):
        on_left = ids[2 * i] < <uint32_t>n_flags and (flags[ids[2 * i]] & left_mask) != 0
        on_right = ids[2 * i + 1] < <uint32_t>n_flags and (flags[ids[2 * i + 1]] & right_mask) != 0
        if (on_left and on_right) if both else (on_left or on_right):
            return True
    return False


# ---- a SentencePiece ModelProto's pieces ---------------------------------------------------------------------
#
# Its repeated field 1 (ModelProto.SentencePiece: piece = 1, score = 2, type = 3) is nearly all of a .model
# file: 32,000 small messages that the Python reader (sentencepiece_model.py) took ~0.2 s over. Read here in C,
# or declined (None) for anything that is not plainly valid: the Python reader then reads the whole file and
# names what is wrong, so a file is never read differently.

cdef Py_ssize_t _varint(const uint8_t* s, Py_ssize_t i, Py_ssize_t n, uint64_t* value) noexcept nogil:
    """One past the varint at s[i] with its value, or -1 where the Python reader refuses it (truncated,
    longer than 10 bytes or 64 bits)."""
    cdef int k
    cdef uint64_t b
    value[0] = 0
    for k in range(10):
        if i >= n:
            return -1
        b = s[i]
        i += 1
        if k == 9 and b > 1:
            return -1
        value[0] |= (b & 0x7F) << (7 * k)
        if b < 0x80:
            return i
    return -1


cdef Py_ssize_t _field(const uint8_t* s, Py_ssize_t i, Py_ssize_t n, uint64_t* number, int* wire,
                       Py_ssize_t* start, Py_ssize_t* end) noexcept nogil:
    """One past the field at s[i]: its number and wire type, its value's bytes s[start:end] (a varint's
    included); -1 where the Python reader refuses it, or for a group (which it refuses too)."""
    cdef uint64_t key, length
    i = _varint(s, i, n, &key)
    if i < 0:
        return -1
    number[0], wire[0] = key >> 3, key & 7
    if number[0] == 0 or number[0] > 0x1FFFFFFF:
        return -1
    start[0] = i
    if wire[0] == 0:
        i = _varint(s, i, n, &length)
    elif wire[0] == 1 or wire[0] == 5:
        i = i + (8 if wire[0] == 1 else 4)
        if i > n:
            return -1
    elif wire[0] == 2:
        i = _varint(s, i, n, &length)
        if i < 0 or length > <uint64_t>(n - i):
            return -1
        start[0] = i
        i += length
    else:
        return -1
    end[0] = i
    return i


def sentencepiece_pieces(const uint8_t[::1] data not None):
    """(pieces, scores, types, specs) of a SentencePiece ModelProto's bytes: each piece's string, score and
    type, in order, and (field number, start, end) of each trainer, normalizer or denormalizer spec (fields 2,
    3, 5) for the Python reader; None where the bytes are not plainly a ModelProto whose pieces are valid
    (see above)."""
    cdef const uint8_t* s = &data[0] if data.shape[0] else NULL
    cdef Py_ssize_t n = data.shape[0], i = 0, start, end, j, piece_start, piece_end
    cdef uint64_t number
    cdef int wire
    cdef float score
    cdef int64_t piece_type
    cdef list pieces = [], scores = [], types = [], specs = []
    while i < n:
        i = _field(s, i, n, &number, &wire, &start, &end)
        if i < 0:
            return None
        if number == 2 or number == 3 or number == 5:
            if wire != 2:
                return None
            specs.append((number, start, end))
        elif number == 1:
            if wire != 2:
                return None
            piece_start = piece_end = -1
            score = 0
            piece_type = 1
            j = start
            while j < end:
                j = _piece_field(s, j, end, &piece_start, &piece_end, &score, &piece_type)
                if j < 0:
                    return None
            if piece_start < 0 or piece_end <= piece_start:
                return None     # (no piece, or an empty one: the Python reader names it)
            try:
                pieces.append(PyUnicode_DecodeUTF8(<const char*>s + piece_start, piece_end - piece_start, NULL))
            except UnicodeDecodeError:
                return None
            scores.append(<double>score)
            types.append(piece_type)
    return pieces, scores, types, specs


cdef Py_ssize_t _piece_field(const uint8_t* s, Py_ssize_t i, Py_ssize_t n, Py_ssize_t* piece_start,
                             Py_ssize_t* piece_end, float* score, int64_t* piece_type) noexcept nogil:
    """One past the field of a SentencePiece message at s[i], noting its piece, score or type (the last of
    each wins, as in protobuf); -1 where the Python reader refuses it (a field of the wrong wire type, a type
    it does not know)."""
    cdef uint64_t number, value
    cdef int wire
    cdef Py_ssize_t start, end
    i = _field(s, i, n, &number, &wire, &start, &end)
    if i < 0:
        return -1
    if number == 1:
        if wire != 2:
            return -1
        piece_start[0], piece_end[0] = start, end
    elif number == 2:
        if wire != 5:
            return -1
        memcpy(score, s + start, 4)     # (little-endian, as every platform bytebpe builds on)
    elif number == 3:
        if wire != 0:
            return -1
        _varint(s, start, end, &value)
        value = value & <uint64_t>0xFFFFFFFF
        if value < 1 or value > 6:        # (PieceType: NORMAL .. BYTE)
            return -1
        piece_type[0] = <int64_t>value
    return i


def formable_splits(list pieces not None, list candidates not None, frozen not None):
    """Where SentencePiece's BPE can form each of `candidates` (ids of `pieces`, shortest first) from two
    symbols: [(id, k), ...], each split of a formable candidate into its first k characters and the rest,
    both symbols -- a character not in `frozen` (the user-defined one-character pieces), or a candidate
    formable itself (sentencepiece_model._derive_merges says why; it checks the rest). One lookup of
    each part's UTF-8 in a table of the candidates, where Python made two strings per split."""
    cdef dict by_bytes = {}
    cdef Py_ssize_t i, k, n, index
    for index in candidates:
        by_bytes[(<str>pieces[index]).encode("utf-8")] = index
    cdef MergeTable table = MergeTable(by_bytes) if by_bytes else None
    cdef vector[uint8_t] formable
    formable.assign(len(pieces), 0)
    cdef vector[uint32_t] frozen_cps
    for char in frozen:
        frozen_cps.push_back(ord(char))
    cdef vector[Py_ssize_t] ends     # the end of each character in the piece's UTF-8
    cdef const uint8_t* data
    cdef Py_ssize_t size, first_end, last_start
    cdef bytes encoded
    cdef Rank part
    cdef bint left_ok, right_ok, any_split
    cdef list splits = []
    cdef int kind
    cdef void* chars
    for index in candidates:
        piece = pieces[index]
        encoded = (<str>piece).encode("utf-8")
        data = <const uint8_t*>PyBytes_AS_STRING(encoded)
        size = len(encoded)
        n = PyUnicode_GET_LENGTH(piece)
        kind = PyUnicode_KIND(piece)
        chars = PyUnicode_DATA(piece)
        ends.clear()
        for i in range(size):
            if i + 1 == size or (data[i + 1] & 0xC0) != 0x80:
                ends.push_back(i + 1)
        any_split = False
        for k in range(1, n):
            if k == 1:
                left_ok = not _in(frozen_cps, PyUnicode_READ(kind, chars, 0))
            else:
                part = table.rank_of(data, ends[k - 1])
                left_ok = part != NO_RANK and formable[part]
            if not left_ok:
                continue
            if k == n - 1:
                right_ok = not _in(frozen_cps, PyUnicode_READ(kind, chars, n - 1))
            else:
                part = table.rank_of(data + ends[k - 1], size - ends[k - 1])
                right_ok = part != NO_RANK and formable[part]
            if right_ok:
                splits.append((index, k))
                any_split = True
        if any_split:
            formable[index] = 1
    return splits


cdef inline bint _in(const vector[uint32_t]& cps, uint32_t cp) noexcept:
    cdef size_t i
    for i in range(cps.size()):
        if cps[i] == cp:
            return True
    return False


def vocab_size(dict vocab not None):
    """One more than the largest id of `vocab` (0 when empty) where its ids are ints (not bools) from 0 to
    2**31 - 2, each given once; else None (the caller then names the entry that is wrong). One pass over the
    ids and a byte per id up to the largest."""
    cdef long long largest = -1, value
    cdef int overflow = 0
    cdef vector[uint8_t] seen
    for token_id in vocab.values():
        if type(token_id) is not int:
            return None
        value = PyLong_AsLongLongAndOverflow(token_id, &overflow)
        if overflow or value < 0 or value >= 2**31 - 1:
            return None
        if value > largest:
            largest = value
    if largest >= 4 * len(vocab) + (1 << 20):     # (sparse ids: a set rather than a byte per id)
        return largest + 1 if len(set(vocab.values())) == len(vocab) else None
    seen.assign(largest + 1, 0)
    for token_id in vocab.values():
        value = PyLong_AsLongLongAndOverflow(token_id, &overflow)
        if seen[value]:
            return None
        seen[value] = 1
    return largest + 1
