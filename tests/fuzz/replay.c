/* SPDX-License-Identifier: Apache-2.0 */
/*
** replay.c — a main() for the fuzz harnesses when they are built without
** libFuzzer (gcc, valgrind, coverage builds): it feeds every file named on
** the command line, or found in a directory named there, to
** LLVMFuzzerTestOneInput once. `make test` uses it to replay the committed
** corpora (crash reproducers included) as regression tests.
**
** Prints "ok fuzz/NAME (N inputs)" at the end; a crash, a sanitizer report or
** an abort() in the harness ends the run without it, which fails the test.
*/
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static long inputs;

static int replay_file(const char *path) {
  FILE *f = fopen(path, "rb");
  unsigned char *buf;
  long n;
  if (!f) return 1;
  if (fseek(f, 0, SEEK_END) != 0 || (n = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0) {
    fclose(f);
    return 1;
  }
  /* An exact-size heap copy, so reading past the input is caught. */
  buf = malloc(n ? (size_t)n : 1);
  if (!buf || (n && fread(buf, 1, (size_t)n, f) != (size_t)n)) {
    fclose(f);
    free(buf);
    return 1;
  }
  fclose(f);
  LLVMFuzzerTestOneInput(buf, (size_t)n);
  free(buf);
  inputs++;
  return 0;
}

static int replay_path(const char *path) {
  struct stat st;
  DIR *d;
  struct dirent *e;
  int bad = 0;
  if (stat(path, &st) != 0) {
    fprintf(stderr, "replay: cannot stat %s\n", path);
    return 1;
  }
  if (!S_ISDIR(st.st_mode)) return replay_file(path);
  if (!(d = opendir(path))) return 1;
  while ((e = readdir(d)) != NULL) {
    char child[4096];
    if (e->d_name[0] == '.') continue;
    snprintf(child, sizeof(child), "%s/%s", path, e->d_name);
    bad |= replay_path(child);
  }
  closedir(d);
  return bad;
}

int main(int argc, char **argv) {
  const char *name = argc > 1 ? argv[1] : "?";
  int i, bad = 0;
  for (i = 2; i < argc; i++) bad |= replay_path(argv[i]);
  if (bad) {
    printf("FAIL fuzz/%s: unreadable input\n", name);
    return 1;
  }
  printf("ok fuzz/%s (%ld inputs)\n", name, inputs);
  return 0;
}
