/*
 * confidence.c - how far to trust each class's estimate: low, medium or
 * high (DCPI paper sec. 6.1.5).  As in the paper the grade is a function of
 * the number of issue points (windows) behind the estimate, how tightly the
 * chosen ratios cluster, whether the estimate came from propagation, and its
 * magnitude (here: the samples it rests on, since sampling error shrinks as
 * 1 / sqrt(samples)).  More points never lower the grade.
 *
 * Then the evidence the paper's heuristic lacks: agreement with the flow
 * constraints (est_confidence_flow).  A ratio is inflated by dynamic stalls
 * in every window (cache-missing or mispredicting loops) or deflated when a
 * cheap block retires in the shadow of a long-latency one; neither shows in
 * the class's own windows, but both show as a disagreement with its
 * neighbours once flow is conserved.  The weighted least-squares flow
 * solution (solver.c) is computed for either method; a class it moves by
 * more than EST_FLOW_LOW of its estimate is low, one it confirms within
 * EST_FLOW_HIGH with >= 200 samples and >= 2 windows is high.
 */
#include <math.h>
#include <stdlib.h>

#include "dcpi/estimate.h"

#define EST_FLOW_LOW 0.15
#define EST_FLOW_HIGH 0.05

static enum est_conf grade_cluster(const struct est_class *c)
{
	int score = 0;

	if (c->npoints >= 2)
		score++;
	if (c->npoints >= 4)
		score++;
	if (c->nused >= 2 && c->tightness <= 1.15)
		score++;
	if (c->samples >= 200)
		score++;
	if (c->samples < 30)
		return EST_CONF_LOW;
	return score >= 3 ? EST_CONF_HIGH : score >= 1 ? EST_CONF_MEDIUM : EST_CONF_LOW;
}

void est_confidence(const struct cfg *cfg, struct est_class *classes)
{
	for (int k = 0; k < cfg->nclasses; k++) {
		struct est_class *c = &classes[k];

		switch (c->source) {
		case EST_S_CLUSTER:
			c->conf = grade_cluster(c);
			break;
		case EST_S_SUM:
			c->conf = c->npoints >= 4 && c->samples >= 10 ? EST_CONF_MEDIUM :
				  EST_CONF_LOW;
			break;
		case EST_S_PROPAGATED:
		case EST_S_SOLVER:
		case EST_S_BOUND:
			c->conf = EST_CONF_LOW;
			break;
		default:
			c->conf = EST_CONF_NONE;
		}
	}
}

void est_confidence_flow(const struct cfg *cfg, struct est_class *classes, const double *x)
{
	double *sum = calloc((size_t)cfg->nclasses + 1, sizeof(double));
	int *n = calloc((size_t)cfg->nclasses + 1, sizeof(int));

	if (!sum || !n)
		goto out;	/* no evidence: the grades stand */
	for (size_t b = 0; b < cfg->nblocks; b++) {
		int c = cfg->blocks[b].cls;

		if (c >= 0 && c < cfg->nclasses && x[b] >= 0)
			sum[c] += x[b], n[c]++;
	}
	for (int k = 0; k < cfg->nclasses; k++) {
		struct est_class *c = &classes[k];
		double d;

		c->flow = n[k] ? sum[k] / n[k] : -1;
		if (c->flow < 0 || c->estimate <= 0 ||
		    (c->source != EST_S_CLUSTER && c->source != EST_S_SUM))
			continue;
		d = fabs(c->flow - c->estimate) / c->estimate;
		if (d > EST_FLOW_LOW)
			c->conf = EST_CONF_LOW;
		else if (d <= EST_FLOW_HIGH && c->conf >= EST_CONF_MEDIUM &&
			 c->used_samples >= 200 && c->npoints >= 2)
			c->conf = EST_CONF_HIGH;
	}
out:
	free(sum);
	free(n);
}
