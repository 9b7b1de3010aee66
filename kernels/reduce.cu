// Reductions (sum, mean, max, min over any set of dimensions).
//
// The host permutes the input's layout so the kept dimensions come first and the reduced ones
// last; output o then reduces the `run` consecutive logical elements o*run .. o*run+run-1. Two
// passes, so that a reduction with few outputs (a full sum of a large tensor) still fills the GPU:
//   reduce_<op>_<dtype>:         grid (outputs, chunks); block b reduces chunk blockIdx.y of output
//                                blockIdx.x into partial[o * chunks + c];
//   reduce_finish_<op>_<dtype>:  one thread per output combines its chunks and rounds once.
// As on the CPU backend, floats accumulate in f64 (NaN propagates through max and min) and
// integers exactly in i64 (sums wrap); the partial buffer holds 8-byte accumulators of that type.
//
// Launch: pass 1 with blockDim.x == REDUCE_THREADS (a power of two); pass 2 any grid.

#include "common.cuh"

#define REDUCE_THREADS 256

// The accumulator of each element type, and the conversions in and out of it.
template <class T> struct Acc { typedef double type; };
template <> struct Acc<int> { typedef i64 type; };
template <> struct Acc<i64> { typedef i64 type; };

template <class T> __device__ __forceinline__ typename Acc<T>::type to_acc(T x) { return to_f64(x); }
template <> __device__ __forceinline__ i64 to_acc<int>(int x) { return (i64)x; }
template <> __device__ __forceinline__ i64 to_acc<i64>(i64 x) { return x; }

template <class T> __device__ __forceinline__ T from_acc(typename Acc<T>::type a) { return from_f64<T>(a); }
template <> __device__ __forceinline__ int from_acc<int>(i64 a) { return from_i64<int>(a); }
template <> __device__ __forceinline__ i64 from_acc<i64>(i64 a) { return a; }

__device__ __forceinline__ double nan64() { return __longlong_as_double(0x7ff8000000000000ll); }
__device__ __forceinline__ double inf64() { return __longlong_as_double(0x7ff0000000000000ll); }

template <class A> struct SumOp;
template <> struct SumOp<double> {
    __device__ static __forceinline__ double identity() { return 0.0; }
    __device__ static __forceinline__ double combine(double a, double b) { return a + b; }
};
template <> struct SumOp<i64> {
    __device__ static __forceinline__ i64 identity() { return 0; }
    __device__ static __forceinline__ i64 combine(i64 a, i64 b) { return wrap_add(a, b); }
};
template <class A> struct MaxOp;
template <> struct MaxOp<double> {
    __device__ static __forceinline__ double identity() { return -inf64(); }
    __device__ static __forceinline__ double combine(double a, double b) { return (isnan(a) || isnan(b)) ? nan64() : fmax(a, b); }
};
template <> struct MaxOp<i64> {
    __device__ static __forceinline__ i64 identity() { return (i64)0x8000000000000000ull; }
    __device__ static __forceinline__ i64 combine(i64 a, i64 b) { return a > b ? a : b; }
};
template <class A> struct MinOp;
template <> struct MinOp<double> {
    __device__ static __forceinline__ double identity() { return inf64(); }
    __device__ static __forceinline__ double combine(double a, double b) { return (isnan(a) || isnan(b)) ? nan64() : fmin(a, b); }
};
template <> struct MinOp<i64> {
    __device__ static __forceinline__ i64 identity() { return (i64)0x7fffffffffffffffull; }
    __device__ static __forceinline__ i64 combine(i64 a, i64 b) { return a < b ? a : b; }
};

// Tree reduction of one value per thread within the block; every thread gets the result.
template <class A, class Op>
__device__ A block_reduce(A v) {
    __shared__ A scratch[REDUCE_THREADS];
    scratch[threadIdx.x] = v;
    __syncthreads();
    for (unsigned half = blockDim.x / 2; half > 0; half /= 2) {
        if (threadIdx.x < half) scratch[threadIdx.x] = Op::combine(scratch[threadIdx.x], scratch[threadIdx.x + half]);
        __syncthreads();
    }
    return scratch[0];
}

template <class T, template <class> class OpT>
__device__ void reduce_partial(void* partial_bytes, const T* __restrict__ in, Strided L, i64 outputs, i64 run, i64 chunk) {
    typedef typename Acc<T>::type A;
    typedef OpT<A> Op;
    A* partial = reinterpret_cast<A*>(partial_bytes);
    const i64 chunks = gridDim.y;
    for (i64 o = blockIdx.x; o < outputs; o += gridDim.x) {
        const i64 begin = (i64)blockIdx.y * chunk;
        const i64 end = begin + chunk < run ? begin + chunk : run;
        A acc = Op::identity();
        if (L.contiguous) {
            // A read is bound by the loads in flight, not by the additions: at one outstanding
            // load per thread an SM keeps 8 KB in flight, a third of what HBM's latency times its
            // bandwidth needs per SM, and the full sum reached 56 % of a copy on the H200. Four
            // independent loads per thread, each into its own accumulator, before any is added.
            const T* __restrict__ p = in + L.offset + o * run;
            const i64 step = blockDim.x;
            A acc1 = Op::identity(), acc2 = Op::identity(), acc3 = Op::identity();
            i64 j = begin + threadIdx.x;
            for (; j + 3 * step < end; j += 4 * step) {
                const T x0 = p[j], x1 = p[j + step], x2 = p[j + 2 * step], x3 = p[j + 3 * step];
                acc = Op::combine(acc, to_acc(x0));
                acc1 = Op::combine(acc1, to_acc(x1));
                acc2 = Op::combine(acc2, to_acc(x2));
                acc3 = Op::combine(acc3, to_acc(x3));
            }
            for (; j < end; j += step) acc = Op::combine(acc, to_acc(p[j]));
            acc = Op::combine(Op::combine(acc, acc1), Op::combine(acc2, acc3));
        } else {
            for (i64 j = begin + threadIdx.x; j < end; j += blockDim.x)
                acc = Op::combine(acc, to_acc(in[strided_offset(L, o * run + j)]));
        }
        acc = block_reduce<A, Op>(acc);
        if (threadIdx.x == 0) partial[o * chunks + blockIdx.y] = acc;
        __syncthreads();  // scratch is reused by the next output of this block
    }
}

template <class T, template <class> class OpT, bool MEAN>
__device__ void reduce_finish(T* __restrict__ out, const void* partial_bytes, i64 outputs, i64 chunks, i64 run) {
    typedef typename Acc<T>::type A;
    typedef OpT<A> Op;
    const A* partial = reinterpret_cast<const A*>(partial_bytes);
    for (i64 o = global_thread(); o < outputs; o += grid_threads()) {
        A acc = Op::identity();
        for (i64 c = 0; c < chunks; ++c) acc = Op::combine(acc, partial[o * chunks + c]);
        if (MEAN) acc /= (A)run;  // floats only: the host refuses the mean of integers
        out[o] = from_acc<T>(acc);
    }
}

#define REDUCE_KERNELS(T, suffix)                                                                   \
    extern "C" __global__ void reduce_sum_##suffix(void* partial, const T* in, Strided L, i64 outputs, i64 run, i64 chunk) { \
        reduce_partial<T, SumOp>(partial, in, L, outputs, run, chunk);                              \
    }                                                                                               \
    extern "C" __global__ void reduce_max_##suffix(void* partial, const T* in, Strided L, i64 outputs, i64 run, i64 chunk) { \
        reduce_partial<T, MaxOp>(partial, in, L, outputs, run, chunk);                              \
    }                                                                                               \
    extern "C" __global__ void reduce_min_##suffix(void* partial, const T* in, Strided L, i64 outputs, i64 run, i64 chunk) { \
        reduce_partial<T, MinOp>(partial, in, L, outputs, run, chunk);                              \
    }                                                                                               \
    extern "C" __global__ void reduce_finish_sum_##suffix(T* out, const void* partial, i64 outputs, i64 chunks, i64 run) { \
        reduce_finish<T, SumOp, false>(out, partial, outputs, chunks, run);                         \
    }                                                                                               \
    extern "C" __global__ void reduce_finish_max_##suffix(T* out, const void* partial, i64 outputs, i64 chunks, i64 run) { \
        reduce_finish<T, MaxOp, false>(out, partial, outputs, chunks, run);                         \
    }                                                                                               \
    extern "C" __global__ void reduce_finish_min_##suffix(T* out, const void* partial, i64 outputs, i64 chunks, i64 run) { \
        reduce_finish<T, MinOp, false>(out, partial, outputs, chunks, run);                         \
    }
FOR_ALL_TYPES(REDUCE_KERNELS)

// The mean of an integer tensor is refused on the host, as on the CPU.
#define REDUCE_MEAN(T, suffix)                                                                      \
    extern "C" __global__ void reduce_finish_mean_##suffix(T* out, const void* partial, i64 outputs, i64 chunks, i64 run) { \
        reduce_finish<T, SumOp, true>(out, partial, outputs, chunks, run);                          \
    }
FOR_FLOAT_TYPES(REDUCE_MEAN)
