/*
 * tools/cmd_gcc_prof.c - dcpi gcc-prof: the AutoFDO profile gcc -fauto-profile reads,
 * from estimated counts (optimize/gcc_prof.c; options in tools/cmd_llvm_prof.c).
 */
#include "dcpi/optimize.h"
#include "tools.h"

int cmd_gcc_prof(int argc, char **argv)
{
	return tool_feedback(argc, argv, OPT_F_GCC);
}
