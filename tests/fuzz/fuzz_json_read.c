/* SPDX-License-Identifier: Apache-2.0 */
/*
** fuzz_json_read.c — libFuzzer harness for the strict JSON pull reader
** (json_read.c), differential against a reference validator written here
** from RFC 8259 (plus the reader's documented limits: UTF-8 text, escapes of
** surrogates in pairs, at most JSON_MAX_DEPTH open containers).
**
** Properties: the reader accepts a document exactly when the reference
** does, whether it walks every value or skips the top one (json_skip);
** errors are well-formed and point inside the text; an accepted document
** re-serialised canonically (strings decoded and re-escaped) is accepted
** again and serialises to the same text; json_str_eq agrees with
** json_unescape; json_uint agrees with the digits it read.
**
** seeds: tests/fuzz/corpus/json
*/
#include "fuzz.h"
#include "codec/json.h"
#include "codec/json_read.h"

/* --- the reference ----------------------------------------------------------------- */

typedef struct ref {
  const unsigned char *s;
  size_t n, i;
} ref;

static void ref_ws(ref *r) {
  while (r->i < r->n && (r->s[r->i] == ' ' || r->s[r->i] == '\t' || r->s[r->i] == '\n' || r->s[r->i] == '\r')) r->i++;
}

static int ref_hex4(ref *r, unsigned *v) {
  int k;
  *v = 0;
  if (r->n - r->i < 4) return 0;
  for (k = 0; k < 4; k++) {
    unsigned char c = r->s[r->i++];
    *v <<= 4;
    if (c >= '0' && c <= '9')
      *v |= (unsigned)(c - '0');
    else if (c >= 'a' && c <= 'f')
      *v |= (unsigned)(c - 'a' + 10);
    else if (c >= 'A' && c <= 'F')
      *v |= (unsigned)(c - 'A' + 10);
    else
      return 0;
  }
  return 1;
}

static int ref_string(ref *r) {
  r->i++; /* the opening quote */
  while (r->i < r->n) {
    unsigned char c = r->s[r->i++];
    unsigned u, lo;
    if (c == '"') return 1;
    if (c < 0x20) return 0;
    if (c != '\\') continue;
    if (r->i >= r->n) return 0;
    c = r->s[r->i++];
    if (c == 'u') {
      if (!ref_hex4(r, &u)) return 0;
      if (u >= 0xdc00 && u <= 0xdfff) return 0;
      if (u >= 0xd800 && u <= 0xdbff) {
        if (r->n - r->i < 2 || r->s[r->i] != '\\' || r->s[r->i + 1] != 'u') return 0;
        r->i += 2;
        if (!ref_hex4(r, &lo) || lo < 0xdc00 || lo > 0xdfff) return 0;
      }
    } else if (!(c == '"' || c == '\\' || c == '/' || c == 'b' || c == 'f' || c == 'n' || c == 'r' || c == 't')) {
      return 0;
    }
  }
  return 0;
}

static int ref_digits(ref *r) {
  size_t start = r->i;
  while (r->i < r->n && r->s[r->i] >= '0' && r->s[r->i] <= '9') r->i++;
  return r->i > start;
}

static int ref_number(ref *r) {
  if (r->i < r->n && r->s[r->i] == '-') r->i++;
  if (r->i < r->n && r->s[r->i] == '0')
    r->i++;
  else if (!ref_digits(r))
    return 0;
  if (r->i < r->n && r->s[r->i] == '.') {
    r->i++;
    if (!ref_digits(r)) return 0;
  }
  if (r->i < r->n && (r->s[r->i] == 'e' || r->s[r->i] == 'E')) {
    r->i++;
    if (r->i < r->n && (r->s[r->i] == '+' || r->s[r->i] == '-')) r->i++;
    if (!ref_digits(r)) return 0;
  }
  return 1;
}

static int ref_word(ref *r, const char *w) {
  size_t len = strlen(w);
  if (r->n - r->i < len || memcmp(r->s + r->i, w, len) != 0) return 0;
  r->i += len;
  return 1;
}

static int ref_value(ref *r, int depth) {
  ref_ws(r);
  if (r->i >= r->n) return 0;
  switch (r->s[r->i]) {
    case '{':
    case '[': {
      char close = r->s[r->i] == '{' ? '}' : ']';
      int first = 1;
      if (depth == JSON_MAX_DEPTH) return 0;
      r->i++;
      for (;;) {
        ref_ws(r);
        if (r->i < r->n && r->s[r->i] == close && first) {
          r->i++;
          return 1;
        }
        if (close == '}') {
          if (r->i >= r->n || r->s[r->i] != '"' || !ref_string(r)) return 0;
          ref_ws(r);
          if (r->i >= r->n || r->s[r->i] != ':') return 0;
          r->i++;
        }
        if (!ref_value(r, depth + 1)) return 0;
        ref_ws(r);
        if (r->i >= r->n) return 0;
        if (r->s[r->i] == close) {
          r->i++;
          return 1;
        }
        if (r->s[r->i] != ',') return 0;
        r->i++;
        first = 0;
      }
    }
    case '"': return ref_string(r);
    case 't': return ref_word(r, "true");
    case 'f': return ref_word(r, "false");
    case 'n': return ref_word(r, "null");
    default: return ref_number(r);
  }
}

static int ref_document(const unsigned char *s, size_t n) {
  ref r;
  r.s = s;
  r.n = n;
  r.i = 0;
  if (!fuzz_utf8_valid(s, n) || !ref_value(&r, 0)) return 0;
  ref_ws(&r);
  return r.i == r.n;
}

/* --- walking with the reader ------------------------------------------------------- */

static void check_string(const json_str *str) {
  buf_t dec;
  buf_init(&dec, UINT64_MAX);
  FUZZ_CHECK(json_unescape(str, &dec) == CODEC_OK);
  FUZZ_CHECK(fuzz_utf8_valid(dec.p ? dec.p : (const unsigned char *)"", (size_t)dec.n));
  if (!dec.n || !memchr(dec.p, 0, (size_t)dec.n)) {
    char *lit = malloc((size_t)dec.n + 2);
    FUZZ_CHECK(lit != NULL);
    if (dec.n) memcpy(lit, dec.p, (size_t)dec.n);
    lit[dec.n] = 0;
    FUZZ_CHECK(json_str_eq(str, lit));
    lit[dec.n] = 'x';
    lit[dec.n + 1] = 0;
    FUZZ_CHECK(!json_str_eq(str, lit));
    if (dec.n) {
      lit[dec.n - 1] = 0;
      FUZZ_CHECK(!json_str_eq(str, lit));
    }
    free(lit);
  }
  buf_free(&dec);
}

/* Read one value, appending its canonical text to out. */
static int walk(json_reader *r, buf_t *out) {
  int c = json_peek(r), more, rc;
  json_str s;
  uint64_t start;
  switch (c) {
    case '{':
    case '[':
      if ((rc = json_begin(r, (char)c)) != CODEC_OK) return rc;
      buf_putc(out, (char)c);
      for (more = 0;; more = 1) {
        int next;
        if (c == '{') {
          if ((rc = json_next_key(r, &next, &s)) != CODEC_OK) return rc;
        } else if ((rc = json_next(r, &next)) != CODEC_OK) {
          return rc;
        }
        if (!next) break;
        if (more) buf_putc(out, ',');
        if (c == '{') {
          buf_t key;
          check_string(&s);
          buf_init(&key, UINT64_MAX);
          json_unescape(&s, &key);
          json_put_string(out, key.p ? key.p : (const unsigned char *)"", key.n);
          buf_free(&key);
          buf_putc(out, ':');
        }
        if ((rc = walk(r, out)) != CODEC_OK) return rc;
      }
      buf_putc(out, c == '{' ? '}' : ']');
      return CODEC_OK;
    case '"': {
      buf_t dec;
      if ((rc = json_string(r, &s)) != CODEC_OK) return rc;
      check_string(&s);
      buf_init(&dec, UINT64_MAX);
      json_unescape(&s, &dec);
      json_put_string(out, dec.p ? dec.p : (const unsigned char *)"", dec.n);
      buf_free(&dec);
      return CODEC_OK;
    }
    default: {
      /* Numbers and literals as they stand; json_uint on the digits too. */
      json_reader copy = *r;
      uint64_t v;
      start = r->pos;
      if ((rc = json_skip(r)) != CODEC_OK) return rc;
      buf_append(out, r->s + start, r->pos - start);
      if (c == '-' || (c >= '0' && c <= '9')) {
        int urc = json_uint(&copy, &v);
        int digits_only = 1;
        uint64_t k, want = 0, big = 0;
        for (k = start; k < r->pos; k++) {
          unsigned d = (unsigned)(r->s[k] - '0');
          if (r->s[k] < '0' || r->s[k] > '9')
            digits_only = 0;
          else if (want > (UINT64_MAX - d) / 10)
            big = 1;
          else
            want = want * 10 + d;
        }
        if (digits_only && !big)
          FUZZ_CHECK(urc == CODEC_OK && v == want && copy.pos == r->pos);
        else
          FUZZ_CHECK(urc == CODEC_CORRUPT && copy.pos == start);
      }
      return CODEC_OK;
    }
  }
}

static int read_document(const unsigned char *s, size_t n, buf_t *out, codec_err *err) {
  json_reader r;
  int rc;
  if ((rc = json_reader_init(&r, s, n, 0, "document", err)) != CODEC_OK) return rc;
  if ((rc = walk(&r, out)) != CODEC_OK) return rc;
  if ((rc = json_end(&r)) != CODEC_OK) return rc;
  FUZZ_CHECK(r.depth == 0);
  return CODEC_OK;
}

static int skip_document(const unsigned char *s, size_t n, codec_err *err) {
  json_reader r;
  int rc;
  if ((rc = json_reader_init(&r, s, n, 1000, "document", err)) != CODEC_OK) return rc;
  if ((rc = json_skip(&r)) != CODEC_OK) return rc;
  return json_end(&r);
}

/* "... at byte N" names a byte of the text (base + 0 .. base + n). */
static void check_position(const codec_err *err, uint64_t base, size_t n) {
  const char *at = strstr(err->msg, " at byte ");
  if (at) {
    unsigned long long pos = strtoull(at + 9, NULL, 10);
    FUZZ_CHECK(pos >= base && pos <= base + n);
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const unsigned char *s = size ? data : (const unsigned char *)"";
  int want = ref_document(s, size), rc;
  buf_t out, again;
  codec_err err;
  buf_init(&out, UINT64_MAX);
  buf_init(&again, UINT64_MAX);
  err.msg[0] = 0;
  rc = read_document(s, size, &out, &err);
  if (rc != CODEC_OK) {
    fuzz_check_error(rc, &err);
    FUZZ_CHECK(rc == CODEC_CORRUPT);
    check_position(&err, 0, size);
  }
  FUZZ_CHECK((rc == CODEC_OK) == want);
  rc = skip_document(s, size, &err);
  if (rc != CODEC_OK) check_position(&err, 1000, size);
  FUZZ_CHECK((rc == CODEC_OK) == want);
  if (want) {
    /* The canonical text is valid and a fixed point. */
    FUZZ_CHECK(out.rc == CODEC_OK && ref_document(out.p, out.n));
    FUZZ_CHECK(read_document(out.p, out.n, &again, &err) == CODEC_OK);
    FUZZ_CHECK(again.n == out.n && memcmp(again.p, out.p, (size_t)out.n) == 0);
  }
  buf_free(&out);
  buf_free(&again);
  return 0;
}
