# SPDX-License-Identifier: Apache-2.0
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
# own CC/CFLAGS; each compiles every source once into its own BUILD/obj.

FUZZERS      := $(patsubst tests/fuzz/%.c,%,$(wildcard tests/fuzz/fuzz_*.c))
FUZZ_SECONDS ?= 60
FUZZ_CC      ?= clang
FUZZ_SAN     := -g -O1 -fno-omit-frame-pointer -fno-sanitize-recover=all
SAN_CC       ?= clang
SAN_FLAGS    := -g -O1 -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=all
# HOST_STATIC=1: the hosts link the static library (with SQLITE_CORE) and
# register it with sqlite3_auto_extension instead of loading the .so.
HOST_DEPS    := $(if $(HOST_STATIC),$(LIB))
HOST_FLAGS   := -Iinclude $(if $(HOST_STATIC),-DAR_STATIC_EXT)
HOST_LINK    := $(if $(HOST_STATIC),$(LIB))
SO_FLAGS     ?=

.PHONY: fuzz fuzz-build fuzz-merge sanitize valgrind oom coverage hosts doccheck

# Test hosts beyond sqlrun and unit (see tests/host/*.c, tests/fuzz/replay.c).
REPLAYS := $(addprefix $(BUILD)/replay/,$(FUZZERS))
hosts: $(BUILD)/badrun $(BUILD)/oomrun $(BUILD)/statichost $(BUILD)/minver/arrayrecord.so $(REPLAYS)

$(BUILD)/badrun: tests/host/badrun.c tests/host/opendb.h $(HOST_DEPS)
	$(CC) $(WARN) $(CFLAGS) $(HOST_FLAGS) -o $@ tests/host/badrun.c $(HOST_LINK) $(SQLITE_LIB) $(LIBS)

$(BUILD)/oomrun: tests/host/oomrun.c tests/host/sqlrun.c $(HOST_DEPS)
	$(CC) $(WARN) $(CFLAGS) $(HOST_FLAGS) -o $@ tests/host/oomrun.c $(HOST_LINK) $(SQLITE_LIB) $(LIBS)

# An application that links the static library and registers it with
# sqlite3_auto_extension, as README "Linking it into a program" shows.
$(BUILD)/statichost: tests/host/statichost.c include/arrayrecord.h $(LIB)
	$(CC) $(WARN) $(CFLAGS) -Iinclude -o $@ tests/host/statichost.c $(LIB) $(SQLITE_LIB) $(LIBS)

# The extension built to require an SQLite from the future: loading it must
# fail with the version message (tests/python/test_hardening.py).
$(OBJ)/minver/arrayrecord.o: src/arrayrecord.c VERSION
	@mkdir -p $(@D)
	$(CC) $(OBJ_FLAGS) -DAR_VERSION='"$(VERSION)"' -DAR_SQLITE_MIN_NUMBER=9999000 -c -o $@ $<
$(BUILD)/minver/arrayrecord.so: $(PURE_OBJ) $(filter-out $(OBJ)/ext/arrayrecord.o,$(EXT_OBJ)) $(OBJ)/minver/arrayrecord.o
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(SO_FLAGS) $(SHARED) -o $@ $^ $(LIBS)

# Each harness with a plain main() that replays files (regression tests).
$(BUILD)/replay/%: tests/fuzz/%.c tests/fuzz/fuzz.h tests/fuzz/replay.c $(LIB)
	@mkdir -p $(@D)
	$(CC) $(WARN) $(CFLAGS) -DSQLITE_CORE -Isrc -Iinclude -o $@ $< tests/fuzz/replay.c $(LIB) $(SQLITE_LIB) $(LIBS)

# libFuzzer builds: the library once with coverage instrumentation
# (build/fuzz/lib), each harness linked against it.
FUZZ_LIB := build/fuzz/lib/libarrayrecord.a
fuzz-build: $(addprefix build/fuzz/,$(FUZZERS))
ifneq ($(LIB),$(FUZZ_LIB))
$(FUZZ_LIB): FORCE
	@$(MAKE) --no-print-directory BUILD=build/fuzz/lib CC=$(FUZZ_CC) \
	  CFLAGS="$(FUZZ_SAN) -fsanitize=fuzzer-no-link,address,undefined" $(FUZZ_LIB)
endif
build/fuzz/%: tests/fuzz/%.c tests/fuzz/fuzz.h $(FUZZ_LIB)
	$(FUZZ_CC) $(FUZZ_SAN) -fsanitize=fuzzer,address,undefined -DSQLITE_CORE -Isrc -Iinclude -o $@ $< $(FUZZ_LIB) -lsqlite3 $(LIBS)
.PHONY: FORCE
FORCE:

fuzz: fuzz-build
	@tests/fuzz/run fuzz build/fuzz $(FUZZ_SECONDS) $(FUZZ_ONLY)

# Minimise what fuzzing found into the committed corpora.
fuzz-merge: fuzz-build
	@tests/fuzz/run merge build/fuzz 0 $(FUZZ_ONLY)

# tests/python/test_readme.py runs build/sqlrun, hence the plain build first.
# The groups are named: every group that runs our C (not lint, which runs
# none), the Python ones through an ASan-preloaded interpreter.
SAN_GROUPS ?= unit sql bad fuzz python stress
sanitize: build/san/python3 build/sqlrun
	@$(MAKE) --no-print-directory BUILD=build/san CC=$(SAN_CC) CFLAGS="$(SAN_FLAGS)" HOST_STATIC=1 \
	  SO_FLAGS=-shared-libasan PYTHON=$(CURDIR)/build/san/python3 TEST_GROUPS="$(SAN_GROUPS)" test
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
	@$(MAKE) --no-print-directory BUILD=build/cov CC=gcc CFLAGS="-g -O0 --coverage" MATH_OPT=-ffp-contract=off HOST_STATIC=1 \
	  PYTHON=$(PYTHON) test
	@BUILD=build/cov tests/run oom >/dev/null
	@$(PYTHON) tests/coverage.py build/cov

doccheck: $(EXT)
	@AR_EXTENSION=$(EXT) $(PYTHON) tests/python/check_docs.py

# Concurrency (tests/host/stress.c): 8 threads, one connection each, on one
# WAL file and over a shared cache; make test runs it briefly (tests/run
# stress). `make tsan` builds the library and the host with ThreadSanitizer
# (build/tsan) and runs it for TSAN_SECONDS per variant, the third loading the
# TSan-built .so into every connection at once; any report fails.
.PHONY: tsan
hosts: $(BUILD)/stress
$(BUILD)/stress: tests/host/stress.c include/arrayrecord.h $(LIB)
	$(CC) $(WARN) $(CFLAGS) -pthread -Iinclude -o $@ tests/host/stress.c $(LIB) -lsqlite3 $(LIBS)

TSAN_SECONDS ?= 10
# AR_NO_CLONES: the kernels' ifunc resolvers (src/math/kernels.c) run while
# the loader relocates, before the TSan runtime is set up, and instrumented
# they crash; one portable copy of each kernel is raced just the same.
TSAN_FLAGS   := -g -O1 -fno-omit-frame-pointer -fsanitize=thread -DAR_NO_CLONES
tsan:
	@$(MAKE) --no-print-directory BUILD=build/tsan CC=$(SAN_CC) CFLAGS="$(TSAN_FLAGS)" build/tsan/stress build/tsan/arrayrecord.so
	@STRESS_EXT=build/tsan/arrayrecord TSAN_OPTIONS="halt_on_error=1 exitcode=66 second_deadlock_stack=1 suppressions=$(CURDIR)/tests/host/tsan.supp" \
	  build/tsan/stress $(TSAN_SECONDS)
