/* SPDX-License-Identifier: Apache-2.0 */
/*
** json_read.h — a strict, bounded pull reader for JSON documents (RFC 8259):
** the safetensors header, Flower object bodies, metadata arguments.
**
** The caller walks the document value by value; nothing is built, so memory
** use is constant whatever the input. The whole text must be valid UTF-8;
** strings may not hold raw control characters; escapes are checked
** (\uXXXX surrogates must pair up); numbers follow the JSON grammar; nesting
** is bounded (JSON_MAX_DEPTH). Strings are returned as views of the raw text
** and decoded on demand. Errors read "<what>: <problem> at byte N", with N
** counted from the start of the enclosing file (the `base` given at init).
**
**   json_reader r;  json_str key;  int more;
**   json_reader_init(&r, text, n, 0, "safetensors header", &err);
**   json_begin(&r, '{');
**   while (!(rc = json_next_key(&r, &more, &key)) && more) { ... one value ... }
**   json_end(&r);
*/
#ifndef AR_JSON_READ_H
#define AR_JSON_READ_H

#include "codec/buf.h"

#define JSON_MAX_DEPTH 64

typedef struct json_reader {
  const unsigned char *s;
  uint64_t n, pos, base;
  int depth;
  unsigned char first[JSON_MAX_DEPTH]; /* no member read yet, per open container */
  const char *what;
  codec_err *err;
} json_reader;

/* A string as it stands in the text, without the quotes. */
typedef struct json_str {
  const unsigned char *p;
  uint64_t n;
  int escaped; /* contains backslash escapes: decode with json_unescape */
} json_str;

/* Checks the text is UTF-8 (CODEC_CORRUPT otherwise). base is added to byte
** offsets in messages. */
int json_reader_init(json_reader *r, const void *text, uint64_t n, uint64_t base, const char *what, codec_err *err);

/* The first character of the next value ('{', '[', '"', 't', 'f', 'n', '-'
** or a digit), or 0 at the end of the text. Consumes only white space. */
int json_peek(json_reader *r);

/* Open an object ('{') or array ('['). */
int json_begin(json_reader *r, char open);
/* Inside an array: *more = 1 when an element follows (read it next), 0 when
** the array has closed. */
int json_next(json_reader *r, int *more);
/* Inside an object: *more = 1 with the member's key read (and the ':'), the
** value to be read next; 0 when the object has closed. */
int json_next_key(json_reader *r, int *more, json_str *key);

int json_string(json_reader *r, json_str *out);
/* A non-negative integer without fraction or exponent that fits uint64. */
int json_uint(json_reader *r, uint64_t *out);
/* A number token of any kind, scanned (not converted): it is the text from
** the position json_peek left to r->pos. *integral: no fraction or exponent. */
int json_number(json_reader *r, int *integral, int *negative);
/* Skip one value of any kind. */
int json_skip(json_reader *r);
/* Only white space may remain. */
int json_end(json_reader *r);

/* Report a problem at the reader's position: "<what>: <problem> at byte N". */
int json_fail(json_reader *r, const char *problem);
/* The same, pointing at an earlier position (r->pos as it was), or at a
** key or value read earlier (its opening quote). */
int json_fail_at(json_reader *r, uint64_t pos, const char *problem);
int json_fail_str(json_reader *r, const json_str *s, const char *problem);

/* Append the decoded UTF-8 of a string (CODEC_OK, or the buffer's rc). */
int json_unescape(const json_str *s, buf_t *out);
/* Does the decoded string equal the NUL-terminated UTF-8 text lit? */
int json_str_eq(const json_str *s, const char *lit);

#endif
