// Optimizer updates, in place: SGD (p -= lr*g) and AdaGrad (s += g^2; p -= lr*g/sqrt(s + eps)).
// They are memory bound (AdaGrad reads three arrays and writes two, for 7 FLOPs per element), so
// the fast versions (`*_vec`) move 16 bytes per load and store and walk the arrays with a
// grid-stride loop; the plain versions, one element per thread, are the reference they are
// tested against and the fallback when a pointer is not 16-byte aligned.
//
// Arithmetic matches the CPU backend exactly (compiled with --fmad=false, so s + g*g is not fused
// into one rounding): f32 in f32; bf16/f16 widened to f32, with the state rounded to its dtype
// before the parameter update reads it.
//
// Launch: any grid. The `_vec` kernels need p, s and g 16-byte aligned.

#include "common.cuh"

template <class T>
__device__ __forceinline__ void sgd_one(T& p, T g, float lr) {
    p = from_f32<T>(to_f32(p) - lr * to_f32(g));
}

template <class T>
__device__ __forceinline__ void adagrad_one(T& p, T& s, T g, float lr, float eps) {
    const float gf = to_f32(g);
    s = from_f32<T>(to_f32(s) + gf * gf);
    p = from_f32<T>(to_f32(p) - lr * gf / sqrtf(to_f32(s) + eps));
}

// ---- the reference: one element per thread ------------------------------------------------------

#define PLAIN_UPDATES(T, suffix)                                                                    \
    extern "C" __global__ void sgd_##suffix(T* __restrict__ p, const T* __restrict__ g, i64 n, float lr) { \
        const i64 i = global_thread();                                                              \
        if (i < n) sgd_one(p[i], g[i], lr);                                                         \
    }                                                                                               \
    extern "C" __global__ void adagrad_##suffix(T* __restrict__ p, T* __restrict__ s, const T* __restrict__ g, i64 n, float lr, float eps) { \
        const i64 i = global_thread();                                                              \
        if (i < n) adagrad_one(p[i], s[i], g[i], lr, eps);                                          \
    }
FOR_FLOAT_TYPES(PLAIN_UPDATES)

// ---- vectorised: 16 bytes per access (4 f32 or 8 bf16/f16), grid-stride -------------------------

// A 16-byte vector viewed as V elements of T (V = 16 / sizeof(T)). Element access uses
// compile-time indices only (unrolled loops), so the vector stays in registers.
template <class T> struct Vec16;
template <> struct Vec16<float> {
    static const int V = 4;
    float4 v;
    __device__ __forceinline__ float get(int k) const { return k == 0 ? v.x : k == 1 ? v.y : k == 2 ? v.z : v.w; }
    __device__ __forceinline__ void set(int k, float x) {
        if (k == 0) v.x = x; else if (k == 1) v.y = x; else if (k == 2) v.z = x; else v.w = x;
    }
};
template <class H> struct Vec16Half {
    static const int V = 8;
    uint4 v;
    __device__ __forceinline__ unsigned word(int k) const { return k < 2 ? (k == 0 ? v.x : v.y) : (k == 2 ? v.z : v.w); }
    __device__ __forceinline__ void set_word(int k, unsigned w) {
        if (k == 0) v.x = w; else if (k == 1) v.y = w; else if (k == 2) v.z = w; else v.w = w;
    }
    __device__ __forceinline__ H get(int k) const { H h; h.bits = (unsigned short)(word(k / 2) >> (16 * (k % 2))); return h; }
    __device__ __forceinline__ void set(int k, H h) {
        const unsigned shift = 16 * (k % 2), w = word(k / 2);
        set_word(k / 2, (w & ~(0xffffu << shift)) | ((unsigned)h.bits << shift));
    }
};
template <> struct Vec16<bf16> : Vec16Half<bf16> {};
template <> struct Vec16<f16> : Vec16Half<f16> {};

template <class T>
__device__ __forceinline__ Vec16<T> load16(const T* base, i64 i) {
    Vec16<T> x;
    x.v = reinterpret_cast<const decltype(x.v)*>(base)[i];
    return x;
}
template <class T>
__device__ __forceinline__ Vec16<T> load16_readonly(const T* base, i64 i) {
    Vec16<T> x;
    x.v = __ldg(reinterpret_cast<const decltype(x.v)*>(base) + i);
    return x;
}
template <class T>
__device__ __forceinline__ void store16(T* base, i64 i, const Vec16<T>& x) {
    reinterpret_cast<decltype(x.v)*>(base)[i] = x.v;
}

template <class T>
__device__ void sgd_vec(T* __restrict__ p, const T* __restrict__ g, i64 n, float lr) {
    const int V = Vec16<T>::V;
    const i64 nv = n / V;
    for (i64 i = global_thread(); i < nv; i += grid_threads()) {
        Vec16<T> pv = load16(p, i);
        const Vec16<T> gv = load16_readonly(g, i);
#pragma unroll
        for (int k = 0; k < V; ++k) {
            T pe = pv.get(k);
            sgd_one(pe, gv.get(k), lr);
            pv.set(k, pe);
        }
        store16(p, i, pv);
    }
    for (i64 i = nv * V + global_thread(); i < n; i += grid_threads()) sgd_one(p[i], g[i], lr);
}

template <class T>
__device__ void adagrad_vec(T* __restrict__ p, T* __restrict__ s, const T* __restrict__ g, i64 n, float lr, float eps) {
    const int V = Vec16<T>::V;
    const i64 nv = n / V;
    for (i64 i = global_thread(); i < nv; i += grid_threads()) {
        // Three independent 16-byte loads in flight before the first use.
        Vec16<T> pv = load16(p, i);
        Vec16<T> sv = load16(s, i);
        const Vec16<T> gv = load16_readonly(g, i);
#pragma unroll
        for (int k = 0; k < V; ++k) {
            T pe = pv.get(k), se = sv.get(k);
            adagrad_one(pe, se, gv.get(k), lr, eps);
            pv.set(k, pe);
            sv.set(k, se);
        }
        store16(s, i, sv);
        store16(p, i, pv);
    }
    for (i64 i = nv * V + global_thread(); i < n; i += grid_threads()) adagrad_one(p[i], s[i], g[i], lr, eps);
}

#define VEC_UPDATES(T, suffix)                                                                      \
    extern "C" __global__ void sgd_##suffix##_vec(T* __restrict__ p, const T* __restrict__ g, i64 n, float lr) { \
        sgd_vec<T>(p, g, n, lr);                                                                    \
    }                                                                                               \
    extern "C" __global__ void adagrad_##suffix##_vec(T* __restrict__ p, T* __restrict__ s, const T* __restrict__ g, i64 n, float lr, float eps) { \
        adagrad_vec<T>(p, s, g, n, lr, eps);                                                        \
    }
FOR_FLOAT_TYPES(VEC_UPDATES)
