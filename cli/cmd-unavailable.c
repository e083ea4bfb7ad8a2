/* The commands a build leaves out for lack of a dependency: they say which
 * one and exit 1 (compiled only when at least one is left out). */
#include "config.h"

#include "cli-util.h"
#include "commands.h"

#if !MT_HAVE_CUPTI
int mt_cmd_record(int argc, char **argv)
{
	return cli_not_built("record", "this build has no CUPTI: install the CUDA toolkit and "
	                               "reconfigure with -Dtoolkit_root=DIR");
}
#endif

#if !MT_HAVE_VIEWER
int mt_cmd_render(int argc, char **argv)
{
	return cli_not_built("render", "this build has no cairo: install libcairo2-dev and "
	                               "reconfigure");
}
#endif
