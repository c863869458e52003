# selftests/: kselftest-harness tests of the module and the library.
#
# Every area owns selftests/<area>/suite.mk, included here in name order;
# each appends its suites to CHECK_SUITES (see the top-level Makefile).
#
# The kselftest harness (GPL-2.0-only, so it stays in build/, never in the
# tree) comes from Debian's linux-source-6.1 tarball:
#   make kselftest-harness  ->  $(BUILD)/kselftest/kselftest_harness.h
#                               $(BUILD)/kselftest/kselftest.h
# Test programs depend on $(KSELFTEST_HARNESS) and add -I$(KSELFTEST_DIR).

KSELFTEST_DIR     := $(BUILD)/kselftest
KSELFTEST_HARNESS := $(KSELFTEST_DIR)/kselftest_harness.h
KSELFTEST_TARBALL := /usr/src/linux-source-6.1.tar.xz
KSELFTEST_MEMBERS := linux-source-6.1/tools/testing/selftests/kselftest_harness.h \
		     linux-source-6.1/tools/testing/selftests/kselftest.h

.PHONY: kselftest-harness
kselftest-harness: $(KSELFTEST_HARNESS)

# Extract into a private directory and rename, so parallel builds never
# see a half-written header; kselftest.h lands first, the harness (the
# file everything depends on) last. The deps stamp installs the tarball.
$(KSELFTEST_HARNESS): | $(DEPS_STAMP)
	@test -f $(KSELFTEST_TARBALL) || \
		{ echo "kselftest: $(KSELFTEST_TARBALL) missing (run: make deps)" >&2; exit 1; }
	@mkdir -p $(KSELFTEST_DIR)
	@t=$$(mktemp -d $(KSELFTEST_DIR)/.x.XXXXXX) && \
	tar -xJf $(KSELFTEST_TARBALL) -C $$t --strip-components=4 \
		--occurrence=1 --touch $(KSELFTEST_MEMBERS) && \
	mv -f $$t/kselftest.h $(KSELFTEST_DIR)/kselftest.h && \
	mv -f $$t/kselftest_harness.h $@ && rm -rf $$t || { rm -rf $$t; exit 1; }
	@echo "  KSELFTEST $(KSELFTEST_DIR)"

# $(KSELFTEST_DIR)/kselftest.h comes with the harness.
$(KSELFTEST_DIR)/kselftest.h: $(KSELFTEST_HARNESS)

-include $(sort $(wildcard $(SRC)/selftests/*/suite.mk))
