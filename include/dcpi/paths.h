/*
 * paths.h - path samples: what the program did right after a sample
 * (docs/architecture.md "Three kinds of evidence"; docs/profile-format.md,
 * "Path files").
 *
 * After some samples the collector single-steps the interrupted thread K
 * instructions (EFLAGS.TF; collect/ and its preload runtime), or a PMU's
 * branch records (LBR, BRS; perf record -b) give the branches taken.  Either
 * way the evidence reduces to, per image:
 *
 *   transitions  (from offset, to offset, count): the instruction at `from`
 *                was followed by the one at `to`.  Both are file offsets in
 *                this image; a transition that leaves the image is stored
 *                in the source image with to = PATH_ELSEWHERE, and one that
 *                enters it in the target image with from = PATH_ELSEWHERE.
 *                Single steps record every consecutive pair (sequential ones
 *                included, so a conditional branch's fall-through is seen);
 *                branch records give only the taken branches (flag
 *                PATH_F_TAKEN_ONLY on the profile).
 *   steps        (offset, count): how many steps executed that instruction.
 *
 * Burst starts are time-weighted (they follow a time sample), so estimators
 * use the transitions (branch probabilities), not how often an address was
 * seen (docs/paths.md, "Time weighting").
 */
#ifndef DCPI_PATHS_H
#define DCPI_PATHS_H

#include <stddef.h>
#include <stdint.h>

#include "dcpi/profile.h"
#include "dcpi/util.h"

#define PATH_ELSEWHERE UINT64_MAX

enum {
	PATH_F_TAKEN_ONLY = 1u << 0,	/* from branch records: no fall-throughs */
};

struct path_edge {
	uint64_t from, to;	/* file offsets, or PATH_ELSEWHERE */
	uint64_t count;
};

struct path_step {
	uint64_t offset;
	uint64_t count;
};

/* The path profile of one image: sorted by (from, to) and by offset, no
 * duplicates, no zero counts once path_profile_normalize has run. */
struct path_profile {
	struct prof_image_id image;
	char source[PROF_EVENT_MAX];	/* "tf-step", "lbr", "brs" */
	uint32_t flags;			/* PATH_F_* */
	uint64_t bursts;		/* bursts (or branch stacks) that touched it */
	size_t nedges, cap_edges;
	struct path_edge *edges;
	size_t nsteps, cap_steps;
	struct path_step *steps;
};

void path_profile_init(struct path_profile *p);
void path_profile_free(struct path_profile *p);
int path_profile_add_edge(struct path_profile *p, uint64_t from, uint64_t to, uint64_t count);
int path_profile_add_step(struct path_profile *p, uint64_t offset, uint64_t count);
int path_profile_normalize(struct path_profile *p);
/* Add src into dst (same image and source, else -EINVAL with a message). */
int path_profile_merge(struct path_profile *dst, const struct path_profile *src,
		       struct dcpi_err *err);
/* Count of an edge / a step (after normalize), 0 if none. */
uint64_t path_profile_edge(const struct path_profile *p, uint64_t from, uint64_t to);
uint64_t path_profile_step(const struct path_profile *p, uint64_t offset);

/*
 * The file of one image's paths in an epoch: "<key>.paths" (the key of
 * prof_image_key), bytes as in docs/profile-format.md, "Path files".
 * Encode requires a normalized profile; decode validates everything and
 * every error message starts with name.
 */
size_t path_encoded_size(const struct path_profile *p);
/* path_encode, path_decode, path_file_write, path_file_read, path_file_merge;
 * path_epoch_write, path_epoch_read, path_profiles_free, path_epoch_merge
 * (include/dcpi/profile.h, PROF_KIND_FILE_DECLARE). */
PROF_KIND_FILE_DECLARE(path, path_profile);
PROF_KIND_EPOCH_DECLARE(path, path_profile);
/* Transitions from a text file (dcpicalc --path-edges): lines "FROM TO COUNT",
 * FROM and TO hex file offsets or - for elsewhere, COUNT decimal; # comments
 * and blank lines skipped.  Errors name the file and line. */
int path_text_read(const char *path, struct path_profile *p, struct dcpi_err *err);

#endif /* DCPI_PATHS_H */
