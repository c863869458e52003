# bench/: `make bench` builds and runs the writer benchmarks (Documentation/performance.rst).
#
# With lttng-tools installed, the run also starts a private LTTng session
# daemon and measures an *enabled* tracepoint pair (bench/run-bench).

BENCH_DIR  := $(BUILD)/bench
BENCH_BIN  := $(BENCH_DIR)/bench
BENCH_LTTNG := $(shell test -f /usr/include/x86_64-linux-gnu/lttng/tracepoint.h -o \
		 -f /usr/include/lttng/tracepoint.h && echo 1)
BENCH_CFLAGS := $(filter-out -std=c11,$(CFLAGS_COMMON)) -std=gnu11 $(LIB_INCLUDES) \
		-I$(SRC)/bench
BENCH_SRCS := $(SRC)/bench/bench.c
BENCH_LIBS := -lpthread
ifeq ($(BENCH_LTTNG),1)
BENCH_CFLAGS += -DBENCH_LTTNG -Wno-unused-parameter
BENCH_SRCS += $(SRC)/bench/bench_tp.c
BENCH_LIBS += -llttng-ust -ldl
endif

.PHONY: bench bench-build
bench-build: $(BENCH_BIN)

$(BENCH_BIN): $(BENCH_SRCS) $(SRC)/bench/bench_tp.h $(LIB_A)
	@mkdir -p $(dir $@)
	$(CC) $(BENCH_CFLAGS) -o $@ $(BENCH_SRCS) $(LIB_A) $(BENCH_LIBS)

# Two stages: deps installs liblttng-ust-dev and lttng-tools first, and
# BENCH_LTTNG is decided when the makefiles are read, so the build runs in
# a make started after deps.
.PHONY: bench-run
bench: deps
	@$(MAKE) --no-print-directory bench-run

bench-run: $(BENCH_BIN)
	@$(SRC)/bench/run-bench $(BENCH_BIN)
