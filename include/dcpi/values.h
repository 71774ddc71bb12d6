/*
 * values.h - value samples and their hotlists (seed 000, "Hotlists"; seed
 * 002; docs/values.md; docs/profile-format.md, "Value files").
 *
 * A value sample is one execution of one instruction seen through a trap-flag
 * single step (collect/pathrt.c): the registers before and after it.  From
 * them the collector derives values of several kinds per instruction (its
 * result, the address it accessed and the value loaded or stored, the stride
 * between successive addresses of one instruction, a branch's direction, an
 * indirect target, and at a procedure's entry its six integer arguments and
 * its call site).  Each (image, file offset, kind) keeps a Gibbons-Matias
 * hotlist: at most VAL_N values with counts, in counting-samples or
 * concise-samples mode switched by a saturating counter, exactly as seed 000
 * gives it (N = 16, f = 16/15, SatCount in [0, 50]).  Memory per hotlist is
 * bounded whatever the program does.
 *
 * Values that name code (VAL_TARGET, VAL_CALLSITE) are file offsets, tagged
 * with the image they are in: tag 0 is the profile's own image, tag i > 0
 * the profile's images[i - 1]; VAL_CODE_NONE when the address was in no
 * image (anonymous memory, JIT code).  Everything else is the 64-bit value
 * as the process saw it (addresses of data vary between runs with ASLR).
 */
#ifndef DCPI_VALUES_H
#define DCPI_VALUES_H

#include <stddef.h>
#include <stdint.h>

#include "dcpi/profile.h"
#include "dcpi/util.h"

/* Kinds of value per instruction.  Numbers are stored in files: never
 * renumber, only add. */
enum val_kind {
	VAL_RESULT = 1,		/* the destination register after it executed */
	VAL_ADDR = 2,		/* effective address of its memory operand */
	VAL_LOAD = 3,		/* value loaded (integer destination of a load) */
	VAL_STORE = 4,		/* value stored (integer source of a store) */
	VAL_STRIDE = 5,		/* this address minus the same instruction's
				 * previous one in a burst (two's complement) */
	VAL_BRANCH = 6,		/* conditional branch: 1 taken, 0 not */
	VAL_TARGET = 7,		/* indirect call or jump: target (tagged code) */
	VAL_ARG0 = 8,		/* at a procedure entry: rdi, rsi, rdx, rcx, r8, r9 */
	VAL_ARG5 = 13,
	VAL_CALLSITE = 14,	/* at a procedure entry: the return address
				 * (tagged code), the call site's next pc */
	VAL_LATENCY = 15,	/* load latency class: enum val_level */
	VAL_KIND_MAX = 15,
};

enum val_level { VAL_L1 = 0, VAL_L2, VAL_L3, VAL_DRAM, VAL_NLEVELS };

/* Tagged code values */
#define VAL_TAG_SHIFT 48
#define VAL_OFFSET_MASK ((UINT64_C(1) << VAL_TAG_SHIFT) - 1)
#define VAL_CODE_NONE UINT64_MAX
#define VAL_CODE(tag, off) (((uint64_t)(tag) << VAL_TAG_SHIFT) | ((off) & VAL_OFFSET_MASK))

const char *val_kind_name(int kind);	/* "result", "addr", ..., "arg0".."arg5"; NULL if unknown */

/* Seed 000's constants */
#define VAL_GM_N 16		/* tuples a Gibbons-Matias list keeps */
#define VAL_F_NUM 16		/* f = 16/15: p /= f when a tuple is added to a full list */
#define VAL_F_DEN 15
#define VAL_SAT_MIN 0		/* SatCount at MinEnd: back to counting samples */
#define VAL_SAT_MAX 50		/* SatCount at MaxEnd: concise samples */

/*
 * Space-Saving (Metwally, Agrawal, El Abbadi, ICDT 2005): VAL_N counters; a
 * value not in a full list takes over the smallest counter, count + 1.  A
 * count overestimates by at most seen / VAL_N, so every share is within
 * 1/64 (1.6 points) whatever the stream, where Gibbons-Matias lists at the
 * seed's N = 16 measured up to 40 points off on noisy streams
 * (tests/test_values.c, docs/values.md).  The collector's lists use it;
 * the seed's algorithm stays, for lists made with the other modes.
 */
#define VAL_N 64		/* tuples a list can hold (Space-Saving's counters) */

enum val_mode { VAL_COUNTING = 0, VAL_CONCISE = 1, VAL_SPACESAVING = 2 };

/* A deterministic generator (seeded in tests; the collector seeds it from
 * the clock).  splitmix64. */
struct val_rng {
	uint64_t s;
};
uint64_t val_rng_next(struct val_rng *r);
double val_rng_unit(struct val_rng *r);		/* uniform in [0, 1) */

struct val_tuple {
	uint64_t value;
	uint64_t count;		/* C */
};

/* One (offset, kind)'s hotlist. */
struct val_hotlist {
	uint64_t offset;	/* file offset of the instruction in the image */
	uint32_t kind;		/* enum val_kind */
	uint32_t mode;		/* enum val_mode */
	uint32_t sat;		/* SatCount */
	uint32_t n;		/* tuples in use, <= VAL_N */
	double p;		/* the sampling probability, 1 at start */
	uint64_t seen;		/* values offered (the sequence counter) */
	struct val_tuple t[VAL_N + 1];	/* the spare one is transient */
};

void val_hotlist_init(struct val_hotlist *h, uint64_t offset, uint32_t kind);
/* Offer one observed value: Space-Saving for a list in that mode, else seed
 * 000's algorithm (both modes, SatCount) at N = VAL_GM_N. */
void val_hotlist_add(struct val_hotlist *h, uint64_t value, struct val_rng *r);
/* Space-Saving's step (deterministic). */
void val_hotlist_add_ss(struct val_hotlist *h, uint64_t value);
/* The same with at most nmax <= VAL_N tuples and factor f > 1 (seed 000's
 * worked example: N = 3, f = 8/7); val_hotlist_add is (VAL_N, 16/15). */
void val_hotlist_add_nf(struct val_hotlist *h, uint64_t value, struct val_rng *r,
			uint32_t nmax, double f);
/* Estimated occurrences of the tuple t[i]: concise C/p; counting C + 1/p - 1
 * (C when p = 1). */
double val_hotlist_estimate(const struct val_hotlist *h, uint32_t i);
/* Estimated share of t[i] among the values seen: estimate / seen, at most 1. */
double val_hotlist_share(const struct val_hotlist *h, uint32_t i);
/* Tuples sorted by estimate, descending (ties by value). */
void val_hotlist_sort(struct val_hotlist *h);
/* Add src's observations into dst (same offset and kind): estimated counts
 * of equal values add, seen adds, the largest VAL_N are kept, as concise
 * samples at the smaller p (docs/profile-format.md says exactly how).
 * Deterministic: no generator. */
void val_hotlist_merge(struct val_hotlist *dst, const struct val_hotlist *src);

/* The value profile of one image. */
struct val_profile {
	struct prof_image_id image;
	uint64_t samples;		/* value samples (instructions stepped) in it */
	size_t nimages, cap_images;	/* the images tagged code values name */
	struct prof_image_id *images;
	size_t nlists, cap_lists;	/* sorted by (offset, kind) after normalize */
	struct val_hotlist *lists;
	void *index;			/* private: (offset, kind) -> list */
	uint32_t new_mode;		/* mode of the lists val_profile_list makes */
};

void val_profile_init(struct val_profile *p);
void val_profile_free(struct val_profile *p);
/* The hotlist of (offset, kind), created when absent; NULL on ENOMEM.
 * Pointers stay valid until the next call that creates a list. */
struct val_hotlist *val_profile_list(struct val_profile *p, uint64_t offset, uint32_t kind);
/* Existing list only (after normalize: binary search), NULL if none. */
const struct val_hotlist *val_profile_find(const struct val_profile *p, uint64_t offset,
					   uint32_t kind);
/* The tag of an image in p's table (added when absent; 0 when it is p's own
 * image), or -ENOMEM. */
int val_profile_image_tag(struct val_profile *p, const struct prof_image_id *id);
/* Sort lists by (offset, kind), each list's tuples by estimate. */
int val_profile_normalize(struct val_profile *p);
/* Add src into dst (same image, else -EINVAL with a message); code values'
 * tags are remapped to dst's table. */
int val_profile_merge(struct val_profile *dst, const struct val_profile *src,
		      struct dcpi_err *err);

/*
 * The file of one image's value profile in an epoch: "<key>.values" (the key
 * of prof_image_key), bytes as in docs/profile-format.md, "Value files".
 * Decode validates everything (every error message starts with name) and
 * never reads outside its buffer (fuzz/fuzz_values.c).
 */
/* val_encode, val_decode, val_file_write, val_file_read, val_file_merge;
 * val_epoch_write, val_epoch_read, val_profiles_free, val_epoch_merge
 * (include/dcpi/profile.h, PROF_KIND_DECLARE). */
PROF_KIND_DECLARE(val, val_profile);

/*
 * The marking plan (docs/values.md, "Marking plan"): "plan.txt" in an
 * epoch, text, written by the analysis after a record with value samples
 * (report/plan.c) and read by `dcpi record --plan FILE|auto`
 * (collect/plan.c):
 *   dcpi-plan 1
 *   image N BUILD-ID|- PATH
 *   proc N OFFSET SIZE WHY NAME      (hex file offset and size)
 *   load N OFFSET WHY SITE           (a load's file offset; its procedure
 *                                     is marked too, and is what record uses)
 *   block N OFFSET count=HEX[,branch=L] SITE
 *                                    (a block of a loop that walks a chain:
 *                                     its executions counted at the block's
 *                                     file offset, HEX the bytes a jump
 *                                     there displaces, cfg_block_displaced;
 *                                     branch=2 or 6: a short or near jcc
 *                                     ends them)
 * N numbers the image lines from 0; WHY is a comma list of hot (a share of
 * the time), args=MASK (an argument's share not yet known to within
 * VAL_PLAN_POINTS; MASK, hex, the argument registers the entry takes, bit r
 * for rdi, rsi, rdx, rcx, r8, r9; plain "args" or 00: all six) and load
 * (the same for a load's value) and entry=HEX (count the procedure's calls
 * at its entry: HEX, 5 to 15 bytes, the whole instructions at the entry
 * that a jump to a counting trampoline displaces; the analysis vouches that
 * they are position-independent, not a control transfer, and that no edge
 * of the procedure enters them or the entry: cfg_entry_displaced).  Lines
 * starting with '#' are comments.
 */
#define VAL_PLAN_FILE	"plan.txt"
#define VAL_PLAN_MAGIC	"dcpi-plan 1"
#define VAL_PLAN_POINTS	0.03	/* the share wanted to within 3 points ... */
#define VAL_PLAN_Z	1.96	/* ... at 95% confidence */

/* Calls (values) a share near p needs for a 95% interval of +-points: the
 * binomial's n = z^2 p (1 - p) / points^2, rounded up (at least 1). */
static inline uint64_t val_calls_needed(double p, double points)
{
	double n = VAL_PLAN_Z * VAL_PLAN_Z * p * (1 - p) / (points * points);
	uint64_t k = (uint64_t)n;

	return k < n || !k ? k + 1 : k;
}

/* A share from few values is not yet a share: Agresti and Coull's adjusted
 * (x + 2) / (n + 4), so that one call seen with 7 does not read as "7 in
 * 100% of calls, known" when the need is computed. */
static inline double val_share_adjusted(double share, uint64_t seen)
{
	return (share * (double)seen + 2) / ((double)seen + 4);
}

#endif /* DCPI_VALUES_H */
