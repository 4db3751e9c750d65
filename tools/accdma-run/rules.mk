# accdma-run: the launcher of shm worlds (one process per device). Included by the top Makefile.
#   make $(B)/accdma-run      build it
#   make check                runs check-accdma-run: the seed patterns launched by it, and its
#                             own behaviour (environment, first failure's status, signals)

ALL_TARGETS += $(B)/accdma-run
CHECK_STEPS += check-accdma-run

$(B)/accdma-run: tools/accdma-run/main.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -o $@ $< $(LDFLAGS)

.PHONY: check-accdma-run
check-accdma-run: $(B)/accdma-run $(B)/tests/test_shm_seed
	@timeout --kill-after=10 600 env TSAN_OPTIONS="halt_on_error=1" ASAN_OPTIONS="detect_leaks=1" \
	  sh tools/accdma-run/check.sh $(B)
