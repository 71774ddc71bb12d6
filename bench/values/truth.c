/*
 * truth.c - exact value counts at chosen instructions over a whole run, by
 * ptrace breakpoints: the truth bench/values/compare.py holds dcpi's value
 * samples against (docs/values.md, "Accuracy", real programs).  It shares
 * nothing with dcpi's runtime (no trap flag in the process, no hotlists):
 * every execution of every chosen instruction is counted.
 *
 *   TRUTH_SPECS="OFF:before:REG,REG;OFF:after:REG;..." truth OUT.json PROG ARGS
 * OFF: file offset (hex) of an instruction of PROG.  "before": registers as
 * it is about to run (a procedure's arguments at its first instruction);
 * "after": registers after it ran (a load's destination; "pc" for where an
 * indirect call or jump went, as a file offset of PROG, or the address when
 * outside it).  Registers: rax rbx rcx rdx rsi rdi rbp rsp r8-r15 pc.
 * Output: {"OFF:KIND:REG": {"VALUE(hex)": count, ...}, ...}.  The program's
 * standard output goes to /dev/null.  Single-threaded programs only (other
 * threads would run past a lifted breakpoint).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <unistd.h>

#define MAXSPEC 256
#define MAXREG 8

struct count {
	uint64_t value, n;
};

struct key {
	char name[64];
	struct count *c;
	size_t n, cap;		/* open addressing, cap a power of two */
};

struct spec {
	uint64_t off, addr, orig;
	int after;
	int nreg;
	char reg[MAXREG][8];
	struct key *key[MAXREG];
};

static struct spec specs[MAXSPEC];
static int nspecs;
static struct key keys[MAXSPEC * MAXREG];
static int nkeys;
static uint64_t exe_lo, exe_hi, exe_off;	/* the executable's text mapping */

static void die(const char *what)
{
	perror(what);
	exit(2);
}

static void bump(struct key *k, uint64_t v)
{
	size_t i;

	if (2 * (k->n + 1) > k->cap) {
		struct count *old = k->c;
		size_t ocap = k->cap;

		k->cap = ocap ? 2 * ocap : 64;
		k->c = calloc(k->cap, sizeof(*k->c));
		if (!k->c)
			die("calloc");
		k->n = 0;
		for (i = 0; i < ocap; i++)
			if (old[i].n) {
				size_t j = (old[i].value * 0x9e3779b97f4a7c15ULL) >> 7 & (k->cap - 1);

				while (k->c[j].n)
					j = (j + 1) & (k->cap - 1);
				k->c[j] = old[i];
				k->n++;
			}
		free(old);
	}
	i = (v * 0x9e3779b97f4a7c15ULL) >> 7 & (k->cap - 1);
	while (k->c[i].n && k->c[i].value != v)
		i = (i + 1) & (k->cap - 1);
	if (!k->c[i].n) {
		k->c[i].value = v;
		k->n++;
	}
	k->c[i].n++;
}

static uint64_t reg_of(const struct user_regs_struct *r, const char *name)
{
	static const struct {
		const char *n;
		size_t o;
	} t[] = {
#define R(x) { #x, offsetof(struct user_regs_struct, x) }
		R(rax), R(rbx), R(rcx), R(rdx), R(rsi), R(rdi), R(rbp), R(rsp),
		R(r8), R(r9), R(r10), R(r11), R(r12), R(r13), R(r14), R(r15),
#undef R
	};
	uint64_t pc;

	if (!strcmp(name, "pc")) {
		pc = r->rip;
		return pc >= exe_lo && pc < exe_hi ? pc - exe_lo + exe_off : pc;
	}
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++)
		if (!strcmp(t[i].n, name))
			return *(const uint64_t *)((const char *)r + t[i].o);
	fprintf(stderr, "truth: unknown register %s\n", name);
	exit(2);
}

static void parse_specs(const char *s)
{
	char *dup = strdup(s), *save, *part;

	for (part = strtok_r(dup, ";", &save); part; part = strtok_r(NULL, ";", &save)) {
		struct spec *sp = &specs[nspecs];
		char kind[16], regs[256], *rs, *r;

		if (nspecs == MAXSPEC ||
		    sscanf(part, "%" SCNx64 ":%15[^:]:%255s", &sp->off, kind, regs) != 3) {
			fprintf(stderr, "truth: bad spec %s\n", part);
			exit(2);
		}
		sp->after = !strcmp(kind, "after");
		for (r = strtok_r(regs, ",", &rs); r && sp->nreg < MAXREG;
		     r = strtok_r(NULL, ",", &rs)) {
			struct key *k = &keys[nkeys++];

			snprintf(sp->reg[sp->nreg], sizeof(sp->reg[0]), "%s", r);
			snprintf(k->name, sizeof(k->name), "%" PRIx64 ":%s:%s", sp->off, kind, r);
			sp->key[sp->nreg++] = k;
		}
		nspecs++;
	}
	free(dup);
}

/* The executable's mappings: file offsets to addresses. */
static void find_exe(pid_t pid)
{
	char path[64], exe[PATH_MAX], line[PATH_MAX + 128];
	ssize_t n;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/exe", pid);
	n = readlink(path, exe, sizeof(exe) - 1);
	if (n <= 0)
		die("readlink");
	exe[n] = '\0';
	snprintf(path, sizeof(path), "/proc/%d/maps", pid);
	f = fopen(path, "r");
	if (!f)
		die(path);
	while (fgets(line, sizeof(line), f)) {
		uint64_t lo, hi, off;
		char perm[8], file[PATH_MAX];

		if (sscanf(line, "%" SCNx64 "-%" SCNx64 " %7s %" SCNx64 " %*s %*s %4095s", &lo, &hi,
			   perm, &off, file) != 5 || strcmp(file, exe) || perm[2] != 'x')
			continue;
		exe_lo = lo;
		exe_hi = hi;
		exe_off = off;
	}
	fclose(f);
	if (!exe_hi) {
		fprintf(stderr, "truth: no executable mapping of %s\n", exe);
		exit(2);
	}
}

static void poke_int3(pid_t pid, struct spec *sp, int on)
{
	uint64_t w = on ? (sp->orig & ~0xffULL) | 0xcc : sp->orig;

	if (ptrace(PTRACE_POKETEXT, pid, (void *)sp->addr, (void *)w))
		die("poketext");
}

static void record(struct spec *sp, const struct user_regs_struct *r)
{
	for (int i = 0; i < sp->nreg; i++)
		bump(sp->key[i], reg_of(r, sp->reg[i]));
}

int main(int argc, char **argv)
{
	const char *s = getenv("TRUTH_SPECS");
	struct user_regs_struct regs;
	int status, first = 1;
	uint64_t hits = 0;
	pid_t pid;
	FILE *out;

	if (argc < 3 || !s) {
		fprintf(stderr, "usage: TRUTH_SPECS=... truth OUT.json PROG [ARGS]\n");
		return 2;
	}
	parse_specs(s);
	pid = fork();
	if (pid < 0)
		die("fork");
	if (!pid) {
		int null = open("/dev/null", O_WRONLY);

		dup2(null, 1);
		ptrace(PTRACE_TRACEME, 0, NULL, NULL);
		execvp(argv[2], argv + 2);
		_exit(127);
	}
	for (;;) {
		int sig = 0;

		if (waitpid(pid, &status, 0) < 0)
			die("waitpid");
		if (WIFEXITED(status) || WIFSIGNALED(status))
			break;
		if (WSTOPSIG(status) == SIGTRAP && first) {	/* at exec */
			first = 0;
			find_exe(pid);
			for (int i = 0; i < nspecs; i++) {
				struct spec *sp = &specs[i];

				if (sp->off < exe_off || sp->off >= exe_off + (exe_hi - exe_lo)) {
					fprintf(stderr, "truth: %" PRIx64 " is not in the text\n",
						sp->off);
					exit(2);
				}
				sp->addr = sp->off - exe_off + exe_lo;
				errno = 0;
				sp->orig = (uint64_t)ptrace(PTRACE_PEEKTEXT, pid, (void *)sp->addr,
							    NULL);
				if (errno)
					die("peektext");
				poke_int3(pid, sp, 1);
			}
		} else if (WSTOPSIG(status) == SIGTRAP) {
			struct spec *sp = NULL;

			if (ptrace(PTRACE_GETREGS, pid, NULL, &regs))
				die("getregs");
			for (int i = 0; i < nspecs; i++)
				if (specs[i].addr == regs.rip - 1)
					sp = &specs[i];
			if (!sp) {
				sig = SIGTRAP;		/* the program's own */
			} else {
				hits++;
				regs.rip--;
				if (ptrace(PTRACE_SETREGS, pid, NULL, &regs))
					die("setregs");
				/* every spec at this address */
				for (int i = 0; i < nspecs; i++)
					if (specs[i].addr == sp->addr && !specs[i].after)
						record(&specs[i], &regs);
				poke_int3(pid, sp, 0);
				if (ptrace(PTRACE_SINGLESTEP, pid, NULL, NULL))
					die("singlestep");
				if (waitpid(pid, &status, 0) < 0)
					die("waitpid");
				if (WIFEXITED(status) || WIFSIGNALED(status))
					break;
				if (ptrace(PTRACE_GETREGS, pid, NULL, &regs))
					die("getregs");
				for (int i = 0; i < nspecs; i++)
					if (specs[i].addr == sp->addr && specs[i].after)
						record(&specs[i], &regs);
				poke_int3(pid, sp, 1);
			}
		} else {
			sig = WSTOPSIG(status);
		}
		if (ptrace(PTRACE_CONT, pid, NULL, (void *)(long)sig))
			die("cont");
	}
	out = fopen(argv[1], "w");
	if (!out)
		die(argv[1]);
	fprintf(out, "{");
	for (int i = 0; i < nkeys; i++) {
		int any = 0;

		fprintf(out, "%s\"%s\": {", i ? ", " : "", keys[i].name);
		for (size_t j = 0; j < keys[i].cap; j++)
			if (keys[i].c[j].n) {
				fprintf(out, "%s\"%" PRIx64 "\": %" PRIu64, any ? ", " : "",
					keys[i].c[j].value, keys[i].c[j].n);
				any = 1;
			}
		fprintf(out, "}");
	}
	fprintf(out, "}\n");
	fclose(out);
	fprintf(stderr, "truth: %" PRIu64 " breakpoint hits\n", hits);
	return 0;
}
