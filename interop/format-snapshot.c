/* format-snapshot.c — PyTorch memory snapshots: the pickle that
 * torch.cuda.memory._dump_snapshot writes (protocols 2 to 5) or the same
 * structure as JSON, read through the plain-data readers and mapped by
 * snapshot-import.c; written as a protocol-4 pickle by snapshot-export.c.
 */
#include "config.h"

#include <errno.h>
#include <string.h>

#include "interop-private.h"

static bool looks_like_json(const uint8_t *data, size_t len)
{
	size_t i = 0;

	if (len >= 3 && !memcmp(data, "\xef\xbb\xbf", 3))
		i = 3; /* a UTF-8 byte order mark */
	while (i < len && strchr(" \t\r\n", data[i]))
		i++;
	return i < len && (data[i] == '{' || data[i] == '[');
}

static bool detect(const uint8_t *data, size_t len)
{
	if (len >= 2 && data[0] == 0x80 && data[1] >= 2 && data[1] <= 5)
		return true;
	return looks_like_json(data, len);
}

static int import(struct io_import *im)
{
	struct io_tree *t = io_tree_new();
	struct io_value *root;
	int rc;

	if (!t)
		return mt_fail(im->err, im->errlen, -ENOMEM, "out of memory");
	if (looks_like_json(im->data, im->len))
		rc = io_json_read(t, im->data, im->len, &root, im->err, im->errlen);
	else
		rc = io_pickle_read(t, im->data, im->len, &root, im->err, im->errlen);
	if (rc >= 0)
		rc = io_snapshot_to_events(im, root);
	io_tree_free(t);
	return rc;
}

const struct mt_interop_format io_format_snapshot = {
	.name = "snapshot",
	.description = "PyTorch memory snapshot, for memory_viz",
	.extensions = ".pickle .pkl",
	.detect = detect,
	.import = import,
	.export = io_snapshot_export,
};
