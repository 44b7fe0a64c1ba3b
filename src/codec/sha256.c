/* SPDX-License-Identifier: Apache-2.0 */
/*
** sha256.c — SHA-256 as specified in FIPS 180-4 (see sha256.h). The portable
** compression is written for clarity first; on x86-64 CPUs with the SHA
** extensions whole blocks go to sha256_ni.c instead, chosen once at load time.
*/
#include "codec/sha256.h"

#include <string.h>

#include "codec/sha256_impl.h"

const uint32_t sha256_k[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};

#define ROTR(x, n) (((x) >> (n)) | ((x) << (32 - (n))))

static void compress(uint32_t h[8], const unsigned char *p) {
  uint32_t w[64], a, b, c, d, e, f, g, hh;
  int i;
  for (i = 0; i < 16; i++) {
    w[i] =
        (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 | (uint32_t)p[4 * i + 2] << 8 | (uint32_t)p[4 * i + 3];
  }
  for (i = 16; i < 64; i++) {
    uint32_t s0 = ROTR(w[i - 15], 7) ^ ROTR(w[i - 15], 18) ^ (w[i - 15] >> 3);
    uint32_t s1 = ROTR(w[i - 2], 17) ^ ROTR(w[i - 2], 19) ^ (w[i - 2] >> 10);
    w[i] = w[i - 16] + s0 + w[i - 7] + s1;
  }
  a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6], hh = h[7];
  for (i = 0; i < 64; i++) {
    uint32_t t1 = hh + (ROTR(e, 6) ^ ROTR(e, 11) ^ ROTR(e, 25)) + ((e & f) ^ (~e & g)) + sha256_k[i] + w[i];
    uint32_t t2 = (ROTR(a, 2) ^ ROTR(a, 13) ^ ROTR(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
    hh = g, g = f, f = e, e = d + t1, d = c, c = b, b = a, a = t1 + t2;
  }
  h[0] += a, h[1] += b, h[2] += c, h[3] += d, h[4] += e, h[5] += f, h[6] += g, h[7] += hh;
}

#ifdef SHA256_HAVE_NI
/* The choice is made once, by a constructor: it runs while the library is
** being loaded (dlopen, or program start for a static link), under the
** loader's lock and before any other thread can reach a function of ours, so
** every later read sees it without atomics or locks. Asking CPUID on every
** sha256_init instead would be as safe but costs a VM exit under a
** hypervisor. Until the constructor has run, use_ni is 0: portable, still
** correct. use_ni is written again only by sha256_force_portable (tests). */
static int ni_detected, use_ni;

__attribute__((constructor)) static void sha256_choose(void) {
  ni_detected = sha256_ni_supported();
  use_ni = ni_detected;
}
#endif

int sha256_accelerated(void) {
#ifdef SHA256_HAVE_NI
  return use_ni;
#else
  return 0;
#endif
}

void sha256_force_portable(int on) {
#ifdef SHA256_HAVE_NI
  use_ni = on ? 0 : ni_detected;
#else
  (void)on;
#endif
}

/* Compress n whole blocks at p. */
static void blocks(uint32_t h[8], const unsigned char *p, size_t n) {
#ifdef SHA256_HAVE_NI
  if (use_ni) {
    sha256_ni_blocks(h, p, n);
    return;
  }
#endif
  for (; n; n--, p += 64) compress(h, p);
}

void sha256_init(sha256_ctx *c) {
  static const uint32_t iv[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                                 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
  memcpy(c->h, iv, sizeof(iv));
  c->total = 0;
  c->used = 0;
}

void sha256_update(sha256_ctx *c, const void *data, uint64_t len) {
  const unsigned char *p = data;
  if (!len) return; /* data may be NULL then */
  c->total += len;
  if (c->used) {
    size_t take = 64 - c->used;
    if (len < take) take = (size_t)len;
    memcpy(c->block + c->used, p, take);
    c->used += take;
    p += take;
    len -= take;
    if (c->used < 64) return;
    blocks(c->h, c->block, 1);
    c->used = 0;
  }
  if (len >= 64) { /* whole blocks straight from the input */
    uint64_t n = len / 64;
    /* n * 64 <= len, and len fits a size_t: the input is in memory */
    blocks(c->h, p, (size_t)n);
    p += n * 64;
    len -= n * 64;
  }
  if (len) {
    memcpy(c->block, p, (size_t)len);
    c->used = (size_t)len;
  }
}

void sha256_update2(sha256_ctx *c, sha256_ctx *c2, const void *data, const void *data2, uint64_t len) {
#ifdef SHA256_HAVE_NI
  if (use_ni && c->used == c2->used && len >= 128) {
    const unsigned char *p = data, *p2 = data2;
    uint64_t n;
    if (c->used) { /* both contexts hold the same number of bytes: fill both */
      size_t take = 64 - c->used;
      sha256_update(c, p, take);
      sha256_update(c2, p2, take);
      p += take, p2 += take, len -= take;
    }
    n = len / 64;
    sha256_ni_blocks2(c->h, p, c2->h, p2, (size_t)n);
    c->total += n * 64, c2->total += n * 64;
    data = p + n * 64, data2 = p2 + n * 64, len -= n * 64;
  }
#endif
  sha256_update(c, data, len);
  sha256_update(c2, data2, len);
}

void sha256_final(sha256_ctx *c, unsigned char digest[SHA256_DIGEST_SIZE]) {
  uint64_t bits = c->total * 8;
  int i;
  c->block[c->used++] = 0x80;
  if (c->used > 56) {
    memset(c->block + c->used, 0, 64 - c->used);
    blocks(c->h, c->block, 1);
    c->used = 0;
  }
  memset(c->block + c->used, 0, 56 - c->used);
  for (i = 0; i < 8; i++) c->block[56 + i] = (unsigned char)(bits >> (56 - 8 * i));
  blocks(c->h, c->block, 1);
  for (i = 0; i < 8; i++) {
    digest[4 * i] = (unsigned char)(c->h[i] >> 24);
    digest[4 * i + 1] = (unsigned char)(c->h[i] >> 16);
    digest[4 * i + 2] = (unsigned char)(c->h[i] >> 8);
    digest[4 * i + 3] = (unsigned char)c->h[i];
  }
}

void sha256(const void *data, uint64_t len, unsigned char digest[SHA256_DIGEST_SIZE]) {
  sha256_ctx c;
  sha256_init(&c);
  sha256_update(&c, data, len);
  sha256_final(&c, digest);
}

char *sha256_hex(const unsigned char digest[SHA256_DIGEST_SIZE], char *out) {
  static const char hex[] = "0123456789abcdef";
  int i;
  for (i = 0; i < SHA256_DIGEST_SIZE; i++) {
    out[2 * i] = hex[digest[i] >> 4];
    out[2 * i + 1] = hex[digest[i] & 15];
  }
  out[64] = 0;
  return out;
}

static int hex_value(char ch) {
  if (ch >= '0' && ch <= '9') return ch - '0';
  if (ch >= 'a' && ch <= 'f') return ch - 'a' + 10;
  if (ch >= 'A' && ch <= 'F') return ch - 'A' + 10;
  return -1;
}

int sha256_from_hex(const char *hex, size_t n, unsigned char digest[SHA256_DIGEST_SIZE]) {
  int i;
  if (n != 64) return -1;
  for (i = 0; i < SHA256_DIGEST_SIZE; i++) {
    int hi = hex_value(hex[2 * i]), lo = hex_value(hex[2 * i + 1]);
    if (hi < 0 || lo < 0) return -1;
    digest[i] = (unsigned char)(hi << 4 | lo);
  }
  return 0;
}
