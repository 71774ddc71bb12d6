/*
 * zround.c - a real program whose source names its phases, for the phase
 * detector's test on real code (tests/test_timeline.c, docs/phases.md):
 * zlib, linked statically so that its own procedures (longest_match,
 * deflate_slow, inflate_fast) keep their names, compresses a text corpus
 * (compress_phase), then decompresses it again and again, checking it
 * (decompress_phase).
 *
 *   zround [CROUNDS [DROUNDS [MB]]]   defaults 3 60 4
 *
 * With DCPI_PHASES_OUT set, the instrumented truth goes to that file: one
 * line per phase, "NAME START_NS END_NS", CLOCK_MONOTONIC.  callgrind's
 * --dump-before=compress_phase --dump-before=decompress_phase splits a run
 * into the same phases.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zlib.h>

static const char *const words[] = {
	"the", "of", "and", "a", "to", "in", "is", "you", "that", "it", "he", "was", "for",
	"on", "are", "as", "with", "his", "they", "at", "be", "this", "have", "from", "or",
	"one", "had", "by", "word", "but", "not", "what", "all", "were", "we", "when", "your",
	"can", "said", "there", "use", "an", "each", "which", "she", "do", "how", "their",
	"if", "will", "up", "other", "about", "out", "many", "then", "them", "these", "so",
	"some", "her", "would", "make", "like",
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* Words drawn by a fixed LCG, skewed toward the first ones: text that
 * deflate shrinks about threefold. */
static void make_corpus(unsigned char *buf, size_t len)
{
	uint64_t x = 88172645463325252ULL;
	size_t n = 0;

	while (n < len) {
		const char *w;
		size_t k;

		x = x * 6364136223846793005ULL + 1442695040888963407ULL;
		w = words[(x >> 33) % 64 * ((x >> 20) % 64) / 64];
		for (k = 0; w[k] && n < len; k++)
			buf[n++] = (unsigned char)w[k];
		if (n < len)
			buf[n++] = (x >> 60) == 0 ? '\n' : ' ';
	}
}

static __attribute__((noinline)) size_t compress_phase(const unsigned char *in, size_t len,
						       unsigned char *out, size_t cap,
						       int rounds)
{
	uLongf n = 0;

	for (int r = 0; r < rounds; r++) {
		n = cap;
		if (compress2(out, &n, in, len, 6) != Z_OK) {
			fprintf(stderr, "zround: compress2 failed\n");
			exit(1);
		}
	}
	return n;
}

static __attribute__((noinline)) void decompress_phase(const unsigned char *z, size_t zlen,
						       unsigned char *out, size_t len,
						       const unsigned char *want, int rounds)
{
	for (int r = 0; r < rounds; r++) {
		uLongf n = len;

		if (uncompress(out, &n, z, zlen) != Z_OK || n != len ||
		    memcmp(out, want, len)) {
			fprintf(stderr, "zround: the round trip differs\n");
			exit(1);
		}
	}
}

int main(int argc, char **argv)
{
	int cr = argc > 1 ? atoi(argv[1]) : 3, dr = argc > 2 ? atoi(argv[2]) : 60;
	size_t len = (size_t)(argc > 3 ? atoi(argv[3]) : 4) << 20;
	size_t cap = compressBound(len), zlen;
	unsigned char *in = malloc(len), *z = malloc(cap), *out = malloc(len);
	const char *path = getenv("DCPI_PHASES_OUT");
	uint64_t t[3];
	FILE *f;

	if (!in || !z || !out || cr < 1 || dr < 1 || !len)
		return 2;
	make_corpus(in, len);
	t[0] = now_ns();
	zlen = compress_phase(in, len, z, cap, cr);
	t[1] = now_ns();
	decompress_phase(z, zlen, out, len, in, dr);
	t[2] = now_ns();
	printf("zround: %zu bytes to %zu, %d + %d rounds\n", len, zlen, cr, dr);
	if (path && (f = fopen(path, "w"))) {
		fprintf(f, "compress %llu %llu\ndecompress %llu %llu\n", (unsigned long long)t[0],
			(unsigned long long)t[1], (unsigned long long)t[1],
			(unsigned long long)t[2]);
		fclose(f);
	}
	free(in);
	free(z);
	free(out);
	return 0;
}
