// Random fills made on the device: the lecture's GPU-sized matrices (2 GiB and more) would take
// seconds to draw on the host and copy over. A counter-based generator: element pair j draws two
// 64-bit hashes of (seed, j), so any thread can make any element and the result does not depend
// on the launch shape. Normals come from Box–Muller. (The CPU backend draws from ChaCha8; the two
// give different samples of the same distributions, as torch's CPU and CUDA generators do.)
//
// Launch: any grid (grid-stride loops over pairs).

#include "common.cuh"

// splitmix64's finaliser: a bijective mix with good avalanche.
__device__ __forceinline__ u64 mix64(u64 z) {
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

// Uniform on (0, 1]: 24 random bits (every value exact in f32; never 0, so log() is finite).
__device__ __forceinline__ float unit_open0(u64 h) { return (float)((h >> 40) + 1) * 5.9604644775390625e-8f; }

__device__ __forceinline__ void draw_pair(u64 seed, i64 j, float& u1, float& u2) {
    const u64 base = mix64(seed ^ 0x9e3779b97f4a7c15ull) + 2ull * (u64)j * 0x9e3779b97f4a7c15ull;
    u1 = unit_open0(mix64(base));
    u2 = unit_open0(mix64(base + 0x9e3779b97f4a7c15ull));
}

#define RANDN(T, suffix)                                                                            \
    extern "C" __global__ void randn_##suffix(T* out, i64 n, u64 seed) {                            \
        for (i64 j = global_thread(); 2 * j < n; j += grid_threads()) {                             \
            float u1, u2;                                                                           \
            draw_pair(seed, j, u1, u2);                                                             \
            const float r = sqrtf(-2.0f * logf(u1));                                                \
            float s, c;                                                                             \
            sincospif(2.0f * u2, &s, &c);                                                           \
            out[2 * j] = from_f32<T>(r * c);                                                        \
            if (2 * j + 1 < n) out[2 * j + 1] = from_f32<T>(r * s);                                 \
        }                                                                                           \
    }
FOR_FLOAT_TYPES(RANDN)

// Uniform on [0, 1).
#define RAND(T, suffix)                                                                             \
    extern "C" __global__ void rand_##suffix(T* out, i64 n, u64 seed) {                             \
        for (i64 j = global_thread(); 2 * j < n; j += grid_threads()) {                             \
            float u1, u2;                                                                           \
            draw_pair(seed, j, u1, u2);                                                             \
            out[2 * j] = from_f32<T>(1.0f - u1);                                                    \
            if (2 * j + 1 < n) out[2 * j + 1] = from_f32<T>(1.0f - u2);                             \
        }                                                                                           \
    }
FOR_FLOAT_TYPES(RAND)
