/* SPDX-License-Identifier: Apache-2.0 */
/*
** sha256_impl.h — what sha256.c and sha256_ni.c share and nobody else needs:
** the round constants and the SHA-NI block function (x86-64, GCC/clang only).
*/
#ifndef AR_SHA256_IMPL_H
#define AR_SHA256_IMPL_H

#include <stddef.h>
#include <stdint.h>

extern const uint32_t sha256_k[64];

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define SHA256_HAVE_NI 1
/* Does this CPU have the SHA extensions (and the SSSE3/SSE4.1 they use here)? */
int sha256_ni_supported(void);
/* Compress n whole 64-byte blocks at p into h; only when sha256_ni_supported(). */
void sha256_ni_blocks(uint32_t h[8], const unsigned char *p, size_t n);
/* The same for two messages at once: n blocks at p into h, n at p2 into h2. */
void sha256_ni_blocks2(uint32_t h[8], const unsigned char *p, uint32_t h2[8], const unsigned char *p2, size_t n);
#endif

#endif
