// Moving and converting elements: the strided copy behind `contiguous()`, dtype casts, `triu`, and
// fills. Outputs are fresh and contiguous; inputs are strided views.
//
// Launch: any grid (grid-stride loops).

#include "common.cuh"

// `contiguous()`: gathers a strided view into row-major order.
#define STRIDED_COPY(T, suffix)                                                                     \
    extern "C" __global__ void strided_copy_##suffix(T* __restrict__ out, const T* __restrict__ in, Strided L, i64 n) { \
        for (i64 i = global_thread(); i < n; i += grid_threads()) out[i] = in[strided_offset(L, i)]; \
    }
FOR_ALL_TYPES(STRIDED_COPY)

// Casts follow the CPU backend: float -> float through f32 (every f16/bf16 value is exact in f32,
// and f32 -> f16/bf16 rounds to nearest even); integer -> integer exactly through i64 (i64 -> i32
// keeps the low 32 bits); float <-> integer through f64 (to an integer: truncate toward zero and
// saturate, NaN becomes 0; to a float: round to nearest even).
template <class S, class D> struct Cast {
    __device__ static __forceinline__ D apply(S x) { return from_f64<D>(to_f64(x)); }
};
#define FLOAT_CAST(S, D)                                                                            \
    template <> struct Cast<S, D> {                                                                 \
        __device__ static __forceinline__ D apply(S x) { return from_f32<D>(to_f32(x)); }           \
    };
FLOAT_CAST(float, bf16)
FLOAT_CAST(float, f16)
FLOAT_CAST(bf16, float)
FLOAT_CAST(bf16, f16)
FLOAT_CAST(f16, float)
FLOAT_CAST(f16, bf16)
#define INT_CAST(S, D)                                                                              \
    template <> struct Cast<S, D> {                                                                 \
        __device__ static __forceinline__ D apply(S x) { return from_i64<D>(int_in(x)); }           \
    };
INT_CAST(int, i64)
INT_CAST(i64, int)
INT_CAST(int, int)
INT_CAST(i64, i64)

#define CAST_KERNEL(S, ssuf, D, dsuf)                                                               \
    extern "C" __global__ void cast_##ssuf##_##dsuf(D* __restrict__ out, const S* __restrict__ in, Strided L, i64 n) { \
        for (i64 i = global_thread(); i < n; i += grid_threads())                                   \
            out[i] = Cast<S, D>::apply(in[strided_offset(L, i)]);                                   \
    }
#define CAST_FROM(S, ssuf)                                                                          \
    CAST_KERNEL(S, ssuf, float, f32) CAST_KERNEL(S, ssuf, bf16, bf16) CAST_KERNEL(S, ssuf, f16, f16) \
    CAST_KERNEL(S, ssuf, int, i32) CAST_KERNEL(S, ssuf, i64, i64)
// Every ordered pair, identity included (the host never launches those, but they are harmless).
FOR_ALL_TYPES(CAST_FROM)

// Upper triangle of the last two dimensions: element (.., r, c) is kept when c >= r + diagonal.
#define TRIU(T, suffix)                                                                             \
    extern "C" __global__ void triu_##suffix(T* __restrict__ out, const T* __restrict__ in, Strided L, i64 n, i64 rows, i64 cols, i64 diagonal) { \
        for (i64 i = global_thread(); i < n; i += grid_threads()) {                                 \
            const i64 c = i % cols, r = (i / cols) % rows;                                          \
            out[i] = c < r + diagonal ? zero_of<T>() : in[strided_offset(L, i)];                    \
        }                                                                                           \
    }
FOR_ALL_TYPES(TRIU)

// Fills by element width: the host rounds the value into the dtype (exactly as the CPU backend
// does) and passes its bit pattern, so one kernel per width serves every dtype of that width.
extern "C" __global__ void fill_u16(unsigned short* out, i64 n, unsigned value) {
    for (i64 i = global_thread(); i < n; i += grid_threads()) out[i] = (unsigned short)value;
}
extern "C" __global__ void fill_u32(unsigned* out, i64 n, unsigned value) {
    for (i64 i = global_thread(); i < n; i += grid_threads()) out[i] = value;
}
extern "C" __global__ void fill_u64(u64* out, i64 n, u64 value) {
    for (i64 i = global_thread(); i < n; i += grid_threads()) out[i] = value;
}
