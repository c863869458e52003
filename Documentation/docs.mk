# Documentation checks: every reStructuredText file parses without a
# docutils warning (a malformed table renders as an error block, and a
# heap-format table that does not render is a contract nobody can read),
# and the man page formats without a groff warning.

CHECK_SUITES += docs
.PHONY: docs
docs:
	@$(SRC)/scripts/run-suite $@ -- $(SRC)/Documentation/check-docs $(SRC)/Documentation
