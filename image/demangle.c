/*
 * image/demangle.c - C++ (Itanium ABI) names made readable, through
 * libiberty's demangler: the one binutils (nm -C, objdump -C) uses, so our
 * names match theirs, clone suffixes (".cold", ".isra.0") included.
 */
#include <stddef.h>
#include <libiberty/demangle.h>

#include "dcpi/image.h"

char *img_demangle(const char *name)
{
	if (!name || name[0] != '_' || name[1] != 'Z')
		return NULL;
	return cplus_demangle(name, DMGL_PARAMS | DMGL_ANSI);
}
