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
# 8-byte op. Fat objects: libaccdma.a links with or without LTO.
ifeq ($(SAN),)
LTO      ?= -flto=auto -ffat-lto-objects
endif
# Profile-guided optimization of the library and accdma-bw (sanitizer builds
# never; PGO=0 turns it off, after `make clean` in a tree built with it):
# built instrumented, trained by scripts/pgo-train.sh (about 10 s), built
# again with the profile (the rules at the end): 10 % fewer instructions an
# 8-byte op.
ifeq ($(SAN),)
PGO      ?= 1
else
PGO      := 0
endif
# `make check TESTS="test_fence test_eager_ring"` builds and runs just those tests (no other
# check step); unless PGO is given, they build without the profile-guided training.
TESTS ?=
ifneq ($(strip $(TESTS)),)
ifeq ($(origin PGO),file)
PGO := 0
endif
endif
PGO_STAMP := $(if $(filter 1,$(PGO)),$(B)/pgo-profile.stamp)
# Tests link the profiled library with LTO, whose inlining makes GCC guess
# that a token a test got through an out-parameter "may be used
# uninitialized" (GCC cannot see cmocka stop the test): not warned of here;
# the sanitizer builds (no PGO) keep that warning, and an error.
# (Also when a tree built with PGO links its tests without it, TESTS=... above.)
PGO_TEST_FLAGS := $(if $(filter 1,$(PGO))$(wildcard $(B)/pgo-profile.stamp),-Wno-maybe-uninitialized)
CFLAGS   += -std=c11 -D_GNU_SOURCE $(OPT) $(LTO) -Wall -Wextra -Werror -fPIC -pthread $(SANFLAGS) \
            -Iinclude -I.
LDFLAGS  += -pthread $(SANFLAGS) $(LTO)
LIBS     := -lnuma
# The verbs transport needs libibverbs (rdma-core's libibverbs-dev); without it
# ACCDMA_TRANSPORT=verbs is -EPROTONOSUPPORT.
HAVE_VERBS := $(if $(wildcard /usr/include/infiniband/verbs.h),1,)
ifeq ($(HAVE_VERBS),1)
CFLAGS   += -DACCDMA_HAVE_VERBS
LIBS     += -libverbs
endif
TEST_LIBS := -lcmocka

# queue/os_kernel*.c: the OS header's kernel implementation, for the module only (Kbuild)
LIB_SRCS := $(filter-out queue/os_kernel% $(if $(HAVE_VERBS),,driver/verbs/%),\
              $(wildcard driver/*.c driver/*/*.c queue/*.c dma/*.c fw_stub/*.c))
LIB_OBJS := $(LIB_SRCS:%.c=$(B)/obj/%.o)

TEST_SRCS := $(filter-out $(if $(HAVE_VERBS),,tests/test_verbs.c tests/test_verbs_cut.c tests/test_verbs_stage.c tests/test_verbs_sender.c tests/test_verbs_region.c tests/test_verbs_hello.c),$(wildcard tests/test_*.c))
TEST_BINS := $(TEST_SRCS:tests/%.c=$(B)/tests/%)
TEST_HELPERS := $(wildcard tests/helpers/*.c)
EXAMPLE_SRCS := $(wildcard examples/*.c)
EXAMPLE_BINS := $(EXAMPLE_SRCS:examples/%.c=$(B)/examples/%)

CHECK_STEPS := check-unit check-seams
ifeq ($(SAN),)
CHECK_STEPS += check-man check-docs check-install
endif

# Manual pages: section 1 for the tools (written by hand, checked against their --help),
# section 3 generated from include/accdma.h's kernel-doc by man/gen-man3.py (`make man`).
MAN1 := $(wildcard man/man1/*.1)
MAN3 := $(wildcard man/man3/*.3)
TOOLS := queue-tester accdma-bw accdma-run
BINDIR  ?= $(PREFIX)/bin
LIBDIR  ?= $(PREFIX)/lib
INCDIR  ?= $(PREFIX)/include
MANDIR  ?= $(PREFIX)/share/man
ALL_TARGETS := $(B)/libaccdma.a $(B)/libaccdma.so $(EXAMPLE_BINS) $(TEST_BINS) $(B)/tests/bench_copy

.DEFAULT_GOAL := all
-include $(wildcard tools/*/rules.mk) torch/rules.mk tests/vm/rules.mk

.PHONY: all check check-unit check-loop check-seams check-install check-man check-docs install uninstall man clean deps \
        kmod kmod-tests kmod-clean kmod-src bench-copy
all: $(ALL_TARGETS)

# The data mover's large copy by store width, beside memcpy (a measurement: tests/bench_copy.c).
bench-copy: $(B)/tests/bench_copy
	$(B)/tests/bench_copy

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

# The tests check-unit runs: TESTS (names such as test_fence, tests/test_fence.c also
# accepted), else all. CASES='pattern' runs only the cases whose names match (cmocka's
# * and ?; tests/README.md).
TEST_NAMES := $(notdir $(basename $(TESTS)))
$(foreach t,$(TEST_NAMES),$(if $(wildcard tests/$(t).c),,$(error TESTS: no test tests/$(t).c)))
RUN_TESTS := $(if $(TEST_NAMES),$(TEST_NAMES:%=$(B)/tests/%),$(TEST_BINS))
CASES ?=

# Each test binary is run with a per-test wall-clock limit so a hang is a failure, not a stuck CI.
check-unit: $(RUN_TESTS)
	@fail=0; for t in $(RUN_TESTS); do \
	  echo "== $$t"; \
	  if ! timeout --kill-after=10 600 env TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" \
	       ASAN_OPTIONS="detect_leaks=1" $(if $(CASES),ACCDMA_TEST_FILTER='$(CASES)') $$t; then \
	    echo "FAILED: $$t"; fail=1; fi; \
	done; exit $$fail

# The cross-host protocol with no RDMA device: these tests again over the loop transport
# (every device a host of its own, joined by an in-process message link: driver/loop/), then
# queue-tester's suite over it. Left out: white-box tests of the in-memory paths (ring room
# to the position, a handoff to a busy engine, a dropped doorbell), which a link does not have.
LOOP_TESTS := test_any_source test_bad_input test_barrier_permute_helper test_cancel test_close_wait \
              test_eager_basic test_eager_fail test_eager_ring test_eager_stress test_exec_chain \
              test_fail_chain test_fault test_fence test_handoff_fail test_handoff_pair \
              test_handoff_ring test_matching test_many_devices test_mem_free test_permute \
              test_pipeline test_polled test_random test_slots test_timeout test_tokens \
              test_truncation test_write
ifeq ($(TEST_NAMES),)
CHECK_STEPS += check-loop
endif
check-loop: $(LOOP_TESTS:%=$(B)/tests/%) $(B)/queue-tester
	@fail=0; for t in $(LOOP_TESTS); do \
	  echo "== ACCDMA_TRANSPORT=loop $(B)/tests/$$t"; \
	  if ! timeout --kill-after=10 600 env ACCDMA_TRANSPORT=loop ACCDMA_TEST_QUICK=1 \
	       TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" ASAN_OPTIONS="detect_leaks=1" \
	       $(B)/tests/$$t; then echo "FAILED: loop $$t"; fail=1; fi; \
	done; \
	echo "== $(B)/queue-tester -t loop tests/scenarios"; \
	timeout --kill-after=10 600 env TSAN_OPTIONS="halt_on_error=1" ASAN_OPTIONS="detect_leaks=1" \
	  $(B)/queue-tester -t loop tests/scenarios || fail=1; \
	exit $$fail

check-seams:
	@bash tests/check-seams.sh

check-install: $(B)/libaccdma.so $(B)/libaccdma.a $(TOOLS:%=$(B)/%)
	@bash tests/check-install.sh $(B)

man:
	python3 man/gen-man3.py include/accdma.h man/man3

check-man: $(TOOLS:%=$(B)/%)
	@bash man/check-man.sh $(B)

check-docs:
	@bash tests/check-docs.sh

ifneq ($(TEST_NAMES),)
check: check-unit
else
check: all
	@$(MAKE) --no-print-directory $(CHECK_STEPS)
endif

# DESTDIR stages the install (packaging); PREFIX is where the files will live (accdma.pc).
install: $(B)/libaccdma.a $(B)/libaccdma.so $(TOOLS:%=$(B)/%)
	install -d $(DESTDIR)$(INCDIR) $(DESTDIR)$(LIBDIR)/pkgconfig $(DESTDIR)$(BINDIR) \
	  $(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(MANDIR)/man3
	install -m 644 include/accdma.h $(DESTDIR)$(INCDIR)/
	install -m 644 $(B)/libaccdma.a $(DESTDIR)$(LIBDIR)/
	install -m 755 $(B)/libaccdma.so.$(VERSION) $(DESTDIR)$(LIBDIR)/
	ln -sf libaccdma.so.$(VERSION) $(DESTDIR)$(LIBDIR)/libaccdma.so.$(SOVER)
	ln -sf libaccdma.so.$(VERSION) $(DESTDIR)$(LIBDIR)/libaccdma.so
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@VERSION@|$(VERSION)|' -e 's|^libdir=.*|libdir=$(LIBDIR)|' \
	  -e 's|^includedir=.*|includedir=$(INCDIR)|' -e 's|^Libs.private:.*|Libs.private: $(LIBS) -pthread|' \
	  accdma.pc.in \
	  > $(DESTDIR)$(LIBDIR)/pkgconfig/accdma.pc
	install -m 755 $(TOOLS:%=$(B)/%) $(DESTDIR)$(BINDIR)/
	install -m 644 $(MAN1) $(DESTDIR)$(MANDIR)/man1/
	install -m 644 $(MAN3) $(DESTDIR)$(MANDIR)/man3/

# Removes exactly the files install put there (directories stay, as with autotools).
uninstall:
	rm -f $(DESTDIR)$(INCDIR)/accdma.h $(DESTDIR)$(LIBDIR)/libaccdma.a \
	  $(DESTDIR)$(LIBDIR)/libaccdma.so.$(VERSION) $(DESTDIR)$(LIBDIR)/libaccdma.so.$(SOVER) \
	  $(DESTDIR)$(LIBDIR)/libaccdma.so $(DESTDIR)$(LIBDIR)/pkgconfig/accdma.pc \
	  $(TOOLS:%=$(DESTDIR)$(BINDIR)/%) \
	  $(MAN1:man/man1/%=$(DESTDIR)$(MANDIR)/man1/%) $(MAN3:man/man3/%=$(DESTDIR)$(MANDIR)/man3/%)

deps:
	bash scripts/install-deps.sh

# ---- the kernel module (Kbuild) ----------------------------------------------
# `make kmod` builds accdma.ko from the same queue/, dma/ and fw_stub/ as the
# library (Kbuild) against KDIR: by default the kernel of the installed
# linux-headers-amd64 (the host may run another kernel), else the running one.
# It builds in $(B)/kmod/, a tree of symlinks to the sources, so that Kbuild's
# objects stay out of the source tree. Warnings are errors (Kbuild).
# `make kmod-src` copies what dkms builds to $(DESTDIR)/usr/src/accdma-$(VERSION)
# (then: dkms install accdma/$(VERSION); kmod/README.md).
KMOD_SRCS := Kbuild dkms.conf include queue dma fw_stub kmod
KVER ?= $(or $(shell dpkg-query -W -f='$${Depends}' linux-headers-amd64 2>/dev/null | \
          sed -n 's/^linux-headers-\([^ ,]*\).*/\1/p'),$(shell uname -r))
KDIR ?= /lib/modules/$(KVER)/build

kmod:
	@test -d $(KDIR) || { echo "kmod: no kernel build tree at $(KDIR) (KMOD=1 bash scripts/install-deps.sh, or KDIR=...)"; exit 1; }
	@mkdir -p $(B)/kmod
	@cp -rsf $(addprefix $(CURDIR)/,$(KMOD_SRCS)) $(B)/kmod/
	@find $(B)/kmod -xtype l -delete # a source removed since: Kbuild's wildcard must not see it
	$(MAKE) -C $(KDIR) M=$(CURDIR)/$(B)/kmod modules
	@ls -l $(B)/kmod/accdma.ko

# The user-space side of the module's checks, static for the VM's busybox initramfs.
KMOD_TEST_BINS := $(B)/kmod/kmod-ioctl $(B)/kmod/kmod-poll $(B)/kmod/kmod-pair $(B)/queue-tester \
	$(B)/accdma-run
kmod-tests: $(KMOD_TEST_BINS)

$(B)/kmod/kmod-ioctl: tests/vm/kmod-ioctl.c kmod/accdma_ioctl.h
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 -O2 -Wall -Wextra -Werror -I. -static -o $@ $<

$(B)/kmod/kmod-poll: tests/vm/kmod-poll.c kmod/accdma_ioctl.h queue/abi.h
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 -O2 -Wall -Wextra -Werror -I. -static -pthread -o $@ $<

$(B)/kmod/kmod-pair: tests/vm/kmod-pair.c $(B)/libaccdma.a include/accdma.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -o $@ $< $(B)/libaccdma.a $(LDFLAGS) $(LIBS)

kmod-clean:
	rm -rf $(B)/kmod

kmod-src:
	rm -rf $(DESTDIR)/usr/src/accdma-$(VERSION)
	mkdir -p $(DESTDIR)/usr/src/accdma-$(VERSION)
	cp -r $(KMOD_SRCS) $(DESTDIR)/usr/src/accdma-$(VERSION)/
	sed -i 's/^PACKAGE_VERSION=.*/PACKAGE_VERSION="$(VERSION)"/' $(DESTDIR)/usr/src/accdma-$(VERSION)/dkms.conf

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
