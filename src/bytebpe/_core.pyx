# cython: language_level=3
# distutils: language = c++
"""Byte-pair merging over a C-level rank table: the compiled core of bytebpe. A map of this file.

Rules. tiktoken's (token rank): a piece that is itself a token is one lookup; otherwise start from single
bytes and merge the adjacent pair whose concatenation has the lowest rank, leftmost on ties, until no
adjacent pair is a token. HF `tokenizers`' (pair rank, `MergeTable.from_pair_merges`): merge the listed pair
with the lowest merge index; ids are decoupled from ranks. `_reference.py` states both in plain Python.

MergeTable (the vocabulary; shared read-only by every thread)
- Rank table: open addressing on a hash of the token bytes, a Bloom filter in front (`_maybe_token`: most
  candidate pairs of a long piece are not tokens). Built from a dict, a `.tiktoken` file
  (`from_tiktoken` / `_parse_tiktoken` in _tiktoken_format.pxi: in C, every offset checked) or a bundled
  vocabulary (`from_bundled`).
- Merge strategies, chosen by piece length in `merge_piece` (thresholds are the enums below; their
  measurements are in benchmarks/README.md), each a module-level function of the table in its own included file:
  whole-piece lookup first; `_merge_by_scan` (_merge_scan.pxi) up to SCAN_MAX_BYTES (flat arrays on the
  stack, 4-wide minimum search, no allocation); `_merge_by_heap` (_merge_heap.pxi) below BUCKETS_MIN_BYTES
  (binary heap, lazy invalidation, O(n log n)); `_merge_by_buckets` (_merge_buckets.pxi) from
  BUCKETS_MIN_BYTES (one bucket per rank: a long piece has many pairs of few ranks; shorter pieces merge
  faster by heap, so buckets start at 256); `_merge_run`
  (_merge_run.pxi) from RUN_MIN_BYTES for pieces that repeat one byte (runs of equal tokens, in memory of a
  few runs rather than of every byte); from WINDOWS_MIN_BYTES, `_merge_in_windows` (_merge_windows.pxi)
  first cuts the piece where no token can span the cut and merges each window alone, so that the state is
  a window's, not the piece's (the proof is in that file). `_merge_by_pair_rank` (_merge_pair_rank.pxi) is the pair-rank
  rule's scan/heap, with a dense table of the 65,536 byte pairs for its first lookups, a Bloom filter of
  the listed pairs in front of the pair table (`_maybe_merge`), and both neighbours' lookups prefetched
  before either is read (the pair table is megabytes: its lookups miss the cache); it uses `_merge_run`
  too, whose pair lookup follows the table's rule. Included rather than cimported from modules of their
  own, so that their calls into the table's lookups stay direct and inlinable.
- `_pair_rank` memo: a direct-mapped (left, right) -> rank memo per call, so a pair met again costs one
  compare instead of hashing the concatenation.
- Character starts (_merge_char_starts.pxi): the characters of 2-3 bytes that may enter `_merge_by_scan`
  and `_merge_by_heap` already merged into their token, with the proof that the ids stay the same; built
  per table after CHAR_STARTS_AFTER_CHARS characters of non-ASCII text. CJK pieces start from ~40% fewer
  parts.

Per-call state (stack or the call's own vectors; nothing shared, no locks)
- MergeCache: recently merged pieces -> ids for one call (most of the bytes needing merges in prose belong
  to a piece seen earlier in the same text; benchmarks/README.md), direct-mapped on the hash the whole lookup computed,
  for the pieces the persistent cache does not take (`_piece_cacheable`); and the call's pair memo.
- `_encode_scanned`: the fused loop for compiled scanners: scan SCAN_BATCH pieces, look up, merge, append.

Persistent state
- PieceCache (`_piece_cache.h`): pieces -> ids across calls, bounded in bytes: one cache line per entry
  with the piece and its ids inline, a sequence lock per entry (no lock on a lookup), stored on first
  sight, replaced by a CLOCK per pair of entries; DEFAULT_PIECE_CACHE_BYTES says why 4 MiB, and
  _piece_cacheable which pieces it takes.

Memory placement: the tables read at random on every piece (the token table, pair_merges, the merge
cache's slots, the piece cache's table) are allocated on huge pages where the kernel allows
(`_huge_pages.h`, TableAllocator): on 4 KiB pages their lookups also missed the TLB.

CoreBPE (an encoding: a MergeTable plus special tokens and decoding)
- The disallowed-token check, when the Python layer defers it (`deferred_check`): memchr over the gathered
  UTF-8 for the prefix all disallowed tokens share, the regex only where it occurs (`_holds_anchor`).
- Gathering, with the GIL: the special-token split, then either a compiled `Scanner`'s segments
  (`_scan_group`) or a Python pre-tokenizer's pieces as spans into objects held in `owners` for the whole
  call (`_merge_group`). The ownership rule: every pointer read without the GIL comes from an object this
  call holds until it returns.
- Merging, without the GIL once there are RELEASE_GIL_MIN_BYTES; batches in groups of BATCH_GROUP_BYTES.
- Output: lists reuse the table's int objects (`_to_list`); numpy arrays take over the id vector
  (`_to_numpy`, no copy) or, up to NUMPY_COPY_MAX_IDS ids, get a copy in a new array (cheaper than lending).
  Decoding joins token bytes in one buffer.
"""
cimport cython
from cpython.buffer cimport (PyBUF_C_CONTIGUOUS, PyBUF_FORMAT, PyBUF_WRITABLE, PyBuffer_Release,
                             PyObject_GetBuffer)
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from cpython.list cimport PyList_GET_ITEM, PyList_GET_SIZE, PyList_New, PyList_SET_ITEM
from cpython.long cimport PyLong_AsLongLongAndOverflow, PyLong_FromUnsignedLong
from cpython.ref cimport PyObject, Py_INCREF
cdef extern from "Python.h":
    void PyObject_GC_UnTrack(void* op)    # safe on an untracked object too
from cpython.sequence cimport PySequence_Fast_ITEMS
from libc.stdint cimport int32_t, int64_t, uint8_t, uint32_t, uint64_t
from libc.string cimport memchr, memcmp, memcpy
from libcpp.queue cimport priority_queue
from libcpp.unordered_map cimport unordered_map
from libcpp.vector cimport vector
from libcpp.algorithm cimport lower_bound
from libcpp.atomic cimport atomic
from cpython.exc cimport PyErr_CheckSignals
from libc.stdlib cimport free, malloc

cdef extern from "<thread>" nogil:
    void _yield_thread "std::this_thread::yield"()

from bytebpe._pretokenize cimport ScanSpec, Scanner, scan_pieces, scan_pieces_seen

from ._shared cimport (
    MAX_TOKEN_ID, SCAN_BATCH, PyUnicode_AsUTF8AndSize, _decode, _hash_bytes, _head_word, _head_word_of_8, _load32,
    _load64, _utf8_view, _utf8_view_of_held, bytebpe_utf8_wide, bytebpe_utf8_wide_supported, fill_vector,
    BYTEBPE_LITTLE_ENDIAN,
)

import os
import weakref

cdef extern from "Python.h":
    bint PyUnicode_IS_ASCII(object text)
    Py_ssize_t PyUnicode_GET_LENGTH(object text)
    bint PyCapsule_CheckExact(object o)
    void* PyCapsule_GetPointer(object capsule, const char* name) except? NULL

cdef extern from *:
    """
    typedef unsigned int (*AbiVersion)(void);
    typedef PyObject* (*NewArrayFromDescr)(PyObject*, PyObject*, int, const Py_ssize_t*, const Py_ssize_t*,
                                             void*, int, PyObject*);
    static inline PyObject* bytebpe_steal(PyObject* o) { return o; }
    """
    ctypedef unsigned int (*AbiVersion)() noexcept
    ctypedef PyObject* (*NewArrayFromDescr)(PyObject*, PyObject*, int, const Py_ssize_t*, const Py_ssize_t*,
                                           void*, int, PyObject*) noexcept
    object _steal "bytebpe_steal"(PyObject* o)

cdef extern from *:
    # A hint to start loading a cache line now; it never faults, whatever the address.
    void __builtin_prefetch(const void* address) noexcept nogil

cdef extern from *:
    """
    /* The head of numpy's array object: its data pointer follows the object header, in numpy 1.x and 2.x
       alike (PyArrayObject_fields; PyArray_DATA reads it there). _load_numpy checks it on a real array. */
    typedef struct { PyObject_HEAD char* data; } bytebpe_ndarray_head;
    """
    ctypedef struct bytebpe_ndarray_head:
        char* data

cdef extern from "_home_lookup.h" nogil:
    enum:
        BYTEBPE_LOOKUP_SCALAR
        BYTEBPE_LOOKUP_AVX512
        BYTEBPE_LOOKUP_COUNT
    int bytebpe_lookup_isa_supported(int isa)
    size_t bytebpe_hash_pieces_avx512(const uint8_t* data, int64_t n, int64_t first, const int64_t* ends,
                                      size_t count, const Slot* slots, uint64_t mask, uint64_t* heads,
                                      uint64_t* hashes, uint32_t* home_lengths, uint32_t* rest)
    size_t bytebpe_home_ranks_avx512(const Slot* slots, uint64_t mask, const uint64_t* heads,
                                     const uint64_t* hashes, const uint32_t* home_lengths, size_t count,
                                     uint32_t* ranks, uint32_t* other)

cdef extern from "_piece_cache.h" namespace "bytebpe" nogil:
    # The persistent piece cache (the header explains its structure, admission rule and locking).
    cdef cppclass PieceCacheCore "bytebpe::PieceCache":
        PieceCacheCore(size_t max_bytes) except +
        int lookup(uint64_t h, const uint64_t* key, uint32_t n, uint32_t* ids, bint mark) noexcept
        int insert(uint64_t h, const uint64_t* key, uint32_t n, const uint32_t* ids, uint32_t n_ids) noexcept
        void stats(PieceCacheStats* out) noexcept
        void reset_after_fork() noexcept
        void add_counts(uint64_t lookups, uint64_t hits, uint64_t admitted, uint64_t evictions) noexcept
        void prefetch(uint64_t h) noexcept
    cdef struct PieceCacheStats "bytebpe::PieceCacheStats":
        size_t max_bytes
        size_t bytes
        uint64_t entries
        uint64_t lookups
        uint64_t hits
        uint64_t admitted
        uint64_t evictions
    const uint32_t PIECE_CACHE_MAX_PIECE
    const uint32_t PIECE_CACHE_MAX_IDS
    const uint32_t PIECE_CACHE_MARK_EVERY
    const uint32_t PIECE_CACHE_KEY_WORDS
    const int PIECE_CACHE_MISS
    const int PIECE_CACHE_DECLINED
    const int PIECE_CACHE_REPLACED
    void piece_cache_key(const uint8_t* data, uint32_t n, size_t readable, uint64_t* key) noexcept


# The thresholds below were chosen by measurement; each comment says what the constant trades off, and
# benchmarks/README.md ("The compiled core's constants") has the figures, dates and commands.

# Pieces up to this many bytes merge by flat scan; longer ones by heap (the scan's O(n^2) loses only above it).
cdef enum:
    SCAN_MAX_BYTES = 64     # positions (0..64, the end included) fit in a byte, and below it in 6 bits
# An empty PairMemoEntry: ranks stay below 2**31, so no real (left, right) pair is all ones.
cdef uint64_t NO_PAIR = 0xFFFFFFFFFFFFFFFFULL
# Pieces of at least this many bytes merge by rank buckets instead of one heap (see _merge_by_buckets): a
# million-byte piece of few ranks walks a deep heap per merge; shorter pieces merge faster by heap.
cdef enum:
    BUCKETS_MIN_BYTES = 256
# A part offset that names no part (pieces of 2**32 - 1 bytes or more are refused).
cdef enum:
    NO_PART = 0xFFFFFFFF
# Pieces of at least this many bytes that repeat one byte merge as runs of equal tokens (see _merge_run), in
# memory of a few runs instead of 16 bytes per byte. Checking a piece for it reads its bytes once.
cdef enum:
    RUN_MIN_BYTES = 4096
    RUN_MAX_RUNS = 64           # more runs than this: the general path takes over
    RUN_MAX_STEPS = 4096        # far above the steps any named vocabulary takes
# Gathered input of at least this many bytes is merged with the GIL released; below it, releasing and
# re-taking the GIL costs more than another thread could gain.
cdef enum:
    RELEASE_GIL_MIN_BYTES = 4096
# A batch is gathered and merged in groups of about this many bytes of text: small enough that the
# pieces are still in cache when merged, large enough that releasing the GIL once per group is free.
cdef enum:
    BATCH_GROUP_BYTES = 65536
# A batch encoded by several threads into one array (FlatBatch) is cut into groups of 1 / (FLAT_GROUP_SHARE *
# threads) of the bytes still to come, of at least FLAT_GROUP_MIN_BYTES (each group is a hand-over).
cdef enum:
    FLAT_GROUP_SHARE = 4
    FLAT_GROUP_MIN_BYTES = 8192
# FlatBatch.assembly: the result's ids not yet allocated, being allocated, allocated (threads copy groups
# in), or refused by malloc.
cdef enum:
    ASSEMBLY_NOT_STARTED = 0
    ASSEMBLY_ALLOCATING = 1
    ASSEMBLY_COPYING = 2
    ASSEMBLY_NO_MEMORY = 3
# Dense id tables are allowed to be at most this many times (plus a constant) larger than the token count.
cdef enum:
    MAX_ID_SPARSITY = 64
# Building a table, tokens are hashed this many ahead of their insert and their slots prefetched.
cdef enum:
    INDEX_AHEAD = 16
# The table's character starts (_merge_char_starts.pxi) are built once this many characters of text that is
# not all ASCII have been encoded with it: the build reads every token (milliseconds), which a program that
# encodes one short string should not pay; CJK text repays it within a few hundred KB.
cdef enum:
    CHAR_STARTS_AFTER_CHARS = 262144
# Results of up to this many ids are copied into a fresh numpy array instead of lent to one (_to_numpy): the
# copy is cheaper than lending for short results, and below the noise of the encode itself at this size.
cdef enum:
    NUMPY_COPY_MAX_IDS = 4096
# The home-slot length of a piece longer than 8 bytes in the fused loop (_encode_scanned), which no slot's
# `length` equals: with tails in the slots it is a length of 1-255 | an offset < 2**24 - length, shifted by 8,
# so never all ones; otherwise a token's length, below 2**31; an empty slot's is 0. (Not 256: a token of 256
# bytes has that length in the other layout.)
cdef enum:
    HOME_NO_MATCH = 0xFFFFFFFF
# Calls (and batch groups, BATCH_GROUP_BYTES) of up to this many bytes send the pieces that end in a byte of a
# multi-byte character (words of Cyrillic, Greek, Arabic, CJK, ...) to the persistent piece cache, which
# carries a word from one document to the next; larger calls send them to the call's own merge cache
# (_piece_cacheable), made for one call, which stores every piece and points into the text.
cdef enum:
    MULTIBYTE_PERSIST_MAX_CALL_BYTES = 131072
# The merge cache (see MergeCache): at most this many slots, at least one per CACHE_BYTES_PER_SLOT bytes of
# input (so clearing it costs ~1% of encoding the input), and the ids it may hold before starting afresh.
# It starts with at most CACHE_FIRST_SLOTS and grows fourfold whenever it has had an eighth as many stores as
# it has slots, up to that size: with the persistent cache on, the call's cache takes only the pieces that
# cache does not, and a table made at full size for those evicted the token table's lines from the CPU's
# caches. (Growing later, at half load, lost more of what the small tables held: benchmarks/README.md.)
cdef enum:
    CACHE_MAX_SLOTS = 65536
    CACHE_FIRST_SLOTS = 4096
    CACHE_BYTES_PER_SLOT = 32
    CACHE_MAX_IDS = 262144
# The pair memo of a call: two entries per merge-cache slot, but at most 2**MEMO_MAX_BITS (16 bytes each:
# 256 KiB, what an L2 cache holds); a larger memo's misses evict the token table's lines.
cdef enum:
    MEMO_MAX_BITS = 14


# The persistent piece cache's default bound, in bytes (BYTEBPE_PIECE_CACHE_BYTES overrides it; see
# PieceCache and _piece_cache.h): 65,536 entries. A larger table holds only a little more of a corpus's
# pieces and costs wall time even so: its pages are zeroed when the table is made and its lines fall out of
# the CPU's caches.
DEFAULT_PIECE_CACHE_BYTES = 4 * 1024 * 1024
PIECE_CACHE_BYTES_ENV = "BYTEBPE_PIECE_CACHE_BYTES"


# The first bytes of a bundled vocabulary's decoded content (see bundled.py, which writes it).
BUNDLED_VOCAB_MAGIC = b"bytebpe vocab 1\n"


# The shared limits (_shared.pxd) and the merge thresholds above, as Python ints: training.py and the tests
# read them here. (A C constant cannot also be a Python name of the module, hence globals().)
for _name, _value in (("MAX_TOKEN_ID", MAX_TOKEN_ID), ("SCAN_BATCH", SCAN_BATCH),
                      ("SCAN_MAX_BYTES", SCAN_MAX_BYTES), ("BUCKETS_MIN_BYTES", BUCKETS_MIN_BYTES),
                      ("WINDOWS_MIN_BYTES", WINDOWS_MIN_BYTES), ("WINDOW_BYTES", WINDOW_BYTES)):
    globals()[_name] = _value


class MessageKeyError(KeyError, ValueError):
    """A `KeyError` (tiktoken raises those) that is also a `ValueError`, so that either ``except`` clause
    catches it, and prints its message as given: KeyError.__str__ would repr() it and wrap it in quotes.
    The base of bytebpe's lookup errors (here and in registry.py)."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


class InvalidTokenError(MessageKeyError):
    """A token id that is negative, beyond the vocabulary, or in a gap of it (a KeyError and a ValueError)."""


class TokenIdOverflowError(InvalidTokenError, OverflowError):
    """A token id that is not a 32-bit unsigned integer (negative, or 2**32 and above).

    tiktoken raises `OverflowError` for these (its ids are u32), so this is one too, as well as an
    `InvalidTokenError` like every other bad id.
    """


cdef struct Span:
    # A stretch of gathered text. With the regex engine, one piece: its UTF-8 bytes, and its id when the
    # whole piece is a token, NO_RANK when it still needs merging. With a compiled scanner, an ordinary
    # stretch of text to scan (rank NO_RANK). Either way, a special token is a span with no bytes and its id.
    const uint8_t* data
    Py_ssize_t size
    Rank rank


cdef inline uint64_t _bloom_bits(uint64_t h) noexcept nogil:
    """The two bits a hash sets in its word of the Bloom filter (from bits the word index does not use)."""
    return (1ULL << (h >> 58)) | (1ULL << ((h >> 52) & 63))


cdef inline uint64_t _table_capacity(Py_ssize_t n_keys) noexcept:
    """Slots for `n_keys` keys at a load factor of at most 1/2: a power of two, so masking replaces modulo."""
    cdef uint64_t capacity = 16
    while capacity < <uint64_t>(2 * n_keys):
        capacity <<= 1
    return capacity


cdef inline bint _same_tail(const uint8_t* a, const uint8_t* b, Py_ssize_t n) noexcept nogil:
    """a[8:n] == b[8:n] for n > 8, in 8-byte words (the last one overlapping): tokens are short, and a
    library memcmp call cost more than the comparison."""
    cdef Py_ssize_t offset = 8
    while offset + 8 < n:
        if _load64(a + offset) != _load64(b + offset):
            return False
        offset += 8
    return _load64(a + n - 8) == _load64(b + n - 8)


cdef inline bint _same_bytes(const uint8_t* a, const uint8_t* b, Py_ssize_t n) noexcept nogil:
    """a[:n] == b[:n] for n >= 1 (below 8 bytes the head word holds every byte)."""
    if n < 8:
        return _head_word(a, n) == _head_word(b, n)
    return _load64(a) == _load64(b) and _same_tail(a, b, n)


cdef inline Rank _probe(const Slot* slots, uint64_t mask, uint64_t h, uint64_t head, const uint8_t* data,
                        Py_ssize_t n, const uint8_t* blob, const uint32_t* token_start,
                        uint32_t length_mask) noexcept nogil:
    """Find the token `data[:n]` (hash `h`, first word `head`) in one table; NO_RANK when absent."""
    cdef uint64_t i = h & mask
    cdef const Slot* slot
    cdef Rank rank
    cdef uint32_t tail
    while True:
        slot = slots + i
        if slot.rank_plus_one == 0:
            return NO_RANK
        if slot.head == head and (slot.length & length_mask) == n:
            rank = slot.rank_plus_one - 1
            if n <= 8:
                return rank
            tail = slot.length >> 8 if length_mask == 0xFF else token_start[rank]
            if _same_tail(blob + tail, data, n):
                return rank
        i = (i + 1) & mask


@cython.final
cdef class MergeTable:
    """The mergeable tokens of an encoding: bytes -> rank lookups and the BPE merge loop.

    Built once from a ``dict[bytes, int]`` and immutable afterwards, so it is shared freely between
    encodings and threads.
    """

    def __cinit__(self, mergeable_ranks=None):
        if mergeable_ranks is None:
            return      # an empty shell for a factory (from_tiktoken) to fill in
        if not isinstance(mergeable_ranks, dict):
            mergeable_ranks = dict(mergeable_ranks)
        cdef Py_ssize_t total_bytes = 0
        cdef Py_ssize_t max_rank = -1
        cdef Py_ssize_t rank
        # Validated (token, rank) pairs in a private list: the second pass writes at the ranks the first
        # one bounded, so it must see exactly the same ones (an int subclass's __int__ could change the
        # dict in between).
        cdef list items = []
        cdef bytes token_bytes
        for token, value in (<dict>mergeable_ranks).items():
            if not isinstance(token, bytes):
                raise TypeError(f"mergeable_ranks keys must be bytes, got {type(token).__name__}: {token!r}")
            if not isinstance(value, int) or isinstance(value, bool):
                raise TypeError(f"rank of {token!r} must be an int, got {type(value).__name__}")
            token_bytes = token if type(token) is bytes else bytes(token)
            value = value if type(value) is int else int(value)    # reuse the dict's int objects
            if not 0 <= value <= MAX_TOKEN_ID:
                raise ValueError(f"rank of {token!r} is {value}, outside 0..{MAX_TOKEN_ID}")
            if PyBytes_GET_SIZE(token_bytes) == 0:
                raise ValueError("the empty byte string cannot be a token")
            rank = value
            items.append((token_bytes, value))
            total_bytes += PyBytes_GET_SIZE(token_bytes)
            if rank > max_rank:
                max_rank = rank
        self._check_size(len(items), max_rank, total_bytes)
        self.rank_objects = [None] * (max_rank + 1)
        fill_vector(self.token_start, max_rank + 1, 0)
        fill_vector(self.token_len, max_rank + 1, -1)
        self.blob.reserve(total_bytes)
        self.ranks_dict = mergeable_ranks
        cdef const uint8_t* data
        cdef Py_ssize_t n
        for token_bytes, value in items:
            rank = value
            if self.token_len[rank] != -1:
                raise ValueError(
                    f"rank {rank} is given to two tokens: {self._token_bytes(rank)!r} and {token_bytes!r}")
            data = <const uint8_t*>PyBytes_AS_STRING(token_bytes)
            n = PyBytes_GET_SIZE(token_bytes)
            self.rank_objects[rank] = value
            self.token_start[rank] = self.blob.size()
            self.token_len[rank] = <int32_t>n
            self.blob.insert(self.blob.end(), data, data + n)
        self._index()   # keys of a dict: never a duplicate

    @staticmethod
    def from_tiktoken(const uint8_t[::1] contents not None):
        """Parse a `.tiktoken` file (``base64(token) SPACE rank`` lines) straight into a table, in C.

        Returns None for anything but a plainly valid file (bad base64, a rank that does not increase, a
        duplicate token, stray characters...): the caller then reads it with `vocab_io.read_tiktoken_bpe`,
        which accepts or explains it line by line. So this fast path can only agree with that reader.
        """
        cdef MergeTable table = MergeTable()
        cdef Py_ssize_t size = contents.shape[0]
        cdef const uint8_t* text = &contents[0] if size else NULL
        cdef Py_ssize_t n_tokens, max_rank, total_bytes
        cdef int ok
        with nogil:
            ok = _parse_tiktoken(table, text, size)
        if not ok:
            return None
        n_tokens = 0
        for rank in range(table.token_len.size()):
            n_tokens += table.token_len[rank] >= 0
        max_rank = <Py_ssize_t>table.token_len.size() - 1
        total_bytes = table.blob.size()
        if n_tokens == 0 or max_rank + 1 > MAX_ID_SPARSITY * n_tokens + 65536:
            return None
        table._check_size(n_tokens, max_rank, total_bytes)
        table.rank_objects = list(range(max_rank + 1))
        if n_tokens != max_rank + 1:
            for rank in range(max_rank + 1):
                if table.token_len[rank] < 0:
                    table.rank_objects[rank] = None
        if not table._index():
            return None     # a duplicate token
        return table

    @staticmethod
    def from_bundled(const uint8_t[::1] content not None):
        """A table from the decoded content of a bundled vocabulary (layout in bundled.py), in C.

        Raises ValueError at the first inconsistency. Every length and offset is checked against the size of
        `content` before anything is read through it, so a damaged file cannot make this read outside it.
        `content` (its buffer held by the memoryview for this call) is the only memory read.
        """
        cdef MergeTable table = MergeTable()
        cdef Py_ssize_t size = content.shape[0]
        cdef Py_ssize_t magic_size = len(BUNDLED_VOCAB_MAGIC)
        cdef Py_ssize_t header = magic_size + 4
        cdef Py_ssize_t n_ranks, rank, total_bytes = 0, n_tokens = 0, first_token
        cdef uint32_t offset = 0
        if size < header or bytes(content[:magic_size]) != BUNDLED_VOCAB_MAGIC:
            raise ValueError("not a bundled vocabulary (wrong format marker)")
        n_ranks = (<Py_ssize_t>content[magic_size] | <Py_ssize_t>content[magic_size + 1] << 8
                   | <Py_ssize_t>content[magic_size + 2] << 16 | <Py_ssize_t>content[magic_size + 3] << 24)
        if n_ranks < 1 or n_ranks > <Py_ssize_t>MAX_TOKEN_ID + 1:
            raise ValueError(f"bundled vocabulary: {n_ranks} ranks is out of range")
        if n_ranks > size - header:
            raise ValueError(f"bundled vocabulary: {n_ranks} token lengths announced, {size - header} bytes left")
        first_token = header + n_ranks
        for rank in range(n_ranks):
            total_bytes += content[header + rank]
            n_tokens += content[header + rank] != 0
        if total_bytes != size - first_token:
            raise ValueError(f"bundled vocabulary: the token lengths add up to {total_bytes} bytes, "
                             f"but {size - first_token} bytes of tokens follow them")
        if n_tokens == 0:
            raise ValueError("bundled vocabulary: no tokens")
        table._check_size(n_tokens, n_ranks - 1, total_bytes)
        table.blob.assign(&content[0] + first_token, &content[0] + size)
        fill_vector(table.token_start, n_ranks, 0)
        fill_vector(table.token_len, n_ranks, -1)
        table.rank_objects = list(range(n_ranks))
        for rank in range(n_ranks):
            if content[header + rank] == 0:     # a gap in the ranks
                table.rank_objects[rank] = None
                continue
            table.token_start[rank] = offset
            table.token_len[rank] = content[header + rank]
            offset += content[header + rank]
        if not table._index():
            raise ValueError("bundled vocabulary: a token appears twice")
        return table

    cdef int _check_size(self, Py_ssize_t n_tokens, Py_ssize_t max_rank, Py_ssize_t total_bytes) except -1:
        if total_bytes > 0xFFFFFFFF:
            raise ValueError("mergeable tokens hold more than 4 GiB of bytes")
        if max_rank + 1 > MAX_ID_SPARSITY * n_tokens + 65536:
            raise ValueError(f"ranks are too sparse: {n_tokens} tokens with ranks up to {max_rank}")
        self.n_tokens = n_tokens
        self.max_rank = max_rank
        return 0

    cdef bint _index(self) except -1:
        """Build the lookup structures from blob/token_start/token_len; False if a token appears twice."""
        cdef Py_ssize_t rank, n, ahead
        cdef const uint8_t* data
        cdef vector[uint64_t] hashes
        self.mask = _table_capacity(self.n_tokens) - 1
        fill_vector(self.slots, self.mask + 1, Slot(0, 0, 0))
        self.bloom_mask = _table_capacity(self.n_tokens) // 8 - 1
        fill_vector(self.bloom, self.bloom_mask + 1, 0)
        for rank in range(256):
            self.byte_rank[rank] = NO_RANK
        fill_vector(self.pair_of_bytes_rank, 65536, NO_RANK)
        self.max_token_len = 0
        for rank in range(self.max_rank + 1):
            self.max_token_len = max(self.max_token_len, self.token_len[rank])
        # Tails in the slots (Slot) where lengths fit 8 bits and offsets the other 24.
        self.length_mask = 0xFF if self.max_token_len < 256 and self.blob.size() < (1 << 24) else 0xFFFFFFFF
        self.max_token_len = 0
        # The slots are megabytes and each insert lands at random: hash INDEX_AHEAD tokens ahead and
        # prefetch their slots, so that the misses overlap.
        hashes.resize(self.max_rank + 1)
        for rank in range(self.max_rank + 1):
            if self.token_len[rank] >= 0:
                hashes[rank] = self._hash_of(rank)
        for rank in range(self.max_rank + 1):
            ahead = rank + INDEX_AHEAD
            if ahead <= self.max_rank:
                __builtin_prefetch(self.slots.data() + (hashes[ahead] & self.mask))
            n = self.token_len[rank]
            if n < 0:
                continue
            if n > self.max_token_len:
                self.max_token_len = n
            if not self._insert(<Rank>rank, hashes[rank]):
                return False
            data = self.blob.data() + self.token_start[rank]
            if n == 1:
                self.byte_rank[data[0]] = <Rank>rank
            elif n == 2:
                self.pair_of_bytes_rank[data[0] << 8 | data[1]] = <Rank>rank
        return True

    def build_char_starts(self):
        """Build the table's character starts now (_merge_char_starts.pxi) instead of after
        CHAR_STARTS_AFTER_CHARS characters of non-ASCII text: for tests and benchmarks. Returns how many
        characters may enter the merge loop whole."""
        if not self.char_starts_built:
            _build_char_starts(self)
        return sum(1 for entry in self.char_starts if entry)

    def ranks(self):
        """The tokens as a ``dict[bytes, int]`` (token bytes -> rank), built on first use and then shared:
        treat it as read-only."""
        if self.ranks_dict is None:
            self.ranks_dict = self.to_dict()
        return self.ranks_dict

    @property
    def ranks_built(self):
        """Whether the dict of `ranks()` exists yet (a table read from a file has none until asked)."""
        return self.ranks_dict is not None

    # ---- the persistent piece cache ------------------------------------------------------------------

    cdef object current_piece_cache(self):
        """The piece cache encode calls use now (None when off), made with the default bound on first use.

        A call keeps what this returns in a local for its whole run: `set_piece_cache_bytes` may replace the
        table's cache meanwhile, and the old one must stay alive (the ownership rule) until its last user
        is done.
        """
        if not self.piece_cache_configured:
            self._set_piece_cache(_default_piece_cache_bytes())
        return self.piece_cache

    cdef int _set_piece_cache(self, Py_ssize_t max_bytes) except -1:
        self.piece_cache = PieceCache(max_bytes) if max_bytes > 0 else None
        self.piece_cache_configured = True
        return 0

    def set_piece_cache_bytes(self, max_bytes):
        """Bound the persistent piece cache to `max_bytes` (0 turns it off); what it held is dropped."""
        if not isinstance(max_bytes, int) or isinstance(max_bytes, bool):
            raise TypeError(f"max_bytes must be an int, got {type(max_bytes).__name__}")
        if max_bytes < 0:
            raise ValueError(f"max_bytes must be >= 0, got {max_bytes}")
        self._set_piece_cache(min(max_bytes, 1 << 50))

    def _swap_piece_cache(self, cache):
        """Put `cache` (a PieceCache, or None for off) in place of the current one and return that one.

        For side-by-side measurements: the same table with its cache on and off, without emptying it."""
        if cache is not None and not isinstance(cache, PieceCache):
            raise TypeError(f"expected a PieceCache or None, got {type(cache).__name__}")
        previous = self.current_piece_cache()
        self.piece_cache = cache
        return previous

    def piece_cache_info(self):
        """The piece cache's figures as a dict: max_bytes, bytes (allocated now, never above max_bytes),
        entries, lookups, hits, admitted (pieces stored), evictions (entries replaced to store one). All zero
        when it is off."""
        cdef PieceCache cache = self.current_piece_cache()
        cdef PieceCacheStats stats
        if cache is None:
            return dict(max_bytes=0, bytes=0, entries=0, lookups=0, hits=0, admitted=0, evictions=0)
        cache.core.stats(&stats)      # counters only: no lock, no walk over the table
        return dict(max_bytes=stats.max_bytes, bytes=stats.bytes, entries=stats.entries, lookups=stats.lookups,
                    hits=stats.hits, admitted=stats.admitted, evictions=stats.evictions)

    def to_dict(self):
        """The tokens as a new ``dict[bytes, int]`` (token bytes -> rank)."""
        cdef dict ranks = {}
        cdef Py_ssize_t rank
        for rank in range(self.max_rank + 1):
            if self.token_len[rank] >= 0:
                ranks[self._token_bytes(rank)] = self.rank_objects[rank]
        return ranks

    cdef bint _insert(self, Rank rank, uint64_t h) noexcept:
        """Put token `rank` (hash `h`) in the table; False, and nothing stored, when an equal token is there."""
        cdef const uint8_t* data = self.blob.data() + self.token_start[rank]
        cdef Py_ssize_t n = self.token_len[rank]
        cdef uint64_t head = _head_word(data, n)
        cdef uint64_t i = h & self.mask
        cdef uint32_t length = <uint32_t>n
        cdef const Slot* slot
        if n > 8 and self.length_mask == 0xFF:
            length |= self.token_start[rank] << 8
        while self.slots[i].rank_plus_one != 0:
            slot = &self.slots[i]
            if slot.head == head and (slot.length & self.length_mask) == n and (
                    n <= 8 or _same_tail(self.blob.data() + (slot.length >> 8 if self.length_mask == 0xFF
                                                             else self.token_start[slot.rank_plus_one - 1]),
                                         data, n)):
                return False
            i = (i + 1) & self.mask
        self.slots[i] = Slot(head, rank + 1, length)
        self.bloom[(h >> 20) & self.bloom_mask] |= _bloom_bits(h)
        return True

    cdef uint64_t _hash_of(self, Py_ssize_t rank) noexcept:
        cdef const uint8_t* data = self.blob.data() + self.token_start[rank]
        return _hash_bytes(_head_word(data, self.token_len[rank]), data, self.token_len[rank])

    cdef inline bint _maybe_token(self, uint64_t h) noexcept nogil:
        """False when the Bloom filter rules out every token with hash `h`."""
        cdef uint64_t bits = _bloom_bits(h)
        return (self.bloom[(h >> 20) & self.bloom_mask] & bits) == bits

    cdef Rank rank_of(self, const uint8_t* data, Py_ssize_t n) noexcept nogil:
        # One unsigned comparison for both n > max_token_len and n == 0 (an empty span has no byte to read,
        # and no token is empty).
        if <size_t>(n - 1) >= <size_t>self.max_token_len:
            return NO_RANK
        if n <= 2:
            return self.byte_rank[data[0]] if n == 1 else self.pair_of_bytes_rank[data[0] << 8 | data[1]]
        cdef uint64_t head = _head_word(data, n)
        cdef uint64_t h = _hash_bytes(head, data, n)
        # Start loading the table's slot now, so that its likely cache miss overlaps the Bloom filter test
        # instead of following it.
        __builtin_prefetch(self.slots.data() + (h & self.mask))
        if not self._maybe_token(h):
            return NO_RANK
        return self.rank_of_hashed(data, n, head, h)

    cdef inline Rank rank_of_hashed(self, const uint8_t* data, Py_ssize_t n, uint64_t head,
                                    uint64_t h) noexcept nogil:
        # No Bloom filter here: callers ask about whole pieces, which mostly are tokens.
        return _probe(self.slots.data(), self.mask, h, head, data, n, self.blob.data(), self.token_start.data(),
                      self.length_mask)

    cdef int encode_piece(self, const uint8_t* data, Py_ssize_t n, vector[Rank]& out) except -1 nogil:
        if n <= 0:     # a user pattern may match the empty string; it holds no tokens
            return 0
        cdef Rank whole = self.rank_of(data, n)
        if whole != NO_RANK:
            out.push_back(whole)
            return 0
        return self.merge_piece(data, n, out, NULL)

    cdef int merge_piece(self, const uint8_t* data, Py_ssize_t n, vector[Rank]& out,
                         PairMemo* memo) except -1 nogil:
        if n <= 0:
            return 0
        if self.by_pair_rank:   # one predictable branch per merged piece for tiktoken's rule
            if n >= WINDOWS_MIN_BYTES:
                return _merge_in_windows(self, data, n, out, memo)
            return _merge_by_pair_rank(self, data, n, out)
        if n <= SCAN_MAX_BYTES:
            return _merge_by_scan(self, data, n, out, memo)
        if n >= WINDOWS_MIN_BYTES:
            return _merge_in_windows(self, data, n, out, memo)
        return self.merge_whole(data, n, out, memo)

    cdef int merge_whole(self, const uint8_t* data, Py_ssize_t n, vector[Rank]& out,
                         PairMemo* memo) except -1 nogil:
        if n <= 0:
            return 0
        if self.by_pair_rank:
            return _merge_by_pair_rank(self, data, n, out)
        if n <= SCAN_MAX_BYTES:
            return _merge_by_scan(self, data, n, out, memo)
        if n >= NO_PART:
            # Parts are named by 32-bit offsets; a single piece of 4 GiB (one unbroken "word") is refused.
            with gil:
                raise ValueError(f"cannot encode a single pre-token of {n} bytes (the limit is 4 GiB - 1)")
        if n < BUCKETS_MIN_BYTES:
            return _merge_by_heap(self, data, n, out, memo)
        if n >= RUN_MIN_BYTES and _merge_run(self, data, n, out):
            return 0
        return _merge_by_buckets(self, data, n, out, memo)

    cdef inline Rank _pair_rank(self, PairMemo* memo, const uint8_t* data, Py_ssize_t n, Rank left,
                                Rank right) noexcept nogil:
        """rank_of(data[:n]), where data[:n] is token `left` followed by token `right`."""
        if memo == NULL or left == NO_RANK or right == NO_RANK:    # NO_RANK names no single byte string
            return self.rank_of(data, n)
        cdef uint64_t pair = (<uint64_t>left << 32) | right
        cdef PairMemoEntry* entry = &memo.entries[(pair * 0x9E3779B97F4A7C15ULL) >> memo.shift]
        if entry.pair != pair:
            entry.pair = pair
            entry.rank = self.rank_of(data, n)
        return entry.rank

    @staticmethod
    def from_pair_merges(mergeable_ranks, merges, bint ignore_merges=False, bint detect_token_rank=True):
        """A table that merges by pair rank, as HF `tokenizers`' BPE model does.

        `mergeable_ranks` maps token bytes to token ids; `merges` lists (left id, right id) pairs in
        priority order (a list, or a bytes of native uint32 pairs): merge i has rank i, and its result is the token of left's bytes followed by right's
        (ValueError when there is none). A pair listed twice keeps its last rank, as HF's map does. With
        `ignore_merges`, a piece that is itself a token is that token (HF's option); without it, a piece is
        always merged, and only the tokens the merges make from their own bytes are found whole.

        When the merges give tiktoken's ids on every input, with the ids as ranks (`_is_token_rank_rule`
        says when: the `tokenizer.json` of a tiktoken vocabulary, as HF's converter and bytebpe's exporter
        write it), the table merges by tiktoken's rule, the faster loop, and `by_pair_rank` is False.
        `detect_token_rank=False` keeps the pair-rank rule regardless.
        """
        cdef MergeTable table = MergeTable(mergeable_ranks)
        cdef Py_ssize_t i, left, right
        cdef Rank result
        cdef vector[Rank] triples       # left, right, result of each merge, in rank order
        cdef vector[uint8_t] joined     # the two tokens' bytes, one after the other
        cdef const uint8_t* blob
        cdef uint32_t packed_pair[2]
        # `merges` as bytes: native uint32 (left, right) pairs (what _load.merge_pair_ids makes of a file's).
        cdef bint packed = type(merges) is bytes
        if not packed:
            merges = list(merges)
        elif len(merges) % 8:
            raise ValueError(f"merges as bytes must be whole uint32 pairs, got {len(merges)} bytes")
        cdef Py_ssize_t count = len(merges) // 8 if packed else len(merges)
        triples.reserve(3 * count)
        for i in range(count):
            if packed:
                memcpy(packed_pair, PyBytes_AS_STRING(merges) + 8 * i, 8)
                left, right = packed_pair[0], packed_pair[1]
            else:
                pair = merges[i]
                try:
                    left, right = pair
                except (TypeError, ValueError):
                    raise ValueError(f"merge {i} must be a (left id, right id) pair, got {pair!r}") from None
            if left < 0 or left > table.max_rank or table.token_len[left] < 0:
                raise ValueError(f"merge {i} ({left}, {right}) names id {left}, which is not a token")
            if right < 0 or right > table.max_rank or table.token_len[right] < 0:
                raise ValueError(f"merge {i} ({left}, {right}) names id {right}, which is not a token")
            blob = table.blob.data()
            joined.assign(blob + table.token_start[left], blob + table.token_start[left] + table.token_len[left])
            joined.insert(joined.end(), blob + table.token_start[right],
                          blob + table.token_start[right] + table.token_len[right])
            result = table.rank_of(joined.data(), joined.size())
            if result == NO_RANK:
                raise ValueError(f"merge {i} ({left}, {right}) makes "
                                 f"{table._token_bytes(left) + table._token_bytes(right)!r}, which is not a token")
            triples.push_back(<Rank>left)
            triples.push_back(<Rank>right)
            triples.push_back(result)
        table._set_pair_merges(triples, ignore_merges, detect_token_rank)
        return table

    cdef int _set_pair_merges(self, const vector[Rank]& triples, bint ignore_merges,
                              bint detect_token_rank) except -1:
        """Make this table, just built from its tokens, merge by the merges `triples` lists (left id, right
        id, result id, each a token, the result's bytes the two parts'), merge i with rank i: the pair-rank
        rule, or tiktoken's where it gives the same ids (from_pair_merges says when)."""
        cdef Py_ssize_t i, n_merges = triples.size() // 3
        if n_merges > MAX_TOKEN_ID:
            raise ValueError(f"{n_merges} merges: at most {MAX_TOKEN_ID} are supported")
        cdef MergeTable table = self
        cdef int bits = 4
        while (1 << bits) < 2 * n_merges:
            bits += 1
        fill_vector(table.pair_merges, 1 << bits, PairMerge(NO_PAIR, 0, 0))
        table.pair_shift = 64 - bits
        cdef uint64_t key, slot, mask = (1 << bits) - 1
        for i in range(n_merges):
            key = (<uint64_t>triples[3 * i] << 32) | <uint64_t>triples[3 * i + 1]
            slot = (key * 0x9E3779B97F4A7C15ULL) >> table.pair_shift
            while table.pair_merges[slot].pair != NO_PAIR and table.pair_merges[slot].pair != key:
                slot = (slot + 1) & mask
            table.pair_merges[slot] = PairMerge(key, <Rank>i, triples[3 * i + 2])   # a repeated pair: the last rank wins
        # The filter in front of the table: 16 bits per merge (DeepSeek: 256 KiB, within L2; the table is
        # 4 MiB), so ~1 pair in 16 that is not listed passes it and probes the table.
        bits = 6
        while (1 << bits) < 16 * n_merges:
            bits += 1
        fill_vector(table.pair_bloom, 1 << (bits - 6), 0)
        table.pair_bloom_shift = 64 - bits
        for i in range(n_merges):
            key = ((<uint64_t>triples[3 * i] << 32) | <uint64_t>triples[3 * i + 1]) * 0x9E3779B97F4A7C15ULL \
                >> table.pair_bloom_shift
            table.pair_bloom[key >> 6] |= 1ULL << (key & 63)
        # The first lookups of every piece, as one array read (as pair_of_bytes_rank is for tiktoken's rule).
        fill_vector(table.byte_pair_merges, 65536, PairMerge(NO_PAIR, 0, 0))
        # (From the merges of two single bytes: a small vocabulary's load paid 65,536 lookups here.)
        cdef const PairMerge* merge
        cdef int b0, b1
        cdef Rank left, right
        for i in range(n_merges):
            left, right = triples[3 * i], triples[3 * i + 1]
            if table.token_len[left] == 1 and table.token_len[right] == 1:
                b0 = table.blob[table.token_start[left]]
                b1 = table.blob[table.token_start[right]]
                merge = table._find_merge(left, right)    # (a pair listed twice: its last rank, as above)
                table.byte_pair_merges[b0 << 8 | b1] = merge[0]
        table.n_merges = n_merges
        cdef vector[uint8_t] made_whole     # rank -> 1 when tiktoken's rule can make the token from parts
        table.whole_pieces = ignore_merges
        if detect_token_rank and table._is_token_rank_rule(made_whole):
            table.pair_merges.clear()
            table.pair_merges.shrink_to_fit()
            table.pair_bloom.clear()
            table.pair_bloom.shrink_to_fit()
            table.byte_pair_merges.clear()
            table.byte_pair_merges.shrink_to_fit()
            if not ignore_merges:
                # HF merges a piece that is a token, and gets that token only where a run can make it; the
                # others no run ever makes, so leaving them out of the lookups changes no merge.
                table._keep_whole_only(made_whole)
            return 0
        table.by_pair_rank = True
        if not ignore_merges:
            table._keep_whole_tokens_of_rule()
        return 0

    cdef bint _is_token_rank_rule(self, vector[uint8_t]& made_whole) except -1:
        """Whether the pair-rank rule of the listed merges merges as tiktoken's rule does, with the ids as
        ranks, on every input; `made_whole[rank]` is then 1 for each token that some run of the rule makes.

        Proof. Run both rules side by side from the same parts. Where tiktoken's rule finds adjacent parts
        x, y whose bytes make a token t, no merge has ever crossed the edges of t's bytes (parts only grow),
        so the merges inside them were those of tiktoken's rule on t's bytes alone, in the same order: x, y
        is the two-part state of that run, `_token_rank_split(t)`, and a token without one is never made.
        So if each such split is listed as a merge (its result is then t), both rules see the same candidate
        pairs; if the merge ranks of those splits rise with t's id, both pick the same pair (ties: the same
        pair at two places, the leftmost in both). Every single byte must be a token (HF drops a byte
        without one). A piece that is itself a token is not merged under tiktoken's rule (nor by HF with
        `ignore_merges`); the caller handles HF's other option with `made_whole`."""
        cdef int b
        for b in range(256):
            if self.byte_rank[b] == NO_RANK:
                return False
        fill_vector(made_whole, self.max_rank + 1, 0)
        cdef Py_ssize_t rank
        cdef vector[Py_ssize_t] start
        cdef vector[Rank] joined
        cdef int64_t last_merge_rank = -1
        cdef Rank left, right
        cdef const PairMerge* merge
        for rank in range(self.max_rank + 1):     # ids rising
            if self.token_len[rank] < 2:
                made_whole[rank] = self.token_len[rank] == 1
                continue
            if not self._token_rank_split(<Rank>rank, &left, &right, start, joined):
                continue    # no run of tiktoken's rule ever has t's bytes in two parts
            made_whole[rank] = 1
            merge = self._find_merge(left, right)
            if merge == NULL or merge.result != <Rank>rank or merge.merge_rank <= last_merge_rank:
                return False
            last_merge_rank = merge.merge_rank
        return True

    cdef bint _token_rank_split(self, Rank token, Rank* left, Rank* right, vector[Py_ssize_t]& start,
                                vector[Rank]& joined) except -1:
        """tiktoken's rule on the bytes of `token`, never making `token` itself: True with the two parts
        it stops at, or False when it stops at more (then no run ever has those bytes in two parts).
        `start` and `joined`: the caller's scratch, reused from token to token (Llama 3's 128,000 tokens
        paid two allocations each)."""
        cdef Py_ssize_t n = self.token_len[token]
        cdef const uint8_t* data = self.blob.data() + self.token_start[token]
        # start: part i is data[start[i]:start[i + 1]]; joined[i]: the rank of parts i and i + 1 together,
        # or NO_RANK
        cdef Py_ssize_t i, best
        cdef Rank r
        start.clear()
        joined.clear()
        for i in range(n + 1):
            start.push_back(i)
        for i in range(n - 1):
            r = self.rank_of(data + i, 2)
            joined.push_back(NO_RANK if r == token else r)
        while True:
            best = -1
            r = NO_RANK
            for i in range(<Py_ssize_t>joined.size()):
                if joined[i] < r:       # the lowest rank, the leftmost on ties
                    r = joined[i]
                    best = i
            if best < 0:
                break
            start.erase(start.begin() + best + 1)
            joined.erase(joined.begin() + best)
            for i in range(max(best - 1, 0), min(best + 1, <Py_ssize_t>joined.size())):   # the new part's pairs
                r = self.rank_of(data + start[i], start[i + 2] - start[i])
                joined[i] = NO_RANK if r == token else r
        if start.size() != 3:
            return False
        left[0] = self.rank_of(data, start[1])
        right[0] = self.rank_of(data + start[1], n - start[1])
        return True

    cdef int _keep_whole_tokens_of_rule(self) except -1:
        """Leave in the whole-piece lookups only the tokens that the pair-rank rule makes from their own
        bytes: for the others (HF merges (b, c) before (a, b) and "abc" is made by (ab, c): "abc" merges to
        [a, bc]), a whole-piece hit would give an id the rule does not."""
        cdef Py_ssize_t rank, n
        cdef vector[Rank] ids
        cdef vector[uint8_t] keep
        fill_vector(keep, self.max_rank + 1, 0)
        for rank in range(self.max_rank + 1):
            n = self.token_len[rank]
            if n < 0:
                continue
            ids.clear()
            _merge_by_pair_rank(self, self.blob.data() + self.token_start[rank], n, ids)
            keep[rank] = ids.size() == 1 and ids[0] == <Rank>rank
        return self._keep_whole_only(keep)

    cdef int _keep_whole_only(self, const vector[uint8_t]& keep) except -1:
        """Rebuild the whole-piece lookups with only the tokens `keep` marks (single bytes always stay)."""
        cdef Py_ssize_t rank, n
        cdef const uint8_t* data
        fill_vector(self.slots, self.mask + 1, Slot(0, 0, 0))
        fill_vector(self.bloom, self.bloom_mask + 1, 0)
        for rank in range(self.max_rank + 1):
            n = self.token_len[rank]
            if n < 0:
                continue
            data = self.blob.data() + self.token_start[rank]
            if keep[rank]:
                self._insert(<Rank>rank, self._hash_of(rank))
            elif n == 2:
                self.pair_of_bytes_rank[data[0] << 8 | data[1]] = NO_RANK
            # (a single byte is always kept: no merge applies to one part)
        return 0

    def pair_merge(self, Py_ssize_t left, Py_ssize_t right):
        """(merge rank, result id) of the adjacent tokens `left`, `right` under the pair-rank rule, or None."""
        if not self.by_pair_rank or left < 0 or right < 0 or left > MAX_TOKEN_ID or right > MAX_TOKEN_ID:
            return None
        cdef const PairMerge* merge = self._find_merge(<Rank>left, <Rank>right)
        return None if merge == NULL else (merge.merge_rank, merge.result)

    cdef inline bint _maybe_merge(self, uint64_t pair) noexcept nogil:
        """False when the pair is surely not listed (the filter, pair_bloom); True: look it up."""
        cdef uint64_t bit = (pair * 0x9E3779B97F4A7C15ULL) >> self.pair_bloom_shift
        return (self.pair_bloom[bit >> 6] >> (bit & 63)) & 1

    cdef inline void _prefetch_merge(self, Rank left, Rank right) noexcept nogil:
        """Start loading the first slot _find_merge(left, right) reads, if it will read one (see
        _pair_merge_scan)."""
        cdef uint64_t pair = (<uint64_t>left << 32) | right
        if self._maybe_merge(pair):
            __builtin_prefetch(self.pair_merges.data() + ((pair * 0x9E3779B97F4A7C15ULL) >> self.pair_shift))

    cdef inline const PairMerge* _find_merge(self, Rank left, Rank right) noexcept nogil:
        cdef uint64_t pair = (<uint64_t>left << 32) | right
        if not self._maybe_merge(pair):
            return NULL
        cdef uint64_t mask = self.pair_merges.size() - 1
        cdef uint64_t i = (pair * 0x9E3779B97F4A7C15ULL) >> self.pair_shift
        cdef const PairMerge* slots = self.pair_merges.data()
        while True:
            if slots[i].pair == pair:
                return slots + i
            if slots[i].pair == NO_PAIR:
                return NULL
            i = (i + 1) & mask

    cdef inline const PairMerge* _first_merge(self, const Rank* ids, const uint8_t* data, Py_ssize_t k) noexcept nogil:
        """The merge of parts k and k + 1 before any merging: read from the dense table of byte pairs when the
        parts are the piece's bytes (`data` not NULL), else looked up."""
        cdef const PairMerge* merge
        if data != NULL:
            merge = self.byte_pair_merges.data() + (data[k] << 8 | data[k + 1])
            return merge if merge.pair != NO_PAIR else NULL
        return self._find_merge(ids[k], ids[k + 1])

    cdef bytes _token_bytes(self, Py_ssize_t rank):
        return PyBytes_FromStringAndSize(
            <const char*>self.blob.data() + self.token_start[rank], self.token_len[rank])

    # ---- Python-facing helpers -------------------------------------------------------------------------

    def rank(self, bytes token not None):
        """The rank of `token`, or None when it is not a mergeable token."""
        cdef Rank rank = self.rank_of(<const uint8_t*>PyBytes_AS_STRING(token), PyBytes_GET_SIZE(token))
        return None if rank == NO_RANK else rank

    def _home_slot(self, bytes piece not None):
        """The slot where the lookup of `piece` (1 byte or more) starts: tests use it to put a piece where a
        token of the same head word and length lives."""
        cdef const uint8_t* data = <const uint8_t*>PyBytes_AS_STRING(piece)
        cdef Py_ssize_t n = PyBytes_GET_SIZE(piece)
        if n < 1:
            raise ValueError("an empty piece is looked up nowhere")
        return _hash_bytes(_head_word(data, n), data, n) & self.mask

    def token_bytes(self, Py_ssize_t rank):
        """The bytes of mergeable token `rank`, or None when there is none."""
        if rank < 0 or rank > self.max_rank or self.token_len[rank] < 0:
            return None
        return self._token_bytes(rank)

    def token_byte_values(self):
        """Every mergeable token's bytes, in rank order."""
        return [self._token_bytes(rank) for rank in range(self.max_rank + 1) if self.token_len[rank] >= 0]

    def longest_prefix(self, Scanner scanner not None, bytes data not None, Py_ssize_t budget,
                       Py_ssize_t limit, bint whole, bint at_pieces=False):
        """budgets.py's search over the text whose UTF-8 is `data`, the first bytes of a text (all of it if
        `whole`): (k, its tokens) for the largest character boundary k <= `limit` such that ``data[:k]`` has at
        most `budget` tokens, or None when `data` does not settle it (a longer prefix might fit). With
        `at_pieces`, k is one of the text's piece ends (or 0): no piece is cut in two."""
        if budget < 0:
            raise ValueError(f"budget must be 0 or more, got {budget}")
        cdef _PrefixSearch search = _PrefixSearch(self, scanner, False, PyBytes_GET_SIZE(data))
        cdef Py_ssize_t k = 0, tokens = 0
        if not search.longest(<const uint8_t*>PyBytes_AS_STRING(data), PyBytes_GET_SIZE(data), budget, limit,
                              whole, at_pieces, &k, &tokens):
            return None
        return k, tokens

    def longest_suffix(self, Scanner scanner not None, bytes data not None, Py_ssize_t budget):
        """(s, its tokens) for the smallest character boundary s such that ``data[s:]``, the UTF-8 of an
        ordinary text of its own, has at most `budget` tokens (`_PrefixSearch.longest_suffix` says why this is
        exact). `scanner` must cut by a pattern that reads nothing before a match's start
        (pattern_compiler.looks_at_the_start is False)."""
        if budget < 0:
            raise ValueError(f"budget must be 0 or more, got {budget}")
        cdef _PrefixSearch search = _PrefixSearch(self, scanner, True, PyBytes_GET_SIZE(data))
        cdef Py_ssize_t s = 0, tokens = 0
        search.longest_suffix(<const uint8_t*>PyBytes_AS_STRING(data), PyBytes_GET_SIZE(data), budget, &s, &tokens)
        search.finish()
        return s, tokens

    def chunk_ends(self, Scanner scanner not None, bytes data not None, Py_ssize_t budget, bint at_pieces):
        """Where `Encoding.chunks` cuts the ordinary text whose UTF-8 is `data`, in characters: each chunk the
        longest prefix of the rest that fits in `budget` tokens (`longest_prefix` of the rest as a text of its
        own, whole); with `at_pieces` one that ends where a piece of the rest ends, unless there is none; and
        one character when not even that fits. The persistent piece cache serves the pieces it holds."""
        if budget < 0:
            raise ValueError(f"budget must be 0 or more, got {budget}")
        cdef const uint8_t* text = <const uint8_t*>PyBytes_AS_STRING(data)
        cdef Py_ssize_t n = PyBytes_GET_SIZE(data), start = 0, k, tokens, chars = 0
        cdef vector[Py_ssize_t] ends
        if not self.char_starts_built:     # (the text counts toward the character starts, as encode's do)
            chars = _characters_in(text, n)
            if chars < n:
                self.non_ascii_chars += chars
                if self.non_ascii_chars >= CHAR_STARTS_AFTER_CHARS:
                    _build_char_starts(self)
            chars = 0
        cdef _PrefixSearch search = _PrefixSearch(self, scanner, True, n)
        while start < n:
            k = 0
            if at_pieces:
                search.longest_in_windows(text + start, n - start, budget, True, &k, &tokens)
            if k == 0:
                search.longest_in_windows(text + start, n - start, budget, False, &k, &tokens)
            if k == 0:      # one character over the budget on its own
                k = 1
                while start + k < n and (text[start + k] & 0xC0) == 0x80:
                    k += 1
            chars += _characters_in(text + start, k)
            ends.push_back(chars)
            start += k
        search.finish()
        return ends

    def encode_single_piece(self, bytes piece not None):
        """BPE of one piece of bytes, with no pre-tokenization."""
        cdef vector[Rank] out
        if self.encode_piece(<const uint8_t*>PyBytes_AS_STRING(piece), PyBytes_GET_SIZE(piece), out):
            _raise_missing_byte(piece)
        return out

    def merge_bytes(self, bytes piece not None, *, bint windows=True):
        """The merge loop alone over `piece` from its single bytes, without first looking it up whole (tiktoken's
        `byte_pair_encode`: a token that no sequence of merges makes is not found); [] for b"". With
        `windows=False`, a long piece is merged whole instead of window by window (_merge_windows.pxi)."""
        cdef vector[Rank] out
        cdef const uint8_t* data = <const uint8_t*>PyBytes_AS_STRING(piece)
        cdef int missing
        if windows:
            missing = self.merge_piece(data, PyBytes_GET_SIZE(piece), out, NULL)
        else:
            missing = self.merge_whole(data, PyBytes_GET_SIZE(piece), out, NULL)
        if missing:
            _raise_missing_byte(piece)
        return out

    def window_cuts(self, bytes piece not None):
        """The offsets where merge_bytes cuts `piece` into windows (_merge_windows.pxi); [] below
        WINDOWS_MIN_BYTES."""
        cdef const uint8_t* data = <const uint8_t*>PyBytes_AS_STRING(piece)
        cdef Py_ssize_t n = PyBytes_GET_SIZE(piece), start = 0
        cuts = []
        _build_span_grams(self)
        while start < n:
            start = _window_end(self, data, start, n)
            if start < n:
                cuts.append(start)
        return cuts
        _build_span_grams(self)
        while n - start >= WINDOWS_MIN_BYTES:
            cut = _next_cut(self, data, start + WINDOW_BYTES, n)
            if cut < 0:
                break
            cuts.append(cut)
            start = cut
        return cuts


# ==== the merge strategies and the .tiktoken parser, one file each ====================================
# Module-level functions of a MergeTable (`self`), textually included: one module, so calls between them and
# the table's lookups stay direct C calls that the compiler can inline (a strategy in a module of its own
# would reach the lookups through a function-pointer table). The map of which one runs when is the module
# docstring.
include "_tiktoken_format.pxi"
include "_json_scan.pxi"
include "_merge_char_starts.pxi"
include "_merge_scan.pxi"
include "_merge_heap.pxi"
include "_merge_buckets.pxi"
include "_merge_run.pxi"
include "_merge_pair_rank.pxi"
include "_merge_windows.pxi"


cdef struct CachedPiece:
    uint64_t hash           # 0 for an empty slot (pieces of 3+ bytes are never compared with one)
    # A piece of up to 8 bytes: its head word (`_head_word`), which holds all of it, so a hit reads nothing
    # else; a longer one: the address of its bytes, in a text that outlives the cache.
    uint64_t bytes_or_head
    uint32_t length
    uint32_t ids_start      # its ids are MergeCache.ids[ids_start : ids_start + ids_count]
    uint32_t ids_count


cdef struct PieceCacheCounts:
    # What one call did with the persistent piece cache, added to its figures once at the end (a flat batch's
    # thread: after each group), by _hand_over_counts.
    uint64_t lookups
    uint64_t hits
    uint64_t admitted
    uint64_t evictions


cdef cppclass MergeCache:
    # The ids of recently merged pieces that the persistent piece cache does not take (longer than
    # PIECE_CACHE_MAX_PIECE, of other scripts in large calls, turned away, or every piece when it is off:
    # _piece_cacheable, _encode_scanned). Words repeat (Zipf): in English prose 83% of
    # the bytes that need merging belong to a piece seen before in the same text, in multilingual text 44%,
    # and a hit costs one compare instead of a merge. Direct-mapped on the piece hash that the whole-piece
    # lookup computed anyway; it lives for one call and points into that call's text, so it needs no locking
    # or copies.
    vector[CachedPiece, TableAllocator[CachedPiece]] slots     # up to 2 MiB for a call of 64 KB or more
    vector[Rank] ids
    uint64_t mask
    uint64_t stores         # pieces stored since the slots were made or grew (_merge_through_caches)
    uint64_t most_slots     # the size the slots may grow to, for the input they were made for
    vector[PairMemoEntry] memo_entries     # the pair memo of the merge loop, for the same call
    PairMemo memo
    PieceCacheCounts counts     # this call's use of the persistent piece cache (see _encode_scanned)
    bint declined       # the persistent cache turned a piece away: this cache holds it, and is asked too
    # The call's input size: the tables above are sized from it when the first piece needs them
    # (_encode_scanned), so that a call whose pieces are all whole tokens never allocates them.
    Py_ssize_t input_bytes


cdef inline uint64_t _cache_capacity(Py_ssize_t input_bytes) noexcept nogil:
    cdef uint64_t capacity = 16
    while capacity < CACHE_MAX_SLOTS and capacity * CACHE_BYTES_PER_SLOT < <uint64_t>input_bytes:
        capacity <<= 1
    return capacity


cdef int _make_memo(MergeCache& cache) except -1 nogil:
    """The call's pair memo, sized for its input: two entries per merge-cache slot it would have, so that
    clearing it stays ~1% of the encoding work, up to MEMO_MAX_BITS."""
    cdef uint64_t capacity = _cache_capacity(cache.input_bytes)
    cdef int bits = 2
    while (1ULL << bits) < 2 * capacity and bits < MEMO_MAX_BITS:
        bits += 1
    fill_vector(cache.memo_entries, 1ULL << bits, PairMemoEntry(NO_PAIR, 0))
    cache.memo.entries = cache.memo_entries.data()
    cache.memo.shift = 64 - bits
    return 0


cdef int _reset_cache(MergeCache& cache, Py_ssize_t input_bytes) except -1 nogil:
    """Empty the merge cache's slots, for an input of `input_bytes`: at first at most CACHE_FIRST_SLOTS."""
    cache.most_slots = _cache_capacity(input_bytes)
    cdef uint64_t capacity = min(cache.most_slots, <uint64_t>CACHE_FIRST_SLOTS)
    cache.mask = capacity - 1
    cache.stores = 0
    fill_vector(cache.slots, capacity, CachedPiece(0, 0, 0, 0, 0))
    cache.ids.clear()
    return 0


cdef int _grow_cache(MergeCache& cache) except -1 nogil:
    """Make the merge cache's slots four times as many (at most most_slots), keeping what they hold (each
    piece in its slot of the larger table)."""
    cdef vector[CachedPiece, TableAllocator[CachedPiece]] larger
    cdef uint64_t k, mask = min(4 * cache.mask + 3, cache.most_slots - 1)
    fill_vector(larger, mask + 1, CachedPiece(0, 0, 0, 0, 0))
    for k in range(cache.mask + 1):
        if cache.slots[k].hash != 0:
            larger[cache.slots[k].hash & mask] = cache.slots[k]
    cache.slots.swap(larger)
    cache.mask = mask
    cache.stores = 0
    return 0


cdef inline CachedPiece* _call_slot(MergeCache& cache, uint64_t h) except NULL nogil:
    """The merge-cache slot of the piece with hash h; the call's first piece for it makes the cache."""
    if cache.slots.empty():
        _reset_cache(cache, cache.input_bytes)
    return &cache.slots[h & cache.mask]


cdef inline bint _piece_cacheable(const uint8_t* piece, Py_ssize_t size, bint any_script) noexcept nogil:
    """Whether a piece of 3+ bytes that needs merging goes to the persistent piece cache; the others go to
    the call's merge cache.

    Not pieces longer than PIECE_CACHE_MAX_PIECE; nor, unless `any_script`, pieces that end in a byte of a
    multi-byte character: words of Cyrillic, Greek, Arabic, CJK and other scripts beyond Latin (a word of
    Latin letters with accents mostly ends in an ASCII letter). See MULTIBYTE_PERSIST_MAX_CALL_BYTES."""
    return size <= PIECE_CACHE_MAX_PIECE and (any_script or piece[size - 1] < 0x80)


cdef inline int _append_ids(vector[Rank]& out, const Rank* ids, size_t count) except -1 nogil:
    """Append the persistent cache's few ids (at most PIECE_CACHE_MAX_IDS) one by one: insert() calls memmove
    for each hit. For the call's own cache, whose hits carry more ids, insert stays (this loop was no faster
    there). MemoryError when the vector cannot grow."""
    cdef size_t t
    for t in range(count):
        out.push_back(ids[t])
    return 0


cdef inline int _piece_cache_lookup(PieceCacheCore* pieces, uint64_t h, const uint64_t* key, Py_ssize_t size,
                                    vector[Rank]& out, PieceCacheCounts& counts) except -1 nogil:
    """Append the ids the persistent cache holds for the piece (key, size) to `out`: 1, or 0 on a miss."""
    cdef Rank found_ids[PIECE_CACHE_MAX_IDS]
    # One lookup in PIECE_CACHE_MARK_EVERY of the call marks the entry it hits (_piece_cache.h says why).
    cdef int found = pieces.lookup(h, key, <uint32_t>size, found_ids,
                                   (counts.lookups & (PIECE_CACHE_MARK_EVERY - 1)) == 0)
    counts.lookups += 1
    if found < 0:
        return 0
    counts.hits += 1
    _append_ids(out, found_ids, found)
    return 1


cdef inline bint _piece_cache_offer(PieceCacheCore* pieces, uint64_t h, const uint64_t* key, Py_ssize_t size,
                                    const Rank* ids, size_t n_ids, PieceCacheCounts& counts) noexcept nogil:
    """Offer a piece just merged to the persistent cache, counting what it did: whether it was stored."""
    cdef int stored
    if n_ids > PIECE_CACHE_MAX_IDS:
        return False
    stored = pieces.insert(h, key, <uint32_t>size, ids, <uint32_t>n_ids)
    counts.admitted += stored != PIECE_CACHE_DECLINED
    counts.evictions += stored == PIECE_CACHE_REPLACED
    return stored != PIECE_CACHE_DECLINED


cdef inline void _hand_over_counts(PieceCacheCore* pieces, PieceCacheCounts& counts) noexcept nogil:
    """Add `counts` (what a call, group or search did with the persistent cache `pieces`, NULL when off) to
    its figures, and start them afresh."""
    if pieces != NULL:
        pieces.add_counts(counts.lookups, counts.hits, counts.admitted, counts.evictions)
    counts = PieceCacheCounts(0, 0, 0, 0)


# ---- budgets.py's search (MergeTable.longest_prefix, MergeTable.chunk_ends) -----------------------------

# Bytes after a budget search's stable pieces from which it bounds the tokens of each candidate before
# merging it (_PrefixSearch.fewest_tokens): a stretch this long is a long piece, where candidates one
# character apart would each merge it again.
cdef enum:
    LONG_TAIL = 256
# The first window of the rest of a text that chunk_ends' search reads (then 2x, 4x ...): 16 bytes per token
# of the budget, at least this many.
cdef enum:
    FIRST_WINDOW_BYTES = 4096


@cython.final
cdef class _PrefixSearch:
    """What budgets.py's search needs (the table, the scanner, the persistent piece cache when one
    is used) and its scratch space, kept across the searches of one chunk_ends call. It holds the table, the
    scanner and the cache for as long as it lives (the ownership rule)."""
    cdef MergeTable table
    cdef Scanner scanner
    cdef PieceCache piece_cache
    cdef const ScanSpec* spec
    cdef PieceCacheCore* pieces
    # The call's merge cache and pair memo, as encode has them (made on first use): its cached pieces point
    # into the text, which the caller holds for as long as this search lives.
    cdef MergeCache cache
    cdef vector[Py_ssize_t] piece_ends, furthest, tokens
    cdef vector[Py_ssize_t] text_ends      # (longest with at_pieces)
    cdef Py_ssize_t pieces_counted, tokens_counted     # by add_pieces: its estimate of the tokens per piece
    # fewest_tokens: fewest[p] is the fewest tokens that spell the p bytes from `fewest_at` (NULL: none made;
    # an address, not an offset: chunk_ends searches from each chunk's start); fewest_usable: every byte is
    # a token (the bound needs that: else a byte may merge away, HF's rule for a file without the byte
    # alphabet)
    cdef vector[int32_t] fewest
    cdef const uint8_t* fewest_at
    cdef bint fewest_usable
    cdef Py_ssize_t max_len     # the table's longest token, in bytes (at least 1: the divisor of the bounds)
    cdef vector[Rank] ids

    def __cinit__(self, MergeTable table not None, Scanner scanner not None, bint use_cache,
                  Py_ssize_t input_bytes):
        self.table = table
        self.scanner = scanner
        self.spec = &scanner.spec
        self.piece_cache = table.current_piece_cache() if use_cache else None
        self.pieces = self.piece_cache.core if self.piece_cache is not None else NULL
        self.cache.input_bytes = input_bytes
        self.pieces_counted = self.tokens_counted = 1
        self.fewest_at = NULL
        self.fewest_usable = all(table.byte_rank[b] != NO_RANK for b in range(256))
        self.max_len = max(<Py_ssize_t>1, <Py_ssize_t>table.max_token_len)
        self.cache.counts = PieceCacheCounts(0, 0, 0, 0)
        self.cache.declined = False
        # Read with the GIL, which every build of the table holds: built once, never changed.
        self.cache.memo.char_starts = table.char_starts.data() if table.char_starts.size() else NULL

    cdef int finish(self) except -1:
        """Add what the searches did with the piece cache to its figures."""
        _hand_over_counts(self.pieces, self.cache.counts)
        return 0

    cdef int batch_tokens(self, const uint8_t* text, Py_ssize_t start, const Py_ssize_t* ends, Py_ssize_t count,
                          Py_ssize_t n, Py_ssize_t room, Py_ssize_t* tokens_out) except -1:
        """`piece_tokens` of the `count` pieces of text[start:ends[count - 1]] that end at `ends`, into
        `tokens_out`: all hashed, and their slots prefetched, before the first lookup; a token of up to 8
        bytes in its home slot is found with one test (as _encode_scanned does). A piece too long to merge
        into `room` tokens or fewer (a token has max_token_len bytes at most) is not merged: its count is
        then that bound, over `room` (the searches need no more than that of the first piece over)."""
        cdef uint64_t heads[SCAN_BATCH]
        cdef uint64_t hashes[SCAN_BATCH]
        cdef Py_ssize_t j, size, end = start
        cdef const Slot* slots = self.table.slots.data()
        cdef const Slot* slot
        for j in range(count):
            size = ends[j] - end
            if size <= self.table.max_token_len:
                heads[j] = _head_word(text + end, size)
                hashes[j] = _hash_bytes(heads[j], text + end, size)
            else:
                heads[j] = hashes[j] = 0
            __builtin_prefetch(slots + (hashes[j] & self.table.mask))
            end = ends[j]
        end = start
        for j in range(count):
            size = ends[j] - end
            slot = slots + (hashes[j] & self.table.mask)
            if (slot.head == heads[j]) & (slot.length == size) & (size <= 8):
                tokens_out[j] = 1
            elif (size + self.max_len - 1) // self.max_len > room:
                tokens_out[j] = (size + self.max_len - 1) // self.max_len
            else:
                tokens_out[j] = self.piece_tokens(text + end, size, n - end, hashes[j])
            end = ends[j]
        return 0

    cdef Py_ssize_t piece_tokens(self, const uint8_t* piece, Py_ssize_t size, Py_ssize_t readable,
                                 uint64_t h) except -1:
        """How many tokens `piece` (`size` bytes; `readable` bytes may be read from it; `h` its hash when it
        has 3 to max_token_len bytes) merges into, found as _encode_scanned finds its ids: a whole token, the
        persistent piece cache, the call's merge cache (pieces the persistent one does not take), or merged
        with the call's pair memo."""
        self.ids.clear()
        if size <= 2:
            if self.table.rank_of(piece, size) != NO_RANK:
                return 1
            if self.table.merge_piece(piece, size, self.ids, NULL):
                _raise_missing_byte(PyBytes_FromStringAndSize(<const char*>piece, size))
            return self.ids.size()
        if size <= self.table.max_token_len:
            if self.table._maybe_token(h) and self.table.rank_of_hashed(
                    piece, size, _head_word(piece, size), h) != NO_RANK:
                return 1
        else:
            h = _hash_bytes(_head_word(piece, size), piece, size)
        # (the persistent cache takes what it takes from encode: multi-byte pieces only from small texts)
        if _merge_through_caches(self.table, self.cache, self.pieces,
                                 self.pieces != NULL and _piece_cacheable(
                                     piece, size, self.cache.input_bytes <= MULTIBYTE_PERSIST_MAX_CALL_BYTES),
                                 piece, size, readable,
                                 _head_word(piece, size), h, self.cache.input_bytes, self.ids):
            _raise_missing_byte(PyBytes_FromStringAndSize(<const char*>piece, size))
        return self.ids.size()

    cdef int longest_suffix(self, const uint8_t* text, Py_ssize_t n, Py_ssize_t budget, Py_ssize_t* s_out,
                            Py_ssize_t* tokens_out) except -1:
        """The smallest character boundary s such that text[s:n], a text of its own, has at most `budget` tokens
        (in `s_out`, its tokens in `tokens_out`). Why this is exact:

        - a token is 1 to max_token_len bytes, so every s >= n - budget fits and no s < n - budget *
          max_token_len does: the search runs from `low`, the first boundary at or above the latter, upwards,
          and stops at the first s that fits;
        - the pattern reads no text before a match's start (the caller checks: `looks_at_the_start`), so a
          text cut into pieces from a piece start q on is cut as text[q:] alone is. The pieces of text[low:]
          (starts Q, each with C(q) = the tokens from q on) therefore give count(q) = C(q) for q in Q, and for
          any other s: cut text[s:] into pieces until one ends at some q in Q (or at n, C(n) = 0): count(s) =
          the tokens of those pieces + C(q). C falls as q rises, so landing on a q whose C(q) is over the
          budget settles s without merging anything, and most s do that within a piece or two.
        """
        cdef Py_ssize_t ends[SCAN_BATCH]
        cdef Py_ssize_t piece_counts[SCAN_BATCH]
        cdef Py_ssize_t low, start, count, j, s, pos, fragment, landing, k
        cdef Py_ssize_t max_len = self.max_len
        cdef vector[Py_ssize_t] starts, after    # Q, and C(q) for each (after[-1] = C(n) = 0 at n)
        cdef bint settled
        low = n - budget * max_len if budget < (n + max_len - 1) // max_len else 0
        while low < n and (text[low] & 0xC0) == 0x80:
            low += 1
        start = low
        while start < n:
            count = scan_pieces(self.spec, text, start, n, ends, SCAN_BATCH)
            self.batch_tokens(text, start, ends, count, n, budget, piece_counts)
            for j in range(count):
                starts.push_back(start)
                after.push_back(piece_counts[j])
                start = ends[j]
        starts.push_back(n)
        after.push_back(0)
        for j in range(<Py_ssize_t>after.size() - 2, -1, -1):
            after[j] += after[j + 1]
        k = 0   # starts[k] is the first start >= s
        s = low
        while s < n:
            while starts[k] < s:
                k += 1
            if starts[k] == s:
                if after[k] <= budget:
                    s_out[0], tokens_out[0] = s, after[k]
                    return 0
            else:
                # The pieces of text[s:] up to the first that ends in Q, at `landing`: their ends first (each
                # is a token at least, and a token max_len bytes at most), their tokens only if that leaves room.
                pos, fragment, landing, settled = s, 0, k, False
                while not settled:
                    count = scan_pieces(self.spec, text, pos, n, ends, 2)
                    for j in range(count):
                        fragment += 1
                        pos = ends[j]
                        while starts[landing] < pos:
                            landing += 1
                        if starts[landing] == pos:
                            settled = True
                            break
                if after[landing] + max(fragment, (pos - s + max_len - 1) // max_len) <= budget:
                    pos, fragment = s, 0
                    while pos < starts[landing]:
                        count = scan_pieces(self.spec, text, pos, n, ends, 1)
                        fragment += self.piece_tokens(text + pos, ends[0] - pos, n - pos,
                                                      _hash_bytes(_head_word(text + pos, ends[0] - pos), text + pos,
                                                                  ends[0] - pos))
                        pos = ends[0]
                    if fragment + after[landing] <= budget:
                        s_out[0], tokens_out[0] = s, fragment + after[landing]
                        return 0
            s += 1
            while s < n and (text[s] & 0xC0) == 0x80:
                s += 1
        s_out[0], tokens_out[0] = n, 0
        return 0

    cdef bint add_pieces(self, const uint8_t* text, Py_ssize_t start, Py_ssize_t end, Py_ssize_t n,
                         Py_ssize_t budget, bint by_blocks) except -1:
        """Append the pieces of the text text[:end] from `start` (a piece start) on to `piece_ends`, with S_i
        (`furthest`) and F_i (`tokens`), until the first whose F passes `budget` (True) or the end (False). `n`:
        the bytes `text` has (the pieces' ids may read that far)."""
        cdef Py_ssize_t ends[SCAN_BATCH]
        cdef Py_ssize_t seen[SCAN_BATCH]
        cdef Py_ssize_t piece_counts[SCAN_BATCH]
        cdef Py_ssize_t count, j, room
        cdef Py_ssize_t reach = self.furthest.back() if self.furthest.size() else -1
        cdef Py_ssize_t total = self.tokens.back()
        while start < end:
            # As many pieces as should pass the budget at the tokens per piece seen so far (text of other
            # scripts has several per piece), at most one more than it has tokens left (a piece is one at
            # least; in floating point: a budget may be the largest Py_ssize_t).
            room = budget - total
            count = scan_pieces_seen(self.spec, text, start, end, ends, seen, <Py_ssize_t>min(
                <double>SCAN_BATCH, <double>room + 1.0,
                (<double>room + 1.0) * self.pieces_counted / self.tokens_counted + 1.0), by_blocks)
            self.batch_tokens(text, start, ends, count, n, room, piece_counts)
            self.pieces_counted += count
            for j in range(count):
                self.tokens_counted += piece_counts[j]
                total += piece_counts[j]
                reach = max(reach, seen[j])
                self.piece_ends.push_back(ends[j])
                self.furthest.push_back(reach)
                self.tokens.push_back(total)
                if total > budget:
                    return True
            start = ends[count - 1]
        return False

    cdef Py_ssize_t fewest_tokens(self, const uint8_t* text, Py_ssize_t start, Py_ssize_t upto,
                                  Py_ssize_t room) except -1:
        """Extend `fewest` over text[start:upto] (kept from the last call with the same start): fewest[p] is the
        fewest tokens of the vocabulary that spell text[start:start + p]. However text[start:start + p] is cut
        into pieces and merged, its tokens spell it, so they are at least that many. Stops once each of the
        last max_token_len entries is over `room` (every later one is then over it too: each extends one of
        them by a token). Returns how many bytes it covers.

        The tokens that end at a byte are tried from the shortest; a token of 4 or more bytes holds every
        4 bytes of it, so the first 4 bytes that are in no token (the table's span grams) end the search."""
        cdef Py_ssize_t p, length, last, over
        cdef Py_ssize_t max_len = self.max_len
        cdef int32_t best
        cdef const uint64_t* grams
        cdef const uint8_t* at
        _build_span_grams(self.table)
        grams = self.table.span_grams.data()
        if self.fewest_at != text + start:
            self.fewest.clear()
            self.fewest.push_back(0)
            self.fewest_at = text + start
        p = self.fewest.size() - 1
        over = 0
        for last in range(p, max(<Py_ssize_t>0, p - max_len), -1):
            if self.fewest[last] <= room:
                break
            over += 1
        while p < upto - start and over < max_len:
            p += 1
            at = text + start + p
            best = self.fewest[p - 1] + 1       # (every byte is a token)
            for length in range(2, min(max_len, p) + 1):
                if length >= 4 and not _span_gram_set(grams, at - length, 4):
                    break
                if self.fewest[p - length] + 1 < best and self.table.rank_of(at - length, length) != NO_RANK:
                    best = self.fewest[p - length] + 1
            self.fewest.push_back(best)
            over = over + 1 if best > room else 0
        return p

    cdef bint more_text_ends(self, const uint8_t* text, Py_ssize_t n, Py_ssize_t upto, bint whole) except -1:
        """Append to `text_ends` the ends of the text's pieces after the listed ones, up to `upto`: one of them
        can end below S of the first piece over the budget, and a prefix that ends there cuts the pieces before
        it otherwise, and may fit. False when `text` (the first n bytes of a text, not `whole`) does not show
        those pieces for certain."""
        cdef Py_ssize_t ends[SCAN_BATCH]
        cdef Py_ssize_t seen[SCAN_BATCH]
        cdef Py_ssize_t start = self.text_ends.back(), count, j
        cdef Py_ssize_t reach = self.furthest.back()
        while start < upto:
            count = scan_pieces_seen(self.spec, text, start, n, ends, seen, SCAN_BATCH, True)
            for j in range(count):
                if ends[j] > upto:
                    return True
                reach = max(reach, seen[j])
                if reach >= n and not whole:
                    return False
                self.text_ends.push_back(ends[j])
            start = ends[count - 1]
        return True

    cdef int longest_in_windows(self, const uint8_t* text, Py_ssize_t n, Py_ssize_t budget, bint at_pieces,
                                Py_ssize_t* k_out, Py_ssize_t* tokens_out) except -1:
        """`longest` over the whole text[:n], read in windows that double until one settles it (as budgets.py
        does for truncate): a chunk costs what its own bytes cost, not what the rest of the text does (one
        piece that runs to the end of a long text is scanned only as far as the budget can reach)."""
        cdef Py_ssize_t window = n if budget >= n // 16 else min(n, max(<Py_ssize_t>FIRST_WINDOW_BYTES, 16 * budget))
        while True:
            while window < n and (text[window] & 0xC0) == 0x80:   # (a window ends at a character boundary)
                window -= 1
            if self.longest(text, window, budget, n, window == n, at_pieces, k_out, tokens_out):
                return 0
            window = n if window >= n // 2 else 2 * window

    cdef bint longest(self, const uint8_t* text, Py_ssize_t n, Py_ssize_t budget, Py_ssize_t limit, bint whole,
                      bint at_pieces, Py_ssize_t* k_out, Py_ssize_t* tokens_out) except -1:
        """budgets.py's search over `text` (n bytes, the start of a text; all of it if `whole`): False when
        the bytes do not settle it, else True with the longest prefix in `k_out`, its tokens in `tokens_out`.

        The pieces listed (S_i, F_i) are those of the text the search is in: first the whole text's (scanned
        by blocks: S is then up to a block beyond what a piece needed), then, after each candidate k that is
        over the budget, prefix k's own: its pieces 1..stable and the ones scanned after them, exactly. A
        shorter candidate is a prefix of prefix k, so the same reasoning holds in it, with S and F that are
        closer to the cut."""
        cdef Py_ssize_t bound, k, stable, tail, candidate, reach, j, room
        cdef bint over
        self.piece_ends.clear()
        self.furthest.clear()
        self.tokens.clear()
        self.tokens.push_back(0)
        over = self.add_pieces(text, 0, n, n, budget, True)
        bound = self.furthest.back() if over else n
        if over and not (whole or limit <= n or bound < n):
            # The piece over the budget runs to the end of these bytes (a window that ends inside one long
            # piece). A prefix past S of the pieces before it keeps them, and spells the rest with at least
            # `fewest` tokens, and with tokens of max_token_len bytes at most: over the budget where either
            # says so, which may settle it.
            j = self.piece_ends.size() - 1
            tail = self.piece_ends[j - 1] if j else 0
            room = budget - self.tokens[j]
            reach = n - tail
            if room < reach // self.max_len:
                reach = room * self.max_len
            if n - tail >= LONG_TAIL and self.fewest_usable:
                reach = min(reach, self.fewest_tokens(text, tail, n, room))
            if reach < n - tail:
                bound = min(bound, max(self.furthest[j - 1] if j else 0, tail + reach))
        if not (whole or limit <= n or bound < n):
            return False
        if at_pieces:       # the candidates: where the whole text's pieces end
            self.text_ends = self.piece_ends
            if over and not self.more_text_ends(text, n, min(bound, limit), whole):
                return False
        k = min(bound, n, limit)
        candidate = self.text_ends.size() - 1
        while k > 0:
            if at_pieces:
                while candidate >= 0 and self.text_ends[candidate] > k:
                    candidate -= 1
                if candidate < 0:
                    break
                k = self.text_ends[candidate]
            while k < n and (text[k] & 0xC0) == 0x80:   # a character boundary
                k -= 1
            # pieces 1..stable are the prefix's own (S_i < k)
            stable = lower_bound(self.furthest.begin(), self.furthest.end(), k) - self.furthest.begin()
            tail = self.piece_ends[stable - 1] if stable else 0
            if tail < k and self.tokens[stable] >= budget:
                # Those pieces and one token more: over, and so is every prefix that keeps them (every k
                # above S_stable, which is below this one): the next candidate is at most S_stable, or the
                # end of those pieces.
                k = max(self.furthest[stable - 1], tail) if stable else 0
                continue
            if k - tail >= LONG_TAIL and self.fewest_usable:
                # A long stretch after the stable pieces (one long piece, mostly): below the cut, candidates
                # one character apart would each cut and merge it again. Every prefix above S_stable keeps
                # those pieces, and spells the rest with at least `fewest` tokens: the candidates that bound
                # puts over the budget are skipped without merging.
                reach = self.fewest_tokens(text, tail, k, budget - self.tokens[stable])
                j = k
                while j > tail and (j - tail > reach or self.tokens[stable] + self.fewest[j - tail] > budget):
                    j -= 1
                if j < k:
                    k = max(j, self.furthest[stable - 1] if stable else 0)
                    continue
            self.piece_ends.resize(stable)
            self.furthest.resize(stable)
            self.tokens.resize(stable + 1)
            if not self.add_pieces(text, tail, k, n, budget, False):
                k_out[0], tokens_out[0] = k, self.tokens.back()
                return True
            k = min(k - 1, self.furthest.back())
        k_out[0], tokens_out[0] = 0, 0
        return True


cdef inline int _reserve_for(vector[Rank]& out, Py_ssize_t text_bytes) except -1:
    """Room in `out` for the ids of `text_bytes` more bytes of text: 1 id per 2 bytes (push_back grows it
    further when a text needs more), above what code and multilingual text need, so that their vectors are
    not copied to a new allocation during a call. The room not written to stays untouched memory. A batch
    appends group after group to one vector, so the room grows geometrically: reserving exactly what each
    group needs would reallocate and copy the whole vector once per group."""
    cdef size_t wanted = out.size() + <size_t>(text_bytes // 2) + 16
    if wanted > out.capacity():
        out.reserve(max(wanted, 2 * out.capacity()))   # MemoryError when it cannot
    return 0


cdef inline int _merge_through_caches(MergeTable table, MergeCache& cache, PieceCacheCore* pieces, bint persist,
                                      const uint8_t* piece, Py_ssize_t size, Py_ssize_t readable, uint64_t head,
                                      uint64_t h, Py_ssize_t reset_bytes, vector[Rank]& out) except -1 nogil:
    """Append the ids of `piece` (3+ bytes, not a whole token; head word `head`, hash `h`; `readable` bytes may
    be read from it)
    to `out`: from the persistent cache `pieces` when `persist` and it holds the piece, else from the call's
    merge cache, else merged with the call's pair memo and stored in whichever cache takes it (the call's
    cache, when full, starts afresh sized for `reset_bytes`). Returns 1 when the piece holds a byte the
    vocabulary lacks, else 0. Shared by encode's fused loop and the budget search, so both find the same ids
    the same way."""
    cdef uint64_t key[PIECE_CACHE_KEY_WORDS]
    cdef CachedPiece* cached
    cdef size_t before
    if persist:
        piece_cache_key(piece, <uint32_t>size, <size_t>readable, key)
        if _piece_cache_lookup(pieces, h, key, size, out, cache.counts):
            return 0
    if not persist or cache.declined:
        cached = _call_slot(cache, h)
        if cached.hash == h and cached.length == size and (
                cached.bytes_or_head == head if size <= 8 else
                _same_bytes(<const uint8_t*><size_t>cached.bytes_or_head, piece, size)):
            out.insert(out.end(), cache.ids.begin() + cached.ids_start,
                       cache.ids.begin() + cached.ids_start + cached.ids_count)
            return 0
    if cache.memo_entries.empty():  # the call's first piece to merge: its memo is made now
        _make_memo(cache)
    before = out.size()
    if table.merge_piece(piece, size, out, &cache.memo):
        return 1
    if persist:
        if _piece_cache_offer(pieces, h, key, size, out.data() + before, out.size() - before, cache.counts):
            return 0
        # Turned away: the call's own cache keeps it, and is asked from now on after the persistent one.
        cache.declined = True
    cached = _call_slot(cache, h)
    if cache.ids.size() + (out.size() - before) > CACHE_MAX_IDS:
        _reset_cache(cache, reset_bytes)
        cached = &cache.slots[h & cache.mask]
    elif 8 * cache.stores > cache.mask and cache.mask + 1 < cache.most_slots:
        _grow_cache(cache)
        cached = &cache.slots[h & cache.mask]
    cache.stores += 1
    cached.hash = h
    cached.bytes_or_head = head if size <= 8 else <uint64_t><size_t>piece
    cached.length = <uint32_t>size
    cached.ids_start = <uint32_t>cache.ids.size()
    cached.ids_count = <uint32_t>(out.size() - before)
    cache.ids.insert(cache.ids.end(), out.begin() + before, out.end())
    return 0


# The instruction sets the fused loop's first two passes can run with (_home_lookup.h), by the names
# `lookup_isas` and `set_lookup_isa` use; the widest the CPU runs is in use from import on.
LOOKUP_ISAS = ("scalar", "avx512")
cdef int lookup_isa = BYTEBPE_LOOKUP_AVX512 if bytebpe_lookup_isa_supported(BYTEBPE_LOOKUP_AVX512) else \
    BYTEBPE_LOOKUP_SCALAR


def lookup_isas():
    """The names of the instruction sets this CPU and build can run the fused loop's lookups with, narrowest
    first."""
    return [name for isa, name in enumerate(LOOKUP_ISAS) if bytebpe_lookup_isa_supported(isa)]


def set_lookup_isa(name):
    """Run the fused loop's lookups with instruction set `name` (one of lookup_isas()) from now on; returns
    the one in use before. For tests and measurements, which compare the variants: call it while no encode
    runs."""
    if name not in lookup_isas():
        raise ValueError(f"lookups with {name!r} are not available here; choose from {lookup_isas()}")
    global lookup_isa
    previous = LOOKUP_ISAS[lookup_isa]
    lookup_isa = LOOKUP_ISAS.index(name)
    return previous


cdef inline void _hash_piece(MergeTable table, const uint8_t* data, Py_ssize_t n, Py_ssize_t start,
                             Py_ssize_t size, uint64_t* head, uint64_t* h, uint32_t* home_length) noexcept nogil:
    """Pass one of the fused loop for the piece data[start:start + size], one piece at a time: its head word
    and hash (0 for a piece longer than any token: its lookups then miss, no slot having its length), the
    length its home slot has if it holds the piece as a token of up to 8 bytes, and a prefetch of that slot."""
    if size <= table.max_token_len:
        head[0] = _head_word_of_8(data + start, size) if start + 8 <= n else _head_word(data + start, size)
        h[0] = _hash_bytes(head[0], data + start, size)
    else:
        head[0] = h[0] = 0
    home_length[0] = <uint32_t>size if size <= 8 else HOME_NO_MATCH
    __builtin_prefetch(table.slots.data() + (h[0] & table.mask))


cdef Py_ssize_t _encode_scanned(MergeTable table, const ScanSpec* scan, const uint8_t* data, Py_ssize_t n,
                                vector[Rank]& out, MergeCache& cache, PieceCacheCore* pieces) except -2 nogil:
    """The fused encode loop: scan pieces, look each up whole, merge the rest, append ids to `out`.

    Pieces come SCAN_BATCH at a time, in three passes, because every lookup is a random read of a table
    larger than the CPU's nearer caches and a read waited for stalls the loop: the first pass hashes every
    piece and prefetches its slot in the token table; the second finds the pieces that are tokens of up to 8
    bytes in their home slot (their slots mostly arrived meanwhile), without a branch, and lists the others,
    which it then looks up in full, prefetching for each that is no token the cache entry the third pass
    will read first; the third, over that list, appends the tokens' ids in runs and merges the other pieces
    through the caches. Where the CPU has AVX-512 (`lookup_isas`), the first two passes take eight pieces at
    a time (_home_lookup.h) and hand back to the scalar code the pieces they cannot take.

    A piece to merge of up to PIECE_CACHE_MAX_PIECE bytes is looked for in the persistent cache `pieces`
    (NULL when off), merged on a miss and offered to it; other pieces go through the call's merge cache.

    Returns -1, or the offset of a piece holding a byte the vocabulary lacks.
    """
    cdef Py_ssize_t piece_ends[SCAN_BATCH]
    # The rank of each piece of the batch that is a whole token, else NO_RANK.
    cdef Rank ranks[SCAN_BATCH]
    cdef uint64_t heads[SCAN_BATCH]
    cdef uint64_t hashes[SCAN_BATCH]
    # The `length` a piece's home slot has when it holds the piece as a token of up to 8 bytes: its size, or
    # HOME_NO_MATCH for a longer piece.
    cdef uint32_t home_lengths[SCAN_BATCH]
    # The batch's pieces that are not a token of up to 8 bytes found in its home slot, by index; then, of
    # those, the pieces that are no token.
    cdef uint32_t other[SCAN_BATCH + 8]
    cdef Py_ssize_t start = 0, end, count, k, j, size, run, others, merges
    cdef bint found
    cdef bint persist
    # Pieces of every script go to the persistent cache in calls (or batch groups) of up to
    # MULTIBYTE_PERSIST_MAX_CALL_BYTES; in larger ones, those ending in a multi-byte character go to the
    # call's own cache.
    cdef bint any_script = pieces != NULL and cache.input_bytes <= MULTIBYTE_PERSIST_MAX_CALL_BYTES
    cdef const Slot* slots = table.slots.data()
    cdef const Slot* slot
    # The vector passes take pieces of up to 8 bytes: every one of them is within max_token_len, as the
    # scalar pass requires for hashing one.
    cdef bint wide = lookup_isa == BYTEBPE_LOOKUP_AVX512 and table.max_token_len >= 8
    cdef size_t rests
    while start < n:
        count = scan_pieces(scan, data, start, n, piece_ends, SCAN_BATCH)
        if wide:
            # The pieces the vector pass leaves (longer than 8 bytes, or near the text's end) are listed in
            # `other` for the scalar pass, which the second vector pass then overwrites.
            rests = bytebpe_hash_pieces_avx512(data, n, start, <const int64_t*>piece_ends, count, slots,
                                               table.mask, heads, hashes, home_lengths, other)
            for j in range(<Py_ssize_t>rests):
                k = other[j]
                end = piece_ends[k - 1] if k else start
                _hash_piece(table, data, n, end, piece_ends[k] - end, &heads[k], &hashes[k], &home_lengths[k])
            others = <Py_ssize_t>bytebpe_home_ranks_avx512(slots, table.mask, heads, hashes, home_lengths, count,
                                                           ranks, other)
        else:
            end = start
            for k in range(count):
                _hash_piece(table, data, n, end, piece_ends[k] - end, &heads[k], &hashes[k], &home_lengths[k])
                end = piece_ends[k]
            others = 0
            for k in range(count):
                # Most pieces are tokens of up to 8 bytes in their home slot: one test, and no branch at all.
                # Lengths vary at random, and so do the pieces that fail the test (in English about one in
                # eight): a branch on either mispredicted. Those are listed and looked up in the loop below.
                slot = slots + (hashes[k] & table.mask)
                found = (slot.head == heads[k]) & (slot.length == home_lengths[k])
                ranks[k] = (slot.rank_plus_one - 1) | (<Rank>found - 1)      # NO_RANK unless found
                other[others] = <uint32_t>k
                others += not found
        merges = 0
        for j in range(others):     # a longer token, one displaced from its home slot, or none
            k = other[j]
            end = piece_ends[k - 1] if k else start
            size = piece_ends[k] - end
            if size <= table.max_token_len:
                # About half the pieces here are no token (in English): the Bloom filter (one word of 256 KiB
                # for cl100k_base) rules most of them out without walking the token table's chain.
                if table._maybe_token(hashes[k]):
                    ranks[k] = table.rank_of_hashed(data + end, size, heads[k], hashes[k])
                else:
                    ranks[k] = NO_RANK
                if ranks[k] == NO_RANK and size >= 3:
                    if pieces != NULL and _piece_cacheable(data + end, size, any_script):
                        pieces.prefetch(hashes[k])
                    elif not cache.slots.empty():
                        __builtin_prefetch(&cache.slots[hashes[k] & cache.mask])
            other[merges] = <uint32_t>k      # the list keeps the pieces that are no token, in order
            merges += ranks[k] == NO_RANK
        run = 0     # ranks[run:k] are whole tokens not yet appended
        for j in range(merges):
            k = other[j]
            if run < k:
                out.insert(out.end(), ranks + run, ranks + k)
            run = k + 1
            start = piece_ends[k - 1] if k else start
            end = piece_ends[k]
            size = end - start
            if cache.memo_entries.empty():  # the call's first piece that is not a token: its memo is made now
                _make_memo(cache)
            # One or two bytes merge faster than a cache lookup; a piece longer than any token is too rare.
            if size <= 2 or size > table.max_token_len:
                if table.merge_piece(data + start, size, out, &cache.memo):
                    return start
                continue
            persist = pieces != NULL and _piece_cacheable(data + start, size, any_script)
            if _merge_through_caches(table, cache, pieces, persist, data + start, size, n - start, heads[k],
                                     hashes[k], n, out):
                return start
        if run < count:
            out.insert(out.end(), ranks + run, ranks + count)
        start = piece_ends[count - 1]
    return -1


cdef inline void _start_merge_cache(MergeCache& cache, Py_ssize_t input_bytes,
                                   const uint32_t* char_starts) noexcept nogil:
    """A merge cache for `input_bytes` of text; its tables are made when a piece first needs them."""
    cache.input_bytes = input_bytes
    cache.counts = PieceCacheCounts(0, 0, 0, 0)
    cache.declined = False
    cache.memo.char_starts = char_starts


cdef Py_ssize_t _scan_text_range(MergeTable table, const ScanSpec* scan, const Span* segments,
                                 const Py_ssize_t* text_ends, Py_ssize_t first_text, Py_ssize_t end_text,
                                 Py_ssize_t first_segment, vector[Rank]& out, vector[int64_t]& offsets,
                                 Py_ssize_t* failed_offset, MergeCache& cache,
                                 PieceCacheCore* pieces) except -2 nogil:
    """Encode texts first_text..end_text - 1 (their segments start at `first_segment`; text i's end at
    text_ends[i]), appending ids to `out` and, after each text, the size of `out` to `offsets`.

    Returns -1, or the index of a segment with a byte the vocabulary lacks (at `failed_offset`).
    """
    cdef Py_ssize_t i, k, failed, begin = first_segment
    for i in range(first_text, end_text):
        for k in range(begin, text_ends[i]):
            if segments[k].rank != NO_RANK:      # a special token
                out.push_back(segments[k].rank)
                continue
            failed = _encode_scanned(table, scan, segments[k].data, segments[k].size, out, cache, pieces)
            if failed >= 0:
                failed_offset[0] = failed
                return k
        offsets.push_back(out.size())
        begin = text_ends[i]
    return -1


cdef inline bint _holds_bytes(const uint8_t* at, const uint8_t* end, const uint8_t* needle,
                              Py_ssize_t m) noexcept nogil:
    """Whether [at, end) holds the m >= 1 bytes `needle`: memchr finds each candidate first byte (vectorized in
    libc), and a compare checks the rest."""
    while end - at >= m:
        at = <const uint8_t*>memchr(at, needle[0], end - at - m + 1)
        if at == NULL:
            return False
        if memcmp(at + 1, needle + 1, m - 1) == 0:
            return True
        at += 1
    return False


cdef bint _holds_anchor(vector[Span]& segments, Py_ssize_t first, bytes anchor) except -1:
    """Whether the UTF-8 of an ordinary segment from segments[first] on holds the bytes `anchor` (not empty)."""
    cdef const uint8_t* needle = <const uint8_t*>PyBytes_AS_STRING(anchor)
    cdef Py_ssize_t m = PyBytes_GET_SIZE(anchor)
    cdef Py_ssize_t k
    if m == 0:
        raise ValueError("an empty anchor is in every text")
    for k in range(first, <Py_ssize_t>segments.size()):
        if segments[k].rank == NO_RANK and _holds_bytes(segments[k].data, segments[k].data + segments[k].size,
                                                        needle, m):     # (rank set: a special token split out)
            return True
    return False


cdef extern from *:
    """
    static inline int bytebpe_is_exact_str(PyObject* o) { return PyUnicode_CheckExact(o); }
    static inline Py_ssize_t bytebpe_str_length(PyObject* o) { return PyUnicode_GET_LENGTH(o); }
    """
    bint _is_exact_str "bytebpe_is_exact_str"(PyObject* o) noexcept
    Py_ssize_t _str_length "bytebpe_str_length"(PyObject* o) noexcept


def str_chars(list texts not None):
    """How many characters the items of `texts` hold in all when every one is exactly a str (not a
    subclass), else -1: one pass in C over a batch, where Python's type check and sum took two, each
    reading every str's header (a batch's strs are scattered, and those reads mostly miss the caches)."""
    cdef Py_ssize_t i, total = 0
    cdef PyObject* item
    for i in range(PyList_GET_SIZE(texts)):
        item = PyList_GET_ITEM(texts, i)
        if not _is_exact_str(item):
            return -1
        total += _str_length(item)
    return total


def text_holds(str text not None, bytes needle not None):
    """Whether the UTF-8 of `text` holds the bytes `needle` (not empty), searched as `_holds_anchor` searches.
    (The UTF-8 is the one CPython keeps with the str.)"""
    cdef Py_ssize_t n
    cdef const uint8_t* at = <const uint8_t*>PyUnicode_AsUTF8AndSize(text, &n)
    if PyBytes_GET_SIZE(needle) == 0:
        raise ValueError("an empty needle is in every text")
    return _holds_bytes(at, at + n, <const uint8_t*>PyBytes_AS_STRING(needle), PyBytes_GET_SIZE(needle))


def needle_starts(str text not None, bytes needle not None, Py_ssize_t limit):
    """The character indexes in `text` where the UTF-8 bytes `needle` (not empty) start, overlapping ones
    included, in order: at most `limit` + 1 of them (one more than `limit` says there are more). The
    disallowed special-token check matches its tokens only there. (The UTF-8 is the one CPython keeps with
    the str; a text with lone surrogates has none: UnicodeEncodeError.)"""
    cdef Py_ssize_t n, m = PyBytes_GET_SIZE(needle), chars = 0
    cdef const uint8_t* data = <const uint8_t*>PyUnicode_AsUTF8AndSize(text, &n)
    cdef const uint8_t* counted = data
    cdef const uint8_t* at = data
    cdef const uint8_t* end = data + n
    cdef const uint8_t* first = <const uint8_t*>PyBytes_AS_STRING(needle)
    cdef bint ascii = PyUnicode_IS_ASCII(text)
    cdef list starts = []
    if m == 0:
        raise ValueError("an empty needle is in every text")
    while end - at >= m and PyList_GET_SIZE(starts) <= limit:
        at = <const uint8_t*>memchr(at, first[0], end - at - m + 1)
        if at == NULL:
            break
        if memcmp(at + 1, first + 1, m - 1) == 0:
            # Characters before `at`: every byte that does not continue a character starts one.
            chars += (at - counted) if ascii else _characters_in(counted, at - counted)
            counted = at
            starts.append(chars)
        at += 1
    return starts


cdef tuple _anchored_check(tuple deferred_check, object special_split, bint scanned, texts):
    """`deferred_check` when the core can run it by its anchor (a compiled scanner's whole texts, a
    non-empty anchor); otherwise it is run now on every str of `texts` and None is returned."""
    if deferred_check is not None and (special_split is not None or not scanned or not deferred_check[0]):
        for text in texts:
            if isinstance(text, str):
                deferred_check[1](text)
        return None
    return deferred_check


cdef int _raise_missing_piece(const ScanSpec* scan, const Span* segment, Py_ssize_t at) except -1:
    """The error for the piece of `segment` at byte `at`, which holds a byte the vocabulary lacks."""
    cdef Py_ssize_t piece_end[1]
    scan_pieces(scan, segment.data, at, segment.size, piece_end, 1)
    _raise_missing_byte(PyBytes_FromStringAndSize(<const char*>segment.data + at, piece_end[0] - at))


cdef _raise_missing_byte(bytes data):
    raise ValueError(
        f"cannot encode {data[:40]!r}: one of its bytes is not a token of this vocabulary "
        "(a byte-level vocabulary must give all 256 single bytes a rank)")


@cython.final
cdef class CoreBPE:
    """A merge table plus special tokens: text in, ids out, and ids back to bytes.

    The pre-tokenizer is a compiled `Scanner` or any callable str -> list[str]; `special_split`, when given, is the
    ``split`` method of a regex with one capturing group around the allowed special tokens, so that its
    result alternates ordinary text and special tokens.
    """
    cdef readonly MergeTable table
    cdef dict special_ids      # str -> id
    cdef dict special_bytes    # id -> UTF-8 bytes
    # DecodeStream's texts of the ids whose bytes are whole characters by themselves (None: not looked at yet;
    # False: not whole characters); made at the first stream, one slot per id up to the largest.
    cdef list token_texts

    def __cinit__(self, MergeTable table not None, dict special_tokens not None, dict decode_bytes=None):
        self.table = table
        self.special_ids = dict(special_tokens)
        self.special_bytes = {}
        for text, token in special_tokens.items():
            # An id with two names decodes to the first (tiktoken does so for o200k_harmony's 200018).
            self.special_bytes.setdefault(token, text.encode("utf-8"))
        # Ids beyond the table that decode to other bytes than their name's UTF-8 (an HF added token goes
        # through HF's ByteLevel decoder), or that only decode (an HF vocabulary entry no text can produce).
        if decode_bytes is not None:
            for token, data in decode_bytes.items():
                if not isinstance(token, int) or not isinstance(data, bytes):
                    raise TypeError(f"decode_bytes maps int ids to bytes, got {token!r}: {data!r}")
                self.special_bytes[token] = data

    # ---- encoding ---------------------------------------------------------------------------------------

    cdef Py_ssize_t _gather_ordinary(self, object findall, str text, vector[Span]& spans, list owners) except -1:
        """Pre-tokenize `text` and append a span per piece; returns the bytes gathered.

        A piece may also be an int: an id the pre-tokenizer chose itself, taken as it is (a tokenizer.json's
        model gives a character its vocabulary lacks its byte-fallback or unk id: parts/model.py), or bytes:
        a piece cut between the bytes of a character (a tokenizer.json whose pre-tokenizer splits after its
        ByteLevel step, parts/pre_tokenizers.py). Such pieces come from the package's own pre-tokenizers."""
        # A private copy of the pieces, held in `owners` (the ownership rule, _shared.pxd): the callable may
        # return a list that someone else keeps and changes (the copy is a sliver of the work).
        cdef list pieces = list(findall(text))
        owners.append(pieces)
        cdef Py_ssize_t count = PyList_GET_SIZE(pieces)
        cdef Py_ssize_t i, size, total = 0
        cdef const uint8_t* data
        if spans.capacity() < spans.size() + count:
            # Grow geometrically: a batch gathers text after text into one vector, and reserving exactly
            # what each text needs would copy the whole vector every time.
            spans.reserve(max(2 * spans.capacity(), spans.size() + count))
        for i in range(count):
            piece = <object>PyList_GET_ITEM(pieces, i)
            if type(piece) is int:
                if not 0 <= piece <= MAX_TOKEN_ID:
                    raise ValueError(f"the pre-tokenizer gave id {piece}, outside 0..{MAX_TOKEN_ID}")
                spans.push_back(Span(NULL, 0, <Rank>piece))
                continue
            if type(piece) is bytes:
                data, size = <const uint8_t*>PyBytes_AS_STRING(piece), PyBytes_GET_SIZE(piece)
            else:
                data = _utf8_view_of_held(piece, &size)
            # Look the whole piece up now, while its bytes are in cache: by the time every piece has been
            # gathered, the first ones are long evicted, and most pieces are whole tokens.
            spans.push_back(Span(data, size, self.table.rank_of(data, size)))
            total += size
        return total

    cdef Py_ssize_t _gather(self, object pretokenizer, object special_split, str text,
                            vector[Span]& spans, list owners) except -1:
        """Append `text` as spans, special tokens split out; returns the UTF-8 bytes gathered.

        With a compiled `Scanner` an ordinary stretch of text is one span, scanned later without the GIL;
        with a findall callable it is pre-tokenized now, one span per piece.
        """
        cdef bint scanned = type(pretokenizer) is Scanner
        if special_split is None:
            return self._add_segment(text, spans, owners) if scanned else \
                self._gather_ordinary(pretokenizer, text, spans, owners)
        cdef list parts = special_split(text)
        cdef Py_ssize_t i, total = 0
        for i in range(PyList_GET_SIZE(parts)):
            part = <object>PyList_GET_ITEM(parts, i)
            if i & 1:
                spans.push_back(Span(NULL, 0, <Rank>self.special_ids[part]))
            elif part:
                total += self._add_segment(part, spans, owners) if scanned else \
                    self._gather_ordinary(pretokenizer, part, spans, owners)
        return total

    cdef Py_ssize_t _merge_spans(self, const Span* spans, Py_ssize_t count, vector[Rank]& out,
                                 PieceCacheCore* pieces) except -1 nogil:
        cdef Py_ssize_t i, size
        cdef size_t before
        cdef uint64_t h = 0
        cdef uint64_t key[PIECE_CACHE_KEY_WORDS]
        cdef bint cacheable
        cdef PieceCacheCounts counts = PieceCacheCounts(0, 0, 0, 0)
        for i in range(count):
            if spans[i].rank != NO_RANK:
                out.push_back(spans[i].rank)
                continue
            size = spans[i].size
            cacheable = pieces != NULL and size >= 3 and _piece_cacheable(spans[i].data, size, True)
            if cacheable:
                h = _hash_bytes(_head_word(spans[i].data, size), spans[i].data, size)
                piece_cache_key(spans[i].data, <uint32_t>size, <size_t>size, key)
                if _piece_cache_lookup(pieces, h, key, size, out, counts):
                    continue
            before = out.size()
            if self.table.merge_piece(spans[i].data, size, out, NULL):
                return 1 + i    # which span failed, so the caller can name it
            if cacheable:
                _piece_cache_offer(pieces, h, key, size, out.data() + before, out.size() - before, counts)
        _hand_over_counts(pieces, counts)
        return 0

    cdef Py_ssize_t _merge_texts(self, vector[Span]& spans, vector[Py_ssize_t]& text_ends, vector[Rank]& out,
                                 vector[int64_t]& offsets, PieceCacheCore* pieces) except -1 nogil:
        """Merge the gathered spans text by text, recording where each text's ids end.

        Returns 0, or 1 + the index of a span holding a byte the vocabulary lacks.
        """
        cdef Py_ssize_t i, failed, begin = 0
        for i in range(<Py_ssize_t>text_ends.size()):
            failed = self._merge_spans(spans.data() + begin, text_ends[i] - begin, out, pieces)
            if failed:
                return failed + begin
            offsets.push_back(out.size())
            begin = text_ends[i]
        return 0

    cdef int _merge_group(self, vector[Span]& spans, vector[Py_ssize_t]& text_ends, Py_ssize_t total_bytes,
                          vector[Rank]& out, vector[int64_t]& offsets, PieceCache cache) except -1:
        cdef PieceCacheCore* pieces = cache.core if cache is not None else NULL
        cdef Py_ssize_t failed
        _reserve_for(out, total_bytes)
        if total_bytes >= RELEASE_GIL_MIN_BYTES:
            with nogil:
                failed = self._merge_texts(spans, text_ends, out, offsets, pieces)
        else:
            failed = self._merge_texts(spans, text_ends, out, offsets, pieces)
        if failed:
            _raise_missing_byte(PyBytes_FromStringAndSize(
                <const char*>spans[failed - 1].data, spans[failed - 1].size))
        return 0

    # ---- the compiled scanner's path: the whole text is handed over, work happens without the GIL --------

    cdef Py_ssize_t _add_segment(self, str text, vector[Span]& segments, list owners) except -1:
        cdef Py_ssize_t size
        cdef const uint8_t* data = _utf8_view(text, &size, owners)
        segments.push_back(Span(data, size, NO_RANK))
        return size

    cdef Py_ssize_t _scan_texts(self, const ScanSpec* scan, vector[Span]& segments, vector[Py_ssize_t]& text_ends,
                                Py_ssize_t total_bytes, vector[Rank]& out, vector[int64_t]& offsets,
                                Py_ssize_t* failed_offset, PieceCacheCore* pieces,
                                const uint32_t* char_starts) except -2 nogil:
        """Encode the segments (`total_bytes` of text) text by text, recording where each text's ids end.

        Returns -1, or the index of a segment with a byte the vocabulary lacks (at `failed_offset`).
        """
        cdef Py_ssize_t failed
        cdef MergeCache cache
        # Made on first use (_encode_scanned): allocating and clearing it was ~600 of the ~7,900 instructions
        # of encode("hello world"), whose pieces are whole tokens.
        _start_merge_cache(cache, total_bytes, char_starts)
        failed = _scan_text_range(self.table, scan, segments.data(), text_ends.data(), 0, text_ends.size(), 0,
                                  out, offsets, failed_offset, cache, pieces)
        _hand_over_counts(pieces, cache.counts)
        return failed

    cdef int _scan_group(self, const ScanSpec* scan, vector[Span]& segments, vector[Py_ssize_t]& text_ends,
                         Py_ssize_t total_bytes, vector[Rank]& out, vector[int64_t]& offsets,
                         PieceCache cache) except -1:
        cdef PieceCacheCore* pieces = cache.core if cache is not None else NULL
        cdef Py_ssize_t failed, failed_offset = 0
        # Read with the GIL, which every build of the table holds (_note_text): built once, never changed.
        cdef const uint32_t* char_starts = self.table.char_starts.data() if self.table.char_starts.size() else NULL
        _reserve_for(out, total_bytes)
        if total_bytes >= RELEASE_GIL_MIN_BYTES:
            with nogil:
                failed = self._scan_texts(scan, segments, text_ends, total_bytes, out, offsets, &failed_offset,
                                          pieces, char_starts)
        else:
            failed = self._scan_texts(scan, segments, text_ends, total_bytes, out, offsets, &failed_offset,
                                      pieces, char_starts)
        if failed >= 0:
            _raise_missing_piece(scan, &segments[failed], failed_offset)
        return 0

    cdef Py_ssize_t _gather_scanned(self, Scanner scanner, object special_split, str text, vector[Span]& segments,
                                    list owners, tuple deferred_check) except -1:
        """`_gather` of `text` for a compiled scanner, counted toward the character starts first, and refused
        by `deferred_check` when its UTF-8 holds the anchor (see `encode`): the bytes gathered."""
        cdef Py_ssize_t first = segments.size(), size
        self._note_text(text)
        size = self._gather(scanner, special_split, text, segments, owners)
        if deferred_check is not None and _holds_anchor(segments, first, deferred_check[0]):
            deferred_check[1](text)
        return size

    cdef inline int _note_text(self, str text) except -1:
        """Count the text toward building the table's character starts (_merge_char_starts.pxi), and build
        them once CHAR_STARTS_AFTER_CHARS characters of text that is not all ASCII have come."""
        if not self.table.char_starts_built and not PyUnicode_IS_ASCII(text):
            self.table.non_ascii_chars += PyUnicode_GET_LENGTH(text)
            if self.table.non_ascii_chars >= CHAR_STARTS_AFTER_CHARS:
                _build_char_starts(self.table)
        return 0

    cdef int _encode_into(self, object pretokenizer, object special_split, str text, vector[Rank]& out,
                          tuple deferred_check, list owners=None) except -1:
        """Append the ids of `text` to `out`. `owners`, when given, receives what the gathered UTF-8 belongs to
        (with a compiled scanner and no special-token split: one item, the text's UTF-8 as a whole)."""
        cdef vector[Span] spans
        cdef vector[Span] segments
        if owners is None:
            owners = []
        cdef Py_ssize_t total
        cdef vector[Py_ssize_t] text_ends
        cdef vector[int64_t] offsets
        # Held for the whole call (the ownership rule): the table's cache may be replaced meanwhile.
        cdef PieceCache cache = self.table.current_piece_cache()
        cdef bint scanned = type(pretokenizer) is Scanner
        # (the anchor test sees only a compiled scanner's whole text, and an empty anchor is in every text)
        deferred_check = _anchored_check(deferred_check, special_split, scanned, (text,))
        if scanned:
            total = self._gather_scanned(pretokenizer, special_split, text, segments, owners, deferred_check)
            text_ends.push_back(segments.size())
            return self._scan_group(&(<Scanner>pretokenizer).spec, segments, text_ends, total, out, offsets, cache)
        total = self._gather(pretokenizer, special_split, text, spans, owners)
        text_ends.push_back(spans.size())
        return self._merge_group(spans, text_ends, total, out, offsets, cache)

    def encode(self, pretokenizer, special_split, str text not None, tuple deferred_check=None):
        """Ids of `text`: pre-tokenized by `pretokenizer` (a compiled `Scanner`, or any callable returning the
        pieces as ``regex.findall`` does), special tokens split out by `special_split` (or None).

        `deferred_check`, when given, is (anchor, check): `check(text)` runs before any encoding if the text's
        UTF-8 holds the bytes `anchor` (the prefix every disallowed special token starts with; when empty,
        on every text), and raises to refuse the text: the memchr for the anchor replaces a regex search of
        the whole str on every call.
        """
        cdef vector[Rank] out
        self._encode_into(pretokenizer, special_split, text, out, deferred_check)
        return self._to_list(out, 0, out.size())

    cdef list _to_list(self, vector[Rank]& ids, Py_ssize_t begin, Py_ssize_t end):
        """ids[begin:end] as a list of Python ints, reusing the table's int objects.

        The list is not tracked by Python's cycle collector: it holds only ints, which can never be part of
        a reference cycle, so the collector has nothing to find in it, yet while tracked every collection of
        its generation reads all of its items (batches of many results spent half their time there). CPython
        untracks tuples and dicts of atomic values for the same reason. The price: a cycle that a caller builds *through* such a list (appending an object
        that refers back to it) is not collected while the list stays untracked.
        """
        cdef list result = PyList_New(end - begin)
        PyObject_GC_UnTrack(<PyObject*>result)
        cdef list rank_objects = self.table.rank_objects
        cdef Py_ssize_t i, limit = PyList_GET_SIZE(rank_objects)
        # The items arrays themselves, with borrowed pointers: one reference taken per id, where object
        # variables cost two more reference updates per id.
        cdef PyObject** source = PySequence_Fast_ITEMS(rank_objects)
        cdef PyObject** target = PySequence_Fast_ITEMS(result)
        cdef PyObject* none = <PyObject*>None
        cdef PyObject* item
        cdef Rank token, ahead
        cdef object made
        for i in range(begin, end):
            # The int objects of a long text's ids are scattered over megabytes, and the encode has just
            # evicted them: the loads of the items array (32 ids ahead) and of the objects whose counts go
            # up (16 ahead) are started early (8 ahead, the count's update still waited on its line).
            if i + 32 < end:
                ahead = ids[i + 32]
                if ahead < limit:
                    __builtin_prefetch(source + ahead)
            if i + 16 < end:
                ahead = ids[i + 16]
                if ahead < limit:
                    __builtin_prefetch(source[ahead])
            token = ids[i]
            item = source[token] if token < limit else none
            if item == none:    # a special token, beyond the mergeable ranks or in a gap of them
                made = PyLong_FromUnsignedLong(token)
                item = <PyObject*>made
            Py_INCREF(<object>item)
            target[i - begin] = item
        return result

    def count(self, pretokenizer, special_split, str text not None, tuple deferred_check=None):
        """How many ids `encode` gives for `text` (the same arguments, the same errors), without a Python
        object per id."""
        cdef vector[Rank] out
        self._encode_into(pretokenizer, special_split, text, out, deferred_check)
        return out.size()

    def encode_to_numpy(self, pretokenizer, special_split, str text not None, tuple deferred_check=None):
        """Like `encode`, but a uint32 numpy array built straight from the C buffer."""
        cdef vector[Rank] out
        self._encode_into(pretokenizer, special_split, text, out, deferred_check)
        return _to_numpy(out)

    def encode_pieces(self, list pieces not None):
        """Merge already pre-tokenized pieces (benchmarks time the merge stage alone with this)."""
        cdef vector[Rank] out
        self._encode_into(_identity_findall(pieces), None, "", out, None)
        return self._to_list(out, 0, out.size())

    def encode_batch(self, pretokenizer, special_split, texts, bint flat=False, tuple deferred_check=None,
                     bint lists_per_group=False):
        """Encode many texts into one buffer, a group of texts at a time without the GIL.

        With a compiled `Scanner` the whole work on a group runs without the GIL; with a `findall`
        callable only the merging does. Returns a list of id lists, or with `flat` a (uint32 ids, int64
        offsets) pair of numpy arrays where text i is ``ids[offsets[i]:offsets[i + 1]]``.
        `deferred_check` is `encode`'s, applied to each text as it is gathered, before its group is encoded: a
        refused text raises and the batch's ids are dropped.

        Lists are made with the GIL, at the end, or with `lists_per_group` as soon as each group is encoded:
        for a pool thread, whose GIL spells then alternate with the other threads' work without it. A lone
        caller builds them at the end: on one thread, the table's and the int objects' cache lines would
        evict each other at every group.
        """
        cdef bint scanned = type(pretokenizer) is Scanner
        cdef const ScanSpec* scan = &(<Scanner>pretokenizer).spec if scanned else NULL
        cdef vector[Span] spans
        cdef vector[Span] segments
        cdef vector[Py_ssize_t] text_ends      # span (or segment) index where each text of the group ends
        cdef vector[Rank] out
        cdef vector[int64_t] offsets
        cdef list owners = []
        cdef Py_ssize_t group_bytes = 0
        # Iterate over a private copy: the caller's list may change while a group is merged without the
        # GIL, and the result must have one entry per text that was actually encoded.
        cdef list snapshot = list(texts)
        cdef list lists = []
        # Held for the whole call (the ownership rule): the table's cache may be replaced meanwhile.
        cdef PieceCache cache = self.table.current_piece_cache()
        deferred_check = _anchored_check(deferred_check, special_split, scanned, snapshot)
        offsets.push_back(0)
        for text in snapshot:
            if not isinstance(text, str):
                raise TypeError(f"expected str, got {type(text).__name__}")
            if scanned:
                group_bytes += self._gather_scanned(pretokenizer, special_split, text, segments, owners,
                                                    deferred_check)
                text_ends.push_back(segments.size())
            else:
                group_bytes += self._gather(pretokenizer, special_split, text, spans, owners)
                text_ends.push_back(spans.size())
            # Work in groups: the pieces are still in cache, and memory stays bounded by the group size
            # rather than growing with the batch.
            if group_bytes >= BATCH_GROUP_BYTES:
                self._flush_group(scan, spans, segments, text_ends, group_bytes, out, offsets, cache)
                del owners[:]
                group_bytes = 0
                if lists_per_group and not flat:
                    self._append_lists(lists, out, offsets)
        self._flush_group(scan, spans, segments, text_ends, group_bytes, out, offsets, cache)
        if flat:
            return _to_numpy(out), _array_from(offsets.data(), offsets.size(), sizeof(int64_t), "int64")
        self._append_lists(lists, out, offsets)
        return lists

    def flat_batch(self, Scanner scanner not None, special_split, list texts not None, tuple deferred_check,
                   Py_ssize_t workers):
        """`texts` gathered for `encode_batch(flat=True)` on `workers` threads at once: a `FlatBatch` whose
        `work()` each thread calls (the calling one too), then `result()`. Gathering needs the GIL and runs
        here, on the calling thread; encoding runs in `work()` without it."""
        return FlatBatch(self, scanner, special_split, texts, deferred_check, workers)

    cdef int _append_lists(self, list lists, vector[Rank]& out, vector[int64_t]& offsets) except -1:
        """Append the id list of each text in `out` (text k is out[offsets[k]:offsets[k + 1]]) to `lists`,
        and empty `out` and `offsets` for the next texts."""
        cdef Py_ssize_t k
        for k in range(<Py_ssize_t>offsets.size() - 1):
            lists.append(self._to_list(out, offsets[k], offsets[k + 1]))
        out.clear()
        offsets.clear()
        offsets.push_back(0)
        return 0

    cdef int _flush_group(self, const ScanSpec* scan, vector[Span]& spans, vector[Span]& segments,
                          vector[Py_ssize_t]& text_ends, Py_ssize_t group_bytes, vector[Rank]& out,
                          vector[int64_t]& offsets, PieceCache cache) except -1:
        if scan != NULL:
            self._scan_group(scan, segments, text_ends, group_bytes, out, offsets, cache)
        else:
            self._merge_group(spans, text_ends, group_bytes, out, offsets, cache)
        spans.clear()
        segments.clear()
        text_ends.clear()
        return 0

    # ---- decoding ---------------------------------------------------------------------------------------

    cdef Py_ssize_t _check_id(self, object token) except -1:
        cdef int overflow = 0
        cdef long long value
        if not isinstance(token, int):
            try:
                token = token.__index__()    # numpy integers
            except AttributeError:
                raise TypeError(f"token ids must be int, got {type(token).__name__}: {token!r}") from None
        value = PyLong_AsLongLongAndOverflow(token, &overflow)     # C compares: a step of decode_stream
        if overflow or value < 0 or value > 0xFFFFFFFF:
            raise TokenIdOverflowError(f"invalid token id {token}: not a 32-bit unsigned integer")
        if value > MAX_TOKEN_ID:
            raise InvalidTokenError(f"invalid token id {token}: not in this vocabulary")
        return <Py_ssize_t>value

    cdef bytes _special_token_bytes(self, Py_ssize_t token):
        try:
            return self.special_bytes[token]
        except KeyError:
            raise InvalidTokenError(f"invalid token id {token}: not in this vocabulary") from None

    cdef int _append_token(self, Py_ssize_t token, vector[uint8_t]& buffer) except -1:
        """Append the bytes of a checked id to `buffer`."""
        cdef MergeTable table = self.table
        cdef const uint8_t* start
        cdef bytes special
        if token <= table.max_rank and table.token_len[token] >= 0:
            start = table.blob.data() + table.token_start[token]
            buffer.insert(buffer.end(), start, start + table.token_len[token])
        else:
            special = self._special_token_bytes(token)
            start = <const uint8_t*>PyBytes_AS_STRING(special)
            buffer.insert(buffer.end(), start, start + PyBytes_GET_SIZE(special))
        return 0

    cdef bytes _decode_id_buffer(self, const Py_buffer* view):
        """decode_bytes of a one-dimensional, contiguous buffer of native integers (numpy arrays, array.array):
        read in place, without a Python int per id."""
        cdef vector[uint8_t] buffer
        cdef Py_ssize_t i, n = view.shape[0], size = view.itemsize
        cdef bint signed = (<bytes>view.format).lstrip(b"@=").islower()
        cdef const uint8_t* data = <const uint8_t*>view.buf
        cdef int64_t value
        cdef uint64_t unsigned_value
        buffer.reserve(n * 4)
        for i in range(n):
            if signed:
                if size == 1: value = (<const signed char*>data)[i]
                elif size == 2: value = (<const short*>data)[i]
                elif size == 4: value = (<const int32_t*>data)[i]
                else: value = (<const int64_t*>data)[i]
                if value < 0 or value > 0xFFFFFFFF:
                    raise TokenIdOverflowError(f"invalid token id {value}: not a 32-bit unsigned integer")
                unsigned_value = <uint64_t>value
            else:
                if size == 1: unsigned_value = data[i]
                elif size == 2: unsigned_value = (<const unsigned short*>data)[i]
                elif size == 4: unsigned_value = (<const uint32_t*>data)[i]
                else: unsigned_value = (<const uint64_t*>data)[i]
                if unsigned_value > 0xFFFFFFFF:
                    raise TokenIdOverflowError(f"invalid token id {unsigned_value}: not a 32-bit unsigned integer")
            if unsigned_value > MAX_TOKEN_ID:
                raise InvalidTokenError(f"invalid token id {unsigned_value}: not in this vocabulary")
            self._append_token(<Py_ssize_t>unsigned_value, buffer)
        return PyBytes_FromStringAndSize(<const char*>buffer.data(), buffer.size())

    def decode_bytes(self, tokens):
        """The bytes of a sequence of ids (list, tuple, numpy array or any iterable of ints)."""
        cdef Py_buffer view
        if isinstance(tokens, (str, bytes)):
            raise TypeError(f"expected a sequence of token ids, got {type(tokens).__name__}")
        if not isinstance(tokens, (list, tuple)) and _integer_buffer(tokens, &view):
            try:
                return self._decode_id_buffer(&view)
            finally:
                PyBuffer_Release(&view)
        if hasattr(tokens, "tolist") and not isinstance(tokens, list):
            tokens = tokens.tolist()     # numpy arrays: plain ints in one C pass
            if not isinstance(tokens, list):    # a numpy scalar or 0-d array is one id, not a sequence
                raise TypeError("expected a sequence of token ids, got a single value")
        else:
            # Always a private copy: an id's __index__ may run Python code that changes the caller's list.
            tokens = list(tokens)
        cdef vector[uint8_t] buffer
        cdef Py_ssize_t i
        buffer.reserve(PyList_GET_SIZE(tokens) * 4)
        for i in range(PyList_GET_SIZE(<list>tokens)):
            self._append_token(self._check_id(<object>PyList_GET_ITEM(<list>tokens, i)), buffer)
        return PyBytes_FromStringAndSize(<const char*>buffer.data(), buffer.size())

    cdef int _char_offsets_into(self, const Rank* ids, Py_ssize_t count, str text, int64_t* result,
                                object utf8=None, bint specials=True) except -1:
        """(start, end) character offsets of each id's bytes over `text`'s UTF-8, written to result[:2 * count]:
        `start` the character holding the token's first byte, `end` one past the one holding its last.
        ValueError when the ids' bytes are not `text`'s length. `utf8`, when given, is that UTF-8 as the
        encoding gathered it (the ASCII str itself, or bytes); else it is made here. `specials=False` when
        the ids are known to hold no special token (encoded without a special-token split)."""
        cdef Py_ssize_t n_bytes, at, i
        cdef list owners = []
        cdef const uint8_t* data
        cdef vector[int32_t] lengths    # of the special tokens among the ids, in order
        # The package's own UTF-8 view (as encode takes it): CPython's encoder is slower, and the copy it
        # makes stays with the str for as long as the str lives.
        if type(utf8) is bytes:
            data, n_bytes = <const uint8_t*><const char*>utf8, PyBytes_GET_SIZE(utf8)
        else:
            data = _utf8_view(text, &n_bytes, owners)
        cdef MergeTable table = self.table
        for i in range(count if specials else 0):
            if ids[i] > <Rank>table.max_rank or table.token_len[ids[i]] < 0:
                lengths.push_back(<int32_t>PyBytes_GET_SIZE(self._special_token_bytes(ids[i])))
        at = _offsets_of(ids, count, table.token_len.data(), table.max_rank,
                         lengths.data() if lengths.size() else NULL, data, n_bytes, PyUnicode_IS_ASCII(text), result)
        if at < 0:
            raise ValueError("the ids are not this text's: their bytes run past its end")
        if at != n_bytes:
            raise ValueError("the ids are not this text's: their bytes end before it does")
        return 0

    def char_offsets(self, list ids not None, str text not None):
        """For each of `ids` (the encoding of `text`), the characters of `text` its bytes come from: a list of
        (start, end) (see `_char_offsets_into`)."""
        cdef vector[Rank] checked
        cdef vector[int64_t] offsets
        cdef Py_ssize_t i
        checked.reserve(PyList_GET_SIZE(ids))
        for i in range(PyList_GET_SIZE(ids)):
            checked.push_back(<Rank>self._check_id(<object>PyList_GET_ITEM(ids, i)))
        offsets.resize(2 * checked.size())
        self._char_offsets_into(checked.data(), checked.size(), text, offsets.data())
        return [(offsets[2 * i], offsets[2 * i + 1]) for i in range(<Py_ssize_t>checked.size())]

    def encode_with_offsets(self, pretokenizer, special_split, str text not None, tuple deferred_check=None,
                            bint as_numpy=False):
        """`encode`'s ids and their character offsets (`_char_offsets_into`): a list and a list of (start, end),
        or with `as_numpy` a uint32 array and an (n, 2) int64 array (filled in place)."""
        cdef vector[Rank] out
        cdef vector[int64_t] offsets
        cdef Py_buffer view
        cdef list owners = []
        self._encode_into(pretokenizer, special_split, text, out, deferred_check, owners)
        # The text's UTF-8 as encode gathered it, when it is one piece: not made a second time.
        utf8 = owners[0] if special_split is None and type(pretokenizer) is Scanner and len(owners) == 1 else None
        if as_numpy:
            spans = _new_spans_array(out.size())
            if _numpy_head_known:   # (a new C-contiguous array, held here: its data pointer is its memory)
                self._char_offsets_into(out.data(), out.size(), text,
                                        <int64_t*>(<bytebpe_ndarray_head*><PyObject*>spans).data, utf8,
                                        special_split is not None)
                return _to_numpy(out), spans
            PyObject_GetBuffer(spans, &view, PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS)
            try:
                self._char_offsets_into(out.data(), out.size(), text, <int64_t*>view.buf, utf8,
                                        special_split is not None)
            finally:
                PyBuffer_Release(&view)
            return _to_numpy(out), spans
        offsets.resize(2 * out.size())
        self._char_offsets_into(out.data(), out.size(), text, offsets.data(), utf8, special_split is not None)
        return self._to_list(out, 0, out.size()), _offset_pairs(offsets.data(), out.size())

    def decode_single_token_bytes(self, token):
        cdef Py_ssize_t checked = self._check_id(token)
        if checked <= self.table.max_rank and self.table.token_len[checked] >= 0:
            return self.table._token_bytes(checked)
        return self._special_token_bytes(checked)


# The struct formats of native integers that decode reads in place (numpy's int8..uint64, array.array's).
_INTEGER_FORMATS = frozenset(b"bBhHiIlLqQnN")


@cython.final
cdef class FlatBatch:
    """One batch of texts encoded by several threads into one flat array (`CoreBPE.flat_batch`).

    Made with the GIL: every text is gathered (UTF-8 views, special tokens split out, the deferred check
    run), and the texts are cut into groups of consecutive texts. Then each thread that calls `work()` takes
    the next group not yet taken, encodes it without the GIL into a vector of its own and hands the vector
    over, until no group is left; a thread keeps one merge cache across its groups, as one long call would.
    Nothing a thread writes while it encodes is shared with another: a group's ids, offsets and failure are
    stored once, when it is done (adjacent groups' fields share cache lines, and a store per id into them
    would move those lines between cores). `result()` then copies the groups' ids into one array in order.
    The calling thread may take it as soon as `copied()` says every copy is made, without waiting for the
    other threads' `work()` calls to return (they touch nothing of the batch after their last copy).

    Ownership: the segments point into `owners` (the texts and their UTF-8 copies) and the piece cache is
    `cache`; both belong to this object, which every `work()` call holds for its whole run.
    """
    cdef CoreBPE core
    cdef Scanner scanner
    cdef PieceCache cache
    cdef list owners
    cdef vector[Span] segments
    cdef vector[Py_ssize_t] text_ends       # text i's segments end at segments[text_ends[i]]
    cdef vector[Py_ssize_t] group_ends      # group g is texts group_ends[g - 1] .. group_ends[g] - 1
    cdef vector[Py_ssize_t] group_bytes
    cdef vector[vector[Rank]] group_ids
    cdef vector[vector[int64_t]] group_offsets    # where each text of the group ends in group_ids[g]
    cdef vector[Py_ssize_t] group_failed          # -1, or the segment with a byte the vocabulary lacks
    cdef vector[Py_ssize_t] group_failed_offset
    cdef atomic[Py_ssize_t] next_group
    cdef atomic[Py_ssize_t] groups_done
    cdef atomic[int] stopped
    # The result's ids, copied in by the threads once every group is done (_assemble): ASSEMBLY_* below.
    cdef atomic[int] assembly
    cdef atomic[Py_ssize_t] next_copy
    cdef atomic[Py_ssize_t] copies_done
    cdef vector[Py_ssize_t] group_start     # where group g's ids go in `ids`
    cdef Rank* ids      # malloc'd; handed to the result array's owner by result()
    cdef Py_ssize_t total_ids
    cdef Py_ssize_t worker_bytes
    cdef const uint32_t* char_starts

    def __cinit__(self, CoreBPE core not None, Scanner scanner not None, special_split, list texts not None,
                  tuple deferred_check, Py_ssize_t workers):
        cdef Py_ssize_t size, total = 0, in_group = 0, target, remaining, i
        cdef vector[Py_ssize_t] text_bytes
        self.core = core
        self.scanner = scanner
        self.owners = []
        self.next_group.store(0)
        self.groups_done.store(0)
        self.stopped.store(0)
        self.assembly.store(ASSEMBLY_NOT_STARTED)
        self.next_copy.store(0)
        self.copies_done.store(0)
        self.ids = NULL
        # Held for the whole batch (the ownership rule): the table's cache may be replaced meanwhile.
        self.cache = core.table.current_piece_cache()
        deferred_check = _anchored_check(deferred_check, special_split, True, texts)
        for text in texts:
            if not isinstance(text, str):
                raise TypeError(f"expected str, got {type(text).__name__}")
            size = core._gather_scanned(scanner, special_split, text, self.segments, self.owners, deferred_check)
            self.text_ends.push_back(self.segments.size())
            text_bytes.push_back(size)
            total += size
        # Groups shrink toward the end of the batch (each is a share of what is left: FLAT_GROUP_SHARE per
        # thread, within FLAT_GROUP_MIN_BYTES .. BATCH_GROUP_BYTES), so that the threads finish close together
        # while the early groups stay large (each group costs a hand-over).
        remaining = total
        target = 0
        for i in range(<Py_ssize_t>text_bytes.size()):
            if in_group == 0:
                target = max(<Py_ssize_t>FLAT_GROUP_MIN_BYTES, min(<Py_ssize_t>BATCH_GROUP_BYTES,
                             remaining // max(<Py_ssize_t>1, workers * FLAT_GROUP_SHARE)))
            in_group += text_bytes[i]
            if in_group >= target or i + 1 == <Py_ssize_t>text_bytes.size():
                self.group_ends.push_back(i + 1)
                self.group_bytes.push_back(in_group)
                remaining -= in_group
                in_group = 0
        self.group_ids.resize(self.group_ends.size())
        self.group_offsets.resize(self.group_ends.size())
        fill_vector(self.group_failed, self.group_ends.size(), <Py_ssize_t>-1)
        fill_vector(self.group_start, self.group_ends.size(), <Py_ssize_t>0)
        fill_vector(self.group_failed_offset, self.group_ends.size(), <Py_ssize_t>0)
        self.worker_bytes = total // max(<Py_ssize_t>1, workers) + 1
        # Read with the GIL, as in CoreBPE._scan_group: built once (by _note_text above), never changed.
        self.char_starts = core.table.char_starts.data() if core.table.char_starts.size() else NULL

    def __dealloc__(self):
        free(self.ids)

    cdef void _assemble(self) noexcept nogil:
        """Once every group is done: the first thread here allocates `ids` (each group's place in it known
        now), then every thread copies groups into it, taking them one at a time as it took them to encode.
        Threads that arrive before the last group is done wait for it, which is time they would have spent
        idle anyway; after a stop, nothing is assembled."""
        cdef Py_ssize_t g, n_groups = self.group_ends.size(), total = 0
        cdef int state = ASSEMBLY_NOT_STARTED
        while self.groups_done.load() < n_groups:
            if self.stopped.load():
                return
            _yield_thread()
        if self.assembly.compare_exchange_strong(state, ASSEMBLY_ALLOCATING):
            for g in range(n_groups):
                self.group_start[g] = total
                total += self.group_ids[g].size()
            self.total_ids = total
            self.ids = <Rank*>malloc(max(total, <Py_ssize_t>1) * sizeof(Rank))
            self.assembly.store(ASSEMBLY_COPYING if self.ids != NULL else ASSEMBLY_NO_MEMORY)
        else:
            while self.assembly.load() == ASSEMBLY_ALLOCATING:
                _yield_thread()
        if self.assembly.load() != ASSEMBLY_COPYING:
            return
        while True:
            g = self.next_copy.fetch_add(1)
            if g >= n_groups:
                break
            if self.group_ids[g].size():
                memcpy(self.ids + self.group_start[g], self.group_ids[g].data(),
                       self.group_ids[g].size() * sizeof(Rank))
            vector[Rank]().swap(self.group_ids[g])      # freed as it is copied
            self.copies_done.fetch_add(1)

    cdef int _encode_group(self, Py_ssize_t g, MergeCache& cache, PieceCacheCore* pieces) except -1 nogil:
        cdef vector[Rank] ids
        cdef vector[int64_t] offsets
        cdef Py_ssize_t first_text = self.group_ends[g - 1] if g else 0
        cdef Py_ssize_t failed_offset = 0, failed
        ids.reserve(self.group_bytes[g] // 2 + 16)     # as _reserve_for does for a call
        offsets.reserve(self.group_ends[g] - first_text)
        failed = _scan_text_range(self.core.table, &self.scanner.spec, self.segments.data(), self.text_ends.data(),
                                  first_text, self.group_ends[g],
                                  self.text_ends[first_text - 1] if first_text else 0,
                                  ids, offsets, &failed_offset, cache, pieces)
        self.group_ids[g].swap(ids)
        self.group_offsets[g].swap(offsets)
        if failed >= 0:
            self.group_failed_offset[g] = failed_offset
            self.group_failed[g] = failed
            self.stopped.store(1)
        # The group's use of the piece cache goes into its figures before the group counts as done: the
        # caller may return (copied()) while this thread's work() is still on its way out.
        _hand_over_counts(pieces, cache.counts)
        self.groups_done.fetch_add(1)
        return 0

    def work(self, bint check_signals=False):
        """Encode groups until none is left (or the batch was stopped). With `check_signals` (the calling
        thread, which is the one Python delivers signals to), the GIL is taken between groups to run signal
        handlers: a Ctrl-C then stops the batch (no thread starts another group) and is raised here."""
        cdef MergeCache cache
        cdef PieceCacheCore* pieces = self.cache.core if self.cache is not None else NULL
        cdef Py_ssize_t g, n_groups = self.group_ends.size()
        # Sized as for one group, as a call of that size would have it: the tables stay small (pieces of a
        # batch repeat less than those of one long text), and words of every script go to the persistent
        # cache (MULTIBYTE_PERSIST_MAX_CALL_BYTES), which carries them from one document to the next.
        _start_merge_cache(cache, min(self.worker_bytes, <Py_ssize_t>BATCH_GROUP_BYTES), self.char_starts)
        try:
            while True:
                with nogil:
                    while True:
                        g = n_groups if self.stopped.load() else self.next_group.fetch_add(1)
                        if g >= n_groups:
                            break
                        self._encode_group(g, cache, pieces)
                        if check_signals:
                            break
                if g >= n_groups:
                    break
                PyErr_CheckSignals()
            with nogil:
                self._assemble()
        except BaseException:
            self.stopped.store(1)
            raise
        finally:
            # (what a group that raised had counted; each done group handed over its own)
            _hand_over_counts(pieces, cache.counts)

    def stop(self):
        """No thread starts another group (those under way finish)."""
        self.stopped.store(1)

    def copied(self):
        """Once this thread's `work()` has returned: wait (without the GIL) until the other threads have copied
        their last groups into the result, and return True; False, at once, when the batch was stopped or
        its result could not be allocated (the caller then waits for the threads and raises what they
        met). A thread's `work()` touches nothing of the batch after its last copy, so the caller need not
        wait for those calls to return, a hand-over of the GIL and a wake-up later."""
        cdef Py_ssize_t n_groups = self.group_ends.size()
        cdef bint complete
        with nogil:
            while True:
                if self.copies_done.load() == n_groups:
                    complete = True
                    break
                if self.stopped.load() or self.assembly.load() == ASSEMBLY_NO_MEMORY:
                    complete = False
                    break
                _yield_thread()
        return complete

    def result(self):
        """(uint32 ids, int64 offsets) as `CoreBPE.encode_batch(flat=True)` returns them, once every `work()`
        call has returned (or `copied()` said True); ValueError for the earliest text holding a byte the
        vocabulary lacks."""
        cdef Py_ssize_t g, k, base, n_groups = self.group_ends.size(), failed
        cdef vector[int64_t] offsets
        cdef _MallocIds owner
        for g in range(n_groups):
            failed = self.group_failed[g]
            if failed >= 0:
                _raise_missing_piece(&self.scanner.spec, &self.segments[failed], self.group_failed_offset[g])
        if self.groups_done.load() != n_groups:
            raise RuntimeError("FlatBatch.result() before every group was encoded")
        with nogil:
            self._assemble()    # (done by the threads, unless one was stopped before it)
        if self.assembly.load() == ASSEMBLY_NO_MEMORY:
            raise MemoryError()
        if self.copies_done.load() != n_groups:
            raise RuntimeError("FlatBatch.result() while a thread is still copying")
        offsets.reserve(self.text_ends.size() + 1)
        offsets.push_back(0)
        for g in range(n_groups):
            base = self.group_start[g]
            for k in range(<Py_ssize_t>self.group_offsets[g].size()):
                offsets.push_back(base + self.group_offsets[g][k])
        _load_numpy()
        owner = _MallocIds()
        owner.ids = self.ids
        owner.size = self.total_ids
        self.ids = NULL
        return _numpy_frombuffer(owner, _numpy_uint32), _array_from(offsets.data(), offsets.size(), sizeof(int64_t),
                                                                    "int64")


@cython.final
cdef class _MallocIds:
    """Owns a malloc'd array of ids (FlatBatch's result) and lends it to numpy, whose array keeps it alive."""
    cdef Rank* ids
    cdef Py_ssize_t size
    cdef Py_ssize_t shape[1]
    cdef Py_ssize_t strides[1]

    def __dealloc__(self):
        free(self.ids)

    def __getbuffer__(self, Py_buffer* buffer, int flags):
        _lend_ids(buffer, self, self.ids, self.size, self.shape, self.strides)

    def __releasebuffer__(self, Py_buffer* buffer):
        pass


cdef bint _integer_buffer(object tokens, Py_buffer* view) except -1:
    """Fill `view` with `tokens`' buffer if it is one-dimensional, contiguous and of native integers of 1, 2, 4
    or 8 bytes (the caller releases it); False (nothing held) for anything else, which decodes as a sequence."""
    try:
        PyObject_GetBuffer(tokens, view, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT)
    except (TypeError, BufferError, ValueError):
        return False
    cdef bytes format = (<bytes>view.format if view.format != NULL else b"B").lstrip(b"@=")
    if view.ndim == 1 and len(format) == 1 and format[0] in _INTEGER_FORMATS and view.itemsize in (1, 2, 4, 8):
        return True
    PyBuffer_Release(view)
    return False


cdef inline Py_ssize_t _count_continuations(uint64_t word) noexcept nogil:
    """How many bytes of `word` are UTF-8 continuation bytes (10xxxxxx). Their high bits, moved to the low
    bit of each byte, are summed into the top byte by one multiply: no popcount, which the baseline x86-64
    target the wheels are built for lacks (gcc makes it a library call)."""
    return <Py_ssize_t>((((word & ~(word << 1) & 0x8080808080808080ULL) >> 7) * 0x0101010101010101ULL) >> 56)


cdef inline Py_ssize_t _characters_in(const uint8_t* data, Py_ssize_t n) noexcept nogil:
    """How many characters start in data[:n] (its bytes that are no UTF-8 continuation byte, 10xxxxxx), eight
    bytes at a time."""
    cdef Py_ssize_t starts = n, k
    cdef uint64_t word
    while n > 0:
        k = n if n < 8 else 8
        word = _head_word(data, k)      # zero-padded: a padding byte is no continuation byte
        starts -= _count_continuations(word)
        data += k
        n -= k
    return starts


cdef Py_ssize_t _offsets_of(const Rank* ids, Py_ssize_t count, const int32_t* token_len, Py_ssize_t max_rank,
                            const int32_t* special_lengths, const uint8_t* data, Py_ssize_t n, bint ascii,
                            int64_t* result) noexcept nogil:
    """CoreBPE._char_offsets_into's loop over the UTF-8 `data` (n bytes; `ascii`: a byte is a character):
    returns the bytes the ids cover, or -1 when they run past n. Ids above `max_rank` or of no length are
    special tokens, whose lengths come from `special_lengths` in order (NULL: there is none among the ids). The characters before a byte are
    counted a word at a time (each whole word once, the last one masked)."""
    cdef Py_ssize_t at = 0, chars = 0, start, length, i, word = 0, continuations = 0, r
    cdef Rank token
    cdef uint64_t bits
    if ascii and special_lengths == NULL:
        # A byte is a character and every id is a mergeable token: the offsets are the running sum of the
        # tokens' lengths, checked against n once at the end (nothing of `data` is read).
        for i in range(count):
            token = ids[i]
            length = token_len[token] if token <= <Rank>max_rank else -1
            if length <= 0:
                return -1
            result[2 * i] = at
            at += length
            result[2 * i + 1] = at
        return at if at <= n else -1
    for i in range(count):
        token = ids[i]
        if token <= <Rank>max_rank and token_len[token] >= 0:
            length = token_len[token]
        elif special_lengths == NULL:
            return -1
        else:
            length = special_lengths[0]
            special_lengths += 1
        if length <= 0 or at + length > n:
            return -1
        if ascii:
            result[2 * i] = at
            at += length
            result[2 * i + 1] = at
            continue
        start = chars - 1 + ((data[at] & 0xC0) != 0x80)
        at += length
        while 8 * word + 8 <= at:
            continuations += _count_continuations(_load64(data + 8 * word))
            word += 1
        r = at - 8 * word
        if r == 0:
            chars = at - continuations
        else:
            if BYTEBPE_LITTLE_ENDIAN and 8 * word + 8 <= n:
                bits = _load64(data + 8 * word) & ((1ULL << (8 * r)) - 1)
            else:
                bits = _head_word(data + 8 * word, r)     # zero-padded: no continuation byte
            chars = at - continuations - _count_continuations(bits)
        result[2 * i] = start
        result[2 * i + 1] = chars
    return at


cdef list _offset_pairs(const int64_t* offsets, Py_ssize_t n):
    """[(start, end), ...] of the n pairs at `offsets`. A token's start is mostly the previous one's end, and the
    tokens of one character share its span: those reuse the objects already made (one int and one tuple per
    token at most, instead of two ints and a tuple)."""
    cdef list pairs = PyList_New(n)
    cdef Py_ssize_t i
    cdef int64_t start, end, last_start = -1, last_end = -1
    cdef object start_obj, last_end_obj = None, pair = None
    for i in range(n):
        start, end = offsets[2 * i], offsets[2 * i + 1]
        if start != last_start or end != last_end:
            start_obj = last_end_obj if start == last_end else start
            last_end_obj = end
            pair = (start_obj, last_end_obj)
            # A tuple of two ints holds no reference cycle: untracked, the collections that a quarter of a
            # million new tuples set off have nothing of it to visit.
            PyObject_GC_UnTrack(<PyObject*>pair)
            last_start, last_end = start, end
        Py_INCREF(pair)
        PyList_SET_ITEM(pairs, i, pair)
    return pairs


# numpy.empty and the uint32 dtype, looked up on first use (most callers want lists and never pay for
# numpy's import) and then kept: an import statement and a typed memoryview per call made encode_to_numpy
# slower than encode on short documents.
cdef object _numpy_empty = None
cdef object _numpy_frombuffer = None
cdef object _numpy_uint32 = None
cdef object _numpy_int64 = None
# Whether a new array's data pointer can be read from its head (bytebpe_ndarray_head) rather than through the
# buffer protocol (a cost per array that short documents feel); checked once against numpy's own answer.
cdef bint _numpy_head_known = False
# numpy's own constructor of a new uint32 array, from its C API table (the `_ARRAY_API` capsule that
# numpy's import_array reads): a call through numpy.empty parses its arguments, most of what kept
# encode_to_numpy slower than encode on short documents. Taken only from the two C ABIs whose
# table we know (slot 2 is the ndarray type and slot 94 PyArray_NewFromDescr in both), and checked on a
# real array; otherwise numpy.empty.
cdef NewArrayFromDescr _numpy_new_from_descr = NULL
cdef PyObject* _numpy_array_type = NULL
cdef unsigned int NUMPY_ABI_1 = 0x01000009
cdef unsigned int NUMPY_ABI_2 = 0x02000000


cdef int _load_numpy() except -1:
    global _numpy_empty, _numpy_frombuffer, _numpy_uint32, _numpy_int64, _numpy_head_known
    if _numpy_empty is None:
        import numpy
        _numpy_uint32 = numpy.dtype(numpy.uint32)
        _numpy_int64 = numpy.dtype(numpy.int64)
        _numpy_frombuffer = numpy.frombuffer
        probe = numpy.empty(4, _numpy_uint32)
        _numpy_head_known = <size_t>(<bytebpe_ndarray_head*><PyObject*>probe).data == \
            <size_t>probe.__array_interface__["data"][0]
        _load_numpy_constructor(numpy)
        _numpy_empty = numpy.empty
    return 0


cdef int _load_numpy_constructor(object numpy) except -1:
    global _numpy_new_from_descr, _numpy_array_type
    try:
        from numpy._core import _multiarray_umath as api_module
    except ImportError:
        try:
            from numpy.core import multiarray as api_module     # numpy 1.x
        except ImportError:
            return 0
    capsule = getattr(api_module, "_ARRAY_API", None)
    if capsule is None or not PyCapsule_CheckExact(capsule):
        return 0
    cdef void** api = <void**>PyCapsule_GetPointer(capsule, NULL)
    if api == NULL or (<AbiVersion>api[0])() not in (NUMPY_ABI_1, NUMPY_ABI_2):
        return 0
    if <PyObject*>api[2] != <PyObject*>numpy.ndarray:
        return 0
    _numpy_array_type = <PyObject*>api[2]
    _numpy_new_from_descr = <NewArrayFromDescr>api[94]
    cdef Py_ssize_t dims[2]
    dims[0], dims[1] = 3, 2
    for probe, dtype, shape in ((_new_uint32_array(3), _numpy_uint32, (3,)),
                                (_new_array(_numpy_int64, 2, dims), _numpy_int64, (3, 2))):
        if type(probe) is not numpy.ndarray or probe.dtype != dtype or probe.shape != shape or \
                not probe.flags.c_contiguous or not probe.flags.writeable or not probe.flags.owndata:
            _numpy_new_from_descr = NULL
    return 0


cdef object _new_array(object dtype, int nd, Py_ssize_t* dims):
    """A new uninitialised C-contiguous array of `dtype` and shape dims[:nd], by numpy's C constructor."""
    Py_INCREF(dtype)    # PyArray_NewFromDescr steals a reference to the dtype
    # NULL with numpy's error set (out of memory): _steal returns object, so Cython raises that error.
    return _steal(_numpy_new_from_descr(_numpy_array_type, <PyObject*>dtype, nd, dims, NULL, NULL, 0, NULL))


cdef object _new_uint32_array(Py_ssize_t size):
    """A new uninitialised C-contiguous uint32 array of `size` items."""
    cdef Py_ssize_t dims[1]
    dims[0] = size
    return _new_array(_numpy_uint32, 1, dims)


cdef object _new_spans_array(Py_ssize_t count):
    """A new uninitialised C-contiguous (count, 2) int64 array (numpy.empty when the C constructor is not
    known; either way no reshape after)."""
    cdef Py_ssize_t dims[2]
    _load_numpy()
    if _numpy_new_from_descr == NULL:
        return _numpy_empty((count, 2), _numpy_int64)
    dims[0], dims[1] = count, 2
    return _new_array(_numpy_int64, 2, dims)


cdef object _empty_array(Py_ssize_t size, object dtype_name):
    _load_numpy()
    if dtype_name is None and _numpy_new_from_descr != NULL:
        return _new_uint32_array(size)
    return _numpy_empty(size, _numpy_uint32 if dtype_name is None else dtype_name)


cdef object _array_from(const void* data, Py_ssize_t count, Py_ssize_t item_size, object dtype_name):
    """A new C-contiguous numpy array of `count` items copied from `data` (through the buffer protocol,
    which costs a fraction of a typed memoryview's set-up)."""
    array = _empty_array(count, dtype_name)
    cdef Py_buffer view
    if count and _numpy_head_known:
        # A new C-contiguous array of `count` items, held here: its data pointer is its own memory.
        memcpy((<bytebpe_ndarray_head*><PyObject*>array).data, data, count * item_size)
    elif count:
        PyObject_GetBuffer(array, &view, PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS)
        try:
            memcpy(view.buf, data, count * item_size)
        finally:
            PyBuffer_Release(&view)
    return array


cdef object _to_numpy(vector[Rank]& ids):
    """The ids as a uint32 numpy array. A large result takes over the vector's buffer (`ids` is left empty):
    no copy, so it costs its size once, not twice. A small one is copied into a new array: lending a buffer
    costs a wrapper object and numpy's buffer-protocol import, which made encode_to_numpy slower than encode
    on short documents (see NUMPY_COPY_MAX_IDS)."""
    _load_numpy()
    if ids.size() <= NUMPY_COPY_MAX_IDS:
        return _array_from(ids.data(), ids.size(), sizeof(Rank), None)
    cdef _IdBuffer owner = _IdBuffer()
    owner.ids.swap(ids)
    return _numpy_frombuffer(owner, _numpy_uint32)


cdef void _lend_ids(Py_buffer* buffer, object owner, Rank* ids, Py_ssize_t size, Py_ssize_t* shape,
                    Py_ssize_t* strides) noexcept:
    """Fill `buffer` to lend the `size` ids at `ids`, which `owner` keeps alive, as a writable 1-D array."""
    shape[0] = size
    strides[0] = sizeof(Rank)
    buffer.buf = ids
    buffer.obj = owner
    buffer.len = size * sizeof(Rank)
    buffer.itemsize = sizeof(Rank)
    buffer.readonly = 0
    buffer.ndim = 1
    buffer.format = "I"       # C unsigned int: Rank is uint32_t
    buffer.shape = shape
    buffer.strides = strides
    buffer.suboffsets = NULL
    buffer.internal = NULL


@cython.final
cdef class _IdBuffer:
    """Owns a vector of ids and lends it to numpy through the buffer protocol; the array keeps it alive."""
    cdef vector[Rank] ids
    cdef Py_ssize_t shape[1]
    cdef Py_ssize_t strides[1]

    def __getbuffer__(self, Py_buffer* buffer, int flags):
        _lend_ids(buffer, self, self.ids.data(), self.ids.size(), self.shape, self.strides)

    def __releasebuffer__(self, Py_buffer* buffer):
        pass


def _utf8_of(str text not None):
    """The UTF-8 bytes that the compiled code reads for `text` (tests compare them with str.encode)."""
    cdef list owners = []
    cdef Py_ssize_t size
    cdef const uint8_t* data = _utf8_view(text, &size, owners)
    return PyBytes_FromStringAndSize(<const char*>data, size)


# Texts converted to UTF-8 16 characters at a time where the CPU can (_utf8.h).
bytebpe_utf8_wide = bytebpe_utf8_wide_supported()


def _set_utf8_blocks(bint on):
    """Convert text to UTF-8 16 characters at a time (AVX-512, where the CPU has it) or one by one from now
    on; returns the setting before. For the tests, which check both ways give str.encode's bytes."""
    global bytebpe_utf8_wide
    if on and not bytebpe_utf8_wide_supported():
        raise ValueError("this CPU cannot convert UTF-8 16 characters at a time (AVX-512 BW and VBMI2)")
    previous = bool(bytebpe_utf8_wide)
    bytebpe_utf8_wide = on
    return previous


def _head_words(bytes data not None, Py_ssize_t n):
    """(`_head_word`, `_head_word_of_8`) of data[:n]: the hashed lookups build each from one and look up with
    the other, so tests check both against their definition. Needs 1 <= n <= len(data) and 8 <= len(data)."""
    if not 1 <= n <= len(data) or len(data) < 8:
        raise ValueError("needs 1 <= n <= len(data) and len(data) >= 8")
    cdef const uint8_t* bytes_ = <const uint8_t*><const char*>data
    return _head_word(bytes_, n), _head_word_of_8(bytes_, n)


def _numpy_constructor():
    """Which constructor makes small uint32 results: "PyArray_NewFromDescr" (numpy's C API) or "numpy.empty"
    (numpy not loaded yet, or a C ABI whose table this module does not know)."""
    return "PyArray_NewFromDescr" if _numpy_new_from_descr != NULL else "numpy.empty"


def _default_piece_cache_bytes():
    value = os.environ.get(PIECE_CACHE_BYTES_ENV)
    if value is None or value == "":
        return DEFAULT_PIECE_CACHE_BYTES
    try:
        max_bytes = int(value)
    except ValueError:
        raise ValueError(f"{PIECE_CACHE_BYTES_ENV} must be a number of bytes, got {value!r}") from None
    if max_bytes < 0:
        raise ValueError(f"{PIECE_CACHE_BYTES_ENV} must be >= 0, got {value!r}")
    return min(max_bytes, 1 << 50)


# Every live piece cache, so that a forked child can reset them (see PieceCache.reset_after_fork).
_live_piece_caches = weakref.WeakSet()


@cython.final
cdef class PieceCache:
    """Owns one persistent piece cache (`_piece_cache.h`): pre-token bytes -> ids, across calls.

    A merge table holds the current one; every encode call holds it too, in a local, for the whole call,
    so replacing the table's cache never frees memory that a call without the GIL still reads.
    """
    cdef PieceCacheCore* core
    cdef object __weakref__

    def __cinit__(self, size_t max_bytes):
        self.core = new PieceCacheCore(max_bytes)
        _live_piece_caches.add(self)

    def __dealloc__(self):
        del self.core


def _reset_piece_caches_after_fork():
    for cache in list(_live_piece_caches):
        (<PieceCache>cache).core.reset_after_fork()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_reset_piece_caches_after_fork)


cdef class _identity_findall:
    """A pre-tokenizer that returns pieces split beforehand (for `CoreBPE.encode_pieces`)."""
    cdef list pieces

    def __cinit__(self, list pieces):
        self.pieces = pieces

    def __call__(self, text):
        return self.pieces



# ---- what other compiled modules read of a CoreBPE (declared in _core.pxd) -------------------------------
# `core` is a CoreBPE (their callers check it once): the decode streams (_decode_streams.pyx) step on these.

cdef Py_ssize_t core_check_id(object core, object token) except -1:
    return (<CoreBPE>core)._check_id(token)


cdef int core_append_token(object core, Py_ssize_t token, vector[uint8_t]& buffer) except -1:
    return (<CoreBPE>core)._append_token(token, buffer)


cdef bint core_has_token(object core, Py_ssize_t token) except -1:
    cdef CoreBPE checked = <CoreBPE>core
    return (0 <= token <= checked.table.max_rank and checked.table.token_len[token] >= 0) \
        or token in checked.special_bytes


cdef list core_token_texts(object core):
    cdef CoreBPE checked = <CoreBPE>core
    if checked.token_texts is None:
        checked.token_texts = [None] * (max(checked.table.max_rank, max(checked.special_bytes, default=-1)) + 1)
    return checked.token_texts
