# make deps: install the Debian packages the build, tests and demo need.
#
# scripts/deps.sh is idempotent and quiet when everything is installed;
# the stamp makes repeated `make check` runs skip even the dpkg queries.
# Editing the package list (deps.sh) invalidates the stamp. Set
# BLAMER_NO_DEPS=1 to skip this step entirely (e.g. in a prepared image).

DEPS_STAMP := $(BUILD)/.deps-stamp

deps: $(DEPS_STAMP)

$(DEPS_STAMP): $(SRC)/scripts/deps.sh
ifneq ($(BLAMER_NO_DEPS),1)
	@$(SRC)/scripts/deps.sh
endif
	@mkdir -p $(dir $@) && touch $@
