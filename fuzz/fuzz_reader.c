// SPDX-License-Identifier: MIT
/*
 * libFuzzer harness: arbitrary bytes as heaps for the reader. An output
 * that is not clean UTF-8 text aborts, which libFuzzer reports like a
 * crash (the judge: testsupport/judge.c). Built with clang
 * -fsanitize=fuzzer,address,undefined (selftests/reader/suite.mk).
 */
#include <stdint.h>
#include <stdlib.h>

#include "testsupport.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (fuzz_one(data, size))
		abort();
	return 0;
}
