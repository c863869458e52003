/* SPDX-License-Identifier: GPL-2.0 */
/*
 * blamer: planted bugs, for the test bed only (see plant.c). Normal builds
 * never define BLAMER_PLANT and the hooks compile to nothing.
 */
#ifndef _BLAMER_PLANT_H
#define _BLAMER_PLANT_H

#ifdef BLAMER_PLANT
void blamer_plant_open(void);
void blamer_plant_release(const void *freed);
#else
static inline void blamer_plant_open(void) { }
static inline void blamer_plant_release(const void *freed) { }
#endif

#endif /* _BLAMER_PLANT_H */
