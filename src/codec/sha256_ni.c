/* SPDX-License-Identifier: Apache-2.0 */
/*
** sha256_ni.c — SHA-256 compression with the x86 SHA extensions
** (sha256rnds2, sha256msg1, sha256msg2), several times the portable code,
** and up to twice that again on two messages at once. Only the functions
** marked with a target attribute use those instructions, so the library
** still runs on any x86-64; sha256.c calls them only when
** sha256_ni_supported() said yes. Elsewhere this file is empty.
*/
#include "codec/sha256_impl.h"

#ifdef SHA256_HAVE_NI

#include <cpuid.h>
#include <immintrin.h>

int sha256_ni_supported(void) {
  unsigned a, b, c, d;
  if (!__get_cpuid(1, &a, &b, &c, &d)) return 0;
  if (!(c & bit_SSSE3) || !(c & bit_SSE4_1)) return 0;
  if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return 0;
  return (b & bit_SHA) != 0;
}

/* Four rounds of lane L (x or y): message words m (already big-endian) plus
** constants k. A lane's state lives as ABEF in L##s0 and CDGH in L##s1, as
** sha256rnds2 wants it; each sha256rnds2 does two rounds with the low two
** words of its third operand. */
#define NI_ROUNDS(L, k, m)                                                               \
  do {                                                                                   \
    __m128i t_ = _mm_add_epi32((m), _mm_loadu_si128((const __m128i *)(sha256_k + (k)))); \
    L##s1 = _mm_sha256rnds2_epu32(L##s1, L##s0, t_);                                     \
    L##s0 = _mm_sha256rnds2_epu32(L##s0, L##s1, _mm_shuffle_epi32(t_, 0x0E));            \
  } while (0)

/* The next four schedule words into w0, from the previous sixteen
** (w0 oldest .. w3 newest): W[t] = s1(W[t-2]) + W[t-7] + s0(W[t-15]) + W[t-16]. */
#define NI_SCHEDULE(w0, w1, w2, w3) \
  (w0) = _mm_sha256msg2_epu32(_mm_add_epi32(_mm_sha256msg1_epu32((w0), (w1)), _mm_alignr_epi8((w3), (w2), 4)), (w3))

/* Rounds k..k+3 of one lane (x) or of two (x and y, interleaved: a round
** waits for the one before it, so a second message keeps the unit busy). */
#define NI_FIRST1(k, w) NI_ROUNDS(x, k, x##w)
#define NI_FIRST2(k, w) \
  NI_FIRST1(k, w);      \
  NI_ROUNDS(y, k, y##w)
#define NI_STEP1(k, w0, w1, w2, w3)        \
  NI_SCHEDULE(x##w0, x##w1, x##w2, x##w3); \
  NI_ROUNDS(x, k, x##w0)
#define NI_STEP2(k, w0, w1, w2, w3)        \
  NI_STEP1(k, w0, w1, w2, w3);             \
  NI_SCHEDULE(y##w0, y##w1, y##w2, y##w3); \
  NI_ROUNDS(y, k, y##w0)

/* The 64 rounds of one block: the first 16 straight from the message. */
#define NI_64(FIRST, STEP)  \
  FIRST(0, w0);             \
  FIRST(4, w1);             \
  FIRST(8, w2);             \
  FIRST(12, w3);            \
  STEP(16, w0, w1, w2, w3); \
  STEP(20, w1, w2, w3, w0); \
  STEP(24, w2, w3, w0, w1); \
  STEP(28, w3, w0, w1, w2); \
  STEP(32, w0, w1, w2, w3); \
  STEP(36, w1, w2, w3, w0); \
  STEP(40, w2, w3, w0, w1); \
  STEP(44, w3, w0, w1, w2); \
  STEP(48, w0, w1, w2, w3); \
  STEP(52, w1, w2, w3, w0); \
  STEP(56, w2, w3, w0, w1); \
  STEP(60, w3, w0, w1, w2)

/* A block's sixteen words, byte order of each reversed (big-endian). */
#define NI_LOAD(L, p)                                                            \
  L##w0 = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(p)), bswap);        \
  L##w1 = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)((p) + 16)), bswap); \
  L##w2 = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)((p) + 32)), bswap); \
  L##w3 = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)((p) + 48)), bswap)

#define NI_BSWAP_MASK _mm_set_epi64x(0x0c0d0e0f08090a0bLL, 0x0405060700010203LL)

/* h[0..7] (A..H) to ABEF and CDGH, and back. */
static inline __attribute__((target("sha,sse4.1"))) void ni_get(const uint32_t h[8], __m128i *s0, __m128i *s1) {
  __m128i t = _mm_shuffle_epi32(_mm_loadu_si128((const __m128i *)h), 0xB1);       /* CDAB */
  __m128i u = _mm_shuffle_epi32(_mm_loadu_si128((const __m128i *)(h + 4)), 0x1B); /* EFGH */
  *s0 = _mm_alignr_epi8(t, u, 8);                                                 /* ABEF */
  *s1 = _mm_blend_epi16(u, t, 0xF0);                                              /* CDGH */
}

static inline __attribute__((target("sha,sse4.1"))) void ni_put(uint32_t h[8], __m128i s0, __m128i s1) {
  __m128i t = _mm_shuffle_epi32(s0, 0x1B);                        /* FEBA */
  __m128i u = _mm_shuffle_epi32(s1, 0xB1);                        /* DCHG */
  _mm_storeu_si128((__m128i *)h, _mm_blend_epi16(t, u, 0xF0));    /* DCBA */
  _mm_storeu_si128((__m128i *)(h + 4), _mm_alignr_epi8(u, t, 8)); /* HGFE */
}

__attribute__((target("sha,sse4.1"))) void sha256_ni_blocks(uint32_t h[8], const unsigned char *p, size_t n) {
  const __m128i bswap = NI_BSWAP_MASK;
  __m128i xs0, xs1, xsave0, xsave1, xw0, xw1, xw2, xw3;
  ni_get(h, &xs0, &xs1);
  for (; n; n--, p += 64) {
    xsave0 = xs0;
    xsave1 = xs1;
    NI_LOAD(x, p);
    NI_64(NI_FIRST1, NI_STEP1);
    xs0 = _mm_add_epi32(xs0, xsave0);
    xs1 = _mm_add_epi32(xs1, xsave1);
  }
  ni_put(h, xs0, xs1);
}

__attribute__((target("sha,sse4.1"))) void sha256_ni_blocks2(uint32_t h[8], const unsigned char *p, uint32_t h2[8],
                                                             const unsigned char *p2, size_t n) {
  const __m128i bswap = NI_BSWAP_MASK;
  __m128i xs0, xs1, xsave0, xsave1, xw0, xw1, xw2, xw3;
  __m128i ys0, ys1, ysave0, ysave1, yw0, yw1, yw2, yw3;
  ni_get(h, &xs0, &xs1);
  ni_get(h2, &ys0, &ys1);
  for (; n; n--, p += 64, p2 += 64) {
    xsave0 = xs0;
    xsave1 = xs1;
    ysave0 = ys0;
    ysave1 = ys1;
    NI_LOAD(x, p);
    NI_LOAD(y, p2);
    NI_64(NI_FIRST2, NI_STEP2);
    xs0 = _mm_add_epi32(xs0, xsave0);
    xs1 = _mm_add_epi32(xs1, xsave1);
    ys0 = _mm_add_epi32(ys0, ysave0);
    ys1 = _mm_add_epi32(ys1, ysave1);
  }
  ni_put(h, xs0, xs1);
  ni_put(h2, ys0, ys1);
}

#else
typedef int sha256_ni_unused; /* ISO C wants at least one declaration */
#endif
