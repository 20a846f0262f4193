/* The constants of the piece hash: _shared.pxd's _hash_bytes (every table and cache of pieces indexes by
 * it) and the vector pass of _home_lookup.h mix with these, and must agree bit for bit. */
#pragma once

#define BYTEBPE_HASH_LENGTH 0x9E3779B97F4A7C15ULL    /* times the length, into the head word */
#define BYTEBPE_HASH_MIX 0xBF58476D1CE4E5B9ULL       /* after each word mixed in */
#define BYTEBPE_HASH_FINAL 0x94D049BB133111EBULL     /* the finalizer's */
