# accdma-bw: the throughput tool. Included by the top Makefile.
#   make $(B)/accdma-bw          build it
#   make check                   runs check-accdma-bw: a tiny sweep of every pattern and mode,
#                                data verified; trace.sh's buffer and summary checked
#   make plot [CSV=x.csv] [PNG=x.png]   bandwidth against size, one curve per mode
#                                (without CSV=, runs a permute sweep into $(B)/accdma-bw.csv first)

BW_SRCS := $(wildcard tools/accdma-bw/*.c)
BW_OBJS := $(BW_SRCS:%.c=$(B)/obj/%.o)
BW_HDRS := $(wildcard tools/accdma-bw/*.h)

ALL_TARGETS += $(B)/accdma-bw
CHECK_STEPS += check-accdma-bw

$(BW_OBJS): $(BW_HDRS)

$(B)/accdma-bw: $(BW_OBJS) $(B)/libaccdma.a
	$(CC) -o $@ $(BW_OBJS) $(B)/libaccdma.a $(LDFLAGS) $(LIBS) -lm

# tests/test_bw_plan.c includes the plan builder's sources
$(B)/tests/test_bw_plan: tools/accdma-bw/pattern.c tools/accdma-bw/opts.c $(BW_HDRS)

# The same 8-byte permute with nothing around the calls (what accdma-bw's own loop costs)
ALL_TARGETS += $(B)/bare-loop
$(B)/bare-loop: tools/accdma-bw/probe/bare-loop.c $(B)/libaccdma.a include/accdma.h
	$(CC) $(CFLAGS) -o $@ $< $(B)/libaccdma.a $(LDFLAGS) $(LIBS)

# CPU an open world with nothing posted uses, at 2..1024 devices (BENCHMARKS.md)
ALL_TARGETS += $(B)/idle-cpu
$(B)/idle-cpu: tools/accdma-bw/probe/idle-cpu.c $(B)/libaccdma.a include/accdma.h
	$(CC) $(CFLAGS) -o $@ $< $(B)/libaccdma.a $(LDFLAGS) $(LIBS)

# Smoke sweep: every pattern, chain and fence modes, a few sizes (including one that
# is split into chunks by the engines), then sync mode (the host waits on every fence)
# on every pattern, with the cases a lock-step wait would deadlock on (an odd ring and
# the chained pipeline with sends too big to go eagerly), the last iteration of every
# size verified, plus latency runs and the CSV/JSON writers. No timing is checked:
# only exit status and data.
BW_ENV := timeout --kill-after=10 300 env TSAN_OPTIONS="halt_on_error=1" ASAN_OPTIONS="detect_leaks=1"
BW_SMOKE_ARGS := --no-progress --runs 1 --iters 40 --warmup 4 --window 16 --no-memcpy
BW_SMOKE := $(BW_ENV) $(B)/accdma-bw $(BW_SMOKE_ARGS)
# the same under the shm transport: one process per device, rank 0 prints
BW_SHM := $(BW_ENV) $(B)/accdma-run -n 2 -- $(B)/accdma-bw

.PHONY: check-accdma-bw plot
check-accdma-bw: $(B)/accdma-bw $(B)/accdma-run $(B)/bare-loop
	@set -e; \
	for p in pair bidir permute pipeline chain pingpong; do \
	  echo "== accdma-bw --pattern $$p --devices 4"; \
	  $(BW_SMOKE) --pattern $$p --devices 4 --min-bytes 1 --max-bytes 1M --factor 64 > /dev/null; \
	done; \
	echo "== accdma-bw --pattern alltoall --devices 4"; \
	$(BW_SMOKE) --pattern alltoall --devices 4 --min-bytes 8 --max-bytes 64K --factor 32 > /dev/null; \
	echo "== accdma-bw --pattern permute --devices 3 --post-list 4"; \
	$(BW_SMOKE) --pattern permute --devices 3 --post-list 4 --size 4097 > /dev/null; \
	echo "== accdma-bw with a queue smaller than the window (a full queue waits for the oldest iteration)"; \
	$(BW_SMOKE) --pattern permute --devices 3 --queue-depth 8 --csv --min-bytes 8 --max-bytes 4097 --factor 512 \
	  | grep -c ',1$$' | grep -qx 6; \
	for p in pair bidir permute pipeline chain pingpong; do \
	  echo "== accdma-bw --mode sync --pattern $$p --devices 4"; \
	  $(BW_SMOKE) --mode sync --pattern $$p --devices 4 --min-bytes 1 --max-bytes 64K --factor 64 > /dev/null; \
	done; \
	echo "== accdma-bw --mode sync --pattern alltoall --devices 4"; \
	$(BW_SMOKE) --mode sync --pattern alltoall --devices 4 --size 64 > /dev/null; \
	echo "== accdma-bw --mode sync: odd ring, chained pipeline (polled devices)"; \
	$(BW_SMOKE) --mode sync --pattern permute --devices 3 --size 4097 > /dev/null; \
	$(BW_SMOKE) --mode sync --engines 0 --pattern chain --devices 3 --size 4097 > /dev/null; \
	echo "== accdma-bw --latency"; \
	$(BW_SMOKE) --latency --pattern permute --devices 2 --size 8 > /dev/null; \
	$(BW_SMOKE) --latency --mode sync --pattern permute --devices 2 --size 8 > /dev/null; \
	$(BW_SMOKE) --latency --pattern pingpong --devices 2 --min-bytes 8 --max-bytes 64K --factor 64 > /dev/null; \
	echo "== accdma-run -n 2 -- accdma-bw (shm, one process per device)"; \
	$(BW_SHM) $(BW_SMOKE_ARGS) --pattern permute --min-bytes 8 --max-bytes 1M --factor 64 > /dev/null; \
	$(BW_SHM) $(BW_SMOKE_ARGS) --engines 0 --pattern pair --size 4097 > /dev/null; \
	$(BW_SHM) $(BW_SMOKE_ARGS) --latency --mode chain --pattern pingpong --min-bytes 8 --max-bytes 64K --factor 64 > /dev/null; \
	$(BW_SHM) $(BW_SMOKE_ARGS) --mode sync --pattern permute --min-bytes 8 --max-bytes 4097 --factor 512 > /dev/null; \
	$(BW_SHM) $(BW_SMOKE_ARGS) --mode sync --latency --engines 0 --pattern bidir --size 64 > /dev/null; \
	echo "== accdma-run -n 3 -- accdma-bw: the header names every rank's NUMA node (sent to rank 0)"; \
	$(BW_ENV) $(B)/accdma-run -n 3 -- $(B)/accdma-bw $(BW_SMOKE_ARGS) --pattern permute --size 8 \
	  | grep -Eq '^# NUMA +dev0->node[0-9]+ dev1->node[0-9]+ dev2->node[0-9]+ '; \
	$(BW_ENV) $(B)/accdma-run -n 2 -- $(B)/accdma-bw $(BW_SMOKE_ARGS) --json --pattern pair --size 8 \
	  | grep -Eq '"numa": \[[0-9]+, [0-9]+\]'; \
	echo "== accdma-bw: a failed op stops the run and is named (fault injected at one descriptor fetch)"; \
	for a in --latency "--post-list 1" "--post-list 4"; do \
	  if ACCDMA_FAULT=fetch:30 $(BW_SMOKE) --pattern permute --devices 2 --size 8 $$a > /dev/null 2> $(B)/bw-fault.err; then \
	    echo "accdma-bw $$a: a failed op went unnoticed"; exit 1; fi; \
	  grep -Eq '^accdma-bw: device [0-9]+ iteration [0-9]+: (send|recv) \(peer [0-9]+, 8 bytes\) completed [A-Z_]+$$' \
	    $(B)/bw-fault.err || { cat $(B)/bw-fault.err; exit 1; }; \
	done; \
	echo "== bare-loop (the permute with nothing around the calls): round, chain, fence; 3 ranks; a failed op"; \
	$(BW_ENV) $(B)/accdma-run -n 2 -- $(B)/bare-loop round 300 | grep -q '^bare-loop round .* verified'; \
	$(BW_ENV) $(B)/accdma-run -n 2 -- $(B)/bare-loop chain 300 | grep -q '^bare-loop chain .* verified'; \
	$(BW_ENV) $(B)/accdma-run -n 3 -- $(B)/bare-loop fence 300 | grep -q '^bare-loop fence .* 3 devices, all send first, verified'; \
	$(BW_ENV) $(B)/accdma-run -n 3 -- $(B)/bare-loop fence 300 evenodd | grep -q '^bare-loop fence .* 3 devices, even/odd, verified'; \
	$(BW_ENV) $(B)/accdma-run -n 2 -- $(B)/bare-loop round 300 evenodd | grep -q '^bare-loop round .* even/odd, verified'; \
	if ACCDMA_FAULT=fetch:30 $(BW_ENV) $(B)/accdma-run -n 2 -- $(B)/bare-loop chain 300 > /dev/null 2>&1; then \
	  echo "bare-loop: a failed op went unnoticed"; exit 1; fi; \
	echo "== accdma-bw --csv / --json"; \
	$(BW_SMOKE) --csv --pattern bidir --size 64 | grep -q '^bidir,chain,64,40,.*,1$$'; \
	$(BW_SMOKE) --csv --mode all --pattern permute --size 64 | grep -q '^permute,sync,64,40,2,local,2,1,1,.*,1$$'; \
	$(BW_SMOKE) --json --pattern pair --size 64 | grep -q '"verified": true'; \
	echo "== accdma-bw --latency --csv / --json: p50 <= p99 <= p99.9 <= max, for chain and fence"; \
	$(BW_SMOKE) --csv --latency --pattern permute --size 8 | awk -F, 'NR == 1 { ok = $$17 == "p50_us" && $$18 == "p99_us" && $$20 == "p999_us" && $$21 == "max_us" } \
	  NR > 1 { n++; if (!($$17 > 0 && $$17 <= $$18 && $$18 <= $$20 && $$20 <= $$21 && $$22 == 1)) ok = 0 } END { exit !(ok && n == 2) }'; \
	$(BW_SMOKE) --json --latency --pattern permute --size 8 | grep -Eq '"p999_us": [0-9.]+, "max_us": [0-9.]+, "verified": true'; \
	echo "== trace.sh's parts: the ACCDMA_TRACE buffer compiles, trace-summary.py on known traces"; \
	$(CC) $(CFLAGS) -DACCDMA_TRACE -c -o $(B)/obj/queue/trace-on.o queue/os_user_trace.c; \
	python3 tools/accdma-bw/trace-summary-test.py; \
	echo "== bench-ratio.py on a made-up set: per-round ratios against a base configuration"; \
	python3 tools/accdma-bw/bench-ratio-test.py; \
	echo "== bench-summary.py on a made-up set: chain/fence and 16 MiB verdicts, rounds reaching each target"; \
	python3 tools/accdma-bw/bench-summary-test.py; \
	echo "accdma-bw smoke: OK"

CSV ?= $(B)/accdma-bw.csv
PNG ?= $(basename $(CSV)).png

$(B)/accdma-bw.csv: | $(B)/accdma-bw
	$(B)/accdma-bw --pattern permute --csv --no-progress > $@.tmp && mv $@.tmp $@

plot: $(CSV)
	gnuplot -e "csv='$(CSV)'; png='$(PNG)'" tools/accdma-bw/plot.gp
	@echo "wrote $(PNG)"
