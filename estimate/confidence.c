/*
 * confidence.c - how far to trust each class's estimate: low, medium or
 * high (DCPI paper sec. 6.1.5).  As in the paper the grade is a function of
 * the number of issue points (windows) behind the estimate, how tightly the
 * chosen ratios cluster, whether the estimate came from propagation, and its
 * magnitude (here: the samples it rests on, since sampling error shrinks as
 * 1 / sqrt(samples)).  More points never lower the grade.
 */
#include "dcpi/estimate.h"

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
