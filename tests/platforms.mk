# SPDX-License-Identifier: Apache-2.0
# tests/platforms.mk — other SQLites and other systems, included by the Makefile:
#
#   make test-amalgamation SQLITE_AMALGAMATION=dir/sqlite3.c
#                    the C suites (unit, static host, SQL goldens, malformed
#                    inputs, fuzz replays, out-of-memory) with that SQLite
#                    linked into the hosts, in build/amalg-VERSION. Python
#                    tests are left out: Python's sqlite3 module brings its own.
#   make windows     build/windows/arrayrecord.dll, cross-compiled with MinGW-w64
#                    (apt-get install -y gcc-mingw-w64-x86-64 libz-mingw-w64-dev
#                    python3-pip; zstd is built from source, see below)
#   make check-windows-tour SQLITE_SHELL=dir/shell.c   the tour in a Windows sqlite3.exe
#   make check-windows SQLITE_AMALGAMATION=dir/sqlite3.c
#                    the unit tests and SQL goldens on Windows under wine
#                    (apt-get install -y wine64): sqlrun.exe, built against
#                    that amalgamation, loads the DLL

.PHONY: test-amalgamation windows check-windows

ifneq ($(SQLITE_AMALGAMATION),)
AMALG_DIR     := $(patsubst %/,%,$(dir $(SQLITE_AMALGAMATION)))
AMALG_VERSION := $(shell sed -n 's/^\#define SQLITE_VERSION  *"\(.*\)"/\1/p' $(AMALG_DIR)/sqlite3.h 2>/dev/null)
# SQLite's own code: optimised, not warned about (not ours). JSON1 is built in
# from 3.38 on and needs asking for before; math functions as Debian has them.
AMALG_CFLAGS  := -O2 -w -DSQLITE_THREADSAFE=1 -DSQLITE_ENABLE_JSON1 -DSQLITE_ENABLE_MATH_FUNCTIONS
$(BUILD)/sqlite3/sqlite3.o: $(SQLITE_AMALGAMATION)
	@mkdir -p $(@D)
	$(CC) $(AMALG_CFLAGS) -c -o $@ $<
$(BUILD)/sqlrun $(BUILD)/badrun $(BUILD)/oomrun $(BUILD)/statichost $(REPLAYS): $(BUILD)/sqlite3/sqlite3.o
endif

test-amalgamation:
ifeq ($(AMALG_VERSION),)
	@echo "make test-amalgamation: SQLITE_AMALGAMATION=dir/sqlite3.c (with dir/sqlite3.h) is needed;" \
	  "one comes with the npm package better-sqlite3 (npm pack better-sqlite3, deps/sqlite3/)" >&2; exit 2
else
	@$(MAKE) --no-print-directory BUILD=build/amalg-$(AMALG_VERSION) HOST_STATIC=1 \
	  SQLITE_AMALGAMATION=$(SQLITE_AMALGAMATION) build/amalg-$(AMALG_VERSION)/unit \
	  build/amalg-$(AMALG_VERSION)/sqlrun hosts
	@BUILD=build/amalg-$(AMALG_VERSION) tests/run unit sql bad fuzz oom
endif

# Windows: the same sources, cross-compiled; zlib and zstd linked in
# statically so the DLL needs nothing beside it. MinGW's own printf (not
# msvcrt's) formats numbers as C99 says, as the golden outputs expect. The
# SQLite headers (header-only for an extension) are copied from the
# system's, as putting /usr/include on the path would bring glibc's headers
# with them.
WIN_CC     ?= x86_64-w64-mingw32-gcc
WIN_AR     ?= x86_64-w64-mingw32-ar
WIN_BUILD  := build/windows
WIN_SQLITE ?= /usr/include
WIN_ZSTD   := $(WIN_BUILD)/zstd
WIN_FLAGS  := -g -O2 -Werror -D__USE_MINGW_ANSI_STDIO=1 -I$(WIN_BUILD)/include -I$(WIN_ZSTD)/src
WIN_LIBS   := -l:libz.a $(WIN_ZSTD)/libzstd.a
windows: $(WIN_BUILD)/include/sqlite3ext.h $(WIN_ZSTD)/libzstd.a
	@$(MAKE) --no-print-directory BUILD=$(WIN_BUILD) CC=$(WIN_CC) CFLAGS="$(WIN_FLAGS)" SO_SUFFIX=.dll \
	  SHARED="-shared -static-libgcc" LIBS="$(WIN_LIBS)" $(WIN_BUILD)/arrayrecord.dll
$(WIN_BUILD)/include/sqlite3ext.h: $(WIN_SQLITE)/sqlite3ext.h $(WIN_SQLITE)/sqlite3.h
	@mkdir -p $(@D)
	cp $^ $(@D)/

# zstd for MinGW: Debian packages no MinGW build of libzstd, so the DLL links
# zstd's own single-file library (zstd.c with zstd.h, BSD-licensed), compiled
# here from the copy that the PyPI sdist of python-zstandard carries (its
# zstd/ folder; zstandard 0.23.0 holds zstd 1.5.6), fetched at build time by
# pip with the version and the sdist's SHA-256 pinned, and unpacked under
# build/: no zstd source is ever committed. zstd's own code is compiled
# without our warnings (not ours), as SQLite's amalgamation is.
WIN_ZSTD_SDIST   := zstandard==0.23.0
WIN_ZSTD_SHA256  := b2d8c62d08e7255f68f7a740bae85b3c9b8e5466baa9cbf7f57f1cde0ac6bc09
$(WIN_ZSTD)/libzstd.a:
	@command -v $(WIN_CC) >/dev/null || { echo "make windows: $(WIN_CC) not found: apt-get install -y gcc-mingw-w64-x86-64 libz-mingw-w64-dev" >&2; exit 2; }
	@$(PYTHON) -m pip --version >/dev/null 2>&1 || { echo "make windows: pip is needed to fetch zstd's sources: apt-get install -y python3-pip" >&2; exit 2; }
	@rm -rf $(WIN_ZSTD) && mkdir -p $(WIN_ZSTD)/src
	@echo "$(WIN_ZSTD_SDIST) --hash=sha256:$(WIN_ZSTD_SHA256)" >$(WIN_ZSTD)/requirements.txt
	$(PYTHON) -m pip download -q --disable-pip-version-check --no-binary :all: --no-deps --require-hashes \
	  -r $(WIN_ZSTD)/requirements.txt -d $(WIN_ZSTD)
	tar xzf $(WIN_ZSTD)/zstandard-*.tar.gz -C $(WIN_ZSTD)/src --strip-components=2 --wildcards 'zstandard-*/zstd/*'
	$(WIN_CC) -O2 -w -c -o $(WIN_ZSTD)/zstd.o $(WIN_ZSTD)/src/zstd.c
	$(WIN_AR) rcs $@ $(WIN_ZSTD)/zstd.o

# check-windows: the test hosts cross-built against the amalgamation (there
# is no Windows SQLite to link otherwise) and run under wine with the DLL that
# make windows built: unit tests, the static host, SQL goldens, malformed
# inputs and fuzz replays. The wrapper takes off the one '\r' Windows' text
# mode adds before each '\n' (a '\r' the output itself holds stays), and
# finds NAME.exe for NAME. Not part of make test (wine starts slowly).
WINE ?= wine
check-windows: windows
ifeq ($(AMALG_VERSION),)
	@echo "make check-windows: SQLITE_AMALGAMATION=dir/sqlite3.c is needed (npm pack better-sqlite3, deps/sqlite3/)" >&2; exit 2
else
	@command -v $(WINE) >/dev/null || { echo "make check-windows: $(WINE) not found: apt-get install -y wine64" >&2; exit 2; }
	@$(MAKE) --no-print-directory BUILD=$(WIN_BUILD) CC=$(WIN_CC) CFLAGS="$(WIN_FLAGS:-I$(WIN_BUILD)/include=)" \
	  SO_SUFFIX=.dll SQLITE_AMALGAMATION=$(SQLITE_AMALGAMATION) SQLITE_LIB=$(WIN_BUILD)/sqlite3/sqlite3.o \
	  LIBS="$(WIN_LIBS)" HOST_STATIC= $(WIN_BUILD)/unit $(WIN_BUILD)/sqlrun $(WIN_BUILD)/badrun \
	  $(WIN_BUILD)/statichost $(REPLAYS:$(BUILD)/%=$(WIN_BUILD)/%)
	@printf '#!/bin/bash\nset -o pipefail\nexe=$$1; shift; [ -e "$$exe" ] || exe=$$exe.exe\nWINEPREFIX=%s WINEDEBUG=-all %s "$$exe" "$$@" 2>&1 | sed "s/\\r\$$//"\n' \
	  "$(CURDIR)/$(WIN_BUILD)/wineprefix" "$(WINE)" >$(WIN_BUILD)/wine && chmod +x $(WIN_BUILD)/wine
	@test -d $(WIN_BUILD)/wineprefix || WINEPREFIX=$(CURDIR)/$(WIN_BUILD)/wineprefix WINEDEBUG=-all wineboot -i >/dev/null 2>&1 || true
	@W=$(WIN_BUILD)/wine; BUILD=$(WIN_BUILD) UNIT="$$W $(WIN_BUILD)/unit.exe" STATICHOST="$$W $(WIN_BUILD)/statichost.exe" \
	  SQLRUN="$$W $(WIN_BUILD)/sqlrun.exe" BADRUN="$$W $(WIN_BUILD)/badrun.exe" REPLAY=$$W tests/run unit sql bad fuzz
endif

# check-windows-tour: the README tour in a Windows sqlite3.exe under wine.
# better-sqlite3's amalgamation has no shell.c; SQLite's autoconf tarball
# does, and the npm package sqlite3 ships one (deps/sqlite-autoconf-*.tar.gz):
#   make check-windows-tour SQLITE_SHELL=dir/shell.c   (dir/sqlite3.c beside it)
# The tour's output in list mode is compared with the Linux sqlite3 shell's:
# the same rows, except that SQLite 3.47+ prints REALs with 17 significant
# digits where 3.40 printed 15 (the same double); the exported .npy must be
# byte-identical.
.PHONY: check-windows-tour
check-windows-tour: windows
	@test -n "$(SQLITE_SHELL)" || { echo "make check-windows-tour: SQLITE_SHELL=dir/shell.c is needed" >&2; exit 2; }
	$(WIN_CC) -O1 -w -municode -DSQLITE_THREADSAFE=1 -DSQLITE_ENABLE_MATH_FUNCTIONS -o $(WIN_BUILD)/sqlite3.exe \
	  $(SQLITE_SHELL) $(dir $(SQLITE_SHELL))sqlite3.c
	@sed -e 's#^\.load \./build/arrayrecord#.load $(WIN_BUILD)/arrayrecord#' -e 's#build/tour-#$(WIN_BUILD)/tour-#g' \
	  -e 's/^\.mode .*/.mode list/' examples/tour.sql >$(WIN_BUILD)/tour.sql
	@sed -e 's/^\.mode .*/.mode list/' examples/tour.sql >$(BUILD)/tour-list.sql
	@WINEPREFIX=$(CURDIR)/$(WIN_BUILD)/wineprefix WINEDEBUG=-all $(WINE) $(WIN_BUILD)/sqlite3.exe :memory: \
	  <$(WIN_BUILD)/tour.sql 2>&1 | sed 's/\r$$//' >$(WIN_BUILD)/tour.out
	@$(SQLITE3) :memory: <$(BUILD)/tour-list.sql >$(BUILD)/tour-list.out 2>&1
	@for f in $(WIN_BUILD)/tour $(BUILD)/tour-list; do $(PYTHON) -c 'import re, sys; \
	  print(re.sub(r"-?\d+\.\d{15,}(e[-+]?\d+)?", lambda m: "%.15g" % float(m.group()), sys.stdin.read()), end="")' \
	  <$$f.out >$$f.cmp; done
	@diff $(BUILD)/tour-list.cmp $(WIN_BUILD)/tour.cmp && cmp $(WIN_BUILD)/tour-fc.weight.npy build/tour-fc.weight.npy && \
	  echo "ok windows/tour: $$(wc -l <$(WIN_BUILD)/tour.out) lines as on Linux; the exported .npy is byte-identical"
