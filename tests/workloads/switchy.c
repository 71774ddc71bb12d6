/*
 * switchy.c - switch-heavy deterministic workload for the CFG tests: dense
 * switches of 6 to 40 cases (compiled to jump tables at -O2 by GCC and
 * Clang), a loop around them, and a call to a function that never returns
 * on an error path.  Prints one checksum; same output every run.
 */
#include <stdio.h>
#include <stdlib.h>

__attribute__((noreturn, noinline)) static void fatal(const char *what)
{
	fprintf(stderr, "switchy: %s\n", what);
	exit(2);
}

__attribute__((noinline)) static unsigned op6(unsigned k, unsigned x)
{
	switch (k) {
	case 0: return x + 3;
	case 1: return x * 7;
	case 2: return x ^ 0x55;
	case 3: return x >> 2;
	case 4: return x - 11;
	case 5: return x * x;
	default: return x;
	}
}

__attribute__((noinline)) static unsigned op12(unsigned k, unsigned x)
{
	switch (k) {
	case 0: x += 1; break;
	case 1: x *= 3; break;
	case 2: x ^= 0x1234; break;
	case 3: x = (x << 3) | (x >> 29); break;
	case 4: x -= 17; break;
	case 5: x = ~x; break;
	case 6: x += x >> 5; break;
	case 7: x *= 0x9e3779b1u; break;
	case 8: x ^= x >> 7; break;
	case 9: x += 0x1000; break;
	case 10: x = x * 5 + 1; break;
	case 11: x ^= 0xdeadbeef; break;
	default: fatal("op12: bad opcode");
	}
	return x;
}

__attribute__((noinline)) static int classify(int c)
{
	switch (c) {
	case 'a': case 'e': case 'i': case 'o': case 'u': return 1;
	case 'b': case 'c': case 'd': return 2;
	case 'f': case 'g': return 3;
	case 'h': return 4;
	case 'j': case 'k': case 'l': return 5;
	case 'm': case 'n': return 6;
	case 'p': return 7;
	case 'q': case 'r': return 8;
	case 's': return 9;
	case 't': return 10;
	case 'v': case 'w': return 11;
	case 'x': return 12;
	case 'y': return 13;
	case 'z': return 14;
	default: return 0;
	}
}

__attribute__((noinline)) static long op40(unsigned k, long x)
{
	switch (k) {
	case 0: x += 1; break;      case 1: x += 3; break;     case 2: x ^= 5; break;
	case 3: x *= 7; break;      case 4: x -= 9; break;     case 5: x += 11; break;
	case 6: x ^= 13; break;     case 7: x *= 15; break;    case 8: x -= 17; break;
	case 9: x += 19; break;     case 10: x ^= 21; break;   case 11: x *= 23; break;
	case 12: x -= 25; break;    case 13: x += 27; break;   case 14: x ^= 29; break;
	case 15: x *= 31; break;    case 16: x -= 33; break;   case 17: x += 35; break;
	case 18: x ^= 37; break;    case 19: x *= 39; break;   case 20: x -= 41; break;
	case 21: x += 43; break;    case 22: x ^= 45; break;   case 23: x *= 47; break;
	case 24: x -= 49; break;    case 25: x += 51; break;   case 26: x ^= 53; break;
	case 27: x *= 55; break;    case 28: x -= 57; break;   case 29: x += 59; break;
	case 30: x ^= 61; break;    case 31: x *= 63; break;   case 32: x -= 65; break;
	case 33: x += 67; break;    case 34: x ^= 69; break;   case 35: x *= 71; break;
	case 36: x -= 73; break;    case 37: x += 75; break;   case 38: x ^= 77; break;
	case 39: x *= 79; break;
	default: x = -x; break;
	}
	return x;
}

int main(int argc, char **argv)
{
	static const char text[] = "the quick brown fox jumps over the lazy dog";
	unsigned x = 1;
	long y = 0;
	int n = argc > 1 ? atoi(argv[1]) : 200;

	if (n < 0)
		fatal("negative count");
	for (int i = 0; i < n; i++) {
		x = op6(i % 7, x);
		x = op12(i % 12, x);
		y = op40(i % 41, y + classify(text[i % (sizeof(text) - 1)]));
	}
	printf("%u %ld\n", x, y);
	return 0;
}
