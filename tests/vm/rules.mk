# tests/vm/: the VM harness (tests/README.md, "The VM"): Debian's kernel under
# qemu (TCG), soft-RoCE inside. Included by the top Makefile; needs
# `VM=1 bash scripts/install-deps.sh`. Not part of `make check`.
#   make check-verbs      the verbs suite: tests/vm/guest-verbs.sh and the
#                         programs tests/vm/verbs-tests.list names
#   make bench-verbs      perftest and accdma-bw over verbs, nine rounds
#                         interleaved in one boot, and their medians
#   make check-vm-smoke   boot and bring soft-RoCE up, nothing more
#   make bench-kmod       accdma-bw over shm and over kmod in one boot (VMBENCH lines)
#   make check-kmod       the kernel module's suite: tests/vm/guest-kmod.sh with
#                         accdma.ko and its user-space tests (make kmod kmod-tests)
VM_OUT     := $(B)/vm
# The guest's kernel version: a module for the VM builds against
# /lib/modules/$(VM_KVER)/build (linux-headers-amd64). Evaluated when used.
VM_KVER     = $(shell bash tests/vm/kver.sh)
VERBS_LIST := tests/vm/verbs-tests.list
# The listed programs (the first word of each line but a VMTEST_TIMEOUT=):
# built by their own rules.
VERBS_TEST_BINS := $(shell sed -e 's/\#.*//' $(VERBS_LIST) | \
                     awk 'NF { print ($$1 ~ /^VMTEST_TIMEOUT=/) ? $$2 : $$1 }' | sort -u)

.PHONY: check-verbs bench-verbs check-vm-smoke check-kmod bench-kmod
# What the listed programs run: the tools, and queue-tester's scenarios.
VERBS_TOOLS := $(B)/queue-tester $(B)/accdma-run $(B)/accdma-bw
check-verbs: $(VERBS_TEST_BINS) $(VERBS_TOOLS)
	@VM_OUT=$(VM_OUT) EXTRA_BINS="$(VERBS_TEST_BINS) $(VERBS_TOOLS)" \
	  EXTRA_FILES="$(VERBS_LIST) tests/scenarios tests/vm/verbs-bench.sh:/vmtest/verbs-bench.sh" \
	  bash tests/vm/suite.sh verbs tests/vm/guest-verbs.sh

bench-verbs: $(B)/accdma-run $(B)/accdma-bw
	@VM_OUT=$(VM_OUT) VM_TIMEOUT=$${VM_TIMEOUT:-3000} VM_APPEND="$${VM_APPEND-$(VM_BENCH_APPEND)}" \
	  EXTRA_BINS="$(B)/accdma-run $(B)/accdma-bw" \
	  EXTRA_FILES="tests/vm/verbs-bench.sh:/vmtest/verbs-bench.sh" \
	  bash tests/vm/suite.sh verbs-bench tests/vm/guest-verbs-bench.sh
	@bash tests/vm/verbs-bench-summary.sh $(VM_OUT)/verbs-bench-bench.txt

# Benchmarks boot without the debug checks of the test boots (run.sh's default):
# SLUB's allocation tracking takes a stack trace at every allocation, a packet's
# skb among them, and would add its cost to every round of every tool.
VM_BENCH_APPEND := panic_on_warn=1

check-vm-smoke:
	@VM_OUT=$(VM_OUT) bash tests/vm/suite.sh smoke tests/vm/guest-smoke.sh

# The cmocka tests that run with ACCDMA_TRANSPORT=kmod (tests/vm/kmod-tests.list).
KMOD_LIST := tests/vm/kmod-tests.list
KMOD_LIST_BINS := $(shell sed -e 's/\#.*//' $(KMOD_LIST) | \
                    awk 'NF { print ($$1 ~ /^VMTEST_TIMEOUT=/) ? $$2 : $$1 }' | sort -u)

# The module builds against the guest's kernel, whatever the host runs.
check-kmod: $(KMOD_LIST_BINS)
	@$(MAKE) --no-print-directory kmod kmod-tests KVER=$(VM_KVER)
	@VM_OUT=$(VM_OUT) VM_TIMEOUT=$${VM_TIMEOUT:-900} EXTRA_KO="$(B)/kmod/accdma.ko" \
	  EXTRA_BINS="$(KMOD_TEST_BINS) $(KMOD_LIST_BINS)" \
	  EXTRA_FILES="tests/scenarios $(KMOD_LIST)" \
	  bash tests/vm/suite.sh kmod tests/vm/guest-kmod.sh

bench-kmod: $(B)/accdma-bw $(B)/accdma-run $(B)/kmod/kmod-pair $(B)/kmod/kmod-poll
	@$(MAKE) --no-print-directory kmod KVER=$(VM_KVER)
	@VM_OUT=$(VM_OUT) VM_APPEND="$${VM_APPEND-$(VM_BENCH_APPEND)}" EXTRA_KO="$(B)/kmod/accdma.ko" \
	  EXTRA_BINS="$(B)/accdma-bw $(B)/accdma-run $(B)/kmod/kmod-pair $(B)/kmod/kmod-poll" \
	  bash tests/vm/suite.sh kmod-bench tests/vm/guest-kmod-bench.sh
