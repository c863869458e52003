# Build and install blamer.ko, and register the module's static-check
# suites.
#
#   make modules [KVER=<kernel>] [KDIR=<build tree>]
#       -> $(BUILD)/kmod-<release>/blamer.ko
#   make modules_install [KVER=..|KDIR=..] [INSTALL_MOD_PATH=root]
#       [INSTALL_MOD_DIR=updates]
#       -> <root>/lib/modules/<release>/<dir>/blamer.ko, then depmod
#
# The kernel is the running one (/lib/modules/$(uname -r)/build) unless
# KDIR names a build tree or KVER names a kernel: a full release
# (6.12.117+deb12-amd64) or a test-bed name (6.1, 6.12, 6.1-rt, 6.12-rt,
# 6.1-debug, 6.12-debug; see scripts/kernel-path). Build directories are
# named by the full release, so two kernels never share objects: kbuild
# leaves them next to the sources, so each kernel builds a private copy of
# the module sources in $(BUILD)/kmod-<release>/src. A missing header tree
# is one error line naming the package to install. Plain `make` builds the
# module only when the running kernel's headers are there, and otherwise
# says why not and goes on.

KMOD_MK := $(lastword $(MAKEFILE_LIST))
KMOD_KVERS = $(BED_STOCK)
KMOD_SRCS := $(SRC)/Kbuild $(SRC)/module/Kbuild \
	$(wildcard $(SRC)/module/*.c $(SRC)/module/*.h) \
	$(SRC)/include/uapi/linux/blamer.h
KMOD_FILES := $(KMOD_SRCS:$(SRC)/%=%)
KPATH := $(SRC)/scripts/kernel-path
INSTALL_MOD_DIR ?= updates

# What `make modules` builds for: KDIR, else KVER, else the running kernel.
KMOD_TARGET = $(or $(KDIR),$(KVER),$(shell uname -r))
# $(call kmod_ko,KERNEL): the module's path for a kernel of scripts/kernel-path
# (empty if the kernel is unknown; the build then says why).
kmod_ko = $(BUILD)/kmod-$(shell $(KPATH) --release $(1) 2>/dev/null)/blamer.ko
# $(call kmod_kdir,KERNEL): its build tree (for the check scripts).
kmod_kdir = $(shell $(KPATH) --headers $(1))

# Resolved on use only, once per make: release, build tree, or the one
# line that says what is missing.
KMOD_ERR = $(eval KMOD_ERR := $$(shell $(KPATH) --headers '$(KMOD_TARGET)' 2>&1 >/dev/null))$(KMOD_ERR)
KMOD_REL = $(eval KMOD_REL := $$(shell $(KPATH) --release '$(KMOD_TARGET)'))$(KMOD_REL)
KMOD_HDRS = $(eval KMOD_HDRS := $$(shell $(KPATH) --headers '$(KMOD_TARGET)'))$(KMOD_HDRS)

.PHONY: modules modules-all modules_install modules-if-possible
all: modules-if-possible
modules-if-possible:
	@$(if $(KMOD_ERR),echo "note: not building the module: $(subst kernel-path: ,,$(KMOD_ERR))",\
		$(MAKE) --no-print-directory modules)

modules:
	$(if $(KMOD_ERR),$(error $(subst kernel-path: ,,$(KMOD_ERR))))
	@$(MAKE) --no-print-directory KMOD_KDIR=$(KMOD_HDRS) $(BUILD)/kmod-$(KMOD_REL)/blamer.ko
modules-all:
	@for k in $(KMOD_KVERS); do $(MAKE) --no-print-directory KVER=$$k modules || exit; done

# INSTALL_MOD_PATH is a staging root (packaging, tests): its depmod has no
# modules.order or modules.builtin* of the kernel to read, and says so.
modules_install: modules
	@d='$(INSTALL_MOD_PATH)/lib/modules/$(KMOD_REL)/$(INSTALL_MOD_DIR)' && \
	echo "  INSTALL $$d/blamer.ko" && \
	install -D -m 0644 $(BUILD)/kmod-$(KMOD_REL)/blamer.ko $$d/blamer.ko && \
	echo "  DEPMOD  $(KMOD_REL)" && \
	$(if $(INSTALL_MOD_PATH),{ depmod -b '$(INSTALL_MOD_PATH)' '$(KMOD_REL)' 2>&1 | \
		{ grep -v "WARNING: could not open modules\.\(order\|builtin\)" || :; } >&2; }, \
		depmod -A '$(KMOD_REL)')

# The build tree: KMOD_KDIR when `modules` resolved it, else looked up from
# the release in the directory name. Suites running in parallel may ask for
# the same module: the lock makes the second wait and find it built.
kmod_kdir_of = $(or $(KMOD_KDIR),$(shell $(KPATH) --headers $(1)))
$(BUILD)/kmod-%/blamer.ko: $(KMOD_SRCS)
	@test -n '$(call kmod_kdir_of,$*)'
	@mkdir -p $(BUILD)/kmod-$*/src
	flock $(BUILD)/kmod-$*/.lock sh -c 'cd $(SRC) && \
		cp -p --parents $(KMOD_FILES) $(BUILD)/kmod-$*/src/ && \
		$(MAKE) --no-print-directory -C $(call kmod_kdir_of,$*) \
			M=$(BUILD)/kmod-$*/src modules && \
		cp $(BUILD)/kmod-$*/src/module/blamer.ko $@'

# ---- static checks (host-side TAP suites) ---------------------------------
# checkpatch.pl, its data files and kernel-doc come from Debian's kernel source tarball
# into $(BUILD)/kernel-scripts at build time (through the kernel cache:
# scripts/linux-source-files); they are never committed.
KSCRIPTS_DIR := $(BUILD)/kernel-scripts
KSCRIPTS_TARBALL := /usr/src/linux-source-6.1.tar.xz
KSCRIPTS := checkpatch.pl spelling.txt const_structs.checkpatch kernel-doc
KMOD_CHECKS := $(SRC)/selftests/module

# The stamp names the version of the list, so adding a script re-extracts.
KSCRIPTS_STAMP := $(KSCRIPTS_DIR)/.extracted-2
$(KSCRIPTS_STAMP):
	@mkdir -p $(KSCRIPTS_DIR)
	@t=$$(mktemp -d $(KSCRIPTS_DIR)/.x.XXXXXX) && \
	$(SRC)/scripts/linux-source-files $(KSCRIPTS_TARBALL) $$t \
		$(addprefix linux-source-6.1/scripts/,$(KSCRIPTS)) && \
	mv -f $(addprefix $$t/,$(KSCRIPTS)) $(KSCRIPTS_DIR)/ && rm -rf $$t && \
	touch $@ || { rm -rf $$t; exit 1; }

# The kernel trees, as KVER=KDIR pairs for the check scripts.
KMOD_TREES = $(foreach k,$(KMOD_KVERS),$(k)=$(call kmod_kdir,$(k)))
# The warning-free build also on the RT kernels (their headers differ:
# PREEMPT_RT turns spinlocks into sleeping locks).
KMOD_BUILD_TREES = $(foreach k,$(KMOD_KVERS) $(BED_RT),$(k)=$(call kmod_kdir,$(k)))

CHECK_SUITES += module-build module-sparse module-checkpatch module-install
.PHONY: module-build module-sparse module-checkpatch module-install
module-install:
	@$(SRC)/scripts/run-suite $@ -- $(KMOD_CHECKS)/check-install \
		$(SRC) $(BUILD)/kmod-install
module-build:
	@$(SRC)/scripts/run-suite $@ -- $(KMOD_CHECKS)/check-build build \
		$(SRC) $(BUILD)/kmod-check $(KMOD_BUILD_TREES)
module-sparse:
	@$(SRC)/scripts/run-suite $@ -- $(KMOD_CHECKS)/check-build sparse \
		$(SRC) $(BUILD)/kmod-check $(KMOD_TREES)
# Extraction happens in the recipe so a failure is reported by the suite.
module-checkpatch:
	@$(MAKE) --no-print-directory $(KSCRIPTS_STAMP)
	@$(SRC)/scripts/run-suite $@ -- $(KMOD_CHECKS)/check-checkpatch \
		$(KSCRIPTS_DIR)/checkpatch.pl $(SRC) $(KMOD_FILES) \
		$(KMOD_MK:$(SRC)/%=%)
