#include "config.h"

#include "cli-util.h"
#include "commands.h"

int mt_cmd_render(int argc, char **argv)
{
	return cli_not_built("render", "the viewer issue");
}
