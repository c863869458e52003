/* SPDX-License-Identifier: MIT */
/*
 * libblamer: cross-process activity and resource reporting through shared
 * memory. The one public header. See Documentation/library.rst (writer)
 * and Documentation/reader.rst (reader).
 */
#ifndef BLAMER_H
#define BLAMER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Writer API (lib/, owned by the writer side) ---- */

/* ---- end of writer API ---- */

/* ---- Reader API (lib/reader*.c, owned by the reader side) ---- */

/* ---- end of reader API ---- */

#ifdef __cplusplus
}
#endif

#endif /* BLAMER_H */
