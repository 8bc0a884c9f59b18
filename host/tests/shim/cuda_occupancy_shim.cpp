// Answers occupancy questions with NVIDIA's own calculator, cuda_occupancy.h, for
// host/tests/cuda_occupancy_h.rs. One question per line on stdin, one answer per line on stdout.
//
// Question: M major minor threads_per_sm smem_per_sm optin_per_block reserved threads regs
//           static dynamic opted_in
// Answer:   blocks limit_warps limit_regs limit_smem limit_blocks allocated_smem
// Question: S (the same fields; threads ignored)
// Answer:   block_size (cudaOccMaxPotentialOccupancyBlockSize, dynamic shared memory fixed)
// Limits at INT_MAX ("no limit") print as -1.
#include <cstdio>
#include <climits>
#include "cuda_occupancy.h"

static long lim(int x) { return x == INT_MAX ? -1 : x; }

int main() {
    char kind;
    int major, minor, threads_per_sm, threads, regs, opted_in;
    unsigned long smem_per_sm, optin, reserved, static_smem, dynamic_smem;
    while (scanf(" %c %d %d %d %lu %lu %lu %d %d %lu %lu %d", &kind, &major, &minor, &threads_per_sm, &smem_per_sm,
                 &optin, &reserved, &threads, &regs, &static_smem, &dynamic_smem, &opted_in) == 12) {
        cudaOccDeviceProp prop;
        prop.computeMajor = major;
        prop.computeMinor = minor;
        prop.maxThreadsPerBlock = 1024;
        prop.maxThreadsPerMultiprocessor = threads_per_sm;
        prop.regsPerBlock = 65536;
        prop.regsPerMultiprocessor = 65536;
        prop.warpSize = 32;
        prop.sharedMemPerBlock = 48 * 1024;
        prop.sharedMemPerMultiprocessor = smem_per_sm;
        prop.numSms = 1;
        prop.sharedMemPerBlockOptin = optin;
        prop.reservedSharedMemPerBlock = reserved;
        // What cudaFuncGetAttributes gives (the header's own conversion): one block barrier, the
        // opt-in configuration, and the attribute the kernel set: opted in to the most it may
        // have, or left at the default 48 KiB.
        cudaOccFuncAttributes attr;
        attr.maxThreadsPerBlock = 1024;
        attr.numRegs = regs;
        attr.sharedSizeBytes = static_smem;
        attr.partitionedGCConfig = PARTITIONED_GC_OFF;
        attr.shmemLimitConfig = FUNC_SHMEM_LIMIT_OPTIN;
        unsigned long cap = opted_in ? optin : 48 * 1024;
        attr.maxDynamicSharedSizeBytes = cap > static_smem ? cap - static_smem : 0;
        attr.numBlockBarriers = 1;
        attr.virtualResourceCount = 0;
        cudaOccDeviceState state;
        if (kind == 'S') {
            int min_grid = 0, block = 0;
            cudaOccError e = cudaOccMaxPotentialOccupancyBlockSize(&min_grid, &block, &prop, &attr, &state, dynamic_smem);
            if (e != CUDA_OCC_SUCCESS) { printf("error %d\n", (int)e); continue; }
            printf("%d\n", block);
            continue;
        }
        cudaOccResult r;
        cudaOccError e = cudaOccMaxActiveBlocksPerMultiprocessor(&r, &prop, &attr, &state, threads, dynamic_smem);
        if (e != CUDA_OCC_SUCCESS) { printf("error %d\n", (int)e); continue; }
        printf("%d %ld %ld %ld %ld %lu\n", r.activeBlocksPerMultiprocessor, lim(r.blockLimitWarps), lim(r.blockLimitRegs),
               lim(r.blockLimitSharedMem), lim(r.blockLimitBlocks), (unsigned long)r.allocatedSharedMemPerBlock);
    }
    return 0;
}
