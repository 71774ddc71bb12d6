// tests/workloads/lookup.cc - C++ names for the procedure-lookup tests
// (tests/test_lookup.c, which compiles this with g++): a unique function,
// two overloads, a const method in a class in a namespace, and clones named
// as GCC names them (assembler names: GCC makes them only when it wants to):
// twin and its ".cold" part, and lonely, of which only an ".isra" clone is left.  Runs about 0.4 s,
// most of it in spin_unique, so a profile of it has samples there.
// Not built by the Makefile (its rule is for C workloads).
#include <cstdio>
#include <cstdlib>

namespace geo {
struct Grid {
	long base;
	long cell(long i) const;
};

__attribute__((noinline)) long Grid::cell(long i) const
{
	return base + i * 3;
}

__attribute__((noinline)) int scale(int x)
{
	return x * 2 + 1;
}

__attribute__((noinline)) double scale(double x)
{
	return x * 2.5;
}
} // namespace geo

__attribute__((noinline)) long checked(long v)
{
	if (__builtin_expect(v < 0, 0)) {
		std::fprintf(stderr, "negative %ld\n", v);
		std::abort();
	}
	return v + 1;
}

__attribute__((noinline)) long twin(long v)
{
	return v * 7;
}

extern "C" long twin_cold(long v) __asm__("_Z4twinl.cold");
extern "C" long lonely_isra(long v) __asm__("_Z6lonelyl.isra.0");

extern "C" __attribute__((noinline, used)) long twin_cold(long v)
{
	return v - 7;
}

extern "C" __attribute__((noinline, used)) long lonely_isra(long v)
{
	return v - 9;
}

__attribute__((noinline)) long spin_unique(long n)
{
	volatile long acc = 0;

	for (long i = 0; i < n; i++)
		acc = acc + (i ^ (acc >> 3));
	return acc;
}

int main(int argc, char **argv)
{
	geo::Grid g = { argc };
	long n = argc > 1 ? std::atol(argv[1]) : 200000000L;
	long r = spin_unique(n);

	r += g.cell(r) + geo::scale((int)r) + (long)geo::scale(1.5) + checked(r & 0xffff);
	r += twin(r) + twin_cold(r) + lonely_isra(r);
	return (int)(r & 1);
}
