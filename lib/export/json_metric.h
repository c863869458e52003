/* SPDX-License-Identifier: MIT */
/* The metrics of a snapshot in JSON (json_metric.c), for json.c. */
#ifndef BLAMER_EXPORT_JSON_METRIC_H
#define BLAMER_EXPORT_JSON_METRIC_H

#include "blamer.h"
#include "json_writer.h"

/* "path": a DAG path's node ids, "names": their names (null: unnamed),
 * as the attribution view and a series' path are written: @uid's names
 * (a process's, a series'), or (BL_JSON_ANY_UID) the snapshot-wide ones
 * (the attribution view, over every process). */
#define BL_JSON_ANY_UID	UINT64_MAX
void bl_json_path(struct bl_json *j, const struct blamer_snapshot *s, uint64_t uid,
		  const uint64_t *nodes, uint32_t depth);
/* "metrics": the process's own series. */
void bl_json_process_metrics(struct bl_json *j, const struct blamer_snapshot *s,
			     const struct blamer_snap_process *p);
/* "service": the series merged over processes, and the roles. */
void bl_json_service(struct bl_json *j, const struct blamer_snapshot *s);

#endif
