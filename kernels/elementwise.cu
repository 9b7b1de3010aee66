// Elementwise operations, one kernel per op and dtype (`sqrt_f32`, `add_bf16`, `neg_i64`, ...),
// matching `UnaryOp` and `BinaryOp` in src/tensor/ops.rs. Inputs are strided views (broadcasting is
// a stride of 0); the output is fresh and contiguous. Floating-point elements are computed in f32
// and rounded back once, like the CPU backend. Integer elements use exact, wrapping i64
// arithmetic (i32 results keep their low 32 bits), again as the CPU backend does, so the two
// agree bit for bit.
//
// Launch: any grid (grid-stride loops), blockDim.x threads per block.

#include "common.cuh"

template <class T, class Op>
__device__ void unary_float(T* __restrict__ out, const T* __restrict__ in, Strided L, i64 n, float s) {
    for (i64 i = global_thread(); i < n; i += grid_threads())
        out[i] = from_f32<T>(Op::apply(to_f32(in[strided_offset(L, i)]), s));
}

template <class T, class Op>
__device__ void unary_int(T* __restrict__ out, const T* __restrict__ in, Strided L, i64 n, i64 s) {
    for (i64 i = global_thread(); i < n; i += grid_threads())
        out[i] = from_i64<T>(Op::apply(int_in(in[strided_offset(L, i)]), s));
}

template <class T, class Op>
__device__ void binary_float(T* __restrict__ out, const T* __restrict__ a, Strided La, const T* __restrict__ b, Strided Lb, i64 n) {
    for (i64 i = global_thread(); i < n; i += grid_threads())
        out[i] = from_f32<T>(Op::apply(to_f32(a[strided_offset(La, i)]), to_f32(b[strided_offset(Lb, i)])));
}

template <class T, class Op>
__device__ void binary_int(T* __restrict__ out, const T* __restrict__ a, Strided La, const T* __restrict__ b, Strided Lb, i64 n) {
    for (i64 i = global_thread(); i < n; i += grid_threads())
        out[i] = from_i64<T>(Op::apply(int_in(a[strided_offset(La, i)]), int_in(b[strided_offset(Lb, i)])));
}

// ---- unary ops on floats: x is the element, s the op's scalar (unused by most) -----------------

#define UNARY_FLOAT_OP(name, expr)                                                                  \
    struct UF_##name {                                                                              \
        __device__ static __forceinline__ float apply(float x, float s) { (void)s; return (expr); } \
    };
UNARY_FLOAT_OP(neg, -x)
UNARY_FLOAT_OP(sqrt, sqrtf(x))
UNARY_FLOAT_OP(rsqrt, 1.0f / sqrtf(x))
UNARY_FLOAT_OP(square, x * x)
UNARY_FLOAT_OP(exp, expf(x))
UNARY_FLOAT_OP(log, logf(x))
UNARY_FLOAT_OP(abs, fabsf(x))
UNARY_FLOAT_OP(add_scalar, x + s)
UNARY_FLOAT_OP(mul_scalar, x * s)
UNARY_FLOAT_OP(div_scalar, x / s)
UNARY_FLOAT_OP(pow_scalar, powf(x, s))

#define UNARY_FLOAT_KERNEL(T, suffix, name)                                                         \
    extern "C" __global__ void name##_##suffix(T* out, const T* in, Strided L, i64 n, float s) {     \
        unary_float<T, UF_##name>(out, in, L, n, s);                                                \
    }
#define UNARY_FLOAT_ALL(T, suffix)                                                                  \
    UNARY_FLOAT_KERNEL(T, suffix, neg) UNARY_FLOAT_KERNEL(T, suffix, sqrt)                          \
    UNARY_FLOAT_KERNEL(T, suffix, rsqrt) UNARY_FLOAT_KERNEL(T, suffix, square)                      \
    UNARY_FLOAT_KERNEL(T, suffix, exp) UNARY_FLOAT_KERNEL(T, suffix, log)                           \
    UNARY_FLOAT_KERNEL(T, suffix, abs) UNARY_FLOAT_KERNEL(T, suffix, add_scalar)                    \
    UNARY_FLOAT_KERNEL(T, suffix, mul_scalar) UNARY_FLOAT_KERNEL(T, suffix, div_scalar)             \
    UNARY_FLOAT_KERNEL(T, suffix, pow_scalar)
FOR_FLOAT_TYPES(UNARY_FLOAT_ALL)

// ---- unary ops on integers (only those that stay integral; the others are refused on the host) -

#define UNARY_INT_OP(name, expr)                                                                    \
    struct UI_##name {                                                                              \
        __device__ static __forceinline__ i64 apply(i64 x, i64 s) { (void)s; return (expr); }       \
    };
UNARY_INT_OP(neg, wrap_neg(x))
UNARY_INT_OP(square, wrap_mul(x, x))
UNARY_INT_OP(abs, x < 0 ? wrap_neg(x) : x)
UNARY_INT_OP(add_scalar, wrap_add(x, s))
UNARY_INT_OP(mul_scalar, wrap_mul(x, s))

#define UNARY_INT_KERNEL(T, suffix, name)                                                           \
    extern "C" __global__ void name##_##suffix(T* out, const T* in, Strided L, i64 n, i64 s) {       \
        unary_int<T, UI_##name>(out, in, L, n, s);                                                  \
    }
#define UNARY_INT_ALL(T, suffix)                                                                    \
    UNARY_INT_KERNEL(T, suffix, neg) UNARY_INT_KERNEL(T, suffix, square)                            \
    UNARY_INT_KERNEL(T, suffix, abs) UNARY_INT_KERNEL(T, suffix, add_scalar)                        \
    UNARY_INT_KERNEL(T, suffix, mul_scalar)
FOR_INT_TYPES(UNARY_INT_ALL)

// ---- binary ops -------------------------------------------------------------------------------

#define BINARY_FLOAT_OP(name, expr)                                                                 \
    struct BF_##name {                                                                              \
        __device__ static __forceinline__ float apply(float a, float b) { return (expr); }          \
    };
BINARY_FLOAT_OP(add, a + b)
BINARY_FLOAT_OP(sub, a - b)
BINARY_FLOAT_OP(mul, a * b)
BINARY_FLOAT_OP(div, a / b)
BINARY_FLOAT_OP(pow, powf(a, b))
// NaN-propagating, like torch.maximum (fmaxf alone would drop the NaN).
BINARY_FLOAT_OP(maximum, (isnan(a) || isnan(b)) ? __int_as_float(0x7fc00000) : fmaxf(a, b))

#define BINARY_FLOAT_KERNEL(T, suffix, name)                                                        \
    extern "C" __global__ void name##_##suffix(T* out, const T* a, Strided La, const T* b, Strided Lb, i64 n) { \
        binary_float<T, BF_##name>(out, a, La, b, Lb, n);                                           \
    }
#define BINARY_FLOAT_ALL(T, suffix)                                                                 \
    BINARY_FLOAT_KERNEL(T, suffix, add) BINARY_FLOAT_KERNEL(T, suffix, sub)                         \
    BINARY_FLOAT_KERNEL(T, suffix, mul) BINARY_FLOAT_KERNEL(T, suffix, div)                         \
    BINARY_FLOAT_KERNEL(T, suffix, pow) BINARY_FLOAT_KERNEL(T, suffix, maximum)
FOR_FLOAT_TYPES(BINARY_FLOAT_ALL)

#define BINARY_INT_OP(name, expr)                                                                   \
    struct BI_##name {                                                                              \
        __device__ static __forceinline__ i64 apply(i64 a, i64 b) { return (expr); }               \
    };
BINARY_INT_OP(add, wrap_add(a, b))
BINARY_INT_OP(sub, wrap_sub(a, b))
BINARY_INT_OP(mul, wrap_mul(a, b))
BINARY_INT_OP(maximum, a > b ? a : b)

#define BINARY_INT_KERNEL(T, suffix, name)                                                          \
    extern "C" __global__ void name##_##suffix(T* out, const T* a, Strided La, const T* b, Strided Lb, i64 n) { \
        binary_int<T, BI_##name>(out, a, La, b, Lb, n);                                             \
    }
#define BINARY_INT_ALL(T, suffix)                                                                   \
    BINARY_INT_KERNEL(T, suffix, add) BINARY_INT_KERNEL(T, suffix, sub)                             \
    BINARY_INT_KERNEL(T, suffix, mul) BINARY_INT_KERNEL(T, suffix, maximum)
FOR_INT_TYPES(BINARY_INT_ALL)
