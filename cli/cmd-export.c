#include "config.h"

#include "cli-util.h"
#include "commands.h"

int cli_cmd_export(int argc, char **argv)
{
	return cli_not_built("export", "the report issue");
}
