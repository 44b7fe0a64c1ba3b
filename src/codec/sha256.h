/* SPDX-License-Identifier: Apache-2.0 */
/*
** sha256.h — SHA-256 (FIPS 180-4), self-contained: Flower names every object
** by the hex SHA-256 of its content. Streaming: init, update any number of
** times, final.
**
** On x86-64 CPUs with the SHA extensions (SHA-NI), and when built with GCC or
** clang, whole blocks are compressed with those instructions; the choice is
** made once, when the library is loaded (see sha256.c). Elsewhere the
** portable C code runs. Both give the same digests (tests/c/test_sha256.c).
*/
#ifndef AR_SHA256_H
#define AR_SHA256_H

#include <stddef.h>
#include <stdint.h>

#define SHA256_DIGEST_SIZE 32
#define SHA256_HEX_SIZE 65 /* 64 lowercase hex digits and a NUL */

typedef struct sha256_ctx {
  uint32_t h[8];
  uint64_t total; /* bytes hashed so far */
  unsigned char block[64];
  size_t used; /* bytes waiting in block */
} sha256_ctx;

void sha256_init(sha256_ctx *c);
void sha256_update(sha256_ctx *c, const void *data, uint64_t len);
/* sha256_update(c, data, len) and sha256_update(c2, data2, len) in one:
** with SHA-NI the two messages are hashed side by side, which keeps the
** unit busy while each round waits for the one before it (up to twice the
** speed when both contexts hold the same number of bytes). */
void sha256_update2(sha256_ctx *c, sha256_ctx *c2, const void *data, const void *data2, uint64_t len);
void sha256_final(sha256_ctx *c, unsigned char digest[SHA256_DIGEST_SIZE]);

/* One-shot digest of data[0..len). */
void sha256(const void *data, uint64_t len, unsigned char digest[SHA256_DIGEST_SIZE]);

/* Lowercase hex (hashlib's hexdigest) into out[SHA256_HEX_SIZE]; returns out. */
char *sha256_hex(const unsigned char digest[SHA256_DIGEST_SIZE], char *out);

/* Parse 64 hex digits (either case) into a digest; 0 on success, -1 when
** the text is not exactly 64 hex digits. */
int sha256_from_hex(const char *hex, size_t n, unsigned char digest[SHA256_DIGEST_SIZE]);

/* 1 when hashing uses the CPU's SHA extensions, 0 for the portable code. */
int sha256_accelerated(void);

/* For tests and benchmarks only: on != 0 makes every later block use the
** portable code, on == 0 returns to the load-time choice. Not thread-safe:
** call it only while no other thread is hashing. */
void sha256_force_portable(int on);

#endif
