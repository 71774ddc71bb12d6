/*
 * machine.c - the identity of the CPU that collects an epoch, for the epoch
 * metadata: vendor, family, model, stepping and brand string from CPUID.
 *
 * The analysis picks its pipeline model from these (docs/models.md, "Choosing a model"),
 * so the family includes the extended family (AMD Zen 5 is family 0x1A) and
 * the model the extended model, as the vendors' manuals define them.
 */
#include <string.h>

#include "dcpi/profile.h"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>

static void read_brand(struct prof_epoch_meta *m)
{
	unsigned regs[12], max = __get_cpuid_max(0x80000000u, NULL);
	char *s;
	size_t n;

	if (max < 0x80000004u)
		return;
	for (unsigned i = 0; i < 3; i++)
		__cpuid(0x80000002u + i, regs[4 * i], regs[4 * i + 1], regs[4 * i + 2],
			regs[4 * i + 3]);
	s = (char *)regs;
	n = strnlen(s, sizeof(regs));
	while (n && s[n - 1] == ' ')
		n--;
	while (n && *s == ' ') {
		s++;
		n--;
	}
	if (n >= sizeof(m->cpu_name))
		n = sizeof(m->cpu_name) - 1;
	memcpy(m->cpu_name, s, n);
	m->cpu_name[n] = '\0';
}

void prof_meta_this_machine(struct prof_epoch_meta *m)
{
	unsigned eax, ebx, ecx, edx, family, model;

	memset(m->cpu_vendor, 0, sizeof(m->cpu_vendor));
	memset(m->cpu_name, 0, sizeof(m->cpu_name));
	m->cpu_family = m->cpu_model = m->cpu_stepping = 0;
	if (!__get_cpuid(0, &eax, &ebx, &ecx, &edx))
		return;
	memcpy(m->cpu_vendor, &ebx, 4);
	memcpy(m->cpu_vendor + 4, &edx, 4);
	memcpy(m->cpu_vendor + 8, &ecx, 4);
	if (eax >= 1 && __get_cpuid(1, &eax, &ebx, &ecx, &edx)) {
		family = (eax >> 8) & 0xf;
		model = (eax >> 4) & 0xf;
		if (family == 0xf)
			family += (eax >> 20) & 0xff;
		if (family == 0x6 || family >= 0xf)
			model |= ((eax >> 16) & 0xf) << 4;
		m->cpu_family = family;
		m->cpu_model = model;
		m->cpu_stepping = eax & 0xf;
	}
	read_brand(m);
}
#else
void prof_meta_this_machine(struct prof_epoch_meta *m)
{
	memset(m->cpu_vendor, 0, sizeof(m->cpu_vendor));
	memset(m->cpu_name, 0, sizeof(m->cpu_name));
	m->cpu_family = m->cpu_model = m->cpu_stepping = 0;
}
#endif
