// Memory for the large tables read at random on every piece (the token table, the per-call merge cache):
// backed by 2 MiB pages where the kernel allows it. Used by _core.pyx through TableAllocator.
//
// Why. Each piece costs a lookup at a random place in a table of 4 MiB (cl100k_base) or 8 MiB (o200k_base),
// and a piece to merge one more in the call's 2 MiB merge cache. On 4 KiB pages those tables span 1,000-2,000
// pages, more than the first-level TLB holds, so most lookups also walk the page tables; in a virtual machine
// such a walk is two-dimensional and costs several memory reads. Huge pages for these tables remove most
// of those walks (benchmarks/README.md has the figures).
//
// How. A request of at least one huge page is rounded up to whole huge pages, allocated aligned to one, and
// advised MADV_HUGEPAGE before anything touches it, so its first-touch faults take huge pages directly.
// Where the kernel has none to give (or THP is off), the advice does nothing and the memory is ordinary.
// Smaller requests are plain malloc. Everything is released with free().
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <new>
#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace bytebpe {

static const size_t HUGE_PAGE_BYTES = (size_t)2 << 20;

// The whole huge pages allocate_table_memory(bytes, huge_from) takes for `bytes`, or 0 when it takes plain
// malloc memory (below `huge_from`).
inline size_t huge_table_bytes(size_t bytes, size_t huge_from = HUGE_PAGE_BYTES) noexcept {
    if (bytes < huge_from || bytes == 0 || bytes > SIZE_MAX - HUGE_PAGE_BYTES)
        return 0;
    return (bytes + HUGE_PAGE_BYTES - 1) & ~(HUGE_PAGE_BYTES - 1);
}

// `bytes` of memory (at least 1), huge-page backed when it is at least `huge_from` bytes (rounded up to whole
// huge pages); nullptr when out of memory.
inline void* allocate_table_memory(size_t bytes, size_t huge_from = HUGE_PAGE_BYTES) noexcept {
    size_t rounded = huge_table_bytes(bytes, huge_from);
    if (rounded != 0) {
        void* memory = aligned_alloc(HUGE_PAGE_BYTES, rounded);
        if (memory != nullptr) {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
            madvise(memory, rounded, MADV_HUGEPAGE);    // advice only: failure leaves ordinary pages
#endif
            return memory;
        }
    }
    return malloc(bytes ? bytes : 1);
}

// A std::allocator stand-in for the vectors of those tables.
template <class T>
struct TableAllocator {
    typedef T value_type;

    TableAllocator() noexcept {}
    template <class U>
    TableAllocator(const TableAllocator<U>&) noexcept {}

    T* allocate(size_t n) {
        if (n > SIZE_MAX / sizeof(T))
            throw std::bad_alloc();
        void* memory = allocate_table_memory(n * sizeof(T));
        if (memory == nullptr)
            throw std::bad_alloc();
        return static_cast<T*>(memory);
    }

    void deallocate(T* memory, size_t) noexcept { free(memory); }

    template <class U>
    bool operator==(const TableAllocator<U>&) const noexcept { return true; }
    template <class U>
    bool operator!=(const TableAllocator<U>&) const noexcept { return false; }
};

}  // namespace bytebpe
