# tests/harden.mk — hardening builds and runs, included by the Makefile:
#
#   make fuzz        every libFuzzer harness (tests/fuzz/fuzz_*.c) for
#                    FUZZ_SECONDS each (default 60), one after the other
#   make sanitize    the whole suite with ASan+UBSan (build/san)
#   make valgrind    SQL, unit, malformed-corpus and fuzz-replay tests under
#                    valgrind (build/vg)
#   make oom         the out-of-memory injection host over every SQL test
#   make coverage    line and branch coverage of src/ (build/cov, gcov)
#   make doccheck    every registered function and table has an entry in
#                    docs/reference.md
#
# Variant builds re-run this Makefile with BUILD=build/<variant> and their
# own CC/CFLAGS; HOST_STATIC=1 links the extension into the test hosts
# (registered with sqlite3_auto_extension) instead of loading the .so.

FUZZERS      := $(patsubst tests/fuzz/%.c,%,$(wildcard tests/fuzz/fuzz_*.c))
FUZZ_SECONDS ?= 60
FUZZ_CC      ?= clang
FUZZ_FLAGS   := -g -O1 -fno-omit-frame-pointer -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all
SAN_CC       ?= clang
SAN_FLAGS    := -g -O1 -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=all
ALL_SRC      := $(CODEC_SRC) $(MATH_SRC) $(SQL_SRC)
HOST_DEPS    := $(if $(HOST_STATIC),$(ALL_SRC) $(HEADERS))
HOST_LINK    := $(if $(HOST_STATIC),-DAR_STATIC_EXT -DSQLITE_CORE -Isrc $(ALL_SRC))
SO_FLAGS     ?=

.PHONY: fuzz fuzz-build fuzz-merge sanitize valgrind oom coverage hosts doccheck

# Test hosts beyond sqlrun and unit (see tests/host/*.c, tests/fuzz/replay.c).
REPLAYS := $(addprefix $(BUILD)/replay/,$(FUZZERS))
hosts: $(BUILD)/badrun $(BUILD)/oomrun $(REPLAYS)

$(BUILD)/badrun: tests/host/badrun.c tests/host/opendb.h $(HOST_DEPS) | $(BUILD)
	$(CC) $(WARN) $(CFLAGS) -o $@ tests/host/badrun.c $(HOST_LINK) -lsqlite3 -lm -lz

$(BUILD)/oomrun: tests/host/oomrun.c tests/host/sqlrun.c $(HOST_DEPS) | $(BUILD)
	$(CC) $(WARN) $(CFLAGS) -o $@ tests/host/oomrun.c $(HOST_LINK) -lsqlite3 -lm -lz

# Each harness with a plain main() that replays files (regression tests).
$(BUILD)/replay/%: tests/fuzz/%.c tests/fuzz/fuzz.h tests/fuzz/replay.c $(ALL_SRC) $(HEADERS)
	@mkdir -p $(dir $@)
	$(CC) $(WARN) $(CFLAGS) -DSQLITE_CORE -Isrc -o $@ $< tests/fuzz/replay.c $(ALL_SRC) -lsqlite3 -lm -lz

# libFuzzer builds.
fuzz-build: $(addprefix build/fuzz/,$(FUZZERS))
build/fuzz/%: tests/fuzz/%.c tests/fuzz/fuzz.h $(ALL_SRC) $(HEADERS)
	@mkdir -p build/fuzz
	$(FUZZ_CC) $(FUZZ_FLAGS) -DSQLITE_CORE -Isrc -o $@ $< $(ALL_SRC) -lsqlite3 -lm -lz

fuzz: fuzz-build
	@tests/fuzz/run fuzz build/fuzz $(FUZZ_SECONDS) $(FUZZ_ONLY)

# Minimise what fuzzing found into the committed corpora.
fuzz-merge: fuzz-build
	@tests/fuzz/run merge build/fuzz 0 $(FUZZ_ONLY)

# tests/python/test_readme.py runs build/sqlrun, hence the plain build first.
sanitize: build/san/python3 build/sqlrun
	@$(MAKE) --no-print-directory BUILD=build/san CC=$(SAN_CC) CFLAGS="$(SAN_FLAGS)" HOST_STATIC=1 \
	  SO_FLAGS=-shared-libasan PYTHON=$(CURDIR)/build/san/python3 test
	@BUILD=build/san tests/run oom

# Python loads the ASan-built .so with the ASan runtime preloaded; leaks are
# not checked there (the interpreter itself keeps memory until exit).
build/san/python3:
	@mkdir -p build/san
	@printf '#!/bin/sh\nLD_PRELOAD=%s ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 exec $(PYTHON) "$$@"\n' \
	  "$$($(SAN_CC) -print-file-name=libclang_rt.asan-x86_64.so)" >$@
	@chmod +x $@

VALGRIND := valgrind -q --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite,indirect \
            --show-leak-kinds=definite,indirect --track-origins=yes
valgrind:
	@$(MAKE) --no-print-directory BUILD=build/vg CFLAGS="-g -O1" all build/vg/unit build/vg/sqlrun hosts
	@SQLRUN="$(VALGRIND) build/vg/sqlrun" UNIT="$(VALGRIND) build/vg/unit" BADRUN="$(VALGRIND) build/vg/badrun" \
	  REPLAY="$(VALGRIND)" EXT=build/vg/arrayrecord BUILD=build/vg tests/run unit sql bad fuzz

oom: $(EXT) $(BUILD)/oomrun
	@tests/run oom

coverage: build/sqlrun
	@rm -rf build/cov
	@$(MAKE) --no-print-directory BUILD=build/cov CC=gcc CFLAGS="-g -O0 --coverage" HOST_STATIC=1 \
	  PYTHON=$(PYTHON) test
	@BUILD=build/cov tests/run oom >/dev/null
	@$(PYTHON) tests/coverage.py build/cov

doccheck: $(EXT)
	@AR_EXTENSION=$(EXT) $(PYTHON) tests/python/check_docs.py
