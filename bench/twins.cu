// CUDA C++ twins of the lab's Rust kernels (kernels-gpu/src): same names, same parameters, same
// algorithm, tile and launch shape, written the way a CUDA C++ programmer would (int-free
// unsigned index math, no __restrict__: the Rust kernels take raw pointers that may alias).
// `memlab bench --twins twins.cubin` loads this file's cubin next to the Rust PTX and times each
// pair alternately. Build: nvcc -O3 -gencode=arch=compute_90a,code=sm_90a -cubin -o twins.cubin twins.cu
// (on a cc 9.0 GPU; the tensor ladder's twins need the arch-specific sm_90a, elsewhere -arch=native)

#include <cuda_bf16.h>

#define DEV __device__ __forceinline__
#define KERNEL extern "C" __global__

// ---------------------------------------------------------------- transpose.rs
// Block 32 x 8, one 32 x 32 tile per block, 4 elements per thread (rows ty, ty+8, ty+16, ty+24).
// One-dimensional grids of tiles, tile rows after tile rows: grid y would stop at 65535 tile rows.

// This block's tile (bx, by) with `across` tiles per row of tiles (transpose_any.rs's tile_block).
DEV uint2 tile_block(unsigned across) { return make_uint2(blockIdx.x % across, blockIdx.x / across); }

// ceil((len + extra) / tile) without wrapping (contracts' transpose::tiles).
DEV unsigned tiles(unsigned len, unsigned extra, unsigned tile) {
    return (unsigned)(((unsigned long long)len + extra + tile - 1) / tile);
}

// The largest shift of a row of len floats: 8 - gcd(len, 8) (contracts' transpose::max_shift).
DEV unsigned max_shift(unsigned len) { return 8 - (1u << min((unsigned)(__ffs(len) - 1), 3u)); }

// The body of copy and transpose_naive: 4 coalesced loads, then 4 stores to out[dest(x, y)]. The
// tile's columns start `shift` before the block's (below 0 x wraps past cols and is skipped).
template <bool TRANSPOSE>
DEV void move_via_registers(const float* in, float* out, unsigned rows, unsigned cols, uint2 b, unsigned shift) {
    unsigned x = b.x * 32 + threadIdx.x - shift, y = b.y * 32 + threadIdx.y;
    float v[4];
#pragma unroll
    for (unsigned j = 0; j < 4; j++)
        if (x < cols && y + 8 * j < rows) v[j] = in[(size_t)(y + 8 * j) * cols + x];
#pragma unroll
    for (unsigned j = 0; j < 4; j++)
        if (x < cols && y + 8 * j < rows)
            out[TRANSPOSE ? (size_t)x * rows + y + 8 * j : (size_t)(y + 8 * j) * cols + x] = v[j];
}

// Row y's tiles shifted back by its misalignment (y * cols) mod 8 floats: whole-sector warps.
DEV void copy_run(const float* in, float* out, unsigned n);  // transpose_thin.rs

// ceil((cols + max shift) / 32) x ceil(rows / 32) blocks; a thin matrix (a side of 1-16) as
// one run, ceil(rows * cols / 4096) blocks.
KERNEL void copy(const float* in, float* out, unsigned rows, unsigned cols) {
    if (min(rows, cols) >= 1 && min(rows, cols) <= 16) {
        copy_run(in, out, rows * cols);
        return;
    }
    uint2 b = tile_block(tiles(cols, max_shift(cols), 32));
    move_via_registers<false>(in, out, rows, cols, b, (b.y * 32 + threadIdx.y) * cols % 8);
}

KERNEL void transpose_naive(const float* in, float* out, unsigned rows, unsigned cols) {
    move_via_registers<true>(in, out, rows, cols, tile_block(tiles(cols, 0, 32)), 0);
}

template <unsigned PITCH>
DEV void transpose_via_tile(const float* in, float* out, unsigned rows, unsigned cols) {
    extern __shared__ float tile[];
    unsigned tx = threadIdx.x, ty = threadIdx.y;
    uint2 b = tile_block(tiles(cols, 0, 32));
    unsigned x = b.x * 32 + tx, y = b.y * 32 + ty;
#pragma unroll
    for (unsigned j = 0; j < 32; j += 8)
        if (x < cols && y + j < rows) tile[(ty + j) * PITCH + tx] = in[(size_t)(y + j) * cols + x];
    __syncthreads();
    x = b.y * 32 + tx;
    y = b.x * 32 + ty;
#pragma unroll
    for (unsigned j = 0; j < 32; j += 8)
        if (x < rows && y + j < cols) out[(size_t)(y + j) * rows + x] = tile[tx * PITCH + ty + j];
}

KERNEL void transpose_tiled(const float* in, float* out, unsigned rows, unsigned cols) {
    transpose_via_tile<32>(in, out, rows, cols);
}

DEV void aligned_stores(const float* in, float* out, unsigned rows, unsigned cols);  // transpose_any.rs

// Output rows that are not whole sectors take transpose_aligned_stores' body.
KERNEL void transpose_padded(const float* in, float* out, unsigned rows, unsigned cols) {
    if (rows % 8 == 0)
        transpose_via_tile<33>(in, out, rows, cols);
    else
        aligned_stores(in, out, rows, cols);
}

// w at out[i ..+4]: one float4 store when vec, else each float whose inside(q) holds.
template <typename Inside>
DEV void store4(float* out, unsigned i, float4 w, bool vec, Inside inside) {
    if (vec) {
        *reinterpret_cast<float4*>(out + i) = w;
    } else {
        const float* ws = &w.x;
#pragma unroll
        for (unsigned q = 0; q < 4; q++)
            if (inside(q)) out[i + q] = ws[q];
    }
}

// Rows that are whole vectors and sectors.
DEV void vectorized_aligned(const float* in, float* out, unsigned rows, unsigned cols) {
    extern __shared__ float tile[];  // 64 x 65; block 16 x 16, 4 float4 per thread
    uint2 b = tile_block(tiles(cols, 0, 64));
    unsigned tx = threadIdx.x, ty = threadIdx.y, r0 = b.y * 64, c0 = b.x * 64;
    bool vec = r0 + 64 <= rows && c0 + 64 <= cols;
    float4 v[4];
#pragma unroll
    for (unsigned i = 0; i < 4; i++) {
        unsigned r = r0 + ty + 16 * i, c = c0 + 4 * tx;
        if (vec) {
            v[i] = *reinterpret_cast<const float4*>(in + r * cols + c);
        } else {
            float* w = &v[i].x;
#pragma unroll
            for (unsigned q = 0; q < 4; q++) w[q] = r < rows && c + q < cols ? in[r * cols + c + q] : 0.0f;
        }
    }
#pragma unroll
    for (unsigned i = 0; i < 4; i++) {
        float* base = tile + (ty + 16 * i) * 65 + 4 * tx;
        base[0] = v[i].x;
        base[1] = v[i].y;
        base[2] = v[i].z;
        base[3] = v[i].w;
    }
    __syncthreads();
#pragma unroll
    for (unsigned i = 0; i < 4; i++) {
        unsigned r = c0 + ty + 16 * i, c = r0 + 4 * tx;
        float4 w;
        w.x = tile[(4 * tx + 0) * 65 + ty + 16 * i];
        w.y = tile[(4 * tx + 1) * 65 + ty + 16 * i];
        w.z = tile[(4 * tx + 2) * 65 + ty + 16 * i];
        w.w = tile[(4 * tx + 3) * 65 + ty + 16 * i];
        store4(out, r * rows + c, w, vec, [&](unsigned q) { return r < cols && c + q < rows; });
    }
}

// Rows that are not: 18 coalesced scalar loads per thread stage input rows r0 - pre .. r0 + 64
// (a 72 x 65 tile); output row y starts e(y) = (y * rows) mod 8 floats early, so its float4
// stores are aligned and cover whole sectors.
DEV void vectorized_shifted(const float* in, float* out, unsigned rows, unsigned cols) {
    extern __shared__ float tile[];
    uint2 b = tile_block(tiles(cols, 0, 64));
    unsigned tx = threadIdx.x, ty = threadIdx.y, r0 = b.y * 64, c0 = b.x * 64;
    unsigned pre = rows % 8 == 0 ? 0 : 8, t = ty * 16 + tx;
    unsigned first = r0 + t / 64 - pre, c = c0 + t % 64;
    unsigned end = c < cols ? min(rows, r0 + 64) : 0;
    float v[18];
#pragma unroll
    for (unsigned s = 0; s < 18; s++) {
        unsigned r = first + 4 * s;
        v[s] = r < end ? in[r * cols + c] : 0.0f;
    }
#pragma unroll
    for (unsigned s = 0; s < 18; s++) tile[(4 * s + t / 64) * 65 + t % 64] = v[s];
    __syncthreads();
#pragma unroll
    for (unsigned i = 0; i < 4; i++) {
        unsigned y = c0 + ty + 16 * i, e = y * rows % 8, x = r0 + 4 * tx - e;
        const float* col = tile + (4 * tx + pre - e) * 65 + ty + 16 * i;
        float4 w = make_float4(col[0], col[65], col[130], col[195]);
        bool vec = y < cols && x < rows && rows - x >= 4;
        store4(out, y * rows + x, w, vec, [&](unsigned q) { return y < cols && x + q < rows; });
    }
}

KERNEL void transpose_vectorized(const float* in, float* out, unsigned rows, unsigned cols) {
    if (rows % 8 == 0 && cols % 4 == 0)
        vectorized_aligned(in, out, rows, cols);
    else
        vectorized_shifted(in, out, rows, cols);
}

// ---------------------------------------------------------------- matmul.rs

KERNEL void matmul_naive(const float* a, const float* b, float* c, unsigned m, unsigned n, unsigned k) {
    unsigned row = blockIdx.y * 16 + threadIdx.y, col = blockIdx.x * 16 + threadIdx.x;
    if (row >= m || col >= n) return;
    float acc = 0.0f;
    for (unsigned i = 0; i < k; i++) acc = fmaf(a[row * k + i], b[i * n + col], acc);
    c[row * n + col] = acc;
}

template <unsigned T>
DEV void matmul_tiled(const float* a, const float* b, float* c, unsigned m, unsigned n, unsigned k) {
    extern __shared__ float smem[];
    float* tile_a = smem;
    float* tile_b = smem + T * T;
    unsigned tx = threadIdx.x, ty = threadIdx.y;
    unsigned row = blockIdx.y * T + ty, col = blockIdx.x * T + tx;
    float acc = 0.0f;
    for (unsigned k0 = 0; k0 < k; k0 += T) {
        tile_a[ty * T + tx] = row < m && k0 + tx < k ? a[row * k + k0 + tx] : 0.0f;
        tile_b[ty * T + tx] = k0 + ty < k && col < n ? b[(k0 + ty) * n + col] : 0.0f;
        __syncthreads();
#pragma unroll
        for (unsigned i = 0; i < T; i++) acc = fmaf(tile_a[ty * T + i], tile_b[i * T + tx], acc);
        __syncthreads();
    }
    if (row < m && col < n) c[row * n + col] = acc;
}

KERNEL void matmul_tiled_16(const float* a, const float* b, float* c, unsigned m, unsigned n, unsigned k) {
    matmul_tiled<16>(a, b, c, m, n, k);
}

KERNEL void matmul_tiled_32(const float* a, const float* b, float* c, unsigned m, unsigned n, unsigned k) {
    matmul_tiled<32>(a, b, c, m, n, k);
}

// ---------------------------------------------------------------- probes.rs

KERNEL void strided_read(const unsigned* in, unsigned* partial, unsigned threads, unsigned stride) {
    unsigned g = blockIdx.x * blockDim.x + threadIdx.x;
    if (g >= threads) return;
    unsigned sum = 0;
#pragma unroll
    for (unsigned r = 0; r < 8; r++) sum += in[(size_t)(g + r * threads) * stride];
    partial[g] = sum;
}

KERNEL void shared_bank_probe(unsigned* out, unsigned stride, unsigned iters) {
    extern __shared__ unsigned words[];
    for (unsigned w = threadIdx.x; w < 4096; w += blockDim.x) words[w] = w * 0x9E3779B9u;
    __syncthreads();
    const unsigned* lane_words = words + (threadIdx.x % 32) * stride;
    unsigned sum = 0, offset = 0;
    for (unsigned s = 0; s < iters / 8; s++) {
        const unsigned* step = lane_words + offset;
#pragma unroll
        for (unsigned u = 0; u < 8; u++) sum += step[u * 32];
        offset = (offset + 8 * 32) & 2047;
    }
    out[blockIdx.x * blockDim.x + threadIdx.x] = sum;
}

KERNEL void register_pressure(const float* in, float* out, unsigned threads, unsigned iters) {
    unsigned g = blockIdx.x * blockDim.x + threadIdx.x;
    if (g >= threads) return;
    float acc[128];
#pragma unroll
    for (int j = 0; j < 128; j++) acc[j] = 0.0f;
    for (unsigned i = 0; i < iters; i++) {
        float x = in[g + (size_t)i * threads];
#pragma unroll
        for (int j = 0; j < 128; j++) acc[j] = fmaf(acc[j], x, (float)j);
    }
    float sum = 0.0f;
#pragma unroll
    for (int j = 0; j < 128; j++) sum += acc[j];
    out[g] = sum;
}

// ---------------------------------------------------------------- sgemm/scalar.rs

DEV float a_or_zero(const float* a, unsigned m, unsigned k, unsigned r, unsigned c) {
    return r < m && c < k ? a[r * k + c] : 0.0f;
}

template <unsigned BM, unsigned BN, unsigned BK, unsigned TM, unsigned TN, unsigned THREADS>
DEV void register_blocked(const float* a, const float* b, float* c, unsigned m, unsigned n, unsigned k) {
    extern __shared__ float smem[];
    float* a_tile = smem;
    float* b_tile = smem + BM * BK;
    unsigned t = threadIdx.x, row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
    unsigned thread_row = t / (BN / TN) * TM, thread_col = t % (BN / TN) * TN;
    float acc[TM][TN] = {};
    for (unsigned k0 = 0; k0 < k; k0 += BK) {
#pragma unroll
        for (unsigned q = 0; q < BM * BK / THREADS; q++) {
            unsigned e = t + q * THREADS;
            a_tile[e] = a_or_zero(a, m, k, row0 + e / BK, k0 + e % BK);
        }
#pragma unroll
        for (unsigned q = 0; q < BK * BN / THREADS; q++) {
            unsigned e = t + q * THREADS;
            b_tile[e] = a_or_zero(b, k, n, k0 + e / BN, col0 + e % BN);
        }
        __syncthreads();
#pragma unroll
        for (unsigned d = 0; d < BK; d++) {
            float bv[TN];
#pragma unroll
            for (unsigned j = 0; j < TN; j++) bv[j] = b_tile[d * BN + thread_col + j];
#pragma unroll
            for (unsigned i = 0; i < TM; i++) {
                float av = a_tile[(thread_row + i) * BK + d];
#pragma unroll
                for (unsigned j = 0; j < TN; j++) acc[i][j] = fmaf(av, bv[j], acc[i][j]);
            }
        }
        __syncthreads();
    }
#pragma unroll
    for (unsigned i = 0; i < TM; i++)
#pragma unroll
        for (unsigned j = 0; j < TN; j++) {
            unsigned r = row0 + thread_row + i, cc = col0 + thread_col + j;
            if (r < m && cc < n) c[r * n + cc] = acc[i][j];
        }
}

KERNEL void sgemm_2_register_1d(const float* a, const float* b, float* c, unsigned m, unsigned n, unsigned k) {
    register_blocked<64, 64, 8, 8, 1, 512>(a, b, c, m, n, k);
}

KERNEL void sgemm_3_register_2d(const float* a, const float* b, float* c, unsigned m, unsigned n, unsigned k) {
    register_blocked<128, 128, 8, 8, 8, 256>(a, b, c, m, n, k);
}

// ---------------------------------------------------------------- sgemm/vector.rs

enum Layout { Contiguous, Split, Warp };

struct Place { unsigned rows[2], cols[2]; };

template <Layout L>
DEV Place place(unsigned t) {
    Place p;
    if (L == Contiguous) {
        unsigned r = 8 * (t / 16), c = 8 * (t % 16);
        p = {{r, r + 4}, {c, c + 4}};
    } else if (L == Split) {
        unsigned r = 4 * (t / 16), c = 4 * (t % 16);
        p = {{r, r + 64}, {c, c + 64}};
    } else {
        unsigned w = t / 32, l = t % 32;
        unsigned r = 32 * (w / 2) + 4 * (l / 8), c = 64 * (w % 2) + 4 * (l % 8);
        p = {{r, r + 16}, {c, c + 32}};
    }
    return p;
}

struct Staged { float4 a, b; };

// Thread t's 4 floats of A for depth k0 (row t / 2, columns 4 (t % 2) ..), zeros outside.
DEV float4 fetch_a(const float* a, unsigned m, unsigned k, unsigned row0, bool vec, unsigned t, unsigned k0) {
    unsigned ar = row0 + t / 2, ac = k0 + 4 * (t % 2);
    if (vec && k0 + 8 <= k) return *reinterpret_cast<const float4*>(a + ar * k + ac);
    return make_float4(a_or_zero(a, m, k, ar, ac), a_or_zero(a, m, k, ar, ac + 1), a_or_zero(a, m, k, ar, ac + 2),
                       a_or_zero(a, m, k, ar, ac + 3));
}

// A and B in one branch, as in the Rust: built from fetch_a and a B twin, rungs 4-6 compile to
// different SASS (nvcc 13.5, sm_90), so the kernels measured would change.
DEV Staged fetch(const float* a, const float* b, unsigned m, unsigned n, unsigned k, unsigned row0, unsigned col0,
                 bool vec, unsigned t, unsigned k0) {
    unsigned ar = row0 + t / 2, ac = k0 + 4 * (t % 2), br = k0 + t / 32, bc = col0 + 4 * (t % 32);
    Staged s;
    if (vec && k0 + 8 <= k) {
        s.a = *reinterpret_cast<const float4*>(a + ar * k + ac);
        s.b = *reinterpret_cast<const float4*>(b + br * n + bc);
    } else {
        s.a = make_float4(a_or_zero(a, m, k, ar, ac), a_or_zero(a, m, k, ar, ac + 1), a_or_zero(a, m, k, ar, ac + 2),
                          a_or_zero(a, m, k, ar, ac + 3));
        s.b = make_float4(a_or_zero(b, k, n, br, bc), a_or_zero(b, k, n, br, bc + 1), a_or_zero(b, k, n, br, bc + 2),
                          a_or_zero(b, k, n, br, bc + 3));
    }
    return s;
}

// Thread t's 4 floats of A to their transposed places.
template <unsigned A_PITCH>
DEV void put_a(float* stage, unsigned t, float4 a) {
    unsigned ar = t / 2, ac = 4 * (t % 2);
    stage[(ac + 0) * A_PITCH + ar] = a.x;
    stage[(ac + 1) * A_PITCH + ar] = a.y;
    stage[(ac + 2) * A_PITCH + ar] = a.z;
    stage[(ac + 3) * A_PITCH + ar] = a.w;
}

// Where thread t's 4 floats of B go (row t / 32, columns 4 (t % 32) ..).
template <unsigned A_PITCH>
DEV float* b_slot(float* stage, unsigned t) {
    return stage + 8 * A_PITCH + (t / 32) * 128 + 4 * (t % 32);
}

template <unsigned A_PITCH>
DEV void put(float* stage, unsigned t, Staged s) {
    put_a<A_PITCH>(stage, t, s.a);
    *reinterpret_cast<float4*>(b_slot<A_PITCH>(stage, t)) = s.b;
}

template <unsigned A_PITCH>
DEV void multiply(const float* stage, Place p, float (&acc)[8][8]) {
    const float* as = stage;
    const float* bs = stage + 8 * A_PITCH;
#pragma unroll
    for (unsigned d = 0; d < 8; d++) {
        float4 a0 = *reinterpret_cast<const float4*>(as + d * A_PITCH + p.rows[0]);
        float4 a1 = *reinterpret_cast<const float4*>(as + d * A_PITCH + p.rows[1]);
        float4 b0 = *reinterpret_cast<const float4*>(bs + d * 128 + p.cols[0]);
        float4 b1 = *reinterpret_cast<const float4*>(bs + d * 128 + p.cols[1]);
        float av[8] = {a0.x, a0.y, a0.z, a0.w, a1.x, a1.y, a1.z, a1.w};
        float bv[8] = {b0.x, b0.y, b0.z, b0.w, b1.x, b1.y, b1.z, b1.w};
#pragma unroll
        for (int i = 0; i < 8; i++)
#pragma unroll
            for (int j = 0; j < 8; j++) acc[i][j] = fmaf(av[i], bv[j], acc[i][j]);
    }
}

// The thread's 8 x 8 results: float4 stores inside the matrix, guarded scalars on an edge tile.
DEV void store_results(float* c, unsigned m, unsigned n, unsigned row0, unsigned col0, bool vec, Place p,
                       const float (&acc)[8][8]) {
#pragma unroll
    for (int i = 0; i < 8; i++) {
        unsigned row = row0 + p.rows[i / 4] + i % 4;
#pragma unroll
        for (int h = 0; h < 2; h++) {
            unsigned col = col0 + p.cols[h];
            if (vec) {
                *reinterpret_cast<float4*>(c + row * n + col) =
                    make_float4(acc[i][4 * h], acc[i][4 * h + 1], acc[i][4 * h + 2], acc[i][4 * h + 3]);
            } else {
#pragma unroll
                for (int q = 0; q < 4; q++)
                    if (row < m && col + q < n) c[row * n + col + q] = acc[i][4 * h + q];
            }
        }
    }
}

template <unsigned A_PITCH, unsigned STAGES, Layout L>
DEV void tiled_128(const float* a, const float* b, float* c, unsigned m, unsigned n, unsigned k) {
    extern __shared__ __align__(16) float smem[];
    constexpr unsigned FLOATS = 8 * (A_PITCH + 128);
    unsigned t = threadIdx.x, row0 = blockIdx.y * 128, col0 = blockIdx.x * 128;
    bool vec = k % 4 == 0 && n % 4 == 0 && row0 + 128 <= m && col0 + 128 <= n;
    Place p = place<L>(t);
    float acc[8][8] = {};
    unsigned steps = (k + 7) / 8;
    if (STAGES == 1) {
        for (unsigned s = 0; s < steps; s++) {
            put<A_PITCH>(smem, t, fetch(a, b, m, n, k, row0, col0, vec, t, s * 8));
            __syncthreads();
            multiply<A_PITCH>(smem, p, acc);
            __syncthreads();
        }
    } else {
        put<A_PITCH>(smem, t, fetch(a, b, m, n, k, row0, col0, vec, t, 0));
        __syncthreads();
        for (unsigned s = 0; s < steps; s++) {
            Staged next;
            bool more = s + 1 < steps;
            if (more) next = fetch(a, b, m, n, k, row0, col0, vec, t, (s + 1) * 8);
            multiply<A_PITCH>(smem + (s % 2) * FLOATS, p, acc);
            if (more) put<A_PITCH>(smem + ((s + 1) % 2) * FLOATS, t, next);
            __syncthreads();
        }
    }
    store_results(c, m, n, row0, col0, vec, p, acc);
}

KERNEL void sgemm_4_vectorized(const float* a, const float* b, float* c, unsigned m, unsigned n, unsigned k) {
    tiled_128<128, 1, Contiguous>(a, b, c, m, n, k);
}

KERNEL void sgemm_5_conflict_free(const float* a, const float* b, float* c, unsigned m, unsigned n, unsigned k) {
    tiled_128<132, 1, Split>(a, b, c, m, n, k);
}

KERNEL void sgemm_6_double_buffered(const float* a, const float* b, float* c, unsigned m, unsigned n,
                                        unsigned k) {
    tiled_128<132, 2, Warp>(a, b, c, m, n, k);
}

// ---------------------------------------------------------------- sgemm/async_copy.rs
// Rung 6 with B's tile copied by cp.async (sm_80+), A's through registers (transposed), two
// stages. nvcc needs __launch_bounds__ to keep two blocks per SM.

#if __CUDA_ARCH__ >= 800
template <unsigned BYTES>
DEV void cp_async(float* dst, const float* src, unsigned src_bytes) {
    unsigned d = static_cast<unsigned>(__cvta_generic_to_shared(dst));
    if (BYTES == 16)
        asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(d), "l"(src), "r"(src_bytes) : "memory");
    else
        asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;" ::"r"(d), "l"(src), "r"(src_bytes) : "memory");
}

// Float q of the 4 at (row, col ..): its address and 4 bytes, or the base and 0 bytes outside.
DEV const float* source(const float* base, unsigned rows, unsigned cols, unsigned row, unsigned col, unsigned q,
                        unsigned& bytes) {
    bool in = row < rows && col + q < cols;
    bytes = in ? 4 : 0;
    return in ? base + row * cols + col + q : base;
}

// Thread t's 4 floats of B for depth k0: one 16-byte copy, four 4-byte ones when n % 4 != 0.
DEV void copy_b(float* stage, const float* b, unsigned n, unsigned k, unsigned col0, bool vec, unsigned t,
                unsigned k0) {
    float* bs = b_slot<132>(stage, t);
    unsigned br = k0 + t / 32, bc = col0 + 4 * (t % 32), bytes;
    if (vec && k0 + 8 <= k) {
        cp_async<16>(bs, b + br * n + bc, 16);
    } else if (n % 4 == 0) {
        const float* src = source(b, k, n, br, bc, 0, bytes);
        cp_async<16>(bs, src, 4 * bytes);
    } else {
#pragma unroll
        for (unsigned q = 0; q < 4; q++) {
            const float* src = source(b, k, n, br, bc, q, bytes);
            cp_async<4>(bs + q, src, bytes);
        }
    }
}

KERNEL void __launch_bounds__(256, 2)
    sgemm_7_async_copy(const float* a, const float* b, float* c, unsigned m, unsigned n, unsigned k) {
    extern __shared__ __align__(16) float smem[];
    constexpr unsigned STAGES = 2, FLOATS = 8 * (132 + 128);
    unsigned t = threadIdx.x, row0 = blockIdx.y * 128, col0 = blockIdx.x * 128;
    bool vec = k % 4 == 0 && n % 4 == 0 && row0 + 128 <= m && col0 + 128 <= n;
    Place p = place<Warp>(t);
    float acc[8][8] = {};
    unsigned steps = (k + 7) / 8;
#pragma unroll
    for (unsigned s = 0; s < STAGES - 1; s++) {
        if (s < steps) {
            copy_b(smem + s * FLOATS, b, n, k, col0, vec, t, s * 8);
            put_a<132>(smem + s * FLOATS, t, fetch_a(a, m, k, row0, vec, t, s * 8));
        }
        asm volatile("cp.async.commit_group;" ::: "memory");
    }
    unsigned read = 0, fill = STAGES - 1;
    for (unsigned s = 0; s < steps; s++) {
        asm volatile("cp.async.wait_group %0;" ::"n"(STAGES - 2) : "memory");
        __syncthreads();
        unsigned next = s + STAGES - 1;
        float* to = smem + fill * FLOATS;
        float4 a_next;
        if (next < steps) {
            copy_b(to, b, n, k, col0, vec, t, next * 8);
            a_next = fetch_a(a, m, k, row0, vec, t, next * 8);
        }
        multiply<132>(smem + read * FLOATS, p, acc);
        if (next < steps) put_a<132>(to, t, a_next);
        asm volatile("cp.async.commit_group;" ::: "memory");
        fill = read;
        read = read + 1 == STAGES ? 0 : read + 1;
    }
    store_results(c, m, n, row0, col0, vec, p, acc);
}
#endif


// ---------------------------------------------------------------- sgemm/mod.rs (store_results)
// A thread's TM x TN results of rung 8: row i at row_of(i), its columns in chunks of 4 from
// col_of(h); one 128-bit store per chunk when n is a multiple of 4, else guarded scalar stores.
template <unsigned TM, unsigned TN, class ROW, class COL>
DEV void store_results(float* c, unsigned m, unsigned n, const float (&acc)[TM][TN], ROW row_of, COL col_of) {
#pragma unroll
    for (unsigned i = 0; i < TM; i++) {
        unsigned row = row_of(i);
#pragma unroll
        for (unsigned h = 0; h < TN / 4; h++) {
            unsigned col = col_of(h);
            if (n % 4 == 0 && row < m && col < n) {
                *reinterpret_cast<float4*>(c + row * n + col) =
                    make_float4(acc[i][4 * h], acc[i][4 * h + 1], acc[i][4 * h + 2], acc[i][4 * h + 3]);
            } else {
#pragma unroll
                for (unsigned q = 0; q < 4; q++)
                    if (row < m && col + q < n) c[row * n + col + q] = acc[i][4 * h + q];
            }
        }
    }
}

// ---------------------------------------------------------------- sgemm/copy.rs, sgemm/tuned.rs
// Rung 8: one template over the tile parameters, both tiles by cp.async (STAGES deep), A stored
// untransposed with rows padded to BK + 4 floats. One extern "C" entry per configuration of
// memlab_contracts::tuned_configs! (host/tests/sgemm_ptx.rs checks that the lists agree), with
// the launch bounds the Rust build writes into the PTX (.maxntid, .minnctapersm: 128 registers).

#if __CUDA_ARCH__ >= 800
// The 4 floats at (row, col ..) of a rows x cols matrix to dst, zeros outside.
DEV void copy_chunk(float* dst, const float* src, unsigned rows, unsigned cols, unsigned row, unsigned col) {
    if (cols % 4 == 0) {
        bool in = row < rows && col < cols;
        cp_async<16>(dst, in ? src + row * cols + col : src, in ? 16 : 0);
    } else {
#pragma unroll
        for (unsigned q = 0; q < 4; q++) {
            bool in = row < rows && col + q < cols;
            cp_async<4>(dst + q, in ? src + row * cols + col + q : src, in ? 4 : 0);
        }
    }
}

// Thread t's chunks t, t + THREADS, .. of the R x C tile at (row0, col0); chunk (r, c) goes to
// dst + PLACE::at(r, c).
template <unsigned R, unsigned C, unsigned THREADS, class PLACE>
DEV void copy_tile(float* dst, const float* src, unsigned rows, unsigned cols, unsigned row0, unsigned col0,
                   unsigned t) {
#pragma unroll
    for (unsigned i = 0; i < R * C / 4 / THREADS; i++) {
        unsigned chunk = t + i * THREADS, r = chunk / (C / 4), c = chunk % (C / 4);
        copy_chunk(dst + PLACE::at(r, c), src, rows, cols, row0 + r, col0 + 4 * c);
    }
}

template <unsigned N>
DEV void cp_async_wait() {
    asm volatile("cp.async.wait_group %0;" ::"n"(N) : "memory");
}
DEV void cp_async_commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }

// The cp.async ring of rungs 8 and 9: STAGES - 1 steps in flight ahead of the one computed.
// `fill(stage, step)` issues a step's copies into a stage; `compute(stage)` reads a landed one.
template <unsigned STAGES, class Fill, class Compute>
DEV void cp_async_ring(unsigned steps, Fill fill, Compute compute) {
#pragma unroll
    for (unsigned s = 0; s < STAGES - 1; s++) {
        if (s < steps) fill(s, s);
        cp_async_commit();
    }
    unsigned read = 0, write = STAGES - 1;
    for (unsigned s = 0; s < steps; s++) {
        cp_async_wait<STAGES - 2>();
        __syncthreads();
        if (s + STAGES - 1 < steps) fill(write, s + STAGES - 1);
        cp_async_commit();
        compute(read);
        write = read;
        read = read + 1 == STAGES ? 0 : read + 1;
    }
}

template <unsigned PITCH>
struct RowMajor {
    static DEV unsigned at(unsigned r, unsigned c) { return r * PITCH + 4 * c; }
};

template <unsigned BM, unsigned BN, unsigned BK, unsigned WM, unsigned WN, unsigned TM, unsigned TN, unsigned STAGES>
DEV void tuned(const float* a, const float* b, float* c, unsigned m, unsigned n, unsigned k) {
    extern __shared__ __align__(16) float smem[];
    constexpr unsigned THREADS = 32 * (BM / WM) * (BN / WN), LR = WM / TM, LC = WN / TN, PITCH = BK + 4;
    constexpr unsigned FLOATS = BM * PITCH + BK * BN;
    unsigned t = threadIdx.x, w = t / 32, l = t % 32, lr = l / LC, lc = l % LC;
    unsigned wrow = (w / (BN / WN)) * WM, wcol = (w % (BN / WN)) * WN;
    unsigned row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
    float acc[TM][TN] = {};
    unsigned steps = (k + BK - 1) / BK;
    auto fill = [&](unsigned st, unsigned s) {
        float* as = smem + st * FLOATS;
        copy_tile<BM, BK, THREADS, RowMajor<PITCH>>(as, a, m, k, row0, s * BK, t);
        copy_tile<BK, BN, THREADS, RowMajor<BN>>(as + BM * PITCH, b, k, n, s * BK, col0, t);
    };
    cp_async_ring<STAGES>(steps, fill, [&](unsigned read) {
        const float* as = smem + read * FLOATS + (wrow + lr) * PITCH;
        const float* bs = smem + read * FLOATS + BM * PITCH + wcol + 4 * lc;
#pragma unroll
        for (unsigned kp = 0; kp < BK / 2; kp++) {
            float2 a2[TM];
#pragma unroll
            for (unsigned i = 0; i < TM; i++) a2[i] = *reinterpret_cast<const float2*>(as + i * LR * PITCH + 2 * kp);
#pragma unroll
            for (unsigned d = 0; d < 2; d++) {
                float bv[TN];
#pragma unroll
                for (unsigned h = 0; h < TN / 4; h++) {
                    float4 v = *reinterpret_cast<const float4*>(bs + (2 * kp + d) * BN + 4 * LC * h);
                    bv[4 * h] = v.x, bv[4 * h + 1] = v.y, bv[4 * h + 2] = v.z, bv[4 * h + 3] = v.w;
                }
#pragma unroll
                for (unsigned i = 0; i < TM; i++)
#pragma unroll
                    for (unsigned j = 0; j < TN; j++) acc[i][j] = fmaf(d ? a2[i].y : a2[i].x, bv[j], acc[i][j]);
            }
        }
    });
    store_results(c, m, n, acc, [&](unsigned i) { return row0 + wrow + lr + LR * i; },
                  [&](unsigned h) { return col0 + wcol + 4 * lc + 4 * LC * h; });
}

#define TUNED_TWIN(BM, BN, BK, WM, WN, TM, TN, S)                                                                    \
    KERNEL void __launch_bounds__(32 * (BM / WM) * (BN / WN), 65536 / (32 * (BM / WM) * (BN / WN) * 128))           \
        sgemm_8_##BM##x##BN##x##BK##_w##WM##x##WN##_t##TM##x##TN##_s##S(const float* a, const float* b, float* c,   \
                                                                           unsigned m, unsigned n, unsigned k) {     \
        tuned<BM, BN, BK, WM, WN, TM, TN, S>(a, b, c, m, n, k);                                                       \
    }
TUNED_TWIN(128, 128, 8, 32, 64, 8, 8, 3)
TUNED_TWIN(128, 128, 8, 32, 64, 8, 8, 4)
TUNED_TWIN(128, 128, 16, 32, 64, 8, 8, 2)
TUNED_TWIN(128, 128, 16, 32, 64, 8, 8, 4)
TUNED_TWIN(128, 128, 16, 64, 32, 8, 8, 2)
TUNED_TWIN(128, 64, 16, 64, 32, 8, 8, 3)
TUNED_TWIN(64, 64, 16, 32, 32, 4, 8, 3)
TUNED_TWIN(64, 64, 32, 32, 32, 4, 8, 2)

// ---------------------------------------------------------------- sgemm/tensor.rs
// Rung 9: TF32 mma.sync m16n8k8, 128 x 128 tile, 8 warps of 64 x 32, BK 16, 3 stages; A's chunks
// placed by swizzle_a and loaded by ldmatrix.x4, B's rows by swizzle_b_tf32 and loaded by 32-bit
// shared loads.

template <bool SWIZZLE>
struct SwizzleA {  // memlab_contracts::sgemm::swizzle_a on rows of 16 floats (4 chunks)
    static DEV unsigned at(unsigned r, unsigned c) {
        unsigned flat = r * 4 + c;
        return 4 * (SWIZZLE ? flat ^ ((flat >> 3) & 7) : flat);
    }
};
template <bool SWIZZLE>
struct SwizzleB {  // memlab_contracts::sgemm::swizzle_b_tf32 on rows of 128 floats
    static DEV unsigned at(unsigned r, unsigned c) { return r * 128 + 4 * (SWIZZLE ? c ^ ((r & 3) << 1) : c); }
};

template <bool SWIZZLE>
DEV void tensor_tf32(const float* a, const float* b, float* c, unsigned m, unsigned n, unsigned k) {
    using PlaceA = SwizzleA<SWIZZLE>;
    using PlaceB = SwizzleB<SWIZZLE>;
    extern __shared__ __align__(16) float smem[];
    constexpr unsigned TILE = 128, BK = 16, STAGES = 3, FLOATS = 2 * TILE * BK;
    unsigned t = threadIdx.x, w = t / 32, l = t % 32, gr = l / 4, q = l % 4;
    unsigned wrow = (w / 4) * 64, wcol = (w % 4) * 32, row0 = blockIdx.y * TILE, col0 = blockIdx.x * TILE;
    float acc[4][4][4] = {};
    unsigned steps = (k + BK - 1) / BK;
    auto fill = [&](unsigned st, unsigned s) {
        float* as = smem + st * FLOATS;
        copy_tile<TILE, BK, 256, PlaceA>(as, a, m, k, row0, s * BK, t);
        copy_tile<BK, TILE, 256, PlaceB>(as + TILE * BK, b, k, n, s * BK, col0, t);
    };
    cp_async_ring<STAGES>(steps, fill, [&](unsigned read) {
        const float* as = smem + read * FLOATS;
        const float* bs = as + TILE * BK;
#pragma unroll
        for (unsigned ks = 0; ks < BK / 8; ks++) {
            unsigned af[4][4], bf[4][2];
#pragma unroll
            for (unsigned mt = 0; mt < 4; mt++) {
                unsigned row = wrow + 16 * mt + l % 8 + 8 * ((l / 8) % 2), chunk = 2 * ks + l / 16;
                unsigned addr = static_cast<unsigned>(__cvta_generic_to_shared(as + PlaceA::at(row, chunk)));
                asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
                             : "=r"(af[mt][0]), "=r"(af[mt][1]), "=r"(af[mt][2]), "=r"(af[mt][3])
                             : "r"(addr));
            }
#pragma unroll
            for (unsigned nt = 0; nt < 4; nt++) {
                unsigned col = wcol + 8 * nt + gr;
#pragma unroll
                for (unsigned half = 0; half < 2; half++) {
                    unsigned kr = 8 * ks + q + 4 * half;
                    bf[nt][half] = __float_as_uint(bs[PlaceB::at(kr, col / 4) + col % 4]);
                }
            }
#pragma unroll
            for (unsigned mt = 0; mt < 4; mt++)
#pragma unroll
                for (unsigned nt = 0; nt < 4; nt++) {
                    float* d = acc[mt][nt];
                    asm volatile(
                        "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
                        "{%8, %9}, {%0, %1, %2, %3};"
                        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                        : "r"(af[mt][0]), "r"(af[mt][1]), "r"(af[mt][2]), "r"(af[mt][3]), "r"(bf[nt][0]),
                          "r"(bf[nt][1]));
                }
        }
    });
#pragma unroll
    for (unsigned mt = 0; mt < 4; mt++)
#pragma unroll
        for (unsigned nt = 0; nt < 4; nt++) {
            unsigned row = row0 + wrow + 16 * mt + gr, col = col0 + wcol + 8 * nt + 2 * q;
            float* d = acc[mt][nt];
            if (row < m && col < n) c[row * n + col] = d[0];
            if (row < m && col + 1 < n) c[row * n + col + 1] = d[1];
            if (row + 8 < m && col < n) c[(row + 8) * n + col] = d[2];
            if (row + 8 < m && col + 1 < n) c[(row + 8) * n + col + 1] = d[3];
        }
}

KERNEL void __launch_bounds__(256, 2)
    sgemm_9_tensor_tf32(const float* a, const float* b, float* c, unsigned m, unsigned n, unsigned k) {
    tensor_tf32<true>(a, b, c, m, n, k);
}

KERNEL void __launch_bounds__(256, 2)
    sgemm_9_tensor_tf32_unswizzled(const float* a, const float* b, float* c, unsigned m, unsigned n, unsigned k) {
    tensor_tf32<false>(a, b, c, m, n, k);
}
#endif

// ---------------------------------------------------------------- clusters.rs
// Thread-block clusters (cc 9.0): the runtime's cluster intrinsics (sm_90_rt.h, what
// cooperative groups' cluster_group wraps); the chase times ld.shared::cluster through inline
// PTX, as microbenchmarks do.
#if __CUDA_ARCH__ >= 900
DEV void cluster_sync() {
    __cluster_barrier_arrive();
    __cluster_barrier_wait();
}

DEV unsigned long long globaltimer() {
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

DEV unsigned dsmem_load(unsigned address) {
    unsigned v;
    asm volatile("ld.shared::cluster.u32 %0, [%1];" : "=r"(v) : "r"(address) : "memory");
    return v;
}

KERNEL void chase_dsmem(const unsigned* chain, unsigned words, unsigned target, unsigned warm, unsigned steps,
                        unsigned long long* out) {
    extern __shared__ unsigned array[];
    unsigned* remote = (unsigned*)__cluster_map_shared_rank(array, target);
    unsigned base;
    asm("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(base) : "r"((unsigned)__cvta_generic_to_shared(array)), "r"(target));
    cluster_sync();
    if (__clusterRelativeBlockRank() == 0)
        for (unsigned w = threadIdx.x; w < words; w += blockDim.x) remote[w] = base + chain[w];
    cluster_sync();
    if (__clusterRelativeBlockRank() == 0 && threadIdx.x == 0) {
        unsigned p = base;
        for (unsigned i = 0; i < warm; i++) p = dsmem_load(p);
        long long c0 = clock64();
        unsigned long long t0 = globaltimer();
        for (unsigned i = 0; i < steps; i++) p = dsmem_load(p);
        long long c1 = clock64();
        unsigned long long t1 = globaltimer();
        out[0] = c1 - c0;
        out[1] = t1 - t0;
        out[2] = p - base;
    }
    cluster_sync();
}

// iters reads of 16 bytes per thread from `src` (a block's shared memory), 8 per round.
DEV unsigned read_rounds(const uint4* src, unsigned iters) {
    unsigned t = threadIdx.x, threads = blockDim.x, sum = 0;
    for (unsigned i = 0; i < iters; i += 8) {
#pragma unroll
        for (unsigned u = 0; u < 8; u++) {
            uint4 v = src[(t + (i + u) * threads) & 2047];
            sum += v.x + v.y + v.z + v.w;
        }
    }
    return sum;
}

KERNEL void cluster_shared_read(unsigned iters, unsigned peer_offset, unsigned* out) {
    extern __shared__ __align__(16) unsigned words[];  // 2048 x 16 bytes
    unsigned rank = __clusterRelativeBlockRank();
    for (unsigned w = threadIdx.x; w < 4 * 2048; w += blockDim.x) {
        unsigned h = w + rank * 0x9E3779B9u;  // MurmurHash3's finalizer of (word, rank)
        h ^= h >> 16;
        h *= 0x85EBCA6Bu;
        h ^= h >> 13;
        h *= 0xC2B2AE35u;
        words[w] = h ^ (h >> 16);
    }
    cluster_sync();
    unsigned sum;
    if (peer_offset == 0) {
        sum = read_rounds(reinterpret_cast<const uint4*>(words), iters);
    } else {
        unsigned* peer = (unsigned*)__cluster_map_shared_rank(words, (rank + peer_offset) % __clusterSizeInBlocks());
        sum = read_rounds(reinterpret_cast<const uint4*>(peer), iters);
    }
    out[blockIdx.x * blockDim.x + threadIdx.x] = sum;
    cluster_sync();
}

KERNEL void cluster_barrier(unsigned iters, unsigned long long* out) {
    cluster_sync();
    long long start = clock64();
    for (unsigned i = 0; i < iters; i++) cluster_sync();
    long long cycles = clock64() - start;
    if (threadIdx.x == 0) {
        out[2 * blockIdx.x] = cycles;
        out[2 * blockIdx.x + 1] = __clusterRelativeBlockRank() | __clusterSizeInBlocks() << 8 | __clusterIdx().x << 16;
    }
}

// Block 32 x 32, two stages of 32 x 32 tiles of A and B (16 KiB); the cluster's rows share A,
// its columns B, each block loading the tile rows r with r % cluster extent == its index.
KERNEL void matmul_dsmem_32(const float* a, const float* b, float* c, unsigned m, unsigned n, unsigned k) {
    extern __shared__ float tiles[];
    dim3 cid = __clusterRelativeBlockIdx(), cdim = __clusterDim();
    unsigned tx = threadIdx.x, ty = threadIdx.y;
    unsigned row = blockIdx.y * 32 + ty, col = blockIdx.x * 32 + tx, slot = ty * 32 + tx;
    unsigned a_owner = ty % cdim.x, b_owner = ty % cdim.y;
    unsigned a_rank = a_owner + cid.y * cdim.x, b_rank = cid.x + b_owner * cdim.x;
    float acc = 0.f;
    unsigned stage = 0;
    for (unsigned k0 = 0; k0 < k; k0 += 32) {
        float* ta = tiles + stage * 2048;
        float* tb = ta + 1024;
        if (a_owner == cid.x) ta[slot] = row < m && k0 + tx < k ? a[row * k + k0 + tx] : 0.f;
        if (b_owner == cid.y) tb[slot] = k0 + ty < k && col < n ? b[(k0 + ty) * n + col] : 0.f;
        cluster_sync();
        if (a_owner != cid.x) ta[slot] = ((float*)__cluster_map_shared_rank(ta, a_rank))[slot];
        if (b_owner != cid.y) tb[slot] = ((float*)__cluster_map_shared_rank(tb, b_rank))[slot];
        __syncthreads();
#pragma unroll
        for (unsigned i = 0; i < 32; i++) acc += ta[ty * 32 + i] * tb[i * 32 + tx];
        stage ^= 1;
    }
    if (row < m && col < n) c[row * n + col] = acc;
    cluster_sync();
}
#endif

// ---------------------------------------------------------------- hierarchy.rs, l2.rs (L2 lesson)

DEV unsigned sum4(uint4 w) { return w.x + w.y + w.z + w.w; }

// UNROLL 16-byte __ldcg loads issued before any is added; the tail one at a time.
template <unsigned UNROLL>
DEV void read_cg_sum(const unsigned* in, unsigned vectors, unsigned passes, unsigned* out) {
    unsigned g = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned threads = gridDim.x * blockDim.x;
    const uint4* v4 = reinterpret_cast<const uint4*>(in);
    unsigned span = (UNROLL - 1) * threads;
    unsigned sum = 0;
    for (unsigned p = 0; p < passes; p++) {
        unsigned v = g;
        for (; span < vectors && v < vectors - span; v += UNROLL * threads) {
            uint4 w[UNROLL];
#pragma unroll
            for (unsigned u = 0; u < UNROLL; u++) w[u] = __ldcg(v4 + v + u * threads);
#pragma unroll
            for (unsigned u = 0; u < UNROLL; u++) sum += sum4(w[u]);
        }
        for (; v < vectors; v += threads) sum += sum4(__ldcg(v4 + v));
    }
    out[g] = sum;
}

KERNEL void read_cg(const unsigned* in, unsigned vectors, unsigned passes, unsigned* out) {
    read_cg_sum<1>(in, vectors, passes, out);
}

KERNEL void read_cg_unrolled(const unsigned* in, unsigned vectors, unsigned passes, unsigned* out) {
    read_cg_sum<4>(in, vectors, passes, out);
}

KERNEL void hot_stream_read(const unsigned* stream, unsigned stream_vectors, const unsigned* hot, unsigned hot_mask,
                            unsigned* out) {
    unsigned g = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned threads = gridDim.x * blockDim.x;
    const uint4* s4 = reinterpret_cast<const uint4*>(stream);
    const uint4* h4 = reinterpret_cast<const uint4*>(hot);
    unsigned sum = 0;
    for (unsigned v = g; v < stream_vectors; v += threads) {
        uint4 s = __ldcg(s4 + v), h = __ldcg(h4 + (v & hot_mask));
        sum += sum4(s) + sum4(h);
    }
    out[g] = sum;
}
// ---------------------------------------------------------------- tma.rs
// TMA (cc 9.0, PTX ISA 8.3). The Rust kernels take their tensor maps as slots of a
// constant-memory array (rustc cannot declare a 64-byte aligned by-value kernel parameter, nor
// one whose address does not make a local copy: no __grid_constant__), so the twins take the
// same slots of an array of the same name, which the host fills alike; same instructions,
// tiles and launch shapes.
#if __CUDA_ARCH__ >= 900
#include <cuda.h>

// memlab_contracts::tma::MAP_SLOTS maps.
__constant__ CUtensorMap memlab_tma_maps[128];

DEV unsigned smem_addr(const void* p) { return (unsigned)__cvta_generic_to_shared(p); }

// `count` buffers of `bytes` each, aligned to 1024 inside the dynamic shared memory, then one
// mbarrier per buffer; thread 0 initialises them (one arrival per phase), then a block barrier.
struct TmaBuffers {
    unsigned char* ptr;
    unsigned addr, bytes, count;
    DEV unsigned at(unsigned i, unsigned off) const { return addr + i * bytes + off; }
    DEV unsigned bar(unsigned i) const { return addr + count * bytes + 8 * i; }
};
DEV TmaBuffers tma_carve(unsigned bytes, unsigned count) {
    extern __shared__ __align__(16) unsigned char tma_smem[];
    unsigned pad = (0u - smem_addr(tma_smem)) % 1024;
    TmaBuffers b{tma_smem + pad, smem_addr(tma_smem) + pad, bytes, count};
    if (threadIdx.x == 0 && threadIdx.y == 0)
        for (unsigned i = 0; i < count; i++)
            asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;\n\tfence.proxy.async.shared::cta;" ::"r"(b.bar(i)) : "memory");
    __syncthreads();
    return b;
}
DEV void tma_expect(unsigned bar, unsigned bytes) {
    asm volatile("{\n\t.reg .b64 s;\n\tmbarrier.arrive.expect_tx.shared::cta.b64 s, [%0], %1;\n\t}" ::"r"(bar), "r"(bytes) : "memory");
}
DEV void tma_wait(unsigned bar, unsigned parity) {
    unsigned done = 0;
    while (!done)
        asm volatile("{\n\t.reg .pred p;\n\tmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n\tselp.u32 %0, 1, 0, p;\n\t}"
                     : "=r"(done) : "r"(bar), "r"(parity) : "memory");
}
// The copies' L2 policy (`hinted`: `.L2::cache_hint` with it), as kernels-gpu's
// `Option<L2Policy>`: evict_first for `hint` 1 (memlab_contracts::tma::hint), none for 0.
struct TmaHint {
    bool hinted;
    unsigned long long policy;
};
DEV TmaHint tma_policy(unsigned hint) {
    unsigned long long p;
    asm("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(p));
    return TmaHint{hint == 1, p};
}
DEV void tma_load_2d(unsigned dst, const CUtensorMap* m, unsigned x, unsigned y, unsigned bar, TmaHint h) {
    if (h.hinted)
        asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.L2::cache_hint [%0], [%1, {%2, %3}], [%4], %5;"
                     ::"r"(dst), "l"(m), "r"(x), "r"(y), "r"(bar), "l"(h.policy) : "memory");
    else
        asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];"
                     ::"r"(dst), "l"(m), "r"(x), "r"(y), "r"(bar) : "memory");
}
DEV void tma_store_2d(const CUtensorMap* m, unsigned x, unsigned y, unsigned src, TmaHint h) {
    if (h.hinted)
        asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group.L2::cache_hint [%0, {%1, %2}], [%3], %4;"
                     ::"l"(m), "r"(x), "r"(y), "r"(src), "l"(h.policy) : "memory");
    else
        asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group [%0, {%1, %2}], [%3];"
                     ::"l"(m), "r"(x), "r"(y), "r"(src) : "memory");
}
DEV void tma_commit() { asm volatile("cp.async.bulk.commit_group;" ::: "memory"); }
template <unsigned PENDING>
DEV void tma_wait_read() { asm volatile("cp.async.bulk.wait_group.read %0;" ::"n"(PENDING) : "memory"); }

// This block's items of `count` (b, b + grid, ...) and the item of its turn j.
DEV unsigned tma_mine(unsigned count) {
    unsigned grid = max(gridDim.x, 1u);
    return blockIdx.x < count ? (count - blockIdx.x - 1) / grid + 1 : 0;
}
DEV unsigned tma_item(unsigned j) { return blockIdx.x + j * gridDim.x; }

// Lane 0's ring (as kernels-gpu/src/tma.rs `copy_ring`): loads stages - 1 items ahead; item
// j + stages - 1 reuses item j - 1's buffer once its store has read it.
template <class Load, class Store>
DEV void tma_copy_ring(const TmaBuffers& b, unsigned count, Load load, Store store) {
    unsigned stages = b.count, ahead = stages - 1, prologue = ahead < count ? ahead : count;
    for (unsigned k = 0; k < prologue; k++) load(k, k);
    unsigned slot = 0, parity = 0, next_slot = prologue;
    for (unsigned j = 0; j < count; j++) {
        if (ahead == 0) load(0u, j);
        tma_wait(b.bar(slot), parity);
        store(slot, j);
        tma_commit();
        if (ahead == 0) {
            tma_wait_read<0>();
        } else {
            tma_wait_read<1>();
            if (j + ahead < count) {
                load(next_slot, j + ahead);
                next_slot = next_slot + 1 == stages ? 0 : next_slot + 1;
            }
        }
        if (++slot == stages) { slot = 0; parity ^= 1; }
    }
    tma_wait_read<0>();
}

// 1-D bulk copies of `chunk` bytes through `stages` buffers, blocks of 32 x 1 (any grid).
KERNEL void tma_bulk_copy(const float* src, float* dst, unsigned n, unsigned chunk, unsigned stages, unsigned hint) {
    TmaBuffers b = tma_carve(chunk, stages);
    if (threadIdx.x != 0) return;
    TmaHint h = tma_policy(hint);
    unsigned per = max(chunk / 4, 1u), count = tma_mine((n + per - 1) / per);
    auto span = [&](unsigned j, unsigned& first, unsigned& bytes) {
        first = tma_item(j) * per;
        bytes = min(n - first, per) * 4;
    };
    tma_copy_ring(b, count,
        [&](unsigned slot, unsigned j) {
            unsigned first, bytes;
            span(j, first, bytes);
            tma_expect(b.bar(slot), bytes);
            if (h.hinted)
                asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.L2::cache_hint [%0], [%1], %2, [%3], %4;"
                             ::"r"(b.at(slot, 0)), "l"(src + first), "r"(bytes), "r"(b.bar(slot)), "l"(h.policy) : "memory");
            else
                asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
                             ::"r"(b.at(slot, 0)), "l"(src + first), "r"(bytes), "r"(b.bar(slot)) : "memory");
        },
        [&](unsigned slot, unsigned j) {
            unsigned first, bytes;
            span(j, first, bytes);
            if (h.hinted)
                asm volatile("cp.async.bulk.global.shared::cta.bulk_group.L2::cache_hint [%0], [%1], %2, %3;"
                             ::"l"(dst + first), "r"(b.at(slot, 0)), "r"(bytes), "l"(h.policy) : "memory");
            else
                asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;"
                             ::"l"(dst + first), "r"(b.at(slot, 0)), "r"(bytes) : "memory");
        });
}

// Boxes of box_rows x box_cols through `stages` buffers, blocks of 32 x 1 (any grid).
KERNEL void tma_copy(unsigned map_in_slot, unsigned map_out_slot, unsigned rows, unsigned cols,
                     unsigned box_rows, unsigned box_cols, unsigned stages, unsigned hint) {
    unsigned box_bytes = box_rows * box_cols * 4;
    TmaBuffers b = tma_carve(box_bytes, stages);
    if (threadIdx.x != 0) return;
    const CUtensorMap *map_in = &memlab_tma_maps[min(map_in_slot, 127u)], *map_out = &memlab_tma_maps[min(map_out_slot, 127u)];
    TmaHint h = tma_policy(hint);
    box_rows = max(box_rows, 1u);
    box_cols = max(box_cols, 1u);
    unsigned across = max((cols + box_cols - 1) / box_cols, 1u);
    unsigned count = tma_mine(across * ((rows + box_rows - 1) / box_rows));
    tma_copy_ring(b, count,
        [&](unsigned slot, unsigned j) {
            unsigned t = tma_item(j);
            tma_expect(b.bar(slot), box_bytes);
            tma_load_2d(b.at(slot, 0), map_in, t % across * box_cols, t / across * box_rows, b.bar(slot), h);
        },
        [&](unsigned slot, unsigned j) {
            unsigned t = tma_item(j);
            tma_store_2d(map_out, t % across * box_cols, t / across * box_rows, b.at(slot, 0), h);
        });
}

// Byte `offset` of a box under swizzle MODE (CUTLASS Swizzle<MODE, 4, 3>).
template <unsigned MODE>
DEV unsigned swizzle(unsigned offset) { return offset ^ (((offset >> 7) & ((1u << MODE) - 1)) << 4); }

// Block 32 x 16 (memlab_contracts::tma::TRANSPOSE_BLOCK), tiles b, b + grid, ...: 64 x 64 tiles
// as boxes of 64 rows x W floats into `stages` input buffers, transposed into two alternating
// output buffers (as kernels-gpu/src/tma.rs).
template <unsigned MODE>
DEV void tma_transpose_tiles(const CUtensorMap* map_in, const CUtensorMap* map_out, unsigned rows, unsigned cols,
                             unsigned stages, unsigned hint) {
    constexpr unsigned W = MODE == 0 ? 32 : (16u << MODE) / 4, T = 64, TB = T * T * 4;
    TmaBuffers b = tma_carve(TB, stages + 2);
    unsigned t = threadIdx.y * 32 + threadIdx.x;
    bool producer = t == 0;
    TmaHint h = tma_policy(hint);
    unsigned across = max((cols + T - 1) / T, 1u), count = tma_mine(across * ((rows + T - 1) / T));
    auto load = [&](unsigned slot, unsigned j) {
        unsigned tile = tma_item(j), c0 = tile % across * T, r0 = tile / across * T;
        tma_expect(b.bar(slot), TB);
#pragma unroll
        for (unsigned k = 0; k < T / W; k++) tma_load_2d(b.at(slot, k * T * W * 4), map_in, c0 + k * W, r0, b.bar(slot), h);
    };
    if (producer)
        for (unsigned k = 0; k < min(stages, count); k++) load(k, k);
    unsigned slot = 0, parity = 0;
    for (unsigned j = 0; j < count; j++) {
        tma_wait(b.bar(slot), parity);
        unsigned out = stages + (j & 1);
        float* o = (float*)(b.ptr + out * TB);
        const unsigned char* in = b.ptr + slot * TB;
#pragma unroll
        for (unsigned i = 0; i < 2; i++) {
            unsigned idx = t + 512 * i, r = idx % 64, c4 = idx / 64;
            unsigned k = 4 * c4 / W, c = 4 * c4 % W;
            float4 v = *(const float4*)(in + k * 64 * W * 4 + swizzle<MODE>((r * W + c) * 4));
            o[(4 * c4 + 0) * 64 + r] = v.x;
            o[(4 * c4 + 1) * 64 + r] = v.y;
            o[(4 * c4 + 2) * 64 + r] = v.z;
            o[(4 * c4 + 3) * 64 + r] = v.w;
        }
        asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
        if (producer) tma_wait_read<0>();
        __syncthreads();
        if (producer) {
            unsigned tile = tma_item(j), c0 = tile % across * T, r0 = tile / across * T;
            tma_store_2d(map_out, r0, c0, b.at(out, 0), h);
            tma_commit();
            if (j + stages < count) load(slot, j + stages);
        }
        if (++slot == stages) { slot = 0; parity ^= 1; }
    }
    if (producer) tma_wait_read<0>();
}

KERNEL void tma_transpose(unsigned map_in_slot, unsigned map_out_slot, unsigned rows, unsigned cols,
                          unsigned swizzle, unsigned stages, unsigned hint) {
    const CUtensorMap *map_in = &memlab_tma_maps[min(map_in_slot, 127u)], *map_out = &memlab_tma_maps[min(map_out_slot, 127u)];
    switch (swizzle) {
        case 0: tma_transpose_tiles<0>(map_in, map_out, rows, cols, stages, hint); break;
        case 1: tma_transpose_tiles<1>(map_in, map_out, rows, cols, stages, hint); break;
        case 2: tma_transpose_tiles<2>(map_in, map_out, rows, cols, stages, hint); break;
        default: tma_transpose_tiles<3>(map_in, map_out, rows, cols, stages, hint); break;
    }
}
#endif
// ---------------------------------------------------------------- l2_policies.rs
// The L2 lesson's answers: the suite's work split (many short blocks, each a fixed 512 KiB
// region of 32 chunks of 16 KiB) and an evict_first policy on the streamed loads. The policy
// twin needs createpolicy (sm_80, PTX ISA 7.4); the Rust kernel is in the sm_90 PTX only.
KERNEL void read_cg_chunks(const unsigned* input, unsigned regions, unsigned* out) {
    if (regions == 0) return;
    const uint4* in4 = reinterpret_cast<const uint4*>(input);
    unsigned t = threadIdx.x, r = blockIdx.x % regions, sum = 0;
    for (unsigned i = 0; i < 32; i++) {
        unsigned chunk = (regions * i + r) * 1024 + t;
        uint4 w[4];
#pragma unroll
        for (unsigned j = 0; j < 4; j++) w[j] = __ldcg(in4 + chunk + j * 256);
#pragma unroll
        for (unsigned j = 0; j < 4; j++) sum += sum4(w[j]);
    }
    out[r * 256 + t] = sum;
}

#if __CUDA_ARCH__ >= 800
KERNEL void hot_stream_read_evict_first(const unsigned* stream, unsigned stream_vectors, const unsigned* hot,
                                        unsigned hot_mask, unsigned* out) {
    unsigned g = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned threads = gridDim.x * blockDim.x;
    const uint4* s4 = reinterpret_cast<const uint4*>(stream);
    const uint4* h4 = reinterpret_cast<const uint4*>(hot);
    unsigned long long first;
    asm("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(first));
    unsigned sum = 0;
    for (unsigned v = g; v < stream_vectors; v += threads) {
        uint4 s, h = __ldcg(h4 + (v & hot_mask));
        asm volatile("ld.global.cg.L2::cache_hint.v4.u32 {%0,%1,%2,%3}, [%4], %5;"
                     : "=r"(s.x), "=r"(s.y), "=r"(s.z), "=r"(s.w)
                     : "l"(s4 + v), "l"(first));
        sum += sum4(s) + sum4(h);
    }
    out[g] = sum;
}
#endif

// ---------------------------------------------------------------- transpose_any.rs
// Dense matrices whose rows are not whole 32-byte sectors.

// Block 32 x 8, ceil(cols / 32) x ceil((rows + max shift) / 32) blocks, a 40 x 33 tile: input
// rows 32 by - 8 .. 32 by + 32 staged; output row y's stores shifted back by e(y) = (y * rows)
// mod 8 floats, so each warp store starts on a sector boundary. A thread's rows are 8 apart:
// one e for all four.
DEV void aligned_stores(const float* in, float* out, unsigned rows, unsigned cols) {
    extern __shared__ float tile[];
    uint2 b = tile_block(tiles(cols, 0, 32));
    unsigned tx = threadIdx.x, ty = threadIdx.y, bx = b.x, by = b.y;
    unsigned col = bx * 32 + tx;
#pragma unroll
    for (unsigned step = 0; step < 5; step++) {
        unsigned k = ty + 8 * step;
        long long row = (long long)(by * 32 + k) - 8;
        if (k < 40 && row >= 0 && (unsigned)row < rows && col < cols) tile[k * 33 + tx] = in[(size_t)row * cols + col];
    }
    __syncthreads();
    unsigned e = (bx * 32 + ty) * rows % 8;
    long long x = (long long)(by * 32 + tx) - e;
#pragma unroll
    for (unsigned step = 0; step < 4; step++) {
        unsigned j = ty + 8 * step, y = bx * 32 + j;
        if (j < 32 && y < cols && x >= 0 && (unsigned)x < rows) out[(size_t)y * rows + x] = tile[(tx + 8 - e) * 33 + j];
    }
}

KERNEL void transpose_aligned_stores(const float* in, float* out, unsigned rows, unsigned cols) {
    aligned_stores(in, out, rows, cols);
}

// ---------------------------------------------------------------- transpose_thin.rs
// A thin matrix (short side 1-16): block 256, one band of floor(16 / short) * 256 long-side
// elements per block through short * band floats of shared memory. The strided side (short rows
// of the band) moves 16 scalars per thread, the contiguous side (one run of short * band
// floats) 4 float4s.

// The float4 at in[at ..+4], float j of a run of n: one 128-bit load when it lies inside, else
// the floats that do and zeros.
DEV float4 load_run(const float* in, unsigned at, unsigned j, unsigned n) {
    if (j + 4 <= n) return *reinterpret_cast<const float4*>(in + at);
    float4 v = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    float* w = &v.x;
#pragma unroll
    for (unsigned q = 0; q < 4; q++)
        if (j + q < n) w[q] = in[at + q];
    return v;
}

KERNEL void __launch_bounds__(256, 6) transpose_thin(const float* in, float* out, unsigned rows, unsigned cols) {
    extern __shared__ __align__(16) float band_tile[];
    unsigned shrt = min(rows, cols), lng = max(rows, cols);
    unsigned band = shrt >= 1 && shrt <= 16 ? 16 / shrt * 256 : 0;
    if (band == 0) return;
    unsigned per_row = band / 256, t = threadIdx.x, first = blockIdx.x * band;
    unsigned elems = first < lng ? min(band, lng - first) : 0, run = elems * shrt;
    if (rows <= cols) {
        float v[16];
        unsigned s = 0, q = 0;
#pragma unroll
        for (unsigned i = 0; i < 16; i++) {
            if (i > 0 && ++q == per_row) s++, q = 0;
            unsigned l = q * 256 + t;
            v[i] = s < shrt && first + l < lng ? in[s * lng + first + l] : 0.0f;
        }
        s = 0, q = 0;
#pragma unroll
        for (unsigned i = 0; i < 16; i++) {
            if (i > 0 && ++q == per_row) s++, q = 0;
            if (s < shrt) band_tile[(q * 256 + t) * shrt + s] = v[i];
        }
        __syncthreads();
#pragma unroll
        for (unsigned c = 0; c < 4; c++) {
            unsigned j = 4 * (t + c * 256), at = first * shrt + j;
            if (j >= run) continue;
            float4 w = *reinterpret_cast<const float4*>(band_tile + j);
            store4(out, at, w, j + 4 <= run, [&](unsigned k) { return j + k < run; });
        }
    } else {
        float4 v[4];
#pragma unroll
        for (unsigned c = 0; c < 4; c++) {
            unsigned j = 4 * (t + c * 256);
            v[c] = load_run(in, first * shrt + j, j, run);
        }
#pragma unroll
        for (unsigned c = 0; c < 4; c++) reinterpret_cast<float4*>(band_tile)[t + c * 256] = v[c];
        __syncthreads();
        unsigned s = 0, q = 0;
#pragma unroll
        for (unsigned i = 0; i < 16; i++) {
            if (i > 0 && ++q == per_row) s++, q = 0;
            unsigned l = q * 256 + t;
            if (s < shrt && first + l < lng) out[s * lng + first + l] = band_tile[l * shrt + s];
        }
    }
}

// copy on a thin matrix: the n floats as one run, 4096 per block, 4 float4 per thread of 32 x 8.
DEV void copy_run(const float* in, float* out, unsigned n) {
    unsigned t = threadIdx.y * 32 + threadIdx.x, first = blockIdx.x * 4096, left = n > first ? n - first : 0;
    float4 v[4];
#pragma unroll
    for (unsigned c = 0; c < 4; c++) {
        unsigned j = 4 * (t + c * 256);
        v[c] = load_run(in, first + j, j, left);
    }
#pragma unroll
    for (unsigned c = 0; c < 4; c++) {
        unsigned j = 4 * (t + c * 256);
        store4(out, first + j, v[c], j + 4 <= left, [&](unsigned q) { return j + q < left; });
    }
}

// ---------------------------------------------------------------- sgemm/staged.rs
// Rung 8's Registers configurations: rung 6's algorithm over the tile parameters. Per step each
// thread loads its float4 chunks of A and B into registers during the other stage's FMAs, then
// stores A transposed (pitch BM + 4) and B as it is; one barrier per step.

// The 4 floats at (r, c ..) of a rows x cols matrix, zeros outside it.
DEV float4 chunk_or_zero(const float* p, unsigned rows, unsigned cols, unsigned r, unsigned c) {
    float v[4];
#pragma unroll
    for (unsigned q = 0; q < 4; q++) v[q] = r < rows && c + q < cols ? p[r * cols + c + q] : 0.0f;
    return make_float4(v[0], v[1], v[2], v[3]);
}

// The tile at block column tx, block row ty of C over depth steps first .. end, stored to c
// (C itself, or one split's m x n slice of the split-K workspace).
template <unsigned BM, unsigned BN, unsigned BK, unsigned WM, unsigned WN, unsigned TM, unsigned TN>
DEV void staged(const float* a, const float* b, float* c, unsigned m, unsigned n, unsigned k, unsigned tx,
                unsigned ty, unsigned first, unsigned end) {
    extern __shared__ __align__(16) float smem[];
    constexpr unsigned THREADS = 32 * (BM / WM) * (BN / WN), LR = WM / TM, LC = WN / TN, PITCH = BM + 4;
    constexpr unsigned FLOATS = BK * PITCH + BK * BN, AC = BM * BK / 4 / THREADS, BC = BK * BN / 4 / THREADS;
    unsigned t = threadIdx.x, w = t / 32, l = t % 32, lr = l / LC, lc = l % LC;
    unsigned wrow = (w / (BN / WN)) * WM, wcol = (w % (BN / WN)) * WN;
    unsigned row0 = ty * BM, col0 = tx * BN;
    bool vector = k % 4 == 0 && n % 4 == 0 && row0 + BM <= m && col0 + BN <= n;
    float4 sa[AC], sb[BC];
    auto fetch = [&](unsigned k0) {
        if (vector && k0 + BK <= k) {
#pragma unroll
            for (unsigned i = 0; i < AC; i++) {
                unsigned ch = t + i * THREADS, r = ch / (BK / 4), cc = 4 * (ch % (BK / 4));
                sa[i] = *reinterpret_cast<const float4*>(a + (row0 + r) * k + k0 + cc);
            }
#pragma unroll
            for (unsigned i = 0; i < BC; i++) {
                unsigned ch = t + i * THREADS, r = ch / (BN / 4), cc = 4 * (ch % (BN / 4));
                sb[i] = *reinterpret_cast<const float4*>(b + (k0 + r) * n + col0 + cc);
            }
        } else {
#pragma unroll
            for (unsigned i = 0; i < AC; i++) {
                unsigned ch = t + i * THREADS;
                sa[i] = chunk_or_zero(a, m, k, row0 + ch / (BK / 4), k0 + 4 * (ch % (BK / 4)));
            }
#pragma unroll
            for (unsigned i = 0; i < BC; i++) {
                unsigned ch = t + i * THREADS;
                sb[i] = chunk_or_zero(b, k, n, k0 + ch / (BN / 4), col0 + 4 * (ch % (BN / 4)));
            }
        }
    };
    auto put = [&](unsigned st) {
        float* s = smem + st * FLOATS;
#pragma unroll
        for (unsigned i = 0; i < AC; i++) {
            unsigned ch = t + i * THREADS, r = ch / (BK / 4), cc = 4 * (ch % (BK / 4));
            s[cc * PITCH + r] = sa[i].x, s[(cc + 1) * PITCH + r] = sa[i].y;
            s[(cc + 2) * PITCH + r] = sa[i].z, s[(cc + 3) * PITCH + r] = sa[i].w;
        }
#pragma unroll
        for (unsigned i = 0; i < BC; i++) {
            unsigned ch = t + i * THREADS, r = ch / (BN / 4), cc = 4 * (ch % (BN / 4));
            *reinterpret_cast<float4*>(s + BK * PITCH + r * BN + cc) = sb[i];
        }
    };
    float acc[TM][TN] = {};
    fetch(first * BK);
    put(first % 2);
    __syncthreads();
    for (unsigned s = first; s < end; s++) {
        if (s + 1 < end) fetch((s + 1) * BK);
        const float* as = smem + (s % 2) * FLOATS + wrow + 4 * lr;
        const float* bs = smem + (s % 2) * FLOATS + BK * PITCH + wcol + 4 * lc;
#pragma unroll
        for (unsigned d = 0; d < BK; d++) {
            float av[TM], bv[TN];
#pragma unroll
            for (unsigned i = 0; i < TM / 4; i++) {
                float4 v = *reinterpret_cast<const float4*>(as + d * PITCH + 4 * LR * i);
                av[4 * i] = v.x, av[4 * i + 1] = v.y, av[4 * i + 2] = v.z, av[4 * i + 3] = v.w;
            }
#pragma unroll
            for (unsigned h = 0; h < TN / 4; h++) {
                float4 v = *reinterpret_cast<const float4*>(bs + d * BN + 4 * LC * h);
                bv[4 * h] = v.x, bv[4 * h + 1] = v.y, bv[4 * h + 2] = v.z, bv[4 * h + 3] = v.w;
            }
#pragma unroll
            for (unsigned i = 0; i < TM; i++)
#pragma unroll
                for (unsigned j = 0; j < TN; j++) acc[i][j] = fmaf(av[i], bv[j], acc[i][j]);
        }
        if (s + 1 < end) put((s + 1) % 2);
        __syncthreads();
    }
    store_results(c, m, n, acc, [&](unsigned i) { return row0 + wrow + 4 * lr + 4 * LR * (i / 4) + i % 4; },
                  [&](unsigned h) { return col0 + wcol + 4 * lc + 4 * LC * h; });
}

// Blocks per SM as memlab_contracts::sgemm::Tuned::blocks_per_sm(90), the H200's target: 1 above 64
// results per thread.
#define STAGED_TWIN(BM, BN, BK, WM, WN, TM, TN)                                                                     \
    KERNEL void __launch_bounds__(32 * (BM / WM) * (BN / WN),                                                        \
                                  TM * TN > 64 ? 1 : 65536 / (32 * (BM / WM) * (BN / WN) * 128))                     \
        sgemm_8_##BM##x##BN##x##BK##_w##WM##x##WN##_t##TM##x##TN##_regs(const float* a, const float* b, float* c,   \
                                                                          unsigned m, unsigned n, unsigned k) {      \
        staged<BM, BN, BK, WM, WN, TM, TN>(a, b, c, m, n, k, blockIdx.x, blockIdx.y, 0, (k + BK - 1) / BK);          \
    }
STAGED_TWIN(128, 128, 8, 32, 64, 8, 8)
STAGED_TWIN(128, 128, 8, 64, 32, 8, 8)
STAGED_TWIN(128, 128, 8, 64, 64, 8, 16)
STAGED_TWIN(128, 256, 8, 64, 64, 8, 16)
STAGED_TWIN(256, 128, 8, 64, 64, 16, 8)
STAGED_TWIN(128, 64, 8, 64, 32, 8, 8)
STAGED_TWIN(64, 64, 8, 32, 32, 4, 8)

// ---------------------------------------------------------------- sgemm/split_k.rs
// The split-K rung: rung 6's tile (the 128x128x8 w32x64 t8x8 Registers configuration, its launch
// bounds) over split s = blockIdx.x / ceil(n / 128) of the depth steps, its partial tile to slice
// s of the workspace w; the reduce sums the slices in split order.
KERNEL void __launch_bounds__(256, 2) sgemm_split_k_128x128(const float* a, const float* b, float* w, unsigned m,
                                                             unsigned n, unsigned k, unsigned split_steps) {
    unsigned tiles_x = (n + 127) / 128, split = blockIdx.x / tiles_x, tx = blockIdx.x % tiles_x;
    unsigned steps = (k + 7) / 8, end = min(steps, (split + 1) * split_steps), first = min(split * split_steps, end);
    staged<128, 128, 8, 32, 64, 8, 8>(a, b, w + (size_t)split * m * n, m, n, k, tx, blockIdx.y, first, end);
}

KERNEL void sgemm_split_k_reduce(const float* w, float* c, unsigned mn, unsigned splits) {
    size_t len = mn, i = 4 * (size_t)(blockIdx.x * blockDim.x + threadIdx.x);
    if (len % 4 == 0 && i < len) {
        float4 sum = *reinterpret_cast<const float4*>(w + i);
        for (unsigned s = 1; s < splits; s++) {
            float4 v = *reinterpret_cast<const float4*>(w + s * len + i);
            sum.x += v.x, sum.y += v.y, sum.z += v.z, sum.w += v.w;
        }
        *reinterpret_cast<float4*>(c + i) = sum;
    } else if (len % 4 != 0) {
        for (size_t e = i; e < len && e < i + 4; e++) {
            float sum = w[e];
            for (unsigned s = 1; s < splits; s++) sum += w[s * len + e];
            c[e] = sum;
        }
    }
}

// ---------------------------------------------------------------- tensor.rs
// The tensor ladder: BF16 wgmma fed by TMA (cc 9.0 with the arch-specific features: built with
// -gencode=arch=compute_90a,code=sm_90a, as `./x bench` does on a cc 9.0 GPU). C = A * B^T, A
// m x k, B n x k, C m x n, BF16 row-major; the maps are slots of memlab_tma_maps, as in tma.rs.
// The ring, barriers and roles are device/wgmma.rs's: per stage the A tile then the B tile,
// then the full and the empty mbarriers.
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
// Descriptor of a K-major tile under the 128-byte swizzle: start >> 4, LBO 1, SBO 1024 >> 4.
DEV unsigned long long wg_desc(unsigned addr) {
    return ((unsigned long long)(addr & 0x3FFFF) >> 4) | (1ull << 16) | (64ull << 32) | (1ull << 62);
}
DEV void wgmma_n128(float* d, unsigned long long a, unsigned long long b) {
    asm volatile("wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31,%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47,%48,%49,%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63}, %64, %65, 1, 1, 1, 0, 0;"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
                 : "l"(a), "l"(b));
}
DEV void wgmma_n256(float* d, unsigned long long a, unsigned long long b) {
    asm volatile("wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16 {%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31,%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47,%48,%49,%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63,%64,%65,%66,%67,%68,%69,%70,%71,%72,%73,%74,%75,%76,%77,%78,%79,%80,%81,%82,%83,%84,%85,%86,%87,%88,%89,%90,%91,%92,%93,%94,%95,%96,%97,%98,%99,%100,%101,%102,%103,%104,%105,%106,%107,%108,%109,%110,%111,%112,%113,%114,%115,%116,%117,%118,%119,%120,%121,%122,%123,%124,%125,%126,%127}, %128, %129, 1, 1, 1, 0, 0;"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]), "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]), "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]), "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]), "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]), "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]), "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]), "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]), "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])
                 : "l"(a), "l"(b));
}
// Rung 7's k8 step of FP32 inputs multiplied in TF32 (no transpose operands for TF32).
DEV void wgmma_n256_tf32(float* d, unsigned long long a, unsigned long long b) {
    asm volatile("wgmma.mma_async.sync.aligned.m64n256k8.f32.tf32.tf32 {%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31,%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47,%48,%49,%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63,%64,%65,%66,%67,%68,%69,%70,%71,%72,%73,%74,%75,%76,%77,%78,%79,%80,%81,%82,%83,%84,%85,%86,%87,%88,%89,%90,%91,%92,%93,%94,%95,%96,%97,%98,%99,%100,%101,%102,%103,%104,%105,%106,%107,%108,%109,%110,%111,%112,%113,%114,%115,%116,%117,%118,%119,%120,%121,%122,%123,%124,%125,%126,%127}, %128, %129, 1, 1, 1;"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]), "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]), "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]), "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]), "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]), "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]), "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]), "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]), "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])
                 : "l"(a), "l"(b));
}
// Rung 9's k32 step of FP8 e4m3 inputs (no transpose operands for 8-bit inputs).
DEV void wgmma_n256_e4m3(float* d, unsigned long long a, unsigned long long b) {
    asm volatile("wgmma.mma_async.sync.aligned.m64n256k32.f32.e4m3.e4m3 {%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31,%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47,%48,%49,%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63,%64,%65,%66,%67,%68,%69,%70,%71,%72,%73,%74,%75,%76,%77,%78,%79,%80,%81,%82,%83,%84,%85,%86,%87,%88,%89,%90,%91,%92,%93,%94,%95,%96,%97,%98,%99,%100,%101,%102,%103,%104,%105,%106,%107,%108,%109,%110,%111,%112,%113,%114,%115,%116,%117,%118,%119,%120,%121,%122,%123,%124,%125,%126,%127}, %128, %129, 1, 1, 1;"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]), "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]), "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]), "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]), "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]), "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]), "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]), "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]), "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])
                 : "l"(a), "l"(b));
}
DEV void wg_wait_bar(unsigned bar, unsigned parity) {
    asm volatile("{\n.reg .pred p;\nW: mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n@!p bra W;\n}\n" ::"r"(bar),
                 "r"(parity));
}
DEV unsigned cluster_rank() {
    unsigned r;
    asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
    return r;
}
DEV unsigned cluster_blocks() {
    unsigned r;
    asm volatile("mov.u32 %0, %%cluster_nctarank;" : "=r"(r));
    return r;
}
DEV void cluster_barrier() { asm volatile("barrier.cluster.arrive;\nbarrier.cluster.wait;" ::: "memory"); }

struct WgRing {
    unsigned base, a_bytes, b_bytes, stages;
    DEV unsigned a(unsigned s) const { return base + s * (a_bytes + b_bytes); }
    DEV unsigned b(unsigned s) const { return a(s) + a_bytes; }
    DEV unsigned full(unsigned s) const { return base + stages * (a_bytes + b_bytes) + 8 * s; }
    DEV unsigned empty(unsigned s) const { return full(s) + 8 * stages; }
};

DEV WgRing wg_carve(unsigned a_rows, unsigned b_rows, unsigned stages, unsigned releases) {
    extern __shared__ __align__(16) unsigned char wg_smem[];
    unsigned raw = smem_addr(wg_smem), pad = (0u - raw) % 1024;
    WgRing r{raw + pad, a_rows * 128, b_rows * 128, stages};
    if (threadIdx.x == 0) {
        for (unsigned s = 0; s < stages; s++) {
            asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;\nfence.proxy.async.shared::cta;" ::"r"(r.full(s)));
            asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\nfence.proxy.async.shared::cta;" ::"r"(r.empty(s)),
                         "r"(releases));
        }
        asm volatile("fence.mbarrier_init.release.cluster;");
    }
    cluster_barrier();
    return r;
}

DEV void wg_load(const WgRing& r, unsigned step, const CUtensorMap* a, const CUtensorMap* b, unsigned x, unsigned a_row,
                 unsigned b_row, bool multicast) {
    unsigned s = step % r.stages, round = step / r.stages;
    if (round > 0) wg_wait_bar(r.empty(s), (round - 1) & 1);
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(r.full(s)), "r"(r.a_bytes + r.b_bytes));
    asm volatile(
        "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];" ::"r"(
            r.a(s)),
        "l"(a), "r"(x), "r"(a_row), "r"(r.full(s))
        : "memory");
    if (multicast) {
        unsigned rank = cluster_rank(), blocks = cluster_blocks(), share = r.b_bytes / blocks;
        unsigned short mask = (unsigned short)((1u << blocks) - 1);
        asm volatile(
            "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster [%0], [%1, "
            "{%2, %3}], [%4], %5;" ::"r"(r.b(s) + rank * share),
            "l"(b), "r"(x), "r"(b_row + rank * (share / 128)), "r"(r.full(s)), "h"(mask)
            : "memory");
    } else {
        asm volatile(
            "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];" ::"r"(
                r.b(s)),
            "l"(b), "r"(x), "r"(b_row), "r"(r.full(s))
            : "memory");
    }
}

// Waits for step `step`'s stage, issues its 4 k16 steps (k8 in TF32: the same 32 bytes of a row)
// into d (the slice's 64 rows of A), waits for them, releases the stage in every block of the
// cluster.
template <unsigned N, bool TF32 = false, bool FP8 = false>
DEV void wg_consume(const WgRing& r, unsigned step, unsigned slice, float* d) {
    unsigned s = step % r.stages;
    wg_wait_bar(r.full(s), (step / r.stages) & 1);
    asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
#pragma unroll
    for (unsigned kk = 0; kk < 4; kk++) {
        unsigned long long da = wg_desc(r.a(s) + slice * 64 * 128 + kk * 32), db = wg_desc(r.b(s) + kk * 32);
        if (TF32) wgmma_n256_tf32(d, da, db);
        else if (FP8) wgmma_n256_e4m3(d, da, db);
        else if (N == 256) wgmma_n256(d, da, db);
        else wgmma_n128(d, da, db);
    }
    asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
    asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
    if (threadIdx.x % 128 == 0)
        for (unsigned rank = 0; rank < cluster_blocks(); rank++)
            asm volatile("{\n.reg .b32 r;\nmapa.shared::cluster.u32 r, %0, %1;\nmbarrier.arrive.shared::cluster.b64 _, [r];\n}\n" ::"r"(
                             r.empty(s)),
                         "r"(rank));
}

template <unsigned N, class T>
DEV void wg_store(const float* d, T* c, unsigned m, unsigned n, unsigned row0, unsigned col0) {
    unsigned t = threadIdx.x % 128, row = row0 + 16 * (t / 32) + (t % 32) / 4;
#pragma unroll
    for (unsigned j = 0; j < N / 8; j++) {
        unsigned col = col0 + 8 * j + 2 * (t % 4);
#pragma unroll
        for (unsigned h = 0; h < 2; h++) {
            unsigned r = row + 8 * h;
            if (r >= m || col >= n) continue;
            float lo = d[4 * j + 2 * h], hi = d[4 * j + 2 * h + 1];
            size_t at = (size_t)r * n + col;
            if constexpr (sizeof(T) == 4) {
                if (n % 2 == 0) {
                    *(float2*)&c[at] = make_float2(lo, hi);
                } else {
                    c[at] = lo;
                    if (col + 1 < n) c[at + 1] = hi;
                }
            } else {
                __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
                if (n % 2 == 0) {
                    *(__nv_bfloat162*)&c[at] = v;
                } else {
                    c[at] = __bfloat16_as_ushort(v.x);
                    if (col + 1 < n) c[at + 1] = __bfloat16_as_ushort(v.y);
                }
            }
        }
    }
}

KERNEL void __launch_bounds__(128, 1) tensor_1_wgmma(unsigned a_slot, unsigned b_slot, unsigned short* c, unsigned m,
                                                     unsigned n, unsigned k) {
    const CUtensorMap *a = &memlab_tma_maps[min(a_slot, 127u)], *b = &memlab_tma_maps[min(b_slot, 127u)];
    WgRing r = wg_carve(64, 128, 1, 1);
    unsigned m0 = blockIdx.y * 64, n0 = blockIdx.x * 128;
    float d[64];
#pragma unroll
    for (unsigned i = 0; i < 64; i++) d[i] = 0.0f;
    for (unsigned step = 0; step < (k + 63) / 64; step++) {
        if (threadIdx.x == 0) wg_load(r, step, a, b, step * 64, m0, n0, false);
        wg_consume<128>(r, step, 0, d);
    }
    wg_store<128>(d, c, m, n, m0, n0);
}

// Rungs 2 to 5: warpgroup 0 produces, 1..=CONSUMERS consume; BM = 64 CONSUMERS, BN = N.
template <unsigned N, unsigned CONSUMERS, unsigned CLUSTER, bool SETMAXNREG>
DEV void wg_specialized(unsigned a_slot, unsigned b_slot, unsigned short* c, unsigned m, unsigned n, unsigned k,
                        unsigned stages) {
    const CUtensorMap *a = &memlab_tma_maps[min(a_slot, 127u)], *b = &memlab_tma_maps[min(b_slot, 127u)];
    WgRing r = wg_carve(64 * CONSUMERS, N, stages > 1 ? stages : 1, CONSUMERS * CLUSTER);
    unsigned m0 = blockIdx.y * 64 * CONSUMERS, n0 = blockIdx.x * N, steps = (k + 63) / 64, wg = threadIdx.x / 128;
    if (wg == 0) {
        if (SETMAXNREG) asm volatile("setmaxnreg.dec.sync.aligned.u32 40;");
        if (threadIdx.x == 0)
            for (unsigned step = 0; step < steps; step++) wg_load(r, step, a, b, step * 64, m0, n0, CLUSTER > 1);
    } else {
        if (SETMAXNREG) asm volatile("setmaxnreg.inc.sync.aligned.u32 232;");
        float d[N / 2];
#pragma unroll
        for (unsigned i = 0; i < N / 2; i++) d[i] = 0.0f;
        for (unsigned step = 0; step < steps; step++) wg_consume<N>(r, step, wg - 1, d);
        wg_store<N>(d, c, m, n, m0 + (wg - 1) * 64, n0);
    }
    if (CLUSTER > 1) cluster_barrier();
}

#define TENSOR_TWIN(NAME, THREADS, N, CONSUMERS, CLUSTER, SETMAXNREG)                                              \
    KERNEL void __launch_bounds__(THREADS, 1) NAME(unsigned a_slot, unsigned b_slot, unsigned short* c, unsigned m, \
                                                   unsigned n, unsigned k, unsigned stages) {                       \
        wg_specialized<N, CONSUMERS, CLUSTER, SETMAXNREG>(a_slot, b_slot, c, m, n, k, stages);                      \
    }
TENSOR_TWIN(tensor_2_pipelined, 256, 128, 1, 1, false)
TENSOR_TWIN(tensor_3_specialized, 384, 128, 2, 1, true)
TENSOR_TWIN(tensor_4_wide, 384, 256, 2, 1, true)
TENSOR_TWIN(tensor_5_multicast, 384, 256, 2, 2, true)
// Rungs 8 and 9's epilogue: the consumer's 64 x 256 tile times scale as BF16 into its staging (4 boxes of 64 x 64,
// 128-byte rows, 16-byte chunk c of row r at c ^ (r % 8)), one stmatrix x4 per 16 columns (lane l names row l % 8
// of 8 x 8 matrix l / 8), then 4 TMA stores by its thread 0; first waits for that thread's previous stores to have
// read the staging. device/wgmma.rs's Staging::store.
DEV void wg_store_staged(const float* d, float scale, unsigned staging, const CUtensorMap* map, unsigned row0,
                         unsigned col0, unsigned slice) {
    unsigned t = threadIdx.x % 128, lane = t % 32, r = 16 * (t / 32) + 8 * (lane / 8 % 2) + lane % 8;
    if (t == 0) asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory");
    asm volatile("barrier.sync.aligned %0, 128;" ::"r"(1 + slice) : "memory");
#pragma unroll
    for (unsigned j = 0; j < 32; j += 2) {
        unsigned p[4];
#pragma unroll
        for (unsigned i = 0; i < 4; i++) {
            __nv_bfloat162 v = __floats2bfloat162_rn(d[4 * j + 2 * i] * scale, d[4 * j + 2 * i + 1] * scale);
            p[i] = *reinterpret_cast<unsigned*>(&v);
        }
        unsigned g = j + lane / 16, at = staging + g / 8 * 8192 + r * 128 + ((g % 8) ^ (r % 8)) * 16;
        asm volatile("stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0], {%1, %2, %3, %4};" ::"r"(at), "r"(p[0]),
                     "r"(p[1]), "r"(p[2]), "r"(p[3])
                     : "memory");
    }
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    asm volatile("barrier.sync.aligned %0, 128;" ::"r"(1 + slice) : "memory");
    if (t == 0) {
        for (unsigned bx = 0; bx < 4; bx++)
            asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group [%0, {%1, %2}], [%3];" ::"l"(map),
                         "r"(col0 + bx * 64), "r"(row0), "r"(staging + bx * 8192)
                         : "memory");
        asm volatile("cp.async.bulk.commit_group;" ::: "memory");
    }
}

// Rungs 6 to 9: rung 4 on min(SMs, tiles) persistent blocks, tiles in bands of 8 tile rows
// (memlab_contracts::tensor::tile_origin); the ring's steps run on across tiles. T: the element
// of A, B and C (BF16 bits, or FP32 multiplied in TF32: 32 per 128-byte row instead of 64).
// STAGED (rungs 8 and 9): C through the staging after the ring and the map in slot c_slot, not
// c, scaled by scale. FP8 (rung 9): e4m3 A and B, 128 per 128-byte row, BF16 C.
template <class T, bool STAGED = false, bool FP8 = false>
DEV void wg_persistent(unsigned a_slot, unsigned b_slot, T* c, unsigned c_slot, float scale, unsigned m, unsigned n,
                       unsigned k, unsigned stages) {
    constexpr bool TF32 = sizeof(T) == 4;
    constexpr unsigned BK = TF32 ? 32 : FP8 ? 128 : 64;
    const CUtensorMap *a = &memlab_tma_maps[min(a_slot, 127u)], *b = &memlab_tma_maps[min(b_slot, 127u)];
    WgRing r = wg_carve(128, 256, stages > 1 ? stages : 1, 2);
    unsigned rows = (m + 127) / 128, cols = (n + 255) / 256, count = rows * cols, steps = (k + BK - 1) / BK;
    unsigned wg = threadIdx.x / 128;
    auto origin = [&](unsigned t, unsigned& m0, unsigned& n0) {
        unsigned per_band = 8 * cols, first = t / per_band * 8, height = min(rows - first, 8u), inside = t % per_band;
        m0 = (first + inside % height) * 128;
        n0 = inside / height * 256;
    };
    if (wg == 0) {
        asm volatile("setmaxnreg.dec.sync.aligned.u32 40;");
        if (threadIdx.x == 0)
            for (unsigned t = blockIdx.x, step = 0; t < count; t += gridDim.x, step += steps) {
                unsigned m0, n0;
                origin(t, m0, n0);
                for (unsigned s = 0; s < steps; s++) wg_load(r, step + s, a, b, s * BK, m0, n0, false);
            }
    } else {
        asm volatile("setmaxnreg.inc.sync.aligned.u32 232;");
        unsigned ring = r.stages * (r.a_bytes + r.b_bytes + 16);
        unsigned staging = r.base + (ring + 1023) / 1024 * 1024 + (wg - 1) * 64 * 256 * 2;
        const CUtensorMap* cmap = &memlab_tma_maps[min(c_slot, 127u)];
        for (unsigned t = blockIdx.x, step = 0; t < count; t += gridDim.x, step += steps) {
            unsigned m0, n0;
            origin(t, m0, n0);
            float d[128];
#pragma unroll
            for (unsigned i = 0; i < 128; i++) d[i] = 0.0f;
            for (unsigned s = 0; s < steps; s++) wg_consume<256, TF32, FP8>(r, step + s, wg - 1, d);
            if constexpr (STAGED) wg_store_staged(d, scale, staging, cmap, m0 + (wg - 1) * 64, n0, wg - 1);
            else wg_store<256>(d, c, m, n, m0 + (wg - 1) * 64, n0);
        }
        if (STAGED && threadIdx.x % 128 == 0) asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory");
    }
}
KERNEL void __launch_bounds__(384, 1) tensor_6_persistent(unsigned a_slot, unsigned b_slot, unsigned short* c,
                                                          unsigned m, unsigned n, unsigned k, unsigned stages) {
    wg_persistent(a_slot, b_slot, c, 0, 1.0f, m, n, k, stages);
}
KERNEL void __launch_bounds__(384, 1) tensor_7_tf32(unsigned a_slot, unsigned b_slot, float* c, unsigned m, unsigned n,
                                                    unsigned k, unsigned stages) {
    wg_persistent(a_slot, b_slot, c, 0, 1.0f, m, n, k, stages);
}
KERNEL void __launch_bounds__(384, 1) tensor_8_tma_store(unsigned a_slot, unsigned b_slot, unsigned c_slot, unsigned m,
                                                         unsigned n, unsigned k, unsigned stages) {
    wg_persistent<unsigned short, true>(a_slot, b_slot, (unsigned short*)nullptr, c_slot, 1.0f, m, n, k, stages);
}
KERNEL void __launch_bounds__(384, 1) tensor_9_fp8(unsigned a_slot, unsigned b_slot, unsigned c_slot, float scale,
                                                   unsigned m, unsigned n, unsigned k, unsigned stages) {
    wg_persistent<unsigned short, true, true>(a_slot, b_slot, (unsigned short*)nullptr, c_slot, scale, m, n, k, stages);
}
#endif
