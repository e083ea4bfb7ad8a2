#include "config.h"

#include "cli-util.h"
#include "commands.h"

int mt_cmd_report(int argc, char **argv)
{
	return cli_not_built("report", "the report issue");
}
