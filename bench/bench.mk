# bench/: `make bench` builds and runs the writer benchmarks, then the reader's
# (`make bench-reader` alone) and the Python binding's (`make bench-python`
# alone; Documentation/performance.rst).
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

.PHONY: bench bench-build bench-reader bench-max-heap bench-open
READER_BENCH := $(BENCH_DIR)/reader_bench
bench-build: $(BENCH_BIN) $(READER_BENCH)

$(BENCH_BIN): $(BENCH_SRCS) $(SRC)/bench/bench_tp.h $(LIB_A)
	@mkdir -p $(dir $@)
	$(CC) $(BENCH_CFLAGS) -o $@ $(BENCH_SRCS) $(LIB_A) $(BENCH_LIBS)

# Two stages: deps installs liblttng-ust-dev and lttng-tools first, and
# BENCH_LTTNG is decided when the makefiles are read, so the build runs in
# a make started after deps.
.PHONY: bench-run
bench: deps
	@$(MAKE) --no-print-directory bench-run

bench-run: $(BENCH_BIN) bench-reader bench-max-heap bench-open bench-python bench-model
	@$(SRC)/bench/run-bench $(BENCH_BIN)

# The metric writes against blamer_path_add() on CPU models (llvm-mca's
# AMD Zen 2 and 3, Intel Skylake and Ice Lake server): the instructions a
# call runs, traced under gdb (bench/hot-model; performance.rst).
.PHONY: bench-model
bench-model: $(BENCH_BIN)
	@$(SRC)/bench/hot-model $(BENCH_BIN)

# The Python binding against prometheus_client's multiprocess mode
# (bench/python_bench.py): writes, and collecting 1,000 and 10,000 dead
# workers (PYTHON_BENCH_MAX lowers the top), with Debian's python3.
PYTHON_BENCH_MAX ?= 10000
.PHONY: bench-python
bench-python: python
	@env -u BLAMER_BACKEND -u BLAMER_DIR PYTHONPATH=$(PY_BUILD) $(PY) \
		$(SRC)/bench/python_bench.py $(PYTHON_BENCH_MAX)

$(READER_BENCH): $(SRC)/bench/reader_bench.c $(SRC)/bench/stats.h $(LIB_A)
	@mkdir -p $(dir $@)
	$(CC) $(BENCH_CFLAGS) -o $@ $< $(LIB_A) -lpthread

# N = 10 ... 10,000 dead heaps (READER_BENCH_MAX lowers the top);
# prometheus_client's collector side by side.
READER_BENCH_MAX ?= 10000
bench-reader: $(READER_BENCH) $(TOOLS_DIR)/blamer
	@$(READER_BENCH) $(TOOLS_DIR)/blamer /usr/bin/python3 $(SRC)/bench/prom_mp.py $(READER_BENCH_MAX)

# CPU time per heap byte on the maximal heap (the reader-max suite's) at
# three sizes: the same ns/byte at each, or the reader is not linear.
bench-max-heap: $(RT_DIR)/mkheap $(TOOLS_DIR)/blamer
	@$(SRC)/bench/max-heap-bench $(TOOLS_DIR)/blamer $(RT_DIR)/mkheap

# A writer's blamer_open() + blamer_close() next to 100 and 10,000 dead
# heaps: the same, or retention costs what the dead pile up to.
OPEN_BENCH := $(BENCH_DIR)/open_bench
$(OPEN_BENCH): $(SRC)/bench/open_bench.c $(SRC)/bench/stats.h $(LIB_A)
	@mkdir -p $(dir $@)
	$(CC) $(BENCH_CFLAGS) -o $@ $< $(LIB_A) -lpthread
bench-open: $(OPEN_BENCH)
	@$(OPEN_BENCH)

# The module's costs and the reader on /dev/blamer, in the VM on each
# kernel of BENCH_KERNELS, one boot each (bench/vm-bench.sh): static
# programs, the VM given 2 GiB so that 100,000 slabs fit.
BENCH_KERNELS ?= 6.1 6.12
# slabs listed at most, heaps read on the device
BENCH_MODULE_ARGS ?= 100000 200
BENCH_STATIC := $(BENCH_DIR)/static
MODULE_BENCH := $(BENCH_STATIC)/module_bench
DEV_READER_BENCH := $(BENCH_STATIC)/dev_reader_bench
.PHONY: bench-module
$(MODULE_BENCH): $(SRC)/bench/module_bench.c $(SRC)/bench/stats.h $(SRC)/include/uapi/linux/blamer.h \
		 $(SRC)/include/blamer.h
	@mkdir -p $(dir $@)
	$(CC) $(filter-out -std=c11,$(CFLAGS_COMMON)) -std=gnu11 -I$(SRC)/include/uapi -static \
		-o $@ $<
$(DEV_READER_BENCH): $(SRC)/bench/dev_reader_bench.c $(SRC)/bench/heap_gen.h $(SRC)/bench/stats.h $(LIB_A)
	@mkdir -p $(dir $@)
	$(CC) $(BENCH_CFLAGS) -static -o $@ $< $(LIB_A) -lpthread
bench-module: $(MODULE_BENCH) $(DEV_READER_BENCH) $(addprefix bed-module-,$(BENCH_KERNELS))
	@$(MODULE_BENCH) --machine
	@for k in $(BENCH_KERNELS); do \
		BLAMER_VM_MEM=2G $(SRC)/tools/vm/run --kernel $$k --timeout 1500 --quiet \
			--add $(MODULE_BENCH) --add $(DEV_READER_BENCH) \
			--add $(SRC)/bench/vm-bench.sh -- "sh /bin/vm-bench.sh $(BENCH_MODULE_ARGS)" || exit; \
	done

# Before/after figures of a change for a pre-fork server (push+pop,
# path_add, value_add, fork with and without a context): the same
# source built against the library of PREFORK_BASE (a commit, built in a
# scratch copy) and against this tree, run alternately
# (bench/prefork-compare).
PREFORK_BASE ?= b5671a1
PREFORK_BENCH := $(BENCH_DIR)/prefork_bench
PREFORK_BASE_DIR := $(BENCH_DIR)/base-$(PREFORK_BASE)
.PHONY: bench-prefork
$(PREFORK_BENCH): $(SRC)/bench/prefork_bench.c $(LIB_A) $(SRC)/include/blamer.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_COMMON) -o $@ $< $(LIB_A) -lpthread

$(PREFORK_BASE_DIR)/prefork_bench: $(SRC)/bench/prefork_bench.c
	@rm -rf $(PREFORK_BASE_DIR)/src && mkdir -p $(PREFORK_BASE_DIR)/src
	git -C $(SRC) archive $(PREFORK_BASE) | tar -x -C $(PREFORK_BASE_DIR)/src
	$(MAKE) -C $(PREFORK_BASE_DIR)/src BUILD=$(PREFORK_BASE_DIR)/build lib
	$(CC) $(CFLAGS_COMMON:-I$(SRC)/include=) -I$(PREFORK_BASE_DIR)/src/include -o $@ $< \
		$(PREFORK_BASE_DIR)/build/lib/libblamer.a -lpthread

bench-prefork: $(PREFORK_BENCH) $(PREFORK_BASE_DIR)/prefork_bench
	@$(SRC)/bench/prefork-compare $(PREFORK_BASE_DIR)/prefork_bench $(PREFORK_BENCH) 5

# The service's series (Documentation/performance.rst, "Fleet series"):
# FLEET_BENCH_N worker lifetimes under a folding exporter (RSS and scrape
# time at 1,000 ... N), and a scrape of FLEET_BENCH_LIVE live workers'
# merged metrics against prometheus_client's MultiProcessCollector.
FLEET_BENCH := $(BENCH_DIR)/fleet_bench
FLEET_BENCH_N ?= 100000
FLEET_BENCH_LIVE ?= 1000
.PHONY: bench-fleet
$(FLEET_BENCH): $(SRC)/bench/fleet_bench.c $(LIB_A) $(SRC)/include/blamer.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_COMMON) -o $@ $< $(LIB_A) -lpthread
bench-fleet: $(FLEET_BENCH) $(TOOLS_DIR)/blamer
	@$(FLEET_BENCH) churn $(TOOLS_DIR)/blamer $(FLEET_BENCH_N)
	@$(FLEET_BENCH) live $(TOOLS_DIR)/blamer /usr/bin/python3 $(SRC)/bench/prom_mp_metrics.py \
		$(FLEET_BENCH_LIVE)
bench-run: bench-fleet

# The same scrape of FLEET_BENCH_LIVE live workers on /dev/blamer, where
# the exporter maps the slabs once and keeps them, and on the dir backend,
# in the VM on each kernel of BENCH_KERNELS (one boot each,
# bench/vm-fleet-bench.sh: FLEET_DEVICE_RUNS runs of both): static
# programs, and Debian's python3 with the part of its library
# prometheus_client's collector uses (bench/vm-python-tree.py). The host's
# load is printed before and after each boot.
FLEET_DEVICE_RUNS ?= 3
FLEET_BENCH_STATIC := $(BENCH_STATIC)/fleet_bench
FLEET_PY_TREE := $(BENCH_DIR)/vm-python
# the interpreter itself, not its symlink (the guest copies a link as a link)
FLEET_PYTHON := $(realpath /usr/bin/python3)
.PHONY: bench-fleet-device
$(FLEET_BENCH_STATIC): $(SRC)/bench/fleet_bench.c $(LIB_A) $(SRC)/include/blamer.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_COMMON) -static -o $@ $< $(LIB_A) -lpthread
$(FLEET_PY_TREE)/so.list: $(SRC)/bench/vm-python-tree.py $(SRC)/bench/prom_mp_metrics.py
	@rm -rf $(FLEET_PY_TREE) && mkdir -p $(FLEET_PY_TREE)
	/usr/bin/python3 $< $(SRC)/bench/prom_mp_metrics.py $(FLEET_PY_TREE)/root >$@.tmp
	@mv $@.tmp $@
bench-fleet-device: $(FLEET_BENCH_STATIC) $(BUILD)/static/blamer $(FLEET_PY_TREE)/so.list \
		    $(addprefix bed-module-,$(BENCH_KERNELS))
	@for k in $(BENCH_KERNELS); do \
		echo "# host: $$(uptime)"; \
		BLAMER_VM_MEM=2G $(SRC)/tools/vm/run --kernel $$k --timeout 3000 --quiet \
			--add $(FLEET_BENCH_STATIC) --add $(BUILD)/static/blamer \
			--add $(SRC)/bench/prom_mp_metrics.py --add $(SRC)/bench/vm-fleet-bench.sh \
			--add-dynamic $(FLEET_PYTHON) \
			$$(for d in $(FLEET_PY_TREE)/root/usr/lib/*; do \
				echo "--add $$d:$${d#$(FLEET_PY_TREE)/root}"; done) \
			$$(sed 's/.*/--add-dynamic &:&/' $(FLEET_PY_TREE)/so.list) \
			-- "sh /bin/vm-fleet-bench.sh $(FLEET_BENCH_LIVE) $(FLEET_DEVICE_RUNS) $(FLEET_PYTHON)" || exit; \
		echo "# host: $$(uptime)"; \
	done
