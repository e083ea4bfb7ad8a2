#include "config.h"

#include "cli-util.h"
#include "commands.h"

int mt_cmd_record(int argc, char **argv)
{
	return cli_not_built("record", "the recorder issue");
}
