/* A fake libcuda.so.1 for the attach library's tests, compiled by them with `cc -shared -fPIC`
 * and named by MANTISSA_REAL_LIBCUDA. It exports the driver functions the tests call (and not
 * others, so that a missing one can be seen), and appends one line per call it receives to the
 * file named by FAKE_CUDA_LOG; each image it is handed is written whole, as it reads it (its own
 * headers give its length), to FAKE_CUDA_LOG.load<N>.
 *
 * Device memory is host memory (malloc), so copies are memcpy and the tests can read it. A
 * function's parameters are told by its name: `k_8_4_4` takes three parameters of 8, 4 and 4
 * bytes, each aligned to its size. A module has up to 8 globals of 16 bytes, made on first use.
 * A PTX image containing "refuse" is refused with CUDA_ERROR_INVALID_PTX and a JIT log. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int CUresult;
typedef unsigned long long CUdeviceptr;

#define OK 0
#define INVALID_VALUE 1
#define INVALID_PTX 218
#define NOT_FOUND 500

static FILE *log_file(void) {
    static FILE *f;
    if (!f) {
        const char *path = getenv("FAKE_CUDA_LOG");
        f = path ? fopen(path, "a") : stderr;
        if (!f) f = stderr;
        setvbuf(f, NULL, _IOLBF, 0);
    }
    return f;
}
#define LOG(...) fprintf(log_file(), __VA_ARGS__)

static void log_hex(const void *p, size_t n) {
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++) LOG("%02x", b[i]);
}

/* ---- images ---- */
static size_t image_len(const void *image) {
    const unsigned char *b = image;
    uint32_t magic;
    memcpy(&magic, b, 4);
    if (magic == 0xBA55ED50u) {
        uint16_t header;
        uint64_t size;
        memcpy(&header, b + 6, 2);
        memcpy(&size, b + 8, 8);
        return header + size;
    }
    if (memcmp(b, "\x7f" "ELF", 4) == 0) {
        uint64_t shoff;
        uint16_t shentsize, shnum;
        memcpy(&shoff, b + 0x28, 8);
        memcpy(&shentsize, b + 0x3A, 2);
        memcpy(&shnum, b + 0x3C, 2);
        return shoff + (uint64_t)shentsize * shnum;
    }
    return strlen((const char *)b); /* PTX */
}

/* A fatbin wrapper (as the runtime registers it) is followed to its fatbin. */
static const void *unwrap(const void *image) {
    uint32_t magic;
    memcpy(&magic, image, 4);
    if (magic == 0x466243B1u) {
        const void *data;
        memcpy(&data, (const char *)image + 8, sizeof data);
        return data;
    }
    return image;
}

static int loads;
static int save_image(const char *via, const void *image) {
    image = unwrap(image);
    size_t n = image_len(image);
    const char *path = getenv("FAKE_CUDA_LOG");
    int id = ++loads;
    if (path) {
        char name[4096];
        snprintf(name, sizeof name, "%s.load%d", path, id);
        FILE *f = fopen(name, "wb");
        if (f) {
            fwrite(image, 1, n, f);
            fclose(f);
        }
    }
    LOG("load %s id=%d len=%zu\n", via, id, n);
    return id;
}

struct global { char name[64]; unsigned char data[16]; };
struct module { int id; struct global globals[8]; };
struct function { char name[128]; struct module *module; };

static CUresult refuse(const void *image, unsigned n, int *keys, void **values) {
    image = unwrap(image);
    if (!strstr((const char *)image, "refuse")) return OK;
    for (unsigned i = 0; i < n; i++) {
        if (keys[i] == 5) snprintf((char *)values[i], 64, "ptxas fatal: refused by the fake");
    }
    return INVALID_PTX;
}

static CUresult new_module(void **out, const char *via, const void *image) {
    struct module *m = calloc(1, sizeof *m);
    m->id = save_image(via, image);
    *out = m;
    return OK;
}

static void log_options(unsigned n, int *keys) {
    LOG("  options");
    for (unsigned i = 0; i < n; i++) LOG(" %d", keys[i]);
    LOG("\n");
}

CUresult cuModuleLoadData(void **m, const void *image) { return new_module(m, "cuModuleLoadData", image); }
CUresult cuModuleLoadFatBinary(void **m, const void *image) { return new_module(m, "cuModuleLoadFatBinary", image); }
CUresult cuModuleLoadDataEx(void **m, const void *image, unsigned n, int *keys, void **values) {
    CUresult r = refuse(image, n, keys, values);
    if (r != OK) { LOG("load cuModuleLoadDataEx refused\n"); return r; }
    new_module(m, "cuModuleLoadDataEx", image);
    log_options(n, keys);
    return OK;
}
CUresult cuLibraryLoadData(void **lib, const void *code, int *keys, void **values, unsigned n,
                           int *lkeys, void **lvalues, unsigned ln) {
    (void)lkeys; (void)lvalues;
    CUresult r = refuse(code, n, keys, values);
    if (r != OK) { LOG("load cuLibraryLoadData refused\n"); return r; }
    new_module(lib, "cuLibraryLoadData", code);
    log_options(n, keys);
    LOG("  library options %u\n", ln);
    return OK;
}
static CUresult load_file(void **m, const char *via, const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return 301;
    static char buf[1 << 20];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = 0;
    fclose(f);
    return new_module(m, via, buf);
}
CUresult cuModuleLoad(void **m, const char *path) { return load_file(m, "cuModuleLoad", path); }
CUresult cuLibraryLoadFromFile(void **lib, const char *path, int *k, void **v, unsigned n, int *lk,
                               void **lv, unsigned ln) {
    (void)k; (void)v; (void)n; (void)lk; (void)lv; (void)ln;
    return load_file(lib, "cuLibraryLoadFromFile", path);
}
CUresult cuModuleUnload(void *m) { LOG("unload %d\n", ((struct module *)m)->id); return OK; }
CUresult cuLibraryUnload(void *m) { LOG("unload %d\n", ((struct module *)m)->id); return OK; }

static CUresult get_function(void **out, void *m, const char *name) {
    struct function *f = calloc(1, sizeof *f);
    snprintf(f->name, sizeof f->name, "%s", name);
    f->module = m;
    *out = f;
    return OK;
}
CUresult cuModuleGetFunction(void **f, void *m, const char *name) { return get_function(f, m, name); }
CUresult cuLibraryGetKernel(void **k, void *lib, const char *name) { return get_function(k, lib, name); }
CUresult cuKernelGetFunction(void **f, void *k) { *f = k; return OK; }
CUresult cuLibraryGetModule(void **m, void *lib) { *m = lib; return OK; }
CUresult cuFuncGetName(const char **name, void *f) { *name = ((struct function *)f)->name; return OK; }
/* Resources a test can tell apart: registers are 16 plus the name's length, local bytes 8, the
 * rest 0 but for 1024 threads per block; other attributes are refused. */
CUresult cuFuncGetAttribute(int *value, int attribute, void *f) {
    switch (attribute) {
    case 4: *value = 16 + (int)strlen(((struct function *)f)->name); return OK;
    case 3: *value = 8; return OK;
    case 0: *value = 1024; return OK;
    case 1: case 2: case 5: case 6: *value = 0; return OK;
    default: return INVALID_VALUE;
    }
}
CUresult cuKernelGetLibrary(void **lib, void *k) { *lib = ((struct function *)k)->module; return OK; }

/* `k_8_4_4`: sizes after the first underscore. */
static CUresult param_info(void *func, size_t index, size_t *offset, size_t *size) {
    const char *p = strchr(((struct function *)func)->name, '_');
    size_t off = 0;
    for (size_t i = 0; p; i++) {
        size_t s = strtoul(p + 1, NULL, 10);
        if (s == 0) break;
        off = (off + s - 1) / s * s;
        if (i == index) { *offset = off; *size = s; return OK; }
        off += s;
        p = strchr(p + 1, '_');
    }
    return INVALID_VALUE;
}
CUresult cuFuncGetParamInfo(void *f, size_t i, size_t *o, size_t *s) { return param_info(f, i, o, s); }
CUresult cuKernelGetParamInfo(void *k, size_t i, size_t *o, size_t *s) { return param_info(k, i, o, s); }

static CUresult get_global(CUdeviceptr *ptr, size_t *size, void *mod, const char *name) {
    struct module *m = mod;
    for (int i = 0; i < 8; i++) {
        struct global *g = &m->globals[i];
        if (!g->name[0]) snprintf(g->name, sizeof g->name, "%s", name);
        if (strcmp(g->name, name) == 0) {
            *ptr = (CUdeviceptr)(uintptr_t)g->data;
            if (size) *size = sizeof g->data;
            LOG("global %d %s\n", m->id, name);
            return OK;
        }
    }
    return NOT_FOUND;
}
CUresult cuModuleGetGlobal_v2(CUdeviceptr *p, size_t *s, void *m, const char *n) { return get_global(p, s, m, n); }
CUresult cuLibraryGetGlobal(CUdeviceptr *p, size_t *s, void *m, const char *n) { return get_global(p, s, m, n); }

/* ---- launches ---- */
static CUresult launch(const char *via, void *func, unsigned gx, unsigned bx, void *stream,
                       void **params) {
    struct function *f = func;
    LOG("launch %s %s grid=%u block=%u stream=%p args=", via, f->name, gx, bx, stream);
    size_t o, s;
    for (size_t i = 0; params && param_info(f, i, &o, &s) == OK; i++) {
        log_hex(params[i], s);
        LOG(",");
    }
    LOG("\n");
    return OK;
}
CUresult cuLaunchKernel(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                        unsigned bz, unsigned shared, void *stream, void **params, void **extra) {
    (void)gy; (void)gz; (void)by; (void)bz; (void)shared; (void)extra;
    return launch("cuLaunchKernel", f, gx, bx, stream, params);
}
CUresult cuLaunchKernel_ptsz(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                             unsigned by, unsigned bz, unsigned shared, void *stream, void **params,
                             void **extra) {
    (void)gy; (void)gz; (void)by; (void)bz; (void)shared; (void)extra;
    return launch("cuLaunchKernel_ptsz", f, gx, bx, stream, params);
}
struct launch_config { unsigned grid[3], block[3], shared; void *stream; void *attrs; unsigned n; };
CUresult cuLaunchKernelEx(const struct launch_config *c, void *f, void **params, void **extra) {
    (void)extra;
    return launch("cuLaunchKernelEx", f, c->grid[0], c->block[0], c->stream, params);
}

/* ---- memory ---- */
static struct { uintptr_t base; size_t n; } allocs[256];
static int nallocs;
CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t n) {
    void *m = calloc(1, n);
    allocs[nallocs].base = (uintptr_t)m;
    allocs[nallocs++].n = n;
    *p = (CUdeviceptr)(uintptr_t)m;
    LOG("alloc %zu\n", n);
    return OK;
}
CUresult cuMemFree_v2(CUdeviceptr p) { LOG("free\n"); (void)p; return OK; }
CUresult cuPointerGetAttribute(void *data, int attribute, CUdeviceptr p) {
    if (attribute != 2) return INVALID_VALUE;
    for (int i = 0; i < nallocs; i++) {
        if (p >= allocs[i].base && p < allocs[i].base + allocs[i].n) {
            *(unsigned *)data = 2; /* CU_MEMORYTYPE_DEVICE */
            return OK;
        }
    }
    return INVALID_VALUE; /* pageable host memory the driver does not know */
}
static CUresult copy(const char *via, void *dst, const void *src, size_t n) {
    LOG("%s n=%zu bytes=", via, n);
    log_hex(src, n);
    LOG("\n");
    memcpy(dst, src, n);
    return OK;
}
#define D(p) ((void *)(uintptr_t)(p))
CUresult cuMemcpyHtoD_v2(CUdeviceptr d, const void *s, size_t n) { return copy("htod", D(d), s, n); }
CUresult cuMemcpyHtoD_v2_ptds(CUdeviceptr d, const void *s, size_t n) { return copy("htod_ptds", D(d), s, n); }
CUresult cuMemcpyDtoH_v2(void *d, CUdeviceptr s, size_t n) { return copy("dtoh", d, D(s), n); }
CUresult cuMemcpyDtoD_v2(CUdeviceptr d, CUdeviceptr s, size_t n) { return copy("dtod", D(d), D(s), n); }
CUresult cuMemcpy(CUdeviceptr d, CUdeviceptr s, size_t n) { return copy("memcpy", D(d), D(s), n); }
CUresult cuMemcpyAsync(CUdeviceptr d, CUdeviceptr s, size_t n, void *st) { (void)st; return copy("memcpyasync", D(d), D(s), n); }
CUresult cuMemcpyDtoHAsync_v2(void *d, CUdeviceptr s, size_t n, void *st) { (void)st; return copy("dtohasync", d, D(s), n); }
CUresult cuMemsetD32_v2(CUdeviceptr d, unsigned v, size_t n) {
    LOG("memset32 %u %zu\n", v, n);
    for (size_t i = 0; i < n; i++) ((unsigned *)D(d))[i] = v;
    return OK;
}
CUresult cuMemsetD8Async(CUdeviceptr d, unsigned char v, size_t n, void *st) {
    (void)st;
    LOG("memset8async %u %zu\n", v, n);
    memset(D(d), v, n);
    return OK;
}
struct memcpy2d {
    size_t sx, sy; unsigned st; const void *sh; CUdeviceptr sd; void *sa; size_t sp;
    size_t dx, dy; unsigned dt; void *dh; CUdeviceptr dd; void *da; size_t dp;
    size_t w, h;
};
/* Host and device memory are both the fake's process memory: rows copied as the driver would. */
CUresult cuMemcpy2D_v2(const struct memcpy2d *c) {
    LOG("memcpy2d %zux%zu\n", c->w, c->h);
    const char *src = c->st == 1 ? (const char *)c->sh : (const char *)D(c->sd);
    char *dst = c->dt == 1 ? (char *)c->dh : (char *)D(c->dd);
    for (size_t y = 0; y < c->h; y++)
        memcpy(dst + c->dx + (c->dy + y) * c->dp, src + c->sx + (c->sy + y) * c->sp, c->w);
    return OK;
}

/* ---- contexts, streams, events ---- */
static int ctx_object;
static void *current;
static int primary_active = 1;
CUresult cuInit(unsigned flags) { (void)flags; current = &ctx_object; LOG("init\n"); return OK; }
CUresult cuDriverGetVersion(int *v) { *v = 13000; return OK; }
CUresult cuDeviceGetCount(int *n) { *n = 3; LOG("device count\n"); return OK; }
CUresult cuCtxGetCurrent(void **c) { *c = current; return OK; }
CUresult cuCtxPushCurrent_v2(void *c) { (void)c; return OK; }
CUresult cuCtxPopCurrent_v2(void **c) { if (c) *c = current; return OK; }
CUresult cuCtxSynchronize(void) { LOG("synchronize\n"); return OK; }
CUresult cuStreamSynchronize(void *s) { (void)s; LOG("stream synchronize\n"); return OK; }
CUresult cuCtxDestroy_v2(void *c) { (void)c; LOG("destroy\n"); current = NULL; return OK; }
CUresult cuDevicePrimaryCtxGetState(int dev, unsigned *flags, int *active) {
    (void)dev; *flags = 0; *active = primary_active; return OK;
}
CUresult cuDevicePrimaryCtxRetain(void **c, int dev) { (void)dev; *c = &ctx_object; return OK; }
CUresult cuDevicePrimaryCtxRelease_v2(int dev) { (void)dev; LOG("release\n"); return OK; }
CUresult cuDevicePrimaryCtxReset(int dev) { (void)dev; LOG("reset v1\n"); primary_active = 0; current = NULL; return OK; }
CUresult cuDevicePrimaryCtxReset_v2(int dev) { (void)dev; LOG("reset\n"); primary_active = 0; current = NULL; return OK; }
static int events;
CUresult cuEventCreate(void **e, unsigned flags) { (void)flags; *e = (void *)(uintptr_t)(0x1000 + ++events); return OK; }
CUresult cuEventRecord(void *e, void *s) { (void)e; (void)s; return OK; }
CUresult cuEventSynchronize(void *e) { (void)e; return OK; }
CUresult cuEventElapsedTime_v2(float *ms, void *a, void *b) { (void)a; (void)b; *ms = 0.5f; return OK; }

/* ---- entry points by name ---- */
static void *self(void) {
    static void *handle;
    if (!handle) {
        Dl_info info;
        dladdr((void *)self, &info);
        handle = dlopen(info.dli_fname, RTLD_NOW | RTLD_NOLOAD);
    }
    return handle;
}
CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int version, unsigned long long flags,
                             int *status) {
    (void)version;
    static const char *suffixes[] = {"_v2_ptds", "_v2_ptsz", "_ptds", "_ptsz", "_v2", ""};
    for (int i = (flags & 2) ? 0 : 4; i < 6; i++) {
        char name[256];
        snprintf(name, sizeof name, "%s%s", symbol, suffixes[i]);
        void *p = dlsym(self(), name);
        if (p) {
            *pfn = p;
            if (status) *status = 0;
            return OK;
        }
    }
    *pfn = NULL;
    if (status) *status = 1;
    return NOT_FOUND;
}
CUresult cuGetProcAddress(const char *symbol, void **pfn, int version, unsigned long long flags) {
    return cuGetProcAddress_v2(symbol, pfn, version, flags, NULL);
}
