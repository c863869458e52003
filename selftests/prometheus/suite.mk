# Prometheus suites.
#
#   prometheus-server  the real Prometheus (scraping `blamer export --listen`)
#                      and node_exporter (reading the --interval textfile)
#                      while a worker of a small application is killed,
#                      replaced and released: no counter reset, the last
#                      value kept, `promtool check metrics` clean
#   prometheus-endpoint `blamer export --listen` against the clients a local
#                      user can aim at it (trickling, idle, mute, a flood,
#                      all at once; another uid): scrapes keep succeeding
#   systemd-unit       systemd/blamer-exporter.service.in verifies and is sandboxed
PT_DIR := $(BUILD)/prometheus-tests
CHECK_SUITES += prometheus-server
.PHONY: prometheus-server

$(PT_DIR)/prom-worker: $(SRC)/selftests/prometheus/prom_worker.c $(LIB_A) $(SRC)/include/blamer.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_COMMON) -o $@ $< $(LIB_A) -lpthread

# the exporter on a hostile snapshot made by hand (suite prometheus)
$(PT_DIR)/prom-snap: $(SRC)/selftests/prometheus/prom_snap.c $(LIB_A) $(SRC)/include/blamer.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_COMMON) -o $@ $< $(LIB_A) -lpthread

prometheus-server: $(PT_DIR)/prom-worker $(TOOLS_DIR)/blamer
	@$(SRC)/scripts/run-suite $@ -- $(SRC)/selftests/prometheus/server-test.sh \
		$(TOOLS_DIR)/blamer $(PT_DIR)/prom-worker

CHECK_SUITES += prometheus-endpoint
.PHONY: prometheus-endpoint
# mkheap is the reader suites' ($(RT_DIR), defined after this file)
prometheus-endpoint: $(BUILD)/reader-tests/mkheap $(TOOLS_DIR)/blamer
	@$(SRC)/scripts/run-suite $@ -- /usr/bin/python3 $(SRC)/selftests/prometheus/endpoint-test.py \
		$(TOOLS_DIR)/blamer $(BUILD)/reader-tests/mkheap

CHECK_SUITES += systemd-unit
.PHONY: systemd-unit
systemd-unit: $(TOOLS_DIR)/blamer
	@$(SRC)/scripts/run-suite $@ -- $(SRC)/selftests/prometheus/unit-test.sh \
		$(SRC)/systemd/blamer-exporter.service.in $(TOOLS_DIR)/blamer
