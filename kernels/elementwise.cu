// Elementwise operations, one kernel per op and dtype (`sqrt_f32`, `add_bf16`, `neg_i64`, ...), for
// the ops declared in src/base/op/ (a kernel is named after the op's `kernel`, else its `name`).
// Each op is one line below per domain: its float arithmetic (every float dtype) and, where the
// declaration keeps it integral, its integer arithmetic (i32, i64). Inputs are strided views
// (broadcasting is a stride of 0); the output is fresh and contiguous. Floating-point elements are
// computed in f32 and rounded back once, like the CPU backend. Integer elements use exact,
// wrapping i64 arithmetic (i32 results keep their low 32 bits), again as the CPU backend does, so
// the two agree bit for bit. `tests/tensor/kernels_compile.rs` checks that every declared op has its
// kernels.
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

// UNARY_FLOAT(name, expr): the op on floats (x the element, s the op's scalar, unused by most)
// and its kernels `name_f32`, `name_bf16`, `name_f16`. UNARY_INT, BINARY_FLOAT and BINARY_INT
// likewise (integers: `name_i32`, `name_i64`; binary ops see `a` and `b`).
#define UNARY_FLOAT_KERNEL(T, suffix, name)                                                         \
    extern "C" __global__ void name##_##suffix(T* out, const T* in, Strided L, i64 n, float s) {     \
        unary_float<T, UF_##name>(out, in, L, n, s);                                                \
    }
#define UNARY_FLOAT(name, expr)                                                                     \
    struct UF_##name {                                                                              \
        __device__ static __forceinline__ float apply(float x, float s) { (void)s; return (expr); } \
    };                                                                                              \
    FOR_FLOAT_TYPES_WITH(UNARY_FLOAT_KERNEL, name)

#define UNARY_INT_KERNEL(T, suffix, name)                                                           \
    extern "C" __global__ void name##_##suffix(T* out, const T* in, Strided L, i64 n, i64 s) {       \
        unary_int<T, UI_##name>(out, in, L, n, s);                                                  \
    }
#define UNARY_INT(name, expr)                                                                       \
    struct UI_##name {                                                                              \
        __device__ static __forceinline__ i64 apply(i64 x, i64 s) { (void)s; return (expr); }       \
    };                                                                                              \
    FOR_INT_TYPES_WITH(UNARY_INT_KERNEL, name)

#define BINARY_FLOAT_KERNEL(T, suffix, name)                                                        \
    extern "C" __global__ void name##_##suffix(T* out, const T* a, Strided La, const T* b, Strided Lb, i64 n) { \
        binary_float<T, BF_##name>(out, a, La, b, Lb, n);                                           \
    }
#define BINARY_FLOAT(name, expr)                                                                    \
    struct BF_##name {                                                                              \
        __device__ static __forceinline__ float apply(float a, float b) { return (expr); }          \
    };                                                                                              \
    FOR_FLOAT_TYPES_WITH(BINARY_FLOAT_KERNEL, name)

#define BINARY_INT_KERNEL(T, suffix, name)                                                          \
    extern "C" __global__ void name##_##suffix(T* out, const T* a, Strided La, const T* b, Strided Lb, i64 n) { \
        binary_int<T, BI_##name>(out, a, La, b, Lb, n);                                             \
    }
#define BINARY_INT(name, expr)                                                                      \
    struct BI_##name {                                                                              \
        __device__ static __forceinline__ i64 apply(i64 a, i64 b) { return (expr); }               \
    };                                                                                              \
    FOR_INT_TYPES_WITH(BINARY_INT_KERNEL, name)

// ---- the ops -----------------------------------------------------------------------------------

// GeLU and its derivative (src/base/math.rs computes the same on the CPU by a polynomial `erf`;
// CUDA's `erff` and `expf` land within the declared `Approximation`).
__device__ __forceinline__ float gelu_derivative(float x) {
    return 0.5f * (1.0f + erff(x * 0.70710678118654752f)) + x * 0.39894228040143268f * expf(-0.5f * x * x);
}
__device__ __forceinline__ float gelu_tanh_inner(float x) { return 0.7978845608028654f * (x + 0.044715f * x * x * x); }
// (1 + tanh u)/2 and 1 - tanh^2 u from e = exp(-2|u|), not from t = tanhf(u): 1 + t and 1 - t^2
// subtract numbers near 1 for large |u| and kept a few bits of them (src/base/math.rs, likewise).
__device__ __forceinline__ float half_one_plus_tanh(float u, float* sech2) {
    float e = expf(-2.0f * fabsf(u));
    float r = 1.0f / (1.0f + e);
    *sech2 = 4.0f * e * r * r;
    return u >= 0.0f ? r : e * r;
}
__device__ __forceinline__ float gelu_tanh_value(float x) {
    float sech2;
    return x * half_one_plus_tanh(gelu_tanh_inner(x), &sech2);
}
__device__ __forceinline__ float gelu_tanh_derivative(float x) {
    float sech2;
    float half = half_one_plus_tanh(gelu_tanh_inner(x), &sech2);
    return half + 0.5f * x * sech2 * 0.7978845608028654f * (1.0f + 3.0f * 0.044715f * x * x);
}

UNARY_FLOAT(neg, -x)
UNARY_FLOAT(sqrt, sqrtf(x))
UNARY_FLOAT(rsqrt, 1.0f / sqrtf(x))
UNARY_FLOAT(square, x * x)
UNARY_FLOAT(add_scalar, x + s)
UNARY_FLOAT(mul_scalar, x * s)
UNARY_FLOAT(div_scalar, x / s)
UNARY_FLOAT(pow_scalar, powf(x, s))
UNARY_FLOAT(relu, (x > 0.0f || x != x) ? x : 0.0f)
UNARY_FLOAT(gelu, 0.5f * x * (1.0f + erff(x * 0.70710678118654752f)))
UNARY_FLOAT(gelu_tanh, gelu_tanh_value(x))
UNARY_FLOAT(erf, erff(x))
UNARY_FLOAT(exp, expf(x))

UNARY_INT(neg, wrap_neg(x))
UNARY_INT(square, wrap_mul(x, x))
UNARY_INT(add_scalar, wrap_add(x, s))
UNARY_INT(mul_scalar, wrap_mul(x, s))
UNARY_INT(relu, x > 0 ? x : 0)

BINARY_FLOAT(add, a + b)
BINARY_FLOAT(sub, a - b)
BINARY_FLOAT(mul, a * b)
BINARY_FLOAT(div, a / b)
BINARY_FLOAT(relu_backward, b <= 0.0f ? 0.0f : a)
BINARY_FLOAT(gelu_backward, a * gelu_derivative(b))
BINARY_FLOAT(gelu_tanh_backward, a * gelu_tanh_derivative(b))

BINARY_INT(add, wrap_add(a, b))
BINARY_INT(sub, wrap_sub(a, b))
BINARY_INT(mul, wrap_mul(a, b))
BINARY_INT(relu_backward, b > 0 ? a : 0)
