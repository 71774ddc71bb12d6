/*
 * culprit/model/probes.h - the calibration microbenchmarks (culprit/model/probes.txt,
 * assembled into probes_data.c): latency chains, independent-throughput
 * groups, port-pressure mixes, front end, loads, stores and branches, timed
 * by `dcpi calibrate --fit-model` and fitted by culprit/model/fit.c.  Private.
 */
#ifndef DCPI_CULPRIT_PROBES_H
#define DCPI_CULPRIT_PROBES_H

#include "dcpi/model.h"

extern const struct model_probe probes[];
extern const size_t nprobes;

#endif /* DCPI_CULPRIT_PROBES_H */
