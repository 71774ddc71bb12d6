/*
 * collect/paths_blob.c - the path-sample runtime (build/libdcpi-paths.so,
 * collect/pathrt.c) carried inside dcpi itself, so that a dcpi binary copied
 * alone (as make install and dcpi calibrate's tests do) still records paths
 * with the runtime built with it (docs/paths.md).  The Makefile defines
 * PATHRT_FILE when it compiles this file; without it (the fuzz builds) the
 * blob is empty and the runtime is looked for on disk.
 */
#include <stddef.h>

#include "paths.h"

#ifdef PATHRT_FILE
__asm__(".pushsection .rodata\n"
	".balign 64\n"
	"dcpi_pathrt_blob:\n"
	".incbin \"" PATHRT_FILE "\"\n"
	"dcpi_pathrt_blob_end:\n"
	".popsection\n");

extern const unsigned char dcpi_pathrt_blob[], dcpi_pathrt_blob_end[];

const unsigned char *paths_blob(size_t *len)
{
	*len = (size_t)(dcpi_pathrt_blob_end - dcpi_pathrt_blob);
	return dcpi_pathrt_blob;
}
#else
const unsigned char *paths_blob(size_t *len)
{
	*len = 0;
	return NULL;
}
#endif
