/*
 * tinyloop.c - a loop of known trip counts for the callgrind importer test:
 * tiny_loop() runs its body 1000 times and the arm of its if exactly 250
 * times (i % 4 == 3), so the exact per-instruction counts are known.
 */
#include <stdio.h>

volatile unsigned tiny_sink;

__attribute__((noinline)) unsigned tiny_loop(unsigned n)
{
	unsigned acc = 0;

	for (unsigned i = 0; i < n; i++) {
		acc += i;
		if ((i & 3) == 3)
			tiny_sink = acc;
	}
	return acc;
}

int main(void)
{
	printf("%u\n", tiny_loop(1000));
	return 0;
}
