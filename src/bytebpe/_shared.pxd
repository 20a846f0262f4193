# cython: language_level=3
"""What the compiled modules share: the UTF-8 views of str they read text through, and byte hashing.

THE OWNERSHIP RULE. Every pointer that the compiled code reads — with or without the GIL — points into an
object that the *current call* holds in a local list, conventionally named `owners`, from the moment the
pointer is taken until the last read. "Holds" means: the object itself is an item of `owners`, or it is an
item of a list that this call created (a private copy) and that list is in `owners`. Nothing else counts:

- not the caller's arguments (a caller's list can lose items to another thread while the GIL is released,
  and its strs are then freed);
- not a temporary (a segment cut out of a text is freed when the function that cut it returns; ASCII
  segments of more than one character are real heap objects, unlike the cached one-character strs);
- not "it worked in the tests" (PYTHONMALLOC=debug overwrites freed memory and turns a violation into
  wrong ids at once; run the suite under it when changing how pointers are gathered).

`_utf8_view` is the only way text becomes a pointer: it appends the owner itself. `_utf8_view_of_held` is
for a str that is already an item of a private copy held in `owners` (a list of pieces), where appending
each piece again would only cost time.

The hashing functions are inline, so each module gets its own inlined copy. `_head_word` holds a string's
first 8 bytes (all of a shorter one, zero-padded); `_hash_bytes` mixes in the rest a word at a time
(multiply-xorshift), fast on the short strings tokens and pre-tokens mostly are.
"""
from libc.stdint cimport uint8_t, uint32_t, uint64_t
from libc.string cimport memcpy


# The limits every compiled module keeps (declared here only; _core.pyx exposes them to Python as module
# attributes, for training.py and the tests).
cdef enum:
    # Token ids stay below 2**31 - 1, so that NO_RANK and (rank << 32 | position) heap keys never collide,
    # and the trainer's uint32 words can mark symbols GONE.
    MAX_TOKEN_ID = 0x7FFFFFFE
    # Piece ends asked of the compiled scanner per scan_pieces call: the fused encode path then looks up and
    # merges them while their bytes are still in L1 cache.
    SCAN_BATCH = 256


# std::vector::assign(n, x) as Cython's libcpp declares it is not `except +`: a std::bad_alloc there would end
# the process. Every fill goes through this, which turns one into MemoryError.
cdef extern from *:
    """
    template <class Vector, class T>
    static inline void fill_vector(Vector& vector, size_t n, const T& value) { vector.assign(n, value); }
    """
    void fill_vector[Vector, T](Vector& vector, size_t n, const T& value) except + nogil


cdef extern from "Python.h":
    # Borrowed UTF-8 view of a str, cached inside the object (zero-copy for ASCII strings).
    # Raises UnicodeEncodeError for lone surrogates.
    const char* PyUnicode_AsUTF8AndSize(object text, Py_ssize_t* size) except NULL
    # A new bytes object holding the UTF-8 of a str. Raises UnicodeEncodeError for lone surrogates.
    bytes PyUnicode_AsUTF8String(object text)
    bint PyUnicode_IS_COMPACT_ASCII(object text)
    void* PyUnicode_DATA(object text)
    Py_ssize_t PyUnicode_GET_LENGTH(object text)


cdef extern from "_utf8.h":
    # A new bytes object holding the UTF-8 of a str, PyUnicode_AsUTF8String's result faster (the header
    # says why and how much). Raises UnicodeEncodeError for lone surrogates.
    bytes bytebpe_utf8_bytes(object text)
    # Whether it converts 16 characters at a time (per module; _core sets it at import), and whether the CPU
    # can.
    int bytebpe_utf8_wide
    int bytebpe_utf8_wide_supported()


cdef inline const uint8_t* _utf8_view(str text, Py_ssize_t* size, list owners) except NULL:
    """The UTF-8 bytes of `text`, valid for as long as `owners` is (see the ownership rule above).

    An ASCII str is its own UTF-8: `text` goes into `owners` and the pointer is into its buffer. Otherwise
    a temporary UTF-8 copy goes into `owners` — not the UTF-8 cache inside the str, which would live (and
    double the memory) as long as the str. Raises UnicodeEncodeError for lone surrogates.
    """
    cdef bytes utf8
    if PyUnicode_IS_COMPACT_ASCII(text):
        owners.append(text)
        size[0] = PyUnicode_GET_LENGTH(text)
        return <const uint8_t*>PyUnicode_DATA(text)
    utf8 = bytebpe_utf8_bytes(text)
    owners.append(utf8)
    size[0] = len(utf8)
    return <const uint8_t*><const char*>utf8


cdef inline const uint8_t* _utf8_view_of_held(object piece, Py_ssize_t* size) except NULL:
    """The UTF-8 bytes of `piece`, an item of a private list that the caller holds in `owners`.

    Points into the str itself (its ASCII buffer, or the UTF-8 cache CPython keeps inside it), so it is
    valid exactly as long as the str is. Raises TypeError for anything but a str and UnicodeEncodeError
    for lone surrogates.
    """
    if not isinstance(piece, str):
        raise TypeError(f"pre-tokenized pieces must be str, got {type(piece).__name__}")
    if PyUnicode_IS_COMPACT_ASCII(piece):
        size[0] = PyUnicode_GET_LENGTH(piece)
        return <const uint8_t*>PyUnicode_DATA(piece)
    return <const uint8_t*>PyUnicode_AsUTF8AndSize(piece, size)


cdef inline uint32_t _decode(const uint8_t* s, Py_ssize_t i, Py_ssize_t n, Py_ssize_t* width) noexcept nogil:
    """The code point at s[i] (i < n) and its UTF-8 length, the one UTF-8 decoder of the compiled modules
    (the scanner's classes, the merge loop's whole characters).

    The input is UTF-8 that Python produced, so it is well formed; a malformed or truncated sequence is
    still read safely (one byte, as U+FFFD) so that no input can make a reader go out of bounds. Continuation
    bytes are not checked: a caller reading bytes that Python did not produce (a vocabulary's tokens) checks
    them itself.
    """
    cdef uint32_t b0 = s[i]
    cdef uint32_t cp
    if b0 < 0x80:
        width[0] = 1
        return b0
    if b0 >= 0xC0 and b0 < 0xE0 and i + 1 < n:
        width[0] = 2
        return ((b0 & 0x1F) << 6) | (s[i + 1] & 0x3F)
    if b0 >= 0xE0 and b0 < 0xF0 and i + 2 < n:
        width[0] = 3
        return ((b0 & 0x0F) << 12) | ((s[i + 1] & 0x3F) << 6) | (s[i + 2] & 0x3F)
    if b0 >= 0xF0 and i + 3 < n:
        cp = ((b0 & 0x07) << 18) | ((s[i + 1] & 0x3F) << 12) | ((s[i + 2] & 0x3F) << 6) | (s[i + 3] & 0x3F)
        if cp < 0x110000:
            width[0] = 4
            return cp
    width[0] = 1
    return 0xFFFD


cdef inline uint64_t _load64(const uint8_t* data) noexcept nogil:
    cdef uint64_t word
    memcpy(&word, data, 8)    # constant size: compiles to one unaligned load
    return word


cdef inline uint32_t _load32(const uint8_t* data) noexcept nogil:
    cdef uint32_t word
    memcpy(&word, data, 4)
    return word


cdef inline uint64_t _head_word(const uint8_t* data, Py_ssize_t n) noexcept nogil:
    """The first min(n, 8) bytes of `data` (n >= 1) as one word, zero-padded (on a little-endian machine
    byte i is bits 8i to 8i + 7).

    Built from fixed-size (possibly overlapping) loads instead of a variable-length copy, which would be a
    library call on the hottest path. Reads only data[:n]; where 8 bytes are readable, `_head_word_of_8`
    gives the same word with fewer branches.
    """
    if n >= 8:
        return _load64(data)
    if n >= 4:     # bytes n-4..n-1 shifted to their places, the overlap with bytes 0..3 equal on both sides
        return <uint64_t>_load32(data) | (<uint64_t>_load32(data + n - 4) << (8 * (n - 4)))
    return (<uint64_t>data[0] | (<uint64_t>data[n >> 1] << 8) | (<uint64_t>data[n - 1] << 16)) & \
        ((1ULL << (8 * n)) - 1)


cdef extern from *:
    """
    #if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    #define BYTEBPE_LITTLE_ENDIAN 1
    #else
    #define BYTEBPE_LITTLE_ENDIAN 0
    #endif
    /* The mask of a head word of n bytes (n = 0..8): one load, where a shift by 64 - 8n took four steps. */
    static const uint64_t BYTEBPE_HEAD_MASKS[9] = {
        0, 0xFFULL, 0xFFFFULL, 0xFFFFFFULL, 0xFFFFFFFFULL, 0xFFFFFFFFFFULL, 0xFFFFFFFFFFFFULL,
        0xFFFFFFFFFFFFFFULL, 0xFFFFFFFFFFFFFFFFULL};
    """
    const bint BYTEBPE_LITTLE_ENDIAN
    const uint64_t BYTEBPE_HEAD_MASKS[9]


cdef inline uint64_t _head_word_of_8(const uint8_t* data, Py_ssize_t n) noexcept nogil:
    """`_head_word(data, n)` for n >= 1 where data[:8] is readable: one load and a mask, no branch on n
    (piece lengths vary at random, and the branches of `_head_word` mispredicted on them)."""
    if BYTEBPE_LITTLE_ENDIAN:
        return _load64(data) & BYTEBPE_HEAD_MASKS[n if n < 8 else 8]
    return _head_word(data, n)


cdef extern from "_piece_hash.h":
    const uint64_t BYTEBPE_HASH_LENGTH
    const uint64_t BYTEBPE_HASH_MIX
    const uint64_t BYTEBPE_HASH_FINAL


cdef inline uint64_t _hash_bytes(uint64_t head, const uint8_t* data, Py_ssize_t n) noexcept nogil:
    """64-bit hash of a byte string whose head word is `head`: word-at-a-time multiply-xorshift (the vector
    pass of _home_lookup.h computes the same for strings of up to 8 bytes)."""
    cdef uint64_t h = (head ^ (BYTEBPE_HASH_LENGTH * <uint64_t>n)) * BYTEBPE_HASH_MIX
    cdef Py_ssize_t offset = 8
    if n > 8:   # one test for the pieces of up to 8 bytes, most of them
        while offset + 8 < n:
            h = ((h ^ (h >> 31)) ^ _load64(data + offset)) * BYTEBPE_HASH_MIX
            offset += 8
        # The last 8 bytes: the word the loop stopped before, or one overlapping what it mixed in.
        h = ((h ^ (h >> 31)) ^ _load64(data + n - 8)) * BYTEBPE_HASH_MIX
    h ^= h >> 32
    h *= BYTEBPE_HASH_FINAL
    h ^= h >> 29
    return h
