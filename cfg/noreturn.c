/*
 * cfg/noreturn.c - which calls never return.  A call to such a function ends
 * its basic block with no fall-through edge (docs/architecture.md, "Contracts"), which
 * keeps the code the compiler placed after it (often the next block of an
 * unrelated path) out of the caller's flow.  Two sources: a table of library
 * functions known never to return, and an analysis of the callee's own CFG
 * (no reachable return, no tail call), one level deep, cached per image and
 * address.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static const char *const noreturn_names[] = {
	"exit", "_exit", "_Exit", "quick_exit", "abort", "__assert_fail",
	"__assert_perror_fail", "__assert", "__stack_chk_fail", "__fortify_fail",
	"__chk_fail", "_Unwind_Resume", "longjmp", "_longjmp", "siglongjmp",
	"__longjmp_chk", "pthread_exit", "err", "errx", "verr", "verrx",
	"__cxa_throw", "__cxa_rethrow", "__cxa_bad_cast", "__cxa_bad_typeid",
	"__cxa_throw_bad_array_new_length", "__cxa_pure_virtual", "__cxa_call_unexpected",
	"std::terminate()", "std::terminate", "_ZSt9terminatev", "__libc_fatal",
	"__libc_message", "__malloc_assert", "__builtin_unreachable", "__builtin_trap",
	"_ZSt17__throw_bad_allocv", "_ZSt19__throw_logic_errorPKc",
	"_ZSt20__throw_length_errorPKc", "_ZSt20__throw_out_of_rangePKc",
	"_ZSt24__throw_out_of_range_fmtPKcz", "_ZSt25__throw_bad_function_callv",
	"_ZSt16__throw_bad_castv", "_ZSt21__throw_bad_array_new_lengthv",
	"std::__throw_bad_alloc()", "std::__throw_logic_error(char const*)",
	"std::__throw_length_error(char const*)", "std::__throw_out_of_range(char const*)",
	"std::__throw_out_of_range_fmt(char const*, ...)",
	"std::__throw_bad_function_call()", "std::__throw_bad_cast()",
	"std::__throw_bad_array_new_length()", "__ubsan_handle_builtin_unreachable",
	"__ubsan_handle_missing_return", "__asan_handle_no_return_abort",
	"fancy_abort", "internal_error", "fatal_error", "__gxx_personality_v0_abort",
};

#define NNAMES (sizeof(noreturn_names) / sizeof(noreturn_names[0]))

/*
 * Their lengths, measured once: the test runs for every call instruction.
 * len_mask has bit n set when a name is n bytes long (all are under 64), so
 * most names are turned away without a look at the table.
 */
static uint8_t name_len[NNAMES];
static uint64_t len_mask;
static pthread_once_t name_once = PTHREAD_ONCE_INIT;

static void name_init(void)
{
	for (size_t i = 0; i < NNAMES; i++) {
		name_len[i] = (uint8_t)strlen(noreturn_names[i]);
		if (name_len[i] < 64)
			len_mask |= 1ull << name_len[i];
	}
}

int cfg_noreturn_name(const char *name)
{
	size_t n = 0;

	if (!name)
		return 0;
	pthread_once(&name_once, name_init);
	while (n < 64 && name[n] && name[n] != '@')
		n++;
	if (n >= 64 || !(len_mask & 1ull << n))
		return 0;
	for (size_t i = 0; i < NNAMES; i++)
		if (name_len[i] == n && noreturn_names[i][0] == name[0] &&
		    !memcmp(noreturn_names[i], name, n))
			return 1;
	return 0;
}

/*
 * The cache: open addressing on (image, address).  It lives for the process
 * and is freed at exit; answers about a closed image are never asked again
 * under a different identity since the key includes its path's hash.
 */
struct nr_slot {
	const struct image *img;
	uint64_t addr, path_hash;
	int used, value;
};

static pthread_mutex_t nr_lock = PTHREAD_MUTEX_INITIALIZER;
static struct nr_slot *nr_tab;
static size_t nr_cap, nr_used;

static uint64_t hash_str(const char *s)
{
	uint64_t h = 1469598103934665603ull;

	while (s && *s)
		h = (h ^ (uint8_t)*s++) * 1099511628211ull;
	return h;
}

static size_t slot_of(const struct nr_slot *tab, size_t cap, const struct image *img,
		      uint64_t addr, uint64_t ph)
{
	/*
	 * The product's high bits, folded down: its low bits are the address's
	 * low bits times an odd number, and procedures are 16-byte aligned, so
	 * they alone used a sixteenth of the slots, in long probe runs.
	 */
	uint64_t h = (addr ^ ph) * 0x9e3779b97f4a7c15ull;
	size_t i = (size_t)(h ^ h >> 29) & (cap - 1);

	while (tab[i].used && !(tab[i].img == img && tab[i].addr == addr &&
				tab[i].path_hash == ph))
		i = (i + 1) & (cap - 1);
	return i;
}

/* 1 / 0 when cached, -1 when not. */
static int cache_get(const struct image *img, uint64_t addr, uint64_t ph)
{
	int v = -1;
	size_t i;

	pthread_mutex_lock(&nr_lock);
	if (nr_cap) {
		i = slot_of(nr_tab, nr_cap, img, addr, ph);
		if (nr_tab[i].used)
			v = nr_tab[i].value;
	}
	pthread_mutex_unlock(&nr_lock);
	return v;
}

static void cache_put(const struct image *img, uint64_t addr, uint64_t ph, int value)
{
	struct nr_slot *tab;
	size_t i;

	pthread_mutex_lock(&nr_lock);
	if ((nr_used + 1) * 2 > nr_cap) {
		size_t cap = nr_cap ? nr_cap * 2 : 1024;

		tab = calloc(cap, sizeof(*tab));
		if (!tab)
			goto out;	/* no cache: answers are recomputed */
		for (size_t j = 0; j < nr_cap; j++)
			if (nr_tab[j].used)
				tab[slot_of(tab, cap, nr_tab[j].img, nr_tab[j].addr,
					    nr_tab[j].path_hash)] = nr_tab[j];
		free(nr_tab);
		nr_tab = tab;
		nr_cap = cap;
	}
	i = slot_of(nr_tab, nr_cap, img, addr, ph);
	if (!nr_tab[i].used)
		nr_used++;
	nr_tab[i] = (struct nr_slot){ img, addr, ph, 1, value };
out:
	pthread_mutex_unlock(&nr_lock);
}

__attribute__((destructor)) static void cache_free(void)
{
	free(nr_tab);
	nr_tab = NULL;
	nr_cap = nr_used = 0;
}

/* No reachable return, no jump out except to noreturn code, nothing unknown. */
static int proves_noreturn(const struct cfg *cfg)
{
	if (cfg->missing_edges)
		return 0;
	for (size_t e = 0; e < cfg->nedges; e++) {
		const struct cfg_edge *ed = &cfg->edges[e];
		const struct cfg_block *b = &cfg->blocks[ed->from];

		if (ed->kind == CFG_E_RETURN)
			return 0;
		if (ed->kind == CFG_E_TAILCALL && !(b->flags & CFG_B_NORETURN))
			return 0;
	}
	return 1;
}

int cfg_noreturn_at(const struct image *img, uint64_t target, int depth)
{
	return cfg_noreturn_with(img, target, depth, NULL);
}

int cfg_noreturn_with(const struct image *img, uint64_t target, int depth,
		      struct cfg_dec *dec)
{
	const struct img_proc *p;
	uint64_t ph = 0;
	int named;

	if (!img)
		return 0;
	p = img_proc_at(img, target);
	if (!p || p->addr != target)
		return 0;
	return cfg_noreturn_proc(img, p, depth, dec, &ph, &named);
}

/* img's path hashed, once per *ph (0: not yet). */
static uint64_t path_hash(const struct image *img, uint64_t *ph)
{
	if (!*ph)
		*ph = hash_str(img_path(img));
	return *ph;
}

int cfg_noreturn_proc(const struct image *img, const struct img_proc *p, int depth,
		      struct cfg_dec *dec, uint64_t *ph, int *named)
{
	uint64_t target = p->addr;
	struct cfg *cfg;
	int v;

	*named = cfg_noreturn_name(p->name) || cfg_noreturn_name(p->raw_name);
	if (*named)
		return 1;
	if (depth <= 0 || p->source == IMG_SRC_PLT)
		return 0;
	v = cache_get(img, target, path_hash(img, ph));
	if (v >= 0)
		return v;
	v = 0;
	if (cfg_build_with(img, p, depth - 1, 0, dec, NULL, NULL, &cfg, NULL) == 0) {
		v = proves_noreturn(cfg);
		cfg_free(cfg);
	}
	cache_put(img, target, *ph, v);
	return v;
}

void cfg_noreturn_from(const struct image *img, const struct img_proc *p,
		       const struct cfg *cfg, uint64_t *ph)
{
	if (cfg_noreturn_name(p->name) || cfg_noreturn_name(p->raw_name) ||
	    p->source == IMG_SRC_PLT)
		return;
	if (cache_get(img, p->addr, path_hash(img, ph)) < 0)
		cache_put(img, p->addr, *ph, proves_noreturn(cfg));
}
