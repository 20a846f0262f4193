// The persistent piece cache: pre-token bytes -> token ids, kept across calls, bounded in bytes, shared by
// threads that run without the GIL. Used by _core.pyx (see PieceCache there for the Python side).
//
// Structure. The cache is cut into shards by hash bits; each shard has its own std::mutex, so two threads
// only wait for each other when they touch the same shard at the same moment (with 64 shards and lock hold
// times of ~100 instructions, about never). Nothing is global on the hot path.
//
// Each shard holds two generations, "current" and "older". An entry is written into the current one; when
// that is full (its arena or its slot budget), the older generation is emptied and becomes the current one.
// A hit in the older generation copies the entry into the current one, so a piece that keeps coming back
// survives every turnover, while a piece not seen for a whole generation is dropped with it. No entry is
// ever freed on its own: no fragmentation, no per-entry bookkeeping, and the memory is fixed by the geometry.
// A generation starts small and doubles (its slots rehashed from their tags, its arena reallocated) up to
// the size the bound gives it: allocating it whole at first use zeroed megabytes that a short run never
// used (measured: +20% instructions on 0.5 MB of English after 2 MB of priming).
//
// Admission. A merged piece is only stored on its second sight: a miss marks the piece in a small Bloom
// filter (the "doorkeeper", 8 bits per entry a generation can hold, cleared once it has marked that many
// pieces); a later miss that finds its marks set is admitted. One-off pieces (numbers, hashes, rare names:
// most distinct pieces of any corpus) therefore never push frequent ones out.
//
// The miss path takes no lock. Most lookups miss (the call's own cache in front of this one catches the
// repeats within a call), and a miss under the shard lock, probing two generations, cost ~100 ns: more
// than merging a typical piece. So each shard also keeps a Bloom filter of the entries it holds (8 bits
// per slot, bits taken from the stored tag so that it can be rebuilt from the slots), read with relaxed
// atomic loads: a piece whose bits are not all set is certainly absent, and goes on to the doorkeeper
// (relaxed atomics too) without locking. A filter word and the doorkeeper word of the same piece sit side
// by side, so a first sight costs one cache line, not two (measured: the two structures apart made a
// cache that mostly missed 10-15% slower than no cache on multilingual text). A filter read that races with
// an insert or a rebuild can only say "absent" wrongly, which costs a merge, never a wrong id; every id read
// happens under the lock.
//
// Ownership. The cache keeps no pointer into anything it is given: piece bytes and ids are copied into its
// own arenas. Its memory belongs to the PieceCache object, which the Python wrapper owns; every encode call
// holds that wrapper for the whole call (see _core.pyx), so no call can see the memory freed.
//
// Nothing in here throws or calls back into Python: the critical sections are loads, stores, memset, memcpy
// and malloc. An allocation that fails leaves the shard as it was (the cache only stores less).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <atomic>
#include <mutex>
#include <new>

#include "_huge_pages.h"

namespace bytebpe {

// Longest piece the cache stores, in bytes (its ids are never more than its bytes). Longer pieces are rare
// and their ids take more room than the merge they save is worth.
static const uint32_t PIECE_CACHE_MAX_PIECE = 255;
// lookup() results besides a hit's id count.
static const int PIECE_CACHE_MISS = -1;     // not stored, and seen for the first time: do not insert it
static const int PIECE_CACHE_ADMIT = -2;    // not stored, but seen before: insert it once merged
// The doorkeeper counts one mark in this many (a power of two; see PieceCache::lookup).
static const uint32_t DOORKEEPER_COUNT_SAMPLE = 8;

struct PieceCacheSlot {
    uint32_t tag;               // the hash's high 32 bits
    uint32_t offset_plus_one;   // word offset of the entry in the arena, plus one; 0 marks an empty slot
};

// An entry in the arena, in 32-bit words: [length | n_ids << 16] [n_ids ids] [the piece bytes, zero padded].
struct PieceCacheGeneration {
    PieceCacheSlot* slots;      // `capacity` of them, a power of two; the index is taken from the tag
    uint32_t* arena;            // `arena_capacity` words
    uint32_t capacity;
    uint32_t arena_capacity;
    uint32_t used_words;
    uint32_t entries;
};

struct PieceCacheStats {
    size_t max_bytes;
    size_t bytes;           // allocated now (never above max_bytes)
    uint64_t entries;
    uint64_t lookups;
    uint64_t hits;
    uint64_t admitted;
    uint64_t turnovers;     // generations emptied to make room
};

struct alignas(64) PieceCacheShard {    // one cache line apart: shards taken by two threads do not false-share
    std::mutex mutex;
    PieceCacheGeneration generation[2];
    int current;
    size_t bytes;
    uint64_t hits, admitted, turnovers;     // counted under the lock
    // The doorkeeper's marks since it was last cleared, estimated from a sample (see lookup), written
    // without the lock: on a line of its own, so that its writes do not evict the fields above from the
    // other threads' caches. (The shard's filter and doorkeeper words are PieceCache::shard_blooms: nothing
    // that the lock-free path reads shares a line with anything written.)
    alignas(64) std::atomic<uint32_t> doorkeeper_marks;
};

class PieceCache {
public:
    explicit PieceCache(size_t max_bytes) noexcept : max_bytes_(max_bytes), shards_(nullptr), n_shards_(0) {
        // Per shard, at full size: two generations of S slots (8 bytes each) and W arena words, a filter of
        // S bytes and a doorkeeper of S bytes. The arena gets at least 12 bytes per slot, i.e. 24 bytes
        // per entry at the most entries a generation takes (S/2): a typical cached piece (" understanding",
        // 3 ids) takes 7 words = 28 bytes, so neither budget runs out long before the other.
        size_t shards = 64;
        while (shards > 1 && max_bytes / shards < 16384)
            shards >>= 1;
        size_t fixed = sizeof(PieceCache) + shards * sizeof(PieceCacheShard);
        if (max_bytes < fixed)
            return;
        size_t budget = (max_bytes - fixed) / shards;
        size_t slots = 16;
        if (budget < 42 * slots)        // 42 bytes per slot: 2 * (8 + 12) + 1 + 1
            return;                     // too small to hold anything: the cache stays empty
        while (budget >= 42 * (slots * 2) && slots < (1u << 26))
            slots *= 2;
        slots_ = (uint32_t)slots;
        // S bytes each: the filter has 8 bits per entry of both generations, the doorkeeper 16 bits per
        // piece it marks before it is cleared.
        bloom_words_ = (uint32_t)(slots / 8);
        size_t bloom_bytes = 2 * 8 * (size_t)bloom_words_;
        // The filters and doorkeepers of all shards in one zeroed block: they are read without a lock, so
        // they must exist before any lookup. Every piece to merge reads a word of it at random, so from
        // half a huge page on it is rounded up to whole huge pages (_huge_pages.h): cl100k, multilingual
        // text, 1 MB slices after 2 MB of priming, 29.7 -> 33.9 MB/s (medians of 5 runs taking turns);
        // English +1%. The rounding is taken from the arenas' share, so the bound still holds.
        size_t blooms_bytes = shards * bloom_bytes;
        size_t huge_bytes = huge_table_bytes(blooms_bytes, HUGE_PAGE_BYTES / 2);
        size_t rounding = huge_bytes ? (huge_bytes - blooms_bytes + shards - 1) / shards : 0;     // per shard
        if (budget < 16 * slots + bloom_bytes + rounding)
            return;
        size_t arena_bytes = (budget - 16 * slots - bloom_bytes - rounding) / 2;
        arena_words_ = arena_bytes / 4 > 0xFFFFFFF0u ? 0xFFFFFFF0u : (uint32_t)(arena_bytes / 4);
        blooms_ = (std::atomic<uint64_t>*)allocate_table_memory(blooms_bytes, HUGE_PAGE_BYTES / 2);
        if (blooms_ == nullptr)
            return;
        memset((void*)blooms_, 0, blooms_bytes);
        shards_ = new (std::nothrow) PieceCacheShard[shards];
        if (shards_ == nullptr) {
            free(blooms_);
            blooms_ = nullptr;
            return;
        }
        n_shards_ = (uint32_t)shards;
        for (uint32_t i = 0; i < n_shards_; i++) {
            init_shard(shards_[i]);
            shards_[i].bytes = bloom_bytes + rounding;
        }
    }

    ~PieceCache() {
        for (uint32_t i = 0; i < n_shards_; i++)
            free_shard(shards_[i]);
        delete[] shards_;
        free(blooms_);
    }

    PieceCache(const PieceCache&) = delete;
    PieceCache& operator=(const PieceCache&) = delete;

    size_t max_bytes() const noexcept { return max_bytes_; }

    // Callers count their lookups and add them here once per call: a counter written at every lookup
    // dirtied a cache line per miss.
    void count_lookups(uint64_t n) noexcept { lookups_.fetch_add(n, std::memory_order_relaxed); }

    // The ids of the piece data[:n] (hash h, n <= PIECE_CACHE_MAX_PIECE) into ids[] (room for n) and their
    // count; else PIECE_CACHE_MISS or PIECE_CACHE_ADMIT.
    int lookup(uint64_t h, const uint8_t* data, uint32_t n, uint32_t* ids) noexcept {
        if (n_shards_ == 0)
            return PIECE_CACHE_MISS;
        PieceCacheShard& shard = shard_of(h);
        uint32_t tag = (uint32_t)(h >> 32);
        uint64_t bits = bloom_bits(tag);
        std::atomic<uint64_t>* pair = shard_blooms(h) + 2 * (tag & (bloom_words_ - 1));
        if ((pair[0].load(std::memory_order_relaxed) & bits) == bits) {
            std::lock_guard<std::mutex> guard(shard.mutex);
            int found = find(shard.generation[shard.current], h, data, n, ids);
            if (found >= 0) {
                shard.hits++;
                return found;
            }
            found = find(shard.generation[1 - shard.current], h, data, n, ids);
            if (found >= 0) {
                shard.hits++;
                // Still in use: carry it into the current generation. The copy is made from `ids` and
                // `data`, not from the older arena, which a turnover inside store() may empty.
                store(shard, h, data, n, ids, (uint32_t)found);
                return found;
            }
        }
        // The doorkeeper's two bits come from other hash bits than the filter's (bits 14..25 of h).
        uint64_t marks = (1ULL << ((h >> 14) & 63)) | (1ULL << ((h >> 20) & 63));
        if ((pair[1].load(std::memory_order_relaxed) & marks) == marks)
            return PIECE_CACHE_ADMIT;
        // Plain loads and stores, no read-modify-write: a locked instruction per first sight stalled the
        // encode loop measurably, and a race between two threads here can only lose a mark or a count
        // (a piece then waits for one more sight; the doorkeeper is cleared a little later).
        pair[1].store(pair[1].load(std::memory_order_relaxed) | marks, std::memory_order_relaxed);
        // One mark in DOORKEEPER_COUNT_SAMPLE is counted, that many times over (chosen by hash bits 8..10,
        // which none of this cache's structures uses): the count is written an eighth as often. Two threads
        // writing it at every first sight moved its cache line between cores thousands of times per MB of
        // new text.
        if (((h >> 8) & (DOORKEEPER_COUNT_SAMPLE - 1)) == 0) {
            uint32_t count = shard.doorkeeper_marks.load(std::memory_order_relaxed) + DOORKEEPER_COUNT_SAMPLE;
            shard.doorkeeper_marks.store(count, std::memory_order_relaxed);
            if (count >= slots_ / 2) {
                // About as many marks as a generation holds entries: start afresh before it fills with
                // false positives.
                std::atomic<uint64_t>* words = shard_blooms(h);
                for (uint32_t i = 0; i < bloom_words_; i++)
                    words[2 * i + 1].store(0, std::memory_order_relaxed);
                shard.doorkeeper_marks.store(0, std::memory_order_relaxed);
            }
        }
        return PIECE_CACHE_MISS;
    }

    // Store the ids of the piece data[:n] (hash h; n <= PIECE_CACHE_MAX_PIECE, n_ids <= n).
    void insert(uint64_t h, const uint8_t* data, uint32_t n, const uint32_t* ids, uint32_t n_ids) noexcept {
        if (n_shards_ == 0)
            return;
        PieceCacheShard& shard = shard_of(h);
        std::lock_guard<std::mutex> guard(shard.mutex);
        if (find(shard.generation[shard.current], h, data, n, nullptr) >= 0)
            return;     // another thread stored it meanwhile
        shard.admitted++;
        store(shard, h, data, n, ids, n_ids);
    }

    void stats(PieceCacheStats* out) noexcept {
        memset(out, 0, sizeof(*out));
        out->max_bytes = max_bytes_;
        out->lookups = lookups_.load(std::memory_order_relaxed);
        if (n_shards_ == 0)
            return;     // a bound too small to hold anything: an empty cache, nothing allocated for it
        out->bytes = sizeof(PieceCache) + n_shards_ * sizeof(PieceCacheShard);
        for (uint32_t i = 0; i < n_shards_; i++) {
            PieceCacheShard& shard = shards_[i];
            std::lock_guard<std::mutex> guard(shard.mutex);
            out->bytes += shard.bytes;
            out->entries += shard.generation[0].entries + shard.generation[1].entries;
            out->hits += shard.hits;
            out->admitted += shard.admitted;
            out->turnovers += shard.turnovers;
        }
    }

    // In a child process just forked: another thread of the parent may have held a shard's mutex or been
    // halfway through writing an entry. Make fresh mutexes and drop every entry (no lock: one thread only).
    void reset_after_fork() noexcept {
        for (uint32_t i = 0; i < n_shards_; i++) {
            PieceCacheShard& shard = shards_[i];
            new (&shard.mutex) std::mutex();
            for (int g = 0; g < 2; g++)
                clear(shard.generation[g]);
            std::atomic<uint64_t>* words = blooms_of(i);
            for (uint32_t w = 0; w < 2 * bloom_words_; w++)
                words[w].store(0, std::memory_order_relaxed);
            shard.doorkeeper_marks.store(0, std::memory_order_relaxed);
        }
    }

private:
    size_t max_bytes_;
    PieceCacheShard* shards_;
    uint32_t n_shards_;
    uint32_t slots_ = 0;            // per generation, a power of two
    uint32_t arena_words_ = 0;      // per generation
    uint32_t bloom_words_ = 0;      // words of the filter, and of the doorkeeper, per shard: a power of two
    std::atomic<uint64_t>* blooms_ = nullptr;   // every shard's filter and doorkeeper
    std::atomic<uint64_t> lookups_{0};

    // Which hash bits go where: the doorkeeper's two bit positions bits 14..25, the shard bits 26..31, the
    // stored tag bits 32..63: the slot index and the word pair of the filter and doorkeeper from its low
    // bits (so that slots can be rehashed from their tags alone), the filter's two bit positions from its
    // top 12.
    PieceCacheShard& shard_of(uint64_t h) noexcept {
        return shards_[(h >> 26) & (n_shards_ - 1)];
    }

    // The shard's filter and doorkeeper in pairs of words: [2w] is word w of the filter of the tags held in
    // either generation, [2w + 1] word w of the doorkeeper of pieces seen once. Read and set without the
    // lock. Found from fields fixed at construction, so the lock-free path reads no shard field.
    std::atomic<uint64_t>* shard_blooms(uint64_t h) noexcept {
        return blooms_of((h >> 26) & (n_shards_ - 1));
    }

    std::atomic<uint64_t>* blooms_of(uint32_t shard_index) noexcept {
        return blooms_ + (size_t)shard_index * 2 * bloom_words_;
    }

    static uint64_t bloom_bits(uint32_t tag) noexcept {
        return (1ULL << (tag >> 26)) | (1ULL << ((tag >> 20) & 63));
    }

    static void init_shard(PieceCacheShard& shard) noexcept {
        for (int g = 0; g < 2; g++)
            shard.generation[g] = PieceCacheGeneration{nullptr, nullptr, 0, 0, 0, 0};
        shard.current = 0;
        shard.doorkeeper_marks.store(0, std::memory_order_relaxed);
        shard.bytes = 0;
        shard.hits = shard.admitted = shard.turnovers = 0;
    }

    static void free_shard(PieceCacheShard& shard) noexcept {
        for (int g = 0; g < 2; g++) {
            free(shard.generation[g].slots);
            free(shard.generation[g].arena);
        }
    }

    void clear(PieceCacheGeneration& generation) noexcept {
        if (generation.slots != nullptr && generation.entries != 0)
            memset(generation.slots, 0, (size_t)generation.capacity * sizeof(PieceCacheSlot));
        generation.used_words = 0;
        generation.entries = 0;
    }

    // The ids count of the piece in `generation` (copied to ids unless that is null), or -1.
    int find(const PieceCacheGeneration& generation, uint64_t h, const uint8_t* data, uint32_t n,
             uint32_t* ids) const noexcept {
        if (generation.entries == 0)
            return -1;
        uint32_t tag = (uint32_t)(h >> 32);
        uint32_t mask = generation.capacity - 1;
        for (uint32_t i = tag & mask;; i = (i + 1) & mask) {
            const PieceCacheSlot& slot = generation.slots[i];
            if (slot.offset_plus_one == 0)
                return -1;
            if (slot.tag != tag)
                continue;
            const uint32_t* entry = generation.arena + (slot.offset_plus_one - 1);
            uint32_t n_ids = entry[0] >> 16;
            if ((entry[0] & 0xFFFF) != n || memcmp(entry + 1 + n_ids, data, n) != 0)
                continue;
            if (ids != nullptr)
                memcpy(ids, entry + 1, (size_t)n_ids * sizeof(uint32_t));
            return (int)n_ids;
        }
    }

    void store(PieceCacheShard& shard, uint64_t h, const uint8_t* data, uint32_t n, const uint32_t* ids,
               uint32_t n_ids) noexcept {
        uint32_t words = 1 + n_ids + (n + 3) / 4;
        if (words > arena_words_ || slots_ < 2)
            return;
        std::atomic<uint64_t>* filter = shard_blooms(h);
        PieceCacheGeneration* generation = &shard.generation[shard.current];
        if (generation->used_words + words > arena_words_ || generation->entries + 1 > slots_ / 2) {
            // Full: the older generation goes, and its memory takes the new entries.
            shard.current = 1 - shard.current;
            generation = &shard.generation[shard.current];
            clear(*generation);
            shard.turnovers++;
            // The filter forgets the entries just dropped: rebuilt from the tags of the generation kept.
            for (uint32_t w = 0; w < bloom_words_; w++)
                filter[2 * w].store(0, std::memory_order_relaxed);
            const PieceCacheGeneration& kept = shard.generation[1 - shard.current];
            if (kept.slots != nullptr)
                for (uint32_t i = 0; i < kept.capacity; i++)
                    if (kept.slots[i].offset_plus_one != 0)
                        add_to_filter(filter, kept.slots[i].tag);
        }
        if (!make_room(shard, *generation, words))
            return;
        uint32_t* entry = generation->arena + generation->used_words;
        entry[0] = n | (n_ids << 16);
        memcpy(entry + 1, ids, (size_t)n_ids * sizeof(uint32_t));
        entry[words - 1] = 0;   // the padding of the last word of bytes, so that it is never uninitialised
        memcpy(entry + 1 + n_ids, data, n);
        place(generation->slots, generation->capacity, (uint32_t)(h >> 32), generation->used_words);
        generation->used_words += words;
        generation->entries++;
        add_to_filter(filter, (uint32_t)(h >> 32));
    }

    static void place(PieceCacheSlot* slots, uint32_t capacity, uint32_t tag, uint32_t offset) noexcept {
        uint32_t mask = capacity - 1;
        uint32_t i = tag & mask;
        while (slots[i].offset_plus_one != 0)
            i = (i + 1) & mask;
        slots[i].tag = tag;
        slots[i].offset_plus_one = offset + 1;
    }

    // Grow the generation, if need be, so that one more entry of `words` words fits (the caller has made
    // sure that it fits within the generation's full size). False when memory runs out.
    bool make_room(PieceCacheShard& shard, PieceCacheGeneration& generation, uint32_t words) noexcept {
        if (generation.entries + 1 > generation.capacity / 2) {
            uint32_t capacity = generation.capacity ? 2 * generation.capacity : (slots_ < 64 ? slots_ : 64);
            PieceCacheSlot* slots = (PieceCacheSlot*)calloc(capacity, sizeof(PieceCacheSlot));
            if (slots == nullptr)
                return false;
            for (uint32_t i = 0; i < generation.capacity; i++)
                if (generation.slots[i].offset_plus_one != 0)
                    place(slots, capacity, generation.slots[i].tag, generation.slots[i].offset_plus_one - 1);
            free(generation.slots);
            shard.bytes += (size_t)(capacity - generation.capacity) * sizeof(PieceCacheSlot);
            generation.slots = slots;
            generation.capacity = capacity;
        }
        if (generation.used_words + words > generation.arena_capacity) {
            uint64_t capacity = generation.arena_capacity ? 2 * (uint64_t)generation.arena_capacity : 256;
            while (capacity < (uint64_t)generation.used_words + words)
                capacity *= 2;
            if (capacity > arena_words_)
                capacity = arena_words_;
            uint32_t* arena = (uint32_t*)realloc(generation.arena, capacity * sizeof(uint32_t));
            if (arena == nullptr)
                return false;
            shard.bytes += (size_t)(capacity - generation.arena_capacity) * sizeof(uint32_t);
            generation.arena = arena;
            generation.arena_capacity = (uint32_t)capacity;
        }
        return true;
    }

    // Under the shard lock, so no other writer: a plain store (readers load the word whole, atomically).
    void add_to_filter(std::atomic<uint64_t>* filter, uint32_t tag) noexcept {
        std::atomic<uint64_t>& word = filter[2 * (tag & (bloom_words_ - 1))];
        word.store(word.load(std::memory_order_relaxed) | bloom_bits(tag), std::memory_order_relaxed);
    }
};

}  // namespace bytebpe
