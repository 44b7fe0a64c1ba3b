/* SPDX-License-Identifier: Apache-2.0 */
/*
** xxh64.c — XXH64 (see xxh64.h), from the xxHash specification
** (doc/xxhash_spec.md of the xxHash project): four lanes over 32-byte
** stripes, then the tail, then the avalanche.
*/
#include "codec/xxh64.h"

#include <string.h>

#define P1 0x9E3779B185EBCA87u
#define P2 0xC2B2AE3D27D4EB4Fu
#define P3 0x165667B19E3779F9u
#define P4 0x85EBCA77C2B2AE63u
#define P5 0x27D4EB2F165667C5u

static uint64_t rotl(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }

/* Little-endian loads, whatever the host (a plain load where the host is
** little-endian, which compilers do not always see in the byte-wise form). */
static inline uint64_t read64(const unsigned char *p) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  uint64_t v;
  memcpy(&v, p, sizeof(v));
  return v;
#else
  return (uint64_t)p[0] | (uint64_t)p[1] << 8 | (uint64_t)p[2] << 16 | (uint64_t)p[3] << 24 | (uint64_t)p[4] << 32 |
         (uint64_t)p[5] << 40 | (uint64_t)p[6] << 48 | (uint64_t)p[7] << 56;
#endif
}
static uint64_t read32(const unsigned char *p) {
  return (uint64_t)p[0] | (uint64_t)p[1] << 8 | (uint64_t)p[2] << 16 | (uint64_t)p[3] << 24;
}

static uint64_t lane(uint64_t acc, uint64_t input) { return rotl(acc + input * P2, 31) * P1; }

static uint64_t merge(uint64_t acc, uint64_t v) { return (acc ^ lane(0, v)) * P1 + P4; }

/* Whole stripes of p[0..n) into the lanes; returns the bytes consumed. */
static uint64_t stripes(uint64_t *v, const unsigned char *p, uint64_t n) {
  uint64_t v1 = v[0], v2 = v[1], v3 = v[2], v4 = v[3], done = 0;
  for (; n - done >= 32; done += 32) {
    v1 = lane(v1, read64(p + done));
    v2 = lane(v2, read64(p + done + 8));
    v3 = lane(v3, read64(p + done + 16));
    v4 = lane(v4, read64(p + done + 24));
  }
  v[0] = v1, v[1] = v2, v[2] = v3, v[3] = v4;
  return done;
}

void xxh64_init(xxh64_state *s, uint64_t seed) {
  memset(s, 0, sizeof(*s));
  s->seed = seed;
  s->v[0] = seed + P1 + P2;
  s->v[1] = seed + P2;
  s->v[2] = seed;
  s->v[3] = seed - P1;
}

void xxh64_update(xxh64_state *s, const void *data, uint64_t len) {
  const unsigned char *p = data;
  if (!len) return;
  s->total += len;
  if (s->used) {
    uint64_t take = 32 - s->used < len ? 32 - s->used : len;
    memcpy(s->stripe + s->used, p, (size_t)take);
    s->used += (unsigned)take;
    p += take;
    len -= take;
    if (s->used < 32) return;
    stripes(s->v, s->stripe, 32);
    s->used = 0;
  }
  if (len >= 32) {
    uint64_t done = stripes(s->v, p, len);
    p += done;
    len -= done;
  }
  if (len) memcpy(s->stripe, p, (size_t)len);
  s->used = (unsigned)len;
}

uint64_t xxh64_digest(const xxh64_state *s) {
  const unsigned char *p = s->stripe, *end = p + s->used;
  uint64_t h;
  if (s->total >= 32) {
    const uint64_t *v = s->v;
    h = rotl(v[0], 1) + rotl(v[1], 7) + rotl(v[2], 12) + rotl(v[3], 18);
    h = merge(merge(merge(merge(h, v[0]), v[1]), v[2]), v[3]);
  } else {
    h = s->seed + P5;
  }
  h += s->total;
  for (; end - p >= 8; p += 8) h = rotl(h ^ lane(0, read64(p)), 27) * P1 + P4;
  if (end - p >= 4) {
    h = rotl(h ^ read32(p) * P1, 23) * P2 + P3;
    p += 4;
  }
  for (; p < end; p++) h = rotl(h ^ *p * P5, 11) * P1;
  h ^= h >> 33;
  h *= P2;
  h ^= h >> 29;
  h *= P3;
  return h ^ (h >> 32);
}

uint64_t xxh64(const void *data, uint64_t len, uint64_t seed) {
  xxh64_state s;
  xxh64_init(&s, seed);
  xxh64_update(&s, data, len);
  return xxh64_digest(&s);
}
