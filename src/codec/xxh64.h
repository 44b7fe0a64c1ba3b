/* SPDX-License-Identifier: Apache-2.0 */
/*
** xxh64.h — XXH64, the 64-bit non-cryptographic hash of the xxHash family,
** written here from its published specification. Packed records (packed.h)
** name the bytes they unpack to by it, and the base they were packed
** against, because it runs at memory speed (SHA-256 runs at about 1 GB/s
** here). It detects accidents, not attacks. zstd's frame checksum is its
** low 32 bits, which the unit tests compare with libzstd's.
**
** Streaming: init, update with the bytes in order in pieces of any size,
** digest; or xxh64() over one buffer.
*/
#ifndef AR_XXH64_H
#define AR_XXH64_H

#include <stdint.h>

typedef struct xxh64_state {
  uint64_t v[4];            /* the four lanes */
  uint64_t total;           /* bytes seen */
  unsigned char stripe[32]; /* bytes waiting for a whole stripe */
  unsigned used;            /* how many */
  uint64_t seed;
} xxh64_state;

void xxh64_init(xxh64_state *s, uint64_t seed);
void xxh64_update(xxh64_state *s, const void *data, uint64_t len);
uint64_t xxh64_digest(const xxh64_state *s);

uint64_t xxh64(const void *data, uint64_t len, uint64_t seed);

#endif
