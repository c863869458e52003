# The service's series (issue: fleet series flat and exact under churn).
#
#   fleet              host, dir backend: folds killed at every step of their
#                      transaction and at random (fold-crash-test.sh), the
#                      state as untrusted input, the state parser under ASan
#                      (state_test), the fold against sums that do not fit
#                      (fold_test)
#   fleet-prometheus   the pre-fork example under churn (workers restarted
#                      every N requests, some crashed, some SIGKILLed, the
#                      exporter itself SIGKILLed and restarted) scraped by
#                      the real Prometheus (prom-churn-test.sh)
#   vm-fleet-<k>       the killed folds in the VM on /dev/blamer, on each
#                      stock kernel
FLEET_DIR := $(BUILD)/fleet
VM_FLEET_SUITES := $(addprefix vm-fleet-,$(BED_STOCK))
CHECK_SUITES += fleet fleet-prometheus $(VM_FLEET_SUITES)
.PHONY: fleet fleet-prometheus $(VM_FLEET_SUITES)

$(FLEET_DIR)/fleet-worker: $(SRC)/selftests/fleet/fleet_worker.c $(LIB_A) $(SRC)/include/blamer.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_COMMON) -o $@ $< $(LIB_A) -lpthread

$(FLEET_DIR)/static/fleet-worker: $(SRC)/selftests/fleet/fleet_worker.c $(LIB_A) \
		$(SRC)/include/blamer.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_COMMON) -static -o $@ $< $(LIB_A) -lpthread

# the state parser on hostile files, ASan + UBSan (the library's asan build)
$(FLEET_DIR)/state_test: $(SRC)/selftests/fleet/state_test.c $(BUILD)/asan/libt.a $(KSELFTEST_HARNESS)
	@mkdir -p $(dir $@)
	$(TEST_CC_asan) $(TEST_CFLAGS) $(TEST_FLAGS_asan) -I$(SRC)/lib/export -o $@ $< \
		$(BUILD)/asan/libt.a -lm -lpthread

# the merge, the fold and its state against sums past their type, and
# their numbers under a locale whose decimal point is ',', on fixture
# heaps in a dir (ASan + UBSan)
$(FLEET_DIR)/fold_test: $(SRC)/selftests/fleet/fold_test.c $(BUILD)/asan/libt.a \
		$(BUILD)/asan/testsupport.a $(TESTSUPPORT_HDR) $(SRC)/lib/export/numtext.h $(KSELFTEST_HARNESS)
	@mkdir -p $(dir $@)
	$(TEST_CC_asan) $(TEST_CFLAGS) $(TEST_FLAGS_asan) $(TESTSUPPORT_INC) -I$(SRC)/lib/export \
		-o $@ $< $(BUILD)/asan/testsupport.a $(BUILD)/asan/libt.a -lm -lpthread

fleet: $(FLEET_DIR)/fleet-worker $(FLEET_DIR)/state_test $(FLEET_DIR)/fold_test $(TOOLS_DIR)/blamer
	@$(SRC)/scripts/run-suite $@ -- sh -c '$(FLEET_DIR)/state_test && $(FLEET_DIR)/fold_test && \
		$(SRC)/selftests/fleet/fold-crash-test.sh $(TOOLS_DIR)/blamer $(FLEET_DIR)/fleet-worker'

fleet-prometheus: $(BUILD)/prefork/prefork-server $(TOOLS_DIR)/blamer
	@$(SRC)/scripts/run-suite $@ -- $(SRC)/selftests/fleet/prom-churn-test.sh \
		$(TOOLS_DIR)/blamer $(BUILD)/prefork/prefork-server

$(VM_FLEET_SUITES): vm-fleet-%: $(FLEET_DIR)/static/fleet-worker $(BUILD)/static/blamer bed-module-%
	@$(SRC)/scripts/run-suite $@ -- $(SRC)/tools/vm/run --kernel $* --timeout 600 --quiet \
		--add $(FLEET_DIR)/static/fleet-worker --add $(BUILD)/static/blamer \
		--add $(SRC)/selftests/fleet/fold-crash-test.sh --add $(SRC)/selftests/fleet/check.py -- \
		'blamer load /blamer.ko >/dev/null && BLAMER_BACKEND=device sh /bin/fold-crash-test.sh /bin/blamer /bin/fleet-worker 24'
