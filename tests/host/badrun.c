/* SPDX-License-Identifier: Apache-2.0 */
/*
** badrun.c — runs the malformed-input corpus (tests/bad/NAME.manifest): every
** input through every SQL function that reads its format, each of which must
** report the expected problem.
**
** A manifest is a list of checks, then a list of inputs:
**
**   bind text                    bind the input as TEXT (default: BLOB)
**   read NAME SQL                SQL (?1 = the input) fails with SQLITE_ERROR
**                                and a message "NAME: ...SUBSTRING..."
**   message SQL                  SQL returns text containing SUBSTRING
**   false SQL                    SQL returns 0
**   FILE | SUBSTRING             an input, relative to tests/bad/, and the
**                                text its error must contain
**
** Blank lines and lines starting with '#' are ignored. Every message must
** also be valid UTF-8. Prints "ok bad/FILE" or "FAIL bad/FILE: ..." per input.
**
** Usage: badrun [-e build/arrayrecord] tests/bad/X.manifest ...
** Built with -DAR_STATIC_EXT the extension is linked in (sanitizer builds).
*/
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "opendb.h"

#define MAX_CHECKS 64

enum { CHECK_READ, CHECK_MESSAGE, CHECK_FALSE };

typedef struct check {
  int kind;
  char name[64];
  char *sql;
} check;

static char *dup_string(const char *s) {
  size_t n = strlen(s) + 1;
  char *p = malloc(n);
  if (p) memcpy(p, s, n);
  return p;
}

static int utf8_valid(const unsigned char *s, size_t n) {
  size_t i = 0;
  while (i < n) {
    unsigned c = s[i], len, k;
    if (c < 0x80) {
      i++;
      continue;
    }
    len = c >= 0xf0 && c <= 0xf4 ? 4 : c >= 0xe0 ? 3 : c >= 0xc2 && c <= 0xdf ? 2 : 0;
    if (!len || len > n - i) return 0;
    for (k = 1; k < len; k++)
      if ((s[i + k] & 0xc0) != 0x80) return 0;
    i += len;
  }
  return 1;
}

static unsigned char *read_input(const char *path, long *len) {
  FILE *f = fopen(path, "rb");
  unsigned char *buf;
  long n;
  if (!f) return NULL;
  if (fseek(f, 0, SEEK_END) != 0 || (n = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0) {
    fclose(f);
    return NULL;
  }
  buf = malloc((size_t)n + 1);
  if (buf && n && fread(buf, 1, (size_t)n, f) != (size_t)n) {
    free(buf);
    buf = NULL;
  }
  fclose(f);
  *len = n;
  return buf;
}

/* Run one check; returns NULL when it passes, else a description (static). */
static const char *run_check(sqlite3 *db, const check *c, const unsigned char *in, long n, int as_text,
                             const char *want) {
  static char why[1024];
  sqlite3_stmt *st;
  int rc;
  const char *msg;
  if (sqlite3_prepare_v2(db, c->sql, -1, &st, NULL) != SQLITE_OK) {
    snprintf(why, sizeof(why), "cannot prepare: %s", sqlite3_errmsg(db));
    return why;
  }
  if (as_text)
    sqlite3_bind_text(st, 1, (const char *)in, (int)n, SQLITE_STATIC);
  else
    sqlite3_bind_blob(st, 1, in, (int)n, SQLITE_STATIC);
  while ((rc = sqlite3_step(st)) == SQLITE_ROW && c->kind == CHECK_READ) {}
  why[0] = 0;
  if (c->kind == CHECK_READ) {
    size_t plen = strlen(c->name);
    msg = sqlite3_errmsg(db);
    if (rc != SQLITE_ERROR) {
      snprintf(why, sizeof(why), "%s: expected an error, got rc %d (%s)", c->sql, rc, msg);
    } else if (strncmp(msg, c->name, plen) != 0 || strncmp(msg + plen, ": ", 2) != 0 || !strstr(msg, want) ||
               !utf8_valid((const unsigned char *)msg, strlen(msg))) {
      snprintf(why, sizeof(why), "%s:\n      got      %s\n      expected %s: ...%s...", c->sql, msg, c->name, want);
    }
  } else if (rc != SQLITE_ROW) {
    snprintf(why, sizeof(why), "%s: expected a row, got rc %d (%s)", c->sql, rc, sqlite3_errmsg(db));
  } else if (c->kind == CHECK_FALSE) {
    if (sqlite3_column_type(st, 0) != SQLITE_INTEGER || sqlite3_column_int(st, 0) != 0)
      snprintf(why, sizeof(why), "%s: expected 0, got %s", c->sql, sqlite3_column_text(st, 0));
  } else {
    msg = (const char *)sqlite3_column_text(st, 0);
    if (!msg || !strstr(msg, want) || !utf8_valid((const unsigned char *)msg, strlen(msg)))
      snprintf(why, sizeof(why), "%s:\n      got      %s\n      expected ...%s...", c->sql, msg ? msg : "NULL", want);
  }
  sqlite3_finalize(st);
  return why[0] ? why : NULL;
}

static char *trim(char *s) {
  char *e;
  while (*s == ' ' || *s == '\t') s++;
  e = s + strlen(s);
  while (e > s && (e[-1] == '\n' || e[-1] == '\r' || e[-1] == ' ' || e[-1] == '\t')) *--e = 0;
  return s;
}

static int run_manifest(sqlite3 *db, const char *path, int *inputs) {
  FILE *f = fopen(path, "r");
  char line[4096], dir[1024];
  check checks[MAX_CHECKS];
  int nchecks = 0, as_text = 0, failures = 0, lineno = 0, i;
  const char *slash = strrchr(path, '/');
  if (!f) {
    printf("FAIL bad/%s: cannot open\n", path);
    return 1;
  }
  snprintf(dir, sizeof(dir), "%.*s", slash ? (int)(slash - path) : 1, slash ? path : ".");
  while (fgets(line, sizeof(line), f)) {
    char *s = trim(line), *bar;
    lineno++;
    if (!*s || *s == '#') continue;
    if (strncmp(s, "bind ", 5) == 0) {
      as_text = strcmp(trim(s + 5), "text") == 0;
    } else if (strncmp(s, "read ", 5) == 0 || strncmp(s, "message ", 8) == 0 || strncmp(s, "false ", 6) == 0) {
      check *c = &checks[nchecks];
      char *rest;
      if (nchecks == MAX_CHECKS) {
        printf("FAIL bad/%s:%d: too many checks\n", path, lineno);
        failures++;
        break;
      }
      c->kind = s[0] == 'r' ? CHECK_READ : s[0] == 'm' ? CHECK_MESSAGE : CHECK_FALSE;
      rest = trim(strchr(s, ' '));
      c->name[0] = 0;
      if (c->kind == CHECK_READ) {
        size_t len = strcspn(rest, " ");
        snprintf(c->name, sizeof(c->name), "%.*s", (int)len, rest);
        rest = trim(rest + len);
      }
      c->sql = dup_string(rest);
      nchecks++;
    } else if ((bar = strstr(s, " | ")) != NULL) {
      char file[2048];
      const char *want = trim(bar + 3);
      unsigned char *in;
      long n = 0;
      int bad = 0;
      *bar = 0;
      snprintf(file, sizeof(file), "%s/%s", dir, trim(s));
      (*inputs)++;
      if (!(in = read_input(file, &n))) {
        printf("FAIL bad/%s: cannot read\n", trim(s));
        failures++;
        continue;
      }
      for (i = 0; i < nchecks; i++) {
        const char *why = run_check(db, &checks[i], in, n, as_text, want);
        if (why) {
          if (!bad) printf("FAIL bad/%s\n", trim(s));
          printf("    %s\n", why);
          bad = 1;
        }
      }
      if (!bad) printf("ok bad/%s\n", trim(s));
      failures += bad;
      free(in);
    } else {
      printf("FAIL bad/%s:%d: cannot parse line\n", path, lineno);
      failures++;
    }
  }
  fclose(f);
  for (i = 0; i < nchecks; i++) free(checks[i].sql);
  return failures;
}

int main(int argc, char **argv) {
  const char *ext = "build/arrayrecord";
  sqlite3 *db;
  int i, rc, failures = 0, inputs = 0;
  host_static_ext();
  for (i = 1; i < argc; i++) {
    if (strcmp(argv[i], "-e") == 0 && i + 1 < argc) {
      ext = argv[++i];
      continue;
    }
    if ((rc = host_open("badrun", ext, &db)) != 0) return rc;
    failures += run_manifest(db, argv[i], &inputs);
    if (sqlite3_close(db) != SQLITE_OK) {
      fprintf(stderr, "badrun: database did not close cleanly\n");
      return 3;
    }
  }
  printf("%d malformed inputs checked\n", inputs);
  return failures ? 1 : 0;
}
