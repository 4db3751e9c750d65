# accdma userspace build. `make` builds the libraries, tools, examples and tests;
# `make check` runs every test; SAN=address (ASan+UBSan) or SAN=thread (TSan)
# builds everything into build-$(SAN)/ with the sanitizer.
# Parts drop files in place: tests/test_*.c, tools/<tool>/*.c, examples/*.c are
# picked up by wildcard; tools/<tool>/rules.mk may add targets to CHECK_STEPS.

PREFIX   ?= /usr/local
SAN      ?=
CC       ?= cc
SOVER    := 0
VERSION  := 0.1.0

ifeq ($(SAN),)
B := build
SANFLAGS :=
else ifeq ($(SAN),address)
B := build-address
SANFLAGS := -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer
else ifeq ($(SAN),thread)
B := build-thread
SANFLAGS := -fsanitize=thread
else
$(error SAN must be empty, address or thread)
endif

OPT      ?= -O2 -g
# Link-time optimization: the op path crosses many small files (post, seq,
# slot, token; pull, eager, complete), and inlining across them is ~10% of an
# 8-byte op (BENCHMARKS.md). Fat objects: libaccdma.a links with or without LTO.
ifeq ($(SAN),)
LTO      ?= -flto=auto -ffat-lto-objects
endif
# Profile-guided optimization of the library and accdma-bw (sanitizer builds
# never; PGO=0 turns it off, after `make clean` in a tree built with it):
# built instrumented, trained by scripts/pgo-train.sh (about 10 s), built
# again with the profile (the rules at the end): 10 % fewer instructions an
# 8-byte op (BENCHMARKS.md, section 14).
ifeq ($(SAN),)
PGO      ?= 1
else
PGO      := 0
endif
PGO_STAMP := $(if $(filter 1,$(PGO)),$(B)/pgo-profile.stamp)
# Tests link the profiled library with LTO, whose inlining makes GCC guess
# that a token a test got through an out-parameter "may be used
# uninitialized" (GCC cannot see cmocka stop the test): not warned of here;
# the sanitizer builds (no PGO) keep that warning, and an error.
PGO_TEST_FLAGS := $(if $(filter 1,$(PGO)),-Wno-maybe-uninitialized)
CFLAGS   += -std=c11 -D_GNU_SOURCE $(OPT) $(LTO) -Wall -Wextra -Werror -fPIC -pthread $(SANFLAGS) \
            -Iinclude -I.
LDFLAGS  += -pthread $(SANFLAGS) $(LTO)
LIBS     := -lnuma
TEST_LIBS := -lcmocka

LIB_SRCS := $(wildcard driver/*.c driver/*/*.c queue/*.c dma/*.c fw_stub/*.c)
LIB_OBJS := $(LIB_SRCS:%.c=$(B)/obj/%.o)

TEST_SRCS := $(wildcard tests/test_*.c)
TEST_BINS := $(TEST_SRCS:tests/%.c=$(B)/tests/%)
TEST_HELPERS := $(wildcard tests/helpers/*.c)
EXAMPLE_SRCS := $(wildcard examples/*.c)
EXAMPLE_BINS := $(EXAMPLE_SRCS:examples/%.c=$(B)/examples/%)

CHECK_STEPS := check-unit check-seams
ifeq ($(SAN),)
CHECK_STEPS += check-install
endif
ALL_TARGETS := $(B)/libaccdma.a $(B)/libaccdma.so $(EXAMPLE_BINS) $(TEST_BINS)

.DEFAULT_GOAL := all
-include $(wildcard tools/*/rules.mk) torch/rules.mk

.PHONY: all check check-unit check-seams check-install install clean deps
all: $(ALL_TARGETS)

$(B)/obj/%.o: %.c $(wildcard include/*.h */*.h */*/*.h) $(PGO_STAMP)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -c -o $@ $<

$(B)/libaccdma.a: $(LIB_OBJS)
	@rm -f $@
	ar rcs $@ $^

$(B)/libaccdma.so.$(VERSION): $(LIB_OBJS) libaccdma.map
	$(CC) -shared -Wl,-soname,libaccdma.so.$(SOVER) -Wl,--version-script=libaccdma.map \
	  $(LDFLAGS) -o $@ $(LIB_OBJS) $(LIBS)

$(B)/libaccdma.so: $(B)/libaccdma.so.$(VERSION)
	ln -sf libaccdma.so.$(VERSION) $(B)/libaccdma.so.$(SOVER)
	ln -sf libaccdma.so.$(VERSION) $@

$(B)/tests/%: tests/%.c $(TEST_HELPERS) $(B)/libaccdma.a $(wildcard tests/*.h tests/helpers/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(PGO_TEST_FLAGS) -Itests -o $@ $< $(TEST_HELPERS) $(B)/libaccdma.a $(LDFLAGS) $(LIBS) $(TEST_LIBS)

$(B)/examples/%: examples/%.c $(B)/libaccdma.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -o $@ $< $(B)/libaccdma.a $(LDFLAGS) $(LIBS)

# Each test binary is run with a per-test wall-clock limit so a hang is a failure, not a stuck CI.
check-unit: $(TEST_BINS)
	@fail=0; for t in $(TEST_BINS); do \
	  echo "== $$t"; \
	  if ! timeout --kill-after=10 600 env TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" \
	       ASAN_OPTIONS="detect_leaks=1" $$t; then echo "FAILED: $$t"; fail=1; fi; \
	done; exit $$fail

check-seams:
	@bash tests/check-seams.sh

check-install: $(B)/libaccdma.so $(B)/libaccdma.a
	@bash tests/check-install.sh $(B)

check: all
	@$(MAKE) --no-print-directory $(CHECK_STEPS)

install: $(B)/libaccdma.a $(B)/libaccdma.so
	install -d $(DESTDIR)$(PREFIX)/include $(DESTDIR)$(PREFIX)/lib/pkgconfig
	install -m 644 include/accdma.h $(DESTDIR)$(PREFIX)/include/
	install -m 644 $(B)/libaccdma.a $(DESTDIR)$(PREFIX)/lib/
	install -m 755 $(B)/libaccdma.so.$(VERSION) $(DESTDIR)$(PREFIX)/lib/
	ln -sf libaccdma.so.$(VERSION) $(DESTDIR)$(PREFIX)/lib/libaccdma.so.$(SOVER)
	ln -sf libaccdma.so.$(VERSION) $(DESTDIR)$(PREFIX)/lib/libaccdma.so
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@VERSION@|$(VERSION)|' accdma.pc.in \
	  > $(DESTDIR)$(PREFIX)/lib/pkgconfig/accdma.pc

deps:
	bash scripts/install-deps.sh

clean:
	rm -rf build build-address build-thread

# ---- profile-guided build (PGO=1) ------------------------------------------
# The stamp's recipe builds accdma-bw and accdma-run instrumented, in place
# (PGO=gen: GCC keys a profile to the object's own path, so the trained
# objects must be the ones rebuilt), trains them (scripts/pgo-train.sh), and
# deletes the instrumented binaries, keeping the .gcda beside each object.
# Every object depends on the stamp, so all of them are then built again, the
# library's and accdma-bw's with their profile; a change to any source or
# header trains again.
# A library source the training never ran is compiled as without PGO
# (-Wno-missing-profile); one GCC still objects to is compiled again without
# its profile, under -Werror like every other, rather than failing the build.
ifeq ($(PGO),gen)
CFLAGS   += -fprofile-generate -fprofile-update=atomic
LDFLAGS  += -fprofile-generate
endif
ifeq ($(PGO),1)
PGO_USE_FLAGS := -fprofile-use -fprofile-partial-training -Wno-missing-profile

$(PGO_STAMP): $(LIB_SRCS) $(BW_SRCS) $(BW_HDRS) tools/accdma-run/main.c $(wildcard include/*.h */*.h */*/*.h) \
              scripts/pgo-train.sh Makefile
	@rm -rf $(B)/obj $(B)/libaccdma.a $(B)/accdma-bw $(B)/accdma-run
	@echo "== PGO: an instrumented build, trained by scripts/pgo-train.sh"
	@$(MAKE) --no-print-directory PGO=gen $(B)/accdma-bw $(B)/accdma-run
	bash scripts/pgo-train.sh $(B)/accdma-bw $(B)/accdma-run
	@find $(B)/obj -name '*.o' -delete
	@rm -f $(B)/libaccdma.a $(B)/accdma-bw $(B)/accdma-run
	@touch $@
	@echo "== PGO: the profiled build"

$(B)/accdma-run: $(PGO_STAMP)

$(LIB_OBJS) $(BW_OBJS): $(B)/obj/%.o: %.c $(wildcard include/*.h */*.h */*/*.h) $(PGO_STAMP)
	@mkdir -p $(dir $@)
	@echo "$(CC) $(CFLAGS) $(PGO_USE_FLAGS) -c -o $@ $<"
	@if $(CC) $(CFLAGS) $(PGO_USE_FLAGS) -c -o $@ $< 2> $@.pgo-log; then rm -f $@.pgo-log; else \
	  echo "$<: compiled without its profile (GCC: $$(head -c 160 $@.pgo-log | tr '\n' ' '))"; \
	  $(CC) $(CFLAGS) -c -o $@ $<; fi
endif
