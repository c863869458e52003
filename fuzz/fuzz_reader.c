// SPDX-License-Identifier: MIT
/*
 * libFuzzer harness: arbitrary bytes as heaps for the reader.
 * Built with clang -fsanitize=fuzzer,address,undefined (fuzz/fuzz.mk).
 */
#include "fuzz_one.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static FILE *sink;

	if (!sink)
		sink = fopen("/dev/null", "w");
	return fuzz_one(data, size, sink);
}
