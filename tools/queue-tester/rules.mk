# queue-tester: the scenario runner (included by the top Makefile).
# Builds $(B)/queue-tester and the parser unit test, adds a check step that runs
# both (the shipped suite in tests/scenarios), and `make fuzz` / `make fuzz-run`
# for the libFuzzer target of the parser (clang, into build-fuzz/).

QT_DIR := tools/queue-tester
QT_HDRS := $(wildcard $(QT_DIR)/*.h)
# the parts that need no library: lexer, parser, evaluator, expansion
QT_CORE_SRCS := $(QT_DIR)/qt_arena.c $(QT_DIR)/qt_lex.c $(QT_DIR)/qt_expr.c \
                $(QT_DIR)/qt_parse.c $(QT_DIR)/qt_parse_expr.c $(QT_DIR)/qt_parse_stmt.c \
                $(QT_DIR)/qt_plan.c $(QT_DIR)/qt_plan_state.c
QT_SRCS := $(filter-out $(QT_DIR)/qt_fuzz.c,$(wildcard $(QT_DIR)/*.c))
QT_OBJS := $(QT_SRCS:%.c=$(B)/obj/%.o)
QT_CORE_OBJS := $(QT_CORE_SRCS:%.c=$(B)/obj/%.o)
QT_TIMEOUT ?= 1200

$(QT_OBJS): $(QT_HDRS)

$(B)/queue-tester: $(QT_OBJS) $(B)/libaccdma.a
	$(CC) $(LDFLAGS) -o $@ $(QT_OBJS) $(B)/libaccdma.a $(LIBS) -lm

$(B)/tests/qt_parser_test: tests/qt_parser_test.c $(QT_CORE_OBJS) $(QT_HDRS)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -I$(QT_DIR) -o $@ $< $(QT_CORE_OBJS) $(LDFLAGS) $(TEST_LIBS) -lm

ALL_TARGETS += $(B)/queue-tester $(B)/tests/qt_parser_test
CHECK_STEPS += check-queue-tester

.PHONY: check-queue-tester fuzz fuzz-run
check-queue-tester: $(B)/queue-tester $(B)/tests/qt_parser_test
	@echo "== $(B)/tests/qt_parser_test"
	@timeout --kill-after=10 300 $(B)/tests/qt_parser_test
	@echo "== $(B)/queue-tester tests/scenarios"
	@timeout --kill-after=10 $(QT_TIMEOUT) env TSAN_OPTIONS="halt_on_error=1" \
	  ASAN_OPTIONS="detect_leaks=1" $(B)/queue-tester tests/scenarios
	@echo "== sh $(QT_DIR)/check-cli.sh $(B)"
	@timeout --kill-after=10 300 env TSAN_OPTIONS="halt_on_error=1" \
	  ASAN_OPTIONS="detect_leaks=1" sh $(QT_DIR)/check-cli.sh $(B)

# The shipped suite over the shm transport, one process per device (docs/scenarios.md, "Over
# shm"): queue-tester starts N processes of itself for every scenario and device count up to
# QT_SHM_MAX_PROCS (ring64 included: 64 processes), then accdma-run starts worlds of 2, 4 and
# 8 processes, each running the scenarios of its size, as a runtime's launcher would. Each
# rank is its own process under the sanitizers. check-shm.sh checks the failure paths (a wrong
# byte on one rank, a stall across processes, a rank killed mid-scenario).
QT_SHM_MAX_PROCS ?= 64
CHECK_STEPS += check-queue-tester-shm

.PHONY: check-queue-tester-shm
check-queue-tester-shm: $(B)/queue-tester $(B)/accdma-run
	@echo "== $(B)/queue-tester -t shm --max-procs $(QT_SHM_MAX_PROCS) tests/scenarios"
	@timeout --kill-after=10 $(QT_TIMEOUT) env TSAN_OPTIONS="halt_on_error=1" \
	  ASAN_OPTIONS="detect_leaks=1" $(B)/queue-tester -t shm --max-procs $(QT_SHM_MAX_PROCS) \
	  tests/scenarios
	@for n in 2 4 8; do \
	  echo "== $(B)/accdma-run -n $$n $(B)/queue-tester -t shm tests/scenarios"; \
	  timeout --kill-after=20 $(QT_TIMEOUT) env TSAN_OPTIONS="halt_on_error=1" \
	    ASAN_OPTIONS="detect_leaks=1" $(B)/accdma-run -n $$n -- $(B)/queue-tester -t shm \
	    tests/scenarios || exit 1; \
	done
	@echo "== sh $(QT_DIR)/check-shm.sh $(B)"
	@timeout --kill-after=10 600 env TSAN_OPTIONS="halt_on_error=1" \
	  ASAN_OPTIONS="detect_leaks=1" sh $(QT_DIR)/check-shm.sh $(B)

FUZZ_B := build-fuzz
FUZZ_CC ?= clang
FUZZ_TIME ?= 90
FUZZ_FLAGS := -std=c11 -D_GNU_SOURCE -g -O1 -Wall -Wextra -Werror -Iinclude -I$(QT_DIR) \
              -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined

fuzz: $(FUZZ_B)/qt_fuzz

$(FUZZ_B)/qt_fuzz: $(QT_DIR)/qt_fuzz.c $(QT_CORE_SRCS) $(QT_HDRS)
	@mkdir -p $(FUZZ_B)
	$(FUZZ_CC) $(FUZZ_FLAGS) -o $@ $(QT_DIR)/qt_fuzz.c $(QT_CORE_SRCS) -lm

# Runs the fuzzer for a bounded time on a corpus seeded from the shipped scenarios.
fuzz-run: $(FUZZ_B)/qt_fuzz
	@mkdir -p $(FUZZ_B)/corpus $(FUZZ_B)/artifacts
	cp tests/scenarios/*.acc $(FUZZ_B)/corpus/
	$(FUZZ_B)/qt_fuzz -max_total_time=$(FUZZ_TIME) -max_len=4096 -timeout=10 \
	  -rss_limit_mb=2048 -dict=$(QT_DIR)/qt.dict -artifact_prefix=$(FUZZ_B)/artifacts/ \
	  -print_final_stats=1 $(FUZZ_B)/corpus
