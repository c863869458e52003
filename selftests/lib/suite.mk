# Library (writer) tests. Suites:
#   lib-asan      host, dir backend, clang ASan+UBSan: every test
#   lib-tsan      host, dir backend, clang TSan: the concurrency tests
#   vm-lib-6.1    the same tests in the VM against /dev/blamer (static gcc build)
#   vm-lib-6.12
# The tests build the writer sources in with the sanitizer flags (not the
# installed library) so that the sanitizers see every access; the reader
# sources too, so a test can read what the writer wrote as blamer does.

LIBT_SRC   := $(SRC)/selftests/lib
LIBT_TESTS := test_lib test_concurrency
LIBT_LIBSRCS := $(LIB_SRCS)
LIBT_DEPS  := $(LIBT_LIBSRCS) $(LIB_PRIVATE_HDRS) $(SRC)/include/blamer.h \
	      $(LIBT_SRC)/validate.c $(wildcard $(LIBT_SRC)/*.h) $(KSELFTEST_HARNESS)
LIBT_CFLAGS := -std=gnu11 -D_GNU_SOURCE -Wall -Wextra -Werror -g \
	       -I$(SRC)/include $(LIB_INCLUDES) -I$(LIBT_SRC) \
	       -I$(KSELFTEST_DIR) -Wno-unused-parameter -Wno-sign-compare \
	       -Wno-missing-field-initializers -Wno-empty-body -Wno-misleading-indentation
LIBT_CLANG ?= clang
ASAN_FLAGS := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer -O1
TSAN_FLAGS := -fsanitize=thread -O1

LIBT_ASAN   := $(addprefix $(BUILD)/asan/lib/,$(LIBT_TESTS))
LIBT_TSAN   := $(BUILD)/tsan/lib/test_concurrency
LIBT_STATIC := $(addprefix $(BUILD)/static/lib/,$(LIBT_TESTS))

.PHONY: lib-tests lib-asan lib-tsan vm-lib-6.1 vm-lib-6.12
lib-tests: $(LIBT_ASAN) $(LIBT_TSAN) $(LIBT_STATIC)

$(BUILD)/asan/lib/%: $(LIBT_SRC)/%.c $(LIBT_DEPS)
	@mkdir -p $(dir $@)
	$(LIBT_CLANG) $(LIBT_CFLAGS) $(ASAN_FLAGS) -o $@ $< $(LIBT_SRC)/validate.c \
		$(LIBT_LIBSRCS) -lm -lpthread

$(BUILD)/tsan/lib/%: $(LIBT_SRC)/%.c $(LIBT_DEPS)
	@mkdir -p $(dir $@)
	$(LIBT_CLANG) $(LIBT_CFLAGS) $(TSAN_FLAGS) -o $@ $< $(LIBT_SRC)/validate.c \
		$(LIBT_LIBSRCS) -lm -lpthread

$(BUILD)/static/lib/%: $(LIBT_SRC)/%.c $(LIBT_DEPS)
	@mkdir -p $(dir $@)
	$(CC) $(LIBT_CFLAGS) -Wno-format-truncation -O2 -static -o $@ $< $(LIBT_SRC)/validate.c \
		$(LIBT_LIBSRCS) -lm -lpthread

CHECK_SUITES += lib-asan lib-tsan
lib-asan: $(LIBT_ASAN)
	@BUILD=$(BUILD) $(SRC)/scripts/run-suite lib-asan -- sh -c \
		'ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 && \
		 export ASAN_OPTIONS UBSAN_OPTIONS && \
		 $(BUILD)/asan/lib/test_lib; a=$$?; $(BUILD)/asan/lib/test_concurrency; \
		 b=$$?; [ $$a = 0 ] && [ $$b = 0 ]'

lib-tsan: $(LIBT_TSAN)
	@BUILD=$(BUILD) $(SRC)/scripts/run-suite lib-tsan -- sh -c \
		'TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" $(LIBT_TSAN)'

# In the VM: load the module, run every test as an unprivileged user
# against the device (dir-specific tests use a private directory).
LIBT_VM_CMD := insmod /blamer.ko || exit 1; \
	as-user env BLAMER_TEST_BACKEND=device /bin/test_lib; a=$$?; \
	as-user env BLAMER_TEST_BACKEND=device /bin/test_concurrency; b=$$?; \
	[ $$a = 0 ] && [ $$b = 0 ]

CHECK_SUITES += vm-lib-6.1 vm-lib-6.12
vm-lib-6.1 vm-lib-6.12: vm-lib-%: $(LIBT_STATIC)
	@if [ ! -f $(BUILD)/kmod-$*/blamer.ko ]; then $(MAKE) --no-print-directory KVER=$* modules; fi
	@BUILD=$(BUILD) $(SRC)/scripts/run-suite vm-lib-$* -- $(SRC)/tools/vm/run --kernel $* \
		--timeout 600 --quiet $(foreach t,$(LIBT_STATIC),--add $(t)) -- '$(LIBT_VM_CMD)'
