// Compile-time configuration shared by host and device code.
#pragma once

#if defined(__CUDACC__)
#define AXION_HD __host__ __device__ __forceinline__
#define AXION_DEVICE_COMPILE 1
#else
#define AXION_HD inline
#endif
// Per-element functions for features most scenes lack (a tendon's rows), kept out of line on
// the host so they do not take the inlining budget of the loops that call them: inlined into
// the row evaluation, the tendon rows cost every humanoid step 1.6% more instructions on the
// CPU (GCC then left the row evaluation and a joint limit's row as calls). On the device they
// are inlined: as a call, the row pass took 186 registers and a 2560-byte stack frame against
// 160 and 240 before tendons (ptxas, sm_90); inlined, 168 and 448 (the same 12 warps per
// multiprocessor as 160).
#if defined(__CUDACC__)
#define AXION_HD_OUTLINE AXION_HD
#else
#define AXION_HD_OUTLINE inline __attribute__((noinline))
#endif
// A rare feature's heavy per-element function (a spatial tendon's path) kept out of line on
// both: inlined into the passes that call it, the path's registers became theirs (the row pass
// 224 registers and a 2928-byte stack against 168 and 448, ptxas sm_90); as a call it keeps its
// own frame, and the passes pay only the call where a model has such an element.
#if defined(__CUDACC__)
#define AXION_HD_NOINLINE __host__ __device__ __noinline__
#else
#define AXION_HD_NOINLINE inline __attribute__((noinline))
#endif
// A helper shared by a hot row and a rare one, inlined into both on the host as well (left to
// its heuristics, GCC kept a joint drive row's shared tail out of line and then other helpers
// of the row evaluation too: 0.7% more instructions per humanoid step).
#if defined(__CUDACC__)
#define AXION_HD_INLINE AXION_HD
#else
#define AXION_HD_INLINE inline __attribute__((always_inline))
#endif
// Full unrolling of a loop of fixed trip count in device code (host compilers unroll on their
// own judgement).
#if defined(__CUDA_ARCH__)
#define AXION_UNROLL _Pragma("unroll")
#else
#define AXION_UNROLL
#endif

namespace axion {

// Scalar type of every physical quantity in the engine. Double by default: the solver's
// stopping tolerances (1e-8 residuals on stacks and chains) sit below float's resolution on
// metre-scale scenes. Build with -DAXION_USE_FLOAT=ON to trade that margin for bandwidth.
#if defined(AXION_USE_FLOAT)
using Real = float;
#else
using Real = double;
#endif

}  // namespace axion
