#include "config.h"

#include "cli-util.h"
#include "commands.h"

int mt_cmd_info(int argc, char **argv)
{
	return cli_not_built("info", "the foundation issue");
}
