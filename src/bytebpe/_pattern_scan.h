// The compiled scanner of any split pattern of the GPT family: a backtracking matcher over the program that
// src/bytebpe/pattern_compiler.py makes of the pattern, with the oracle's character classes.
//
// What holds, and why it is exact:
// - A piece starts where the previous one ended; its end is where the first branch (in pattern order) that
//   matches there ends, the branch's own choices tried in the order a backtracking engine tries them:
//   greedy runs longest first, lazy runs shortest first, possessive runs and atomic groups never give back,
//   the first alternative of a group before the next. That is leftmost-first matching, tiktoken's (fancy-regex
//   over Rust's `regex`) and HF's (Oniguruma) alike. The compiler only accepts patterns that match a
//   non-empty piece at every position, so the pieces partition the text, as both oracles' do.
// - Character classes come from tables built per pattern (_pretokenize.pyx, `compile_scanner`) from each code
//   point's properties as the oracle's engine reports them (_unicode_props.h): a code point maps to a
//   combination of classes (stage1 -> block, stage2 -> combination id, combos -> class bits).
// - Work is bounded: the compiler accepts no repeated group (only runs of one class and optional groups), so
//   a program has no loop; each SPLIT or run pushes at most one frame, and a program has fewer instructions
//   than the stack has frames. A greedy run gives back only to positions where the next item can start.
// Nothing here allocates or fails; it reads the text only in [0, n) and the program that the Scanner owns.
#pragma once

#include <stddef.h>
#include <stdint.h>
#include <vector>
#include <limits.h>

enum {
    BYTEBPE_OP_MATCH, BYTEBPE_OP_SET, BYTEBPE_OP_BYTE, BYTEBPE_OP_RUN, BYTEBPE_OP_RUN_BYTE, BYTEBPE_OP_SPLIT,
    BYTEBPE_OP_JMP, BYTEBPE_OP_LOOK, BYTEBPE_OP_ATOMIC, BYTEBPE_OP_END_TEXT, BYTEBPE_OP_END_LINE,
    BYTEBPE_OP_START_TEXT, BYTEBPE_OP_START_LINE, BYTEBPE_OP_SUCCEED,
};
enum { BYTEBPE_GREEDY, BYTEBPE_LAZY, BYTEBPE_POSSESSIVE };

// Instructions are six words; the compiler keeps programs below this many, so the frames never run out.
#define BYTEBPE_PATTERN_WORDS 6
#define BYTEBPE_PATTERN_MAX_INSTRUCTIONS 250
#define BYTEBPE_PATTERN_STACK 256
// Lookaheads and atomic groups each run their body as a sub-match: nested at most this deep.
#define BYTEBPE_PATTERN_MAX_NESTING 4

struct BytebpePatternProgram {
    uint32_t ascii[256];            // class bits of each ASCII code point; 0 for the bytes 0x80-0xFF
    uint32_t ascii_branches[128];   // the branches (bit k: branch k) that an ASCII code point can start
    std::vector<uint16_t> stage1;   // cp >> 8 -> block
    std::vector<uint8_t> stage2;    // block * 256 + (cp & 255) -> combination
    std::vector<uint32_t> combos;   // combination -> class bits
    std::vector<int32_t> code;      // instructions, BYTEBPE_PATTERN_WORDS words each
    std::vector<int32_t> branch_pc; // where each top-level branch starts
    std::vector<uint32_t> branch_first;  // bits one of which the first code point of a branch has (0: any)
    std::vector<int32_t> branch_shape;   // BYTEBPE_SHAPE_WORDS words per branch (pattern_compiler._shape)
};

#define BYTEBPE_SHAPE_WORDS 16
enum { BYTEBPE_SHAPE_NONE, BYTEBPE_SHAPE_OPT_RUN, BYTEBPE_SHAPE_OPT_CASED };

static inline uint32_t bytebpe_pattern_cp(const uint8_t* s, ptrdiff_t i, ptrdiff_t n, ptrdiff_t* width) {
    // Well-formed UTF-8 (Python made it); a truncated sequence reads as one byte, never past n.
    uint32_t b0 = s[i];
    if (b0 < 0x80) { *width = 1; return b0; }
    if (b0 >= 0xC0 && b0 < 0xE0 && i + 1 < n) { *width = 2; return ((b0 & 0x1F) << 6) | (s[i + 1] & 0x3F); }
    if (b0 >= 0xE0 && b0 < 0xF0 && i + 2 < n) {
        *width = 3;
        return ((b0 & 0x0F) << 12) | ((uint32_t)(s[i + 1] & 0x3F) << 6) | (s[i + 2] & 0x3F);
    }
    if (b0 >= 0xF0 && i + 3 < n) {
        uint32_t cp = ((b0 & 0x07) << 18) | ((uint32_t)(s[i + 1] & 0x3F) << 12)
                      | ((uint32_t)(s[i + 2] & 0x3F) << 6) | (s[i + 3] & 0x3F);
        if (cp < 0x110000) { *width = 4; return cp; }
    }
    *width = 1;
    return 0xFFFD;
}

static inline uint32_t bytebpe_pattern_bits_of(const BytebpePatternProgram* p, uint32_t cp) {
    return p->combos[p->stage2[(size_t)p->stage1[cp >> 8] * 256 + (cp & 255)]];
}

// The class bits of the code point at s[i] (i < n) and its width.
static inline uint32_t bytebpe_pattern_bits(const BytebpePatternProgram* p, const uint8_t* s, ptrdiff_t i,
                                            ptrdiff_t n, ptrdiff_t* width) {
    if (s[i] < 0x80) { *width = 1; return p->ascii[s[i]]; }
    return bytebpe_pattern_bits_of(p, bytebpe_pattern_cp(s, i, n, width));
}

// Whether the code point at s[i] has one of the bits of `mask` (mask 0: no requirement, always true).
static inline bool bytebpe_pattern_has(const BytebpePatternProgram* p, uint32_t mask, const uint8_t* s,
                                       ptrdiff_t i, ptrdiff_t n) {
    ptrdiff_t width;
    return mask == 0 || (i < n && (bytebpe_pattern_bits(p, s, i, n, &width) & mask));
}

#define BYTEBPE_ALWAYS_INLINE static inline __attribute__((always_inline))

// Take code points of the run `ins` from s[pos] while fewer than `high` have been taken (high < 0: no bound).
// Returns the end; *count: how many were taken; *shortest: the end after `low` of them (unchanged if fewer).
BYTEBPE_ALWAYS_INLINE ptrdiff_t bytebpe_pattern_take(const BytebpePatternProgram* p, const int32_t* ins,
                                                     const uint8_t* s, ptrdiff_t pos, ptrdiff_t n, int64_t low,
                                                     int64_t high, int64_t* count, ptrdiff_t* shortest) {
    int64_t taken = 0;
    if (high < 0) high = INT64_MAX;
    if (low == 0) *shortest = pos;
    if (ins[0] == BYTEBPE_OP_RUN_BYTE) {
        uint8_t byte = (uint8_t)ins[1];
        while (taken < high && pos < n && s[pos] == byte) {
            ++pos;
            if (++taken == low) *shortest = pos;
        }
    } else {
        uint32_t bit = 1u << ins[1];
        const uint32_t* ascii = p->ascii;
        ptrdiff_t width;
        while (taken < high && pos < n) {
            uint8_t c = s[pos];
            if (c < 0x80) {
                if (!(ascii[c] & bit)) break;
                ++pos;
            } else {
                if (!(bytebpe_pattern_bits_of(p, bytebpe_pattern_cp(s, pos, n, &width)) & bit)) break;
                pos += width;
            }
            if (++taken == low) *shortest = pos;
        }
    }
    *count = taken;
    return pos;
}

static inline ptrdiff_t bytebpe_pattern_back(const uint8_t* s, ptrdiff_t i, ptrdiff_t low) {
    // The start of the code point before position i (never below low, which is a code point start).
    do { --i; } while (i > low && (s[i] & 0xC0) == 0x80);
    return i;
}

enum { BYTEBPE_FRAME_ALT, BYTEBPE_FRAME_GIVE_BACK, BYTEBPE_FRAME_EXTEND };

// What a match looked at. The matcher calls seen.at(q) wherever its outcome depends on the code point at q or
// on whether the text ends at q (never less than what it really looks at; more is safe). So a piece whose
// match saw positions up to q is cut the same in every prefix of the text longer than q: what truncating to a
// token budget needs (`bytebpe_pattern_scan_seen`). The plain scan instantiates the matcher with NoSeen, whose
// calls compile to nothing.
struct BytebpeNoSeen {
    static constexpr bool tracks = false;
    explicit BytebpeNoSeen(ptrdiff_t) {}
    inline void at(ptrdiff_t) {}
    inline ptrdiff_t furthest() const { return -1; }
};
struct BytebpeMaxSeen {
    static constexpr bool tracks = true;
    ptrdiff_t max;
    explicit BytebpeMaxSeen(ptrdiff_t start) : max(start) {}
    inline void at(ptrdiff_t q) { if (q > max) max = q; }
    inline ptrdiff_t furthest() const { return max; }
};

struct BytebpePatternFrame {
    int32_t pc;         // ALT: where to resume; GIVE_BACK / EXTEND: the run's instruction
    int32_t kind;
    ptrdiff_t pos;      // ALT: the position to resume at; runs: where the run ends now
    ptrdiff_t low;      // GIVE_BACK: the run's shortest end; EXTEND: code points taken so far
};

// Run the program from instruction `pc` at s[pos]: the end of the first match (OP_MATCH or OP_SUCCEED),
// or -1. Frames go on `stack` (room for `room` of them, shared with nested sub-matches, which start above
// this match's frames). Dispatch is threaded (a computed goto after each instruction, gcc and clang): each
// instruction's own indirect jump predicts its successor far better than one shared switch.
template <class Seen>
static ptrdiff_t bytebpe_pattern_match(const BytebpePatternProgram* p, int32_t pc, const uint8_t* s,
                                       ptrdiff_t pos, ptrdiff_t n, int depth, BytebpePatternFrame* stack,
                                       int room, Seen& seen) {
    static void* const ops[] = {
        &&op_match, &&op_set, &&op_byte, &&op_run, &&op_run, &&op_split, &&op_jmp, &&op_look, &&op_atomic,
        &&op_end_text, &&op_end_line, &&op_start_text, &&op_start_line, &&op_match,
    };
    int top = 0;
    const int32_t* code = p->code.data();
    const int32_t* ins;
    ptrdiff_t width;
#define BYTEBPE_NEXT(target) do { pc = (target); ins = code + (size_t)pc * BYTEBPE_PATTERN_WORDS; \
                                  goto *ops[ins[0]]; } while (0)
    BYTEBPE_NEXT(pc);

op_match:
    return pos;
op_set:
    seen.at(pos);
    if (pos < n && ((bytebpe_pattern_bits(p, s, pos, n, &width) >> ins[1]) & 1)) {
        pos += width;
        BYTEBPE_NEXT(pc + 1);
    }
    goto fail;
op_byte:
    seen.at(pos);
    if (pos < n && s[pos] == (uint8_t)ins[1]) {
        ++pos;
        BYTEBPE_NEXT(pc + 1);
    }
    goto fail;
op_run: {
    // ins: op (RUN or RUN_BYTE), class bit (or byte), min, max (-1: none), mode, need: class bits one of
    // which the code point after the run must have for the rest to match (0: none known; greedy runs only)
    int64_t count;
    ptrdiff_t shortest = -1;
    if (ins[0] == BYTEBPE_OP_RUN && ins[3] < 0 && ins[2] <= 1 && ins[4] != BYTEBPE_LAZY) {
        // The common run (\p{L}+, [^\s\p{L}\p{N}]*): one class, no bound, at most one code point required.
        const uint32_t bit = 1u << ins[1];
        const uint32_t* ascii = p->ascii;
        const ptrdiff_t start = pos;
        for (;;) {
            while (pos + 4 <= n && (ascii[s[pos]] & ascii[s[pos + 1]] & ascii[s[pos + 2]] & ascii[s[pos + 3]] & bit))
                pos += 4;
            while (pos < n && (ascii[s[pos]] & bit)) ++pos;     // (0 beyond 0x7F)
            if (pos >= n || s[pos] < 0x80
                    || !(bytebpe_pattern_bits_of(p, bytebpe_pattern_cp(s, pos, n, &width)) & bit))
                break;
            pos += width;
        }
        seen.at(pos);
        if (ins[2] == 0) {
            shortest = start;
        } else {
            if (pos == start) goto fail;
            const uint8_t lead = s[start];     // well-formed UTF-8: the first code point's length
            shortest = start + (lead < 0x80 ? 1 : lead < 0xE0 ? 2 : lead < 0xF0 ? 3 : 4);
        }
        if (ins[4] == BYTEBPE_GREEDY) goto give_back;
        BYTEBPE_NEXT(pc + 1);
    }
    if (ins[4] == BYTEBPE_LAZY) {
        pos = bytebpe_pattern_take(p, ins, s, pos, n, ins[2], ins[2], &count, &shortest);
        seen.at(pos);
        if (count < ins[2]) goto fail;
        if ((ins[3] < 0 || count < ins[3]) && top < room)
            stack[top++] = BytebpePatternFrame{pc, BYTEBPE_FRAME_EXTEND, pos, count};
        BYTEBPE_NEXT(pc + 1);
    }
    pos = bytebpe_pattern_take(p, ins, s, pos, n, ins[2], ins[3], &count, &shortest);
    seen.at(pos);
    if (count < ins[2]) goto fail;
    if (ins[4] == BYTEBPE_GREEDY) {
give_back:
        uint32_t need = (uint32_t)ins[5];
        if (need != 0) {
            while (pos > shortest && !bytebpe_pattern_has(p, need, s, pos, n))
                pos = bytebpe_pattern_back(s, pos, shortest);
            if (!bytebpe_pattern_has(p, need, s, pos, n)) goto fail;    // nothing can follow the run
        }
        if (pos > shortest && top < room)
            stack[top++] = BytebpePatternFrame{pc, BYTEBPE_FRAME_GIVE_BACK, pos, shortest};
    }
    BYTEBPE_NEXT(pc + 1);
}
op_split:
    // ins: op, first choice, second choice, guard: class bits one of which the code point here must have for
    // the first choice to match (0: none known)
    if (ins[3] != 0) seen.at(pos);
    if (ins[3] != 0 && !bytebpe_pattern_has(p, (uint32_t)ins[3], s, pos, n)) BYTEBPE_NEXT(ins[2]);
    if (top < room) stack[top++] = BytebpePatternFrame{ins[2], BYTEBPE_FRAME_ALT, pos, 0};
    BYTEBPE_NEXT(ins[1]);
op_jmp:
    BYTEBPE_NEXT(ins[1]);
op_look: {
    // ins: op, negative, where to continue
    bool matched = depth < BYTEBPE_PATTERN_MAX_NESTING
                   && bytebpe_pattern_match(p, pc + 1, s, pos, n, depth + 1, stack + top, room - top, seen) >= 0;
    if (matched == (ins[1] != 0)) goto fail;
    BYTEBPE_NEXT(ins[2]);
}
op_atomic: {
    ptrdiff_t end = depth < BYTEBPE_PATTERN_MAX_NESTING
                    ? bytebpe_pattern_match(p, pc + 1, s, pos, n, depth + 1, stack + top, room - top, seen) : -1;
    if (end < 0) goto fail;
    pos = end;
    BYTEBPE_NEXT(ins[1]);
}
op_end_text:
    seen.at(pos);
    if (pos == n) BYTEBPE_NEXT(pc + 1);
    goto fail;
op_end_line:
    seen.at(pos);
    if (pos == n || s[pos] == '\n') BYTEBPE_NEXT(pc + 1);
    goto fail;
op_start_text:
    if (pos == 0) BYTEBPE_NEXT(pc + 1);
    goto fail;
op_start_line:
    if (pos == 0 || s[pos - 1] == '\n') BYTEBPE_NEXT(pc + 1);
    goto fail;

fail:
    for (;;) {
        if (top == 0) return -1;
        BytebpePatternFrame* frame = &stack[top - 1];
        if (frame->kind == BYTEBPE_FRAME_ALT) {
            pos = frame->pos;
            --top;
            BYTEBPE_NEXT(frame->pc);
        }
        const int32_t* run = code + (size_t)frame->pc * BYTEBPE_PATTERN_WORDS;
        if (frame->kind == BYTEBPE_FRAME_GIVE_BACK) {
            uint32_t need = (uint32_t)run[5];
            ptrdiff_t end = frame->pos;
            do { end = bytebpe_pattern_back(s, end, frame->low); }
            while (end > frame->low && !bytebpe_pattern_has(p, need, s, end, n));
            int32_t resume = frame->pc + 1;
            if (end == frame->low) {
                --top;      // the shortest end: nothing more to give back after it
                if (!bytebpe_pattern_has(p, need, s, end, n)) continue;
            } else {
                frame->pos = end;
            }
            pos = end;
            BYTEBPE_NEXT(resume);
        }
        // EXTEND: a lazy run takes one more code point, if it can.
        int64_t one;
        ptrdiff_t ignored = -1;
        ptrdiff_t next = bytebpe_pattern_take(p, run, s, frame->pos, n, 1, 1, &one, &ignored);
        seen.at(next);
        if (one == 1) {
            int32_t resume = frame->pc + 1;
            frame->pos = next;
            frame->low += 1;
            pos = next;
            if (run[3] >= 0 && frame->low >= run[3]) --top;
            BYTEBPE_NEXT(resume);
        }
        --top;
    }
#undef BYTEBPE_NEXT
}

// The end of the longest run from s[pos] of code points in class `bit` (kind 1) or equal to the byte `bit`
// (kind 2), at most `high` of them (high < 0: no bound); *count: how many.
BYTEBPE_ALWAYS_INLINE ptrdiff_t bytebpe_shape_run(const BytebpePatternProgram* p, int32_t kind, int32_t bit,
                                                  int64_t high, const uint8_t* s, ptrdiff_t pos, ptrdiff_t n,
                                                  int64_t* count) {
    int64_t taken = 0;
    if (high < 0) high = INT64_MAX;
    if (kind == 2) {
        while (taken < high && pos < n && s[pos] == (uint8_t)bit) { ++pos; ++taken; }
    } else {
        const uint32_t mask = 1u << bit;
        const uint32_t* ascii = p->ascii;
        ptrdiff_t width;
        for (;;) {
            // A stretch of ASCII members (one code point a byte), up to the bound, in a tight loop; then one
            // code point beyond ASCII, if it is a member.
            const ptrdiff_t limit = high - taken < (int64_t)(n - pos) ? pos + (ptrdiff_t)(high - taken) : n;
            const ptrdiff_t from = pos;
            // (ascii[] is 0 beyond 0x7F, so a byte of a longer code point ends the stretch.)
            while (pos + 4 <= limit && (ascii[s[pos]] & ascii[s[pos + 1]] & ascii[s[pos + 2]] & ascii[s[pos + 3]]
                                        & mask))
                pos += 4;
            while (pos < limit && (ascii[s[pos]] & mask)) ++pos;
            taken += pos - from;
            if (pos >= limit || s[pos] < 0x80) break;
            if (!(bytebpe_pattern_bits_of(p, bytebpe_pattern_cp(s, pos, n, &width)) & mask)) break;
            pos += width;
            ++taken;
        }
    }
    *count = taken;
    return pos;
}

// Where the shape's runs after A end, starting at q: B{low,high} (OPT_RUN), or U* L+ with U* giving back to the
// last code point L can start at (OPT_CASED); -1 if they cannot match there.
template <class Seen>
BYTEBPE_ALWAYS_INLINE ptrdiff_t bytebpe_shape_runs(const BytebpePatternProgram* p, const int32_t* shape,
                                                   const uint8_t* s, ptrdiff_t q, ptrdiff_t n, Seen& seen) {
    int64_t count;
    ptrdiff_t end = bytebpe_shape_run(p, 1, shape[4], shape[6], s, q, n, &count);
    seen.at(end);
    if (shape[0] == BYTEBPE_SHAPE_OPT_RUN) return count < shape[5] ? -1 : end;
    const uint32_t lower = 1u << shape[7];
    if (!bytebpe_pattern_has(p, lower, s, end, n)) {
        // U* gives back one code point at a time until L+ can start; L+ then takes just that one, since every
        // code point after it up to `end` is outside L.
        while (end > q) {
            const ptrdiff_t back = bytebpe_pattern_back(s, end, q);
            if (bytebpe_pattern_has(p, lower, s, back, n)) return end;
            end = back;
        }
        return -1;
    }
    end = bytebpe_shape_run(p, 1, shape[7], -1, s, end, n, &count);
    seen.at(end);
    return end;
}

// A branch of one of the two shapes (pattern_compiler._shape) at s[i]: its end, or -1.
template <class Seen>
BYTEBPE_ALWAYS_INLINE ptrdiff_t bytebpe_shape_match(const BytebpePatternProgram* p, const int32_t* shape, const uint8_t* s,
                                            ptrdiff_t i, ptrdiff_t n, BytebpePatternFrame* stack, Seen& seen) {
    int64_t count;
    ptrdiff_t end = -1;
    seen.at(i);
    if (shape[1] != 0 && i < n) {
        ptrdiff_t width = 1;
        bool taken = shape[1] == 2 ? s[i] == (uint8_t)shape[2]
                                   : ((bytebpe_pattern_bits(p, s, i, n, &width) >> shape[2]) & 1) != 0;
        if (taken) {
            end = bytebpe_shape_runs(p, shape, s, i + width, n, seen);
            if (end < 0 && shape[3]) return -1;     // a possessive A keeps its code point
        }
    }
    if (end < 0) end = bytebpe_shape_runs(p, shape, s, i, n, seen);
    if (end < 0) return -1;
    if (shape[8] != 0) end = bytebpe_shape_run(p, shape[8], shape[9], shape[10], s, end, n, &count);
    seen.at(end);
    if (shape[11] != 0) end = bytebpe_shape_run(p, shape[11], shape[12], shape[13], s, end, n, &count);
    seen.at(end);
    if (shape[14] >= 0 && bytebpe_pattern_has(p, (uint32_t)shape[15], s, end, n)) {
        // What is left always matches (the compiler checked): run it where it can take something.
        const ptrdiff_t rest = bytebpe_pattern_match(p, shape[14], s, end, n, 0, stack, BYTEBPE_PATTERN_STACK,
                                                     seen);
        if (rest > end) end = rest;
    }
    return end;
}

// Scan pieces of s[start:n] (start < n) and write the end of each to piece_ends, at most `capacity` (>= 1) of
// them; returns how many were written. With a BytebpeMaxSeen, also the furthest position each piece's match
// looked at (`seen_out`, see BytebpeMaxSeen).
template <class Seen>
static inline ptrdiff_t bytebpe_pattern_scan_with(const BytebpePatternProgram* p, const uint8_t* s, ptrdiff_t start,
                                                  ptrdiff_t n, ptrdiff_t* piece_ends, ptrdiff_t* seen_out,
                                                  ptrdiff_t capacity) {
    BytebpePatternFrame stack[BYTEBPE_PATTERN_STACK];
    const size_t branches = p->branch_pc.size();
    const int32_t* branch_pc = p->branch_pc.data();
    const uint32_t* branch_first = p->branch_first.data();
    const int32_t* branch_shape = p->branch_shape.data();
    ptrdiff_t count = 0, width;
    while (start < n && count < capacity) {
        Seen seen(start);
        // The branches the code point at `start` can start (bit k: branch k, at most 32), tried in pattern
        // order: for ASCII from a table, else from its class bits.
        uint32_t candidates = 0;
        ptrdiff_t end;  // one code point on: never kept, the compiler accepts only patterns that match everywhere
        if (s[start] < 0x80) {
            candidates = p->ascii_branches[s[start]];
            end = start + 1;
        } else {
            const uint32_t bits = bytebpe_pattern_bits(p, s, start, n, &width);
            for (size_t k = 0; k < branches; ++k)
                if (branch_first[k] == 0 || (bits & branch_first[k])) candidates |= 1u << k;
            end = start + width;
        }
        for (; candidates; candidates &= candidates - 1) {
            const int k = __builtin_ctz(candidates);
            const int32_t* shape = branch_shape + (size_t)k * BYTEBPE_SHAPE_WORDS;
            const ptrdiff_t found = shape[0] != BYTEBPE_SHAPE_NONE
                ? bytebpe_shape_match(p, shape, s, start, n, stack, seen)
                : bytebpe_pattern_match(p, branch_pc[k], s, start, n, 0, stack, BYTEBPE_PATTERN_STACK, seen);
            if (found > start) { end = found; break; }
        }
        if (Seen::tracks) seen_out[count] = seen.furthest();
        piece_ends[count++] = end;
        start = end;
    }
    return count;
}

static inline ptrdiff_t bytebpe_pattern_scan(const BytebpePatternProgram* p, const uint8_t* s, ptrdiff_t start,
                                             ptrdiff_t n, ptrdiff_t* piece_ends, ptrdiff_t capacity) {
    return bytebpe_pattern_scan_with<BytebpeNoSeen>(p, s, start, n, piece_ends, nullptr, capacity);
}

// bytebpe_pattern_scan, also writing to seen_out the furthest position each piece's match looked at: a piece
// is cut the same in any prefix s[:k] with k > that position (and all the pieces before it are too, when
// theirs are below k).
static inline ptrdiff_t bytebpe_pattern_scan_seen(const BytebpePatternProgram* p, const uint8_t* s, ptrdiff_t start,
                                                  ptrdiff_t n, ptrdiff_t* piece_ends, ptrdiff_t* seen_out,
                                                  ptrdiff_t capacity) {
    return bytebpe_pattern_scan_with<BytebpeMaxSeen>(p, s, start, n, piece_ends, seen_out, capacity);
}
