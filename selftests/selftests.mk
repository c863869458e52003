# selftests/: kselftest-harness tests of the module and the library.
#
# Every area has its selftests/<area>/suite.mk, included here in name order;
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

# Copied into a private directory (scripts/linux-source-files: through
# the kernel cache, so a fresh clone does not decompress the tarball
# again) and renamed, so parallel builds never see a half-written
# header; kselftest.h lands first, the harness (the file everything
# depends on) last. The deps stamp installs the tarball.
$(KSELFTEST_HARNESS): | $(DEPS_STAMP)
	@mkdir -p $(KSELFTEST_DIR)
	@t=$$(mktemp -d $(KSELFTEST_DIR)/.x.XXXXXX) && \
	$(SRC)/scripts/linux-source-files $(KSELFTEST_TARBALL) $$t $(KSELFTEST_MEMBERS) && \
	mv -f $$t/kselftest.h $(KSELFTEST_DIR)/kselftest.h && \
	mv -f $$t/kselftest_harness.h $@ && rm -rf $$t || { rm -rf $$t; exit 1; }
	@echo "  KSELFTEST $(KSELFTEST_DIR)"

# $(KSELFTEST_DIR)/kselftest.h comes with the harness.
$(KSELFTEST_DIR)/kselftest.h: $(KSELFTEST_HARNESS)

# ---- the library, built once per test flavor ----
# Tests link the library's sources built with their own compiler and
# flags, so the sanitizers see every access: once per flavor, into
# $(BUILD)/<flavor>/libt.a, for every test program of that flavor.
#   asan    clang, ASan + UBSan: lib-asan, reader-unit
#   tsan    clang, TSan: lib-tsan
#   static  $(CC) -O2, linked -static: the tests in the VM
#   fuzz    clang, libFuzzer's coverage + ASan + UBSan: fuzz
# One set of sanitizer flags, here, for every suite.
SAN_ASAN := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
SAN_TSAN := -fsanitize=thread
TEST_CLANG ?= clang
# The harness is not -Wextra clean; it builds with -Wall in the kernel.
TEST_CFLAGS := -std=gnu11 -D_GNU_SOURCE -Wall -Wextra -Werror -g -I$(SRC)/include \
	       $(LIB_INCLUDES) -I$(KSELFTEST_DIR) -Wno-unused-parameter -Wno-sign-compare \
	       -Wno-missing-field-initializers -Wno-empty-body -Wno-misleading-indentation
TEST_CC_asan    := $(TEST_CLANG)
TEST_FLAGS_asan := $(SAN_ASAN) -O1
TEST_CC_tsan    := $(TEST_CLANG)
TEST_FLAGS_tsan := $(SAN_TSAN) -O1
TEST_CC_static  := $(CC)
TEST_FLAGS_static := -O2 -Wno-format-truncation
TEST_CC_fuzz    := $(TEST_CLANG)
TEST_FLAGS_fuzz := -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=all -O1
TEST_FLAVORS := asan tsan static fuzz

# $(call test_flavor,NAME): the rules of flavor NAME's library.
define test_flavor
LIBT_OBJS_$(1) := $$(patsubst $$(SRC)/lib/%.c,$$(BUILD)/$(1)/libt/%.o,$$(LIB_SRCS))
$$(BUILD)/$(1)/libt/%.o: $$(SRC)/lib/%.c
	@mkdir -p $$(@D)
	$$(TEST_CC_$(1)) $$(TEST_CFLAGS) $$(TEST_FLAGS_$(1)) -MMD -MP -c -o $$@ $$<
-include $$(LIBT_OBJS_$(1):.o=.d)
$$(BUILD)/$(1)/libt.a: $$(LIBT_OBJS_$(1))
	rm -f $$@ && ar rcs $$@ $$^
endef
$(foreach f,$(TEST_FLAVORS),$(eval $(call test_flavor,$(f))))

# ---- the test-support library, built once per test flavor ----
# testsupport/: hand-made heaps and the fuzz judge, for the reader's
# tests, mkheap, the fuzz corpus and the fuzzer, each of which includes
# testsupport.h from there (no test directory includes another's
# headers): $(BUILD)/<flavor>/testsupport.a.
TESTSUPPORT_SRCS := $(SRC)/testsupport/heap.c $(SRC)/testsupport/judge.c
TESTSUPPORT_HDR  := $(SRC)/testsupport/testsupport.h
TESTSUPPORT_INC  := -I$(SRC)/testsupport
define testsupport_flavor
TESTSUPPORT_OBJS_$(1) := $$(patsubst $$(SRC)/testsupport/%.c,$$(BUILD)/$(1)/testsupport/%.o,\
			 $$(TESTSUPPORT_SRCS))
$$(BUILD)/$(1)/testsupport/%.o: $$(SRC)/testsupport/%.c
	@mkdir -p $$(@D)
	$$(TEST_CC_$(1)) $$(TEST_CFLAGS) $$(TEST_FLAGS_$(1)) $$(TESTSUPPORT_INC) -MMD -MP -c -o $$@ $$<
-include $$(TESTSUPPORT_OBJS_$(1):.o=.d)
$$(BUILD)/$(1)/testsupport.a: $$(TESTSUPPORT_OBJS_$(1))
	rm -f $$@ && ar rcs $$@ $$^
endef
$(foreach f,$(TEST_FLAVORS),$(eval $(call testsupport_flavor,$(f))))

include $(sort $(wildcard $(SRC)/selftests/*/suite.mk))
