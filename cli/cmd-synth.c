#include "config.h"

#include "cli-util.h"
#include "commands.h"

int mt_cmd_synth(int argc, char **argv)
{
	return cli_not_built("synth", "the foundation issue");
}
