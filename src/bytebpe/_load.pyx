# cython: language_level=3
# distutils: language = c++
"""The loops of reading a tokenizer.json's model that took most of a load in Python (parts/model.py).

A file lists its merges as strings of two tokens ("a b", as older files write them) or as two-item lists,
by the tokens' text; the merge table takes them as pairs of ids. Llama 3's 280,147 merges took 0.23 s to
split and look up in Python; here each merge costs a substring and two dict lookups. And a byte-level
vocabulary's tokens become the bytes their characters stand for.
"""
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize
from cpython.long cimport PyLong_AsLongLongAndOverflow
from cpython.unicode cimport PyUnicode_Substring
from libc.stdint cimport uint8_t, uint32_t
from libcpp.vector cimport vector

cdef extern from "Python.h":
    Py_ssize_t PyUnicode_GET_LENGTH(object text)
    Py_UCS4 PyUnicode_READ_CHAR(object text, Py_ssize_t index)
    Py_ssize_t PyUnicode_FindChar(object text, Py_UCS4 ch, Py_ssize_t start, Py_ssize_t end,
                                  int direction) except -2


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


def byte_level_tokens(dict vocab not None, str byte_chars not None):
    """(token bytes -> id, id -> UTF-8) of a byte-level vocabulary: a token all of whose characters are in
    `byte_chars` (GPT-2's byte characters, byte i's at index i) is the bytes they stand for; any other
    token only decodes, as its UTF-8 (the empty one as b""). `vocab`'s ids are ints (checked by the caller).
    Llama 3's 128,000 tokens took 46 ms as translate-and-encode per token; here each is one pass."""
    if len(byte_chars) != 256:
        raise ValueError("byte_chars must hold 256 characters")
    cdef int byte_of[512]       # code point -> the byte its character stands for, or -1
    cdef Py_ssize_t i, n
    cdef Py_UCS4 cp
    cdef char* out
    for i in range(512):
        byte_of[i] = -1
    for i in range(256):
        cp = byte_chars[i]
        if cp >= 512:
            raise ValueError("byte characters must lie below U+0200")
        byte_of[cp] = <int>i
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
