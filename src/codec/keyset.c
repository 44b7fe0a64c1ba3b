/* SPDX-License-Identifier: Apache-2.0 */
/*
** keyset.c — open-addressing hash set of keys (see keyset.h).
*/
#include "codec/keyset.h"

#include <string.h>
#include <time.h>

/* splitmix64's finaliser: every output bit depends on every input bit. */
static uint64_t ks_mix(uint64_t x) {
  x ^= x >> 30;
  x *= UINT64_C(0xbf58476d1ce4e5b9);
  x ^= x >> 27;
  x *= UINT64_C(0x94d049bb133111eb);
  return x ^ (x >> 31);
}

/* FNV-1a, seeded and mixed: slots are taken from the low bits, which plain
** FNV-1a lets anyone collide offline. */
static uint64_t ks_hash(const keyset_t *ks, const unsigned char *p, uint64_t n) {
  uint64_t h = UINT64_C(1469598103934665603);
  while (n--) h = (h ^ *p++) * UINT64_C(1099511628211);
  return ks_mix(h ^ ks->seed);
}

/* A seed nobody outside this process knows: where the set and this code
** live (address-space randomisation) and the time. */
static uint64_t ks_new_seed(const keyset_t *ks) {
  uint64_t s = (uint64_t)(uintptr_t)ks;
  s = ks_mix(s ^ (uint64_t)(uintptr_t)&ks_new_seed);
  s = ks_mix(s ^ (uint64_t)time(NULL));
  return ks_mix(s ^ (uint64_t)clock());
}

void keyset_init(keyset_t *ks) {
  buf_init(&ks->arena, UINT64_MAX);
  ks->slots = NULL;
  ks->cap = ks->count = 0;
  ks->seed = ks_new_seed(ks);
}

void keyset_free(keyset_t *ks) {
  buf_free(&ks->arena);
  codec_free(ks->slots);
  ks->slots = NULL;
  ks->cap = ks->count = 0;
}

static uint64_t ks_find(const keyset_t *ks, const unsigned char *key, uint64_t n, uint64_t h) {
  uint64_t i = h & (ks->cap - 1);
  while (ks->slots[i].value >= 0) {
    const ks_slot *s = &ks->slots[i];
    /* n == 0: an empty key, with maybe no arena yet (no arithmetic on NULL) */
    if (s->hash == h && s->len == n && (n == 0 || memcmp(ks->arena.p + s->off, key, (size_t)n) == 0)) break;
    i = (i + 1) & (ks->cap - 1);
  }
  return i;
}

int keyset_get(const keyset_t *ks, const void *key, uint64_t n) {
  if (!ks->cap) return -1;
  return ks->slots[ks_find(ks, key, n, ks_hash(ks, key, n))].value;
}

static int ks_grow(keyset_t *ks) {
  uint64_t cap = ks->cap ? ks->cap * 2 : 64, i;
  ks_slot *old = ks->slots, *slots;
  uint64_t old_cap = ks->cap;
  slots = codec_malloc(cap * sizeof(ks_slot));
  if (!slots) return CODEC_NOMEM;
  for (i = 0; i < cap; i++) slots[i].value = -1;
  ks->slots = slots;
  ks->cap = cap;
  for (i = 0; i < old_cap; i++) {
    if (old[i].value >= 0) {
      uint64_t j = old[i].hash & (cap - 1);
      while (slots[j].value >= 0) j = (j + 1) & (cap - 1);
      slots[j] = old[i];
    }
  }
  codec_free(old);
  return CODEC_OK;
}

int keyset_put(keyset_t *ks, const void *key, uint64_t n, int value) {
  uint64_t h = ks_hash(ks, key, n), i, off = ks->arena.n;
  if ((ks->count + 1) * 2 > ks->cap && ks_grow(ks)) return CODEC_NOMEM;
  buf_append(&ks->arena, key, n);
  if (ks->arena.rc) return CODEC_NOMEM;
  i = ks_find(ks, key, n, h);
  ks->slots[i].hash = h;
  ks->slots[i].off = off;
  ks->slots[i].len = n;
  ks->slots[i].value = value;
  ks->count++;
  return CODEC_OK;
}

static codec_span key_at(const void *items, int i, size_t stride, size_t key_off) {
  codec_span k;
  memcpy(&k, (const unsigned char *)items + (size_t)i * stride + key_off, sizeof(k));
  return k;
}

int keyset_find_duplicate(const void *items, int n, size_t stride, size_t key_off, int *first, int *second) {
  keyset_t ks;
  int i, j, rc = CODEC_OK;
  *first = *second = -1;
  if (n <= 16) {
    for (i = 1; i < n; i++) {
      codec_span a = key_at(items, i, stride, key_off);
      for (j = 0; j < i; j++) {
        codec_span b = key_at(items, j, stride, key_off);
        if (a.n == b.n && memcmp(a.p, b.p, (size_t)a.n) == 0) {
          *first = j;
          *second = i;
          return CODEC_OK;
        }
      }
    }
    return CODEC_OK;
  }
  keyset_init(&ks);
  for (i = 0; i < n; i++) {
    codec_span a = key_at(items, i, stride, key_off);
    int seen = keyset_get(&ks, a.p, a.n);
    if (seen >= 0) {
      *first = seen;
      *second = i;
      break;
    }
    if (keyset_put(&ks, a.p, a.n, i)) {
      rc = CODEC_NOMEM;
      break;
    }
  }
  keyset_free(&ks);
  return rc;
}
