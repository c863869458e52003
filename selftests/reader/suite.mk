# Reader test suites.
#
#   reader-unit    the reader against fixture heaps, ASan + UBSan: one program
#                  per concern (parse, metrics, attrib, pipeline, dir, keep,
#                  export cache, alive, fuzz replay)
#   cli            every blamer subcommand and error, dir backend, golden output
#   cli-top        blamer top on a terminal (a pty), driven with keys
#   cli-completion the bash completion offers what `blamer help` lists
#   json-schema    JSON output checked against Documentation/blamer-json-schema.json
#   prometheus     export --prometheus through prometheus_client's parser
#   fuzz           libFuzzer over fuzz/corpus for FUZZ_SECONDS (default 60)
#   reader-scale   snapshot cost with 2000 dead heaps vs none (times reported)
#   reader-max     the maximal valid heap through every command, under CPU and memory limits
#   reader-interop heaps of the real writer (demo-app) read while busy and after SIGKILL
#   reader-amplify hostile heaps, one per attack class: peak RSS of blamer vs heap bytes
#   reader-trust   the dir trust rules against another user's moves (as root: two uids)
#   vm-reader-<k>  the CLI on /dev/blamer in the VM, permissions, on each
#                  kernel of VM_KERNELS (mk/kernels.mk)
RT_DIR     := $(BUILD)/reader-tests
RT_CFLAGS  := $(CFLAGS_COMMON) $(LIB_INCLUDES) $(TESTSUPPORT_INC) -I$(KSELFTEST_DIR)
RT_HDRS    := $(wildcard $(SRC)/selftests/reader/*.h) $(TESTSUPPORT_HDR) \
	      $(LIB_PRIVATE_HDRS) $(SRC)/include/blamer.h
# Test programs of the asan and fuzz flavors (selftests/selftests.mk):
# they link that flavor's test-support library and library, of which only
# the reader is pulled in. The fuzzer sees the support library only.
RT_TEST_CFLAGS = $(TEST_CFLAGS) $(TEST_FLAGS_$(1)) -I$(SRC)/selftests/reader $(TESTSUPPORT_INC) \
		 -DFUZZ_DIR='"$(SRC)/fuzz"'
FZ_CFLAGS  := $(TEST_CFLAGS) $(TEST_FLAGS_fuzz) $(TESTSUPPORT_INC)
# reader-unit: one program per concern (selftests/reader/<unit>_test.c),
# with what more than one shares in rtest.c.
RT_UNITS   := parse metrics attrib pipeline dir keep export_cache alive fuzz_replay
RT_UNIT_TESTS := $(patsubst %,$(RT_DIR)/%_test,$(RT_UNITS))
FUZZ_SECONDS ?= 60

VM_READER_SUITES := $(addprefix vm-reader-,$(VM_KERNELS))
CHECK_SUITES += reader-unit cli cli-top cli-completion json-schema prometheus fuzz reader-scale \
		reader-max reader-interop reader-amplify reader-trust $(VM_READER_SUITES)
.PHONY: reader-unit cli cli-top cli-completion json-schema prometheus fuzz reader-scale \
	reader-max reader-interop reader-amplify reader-trust $(VM_READER_SUITES) \
	fuzz-corpus reader-tests

reader-tests: $(RT_UNIT_TESTS) $(RT_DIR)/mkheap $(RT_DIR)/fuzz_reader

$(RT_DIR)/rtest.o: $(SRC)/selftests/reader/rtest.c $(RT_HDRS)
	@mkdir -p $(dir $@)
	$(TEST_CC_asan) $(call RT_TEST_CFLAGS,asan) -c -o $@ $<

$(RT_UNIT_TESTS): $(RT_DIR)/%_test: $(SRC)/selftests/reader/%_test.c $(RT_DIR)/rtest.o \
		$(BUILD)/asan/testsupport.a $(BUILD)/asan/libt.a $(RT_HDRS) $(KSELFTEST_HARNESS)
	@mkdir -p $(dir $@)
	$(TEST_CC_asan) $(call RT_TEST_CFLAGS,asan) -o $@ $< $(RT_DIR)/rtest.o \
		$(BUILD)/asan/testsupport.a $(BUILD)/asan/libt.a -lm -lpthread

$(RT_DIR)/mkheap: $(SRC)/selftests/reader/mkheap.c $(BUILD)/static/testsupport.a $(RT_HDRS) $(LIB_A)
	@mkdir -p $(dir $@)
	$(CC) $(RT_CFLAGS) -o $@ $< $(BUILD)/static/testsupport.a $(LIB_A) -lpthread

$(RT_DIR)/mkcorpus: $(SRC)/fuzz/mkcorpus.c $(BUILD)/static/testsupport.a $(RT_HDRS)
	@mkdir -p $(dir $@)
	$(CC) $(RT_CFLAGS) -o $@ $< $(BUILD)/static/testsupport.a

# -O1 keeps the fuzzer fast enough.
$(RT_DIR)/fuzz_reader: $(SRC)/fuzz/fuzz_reader.c $(BUILD)/fuzz/testsupport.a $(BUILD)/fuzz/libt.a \
		$(TESTSUPPORT_HDR)
	@mkdir -p $(dir $@)
	$(TEST_CC_fuzz) $(FZ_CFLAGS) -fsanitize=fuzzer -o $@ $< \
		$(BUILD)/fuzz/testsupport.a $(BUILD)/fuzz/libt.a -lm -lpthread

# Not sanitized: it measures the RSS of the real blamer it runs.
$(RT_DIR)/amplify_test: $(SRC)/selftests/reader/amplify_test.c $(BUILD)/static/testsupport.a \
		$(RT_HDRS) $(KSELFTEST_HARNESS)
	@mkdir -p $(dir $@)
	$(CC) $(RT_CFLAGS) -Wno-unused-parameter -o $@ $< $(BUILD)/static/testsupport.a

reader-amplify: $(RT_DIR)/amplify_test $(TOOLS_DIR)/blamer
	@$(SRC)/scripts/run-suite $@ -- $(RT_DIR)/amplify_test $(TOOLS_DIR)/blamer

fuzz-corpus: $(RT_DIR)/mkcorpus
	$(RT_DIR)/mkcorpus $(SRC)/fuzz/corpus

reader-unit: $(RT_UNIT_TESTS)
	@$(SRC)/scripts/run-suite $@ -- sh -c 'fail=0; for t in "$$@"; do "$$t" || fail=1; done; \
		exit $$fail' sh $(RT_UNIT_TESTS)

cli: $(RT_DIR)/mkheap $(TOOLS_DIR)/blamer
	@$(SRC)/scripts/run-suite $@ -- $(SRC)/selftests/reader/cli-test.sh \
		$(TOOLS_DIR)/blamer $(RT_DIR)/mkheap

cli-top: $(RT_DIR)/mkheap $(TOOLS_DIR)/blamer
	@$(SRC)/scripts/run-suite $@ -- /usr/bin/python3 $(SRC)/selftests/reader/top-pty-test.py \
		$(TOOLS_DIR)/blamer $(RT_DIR)/mkheap

cli-completion: $(RT_DIR)/mkheap $(TOOLS_DIR)/blamer
	@$(SRC)/scripts/run-suite $@ -- $(SRC)/selftests/reader/completion-test.sh \
		$(TOOLS_DIR)/blamer $(RT_DIR)/mkheap

json-schema: $(RT_DIR)/mkheap $(TOOLS_DIR)/blamer
	@$(SRC)/scripts/run-suite $@ -- $(SRC)/selftests/reader/json-test.sh \
		$(TOOLS_DIR)/blamer $(RT_DIR)/mkheap

prometheus: $(RT_DIR)/mkheap $(TOOLS_DIR)/blamer $(PT_DIR)/prom-snap
	@$(SRC)/scripts/run-suite $@ -- $(SRC)/selftests/reader/prom-test.sh \
		$(TOOLS_DIR)/blamer $(RT_DIR)/mkheap $(PT_DIR)/prom-snap

reader-scale: $(RT_DIR)/mkheap $(TOOLS_DIR)/blamer $(RT_DIR)/writer-bench
	@$(SRC)/scripts/run-suite $@ -- $(SRC)/selftests/reader/scale-test.sh \
		$(TOOLS_DIR)/blamer $(RT_DIR)/mkheap 2000 $(RT_DIR)/writer-bench

reader-max: $(RT_DIR)/mkheap $(TOOLS_DIR)/blamer
	@$(SRC)/scripts/run-suite $@ -- $(SRC)/selftests/reader/max-test.sh \
		$(TOOLS_DIR)/blamer $(RT_DIR)/mkheap

reader-interop: $(BUILD)/static/demo-app $(TOOLS_DIR)/blamer
	@$(SRC)/scripts/run-suite $@ -- $(SRC)/selftests/reader/interop-test.sh \
		$(TOOLS_DIR)/blamer $(BUILD)/static/demo-app

# The fuzzer is built in the recipe: as a prerequisite, it made make put
# the suite off until every other had started, and its minute ran alone at
# the end of `make check` (CHECK_FIRST in the Makefile). Nothing else
# builds it or $(BUILD)/fuzz. A build failure is the suite's failure.
fuzz:
	@mkdir -p $(RT_DIR)
	@l=$(BUILD)/fuzz-build.log; \
	if $(MAKE) --no-print-directory $(RT_DIR)/fuzz_reader >$$l 2>&1; then \
		$(SRC)/scripts/run-suite $@ -- $(SRC)/fuzz/run-fuzz.sh $(RT_DIR)/fuzz_reader \
			$(SRC)/fuzz/corpus $(FUZZ_SECONDS) $(RT_DIR)/fuzz-work; \
	else \
		$(SRC)/scripts/run-suite $@ -- sh -c 'sed "s/^/# /" "$$0"; \
			echo "not ok 1 - the fuzzer failed to build"; exit 1' $$l; \
	fi

$(BUILD)/static/namer: $(SRC)/selftests/reader/namer.c $(LIB_A) $(SRC)/include/blamer.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_COMMON) -static -o $@ $< $(LIB_A) -lpthread

$(VM_READER_SUITES): vm-reader-%: $(BUILD)/static/blamer $(BUILD)/static/demo-app \
		$(BUILD)/static/namer $(TOOLS_DIR)/blamer bed-module-%
	@$(SRC)/scripts/run-suite $@ -- $(SRC)/tools/vm/run --kernel $* --timeout 300 --quiet \
		--add $(BUILD)/static/blamer --add $(BUILD)/static/demo-app --add $(BUILD)/static/namer \
		--add-dynamic $(TOOLS_DIR)/blamer:/bin/blamer-kmod \
		--add $(SRC)/selftests/reader/vm-test.sh -- 'sh /bin/vm-test.sh'

$(RT_DIR)/writer-bench: $(SRC)/selftests/reader/writer-bench.c $(LIB_A) $(SRC)/include/blamer.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_COMMON) -o $@ $< $(LIB_A) -lpthread

$(RT_DIR)/trust_test: $(SRC)/selftests/reader/trust_test.c $(BUILD)/asan/testsupport.a \
		$(BUILD)/asan/libt.a $(RT_HDRS) $(KSELFTEST_HARNESS)
	@mkdir -p $(dir $@)
	$(TEST_CC_asan) $(call RT_TEST_CFLAGS,asan) -o $@ $< $(BUILD)/asan/testsupport.a \
		$(BUILD)/asan/libt.a -lm -lpthread

reader-trust: $(RT_DIR)/trust_test $(TOOLS_DIR)/blamer
	@$(SRC)/scripts/run-suite $@ -- $(RT_DIR)/trust_test $(TOOLS_DIR)/blamer
