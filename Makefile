# blamer: top-level build.
#
#   make            library, tool and module (KVER=6.1 by default)
#   make check      every test suite; ends with "N passed, N failed"
#   make demo       the guided tour in a VM
#   make bench      benchmarks with ratios against baselines
#
# Each part of the tree owns a fragment included below; a fragment adds
# its build targets and registers test suites in CHECK_SUITES (names of
# make targets that write TAP to $(RESULTS)/<name>.tap, see
# scripts/run-suite).

SRC      := $(CURDIR)
BUILD    ?= $(SRC)/build
RESULTS  := $(BUILD)/results
KVER     ?= 6.1

CC       ?= cc
CFLAGS_COMMON := -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror -O2 -g \
		 -I$(SRC)/include -I$(SRC)/lib
CHECK_SUITES :=

.PHONY: all check demo bench deps clean install
all:

-include mk/deps.mk
-include lib/lib.mk
-include tools/tools.mk
-include module/module.mk
-include tools/vm/vm.mk
-include selftests/selftests.mk
-include bench/bench.mk

check: deps
	@rm -rf $(RESULTS) && mkdir -p $(RESULTS)
	@$(MAKE) --no-print-directory -k $(CHECK_SUITES) || true
	@$(SRC)/scripts/tap-summary $(RESULTS) $(CHECK_SUITES)

clean:
	rm -rf $(BUILD)
