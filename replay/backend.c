/* backend.c — the part of every backend that is not the driver: argument
 * checks, capacity, driver-call counters and the tables of what is held, so
 * that destroy releases everything (see backend-private.h). It calls the
 * implementations (backend-sim.c, backend-cuda.c), never the other way:
 * what they share with it is backend-fail.c and backend-private.h. */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "backend-private.h"

static void update_reserved(struct mt_backend *b)
{
	b->stats.reserved = b->held + b->pool_reserved;
	if (b->stats.reserved > b->stats.peak_reserved)
		b->stats.peak_reserved = b->stats.reserved;
}

int mt_backend_create(struct mt_backend **out, enum mt_backend_kind kind, unsigned ordinal,
                      uint64_t capacity, char *err, size_t errlen)
{
	struct mt_backend *b = calloc(1, sizeof(*b));
	if (!b) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	b->capacity = capacity;
	int rc;
	if (kind == MT_BACKEND_SIM && capacity == 0)
		rc = rp_backend_fail(b, -EINVAL, "the sim backend needs a capacity > 0");
	else if (kind == MT_BACKEND_SIM)
		rc = rp_backend_sim_init(b, ordinal);
	else if (kind == MT_BACKEND_CUDA)
		rc = rp_backend_cuda_init(b, ordinal);
	else
		rc = rp_backend_fail(b, -EINVAL, "unknown backend kind %d", (int)kind);
	if (rc < 0) {
		snprintf(err, errlen, "%s", b->message);
		free(b);
		return rc;
	}
	rp_mapbits_init(&b->maps, b->granularity);
	*out = b;
	return 0;
}

static void unmap_one(void *data, uint64_t va, uint64_t bytes)
{
	struct mt_backend *b = data;
	b->impl->unmap(b, va, bytes);
}

void mt_backend_destroy(struct mt_backend *b)
{
	if (!b)
		return;
	const struct rp_addrmap_slot *s;
	size_t i;
	if (b->impl->unmap)
		rp_mapbits_each(&b->maps, unmap_one, b);
	for (i = 0; rp_addrmap_next(&b->handles, &i, &s);)
		b->impl->mem_release(b, s->key);
	for (i = 0; rp_addrmap_next(&b->vas, &i, &s);)
		b->impl->va_free(b, s->key, s->value);
	for (i = 0; rp_addrmap_next(&b->plain, &i, &s);)
		b->impl->free(b, s->key);
	b->impl->destroy(b);
	rp_mapbits_release(&b->maps);
	rp_addrmap_release(&b->handles);
	rp_addrmap_release(&b->vas);
	rp_addrmap_release(&b->plain);
	free(b);
}

enum mt_backend_kind mt_backend_kind(const struct mt_backend *b)
{
	return b->impl->kind;
}

const char *mt_backend_name(const struct mt_backend *b)
{
	return b->impl->name;
}

uint64_t mt_backend_capacity(const struct mt_backend *b)
{
	return b->capacity;
}

uint64_t mt_backend_granularity(const struct mt_backend *b)
{
	return b->granularity;
}

void mt_backend_get_stats(const struct mt_backend *b, struct mt_backend_stats *stats)
{
	*stats = b->stats;
}

int mt_backend_mem_info(struct mt_backend *b, uint64_t *free_bytes, uint64_t *total_bytes)
{
	return b->impl->mem_info(b, free_bytes, total_bytes);
}

const char *mt_backend_message(const struct mt_backend *b)
{
	return b->message;
}

static int check_room(struct mt_backend *b, uint64_t bytes, const char *what)
{
	if (bytes > rp_backend_room(b))
		return rp_backend_fail(
		        b, -ENOMEM, "%s of %llu bytes exceeds the capacity (%llu of %llu held)",
		        what, (unsigned long long)bytes, (unsigned long long)b->stats.reserved,
		        (unsigned long long)b->capacity);
	return 0;
}

/* Records key -> bytes in a table after the implementation succeeded (the
 * caller undoes the operation when this fails). */
static int remember(struct mt_backend *b, struct rp_addrmap *m, uint64_t key, uint64_t bytes)
{
	if (rp_addrmap_put(m, key, bytes) < 0)
		return rp_backend_fail(b, -ENOMEM, "out of host memory");
	return 0;
}

int mt_backend_alloc(struct mt_backend *b, uint64_t bytes, uint64_t *address)
{
	if (!bytes)
		return rp_backend_fail(b, -EINVAL, "allocation of 0 bytes");
	int rc = check_room(b, bytes, "allocation");
	if (rc < 0)
		return rc;
	rc = b->impl->alloc(b, bytes, address);
	if (rc < 0)
		return rc;
	if ((rc = remember(b, &b->plain, *address, bytes)) < 0) {
		b->impl->free(b, *address);
		return rc;
	}
	b->stats.alloc_calls++;
	b->held += bytes;
	update_reserved(b);
	return 0;
}

int mt_backend_free(struct mt_backend *b, uint64_t address)
{
	uint64_t bytes;
	if (!rp_addrmap_get(&b->plain, address, &bytes))
		return rp_backend_fail(b, -EINVAL, "free of 0x%llx, which is not allocated",
		                       (unsigned long long)address);
	int rc = b->impl->free(b, address);
	if (rc < 0)
		return rc;
	rp_addrmap_remove(&b->plain, address, NULL);
	b->stats.free_calls++;
	b->held -= bytes;
	update_reserved(b);
	return 0;
}

static int check_granule(struct mt_backend *b, uint64_t bytes, const char *what)
{
	if (!bytes || bytes % b->granularity)
		return rp_backend_fail(b, -EINVAL, "%s of %llu bytes: not a multiple of %llu", what,
		                       (unsigned long long)bytes,
		                       (unsigned long long)b->granularity);
	return 0;
}

int mt_backend_va_reserve(struct mt_backend *b, uint64_t bytes, uint64_t *va)
{
	int rc = check_granule(b, bytes, "address reservation");
	if (rc < 0 || (rc = b->impl->va_reserve(b, bytes, va)) < 0)
		return rc;
	if ((rc = remember(b, &b->vas, *va, bytes)) < 0)
		b->impl->va_free(b, *va, bytes);
	return rc;
}

int mt_backend_va_free(struct mt_backend *b, uint64_t va, uint64_t bytes)
{
	/* one probe: removed, and put back (which cannot need more room) when
	 * it is of another size or the free fails */
	uint64_t have = 0;
	bool reserved = rp_addrmap_remove(&b->vas, va, &have);
	if (!reserved || have != bytes) {
		if (reserved)
			rp_addrmap_put(&b->vas, va, have);
		return rp_backend_fail(b, -EINVAL, "no address reservation of %llu bytes at 0x%llx",
		                       (unsigned long long)bytes, (unsigned long long)va);
	}
	int rc = b->impl->va_free(b, va, bytes);
	if (rc < 0)
		rp_addrmap_put(&b->vas, va, have);
	return rc;
}

int mt_backend_mem_create(struct mt_backend *b, uint64_t bytes, uint64_t *handle)
{
	int rc = check_granule(b, bytes, "physical allocation");
	if (rc < 0 || (rc = check_room(b, bytes, "physical allocation")) < 0 ||
	    (rc = b->impl->mem_create(b, bytes, handle)) < 0)
		return rc;
	if ((rc = remember(b, &b->handles, *handle, bytes)) < 0) {
		b->impl->mem_release(b, *handle);
		return rc;
	}
	b->stats.alloc_calls++;
	b->held += bytes;
	update_reserved(b);
	return 0;
}

int mt_backend_mem_release(struct mt_backend *b, uint64_t handle)
{
	uint64_t bytes;
	if (!rp_addrmap_get(&b->handles, handle, &bytes))
		return rp_backend_fail(b, -EINVAL, "release of unknown handle %llu",
		                       (unsigned long long)handle);
	int rc = b->impl->mem_release(b, handle);
	if (rc < 0)
		return rc;
	rp_addrmap_remove(&b->handles, handle, NULL);
	b->stats.free_calls++;
	b->held -= bytes;
	update_reserved(b);
	return 0;
}

int mt_backend_map_pages(struct mt_backend *b, uint64_t va, uint64_t bytes, const uint64_t *handles,
                         uint64_t n)
{
	int rc = check_granule(b, bytes, "mapping");
	if (rc < 0)
		return rc;
	if (!n)
		return rp_backend_fail(b, -EINVAL, "map of no pages");
	for (uint64_t i = 0; i < n; i++) {
		uint64_t hbytes;
		if (!rp_addrmap_get(&b->handles, handles[i], &hbytes) || hbytes != bytes)
			return rp_backend_fail(b, -EINVAL,
			                       "map of %llu bytes: handle %llu unknown or of "
			                       "another size",
			                       (unsigned long long)bytes,
			                       (unsigned long long)handles[i]);
	}
	/* noted as mapped unless one already is, forgotten if a map fails */
	if (va % b->granularity || (rc = rp_mapbits_add(&b->maps, va, bytes, n)) == -EEXIST)
		return rp_backend_fail(b, -EINVAL, "map at 0x%llx: unaligned or already mapped",
		                       (unsigned long long)va);
	if (rc < 0)
		return rp_backend_fail(b, -ENOMEM, "out of host memory");
	for (uint64_t i = 0; b->impl->map && i < n; i++) {
		if ((rc = b->impl->map(b, va + i * bytes, bytes, handles[i])) < 0) {
			while (i--)
				b->impl->unmap(b, va + i * bytes, bytes);
			rp_mapbits_remove(&b->maps, va, bytes, n);
			return rc;
		}
	}
	b->stats.map_calls += n;
	return 0;
}

int mt_backend_map(struct mt_backend *b, uint64_t va, uint64_t bytes, uint64_t handle)
{
	return mt_backend_map_pages(b, va, bytes, &handle, 1);
}

int mt_backend_unmap_pages(struct mt_backend *b, uint64_t va, uint64_t bytes, uint64_t n)
{
	/* forgotten, and noted again from where an unmap fails */
	int rc;
	if (!n)
		return rp_backend_fail(b, -EINVAL, "unmap of no pages");
	if (rp_mapbits_remove(&b->maps, va, bytes, n) < 0)
		return rp_backend_fail(b, -EINVAL, "no mapping of %llu bytes at 0x%llx",
		                       (unsigned long long)bytes, (unsigned long long)va);
	for (uint64_t i = 0; b->impl->unmap && i < n; i++) {
		if ((rc = b->impl->unmap(b, va + i * bytes, bytes)) < 0) {
			rp_mapbits_add(&b->maps, va + i * bytes, bytes, n - i);
			b->stats.unmap_calls += i;
			return rc;
		}
	}
	b->stats.unmap_calls += n;
	return 0;
}

int mt_backend_unmap(struct mt_backend *b, uint64_t va, uint64_t bytes)
{
	return mt_backend_unmap_pages(b, va, bytes, 1);
}

int mt_backend_pool_alloc(struct mt_backend *b, uint64_t bytes, uint64_t stream, uint64_t *address)
{
	unsigned grew = 0;
	if (!bytes)
		return rp_backend_fail(b, -EINVAL, "pool allocation of 0 bytes");
	int rc = b->impl->pool_alloc(b, bytes, stream, address, &grew);
	b->stats.alloc_calls += grew;
	update_reserved(b);
	return rc;
}

int mt_backend_pool_free(struct mt_backend *b, uint64_t address, uint64_t stream)
{
	int rc = b->impl->pool_free(b, address, stream);
	update_reserved(b);
	return rc;
}

int mt_backend_pool_trim(struct mt_backend *b, uint64_t keep_bytes)
{
	unsigned released = 0;
	int rc = b->impl->pool_trim(b, keep_bytes, &released);
	b->stats.free_calls += released;
	update_reserved(b);
	return rc;
}

int mt_backend_pool_walk(struct mt_backend *b, mt_policy_walk_fn fn, void *data)
{
	if (!b->impl->pool_walk)
		return rp_backend_fail(b, -ENOTSUP, "the %s backend's pool keeps its layout",
		                       b->impl->name);
	return b->impl->pool_walk(b, fn, data);
}
