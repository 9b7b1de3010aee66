// Reductions (sum, mean, max, min over any set of dimensions) and the fused MSE loss.
//
// The host permutes the input's layout so the kept dimensions come first and the reduced ones
// last; output o then reduces the `run` consecutive logical elements o*run .. o*run+run-1. Two
// passes, so that a reduction with few outputs (a full sum of a large tensor) still fills the GPU:
//   reduce_<op>_<dtype>:         grid (outputs, chunks); block b reduces chunk blockIdx.y of output
//                                blockIdx.x into partial[o * chunks + c] (f64);
//   reduce_finish_<op>_<dtype>:  one thread per output combines its chunks and rounds once.
// Accumulation is in f64, as on the CPU backend. NaN propagates through max and min.
//
// Launch: pass 1 with blockDim.x == REDUCE_THREADS (a power of two); pass 2 any grid.

#include "common.cuh"

#define REDUCE_THREADS 256

struct SumOp {
    __device__ static __forceinline__ double identity() { return 0.0; }
    __device__ static __forceinline__ double combine(double a, double b) { return a + b; }
};
struct MaxOp {
    __device__ static __forceinline__ double identity() { return -__longlong_as_double(0x7ff0000000000000ll); }
    __device__ static __forceinline__ double combine(double a, double b) {
        return (isnan(a) || isnan(b)) ? __longlong_as_double(0x7ff8000000000000ll) : fmax(a, b);
    }
};
struct MinOp {
    __device__ static __forceinline__ double identity() { return __longlong_as_double(0x7ff0000000000000ll); }
    __device__ static __forceinline__ double combine(double a, double b) {
        return (isnan(a) || isnan(b)) ? __longlong_as_double(0x7ff8000000000000ll) : fmin(a, b);
    }
};

// Tree reduction of one value per thread within the block; thread 0 gets the result.
template <class Op>
__device__ double block_reduce(double v) {
    __shared__ double scratch[REDUCE_THREADS];
    scratch[threadIdx.x] = v;
    __syncthreads();
    for (unsigned half = blockDim.x / 2; half > 0; half /= 2) {
        if (threadIdx.x < half) scratch[threadIdx.x] = Op::combine(scratch[threadIdx.x], scratch[threadIdx.x + half]);
        __syncthreads();
    }
    return scratch[0];
}

template <class T, class Op>
__device__ void reduce_partial(double* __restrict__ partial, const T* __restrict__ in, Strided L, i64 outputs, i64 run, i64 chunk) {
    const i64 chunks = gridDim.y;
    for (i64 o = blockIdx.x; o < outputs; o += gridDim.x) {
        const i64 begin = (i64)blockIdx.y * chunk;
        const i64 end = begin + chunk < run ? begin + chunk : run;
        double acc = Op::identity();
        for (i64 j = begin + threadIdx.x; j < end; j += blockDim.x)
            acc = Op::combine(acc, to_f64(in[strided_offset(L, o * run + j)]));
        acc = block_reduce<Op>(acc);
        if (threadIdx.x == 0) partial[o * chunks + blockIdx.y] = acc;
        __syncthreads();  // scratch is reused by the next output of this block
    }
}

template <class T, class Op, bool MEAN>
__device__ void reduce_finish(T* __restrict__ out, const double* __restrict__ partial, i64 outputs, i64 chunks, i64 run) {
    for (i64 o = global_thread(); o < outputs; o += grid_threads()) {
        double acc = Op::identity();
        for (i64 c = 0; c < chunks; ++c) acc = Op::combine(acc, partial[o * chunks + c]);
        if (MEAN) acc /= (double)run;
        out[o] = from_f64<T>(acc);
    }
}

#define REDUCE_KERNELS(T, suffix)                                                                   \
    extern "C" __global__ void reduce_sum_##suffix(double* partial, const T* in, Strided L, i64 outputs, i64 run, i64 chunk) { \
        reduce_partial<T, SumOp>(partial, in, L, outputs, run, chunk);                              \
    }                                                                                               \
    extern "C" __global__ void reduce_max_##suffix(double* partial, const T* in, Strided L, i64 outputs, i64 run, i64 chunk) { \
        reduce_partial<T, MaxOp>(partial, in, L, outputs, run, chunk);                              \
    }                                                                                               \
    extern "C" __global__ void reduce_min_##suffix(double* partial, const T* in, Strided L, i64 outputs, i64 run, i64 chunk) { \
        reduce_partial<T, MinOp>(partial, in, L, outputs, run, chunk);                              \
    }                                                                                               \
    extern "C" __global__ void reduce_finish_sum_##suffix(T* out, const double* partial, i64 outputs, i64 chunks, i64 run) { \
        reduce_finish<T, SumOp, false>(out, partial, outputs, chunks, run);                         \
    }                                                                                               \
    extern "C" __global__ void reduce_finish_max_##suffix(T* out, const double* partial, i64 outputs, i64 chunks, i64 run) { \
        reduce_finish<T, MaxOp, false>(out, partial, outputs, chunks, run);                         \
    }                                                                                               \
    extern "C" __global__ void reduce_finish_min_##suffix(T* out, const double* partial, i64 outputs, i64 chunks, i64 run) { \
        reduce_finish<T, MinOp, false>(out, partial, outputs, chunks, run);                         \
    }
FOR_ALL_TYPES(REDUCE_KERNELS)

// The mean of an integer tensor is refused on the host, as on the CPU.
#define REDUCE_MEAN(T, suffix)                                                                      \
    extern "C" __global__ void reduce_finish_mean_##suffix(T* out, const double* partial, i64 outputs, i64 chunks, i64 run) { \
        reduce_finish<T, SumOp, true>(out, partial, outputs, chunks, run);                          \
    }
FOR_FLOAT_TYPES(REDUCE_MEAN)

// MSE loss, mean((pred - target)^2), fused into one pass. Each step rounds to the dtype exactly as
// the unfused ops would (sub, then square, then an f64 mean), so it agrees with
// `pred.sub(target).square().mean_all()` bit for bit. Pass 1 writes one f64 partial per block;
// reduce_finish_mean_<dtype> with outputs = 1, chunks = gridDim.x, run = n finishes it.
#define MSE_SUM(T, suffix)                                                                          \
    extern "C" __global__ void mse_sum_##suffix(double* partial, const T* pred, Strided Lp, const T* target, Strided Lt, i64 n) { \
        double acc = 0.0;                                                                           \
        for (i64 i = global_thread(); i < n; i += grid_threads()) {                                 \
            const float d = to_f32(from_f32<T>(to_f32(pred[strided_offset(Lp, i)]) - to_f32(target[strided_offset(Lt, i)]))); \
            acc += to_f64(from_f32<T>(d * d));                                                      \
        }                                                                                           \
        acc = block_reduce<SumOp>(acc);                                                             \
        if (threadIdx.x == 0) partial[blockIdx.x] = acc;                                            \
    }
FOR_FLOAT_TYPES(MSE_SUM)
