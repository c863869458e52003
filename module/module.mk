# Build blamer.ko for the Debian 6.1 and 6.12 kernels and
# register the module's static-check suites.
#
#   make modules [KVER=6.1|6.12] [KDIR=/path/to/kernel/build/tree]
#       -> $(BUILD)/kmod-$(KVER)/blamer.ko
#
# Two kernels cannot build in one source directory (kbuild leaves objects
# next to the sources), so each kernel builds a private copy of the module
# sources in $(BUILD)/kmod-<KVER>/src. KDIR defaults to the installed
# Debian headers, found by glob (never `uname -r`, see scripts/kernel-path).

KMOD_MK := $(lastword $(MAKEFILE_LIST))
KMOD_KVERS := 6.1 6.12
KMOD_SRCS := $(SRC)/Kbuild $(SRC)/module/Kbuild \
	$(wildcard $(SRC)/module/*.c $(SRC)/module/*.h) \
	$(SRC)/include/uapi/linux/blamer.h
KMOD_FILES := $(KMOD_SRCS:$(SRC)/%=%)

# $(call kmod_kdir,KVER): KDIR if given, else the Debian headers for KVER.
kmod_kdir = $(or $(KDIR),$(shell $(SRC)/scripts/kernel-path --headers $(1)))

# $(call kmod_sync,KVER): refresh the copy, keeping mtimes for kbuild.
define kmod_sync
	@mkdir -p $(BUILD)/kmod-$(1)/src
	@cd $(SRC) && cp -p --parents $(KMOD_FILES) $(BUILD)/kmod-$(1)/src/
endef

.PHONY: modules modules-all
all: modules
modules: $(BUILD)/kmod-$(KVER)/blamer.ko
modules-all: $(foreach k,$(KMOD_KVERS),$(BUILD)/kmod-$(k)/blamer.ko)

$(BUILD)/kmod-%/blamer.ko: $(KMOD_SRCS)
	$(call kmod_sync,$*)
	$(MAKE) --no-print-directory -C $(call kmod_kdir,$*) \
		M=$(BUILD)/kmod-$*/src modules
	cp $(BUILD)/kmod-$*/src/module/blamer.ko $@

# ---- static checks (host-side TAP suites) ---------------------------------
# checkpatch.pl, its data files and kernel-doc come from Debian's kernel source tarball
# into $(BUILD)/kernel-scripts at build time; they are never committed.
KSCRIPTS_DIR := $(BUILD)/kernel-scripts
KSCRIPTS_TARBALL := /usr/src/linux-source-6.1.tar.xz
KSCRIPTS := checkpatch.pl spelling.txt const_structs.checkpatch kernel-doc
KMOD_CHECKS := $(SRC)/selftests/module

# The stamp names the version of the list, so adding a script re-extracts.
KSCRIPTS_STAMP := $(KSCRIPTS_DIR)/.extracted-2
$(KSCRIPTS_STAMP):
	@test -f $(KSCRIPTS_TARBALL) || \
		{ echo "module: $(KSCRIPTS_TARBALL) missing (run: make deps)" >&2; exit 1; }
	@mkdir -p $(KSCRIPTS_DIR)
	@t=$$(mktemp -d $(KSCRIPTS_DIR)/.x.XXXXXX) && \
	tar -xJf $(KSCRIPTS_TARBALL) -C $$t --strip-components=2 --touch \
		$(addprefix linux-source-6.1/scripts/,$(KSCRIPTS)) && \
	mv -f $(addprefix $$t/,$(KSCRIPTS)) $(KSCRIPTS_DIR)/ && rm -rf $$t && \
	touch $@ || { rm -rf $$t; exit 1; }

# The kernel trees, as KVER=KDIR pairs for the check scripts.
KMOD_TREES = $(foreach k,$(KMOD_KVERS),$(k)=$(call kmod_kdir,$(k)))

CHECK_SUITES += module-build module-sparse module-checkpatch
.PHONY: module-build module-sparse module-checkpatch
module-build:
	@$(SRC)/scripts/run-suite $@ -- $(KMOD_CHECKS)/check-build build \
		$(SRC) $(BUILD)/kmod-check $(KMOD_TREES)
module-sparse:
	@$(SRC)/scripts/run-suite $@ -- $(KMOD_CHECKS)/check-build sparse \
		$(SRC) $(BUILD)/kmod-check $(KMOD_TREES)
# Extraction happens in the recipe so a failure is reported by the suite.
module-checkpatch:
	@$(MAKE) --no-print-directory $(KSCRIPTS_STAMP)
	@$(SRC)/scripts/run-suite $@ -- $(KMOD_CHECKS)/check-checkpatch \
		$(KSCRIPTS_DIR)/checkpatch.pl $(SRC) $(KMOD_FILES) \
		$(KMOD_MK:$(SRC)/%=%)
