/*
 * tests/tu_sess.h - a live session of collect/ (collect/internal.h,
 * sess_init) as sess_open would leave it, without perf_event_open, for the
 * tests that feed it records (test_session.c, test_pmu.c).
 * Header-only; include after <cmocka.h> and collect/internal.h.
 */
#ifndef DCPI_TU_SESS_H
#define DCPI_TU_SESS_H

#include <stdint.h>

/*
 * s initialised from o with two counters, k[0] of o's first event and id
 * id0, k[1] of its second and id id1, sampling sample_type; the records'
 * pids are made up, so their maps are read offline (no /proc, no perf maps).
 */
static inline void tu_sess_live(struct session *s, const struct collect_opts *o,
				struct smp_counter *k, uint64_t id0, uint64_t id1,
				uint64_t sample_type)
{
	struct dcpi_err err = { 0 };

	assert_int_equal(sess_init(s, o, &err), 0);
	k[0] = (struct smp_counter){ -1, 0, 0, id0 };
	k[1] = (struct smp_counter){ -1, 0, 1, id1 };
	s->smp.ctr = k;
	s->smp.nctr = 2;
	s->smp.sample_type = sample_type;
	maps_set_offline(s->maps, 1);
	maps_set_jit(s->maps, 0);
}

#endif /* DCPI_TU_SESS_H */
