/*
 * tools/cmd_bolt_prof.c - dcpi bolt-prof: BOLT fdata (llvm-bolt -data) from estimated
 * edge counts (optimize/bolt_prof.c; options in tools/cmd_llvm_prof.c).
 */
#include "dcpi/optimize.h"
#include "tools.h"

int cmd_bolt_prof(int argc, char **argv)
{
	return tool_feedback(argc, argv, OPT_F_BOLT);
}
