/*
 * tests/tu_perf.h - perf.data records written byte by byte, for the tests
 * of the perf importers (test_import.c, test_session.c): a buffer the
 * records go into, little-endian as the host writes them, and the event
 * attribute of a software event.  Header-only; include after <cmocka.h>.
 */
#ifndef DCPI_TU_PERF_H
#define DCPI_TU_PERF_H

#include <stdint.h>
#include <string.h>
#include <linux/perf_event.h>

struct tu_pbuf {
	uint8_t b[1 << 16];
	size_t n;
	uint64_t time;		/* of the next record, for the writers that use it */
};

static inline void tu_put(struct tu_pbuf *p, const void *v, size_t n)
{
	assert_true(p->n + n <= sizeof(p->b));
	memcpy(p->b + p->n, v, n);
	p->n += n;
}

static inline void tu_put64(struct tu_pbuf *p, uint64_t v)
{
	tu_put(p, &v, 8);
}

static inline void tu_put32(struct tu_pbuf *p, uint32_t v)
{
	tu_put(p, &v, 4);
}

/* A record's header: type, misc and the record's size in bytes. */
static inline void tu_put_hdr(struct tu_pbuf *p, uint32_t type, uint16_t misc, size_t size)
{
	struct perf_event_header h = { type, misc, (uint16_t)size };

	tu_put(p, &h, sizeof(h));
}

/* A software event's attribute (config: PERF_COUNT_SW_...), sampled every
 * period with the sample_type fields. */
static inline void tu_sw_attr(struct perf_event_attr *a, uint64_t config, uint64_t period,
			      uint64_t sample_type)
{
	memset(a, 0, sizeof(*a));
	a->type = PERF_TYPE_SOFTWARE;
	a->config = config;
	a->size = sizeof(*a);
	a->sample_period = period;
	a->sample_type = sample_type;
}

#endif /* DCPI_TU_PERF_H */
