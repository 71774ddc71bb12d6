/*
 * own_trap.h - for the workloads that keep SIGTRAP for themselves
 * (held_hostile.c, pathloop.c), which dcpi's path sampling must leave them:
 * their handler installed, and checked to be the one in place.
 */
#ifndef DCPI_WL_OWN_TRAP_H
#define DCPI_WL_OWN_TRAP_H

#include <signal.h>
#include <string.h>

/* Install h for SIGTRAP (SA_SIGINFO); 0 when it is then the handler in
 * place, -1 when not. */
static int own_trap(void (*h)(int, siginfo_t *, void *))
{
	struct sigaction sa, old;

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = h;
	sa.sa_flags = SA_SIGINFO;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGTRAP, &sa, NULL) || sigaction(SIGTRAP, NULL, &old))
		return -1;
	return old.sa_sigaction == h ? 0 : -1;
}

#endif /* DCPI_WL_OWN_TRAP_H */
