# The pre-fork example (examples/prefork-server.c) driven by its test
# (selftests/prefork/prefork_test.c): a master and 3 workers serving on
# 127.0.0.1 with handles made before the fork, one worker crashed,
# everything checked through the reader and the CLI.
#
#   prefork          on the host, dir backend
#   vm-prefork-<k>   in the VM on /dev/blamer, on each stock kernel
PF_DIR := $(BUILD)/prefork
VM_PREFORK_SUITES := $(addprefix vm-prefork-,$(BED_STOCK))
CHECK_SUITES += prefork $(VM_PREFORK_SUITES)
.PHONY: prefork $(VM_PREFORK_SUITES)

$(PF_DIR)/prefork-server: $(SRC)/examples/prefork-server.c $(LIB_A) $(SRC)/include/blamer.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_COMMON) -o $@ $< $(LIB_A) -lpthread

$(PF_DIR)/prefork_test: $(SRC)/selftests/prefork/prefork_test.c $(LIB_A) $(SRC)/include/blamer.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_COMMON) -o $@ $< $(LIB_A) -lpthread

# static, for the VM's initramfs
$(PF_DIR)/static/prefork-server: $(SRC)/examples/prefork-server.c $(LIB_A) $(SRC)/include/blamer.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_COMMON) -static -o $@ $< $(LIB_A) -lpthread

$(PF_DIR)/static/prefork_test: $(SRC)/selftests/prefork/prefork_test.c $(LIB_A) \
		$(SRC)/include/blamer.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_COMMON) -static -o $@ $< $(LIB_A) -lpthread

prefork: $(PF_DIR)/prefork-server $(PF_DIR)/prefork_test $(TOOLS_DIR)/blamer
	@$(SRC)/scripts/run-suite $@ -- $(SRC)/selftests/prefork/run-host.sh \
		$(PF_DIR)/prefork_test $(PF_DIR)/prefork-server $(TOOLS_DIR)/blamer

$(VM_PREFORK_SUITES): vm-prefork-%: $(PF_DIR)/static/prefork-server $(PF_DIR)/static/prefork_test \
		$(BUILD)/static/blamer bed-module-%
	@$(SRC)/scripts/run-suite $@ -- $(SRC)/tools/vm/run --kernel $* --timeout 400 --quiet \
		--add $(PF_DIR)/static/prefork-server --add $(PF_DIR)/static/prefork_test \
		--add $(BUILD)/static/blamer -- \
		'blamer load /blamer.ko >/dev/null && BLAMER_BACKEND=device prefork_test /bin/prefork-server /bin/blamer'
