# cython: language_level=3
# distutils: language = c++
"""The contract of the compiled pre-tokenizer: hand-written scanners equal to the known split patterns.

A scanner reads UTF-8 and reports where each piece ends; the pieces are exactly tiktoken's: ``regex.findall(
pattern, text)`` with the character classes of tiktoken's engine (see _pretokenize.pyx). It never allocates
and never fails, so it is `noexcept nogil` and callable from the merge loop.
"""
from libc.stdint cimport uint8_t

# The pattern families in use (see patterns.py). 0 is reserved for "no compiled scanner".
cpdef enum PatternKind:
    R50K = 1      # gpt2, r50k_base, p50k_base, p50k_edit
    CL100K = 2    # cl100k_base
    O200K = 3     # o200k_base, o200k_harmony
    DEEPSEEK = 4  # DeepSeek's tokenizer.json (V3, R1): three Splits in sequence, with HF's classes


# Scan pieces of `text[start:length]` (UTF-8) and write the end offset of each into `piece_ends`, at most
# `capacity` of them (capacity >= 1). Returns how many were written; the last one written is where the next
# call starts. Pieces never split a UTF-8 sequence, and `start < length` always yields at least one piece.
cdef Py_ssize_t scan_pieces(PatternKind kind, const uint8_t* text, Py_ssize_t start, Py_ssize_t length,
                            Py_ssize_t* piece_ends, Py_ssize_t capacity) noexcept nogil


cdef class Scanner:
    cdef readonly PatternKind kind
