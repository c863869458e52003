// SPDX-License-Identifier: MIT
/* Instantiates the bench tracepoint provider (probes and definitions). */
#define TRACEPOINT_CREATE_PROBES
#define TRACEPOINT_DEFINE
#include "bench_tp.h"
