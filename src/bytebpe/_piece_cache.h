// The persistent piece cache: pre-token bytes -> token ids, kept across calls, bounded in bytes, shared by
// threads that run without the GIL. Used by _core.pyx (see PieceCache there for the Python side).
//
// Structure. One table of 64-byte entries, each a whole cache line that holds everything a hit needs: the
// piece's bytes inline (up to PIECE_CACHE_MAX_PIECE, zero padded), its length, and up to
// PIECE_CACHE_MAX_IDS ids. A lookup reads the piece's home entry and, on a mismatch, its neighbour (the
// other half of an aligned 128-byte pair, which the hardware's adjacent-line prefetch usually brings in
// with it): no Bloom filter, no lock, no pointer to follow. The cache this replaced (shards with a mutex
// each, two generations of slots pointing into an arena, a filter in front) cost about as much on a hit as
// merging the piece did on multilingual text, so words of scripts beyond Latin had to skip it; measured
// in the commit that brought this one (benchmarks/README).
//
// Concurrency: a sequence lock per entry. Its `meta` word holds a sequence number that is odd while the
// entry is being written; a writer takes the entry with one compare-and-swap (or gives up: it is a cache),
// writes, and publishes the new length and id count with an even number. A reader loads `meta`, then the
// bytes and ids, then `meta` again: if the two loads differ, or the first was odd, the read may be torn and
// counts as a miss. Every field is a std::atomic read and written with relaxed order (plain moves on x86
// and arm64) between the fences the protocol needs, so nothing is a data race. A wrong id can therefore
// only come from a torn read that passed the check, which the sequence number rules out; a race costs at
// most a merge.
//
// Admission and replacement: every merged piece that fits is offered, on its first sight. It takes an
// empty entry of its pair if there is one, else an entry not marked since it was stored (each entry has a
// `referenced` flag that hits set); when both entries of the pair are marked, both flags are cleared and
// the newcomer is turned away. So a stream of one-off pieces (numbers, hashes, rare names) can evict only
// entries that nobody used since they came, and a frequent piece keeps its place as long as it is hit
// more often than its pair is contested (a CLOCK with two hands per pair). Only one hit in
// PIECE_CACHE_MARK_EVERY of a call marks (the caller says which): a mark is a write into the entry's line,
// and with one at every hit two threads' hits kept moving lines between their cores.
//
// Memory: the table is allocated at the first store (a program that never merges a piece pays nothing),
// on huge pages where it is a multiple of one, and never grows: its size is the largest power of two of
// entries that fits the bound. Its pages are made resident (and zeroed by the kernel) at once, with one
// call, not by the faults of stores landing at random, which the threads of a batch waited on in turn
// (benchmarks/README.md, "A fresh piece cache made resident at once"). The thread that makes the table
// holds the mutex meanwhile; the stores of other threads are turned away instead of waiting for it (a
// cache may always decline).
//
// Ownership. The cache keeps no pointer into anything it is given: bytes and ids are copied into its own
// table. That memory belongs to the PieceCache object, which the Python wrapper owns; every encode call
// holds that wrapper for the whole call (see _core.pyx), so no call can see the memory freed.
//
// Nothing in here throws or calls back into Python.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <atomic>
#include <mutex>
#include <new>

#if defined(__linux__)
#include <sys/mman.h>
#endif

#include "_huge_pages.h"

namespace bytebpe {

// Longest piece the cache stores, in bytes, and most ids it stores for one. Pieces that need merging are
// mostly far shorter: 24 bytes is a 23-letter English word with its space, a Cyrillic word of 11 letters,
// or 8 CJK characters. A longer piece goes to the call's own merge cache only.
static const uint32_t PIECE_CACHE_MAX_PIECE = 24;
static const uint32_t PIECE_CACHE_MAX_IDS = 7;
static const uint32_t PIECE_CACHE_KEY_WORDS = 3;
// lookup() on a miss (a hit returns the id count): merge the piece, then offer it with insert().
static const int PIECE_CACHE_MISS = -1;
// insert() results.
static const int PIECE_CACHE_DECLINED = 0;      // not stored (it does not fit, its pair is in use, or a race)
static const int PIECE_CACHE_STORED = 1;        // stored in an empty entry
static const int PIECE_CACHE_REPLACED = 2;      // stored in place of an entry not marked since it came
// One hit in this many (a power of two) marks its entry as in use (see "Admission and replacement").
static const uint32_t PIECE_CACHE_MARK_EVERY = 8;

struct alignas(64) PieceCacheEntry {
    // Bits 0-31: the sequence number (odd while written); 32-39: the piece's length (0: empty); 40-47: ids.
    std::atomic<uint64_t> meta;
    std::atomic<uint64_t> key[PIECE_CACHE_KEY_WORDS];     // the piece's bytes, zero padded
    std::atomic<uint32_t> ids[PIECE_CACHE_MAX_IDS];
    std::atomic<uint32_t> referenced;     // set by a marking hit, cleared when the entry is stored or contested
};
static_assert(sizeof(PieceCacheEntry) == 64, "one entry, one cache line");

struct PieceCacheStats {
    size_t max_bytes;
    size_t bytes;           // of the table, allocated at the first store (never above max_bytes)
    uint64_t entries;
    uint64_t lookups;
    uint64_t hits;
    uint64_t admitted;
    uint64_t evictions;     // entries replaced by a newcomer
};

// The first `n` bytes of `data` (n <= PIECE_CACHE_MAX_PIECE) as the cache's key: three words, zero padded.
// `readable` is how many bytes from `data` on may be read: from 24 on, three unaligned loads and a mask,
// else a copy.
inline void piece_cache_key(const uint8_t* data, uint32_t n, size_t readable, uint64_t key[3]) noexcept {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    if (readable >= 8 * PIECE_CACHE_KEY_WORDS) {
        for (uint32_t w = 0; w < PIECE_CACHE_KEY_WORDS; w++) {
            uint64_t word;
            memcpy(&word, data + 8 * w, 8);
            uint32_t valid = n > 8 * w ? n - 8 * w : 0;
            key[w] = valid >= 8 ? word : word & ((1ULL << (8 * valid)) - 1);
        }
        return;
    }
#else
    (void)readable;
#endif
    uint8_t bytes[8 * PIECE_CACHE_KEY_WORDS] = {0};
    memcpy(bytes, data, n);
    memcpy(key, bytes, sizeof(bytes));
}

class PieceCache {
public:
    explicit PieceCache(size_t max_bytes) noexcept : max_bytes_(max_bytes) {
        // The bound is on the table, the memory that holds entries (this object's own hundred bytes are
        // made with the Python object that owns it, whatever the bound).
        size_t capacity = 0;
        if (max_bytes >= 2 * sizeof(PieceCacheEntry)) {
            size_t room = max_bytes / sizeof(PieceCacheEntry);
            capacity = 2;
            while (capacity * 2 <= room && capacity < ((size_t)1 << 32))    // 256 GiB at most
                capacity *= 2;
        }
        capacity_ = capacity;
    }

    ~PieceCache() { release(); }

    PieceCache(const PieceCache&) = delete;
    PieceCache& operator=(const PieceCache&) = delete;

    size_t max_bytes() const noexcept { return max_bytes_; }

    // Callers count what their call did and add it here once per call: a shared counter written at every
    // lookup would move its cache line between the threads' cores.
    void add_counts(uint64_t lookups, uint64_t hits, uint64_t admitted, uint64_t evictions) noexcept {
        if (lookups)
            lookups_.fetch_add(lookups, std::memory_order_relaxed);
        if (hits)
            hits_.fetch_add(hits, std::memory_order_relaxed);
        if (admitted)
            admitted_.fetch_add(admitted, std::memory_order_relaxed);
        if (evictions)
            evictions_.fetch_add(evictions, std::memory_order_relaxed);
    }

    // Bring the piece's pair toward the cache ahead of its lookup.
    void prefetch(uint64_t h) const noexcept {
        PieceCacheEntry* table = table_.load(std::memory_order_relaxed);
        if (table != nullptr) {
            __builtin_prefetch(table + home(h));
            __builtin_prefetch(table + home(h) + 1);
        }
    }

    // The ids of the piece with key `key` and length n (3 <= n <= PIECE_CACHE_MAX_PIECE, hash h) into ids[]
    // (room for PIECE_CACHE_MAX_IDS) and their count, or PIECE_CACHE_MISS. A hit marks the entry as in use
    // when `mark`.
    int lookup(uint64_t h, const uint64_t key[3], uint32_t n, uint32_t* ids, bool mark) noexcept {
        PieceCacheEntry* table = table_.load(std::memory_order_acquire);
        if (table == nullptr)
            return PIECE_CACHE_MISS;
        size_t i = home(h);
        int found = read(table[i], key, n, ids, mark);
        if (found < 0)
            found = read(table[i ^ 1], key, n, ids, mark);
        return found;
    }

    // Offer the piece (key, length n, hash h) with its n_ids ids; a PIECE_CACHE_* insert result.
    int insert(uint64_t h, const uint64_t key[3], uint32_t n, const uint32_t* ids, uint32_t n_ids) noexcept {
        if (n == 0 || n > PIECE_CACHE_MAX_PIECE || n_ids > PIECE_CACHE_MAX_IDS)
            return PIECE_CACHE_DECLINED;
        PieceCacheEntry* table = table_.load(std::memory_order_acquire);
        if (table == nullptr && (table = allocate()) == nullptr)
            return PIECE_CACHE_DECLINED;
        size_t i = home(h);
        PieceCacheEntry* pair[2] = {&table[i], &table[i ^ 1]};
        uint64_t metas[2];
        for (int s = 0; s < 2; s++) {
            metas[s] = pair[s]->meta.load(std::memory_order_acquire);
            if (holds(*pair[s], metas[s], key, n))
                return PIECE_CACHE_DECLINED;    // another thread stored it meanwhile
        }
        int victim = -1, result = PIECE_CACHE_STORED;
        for (int s = 0; s < 2 && victim < 0; s++)
            if (length_of(metas[s]) == 0)
                victim = s;
        if (victim < 0) {
            result = PIECE_CACHE_REPLACED;
            for (int s = 0; s < 2 && victim < 0; s++)
                if (pair[s]->referenced.load(std::memory_order_relaxed) == 0)
                    victim = s;
        }
        if (victim < 0) {   // both in use: they must be hit again to keep their place next time
            pair[0]->referenced.store(0, std::memory_order_relaxed);
            pair[1]->referenced.store(0, std::memory_order_relaxed);
            return PIECE_CACHE_DECLINED;
        }
        PieceCacheEntry& entry = *pair[victim];
        uint64_t meta = metas[victim];
        if ((meta & 1) || !entry.meta.compare_exchange_strong(meta, meta + 1, std::memory_order_acq_rel,
                                                                std::memory_order_relaxed))
            return PIECE_CACHE_DECLINED;    // another writer has it
        std::atomic_thread_fence(std::memory_order_release);
        for (uint32_t w = 0; w < PIECE_CACHE_KEY_WORDS; w++)
            entry.key[w].store(key[w], std::memory_order_relaxed);
        for (uint32_t t = 0; t < n_ids; t++)
            entry.ids[t].store(ids[t], std::memory_order_relaxed);
        entry.referenced.store(0, std::memory_order_relaxed);
        uint64_t sequence = (meta + 2) & 0xFFFFFFFFu;
        entry.meta.store(sequence | ((uint64_t)n << 32) | ((uint64_t)n_ids << 40), std::memory_order_release);
        return result;
    }

    void stats(PieceCacheStats* out) noexcept {
        memset(out, 0, sizeof(*out));
        out->max_bytes = max_bytes_;
        out->lookups = lookups_.load(std::memory_order_relaxed);
        out->hits = hits_.load(std::memory_order_relaxed);
        out->admitted = admitted_.load(std::memory_order_relaxed);
        out->evictions = evictions_.load(std::memory_order_relaxed);
        // Every store that was not a replacement filled an empty entry, and entries are only ever emptied
        // all at once (reset_after_fork, which zeroes these counts too).
        out->entries = out->admitted - out->evictions;
        if (table_.load(std::memory_order_acquire) != nullptr)
            out->bytes = capacity_ * sizeof(PieceCacheEntry);
    }

    // In a child process just forked: another thread of the parent may have been halfway through writing
    // an entry (its sequence number left odd for good) or holding the allocation mutex. Drop every entry,
    // start the counts afresh and make a fresh mutex (no lock: one thread only). A child that never stores
    // a piece never makes the table again.
    void reset_after_fork() noexcept {
        new (&allocation_mutex_) std::mutex();
        clear();
        lookups_.store(0, std::memory_order_relaxed);
        hits_.store(0, std::memory_order_relaxed);
        admitted_.store(0, std::memory_order_relaxed);
        evictions_.store(0, std::memory_order_relaxed);
    }

private:
    size_t max_bytes_;
    size_t capacity_ = 0;       // entries, a power of two (0: the bound is too small to hold any)
    std::atomic<PieceCacheEntry*> table_{nullptr};
    std::mutex allocation_mutex_;
    bool mapped_ = false;       // the table is an mmap of whole huge pages (else aligned_alloc's)
    std::atomic<uint64_t> lookups_{0}, hits_{0}, admitted_{0}, evictions_{0};

    // The even index of the piece's pair, from hash bits the token table's and merge cache's indexes do not
    // start from.
    size_t home(uint64_t h) const noexcept { return (size_t)(h >> 24) & (capacity_ - 1) & ~(size_t)1; }

    static uint32_t length_of(uint64_t meta) noexcept { return (uint32_t)(meta >> 32) & 0xFF; }

    static bool holds(const PieceCacheEntry& entry, uint64_t meta, const uint64_t key[3], uint32_t n) noexcept {
        if ((meta & 1) || length_of(meta) != n)
            return false;
        for (uint32_t w = 0; w < PIECE_CACHE_KEY_WORDS; w++)
            if (entry.key[w].load(std::memory_order_relaxed) != key[w])
                return false;
        return true;
    }

    static int read(PieceCacheEntry& entry, const uint64_t key[3], uint32_t n, uint32_t* ids, bool mark) noexcept {
        uint64_t meta = entry.meta.load(std::memory_order_acquire);
        if (!holds(entry, meta, key, n))
            return PIECE_CACHE_MISS;
        uint32_t n_ids = (uint32_t)(meta >> 40) & 0xFF;
        for (uint32_t t = 0; t < PIECE_CACHE_MAX_IDS; t++)     // all of them: no branch on the count
            ids[t] = entry.ids[t].load(std::memory_order_relaxed);
        std::atomic_thread_fence(std::memory_order_acquire);
        if (entry.meta.load(std::memory_order_relaxed) != meta)
            return PIECE_CACHE_MISS;    // written meanwhile: what was read may be torn
        if (mark && entry.referenced.load(std::memory_order_relaxed) == 0)
            entry.referenced.store(1, std::memory_order_relaxed);
        return (int)n_ids;
    }

    PieceCacheEntry* allocate() noexcept {
        if (capacity_ == 0)
            return nullptr;
        std::unique_lock<std::mutex> guard(allocation_mutex_, std::try_to_lock);
        if (!guard.owns_lock())
            return nullptr;     // another thread is making it: this store is declined
        PieceCacheEntry* table = table_.load(std::memory_order_acquire);
        if (table != nullptr)
            return table;
        size_t bytes = capacity_ * sizeof(PieceCacheEntry);
#if defined(__linux__) && defined(MADV_HUGEPAGE)
        // Whole huge pages: fresh anonymous memory, which the kernel zeroes, advised onto huge pages and
        // made resident in one call (see "Memory" above).
        if (bytes % HUGE_PAGE_BYTES == 0) {
            void* memory = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
            if (memory != MAP_FAILED) {
                madvise(memory, bytes, MADV_HUGEPAGE);     // advice only: failure leaves ordinary pages
#if defined(MADV_POPULATE_WRITE)
                madvise(memory, bytes, MADV_POPULATE_WRITE);    // (before Linux 5.14: faulted in as touched)
#endif
                mapped_ = true;
                table_.store((PieceCacheEntry*)memory, std::memory_order_release);
                return (PieceCacheEntry*)memory;
            }
        }
#endif
        table = (PieceCacheEntry*)aligned_alloc(alignof(PieceCacheEntry), bytes);
        if (table == nullptr)
            return nullptr;
        memset((void*)table, 0, bytes);
        table_.store(table, std::memory_order_release);
        return table;
    }

    void release() noexcept {
        PieceCacheEntry* table = table_.load(std::memory_order_relaxed);
        if (table == nullptr)
            return;
#if defined(__linux__) && defined(MADV_HUGEPAGE)
        if (mapped_) {
            munmap((void*)table, capacity_ * sizeof(PieceCacheEntry));
            return;
        }
#endif
        free(table);
    }

    // Every entry gone: the table is given back, and the next store makes a new one (only in a child just
    // forked, where no other thread can be reading it).
    void clear() noexcept {
        release();
        table_.store(nullptr, std::memory_order_relaxed);
        mapped_ = false;
    }
};

}  // namespace bytebpe
