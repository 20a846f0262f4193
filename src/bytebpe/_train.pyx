# cython: language_level=3
# distutils: language = c++
"""Byte-level BPE training: count pre-tokens once, then merge with incremental pair counts.

`PieceCounts` holds each distinct pre-token (its UTF-8 bytes) with a 64-bit count. `BPETrainer` turns them
into words of token ids and learns merges:

- pair counts: pair -> count over all words (each adjacent position counts, times the word's count);
- pair -> words: the words where the pair may occur (a superset: a word can lose the pair later);
- a max-heap of (count, pair) with lazy refresh: an entry's count can only be stale *high* (a pair's count
  only falls after the merge that creates it), so when the top entry's count is current it is the true
  maximum; a stale top is pushed back with its current count.

Tie rule (rustbpe's and bpeasy's): highest count first; among equal counts the smallest (left id, right id).
Merging pair (a, b) rewrites each word left to right, replacing every non-overlapping occurrence, leftmost
first ("aaa" with (a, a) becomes [aa, a]), and applies the exact pair-count deltas of each replacement.
Only the words that contain the pair are touched; the corpus is never scanned again.

Long words (at least `long_word` symbols: unspaced CJK, long digit runs) are not rescanned per merge: a pair
lists its occurrences in them as (word, position), the word's symbols are linked left and right so that a
merge can drop the right symbol in place, and a merge visits only the positions of its pair, left to right
per word, checking each against the word as it is now. The replacements, and so the count deltas, are
exactly the scan's. Training vocab 4096 on 1.7 M characters of Chinese and Japanese letters (multilingual.txt's,
cut into words of N characters, cl100k pattern) took 17.9 s with N = 200,000 and 9.2 s with N = 2,000 when
every word was rescanned per merge, and 2.2 s and 2.1 s through the occurrences.
"""
cimport cython
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from cpython.list cimport PyList_GET_ITEM, PyList_GET_SIZE
from cpython.ref cimport PyObject
from libc.stdint cimport int64_t, uint8_t, uint32_t, uint64_t
from libc.string cimport memcmp, memcpy, memmove
from libcpp.algorithm cimport nth_element, sort
from libcpp.pair cimport pair
from libcpp.vector cimport vector

from ._pretokenize cimport ScanSpec, Scanner, scan_pieces
from ._shared cimport (
    MAX_TOKEN_ID, SCAN_BATCH, _hash_bytes, _head_word, _utf8_view, _utf8_view_of_held, bytebpe_utf8_wide,
    bytebpe_utf8_wide_supported, fill_vector,
)

# Texts converted to UTF-8 16 characters at a time where the CPU can (_utf8.h), as _core converts them.
bytebpe_utf8_wide = bytebpe_utf8_wide_supported()

# The large, growing arrays of counting and training take their memory from _big_alloc.h (own mappings,
# returned to the system when freed; why and the measurement there).
cdef extern from "_big_alloc.h" namespace "bytebpe" nogil:
    cdef cppclass BigAllocator[T]:
        pass
    void* big_realloc(void* block, size_t old_bytes, size_t new_bytes)
    void big_free(void* block, size_t bytes)

ctypedef vector[uint8_t, BigAllocator[uint8_t]] BigBytes
ctypedef vector[uint32_t, BigAllocator[uint32_t]] BigU32s
ctypedef vector[uint64_t, BigAllocator[uint64_t]] BigU64s
ctypedef vector[int64_t, BigAllocator[int64_t]] BigI64s


# Ids are uint32 in the words, below MAX_TOKEN_ID; SCAN_BATCH piece ends are asked of the scanner at a time
# (add_texts). Both in _shared.pxd.

# Symbols of a long word at or after the merge that removed them, and the end of a word's links.
cdef enum:
    GONE = 0xFFFFFFFF
# Long words by default: a word of this many symbols (bytes, at first) or more is merged through its pairs'
# positions. Merge time on the text above (loaded 2-core machine, noisy), threshold 256 / 1024 / 4096 / none:
# 600-symbol words 2.5 / 2.3 / 2.4 / 2.7 s; 6,000-symbol words 3.2 / 3.0 / 2.2 / 4.4 s; 60,000-symbol words
# 3.0 / 2.1 / 2.2 / 4.2 s; at 64, 600-symbol words took 5.8 s (the index's sorting and stale entries cost
# more than a sequential rescan of a short word).
cdef enum:
    DEFAULT_LONG_WORD = 1024
# A merge visits the words holding its pair in id order; the record of the word this many ahead is
# prefetched (and the symbols of the next one). Measured on the counts of
# the 77 MB concatenation of ../shared/corpus, vocab 32768, merge phase, taking turns: 3.1-3.4 s before,
# 3.35-3.45 s with the Word records alone, 2.5-2.7 s with the prefetch (4; 2 and 8 within noise). (Keys
# beside the ids in the pair table's slots were no faster with the prefetch, and cost 58 MB of 410.)
cdef enum:
    PREFETCH_WORDS = 4


# An occurrence of a pair in a long word: (word << 32) | position of its left symbol. As one integer, the
# occurrences sort by word, then left to right, with std::sort's default order.
cdef inline uint64_t _occurrence(uint32_t word, uint32_t position) noexcept nogil:
    return (<uint64_t>word << 32) | position


cdef uint64_t GONE_OCCURRENCE = 0xFFFFFFFFFFFFFFFFULL     # no word has 2**32 - 1 symbols' worth of it


# A heap entry: (count, ~pair key). std::pair compares lexicographically and priority_queue is a max-heap,
# so the highest count comes first and, among equal counts, the largest ~key, i.e. the smallest
# (left << 32 | right): the tie rule, with no comparator to write.
ctypedef pair[int64_t, uint64_t] HeapEntry

cdef extern from * nogil:
    """
    #include <queue>
    #include <utility>
    #include "_big_alloc.h"
    typedef std::priority_queue<std::pair<int64_t, uint64_t>,
                                std::vector<std::pair<int64_t, uint64_t>,
                                            bytebpe::BigAllocator<std::pair<int64_t, uint64_t>>>> BytebpeBigHeap;
    """
    cdef cppclass BigHeap "BytebpeBigHeap":
        void push(HeapEntry&) except +
        HeapEntry& top()
        void pop()
        bint empty()
        size_t size()


cdef inline uint64_t _pair_key(uint32_t left, uint32_t right) noexcept nogil:
    return (<uint64_t>left << 32) | right


cdef inline uint64_t _mix_key(uint64_t key) noexcept nogil:
    """Spread a pair key over the table's low bits (the ids themselves cluster)."""
    key = (key ^ (key >> 31)) * 0xBF58476D1CE4E5B9ULL
    return key ^ (key >> 29)


cdef extern from *:
    # GCC/Clang builtins (type-generic): store a op b in *result and return whether it overflowed.
    bint __builtin_add_overflow(int64_t a, int64_t b, int64_t* result) noexcept nogil
    bint __builtin_mul_overflow(int64_t a, int64_t b, int64_t* result) noexcept nogil
    void __builtin_prefetch(const void* address) noexcept nogil


cdef inline int _add_count(int64_t* total, int64_t count) except -1 nogil:
    """total += count, refusing to wrap around: counts are int64 and a wrapped count is a wrong merge."""
    cdef int64_t result
    if __builtin_add_overflow(total[0], count, &result):
        with gil:
            raise OverflowError("a piece count passed 2**63 - 1")
    total[0] = result
    return 0


# One distinct piece: its bytes are blob[offset : offset + length].
cdef struct Word:
    # One distinct pre-token being merged: its ids are BPETrainer.symbols[start : start + length]. One struct
    # (not three vectors) so that a merge visiting a word reads one cache line for all three: the merge
    # phase is bound by memory latency (words are visited in id order, scattered across `symbols`).
    uint64_t start
    uint32_t length
    int64_t count


# The words of one pair (BPETrainer.pair_words): a list of word ids that holds up to two in place. Most
# pairs occur in one or two words (at the end of a 32k-vocabulary training on the 77 MB concatenation of
# ../shared/corpus, 685,000 of 1.34 million pairs), and a std::vector per pair cost its 24-byte header plus
# a 32-byte malloc block for even one id, and freed and reallocated blocks fragmented the heap.
cdef union WordListItems:
    uint32_t local[2]       # capacity <= LOCAL_WORDS
    uint32_t* heap          # capacity > LOCAL_WORDS: malloc'ed, owned by the list


cdef enum:
    LOCAL_WORDS = 2


cdef struct WordList:
    uint32_t size
    uint32_t capacity
    WordListItems items


cdef inline WordList _empty_word_list() noexcept nogil:
    cdef WordList result
    result.size = 0
    result.capacity = LOCAL_WORDS
    return result


cdef inline uint32_t* _word_list_data(WordList* words) noexcept nogil:
    if words.capacity <= LOCAL_WORDS:
        return &words.items.local[0]
    return words.items.heap


cdef inline void _free_word_list(WordList* words) noexcept nogil:
    if words.capacity > LOCAL_WORDS:
        big_free(words.items.heap, words.capacity * sizeof(uint32_t))
    words[0] = _empty_word_list()


cdef int _grow_word_list(WordList* words) except -1 nogil:
    cdef uint32_t capacity = 2 * words.capacity
    cdef uint32_t* items
    if capacity <= words.capacity:
        with gil:
            raise MemoryError("a pair occurs in more than 2**31 words")
    if words.capacity > LOCAL_WORDS:
        items = <uint32_t*>big_realloc(words.items.heap, words.capacity * sizeof(uint32_t),
                                       capacity * sizeof(uint32_t))
    else:
        items = <uint32_t*>big_realloc(NULL, 0, capacity * sizeof(uint32_t))
        if items != NULL:
            memcpy(items, words.items.local, words.size * sizeof(uint32_t))
    if items == NULL:
        with gil:
            raise MemoryError()
    words.items.heap = items
    words.capacity = capacity
    return 0


cdef inline int _add_word_once(WordList* words, uint32_t w) except -1 nogil:
    """Append word w unless it is already the last one (words are added in increasing order, so a word
    already listed is the last)."""
    if words.size and _word_list_data(words)[words.size - 1] == w:
        return 0
    if words.size == words.capacity:
        _grow_word_list(words)
    _word_list_data(words)[words.size] = w
    words.size += 1
    return 0


cdef struct PieceEntry:
    uint64_t hash
    uint64_t head       # _head_word of the bytes: with the length, settles most comparisons alone
    uint64_t offset
    int64_t count
    uint32_t length

# Slots hold entry index + 1 (0 = empty); kept at most half full.
cdef enum:
    INITIAL_SLOTS = 1 << 16
# At most this many distinct pieces (slot values are uint32 with 0 reserved).
cdef enum:
    MAX_PIECES = 0xFFFFFFF0U


@cython.final
cdef class PieceCounts:
    """Distinct pre-tokens (UTF-8 bytes) and how often each occurred, with 64-bit counts.

    An open-addressing hash table (linear probing) over one byte arena: ~40 bytes per distinct piece plus
    its bytes, and no allocation per piece. Memory grows with the number of distinct pieces, not with the
    text counted. Not for concurrent use: a second thread calling in while the first counts gets a
    RuntimeError.

    Bounded memory (`max_distinct_pieces` = N, 0 = no bound, the default): whenever an addition brings the
    table to 2N distinct pieces, it is pruned (`prune(N)`): every piece whose count is at most t is dropped,
    t being the smallest count that leaves at most N pieces (the (N+1)-th largest count). Pieces of equal
    count are kept or dropped together, so the rule never looks at their order, and the check runs per
    piece added, so the result is a function of the sequence of pieces alone, however the texts are
    batched. Each pass is linear in the table (an nth_element and one compaction) and frees at least N
    places, so pruning costs O(1) per piece added, amortised. `total_pieces` counts the occurrences kept;
    `prune_passes`, `pruned_pieces` (distinct pieces dropped, summed over passes) and `pruned_occurrences`
    report what was dropped.
    """
    cdef BigBytes blob
    cdef vector[PieceEntry, BigAllocator[PieceEntry]] entries
    cdef BigU32s slots
    cdef uint64_t mask
    cdef readonly int64_t total_pieces
    cdef bint busy
    cdef size_t max_distinct     # max_distinct_pieces; 0 = never prune
    # What pruning dropped (public: `load_piece_counts` adds up those its files record).
    cdef public int64_t prune_passes
    cdef public int64_t pruned_pieces
    cdef public int64_t pruned_occurrences
    # The split pattern the pieces were cut with, when known (piece_counts.py records and checks it).
    cdef public object pat_str

    def __cinit__(self):
        fill_vector(self.slots, INITIAL_SLOTS, 0)
        self.mask = INITIAL_SLOTS - 1

    def __len__(self):
        return self.entries.size()

    cdef int _enter(self) except -1:
        if self.busy:
            raise RuntimeError("PieceCounts is in use by another thread")
        self.busy = True
        return 0

    cdef int _grow(self) except -1 nogil:
        cdef uint64_t i
        cdef uint32_t k
        fill_vector(self.slots, 2 * self.slots.size(), 0)
        self.mask = self.slots.size() - 1
        for k in range(<uint32_t>self.entries.size()):
            i = self.entries[k].hash & self.mask
            while self.slots[i] != 0:
                i = (i + 1) & self.mask
            self.slots[i] = k + 1
        return 0

    cdef int _add(self, const uint8_t* data, size_t n, int64_t count) except -1 nogil:
        """Add `count` to the piece data[:n] (n >= 1), inserting it on first sight."""
        cdef uint64_t head = _head_word(data, n)
        cdef uint64_t h = _hash_bytes(head, data, n)
        cdef uint64_t i = h & self.mask
        cdef uint32_t slot
        cdef PieceEntry* entry
        while True:
            slot = self.slots[i]
            if slot == 0:
                break
            entry = &self.entries[slot - 1]
            if (entry.hash == h and entry.length == n and entry.head == head
                    and (n <= 8 or memcmp(self.blob.data() + entry.offset, data, n) == 0)):
                _add_count(&entry.count, count)
                return 0
            i = (i + 1) & self.mask
        if self.entries.size() >= MAX_PIECES:
            with gil:
                raise MemoryError("more than 4 billion distinct pre-tokens")
        cdef PieceEntry added
        added.hash = h
        added.head = head
        added.offset = self.blob.size()
        added.count = count
        added.length = <uint32_t>n
        self.blob.insert(self.blob.end(), data, data + n)
        self.entries.push_back(added)
        self.slots[i] = <uint32_t>self.entries.size()
        if 2 * self.entries.size() > self.slots.size():
            self._grow()
        if self.max_distinct and self.entries.size() >= 2 * self.max_distinct:
            self._prune(self.max_distinct)
        return 0

    cdef int _prune(self, size_t keep) except -1 nogil:
        """Drop every piece whose count is at most the (keep+1)-th largest count (see the class docstring)."""
        cdef size_t n = self.entries.size(), k, kept = 0
        cdef uint64_t write = 0, i
        cdef int64_t threshold, dropped = 0
        cdef BigI64s counts
        cdef PieceEntry entry
        if n <= keep:
            return 0
        counts.reserve(n)
        for k in range(n):
            counts.push_back(self.entries[k].count)
        # Ascending order at n-1-keep is descending order at keep: the (keep+1)-th largest count.
        nth_element(counts.begin(), counts.begin() + (n - 1 - keep), counts.end())
        threshold = counts[n - 1 - keep]
        BigI64s().swap(counts)
        # Compact in place, keeping the survivors' order: offsets only grow along `entries`, so every
        # piece moves to the left (memmove) or stays.
        for k in range(n):
            entry = self.entries[k]
            if entry.count <= threshold:
                dropped += entry.count
                continue
            if write != entry.offset:
                memmove(self.blob.data() + write, self.blob.data() + entry.offset, entry.length)
            entry.offset = write
            write += entry.length
            self.entries[kept] = entry
            kept += 1
        self.entries.resize(kept)
        self.blob.resize(write)
        fill_vector(self.slots, self.slots.size(), 0)
        for k in range(kept):
            i = self.entries[k].hash & self.mask
            while self.slots[i] != 0:
                i = (i + 1) & self.mask
            self.slots[i] = <uint32_t>(k + 1)
        self.total_pieces -= dropped
        self.prune_passes += 1
        self.pruned_pieces += <int64_t>(n - kept)
        _add_count(&self.pruned_occurrences, dropped)
        return 0

    @property
    def max_distinct_pieces(self):
        """The bound on distinct pieces (None: none); see the class docstring. Setting it prunes nothing
        at once: the next addition that brings the table to twice the bound does (or `prune`)."""
        return self.max_distinct or None

    @max_distinct_pieces.setter
    def max_distinct_pieces(self, value):
        if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 1):
            raise ValueError(f"max_distinct_pieces must be None or an int >= 1, got {value!r}")
        self.max_distinct = 0 if value is None else min(value, 2**32)   # more cannot be held anyway

    def prune(self, Py_ssize_t max_distinct):
        """Prune now to at most `max_distinct` pieces by the class docstring's rule; nothing happens (and
        no pass is counted) when the table holds no more than that."""
        if max_distinct < 1:
            raise ValueError(f"max_distinct must be at least 1, got {max_distinct}")
        self._enter()
        try:
            with nogil:
                self._prune(<size_t>max_distinct)
        finally:
            self.busy = False

    cdef int _release(self) except -1 nogil:
        """Free everything (the trainer took the pieces over)."""
        BigBytes().swap(self.blob)
        vector[PieceEntry, BigAllocator[PieceEntry]]().swap(self.entries)
        fill_vector(self.slots, INITIAL_SLOTS, 0)
        self.mask = INITIAL_SLOTS - 1
        return 0

    def add_pieces(self, pieces):
        """Count each str of `pieces` once (empty ones are ignored).

        The UTF-8 bytes are gathered with the GIL, then hashed without it, so other threads run meanwhile.
        A piece that is not a str raises TypeError and one with a lone surrogate UnicodeEncodeError, before
        anything is counted.
        """
        # A private copy holds every piece while the GIL is released (the ownership rule, _shared.pxd):
        # the caller's list may lose items to another thread meanwhile.
        cdef list owned = list(pieces)
        cdef Py_ssize_t n = PyList_GET_SIZE(owned)
        cdef vector[const uint8_t*] data
        cdef vector[Py_ssize_t] sizes
        cdef Py_ssize_t i, size
        data.resize(n)
        sizes.resize(n)
        for i in range(n):
            try:
                data[i] = _utf8_view_of_held(<object>PyList_GET_ITEM(owned, i), &size)
            except TypeError:
                raise TypeError(f"pieces must be str, got {type(owned[i]).__name__} at index {i}") from None
            sizes[i] = size
        self._enter()
        try:
            with nogil:
                for i in range(n):
                    if sizes[i] > 0:
                        self._add(data[i], sizes[i], 1)
                        _add_count(&self.total_pieces, 1)
        finally:
            self.busy = False

    def add_texts(self, Scanner scanner not None, texts):
        """Count the pieces of each str of `texts`, cut by a compiled scanner: no piece objects, and the
        scanning and counting run without the GIL. A text with a lone surrogate raises UnicodeEncodeError
        before anything is counted."""
        self._add_documents(scanner, texts, False)

    def _add_utf8(self, Scanner scanner not None, texts):
        """`add_texts` where an item may also be `bytes` of valid UTF-8, counted as they are: training's file
        reader hands over a `.txt`'s bytes, which it decoded strictly, instead of a str that would be
        encoded back.
        Bytes that are not valid UTF-8 cannot make the scan read outside them (it reads a malformed sequence
        as one byte); they would only be cut into odd pieces, which is why this is not public."""
        self._add_documents(scanner, texts, True)

    cdef _add_documents(self, Scanner scanner, texts, bint utf8_bytes):
        cdef list owners = []
        cdef vector[const uint8_t*] data
        cdef vector[Py_ssize_t] sizes
        cdef Py_ssize_t i, k, count, start, size
        cdef Py_ssize_t piece_ends[SCAN_BATCH]
        cdef const ScanSpec* scan = &scanner.spec
        # Each text goes into `owners` (the ownership rule, _shared.pxd), and a private copy of the list is
        # walked, as everywhere: the caller's list may change under a Python callback or another thread.
        for i, text in enumerate(list(texts)):
            if isinstance(text, str):
                data.push_back(_utf8_view(text, &size, owners))
            elif utf8_bytes and type(text) is bytes:
                owners.append(text)
                size = PyBytes_GET_SIZE(text)
                data.push_back(<const uint8_t*>PyBytes_AS_STRING(text))
            else:
                raise TypeError(f"texts must be str, got {type(text).__name__} at index {i}")
            sizes.push_back(size)
        self._enter()
        try:
            with nogil:
                for i in range(<Py_ssize_t>data.size()):
                    start = 0
                    while start < sizes[i]:
                        count = scan_pieces(scan, data[i], start, sizes[i], piece_ends, SCAN_BATCH)
                        for k in range(count):
                            self._add(data[i] + start, piece_ends[k] - start, 1)
                            start = piece_ends[k]
                        _add_count(&self.total_pieces, count)
        finally:
            self.busy = False

    def add_counts(self, counts not None):
        """Add a mapping of piece (bytes) -> count, e.g. from a pre-tokenizer that counts for itself.

        All or nothing: a bad item, or a total past 2**63 - 1 (OverflowError), changes nothing.
        """
        items = list(counts.items())
        for piece, value in items:
            if not isinstance(piece, bytes):
                raise TypeError(f"pieces must be bytes, got {type(piece).__name__}")
            if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value < 2**62:
                raise ValueError(f"count of {piece!r} must be an int in 0..2**62-1, got {value!r}")
        cdef bytes key
        self._enter()
        try:
            self._check_total(sum(value for piece, value in items if len(piece)))
            for piece, value in items:
                key = piece
                if len(key) and value:
                    self._add(<const uint8_t*><const char*>key, len(key), value)
                    _add_count(&self.total_pieces, value)
        finally:
            self.busy = False

    cdef int _check_total(self, object added) except -1:
        # No count exceeds the total (every count added is added to it too), so when the total fits in
        # int64 every count does: checked before anything changes, an addition is all or nothing.
        if self.total_pieces + added > 2**63 - 1:
            raise OverflowError(f"counts would pass 2**63 - 1 pieces ({self.total_pieces} + {added})")
        return 0

    def update(self, PieceCounts other not None):
        """Add every count of `other` (other is left unchanged). All or nothing, as `add_counts`."""
        if other is self:
            raise ValueError("cannot add a PieceCounts to itself")
        # `other` is marked busy too: a thread adding to it meanwhile would move the memory read here.
        other._enter()
        try:
            self._enter()
        except BaseException:
            other.busy = False
            raise
        cdef PieceEntry entry
        try:
            self._check_total(other.total_pieces)
            for entry in other.entries:
                self._add(other.blob.data() + entry.offset, entry.length, entry.count)
            _add_count(&self.total_pieces, other.total_pieces)
        finally:
            self.busy = False
            other.busy = False

    def to_bytes(self):
        """Every piece and its count in the compact form `add_bytes` reads (little-endian):
        n (uint64) | n x (count int64, length uint32) | the n pieces' bytes back to back."""
        cdef Py_ssize_t n, total = 0, i
        cdef PieceEntry entry
        cdef bytes out
        cdef uint8_t* p
        cdef uint8_t* bytes_at
        cdef uint64_t n64
        self._enter()
        try:
            n = self.entries.size()
            for entry in self.entries:
                total += entry.length
            out = PyBytes_FromStringAndSize(NULL, 8 + 12 * n + total)
            p = <uint8_t*>PyBytes_AS_STRING(out)
            n64 = <uint64_t>n
            with nogil:
                memcpy(p, &n64, 8)
                bytes_at = p + 8 + 12 * n
                for i in range(n):
                    memcpy(p + 8 + 12 * i, &self.entries[i].count, 8)
                    memcpy(p + 16 + 12 * i, &self.entries[i].length, 4)
                    memcpy(bytes_at, self.blob.data() + self.entries[i].offset, self.entries[i].length)
                    bytes_at += self.entries[i].length
        finally:
            self.busy = False
        return out

    def add_bytes(self, const uint8_t[::1] data not None):
        """Add the counts of `to_bytes`'s form (another process's, a file's). Everything is checked before
        anything is added: a size that does not add up, an empty piece or a count outside 1..2**62-1 is a
        ValueError, a total past 2**63 - 1 an OverflowError, and nothing changes."""
        cdef Py_ssize_t size = data.shape[0], i
        cdef uint64_t n = 0, needed, pieces_at
        cdef int64_t count, total = 0
        cdef uint32_t length
        if size < 8:
            raise ValueError(f"piece counts: {size} bytes, not even the 8-byte header")
        memcpy(&n, &data[0], 8)
        if n > <uint64_t>(size - 8) // 12:
            raise ValueError(f"piece counts: the header says {n} pieces, more than {size} bytes can hold")
        needed = pieces_at = 8 + 12 * n
        for i in range(<Py_ssize_t>n):
            memcpy(&count, &data[8 + 12 * i], 8)
            memcpy(&length, &data[16 + 12 * i], 4)
            if length == 0 or count < 1 or count >= (<int64_t>1 << 62):
                raise ValueError(f"piece counts: piece {i} has length {length} and count {count}")
            needed += length
            if __builtin_add_overflow(total, count, &total):
                raise OverflowError("piece counts: the counts pass 2**63 - 1")
        if needed != <uint64_t>size:
            raise ValueError(f"piece counts: {size} bytes, but the {n} pieces need {needed}")
        self._enter()
        try:
            self._check_total(total)
            with nogil:
                for i in range(<Py_ssize_t>n):
                    memcpy(&count, &data[8 + 12 * i], 8)
                    memcpy(&length, &data[16 + 12 * i], 4)
                    self._add(&data[pieces_at], length, count)
                    pieces_at += length
                _add_count(&self.total_pieces, total)
        finally:
            self.busy = False

    def to_dict(self):
        """piece bytes -> count (for tests and inspection; a copy)."""
        cdef PieceEntry entry
        return {PyBytes_FromStringAndSize(<const char*>self.blob.data() + entry.offset, entry.length): entry.count
                for entry in self.entries}


@cython.final
cdef class BPETrainer:
    """Learns merges from `PieceCounts`; `merge(k)` runs up to k more merges without the GIL.

    Takes the pieces over: the `PieceCounts` is empty afterwards (its memory goes to the words).
    `min_frequency`: a pair is merged only if its count is at least this; training stops at the first
    best pair below it. `max_token_length` (bytes, 0 = no limit): a pair whose merged token would be
    longer is never merged (it is dropped from the heap; shorter pairs are taken instead).
    """
    # Words: the ids of word w are symbols[word_start[w] : word_start[w] + word_len[w]]; they shrink in
    # place as merges apply (a merge never lengthens a word).
    cdef BigU32s symbols
    cdef vector[Word, BigAllocator[Word]] words
    # Pairs, by a dense pair id: key (left << 32 | right), count, and the words that may contain it.
    # pair_slots is an open-addressing table (linear probing, at most half full) of pair id + 1 by key.
    cdef BigU32s pair_slots
    cdef uint64_t pair_mask
    cdef BigU64s pair_key
    cdef BigI64s pair_count
    cdef vector[WordList, BigAllocator[WordList]] pair_words
    # A pair's occurrences in long words (_occurrence; may be stale) are in occurrence_lists[k], k =
    # occurrence_list_of[pair] (0: none). Few pairs ever occur in a long word: a list per pair would cost
    # every pair a 24-byte vector header, ~30 MB of the 1.3 million pairs of a 32k vocabulary on 75 MB.
    cdef BigU32s occurrence_list_of
    cdef vector[BigU64s] occurrence_lists     # [0] unused
    cdef vector[uint32_t] free_occurrence_lists
    cdef BigBytes pair_touched       # pair ids whose count grew in the current merge
    cdef vector[uint32_t] touched
    cdef BigHeap heap
    cdef vector[uint32_t] token_len         # id -> length in bytes
    cdef vector[uint64_t] merges            # merge i: key of the pair that became id 256 + i
    # Long words: link_start[w] is where word w's links begin in next_symbol / previous_symbol (one entry per
    # symbol: the position of the next and previous live symbol in the word, GONE at the ends); unused for
    # short words. A symbol a merge removed reads GONE in `symbols`.
    cdef uint32_t long_word
    cdef BigU64s link_start
    cdef BigU32s next_symbol
    cdef BigU32s previous_symbol
    cdef int64_t min_frequency
    cdef uint64_t max_token_length
    cdef readonly Py_ssize_t n_words
    cdef bint busy

    def __cinit__(self, PieceCounts counts not None, int64_t min_frequency=1, Py_ssize_t max_token_length=0,
                  Py_ssize_t long_word=DEFAULT_LONG_WORD):
        if min_frequency < 1:
            raise ValueError(f"min_frequency must be at least 1, got {min_frequency}")
        if max_token_length < 0:
            raise ValueError(f"max_token_length must be positive (0 = no limit), got {max_token_length}")
        if long_word < 2:
            raise ValueError(f"long_word must be at least 2 (symbols), got {long_word}")
        self.min_frequency = min_frequency
        self.max_token_length = <uint64_t>max_token_length
        self.long_word = <uint32_t>min(long_word, 0xFFFFFFFF)
        fill_vector(self.pair_slots, INITIAL_SLOTS, 0)
        self.pair_mask = INITIAL_SLOTS - 1
        counts._enter()
        try:
            with nogil:
                self._build_words(counts)
                self._count_pairs()
        finally:
            counts.busy = False

    def __dealloc__(self):
        cdef size_t p
        for p in range(self.pair_words.size()):
            _free_word_list(&self.pair_words[p])

    cdef int _build_words(self, PieceCounts counts) except -1 nogil:
        cdef size_t total = 0
        cdef uint32_t i
        cdef const uint8_t* data
        cdef int64_t pair_occurrences = 0, occurrences
        for entry in counts.entries:
            # A one-byte piece has no pair: it can never take part in a merge.
            if entry.length >= 2:
                total += entry.length
                # Every pair count is at most the number of adjacent pairs in the corpus, and merges only
                # lower that number: if it fits in int64 now, no pair count can ever overflow.
                if __builtin_mul_overflow(<int64_t>(entry.length - 1), entry.count, &occurrences) or \
                        __builtin_add_overflow(pair_occurrences, occurrences, &pair_occurrences):
                    with gil:
                        raise OverflowError("the pieces hold more than 2**63 - 1 adjacent pairs: pair counts "
                                            "would overflow")
        self.symbols.reserve(total)
        for entry in counts.entries:
            if entry.length < 2:
                continue
            self.words.push_back(Word(self.symbols.size(), entry.length, entry.count))
            data = counts.blob.data() + entry.offset
            for i in range(entry.length):
                self.symbols.push_back(data[i])
            self.link_start.push_back(self.next_symbol.size())
            if entry.length >= self.long_word:
                for i in range(entry.length):
                    self.next_symbol.push_back(i + 1 if i + 1 < entry.length else GONE)
                    self.previous_symbol.push_back(i - 1 if i > 0 else GONE)
        counts._release()     # the words now hold the same data
        self.n_words = self.words.size()
        self.token_len.resize(256, 1)
        return 0

    cdef inline uint32_t _pair_of(self, uint64_t key) except? 0xFFFFFFFF nogil:
        """The id of pair `key`, created (count 0, no words) on first sight."""
        cdef uint64_t i = _mix_key(key) & self.pair_mask
        cdef uint32_t slot
        while True:
            slot = self.pair_slots[i]
            if slot == 0:
                break
            if self.pair_key[slot - 1] == key:
                return slot - 1
            i = (i + 1) & self.pair_mask
        cdef uint32_t new_id = <uint32_t>self.pair_key.size()
        if new_id >= MAX_PIECES:
            with gil:
                raise MemoryError("more than 4 billion distinct pairs")
        self.pair_slots[i] = new_id + 1
        self.pair_key.push_back(key)
        self.pair_count.push_back(0)
        self.pair_words.push_back(_empty_word_list())
        self.occurrence_list_of.push_back(0)
        self.pair_touched.push_back(0)
        if 2 * self.pair_key.size() > self.pair_slots.size():
            self._grow_pairs()
        return new_id

    cdef int _grow_pairs(self) except -1 nogil:
        cdef uint64_t i
        cdef uint32_t p
        fill_vector(self.pair_slots, 2 * self.pair_slots.size(), 0)
        self.pair_mask = self.pair_slots.size() - 1
        for p in range(<uint32_t>self.pair_key.size()):
            i = _mix_key(self.pair_key[p]) & self.pair_mask
            while self.pair_slots[i] != 0:
                i = (i + 1) & self.pair_mask
            self.pair_slots[i] = p + 1
        return 0

    cdef BigU64s* _occurrences_of(self, uint32_t p) except NULL nogil:
        """Pair p's list of occurrences in long words, created on first use. The pointer is good until the
        next list is created: use it at once."""
        cdef uint32_t k = self.occurrence_list_of[p]
        if k == 0:
            if self.occurrence_lists.empty():
                self.occurrence_lists.resize(1)
            if not self.free_occurrence_lists.empty():
                k = self.free_occurrence_lists.back()
                self.free_occurrence_lists.pop_back()
            else:
                k = <uint32_t>self.occurrence_lists.size()
                self.occurrence_lists.resize(k + 1)
            self.occurrence_list_of[p] = k
        return &self.occurrence_lists[k]

    cdef inline int _release_occurrences(self, uint32_t p) except -1 nogil:
        cdef uint32_t k = self.occurrence_list_of[p]
        if k:
            BigU64s().swap(self.occurrence_lists[k])
            self.free_occurrence_lists.push_back(k)
            self.occurrence_list_of[p] = 0
        return 0

    cdef int _count_pairs(self) except -1 nogil:
        cdef uint32_t w, k, p
        cdef const uint32_t* ids
        cdef Word word
        for w in range(<uint32_t>self.n_words):
            word = self.words[w]
            ids = self.symbols.data() + word.start
            for k in range(word.length - 1):
                p = self._pair_of(_pair_key(ids[k], ids[k + 1]))
                self.pair_count[p] += word.count
                if word.length >= self.long_word:
                    self._occurrences_of(p).push_back(_occurrence(w, k))
                else:
                    _add_word_once(&self.pair_words[p], w)
        for p in range(<uint32_t>self.pair_key.size()):
            # Counts of existing pairs only fall, so a pair below min_frequency now never reaches it.
            if self.pair_count[p] >= self.min_frequency:
                self.heap.push(HeapEntry(self.pair_count[p], ~self.pair_key[p]))
        return 0

    cdef inline int _add(self, uint32_t left, uint32_t right, int64_t delta, uint32_t w,
                         uint32_t position=GONE) except -1 nogil:
        """Add `delta` to the count of (left, right), which now occurs (delta > 0) in word w: at `position`
        in a long word, or anywhere in a short one (position GONE)."""
        cdef uint32_t p = self._pair_of(_pair_key(left, right))
        self.pair_count[p] += delta
        if self.pair_count[p] == 0:
            # Gone from every word: its lists are only memory now (they are refilled if the pair returns).
            _free_word_list(&self.pair_words[p])
            self._release_occurrences(p)
        elif delta > 0:
            if position != GONE:
                self._occurrences_of(p).push_back(_occurrence(w, position))
            # Only pairs with the new id gain occurrences, all during this merge: list the word once.
            else:
                _add_word_once(&self.pair_words[p], w)
            if not self.pair_touched[p]:
                self.pair_touched[p] = 1
                self.touched.push_back(p)
        return 0

    cdef int _merge_word(self, uint32_t w, uint32_t a, uint32_t b, uint32_t new_id) except -1 nogil:
        """Replace each non-overlapping (a, b) in word w, leftmost first, applying the count deltas."""
        cdef Word* word = &self.words[w]
        cdef uint32_t* ids = self.symbols.data() + word.start
        cdef uint32_t n = word.length
        cdef int64_t c = word.count
        cdef uint32_t i = 0, out = 0
        while i < n:
            if i + 1 < n and ids[i] == a and ids[i + 1] == b:
                if out > 0:
                    # ids[out - 1] is already rewritten: it may be new_id from the previous replacement,
                    # which then undoes that replacement's (new_id, a) with (new_id, new_id).
                    self._add(ids[out - 1], a, -c, w)
                    self._add(ids[out - 1], new_id, c, w)
                # (a, b) itself is not counted down here: _merge zeroes its count once every word is done.
                if i + 2 < n:
                    self._add(b, ids[i + 2], -c, w)
                    self._add(new_id, ids[i + 2], c, w)
                ids[out] = new_id
                out += 1
                i += 2
            else:
                ids[out] = ids[i]
                out += 1
                i += 1
        word.length = out
        return 0

    cdef int _merge_at(self, uint32_t w, uint32_t position, uint32_t a, uint32_t b, uint32_t new_id) except -1 nogil:
        """In long word w, replace (a, b) at `position` if it is still there, with _merge_word's deltas.

        Called for the occurrences of (a, b) in increasing position, so a symbol an earlier replacement of
        this merge took is GONE and its occurrence fails the check, as the scan skips overlapping pairs."""
        cdef uint32_t* ids = self.symbols.data() + self.words[w].start
        cdef uint32_t* next_of = self.next_symbol.data() + self.link_start[w]
        cdef uint32_t* previous_of = self.previous_symbol.data() + self.link_start[w]
        cdef uint32_t right = next_of[position], before, after
        cdef int64_t c = self.words[w].count
        if ids[position] != a or right == GONE or ids[right] != b:
            return 0    # a stale occurrence
        before = previous_of[position]
        after = next_of[right]
        if before != GONE:
            # ids[before] may be new_id from this merge's previous replacement (see _merge_word).
            self._add(ids[before], a, -c, w)
            self._add(ids[before], new_id, c, w, before)
        if after != GONE:
            self._add(b, ids[after], -c, w)
            self._add(new_id, ids[after], c, w, position)
            previous_of[after] = position
        ids[position] = new_id
        ids[right] = GONE
        next_of[position] = after
        return 0

    cdef int _merge_words(self, const uint32_t* words, uint32_t n, uint32_t a, uint32_t b,
                          uint32_t new_id) except -1 nogil:
        """_merge_word on each of the n words listed (in id order)."""
        cdef uint32_t j
        for j in range(n):
            # The next words' records and symbols are fetched while this one is merged (memory-bound).
            if j + PREFETCH_WORDS < n:
                __builtin_prefetch(&self.words[words[j + PREFETCH_WORDS]])
            if j + 1 < n:
                __builtin_prefetch(self.symbols.data() + self.words[words[j + 1]].start)
            self._merge_word(words[j], a, b, new_id)
        return 0

    cdef Py_ssize_t _merge(self, Py_ssize_t max_merges) except -1 nogil:
        cdef Py_ssize_t done = 0
        cdef HeapEntry top
        cdef uint64_t key
        cdef uint32_t p, a, b, new_id, q
        cdef int64_t current
        cdef WordList merged
        cdef BigU64s occurrences
        cdef uint64_t occurrence, previous_occurrence
        while done < max_merges and not self.heap.empty():
            if self.merges.size() + 256 > MAX_TOKEN_ID:
                break
            top = self.heap.top()
            self.heap.pop()
            key = ~top.second
            p = self._pair_of(key)
            current = self.pair_count[p]
            if current != top.first:
                # Stale (counts only fall): queue again with the current count, if it still qualifies.
                if current >= self.min_frequency:
                    self.heap.push(HeapEntry(current, top.second))
                continue
            if current < self.min_frequency:
                break   # the best pair is below the threshold, so is every other
            a = <uint32_t>(key >> 32)
            b = <uint32_t>(key & 0xFFFFFFFFU)
            if self.max_token_length and self.token_len[a] + self.token_len[b] > self.max_token_length:
                continue    # never merged: dropped for good (its id pair can only ever be this long)
            new_id = <uint32_t>(256 + self.merges.size())
            self.merges.push_back(key)
            self.token_len.push_back(self.token_len[a] + self.token_len[b])
            merged = self.pair_words[p]      # taken out (and freed below): the pair is gone for good
            self.pair_words[p] = _empty_word_list()
            try:
                self._merge_words(_word_list_data(&merged), merged.size, a, b, new_id)
            finally:
                _free_word_list(&merged)
            if self.occurrence_list_of[p]:
                occurrences.swap(self.occurrence_lists[self.occurrence_list_of[p]])
            sort(occurrences.begin(), occurrences.end())    # by word, then left to right
            previous_occurrence = GONE_OCCURRENCE
            for occurrence in occurrences:
                if occurrence != previous_occurrence:       # listed twice: the second would fail the check
                    self._merge_at(<uint32_t>(occurrence >> 32), <uint32_t>(occurrence & 0xFFFFFFFFU), a, b,
                                   new_id)
                previous_occurrence = occurrence
            occurrences.clear()
            self._release_occurrences(p)
            # Every occurrence is replaced (leftmost first leaves no adjacent (a, b)): the merged pair's count
            # is 0, set here once rather than counted down per occurrence.
            self.pair_count[p] = 0
            for q in self.touched:
                self.pair_touched[q] = 0
                if self.pair_count[q] >= self.min_frequency:
                    self.heap.push(HeapEntry(self.pair_count[q], ~self.pair_key[q]))
            self.touched.clear()
            done += 1
        return done

    def merge(self, Py_ssize_t max_merges):
        """Learn up to `max_merges` more merges; returns how many were learned (fewer: nothing left)."""
        if max_merges < 0:
            raise ValueError(f"max_merges must be >= 0, got {max_merges}")
        if self.busy:
            raise RuntimeError("BPETrainer is in use by another thread")
        self.busy = True
        cdef Py_ssize_t done
        try:
            with nogil:
                done = self._merge(max_merges)
        finally:
            self.busy = False
        return done

    @property
    def merges(self):
        """The merges learned so far, in order: merge i is (left id, right id) and became id 256 + i."""
        return [(<uint32_t>(key >> 32), <uint32_t>(key & 0xFFFFFFFFU)) for key in self.merges]

    @property
    def n_pairs(self):
        """Distinct pairs seen so far (including those merged or gone)."""
        return self.pair_key.size()

    @property
    def n_merges(self):
        return self.merges.size()
