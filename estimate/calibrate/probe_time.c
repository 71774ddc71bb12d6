/*
 * estimate/calibrate/probe_time.c - time the calibration probes on this machine
 * (`dcpi calibrate --fit-model`) in the BHive-style sandbox (culprit/sandbox/sandbox.c),
 * for the fit (culprit/model/fit.c).
 *
 * The machine may be shared: contention only ever slows a body, so each
 * probe's figure is a low quantile over whole passes (the second lowest of
 * the passes' medians, the lowest with fewer than three passes), as
 * bench/bhive does, taken over the passes whose figure the sandbox's canary
 * did not flag as contended when there are any.  Passes run back to back,
 * each one batch in one child.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "dcpi/model.h"
#include "dcpi/sandbox.h"

/* The low figure of probe i over the passes that timed it, from those whose
 * canary saw the core to itself when there are any; 0 when none timed it. */
static double low_figure(const double *all, const unsigned char *shared, size_t n, size_t i,
			 int passes)
{
	double v[64];
	int k = 0, quiet = 0;

	for (int p = 0; p < passes; p++)
		quiet += all[(size_t)p * n + i] > 0 && !shared[(size_t)p * n + i];
	for (int p = 0; p < passes && k < 64; p++)
		if (all[(size_t)p * n + i] > 0 && (!quiet || !shared[(size_t)p * n + i]))
			v[k++] = all[(size_t)p * n + i];
	if (!k)
		return 0;
	qsort(v, (size_t)k, sizeof(v[0]), dcpi_cmp_double);
	return v[k >= 3 ? 1 : 0];
}

int model_time_probes(const struct model_probe *probes, size_t n, int passes, int cpu,
		      double *cycles, double *probe_load, model_progress_fn progress,
		      void *arg, struct dcpi_err *err)
{
	const uint8_t **bodies = calloc(n ? n : 1, sizeof(*bodies));
	size_t *lens = calloc(n ? n : 1, sizeof(*lens));
	struct sbx_result *res = calloc(n ? n : 1, sizeof(*res));
	double *all = calloc((size_t)(passes > 0 ? passes : 1) * (n ? n : 1), sizeof(*all));
	unsigned char *shared = calloc((size_t)(passes > 0 ? passes : 1) * (n ? n : 1), 1);
	struct sbx_opts o;
	int rc = 0;

	if (!bodies || !lens || !res || !all || !shared) {
		rc = dcpi_errf(err, -ENOMEM, "probes: out of memory");
		goto out;
	}
	if (passes < 1 || passes > 64) {
		rc = dcpi_errf(err, -EINVAL, "probes: %d passes (1 to 64)", passes);
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		bodies[i] = probes[i].bytes;
		lens[i] = probes[i].len;
	}
	sbx_opts_default(&o);
	o.cpu = cpu;
	o.flags = SBX_F_BRANCHES;
	for (int p = 0; p < passes; p++) {
		double add = 0;

		rc = sbx_time(bodies, lens, n, &o, res, err);
		if (rc < 0)
			goto out;
		for (size_t i = 0; i < n; i++) {
			int ok = res[i].status == SBX_OK || res[i].status == SBX_UNSTABLE;

			all[(size_t)p * n + i] = ok ? res[i].cycles : 0;
			shared[(size_t)p * n + i] = (unsigned char)(ok && res[i].contended);
			if (ok && !strcmp(probes[i].name, "tp.alu_fuse"))
				add = res[i].cycles;
		}
		if (probe_load)
			probe_load[p] = add;
		if (progress)
			progress(arg, p + 1, passes, add);
	}
	for (size_t i = 0; i < n; i++)
		cycles[i] = low_figure(all, shared, n, i, passes);
out:
	free(bodies);
	free(lens);
	free(res);
	free(all);
	free(shared);
	return rc;
}
