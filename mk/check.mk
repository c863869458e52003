# The check plumbing's own suite: scripts/run-suite and scripts/tap-summary
# decide every other suite's verdict, so their counting rules are tested
# (scripts/tests/plumbing-test, a second or so).

CHECK_SUITES += check-plumbing
.PHONY: check-plumbing
check-plumbing:
	@$(SRC)/scripts/run-suite $@ -- $(SRC)/scripts/tests/plumbing-test
