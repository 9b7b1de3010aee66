// Shared by every kernel file. NVRTC has no file system access here: the Rust loader replaces the
// `#include "common.cuh"` line of each .cu file with this text (and a #line directive, so compiler
// messages still name the right file and line).
//
// Element types. bfloat16 and float16 are carried as 16-bit patterns and converted by hand (bf16)
// or by one PTX instruction (f16) instead of through <cuda_bf16.h>/<cuda_fp16.h>: the kernels then
// compile with libnvrtc alone (no CUDA include folder on the machine that compiles them, CI
// included), and the bf16 rounding below is the same round-to-nearest-even, NaN-quieting rule the
// `half` crate uses on the CPU, so both backends produce the same bits.

typedef long long i64;
typedef unsigned long long u64;

struct bf16 { unsigned short bits; };
struct f16 { unsigned short bits; };

// A strided view: element i (row-major logical order) lives at offset + sum(index_d * strides[d]).
// Passed by value (144 bytes). `contiguous` lets a kernel skip the index arithmetic.
#define MAX_DIMS 8
struct Strided {
    i64 shape[MAX_DIMS];
    i64 strides[MAX_DIMS];
    i64 offset;
    int ndim;
    int contiguous;
};

__device__ __forceinline__ i64 strided_offset(const Strided& L, i64 i) {
    if (L.contiguous) return L.offset + i;
    i64 off = L.offset;
    // Fixed trip count with compile-time indices keeps the arrays in parameter space (a run-time
    // index would copy the struct to local memory).
#pragma unroll
    for (int k = 0; k < MAX_DIMS; ++k) {
        const int d = MAX_DIMS - 1 - k;
        if (d < L.ndim) {
            const i64 n = L.shape[d];
            const i64 q = i / n;
            off += (i - q * n) * L.strides[d];
            i = q;
        }
    }
    return off;
}

// Grid-stride loop bounds.
__device__ __forceinline__ i64 global_thread() { return (i64)blockIdx.x * blockDim.x + threadIdx.x; }
__device__ __forceinline__ i64 grid_threads() { return (i64)gridDim.x * blockDim.x; }

// ---- conversions -------------------------------------------------------------------------------

__device__ __forceinline__ float bf16_to_f32(bf16 h) { return __uint_as_float(((unsigned)h.bits) << 16); }

// Round to nearest, ties to even; NaN keeps its sign and top payload bits and is made quiet.
__device__ __forceinline__ bf16 f32_to_bf16(float f) {
    unsigned x = __float_as_uint(f);
    bf16 h;
    if ((x & 0x7fffffffu) > 0x7f800000u) {
        h.bits = (unsigned short)((x >> 16) | 0x0040u);
        return h;
    }
    x += 0x7fffu + ((x >> 16) & 1u);
    h.bits = (unsigned short)(x >> 16);
    return h;
}

__device__ __forceinline__ float f16_to_f32(f16 h) {
    float f;
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h.bits));
    return f;
}

__device__ __forceinline__ f16 f32_to_f16(float f) {
    f16 h;
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h.bits) : "f"(f));
    return h;
}

// f64 -> f32 rounding toward zero with a sticky last bit ("round to odd"). Rounding that result
// once more to a format with at least two fewer significand bits (bf16, f16) gives the correctly
// rounded f64 -> bf16/f16 result, with no double-rounding error.
__device__ __forceinline__ float f64_to_f32_odd(double d) {
    float f = __double2float_rz(d);
    if (!isnan(d) && (double)f != d) f = __uint_as_float(__float_as_uint(f) | 1u);
    return f;
}

// to_f32 / from_f32: how floating-point elements are computed on (as on the CPU backend: widen to
// f32, compute, round back once). to_f64 / from_f64: the CPU backend's route for reductions and
// for anything involving integers (from_f64 truncates toward zero and saturates for integers, as
// Rust's `as` does; NaN becomes 0).
__device__ __forceinline__ float to_f32(float x) { return x; }
__device__ __forceinline__ float to_f32(bf16 x) { return bf16_to_f32(x); }
__device__ __forceinline__ float to_f32(f16 x) { return f16_to_f32(x); }
__device__ __forceinline__ float to_f32(int x) { return (float)x; }
__device__ __forceinline__ float to_f32(i64 x) { return (float)x; }

__device__ __forceinline__ double to_f64(float x) { return (double)x; }
__device__ __forceinline__ double to_f64(bf16 x) { return (double)bf16_to_f32(x); }
__device__ __forceinline__ double to_f64(f16 x) { return (double)f16_to_f32(x); }
__device__ __forceinline__ double to_f64(int x) { return (double)x; }
__device__ __forceinline__ double to_f64(i64 x) { return (double)x; }

template <class T> __device__ __forceinline__ T from_f32(float x);
template <> __device__ __forceinline__ float from_f32<float>(float x) { return x; }
template <> __device__ __forceinline__ bf16 from_f32<bf16>(float x) { return f32_to_bf16(x); }
template <> __device__ __forceinline__ f16 from_f32<f16>(float x) { return f32_to_f16(x); }

template <class T> __device__ __forceinline__ T from_f64(double x);
template <> __device__ __forceinline__ float from_f64<float>(double x) { return __double2float_rn(x); }
template <> __device__ __forceinline__ bf16 from_f64<bf16>(double x) { return f32_to_bf16(f64_to_f32_odd(x)); }
template <> __device__ __forceinline__ f16 from_f64<f16>(double x) { return f32_to_f16(f64_to_f32_odd(x)); }
// CUDA's conversions saturate like Rust's `as` but turn NaN into the most negative integer.
template <> __device__ __forceinline__ int from_f64<int>(double x) { return x != x ? 0 : __double2int_rz(x); }
template <> __device__ __forceinline__ i64 from_f64<i64>(double x) { return x != x ? 0 : __double2ll_rz(x); }

template <class T> __device__ __forceinline__ T zero_of();
template <> __device__ __forceinline__ float zero_of<float>() { return 0.0f; }
template <> __device__ __forceinline__ bf16 zero_of<bf16>() { bf16 h; h.bits = 0; return h; }
template <> __device__ __forceinline__ f16 zero_of<f16>() { f16 h; h.bits = 0; return h; }
template <> __device__ __forceinline__ int zero_of<int>() { return 0; }
template <> __device__ __forceinline__ i64 zero_of<i64>() { return 0; }

// Wrapping 64-bit integer arithmetic (signed overflow is undefined in C++; unsigned is not).
__device__ __forceinline__ i64 wrap_add(i64 a, i64 b) { return (i64)((u64)a + (u64)b); }
__device__ __forceinline__ i64 wrap_sub(i64 a, i64 b) { return (i64)((u64)a - (u64)b); }
__device__ __forceinline__ i64 wrap_mul(i64 a, i64 b) { return (i64)((u64)a * (u64)b); }
__device__ __forceinline__ i64 wrap_neg(i64 a) { return (i64)(0ull - (u64)a); }

// Integer elements for integer arithmetic: exactly, as i64 (f64 would round above 2^53).
__device__ __forceinline__ i64 int_in(int x) { return (i64)x; }
__device__ __forceinline__ i64 int_in(i64 x) { return x; }

// An i64 result stored into an integer dtype: i32 keeps the low 32 bits (overflow wraps, as in
// PyTorch and the CPU backend).
template <class T> __device__ __forceinline__ T from_i64(i64 x);
template <> __device__ __forceinline__ int from_i64<int>(i64 x) { return (int)(unsigned)(u64)x; }
template <> __device__ __forceinline__ i64 from_i64<i64>(i64 x) { return x; }

// Every float-dtype kernel is instantiated for these three, every integer one for the two below.
#define FOR_FLOAT_TYPES(M) M(float, f32) M(bf16, bf16) M(f16, f16)
#define FOR_INT_TYPES(M) M(int, i32) M(i64, i64)
#define FOR_ALL_TYPES(M) FOR_FLOAT_TYPES(M) FOR_INT_TYPES(M)
// The same, passing one more argument (an op's name) to M.
#define FOR_FLOAT_TYPES_WITH(M, a) M(float, f32, a) M(bf16, bf16, a) M(f16, f16, a)
#define FOR_INT_TYPES_WITH(M, a) M(int, i32, a) M(i64, i64, a)
