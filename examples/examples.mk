# The installed library as a user gets it: `make install` into a scratch
# DESTDIR, the example built with nothing but the installed header,
# libraries and pkg-config file (shared and static), and run while the
# installed `blamer` reads it (examples/install-test).

CHECK_SUITES += install-check
.PHONY: install-check
install-check: lib tools
	@BUILD=$(BUILD) $(SRC)/scripts/run-suite $@ -- $(SRC)/examples/install-test \
		"$(MAKE)" $(SRC) $(BUILD)/install-test
