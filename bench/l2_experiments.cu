// The L2 lesson's open questions, measured in CUDA C++ on the GPU machine (nvcc; not part of the
// lab's binary). Build and run (the lead's .bundle/gpu.sh does both):
//   nvcc -O3 -arch=sm_90 -o l2_experiments bench/l2_experiments.cu
//   ./l2_experiments persist | partition DIR | bandwidth | once KERNEL ...
//
// persist   `hot_stream_read` (a hot buffer re-read amid a 1 GiB stream) at hot sizes around the
//           persisting carve-out, under: no carve-out; carve-out alone; an access-policy window
//           (hitRatio = carve-out / hot, capped at 1; half of that; missProp streaming or
//           normal); the window with cuCtxResetPersistingL2Cache before every launch; and
//           per-load L2 eviction hints (createpolicy evict_last on the hot loads, evict_first
//           on the stream's) with and without the carve-out. Baselines: the stream alone
//           (DRAM time of 1 GiB) and "every hot read misses" (the stream read twice), so each
//           time converts to the hot buffer's hit fraction.
// partition Per-hop latencies of L2 pointer chases, one lane on a chosen SM: (1) one SM, by
//           address, footprints 1..64 MiB, second pass after the first brought the lines in;
//           (2) a fixed 2048-line set warmed by SM 0, then timed from every SM twice (first
//           touch from that SM, then again). Raw per-hop cycles are written to DIR as u32 files.
// bandwidth The public suite's L2 method (RRZE-HPC gpu-benches, gpu-l2-cache: 1024-thread
//           blocks, 8-byte loads through L1, 64 per thread, 512 KiB per block, block b reads
//           region b % regions, 200000 blocks, time min of 11) beside the lab's (read_cg: 256
//           threads, 16-byte .cg loads, grid-stride over the whole footprint, one wave of
//           8 blocks per SM, 256 passes), and variants that change one thing at a time. Each
//           kernel samples %clock64 and %globaltimer per block: the SM clock during the run and
//           the spread of block durations (static work split: the slowest SM sets the time).
//
// Everything written here is the project's own code; the suite was read, not copied.

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cstdint>
#include <vector>
#include <string>
#include <algorithm>
#include <numeric>
#include <random>
#include <cuda_runtime.h>

#define CK(x)                                                                                  \
    do {                                                                                       \
        cudaError_t e_ = (x);                                                                  \
        if (e_ != cudaSuccess) {                                                               \
            fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
            exit(1);                                                                           \
        }                                                                                      \
    } while (0)

static const size_t MiB = 1 << 20;
static cudaDeviceProp prop;
static cudaStream_t stream;

// ------------------------------------------------------------------------ loads
__device__ __forceinline__ uint4 ld_cg4(const uint4* p) {
    uint4 v;
    asm volatile("ld.global.cg.v4.u32 {%0,%1,%2,%3}, [%4];" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p));
    return v;
}
__device__ __forceinline__ uint4 ld_cg4_hint(const uint4* p, uint64_t policy) {
    uint4 v;
    asm volatile("ld.global.cg.L2::cache_hint.v4.u32 {%0,%1,%2,%3}, [%4], %5;"
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                 : "l"(p), "l"(policy));
    return v;
}
// An L2 eviction policy for every line a load with it touches (PTX ISA, "createpolicy").
template <bool LAST>
__device__ __forceinline__ uint64_t policy() {
    uint64_t p;
    if (LAST) asm volatile("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;" : "=l"(p));
    else asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(p));
    return p;
}
__device__ __forceinline__ uint64_t globaltimer() {
    uint64_t t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}
__device__ __forceinline__ unsigned smid() {
    unsigned s;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(s));
    return s;
}

// Per-block timing record: clock64 and globaltimer at start and end (thread 0), and the SM.
struct BlockTime {
    unsigned long long c0, c1, t0, t1;
    unsigned sm, pad;
};
#define BT_START                                                     \
    unsigned long long c0_ = 0, t0_ = 0;                             \
    if (threadIdx.x == 0) {                                          \
        c0_ = clock64();                                             \
        t0_ = globaltimer();                                         \
    }
#define BT_END(rec, nrec)                                                                   \
    __syncthreads();                                                                        \
    if (threadIdx.x == 0 && rec) {                                                          \
        BlockTime b{c0_, (unsigned long long)clock64(), t0_, globaltimer(), smid(), 0};     \
        rec[blockIdx.x % nrec] = b;                                                         \
    }

// ------------------------------------------------------------------------ persist
// MODE 0: plain .cg loads (the lab's hot_stream_read); 1: hot evict_last, stream evict_first;
// 2: stream evict_first only; 3: the stream alone (baseline).
// The hot index is v mod hv (hv hot vectors, any count: the lab's kernel takes a power of two
// and masks), kept by subtraction so no division is issued.
template <int MODE>
__global__ void hot_stream(const uint4* s, unsigned nv, const uint4* hot, unsigned hv, unsigned* out) {
    unsigned g = blockIdx.x * blockDim.x + threadIdx.x, T = gridDim.x * blockDim.x, sum = 0;
    unsigned hi = g % hv, step = T % hv;
    uint64_t last = 0, first = 0;
    if (MODE == 1) last = policy<true>();
    if (MODE == 1 || MODE == 2) first = policy<false>();
    for (unsigned v = g; v < nv; v += T) {
        uint4 a, h = make_uint4(0, 0, 0, 0);
        if (MODE == 0) {
            a = ld_cg4(s + v);
            h = ld_cg4(hot + hi);
        } else if (MODE == 1) {
            a = ld_cg4_hint(s + v, first);
            h = ld_cg4_hint(hot + hi, last);
        } else if (MODE == 2) {
            a = ld_cg4_hint(s + v, first);
            h = ld_cg4(hot + hi);
        } else {
            a = ld_cg4(s + v);
        }
        sum += a.x + a.y + a.z + a.w + h.x + h.y + h.z + h.w;
        hi += step;
        if (hi >= hv) hi -= hv;
    }
    out[g] = sum;
}

static size_t carve_max, window_max;

static void set_carve(size_t bytes) {
    CK(cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, bytes));
}
static size_t get_carve() {
    size_t v = 0;
    CK(cudaDeviceGetLimit(&v, cudaLimitPersistingL2CacheSize));
    return v;
}
static void set_window(const void* base, size_t bytes, float ratio, cudaAccessProperty miss) {
    cudaStreamAttrValue a;
    memset(&a, 0, sizeof a);
    a.accessPolicyWindow.base_ptr = const_cast<void*>(base);
    a.accessPolicyWindow.num_bytes = bytes;
    a.accessPolicyWindow.hitRatio = ratio;
    a.accessPolicyWindow.hitProp = cudaAccessPropertyPersisting;
    a.accessPolicyWindow.missProp = miss;
    CK(cudaStreamSetAttribute(stream, cudaStreamAttributeAccessPolicyWindow, &a));
}
static void clear_window() {
    cudaStreamAttrValue a;
    memset(&a, 0, sizeof a);
    a.accessPolicyWindow.num_bytes = 0;
    CK(cudaStreamSetAttribute(stream, cudaStreamAttributeAccessPolicyWindow, &a));
}

struct PersistCfg {
    const char* name;
    int mode;          // kernel MODE
    bool carve;        // carve-out at the device's maximum
    int window;        // 0 none, 1 hitRatio carve/hot, 2 hitRatio carve/(2 hot)
    bool miss_normal;  // missProp normal instead of streaming
    bool reset_each;   // cuCtxResetPersistingL2Cache before every launch
};

static float median(std::vector<float> v) {
    std::sort(v.begin(), v.end());
    return v.empty() ? 0.f : v[v.size() / 2];
}

static void launch_hot(int mode, unsigned blocks, const uint4* s, unsigned nv, const uint4* hot, unsigned hv,
                       unsigned* out) {
    switch (mode) {
    case 0: hot_stream<0><<<blocks, 256, 0, stream>>>(s, nv, hot, hv, out); break;
    case 1: hot_stream<1><<<blocks, 256, 0, stream>>>(s, nv, hot, hv, out); break;
    case 2: hot_stream<2><<<blocks, 256, 0, stream>>>(s, nv, hot, hv, out); break;
    default: hot_stream<3><<<blocks, 256, 0, stream>>>(s, nv, hot, hv, out); break;
    }
    CK(cudaGetLastError());
}

// Times `runs` launches (after 2 untimed), median ms. With `reset_each`, the persisting lines
// are reset before every launch, outside the timed interval.
static float time_hot(const PersistCfg& c, unsigned blocks, const uint4* s, unsigned nv, const uint4* hot,
                      unsigned hv, unsigned* out, int runs) {
    cudaEvent_t a, b;
    CK(cudaEventCreate(&a));
    CK(cudaEventCreate(&b));
    std::vector<float> ms;
    for (int r = 0; r < runs + 2; r++) {
        if (c.reset_each) {
            CK(cudaStreamSynchronize(stream));
            CK(cudaCtxResetPersistingL2Cache());
        }
        CK(cudaEventRecord(a, stream));
        launch_hot(c.mode, blocks, s, nv, hot, hv, out);
        CK(cudaEventRecord(b, stream));
        CK(cudaEventSynchronize(b));
        float t;
        CK(cudaEventElapsedTime(&t, a, b));
        if (r >= 2) ms.push_back(t);
    }
    CK(cudaEventDestroy(a));
    CK(cudaEventDestroy(b));
    return median(ms);
}

static const PersistCfg PERSIST_CFGS[] = {
    {"plain", 0, false, 0, false, false},
    {"carve-out only", 0, true, 0, false, false},
    {"window r=carve/hot", 0, true, 1, false, false},
    {"window r=carve/2hot", 0, true, 2, false, false},
    {"window missProp normal", 0, true, 1, true, false},
    {"window, reset each run", 0, true, 1, false, true},
    {"hints evict_last/first", 1, false, 0, false, false},
    {"hints + carve-out", 1, true, 0, false, false},
    {"stream evict_first", 2, false, 0, false, false},
};

static void apply_cfg(const PersistCfg& c, const void* hot, size_t hot_bytes) {
    CK(cudaStreamSynchronize(stream));
    clear_window();
    CK(cudaCtxResetPersistingL2Cache());
    set_carve(c.carve ? carve_max : 0);
    if (c.window) {
        size_t win = std::min(hot_bytes, window_max);
        double r = (double)get_carve() / (double)hot_bytes / (c.window == 2 ? 2.0 : 1.0);
        set_window(hot, win, (float)std::min(1.0, r),
                   c.miss_normal ? cudaAccessPropertyNormal : cudaAccessPropertyStreaming);
    }
}

static int persist(int argc, char** argv) {
    size_t stream_bytes = 1024 * MiB;
    std::vector<size_t> hots = {4, 8, 12, 16, 20, 24, 28, 32, 40, 48, 64};
    int only_cfg = -1;
    if (argc > 0) only_cfg = atoi(argv[0]);  // `once`-style: one configuration, for ncu
    if (argc > 1) hots = {(size_t)atoi(argv[1])};
    int iv = 0;
    CK(cudaDeviceGetAttribute(&iv, cudaDevAttrMaxPersistingL2CacheSize, 0));
    carve_max = iv;
    CK(cudaDeviceGetAttribute(&iv, cudaDevAttrMaxAccessPolicyWindowSize, 0));
    window_max = iv;
    set_carve(carve_max);
    size_t granted = get_carve();
    printf("persist: L2 %d B (%.1f MiB); max carve-out %.2f MiB, granted %.2f MiB; max window %.1f MiB; stream %zu MiB\n",
           prop.l2CacheSize, prop.l2CacheSize / (double)MiB, carve_max / (double)MiB, granted / (double)MiB,
           window_max / (double)MiB, stream_bytes / MiB);
    size_t hot_max = *std::max_element(hots.begin(), hots.end()) * MiB;
    uint4 *s, *hot;
    unsigned* out;
    unsigned blocks = prop.multiProcessorCount * 8, threads = blocks * 256;
    CK(cudaMalloc(&s, stream_bytes));
    CK(cudaMalloc(&hot, hot_max));
    CK(cudaMalloc(&out, threads * 4));
    CK(cudaMemset(s, 1, stream_bytes));
    CK(cudaMemset(hot, 2, hot_max));
    unsigned nv = stream_bytes / 16;
    int runs = only_cfg >= 0 ? 1 : 7;
    // Baselines: the stream alone (1 GiB from DRAM), and a hot buffer that never hits (a second
    // 1 GiB buffer read once beside the stream: 2 GiB from DRAM).
    PersistCfg base{"stream only", 3, false, 0, false, false};
    apply_cfg(base, hot, 0);
    float t_stream = time_hot(base, blocks, s, nv, hot, 1, out, runs);
    uint4* s2;
    CK(cudaMalloc(&s2, stream_bytes));
    CK(cudaMemset(s2, 3, stream_bytes));
    PersistCfg plain = PERSIST_CFGS[0];
    float t_twice = time_hot(plain, blocks, s, nv, s2, nv, out, runs);
    CK(cudaFree(s2));
    printf("baseline: stream alone %.3f ms (%.0f GB/s DRAM); stream + a second 1 GiB (every hot read a miss) %.3f ms (%.0f GB/s)\n",
           t_stream, stream_bytes / t_stream / 1e6, t_twice, 2 * stream_bytes / t_twice / 1e6);
    printf("hit fraction h of the hot re-reads from the time t: h = (t_twice - t) / (t_twice - t_stream)\n");
    printf("%-8s", "hot MiB");
    int ncfg = sizeof PERSIST_CFGS / sizeof PERSIST_CFGS[0];
    for (int c = 0; c < ncfg; c++)
        if (only_cfg < 0 || only_cfg == c) printf(" | %-24s", PERSIST_CFGS[c].name);
    printf("\n");
    for (size_t h : hots) {
        size_t hb = h * MiB;
        unsigned hv = hb / 16;
        printf("%-8zu", h);
        for (int c = 0; c < ncfg; c++) {
            if (only_cfg >= 0 && only_cfg != c) continue;
            apply_cfg(PERSIST_CFGS[c], hot, hb);
            float t = time_hot(PERSIST_CFGS[c], blocks, s, nv, hot, hv, out, runs);
            float hit = (t_twice - t) / (t_twice - t_stream);
            printf(" | %.3f ms h=%5.2f       ", t, hit);
            fflush(stdout);
        }
        printf("\n");
    }
    CK(cudaStreamSynchronize(stream));
    clear_window();
    CK(cudaCtxResetPersistingL2Cache());
    set_carve(0);
    CK(cudaFree(s));
    CK(cudaFree(hot));
    CK(cudaFree(out));
    return 0;
}

// ------------------------------------------------------------------------ partition
// Lane 0 of the block on SM `sm` follows the chain from `start`: `warm` untimed hops, then
// `steps` hops each between two %clock64 reads (the loaded address is stored to shared memory
// before the second read, so the window closes when the load has returned); cycles to lat[i].
__global__ void chase_on_sm(uint64_t start, unsigned sm, unsigned warm, unsigned steps, unsigned* lat,
                            uint64_t* end) {
    extern __shared__ uint64_t scratch[];
    if (threadIdx.x != 0 || smid() != sm) return;
    uint64_t p = start;
    unsigned sa = (unsigned)__cvta_generic_to_shared(scratch);
    for (unsigned i = 0; i < warm; i++) asm volatile("ld.global.cg.u64 %0, [%0];" : "+l"(p));
    for (unsigned i = 0; i < steps; i++) {
        uint64_t t0, t1;
        asm volatile(
            "mov.u64 %1, %%clock64;\n\t"
            "ld.global.cg.u64 %0, [%0];\n\t"
            "st.shared.u64 [%3], %0;\n\t"
            "mov.u64 %2, %%clock64;"
            : "+l"(p), "=&l"(t0), "=&l"(t1)
            : "r"(sa)
            : "memory");
        if (lat) lat[i] = (unsigned)(t1 - t0);
    }
    *end = p;
}

__global__ void flush_read(const uint4* p, unsigned nv, unsigned* out) {
    unsigned g = blockIdx.x * blockDim.x + threadIdx.x, sum = 0;
    for (unsigned v = g; v < nv; v += gridDim.x * blockDim.x) {
        uint4 a = ld_cg4(p + v);
        sum += a.x ^ a.y ^ a.z ^ a.w;
    }
    out[g] = sum;
}

static uint4* flush_buf;
static unsigned* flush_out;
static unsigned flush_nv;
static int smem_one;

static void flush_l2() {
    flush_read<<<prop.multiProcessorCount * 4, 256, 0, stream>>>(flush_buf, flush_nv, flush_out);
    CK(cudaGetLastError());
}

// A random cycle through `lines` 128-byte lines of `buf`: element 0 of each line holds the
// address of the next line on the cycle. Returns the visit order (line indices from line 0).
static std::vector<unsigned> build_chain(uint64_t* dbuf, size_t lines, unsigned seed) {
    std::vector<unsigned> perm(lines);
    std::iota(perm.begin(), perm.end(), 0);
    std::mt19937 rng(seed);
    std::shuffle(perm.begin() + 1, perm.end(), rng);
    std::vector<uint64_t> img(lines * 16, 0);
    uint64_t base = (uint64_t)dbuf;
    for (size_t i = 0; i < lines; i++) img[(size_t)perm[i] * 16] = base + (uint64_t)perm[(i + 1) % lines] * 128;
    CK(cudaMemcpy(dbuf, img.data(), lines * 128, cudaMemcpyHostToDevice));
    return perm;
}

static void chase(uint64_t start, unsigned sm, unsigned warm, unsigned steps, unsigned* dlat, uint64_t* dend) {
    chase_on_sm<<<prop.multiProcessorCount, 32, smem_one, stream>>>(start, sm, warm, steps, dlat, dend);
    CK(cudaGetLastError());
}

struct Hist {
    std::vector<unsigned> v;
    void summary(const char* what, FILE* f = stdout) {
        std::vector<unsigned> s = v;
        std::sort(s.begin(), s.end());
        auto pct = [&](double q) { return s.empty() ? 0u : s[std::min(s.size() - 1, (size_t)(q * s.size()))]; };
        size_t b1 = 0, b2 = 0, b3 = 0, b4 = 0;
        for (unsigned x : s) {
            if (x < 340) b1++;
            else if (x < 420) b2++;
            else if (x < 580) b3++;
            else b4++;
        }
        double n = std::max<size_t>(1, s.size());
        fprintf(f, "%-34s n=%7zu p1 %4u p10 %4u p25 %4u p50 %4u p75 %4u p90 %4u p99 %4u | <340 %5.1f%% 340-420 %5.1f%% 420-580 %5.1f%% >=580 %5.1f%%\n",
                what, s.size(), pct(.01), pct(.1), pct(.25), pct(.5), pct(.75), pct(.9), pct(.99), 100 * b1 / n,
                100 * b2 / n, 100 * b3 / n, 100 * b4 / n);
    }
    // 10-cycle bins, the non-empty ones with at least 0.2% of the samples.
    void bins(FILE* f) {
        std::vector<size_t> h(200, 0);
        for (unsigned x : v) h[std::min<unsigned>(x / 10, 199)]++;
        fprintf(f, "    bins (cycles: share):");
        for (int i = 0; i < 200; i++)
            if (h[i] * 500 >= v.size()) fprintf(f, " %d:%.1f%%", i * 10, 100.0 * h[i] / v.size());
        fprintf(f, "\n");
    }
};

static void dump(const std::string& dir, const std::string& name, const std::vector<unsigned>& v) {
    if (dir.empty()) return;
    FILE* f = fopen((dir + "/" + name).c_str(), "wb");
    if (!f) return;
    fwrite(v.data(), 4, v.size(), f);
    fclose(f);
}

static int partition(int argc, char** argv) {
    std::string dir = argc > 0 ? argv[0] : "";
    int sms = prop.multiProcessorCount;
    // One block per SM: more than half of an SM's shared memory.
    smem_one = (int)(prop.sharedMemPerMultiprocessor / 2 + 1 - prop.reservedSharedMemPerBlock + 7) / 8 * 8;
    CK(cudaFuncSetAttribute(chase_on_sm, cudaFuncAttributeMaxDynamicSharedMemorySize, smem_one));
    size_t flush_bytes = 2 * (size_t)prop.l2CacheSize;
    CK(cudaMalloc(&flush_buf, flush_bytes));
    CK(cudaMemset(flush_buf, 0, flush_bytes));
    CK(cudaMalloc(&flush_out, sms * 4 * 256 * 4));
    flush_nv = flush_bytes / 16;
    size_t max_lines = 64 * MiB / 128;
    uint64_t* chain;
    unsigned* dlat;
    uint64_t* dend;
    CK(cudaMalloc(&chain, max_lines * 128));
    CK(cudaMalloc(&dlat, max_lines * 4));
    CK(cudaMalloc(&dend, 8));
    printf("partition: %d SMs, one block per SM (%d B shared), L2 %.1f MiB\n", sms, smem_one,
           prop.l2CacheSize / (double)MiB);

    // (1) One SM, by address: flush, a first pass brings the lines in, the second is timed.
    unsigned probe_sms[2] = {0, (unsigned)sms / 2};
    double sizes[] = {0.25, 1, 8, 16, 20, 24, 26, 28, 30, 32, 36, 40, 48, 64};
    printf("\n(1) one SM's chase, second pass, per-hop cycles by footprint (bands: near <340, 340-420, far 420-580, DRAM >=580)\n");
    for (unsigned sm : probe_sms) {
        for (double mib : sizes) {
            size_t lines = (size_t)(mib * MiB / 128);
            std::vector<unsigned> order = build_chain(chain, lines, 7);
            flush_l2();
            chase((uint64_t)chain, sm, lines, 0, nullptr, dend);  // first pass: brings the lines in
            chase((uint64_t)chain, sm, 0, lines, dlat, dend);     // second pass, timed
            CK(cudaStreamSynchronize(stream));
            Hist h;
            h.v.resize(lines);
            CK(cudaMemcpy(h.v.data(), dlat, lines * 4, cudaMemcpyDeviceToHost));
            char what[80];
            snprintf(what, sizeof what, "SM %3u %6.2f MiB", sm, mib);
            h.summary(what);
            if (mib == 16 || mib == 32 || mib == 48) h.bins(stdout);
            // A third pass, to see whether a far line moved near after the second touch.
            if (mib == 1 || mib == 32) {
                chase((uint64_t)chain, sm, 0, lines, dlat, dend);
                CK(cudaStreamSynchronize(stream));
                Hist h3;
                h3.v.resize(lines);
                CK(cudaMemcpy(h3.v.data(), dlat, lines * 4, cudaMemcpyDeviceToHost));
                snprintf(what, sizeof what, "SM %3u %6.2f MiB third pass", sm, mib);
                h3.summary(what);
                // Latency by line, second vs third pass: the same lines far twice?
                size_t both = 0, far2 = 0;
                for (size_t i = 0; i < lines; i++) {
                    if (h.v[i] >= 340) far2++;
                    if (h.v[i] >= 340 && h3.v[i] >= 340) both++;
                }
                printf("    lines >=340 cycles in pass 2: %zu; of those also in pass 3: %zu\n", far2, both);
                char name[64];
                snprintf(name, sizeof name, "one-sm%u-%gmib-pass2.u32", sm, mib);
                dump(dir, name, h.v);
                snprintf(name, sizeof name, "one-sm%u-%gmib-pass3.u32", sm, mib);
                dump(dir, name, h3.v);
                snprintf(name, sizeof name, "one-%gmib-order.u32", mib);
                dump(dir, name, order);
            }
        }
    }

    // (2) A fixed 2048-line set warmed by SM 0, then timed from each SM: first touch, second touch.
    size_t lines = 2048;
    std::vector<unsigned> order = build_chain(chain, lines, 0x12);
    std::vector<unsigned> first_all, second_all;
    printf("\n(2) 2048 lines (256 KiB) warmed by SM 0, timed from every SM: first touch from that SM, then again\n");
    printf("%-4s %-5s %-5s %-6s %-6s | %-5s %-5s %-6s\n", "SM", "p50", "p90", ">=340", ">=420", "p50'", "p90'", ">=340'");
    std::vector<std::vector<unsigned>> first(sms);
    for (int sm = 0; sm < sms; sm++) {
        flush_l2();
        chase((uint64_t)chain, 0, lines, 0, nullptr, dend);
        chase((uint64_t)chain, sm, 0, lines, dlat, dend);
        CK(cudaStreamSynchronize(stream));
        std::vector<unsigned> a(lines), b(lines);
        CK(cudaMemcpy(a.data(), dlat, lines * 4, cudaMemcpyDeviceToHost));
        chase((uint64_t)chain, sm, 0, lines, dlat, dend);
        CK(cudaStreamSynchronize(stream));
        CK(cudaMemcpy(b.data(), dlat, lines * 4, cudaMemcpyDeviceToHost));
        auto stat = [](std::vector<unsigned> v, double q) {
            std::sort(v.begin(), v.end());
            return v[(size_t)(q * v.size())];
        };
        auto share = [](const std::vector<unsigned>& v, unsigned cut) {
            return 100.0 * std::count_if(v.begin(), v.end(), [&](unsigned x) { return x >= cut; }) / v.size();
        };
        printf("%-4d %-5u %-5u %5.1f%% %5.1f%% | %-5u %-5u %5.1f%%\n", sm, stat(a, .5), stat(a, .9), share(a, 340),
               share(a, 420), stat(b, .5), stat(b, .9), share(b, 340));
        first_all.insert(first_all.end(), a.begin(), a.end());
        second_all.insert(second_all.end(), b.begin(), b.end());
        first[sm] = a;
    }
    Hist hf{first_all}, hs{second_all};
    hf.summary("all SMs, first touch");
    hf.bins(stdout);
    hs.summary("all SMs, second touch");
    hs.bins(stdout);
    // By line: over all SMs, how many SMs find each line slow (>= 340) on first touch.
    std::vector<unsigned> slow_sms(lines, 0);
    for (int sm = 0; sm < sms; sm++)
        for (size_t i = 0; i < lines; i++) slow_sms[i] += first[sm][i] >= 340;
    std::vector<unsigned> hist_slow(sms + 1, 0);
    for (unsigned c : slow_sms) hist_slow[c]++;
    printf("lines by how many SMs find them >= 340 cycles on first touch (count of SMs: lines):");
    for (int c = 0; c <= sms; c++)
        if (hist_slow[c]) printf(" %d:%u", c, hist_slow[c]);
    printf("\n");
    // SM pairs: agreement of their slow-line sets (do SMs form two groups?).
    printf("SM x SM agreement on which lines are slow (first touch), SMs 0..%d step 8 (percent of lines):\n", sms - 1);
    for (int a = 0; a < sms; a += 8) {
        printf("  %3d:", a);
        for (int b = 0; b < sms; b += 8) {
            size_t agree = 0;
            for (size_t i = 0; i < lines; i++) agree += (first[a][i] >= 340) == (first[b][i] >= 340);
            printf(" %3zu", 100 * agree / lines);
        }
        printf("\n");
    }
    dump(dir, "by-sm-first.u32", first_all);
    dump(dir, "by-sm-second.u32", second_all);
    dump(dir, "by-sm-order.u32", order);
    CK(cudaFree(chain));
    CK(cudaFree(dlat));
    CK(cudaFree(dend));
    CK(cudaFree(flush_buf));
    CK(cudaFree(flush_out));
    return 0;
}

// ------------------------------------------------------------------------ bandwidth
// The suite's method (own code): 1024 threads, 8-byte loads, 64 per thread as 32 pairs
// (x[i], x[i + 1024]), block b reads region b % regions: the 16 KiB chunks at chunk index
// regions * i + region, i = 0..31. CG: .cg loads instead of the default (through L1).
template <bool CG>
__global__ void suite_read(double* out, const double* __restrict__ x, int regions,
                                                   BlockTime* rec, int nrec) {
    BT_START
    double sum = 0;
#pragma unroll
    for (int i = 0; i < 32; i++) {
        size_t idx = ((size_t)blockDim.x * regions * i + (size_t)(blockIdx.x % regions) * 1024) * 2 + threadIdx.x;
        double a, b;
        if (CG) {
            a = __ldcg(x + idx);
            b = __ldcg(x + idx + 1024);
        } else {
            a = x[idx];
            b = x[idx + 1024];
        }
        sum += a * b;
    }
    if (sum == 23.12) out[threadIdx.x] = sum;  // never true: keeps the loads
    BT_END(rec, nrec)
}

// The lab's method: grid-stride over the footprint with 16-byte .cg loads, `passes` times.
// ROTATE: each pass starts `pass * 97` vectors further, so every SM reads every line over the
// passes (the lab's kernel reads the same lines from the same SM every pass).
template <bool ROTATE>
__global__ void lab_read(const uint4* x, unsigned nv, unsigned passes, unsigned* out, BlockTime* rec, int nrec) {
    BT_START
    unsigned g = blockIdx.x * blockDim.x + threadIdx.x, T = gridDim.x * blockDim.x, sum = 0;
    for (unsigned p = 0; p < passes; p++) {
        unsigned off = ROTATE ? (p * 97u * 1024u) % nv : 0;
        for (unsigned v = g; v < nv; v += T) {
            unsigned w = v + off;
            if (w >= nv) w -= nv;
            uint4 a = ld_cg4(x + w);
            sum += a.x ^ a.y ^ a.z ^ a.w;
        }
    }
    out[g] = sum;
    BT_END(rec, nrec)
}

// The lab's loads with the suite's work split: block b reads region b % regions (32 chunks of
// 16 KiB at chunk index regions * i + region), 256 threads, 16-byte .cg loads, 4 per chunk.
__global__ void lab_loads_suite_split(const uint4* x, int regions, unsigned* out, BlockTime* rec, int nrec) {
    BT_START
    unsigned sum = 0;
#pragma unroll 8
    for (int i = 0; i < 32; i++) {
        const uint4* c = x + ((size_t)regions * i + blockIdx.x % regions) * 1024;
#pragma unroll
        for (int j = 0; j < 4; j++) {
            uint4 a = ld_cg4(c + j * 256 + threadIdx.x);
            sum += a.x ^ a.y ^ a.z ^ a.w;
        }
    }
    if (sum == 0x12345678) out[threadIdx.x] = sum;
    BT_END(rec, nrec)
}

struct BwResult {
    float min_ms, med_ms;
    double ghz;                   // sum of block cycles / sum of block ns
    double dur_med, dur_max;      // block durations, us
};

static BlockTime* drec;
static const int NREC = 8192;

template <typename F>
static BwResult time_kernel(F launch, int runs) {
    cudaEvent_t a, b;
    CK(cudaEventCreate(&a));
    CK(cudaEventCreate(&b));
    std::vector<float> ms;
    BwResult r{};
    for (int i = 0; i < runs + 1; i++) {
        CK(cudaMemsetAsync(drec, 0, NREC * sizeof(BlockTime), stream));
        CK(cudaEventRecord(a, stream));
        launch();
        CK(cudaGetLastError());
        CK(cudaEventRecord(b, stream));
        CK(cudaEventSynchronize(b));
        float t;
        CK(cudaEventElapsedTime(&t, a, b));
        if (i > 0) ms.push_back(t);
    }
    std::vector<BlockTime> h(NREC);
    CK(cudaMemcpy(h.data(), drec, NREC * sizeof(BlockTime), cudaMemcpyDeviceToHost));
    double cyc = 0, ns = 0;
    std::vector<double> dur;
    for (auto& x : h)
        if (x.t1 > x.t0) {
            cyc += x.c1 - x.c0;
            ns += x.t1 - x.t0;
            dur.push_back((x.t1 - x.t0) / 1e3);
        }
    std::sort(dur.begin(), dur.end());
    r.ghz = ns > 0 ? cyc / ns : 0;
    r.dur_med = dur.empty() ? 0 : dur[dur.size() / 2];
    r.dur_max = dur.empty() ? 0 : dur.back();
    r.min_ms = *std::min_element(ms.begin(), ms.end());
    r.med_ms = median(ms);
    CK(cudaEventDestroy(a));
    CK(cudaEventDestroy(b));
    return r;
}

static void print_bw(const char* name, double footprint, double bytes, const BwResult& r) {
    printf("%-44s %7.2f MiB  %8.0f GB/s (min)  %8.0f GB/s (median)  SM clock %.2f GHz  block us median %.1f max %.1f\n",
           name, footprint / MiB, bytes / r.min_ms / 1e6, bytes / r.med_ms / 1e6, r.ghz, r.dur_med, r.dur_max);
    fflush(stdout);
}

static int bandwidth(int argc, char** argv) {
    int sms = prop.multiProcessorCount;
    size_t most = 64 * MiB;
    void* buf;
    unsigned* out;
    CK(cudaMalloc(&buf, most + MiB));
    CK(cudaMemset(buf, 0, most + MiB));
    CK(cudaMalloc(&out, 64 * 1024 * 1024));
    CK(cudaMalloc(&drec, NREC * sizeof(BlockTime)));
    std::vector<int> region_counts = {4, 8, 16, 30, 45, 60, 80, 100};
    if (argc > 0) region_counts = {atoi(argv[0])};
    const int suite_blocks = 200000;
    int runs = 11;
    printf("bandwidth: %d SMs; suite = RRZE gpu-l2-cache method (own code), lab = read_cg method\n", sms);
    {
        int a = 0, b = 0, c = 0, d = 0;
        CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&a, suite_read<false>, 1024, 0));
        CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&b, suite_read<true>, 1024, 0));
        CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&c, lab_loads_suite_split, 256, 0));
        CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&d, lab_read<false>, 256, 0));
        printf("blocks/SM (driver): suite %d x 1024, suite .cg %d x 1024, lab split %d x 256, lab read_cg %d x 256\n", a, b, c, d);
    }
    for (int regions : region_counts) {
        size_t fp = (size_t)regions * 512 * 1024;  // footprint
        if (fp > most) continue;
        double suite_bytes = (double)suite_blocks * 512 * 1024;
        auto r = time_kernel([&] { suite_read<false><<<suite_blocks, 1024, 0, stream>>>((double*)out, (double*)buf, regions, drec, NREC); }, runs);
        print_bw("suite: 8 B default loads, 1024 thr, 200k blk", fp, suite_bytes, r);
        r = time_kernel([&] { suite_read<true><<<suite_blocks, 1024, 0, stream>>>((double*)out, (double*)buf, regions, drec, NREC); }, runs);
        print_bw("suite with .cg loads (no L1)", fp, suite_bytes, r);
        r = time_kernel([&] { lab_loads_suite_split<<<suite_blocks, 256, 0, stream>>>((uint4*)buf, regions, out, drec, NREC); }, runs);
        print_bw("lab 16 B .cg loads, 256 thr, suite's split", fp, suite_bytes, r);
        unsigned nv = fp / 16, passes = 256;
        double lab_bytes = (double)fp * passes;
        for (int bps : {4, 8}) {
            r = time_kernel([&] { lab_read<false><<<sms * bps, 256, 0, stream>>>((uint4*)buf, nv, passes, out, drec, NREC); }, runs);
            char name[64];
            snprintf(name, sizeof name, "lab read_cg, %d blk/SM, same lines per SM", bps);
            print_bw(name, fp, lab_bytes, r);
            r = time_kernel([&] { lab_read<true><<<sms * bps, 256, 0, stream>>>((uint4*)buf, nv, passes, out, drec, NREC); }, runs);
            snprintf(name, sizeof name, "lab read_cg, %d blk/SM, rotating lines", bps);
            print_bw(name, fp, lab_bytes, r);
        }
        // The lab's kernel run long (2048 passes): is the short run's ramp-up and tail the gap?
        r = time_kernel([&] { lab_read<false><<<sms * 8, 256, 0, stream>>>((uint4*)buf, nv, 2048, out, drec, NREC); }, 3);
        print_bw("lab read_cg, 8 blk/SM, 2048 passes", fp, (double)fp * 2048, r);
        printf("\n");
    }
    return 0;
}

// `once NAME REGIONS`: one launch of one bandwidth kernel, for ncu.
static int once(int argc, char** argv) {
    if (argc < 2) return 2;
    std::string k = argv[0];
    int regions = atoi(argv[1]);
    size_t fp = (size_t)regions * 512 * 1024;
    void* buf;
    unsigned* out;
    CK(cudaMalloc(&buf, fp + MiB));
    CK(cudaMemset(buf, 0, fp + MiB));
    CK(cudaMalloc(&out, 64 * 1024 * 1024));
    CK(cudaMalloc(&drec, NREC * sizeof(BlockTime)));
    int sms = prop.multiProcessorCount;
    for (int i = 0; i < 2; i++) {
        if (k == "suite") suite_read<false><<<200000, 1024, 0, stream>>>((double*)out, (double*)buf, regions, drec, NREC);
        else if (k == "suite_cg") suite_read<true><<<200000, 1024, 0, stream>>>((double*)out, (double*)buf, regions, drec, NREC);
        else if (k == "lab_split") lab_loads_suite_split<<<200000, 256, 0, stream>>>((uint4*)buf, regions, out, drec, NREC);
        else lab_read<false><<<sms * 8, 256, 0, stream>>>((uint4*)buf, fp / 16, 256, out, drec, NREC);
        CK(cudaGetLastError());
    }
    CK(cudaStreamSynchronize(stream));
    return 0;
}

int main(int argc, char** argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s persist [CFG [HOT_MIB]] | partition [DIR] | bandwidth [REGIONS] | once KERNEL REGIONS\n", argv[0]);
        return 2;
    }
    CK(cudaGetDeviceProperties(&prop, 0));
    CK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    printf("device: %s, cc %d.%d, %d SMs, L2 %d B\n", prop.name, prop.major, prop.minor, prop.multiProcessorCount,
           prop.l2CacheSize);
    std::string m = argv[1];
    int r = m == "persist" ? persist(argc - 2, argv + 2)
            : m == "partition" ? partition(argc - 2, argv + 2)
            : m == "bandwidth" ? bandwidth(argc - 2, argv + 2)
            : m == "once" ? once(argc - 2, argv + 2)
                          : 2;
    CK(cudaDeviceSynchronize());
    printf("status: %s\n", r == 0 ? "ok" : "bad arguments");
    return r;
}
