// Memory for the trainer's large, growing arrays, straight from the kernel.
//
// Why. glibc's malloc serves a block of at least its mmap threshold (128 KiB at first) with its own mapping,
// but when such a block is freed it raises the threshold to that block's size (up to 32 MiB). From then on
// the arrays a training grows by doubling (pair tables, heap, word lists) come from the heap arena, and
// each doubling leaves the previous buffer there as a free hole that later, larger buffers cannot use.
// Measured on the 77 MB concatenation of ../shared/corpus, vocab 32768 (tests/../benchmarks/bench_train.py's
// corpus): at the end of training 92-130 MB of the heap arena was free but still resident, of a 316-352 MB
// peak. With these arrays mapped and unmapped on their own the peak was 255 MB.
//
// So a block of BIG_ALLOC_MIN_BYTES or more is its own anonymous mapping, unmapped when freed: its pages
// return to the system at once, and nothing else's threshold moves. Smaller blocks go to malloc. Growth by
// `big_realloc` uses mremap, which moves page tables rather than copying the bytes.
//
// Under AddressSanitizer everything goes to malloc, whose blocks ASan guards byte by byte.
#pragma once

#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <new>

#include <sys/mman.h>

#if defined(__SANITIZE_ADDRESS__)
#define BYTEBPE_BIG_ALLOC_MALLOC_ONLY 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define BYTEBPE_BIG_ALLOC_MALLOC_ONLY 1
#endif
#endif

namespace bytebpe {

// 256 KiB: a mapping costs a system call and a page fault per page touched; below this, malloc is cheaper
// and its holes small.
constexpr std::size_t BIG_ALLOC_MIN_BYTES = std::size_t(1) << 18;

inline bool big_alloc_mapped(std::size_t bytes) noexcept {
#ifdef BYTEBPE_BIG_ALLOC_MALLOC_ONLY
    (void)bytes;
    return false;
#else
    return bytes >= BIG_ALLOC_MIN_BYTES;
#endif
}

// nullptr when out of memory. `bytes` must be passed again, unchanged, to big_free and big_realloc.
inline void* big_alloc(std::size_t bytes) noexcept {
    if (!big_alloc_mapped(bytes)) {
        return std::malloc(bytes ? bytes : 1);
    }
    void* block = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return block == MAP_FAILED ? nullptr : block;
}

inline void big_free(void* block, std::size_t bytes) noexcept {
    if (block == nullptr) {
        return;
    }
    if (big_alloc_mapped(bytes)) {
        munmap(block, bytes);
    } else {
        std::free(block);
    }
}

// The block resized to new_bytes, its first min(old, new) bytes kept; nullptr (and `block` untouched) when
// out of memory.
inline void* big_realloc(void* block, std::size_t old_bytes, std::size_t new_bytes) noexcept {
    if (block == nullptr) {
        return big_alloc(new_bytes);
    }
    bool was_mapped = big_alloc_mapped(old_bytes), mapped = big_alloc_mapped(new_bytes);
    if (!was_mapped && !mapped) {
        return std::realloc(block, new_bytes ? new_bytes : 1);
    }
    if (was_mapped && mapped) {
        void* moved = mremap(block, old_bytes, new_bytes, MREMAP_MAYMOVE);
        return moved == MAP_FAILED ? nullptr : moved;
    }
    void* fresh = big_alloc(new_bytes);
    if (fresh != nullptr) {
        std::memcpy(fresh, block, old_bytes < new_bytes ? old_bytes : new_bytes);
        big_free(block, old_bytes);
    }
    return fresh;
}

// An allocator for std::vector that takes its blocks from big_alloc.
template <class T>
struct BigAllocator {
    using value_type = T;

    BigAllocator() noexcept = default;
    template <class U>
    BigAllocator(const BigAllocator<U>&) noexcept {}

    T* allocate(std::size_t n) {
        if (n > std::size_t(-1) / sizeof(T)) {
            throw std::bad_array_new_length();
        }
        void* block = big_alloc(n * sizeof(T));
        if (block == nullptr) {
            throw std::bad_alloc();
        }
        return static_cast<T*>(block);
    }

    void deallocate(T* block, std::size_t n) noexcept { big_free(block, n * sizeof(T)); }

    template <class U>
    bool operator==(const BigAllocator<U>&) const noexcept { return true; }
    template <class U>
    bool operator!=(const BigAllocator<U>&) const noexcept { return false; }
};

}  // namespace bytebpe
