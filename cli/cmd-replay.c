#include "config.h"

#include "cli-util.h"
#include "commands.h"

int mt_cmd_replay(int argc, char **argv)
{
	return cli_not_built("replay", "the replay issue");
}
