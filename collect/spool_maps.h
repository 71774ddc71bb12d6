/*
 * collect/spool_maps.h - the mappings a path spool's PRT_MAPS record carries
 * (collect/pathrt.h), replayed into a struct maps: what paths_spool.c and
 * datarec.c both read of a spool (maps.c).
 */
#ifndef DCPI_COLLECT_SPOOL_MAPS_H
#define DCPI_COLLECT_SPOOL_MAPS_H

#include <stddef.h>
#include <stdint.h>

#include "dcpi/util.h"

struct maps;

/* The "start end offset path" lines of text[0..len) (each cut at its '\n'
 * in place; an unfinished last line and lines that do not parse skipped)
 * as mappings of pid in m: 0, or maps_mmap's error. */
int maps_replay_text(struct maps *m, uint32_t pid, char *text, size_t len,
		     struct dcpi_err *err);

#endif /* DCPI_COLLECT_SPOOL_MAPS_H */
