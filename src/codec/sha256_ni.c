/* SPDX-License-Identifier: Apache-2.0 */
/*
** sha256_ni.c — SHA-256 compression with the x86 SHA extensions
** (sha256rnds2, sha256msg1, sha256msg2), about 7x the portable code. Only
** sha256_ni_blocks is compiled for those instructions (a target attribute),
** so the library still runs on any x86-64; sha256.c calls it only when
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

/* Four rounds: message words m (already big-endian) plus constants k. The
** state lives as ABEF in s0 and CDGH in s1, as sha256rnds2 wants it; each
** sha256rnds2 does two rounds with the low two words of its third operand. */
#define NI_ROUNDS(k, m)                                                                 \
  do {                                                                                  \
    __m128i t_ = _mm_add_epi32((m), _mm_loadu_si128((const __m128i *)(sha256_k + (k)))); \
    s1 = _mm_sha256rnds2_epu32(s1, s0, t_);                                             \
    s0 = _mm_sha256rnds2_epu32(s0, s1, _mm_shuffle_epi32(t_, 0x0E));                    \
  } while (0)

/* The next four schedule words into w0, from the previous sixteen
** (w0 oldest .. w3 newest): W[t] = s1(W[t-2]) + W[t-7] + s0(W[t-15]) + W[t-16]. */
#define NI_SCHEDULE(w0, w1, w2, w3) \
  (w0) = _mm_sha256msg2_epu32(_mm_add_epi32(_mm_sha256msg1_epu32((w0), (w1)), _mm_alignr_epi8((w3), (w2), 4)), (w3))

#define NI_SIXTEEN(k)           \
  NI_SCHEDULE(w0, w1, w2, w3);  \
  NI_ROUNDS((k), w0);           \
  NI_SCHEDULE(w1, w2, w3, w0);  \
  NI_ROUNDS((k) + 4, w1);       \
  NI_SCHEDULE(w2, w3, w0, w1);  \
  NI_ROUNDS((k) + 8, w2);       \
  NI_SCHEDULE(w3, w0, w1, w2);  \
  NI_ROUNDS((k) + 12, w3)

__attribute__((target("sha,sse4.1"))) void sha256_ni_blocks(uint32_t h[8], const unsigned char *p, size_t n) {
  /* byte order of each 32-bit word reversed: the message is big-endian */
  const __m128i bswap = _mm_set_epi64x(0x0c0d0e0f08090a0bLL, 0x0405060700010203LL);
  __m128i s0, s1, t, save0, save1, w0, w1, w2, w3;
  t = _mm_shuffle_epi32(_mm_loadu_si128((const __m128i *)h), 0xB1);   /* CDAB */
  s1 = _mm_shuffle_epi32(_mm_loadu_si128((const __m128i *)(h + 4)), 0x1B); /* EFGH */
  s0 = _mm_alignr_epi8(t, s1, 8);                                          /* ABEF */
  s1 = _mm_blend_epi16(s1, t, 0xF0);                                       /* CDGH */
  for (; n; n--, p += 64) {
    save0 = s0;
    save1 = s1;
    w0 = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)p), bswap);
    w1 = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(p + 16)), bswap);
    w2 = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(p + 32)), bswap);
    w3 = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(p + 48)), bswap);
    NI_ROUNDS(0, w0);
    NI_ROUNDS(4, w1);
    NI_ROUNDS(8, w2);
    NI_ROUNDS(12, w3);
    NI_SIXTEEN(16);
    NI_SIXTEEN(32);
    NI_SIXTEEN(48);
    s0 = _mm_add_epi32(s0, save0);
    s1 = _mm_add_epi32(s1, save1);
  }
  t = _mm_shuffle_epi32(s0, 0x1B);    /* FEBA */
  s1 = _mm_shuffle_epi32(s1, 0xB1);   /* DCHG */
  s0 = _mm_blend_epi16(t, s1, 0xF0);  /* DCBA */
  s1 = _mm_alignr_epi8(s1, t, 8);     /* HGFE */
  _mm_storeu_si128((__m128i *)h, s0);
  _mm_storeu_si128((__m128i *)(h + 4), s1);
}

#else
typedef int sha256_ni_unused; /* ISO C wants at least one declaration */
#endif
