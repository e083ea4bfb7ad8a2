#include "config.h"

#include "cli-util.h"
#include "commands.h"

int cli_cmd_import(int argc, char **argv)
{
	return cli_not_built("import", "the report issue");
}
