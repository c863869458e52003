# SPDX-License-Identifier: MIT
"""Runs unittest modules and writes TAP, one line per test, for
scripts/run-suite:

    tap.py MODULE...      (modules of this directory, e.g. test_writer)

A skipped test is "ok N - name # SKIP why"; a failure or error is
"not ok" with the traceback as TAP comments. Exits non-zero if any test
failed. Tests never assert a duration.
"""
import os
import sys
import unittest


class TapResult(unittest.TestResult):
    def __init__(self):
        super().__init__()
        self.n = 0

    def _line(self, ok, test, extra="", detail=None):
        self.n += 1
        name = "%s.%s" % (type(test).__name__, test._testMethodName) \
            if isinstance(test, unittest.TestCase) else str(test)
        print("%s %d - %s%s" % ("ok" if ok else "not ok", self.n, name, extra), flush=True)
        if detail:
            for line in detail.rstrip().splitlines():
                print("#   " + line)
            sys.stdout.flush()

    def addSuccess(self, test):
        super().addSuccess(test)
        self._line(True, test)

    def addSkip(self, test, reason):
        super().addSkip(test, reason)
        self._line(True, test, " # SKIP " + reason)

    def addFailure(self, test, err):
        super().addFailure(test, err)
        self._line(False, test, detail=self._exc_info_to_string(err, test))

    def addError(self, test, err):
        super().addError(test, err)
        self._line(False, test, detail=self._exc_info_to_string(err, test))

    def addExpectedFailure(self, test, err):
        super().addExpectedFailure(test, err)
        self._line(True, test, " # TODO expected failure")

    def addUnexpectedSuccess(self, test):
        super().addUnexpectedSuccess(test)
        self._line(False, test, " (unexpected success)")


def main(argv):
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path.insert(0, here)
    loader = unittest.TestLoader()
    suite = unittest.TestSuite(loader.loadTestsFromName(m) for m in argv[1:])
    print("TAP version 13")
    print("1..%d" % suite.countTestCases(), flush=True)
    result = TapResult()
    suite.run(result)
    return 0 if result.wasSuccessful() else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
