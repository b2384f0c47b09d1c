/* A host application for crates/harness/tests/it/app.rs: it plays what a CUDA program does through
 * the driver (dlopen "libcuda.so.1" as the CUDA runtime does, load a module, allocate, copy in,
 * launch, copy back, print a result, tear down), against the attach library forwarding to the
 * attach tests' fake driver (device memory is host memory there, and a launch runs nothing).
 * argv[1]: launches to make; argv[2] (optional): "hang" to sleep forever after the first copy back,
 * "crash" to abort there. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef int (*init_t)(unsigned);
typedef int (*load_t)(void **, const void *);
typedef int (*getf_t)(void **, void *, const char *);
typedef int (*alloc_t)(unsigned long long *, size_t);
typedef int (*htod_t)(unsigned long long, const void *, size_t);
typedef int (*dtoh_t)(void *, unsigned long long, size_t);
typedef int (*launch_t)(void *, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                        unsigned, void *, void **, void **);
typedef int (*destroy_t)(void *);

static const char PTX[] =
    ".version 8.0\n.target sm_90\n.address_size 64\n"
    ".visible .entry k_8_8(.param .u64 p, .param .f64 a)\n{\nret;\n}\n";

#define GET(type, name) type name = (type)dlsym(cuda, #name); if (!name) { fprintf(stderr, "no %s\n", #name); return 3; }

int main(int argc, char **argv) {
    int launches = argc > 1 ? atoi(argv[1]) : 1;
    const char *mode = argc > 2 ? argv[2] : "";
    void *cuda = dlopen("libcuda.so.1", RTLD_NOW);
    if (!cuda) { fprintf(stderr, "%s\n", dlerror()); return 2; }
    GET(init_t, cuInit);
    GET(load_t, cuModuleLoadData);
    GET(getf_t, cuModuleGetFunction);
    GET(alloc_t, cuMemAlloc_v2);
    GET(htod_t, cuMemcpyHtoD_v2);
    GET(dtoh_t, cuMemcpyDtoH_v2);
    GET(launch_t, cuLaunchKernel);
    GET(destroy_t, cuCtxDestroy_v2);
    void *module, *f;
    unsigned long long d;
    double host[4] = {1.0, 2.0, 3.0, 4.0}, back[4];
    if (cuInit(0) || cuModuleLoadData(&module, PTX) || cuModuleGetFunction(&f, module, "k_8_8"))
        return 4;
    if (cuMemAlloc_v2(&d, sizeof host) || cuMemcpyHtoD_v2(d, host, sizeof host)) return 5;
    double a = 0.5;
    void *params[] = {&d, &a};
    for (int i = 0; i < launches; i++)
        if (cuLaunchKernel(f, 2, 1, 1, 64, 1, 1, 0, NULL, params, NULL)) return 6;
    if (cuMemcpyDtoH_v2(back, d, sizeof back)) return 7;
    printf("sum %.1f\n", back[0] + back[1] + back[2] + back[3]);
    fflush(stdout);
    if (!strcmp(mode, "hang")) for (;;) sleep(1);
    if (!strcmp(mode, "crash")) abort();
    cuCtxDestroy_v2(NULL);
    return 0;
}
