/* inject-device.c — what the recorder asks the driver and NVML directly:
 * device rows (name, uuid, PCI bus id, total memory, driver and CUDA
 * versions), free memory at an allocation failure, stream ids, and the
 * device memory in use (inject-sample.c makes the readings). NVML (libnvidia-ml.so.1) gives what
 * nvidia-smi shows; without it cuMemGetInfo of the current context stands
 * in. Both libraries are loaded with dlopen: the injection library links
 * neither.
 */
#include "config.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <cuda.h>
#include <cupti.h>

#include "inject-private.h"

/* The few NVML declarations we use (nvml.h is not needed for four calls). */
typedef struct nvml_device *nvml_device_t;
struct nvml_memory {
	unsigned long long total, free, used;
};
/* nvmlMemory_v2_t: version = its size | 2 << 24 */
struct nvml_memory_v2 {
	unsigned version;
	unsigned long long total, reserved, free, used;
};
struct nvml_process_info {
	unsigned pid;
	unsigned long long used_gpu_memory;
	unsigned gpu_instance_id, compute_instance_id;
};

static struct {
	pthread_once_t once;
	CUresult (*device_get_count)(int *);
	CUresult (*device_get)(CUdevice *, int);
	CUresult (*device_get_name)(char *, int, CUdevice);
	CUresult (*device_get_uuid)(CUuuid *, CUdevice);
	CUresult (*device_total_mem)(size_t *, CUdevice);
	CUresult (*device_pci_bus_id)(char *, int, CUdevice);
	CUresult (*driver_get_version)(int *);
	CUresult (*mem_get_info)(size_t *, size_t *);
	CUresult (*ctx_get_current)(CUcontext *);
	int (*nvml_init)(void);
	int (*nvml_by_uuid)(const char *, nvml_device_t *);
	int (*nvml_memory)(nvml_device_t, struct nvml_memory *);
	int (*nvml_memory_v2)(nvml_device_t, struct nvml_memory_v2 *);
	int (*nvml_driver_version)(char *, unsigned);
	int (*nvml_processes)(nvml_device_t, unsigned *, struct nvml_process_info *);
	bool nvml_ok;
	nvml_device_t nvml_dev[REC_MAX_DEVICES];
	uint64_t seen_mask; /* devices with a row, bit per ordinal < 64 */
} lib = { .once = PTHREAD_ONCE_INIT };

static void load(void)
{
	void *cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
	void *nvml;

	if (!cuda)
		cuda = dlopen("libcuda.so.1", RTLD_NOW);
	if (cuda) {
		lib.device_get_count = (CUresult(*)(int *))dlsym(cuda, "cuDeviceGetCount");
		lib.device_get = (CUresult(*)(CUdevice *, int))dlsym(cuda, "cuDeviceGet");
		lib.device_get_name =
		        (CUresult(*)(char *, int, CUdevice))dlsym(cuda, "cuDeviceGetName");
		lib.device_get_uuid =
		        (CUresult(*)(CUuuid *, CUdevice))dlsym(cuda, "cuDeviceGetUuid_v2");
		if (!lib.device_get_uuid)
			lib.device_get_uuid =
			        (CUresult(*)(CUuuid *, CUdevice))dlsym(cuda, "cuDeviceGetUuid");
		lib.device_total_mem =
		        (CUresult(*)(size_t *, CUdevice))dlsym(cuda, "cuDeviceTotalMem_v2");
		lib.device_pci_bus_id =
		        (CUresult(*)(char *, int, CUdevice))dlsym(cuda, "cuDeviceGetPCIBusId");
		lib.driver_get_version = (CUresult(*)(int *))dlsym(cuda, "cuDriverGetVersion");
		lib.mem_get_info = (CUresult(*)(size_t *, size_t *))dlsym(cuda, "cuMemGetInfo_v2");
		lib.ctx_get_current = (CUresult(*)(CUcontext *))dlsym(cuda, "cuCtxGetCurrent");
	}
	nvml = dlopen("libnvidia-ml.so.1", RTLD_NOW);
	if (nvml) {
		lib.nvml_init = (int (*)(void))dlsym(nvml, "nvmlInit_v2");
		lib.nvml_by_uuid = (int (*)(const char *, nvml_device_t *))dlsym(
		        nvml, "nvmlDeviceGetHandleByUUID");
		lib.nvml_memory = (int (*)(nvml_device_t, struct nvml_memory *))dlsym(
		        nvml, "nvmlDeviceGetMemoryInfo");
		lib.nvml_memory_v2 = (int (*)(nvml_device_t, struct nvml_memory_v2 *))dlsym(
		        nvml, "nvmlDeviceGetMemoryInfo_v2");
		lib.nvml_driver_version =
		        (int (*)(char *, unsigned))dlsym(nvml, "nvmlSystemGetDriverVersion");
		lib.nvml_processes =
		        (int (*)(nvml_device_t, unsigned *, struct nvml_process_info *))dlsym(
		                nvml, "nvmlDeviceGetComputeRunningProcesses_v3");
		lib.nvml_ok = lib.nvml_init && lib.nvml_by_uuid && lib.nvml_memory &&
		              lib.nvml_init() == 0;
	}
}

static void format_uuid(const CUuuid *u, char *buf, size_t len)
{
	const unsigned char *b = (const unsigned char *)u->bytes;

	snprintf(buf, len,
	         "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0],
	         b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13],
	         b[14], b[15]);
}

/* The uuid of a CUDA ordinal as NVML and the trace write it ("" if not
 * known), and its CUdevice. */
static CUdevice device_uuid(unsigned ordinal, char *uuid, size_t len)
{
	CUdevice dev;
	CUuuid u;

	uuid[0] = 0;
	if (!lib.device_get || lib.device_get(&dev, (int)ordinal) != CUDA_SUCCESS)
		dev = (CUdevice)ordinal;
	if (lib.device_get_uuid && lib.device_get_uuid(&u, dev) == CUDA_SUCCESS)
		format_uuid(&u, uuid, len);
	return dev;
}

/* NVML's handle of a CUDA ordinal, found on first use (a reading may come
 * before the device has a row); NULL without NVML. */
static nvml_device_t nvml_of(unsigned ordinal)
{
	nvml_device_t h = __atomic_load_n(&lib.nvml_dev[ordinal], __ATOMIC_ACQUIRE);
	char uuid[64];

	if (h || !lib.nvml_ok)
		return h;
	device_uuid(ordinal, uuid, sizeof(uuid));
	if (*uuid && lib.nvml_by_uuid(uuid, &h) == 0 && h)
		__atomic_store_n(&lib.nvml_dev[ordinal], h, __ATOMIC_RELEASE);
	return h;
}

/* The memory the driver keeps for itself on h (inside NVML's used, outside
 * CUDA's total); 0 when not known. */
static uint64_t driver_reserved(nvml_device_t h)
{
	struct nvml_memory_v2 m = { .version = (unsigned)sizeof(m) | 2u << 24 };

	if (!h || !lib.nvml_memory_v2 || lib.nvml_memory_v2(h, &m) != 0)
		return 0;
	return m.reserved;
}

uint32_t rec_device_row_locked(unsigned ordinal)
{
	struct mt_device d = { 0 };
	char name[256] = "", uuid[64] = "", driver[80] = "", cuda_version[32] = "", bus[32] = "";
	CUdevice dev;
	size_t total = 0;
	int version = 0;
	uint32_t id = 0;

	pthread_once(&lib.once, load);
	dev = device_uuid(ordinal, uuid, sizeof(uuid));
	if (lib.device_get_name)
		lib.device_get_name(name, sizeof(name), dev);
	if (lib.device_total_mem)
		lib.device_total_mem(&total, dev);
	if (lib.device_pci_bus_id && lib.device_pci_bus_id(bus, sizeof(bus), dev) != CUDA_SUCCESS)
		bus[0] = 0;
	if (lib.driver_get_version && lib.driver_get_version(&version) == CUDA_SUCCESS)
		snprintf(cuda_version, sizeof(cuda_version), "%d.%d", version / 1000,
		         (version % 1000) / 10);
	if (lib.nvml_ok && lib.nvml_driver_version)
		lib.nvml_driver_version(driver, sizeof(driver));
	if (!*driver)
		snprintf(driver, sizeof(driver), "CUDA %s", cuda_version);
	d.driver_reserved_bytes = ordinal < REC_MAX_DEVICES ? driver_reserved(nvml_of(ordinal)) : 0;
	d.ordinal = ordinal;
	d.total_bytes = total;
	d.name = name;
	d.uuid = uuid;
	d.driver_version = driver;
	d.cuda_version = cuda_version;
	d.pci_bus_id = bus;
	if (mt_writer_add_device(rec_state.writer, &d, &id) < 0) {
		rec_warn("cannot write the trace: %s", mt_writer_message(rec_state.writer));
		return 0;
	}
	if (ordinal < 64)
		__atomic_or_fetch(&lib.seen_mask, 1ull << ordinal, __ATOMIC_RELAXED);
	return id;
}

uint64_t rec_device_free_bytes(void)
{
	size_t free_b = 0, total = 0;

	pthread_once(&lib.once, load);
	if (lib.mem_get_info && lib.mem_get_info(&free_b, &total) == CUDA_SUCCESS)
		return free_b;
	return UINT64_MAX;
}

uint32_t rec_device_stream_id(uint64_t stream)
{
	CUcontext ctx = NULL;
	uint32_t id = 0;

	pthread_once(&lib.once, load);
	if (!stream && lib.ctx_get_current)
		lib.ctx_get_current(&ctx);
	if (cuptiGetStreamIdEx(ctx, (CUstream)(uintptr_t)stream, 0, &id) != CUPTI_SUCCESS)
		return 0;
	return id;
}

static uint64_t process_bytes(nvml_device_t dev)
{
	struct nvml_process_info info[64];
	unsigned n = 64;
	pid_t me = getpid();

	if (!lib.nvml_processes || lib.nvml_processes(dev, &n, info) != 0)
		return 0;
	for (unsigned i = 0; i < n && i < 64; i++)
		if ((pid_t)info[i].pid == me)
			return info[i].used_gpu_memory;
	return 0;
}

uint64_t rec_device_seen(void)
{
	return __atomic_load_n(&lib.seen_mask, __ATOMIC_RELAXED);
}

int rec_device_usage(unsigned ordinal, uint64_t *used, uint64_t *process)
{
	struct nvml_memory m;
	nvml_device_t h;

	pthread_once(&lib.once, load);
	*used = *process = 0;
	if (ordinal >= REC_MAX_DEVICES)
		return -1;
	h = nvml_of(ordinal);
	if (h && lib.nvml_memory(h, &m) == 0) {
		*used = m.used;
		*process = process_bytes(h);
		return 0;
	}
	if (ordinal == 0) {
		/* No NVML: the sampling thread has no context of its own;
		 * cuMemGetInfo needs one, so this works only where the
		 * program made its context current on every thread. */
		size_t free_b = 0, total = 0;
		if (!lib.mem_get_info || lib.mem_get_info(&free_b, &total) != CUDA_SUCCESS)
			return -1;
		*used = total - free_b;
		return 0;
	}
	return -1;
}
