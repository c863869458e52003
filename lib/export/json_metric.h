/* SPDX-License-Identifier: MIT */
/* The metrics of a snapshot in JSON (json_metric.c), for json.c. */
#ifndef BLAMER_EXPORT_JSON_METRIC_H
#define BLAMER_EXPORT_JSON_METRIC_H

#include "blamer.h"
#include "json_writer.h"

/* "metrics": the process's own series. */
void bl_json_process_metrics(struct bl_json *j, const struct blamer_snapshot *s,
			     const struct blamer_snap_process *p);
/* "service": the series merged over processes, and the roles. */
void bl_json_service(struct bl_json *j, const struct blamer_snapshot *s);

#endif
