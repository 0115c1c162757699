/*
 * clones.h — ST_CLONES: compile a hot loop twice, for AVX-512 and for the
 * baseline x86-64, and let the loader pick one (GCC/clang target_clones,
 * an ifunc).
 *
 * Sanitizer builds compile the baseline only: the ifunc resolver runs
 * while the dynamic loader relocates the program, before the sanitizer's
 * runtime has started, and an instrumented resolver then crashes (TSan
 * segfaults in every program).  Sanitizers check the logic, which both
 * clones share; the kernels' speed is measured in the normal build.
 */
#ifndef ST_CPU_CLONES_H
#define ST_CPU_CLONES_H

#if defined(__has_feature)
#if __has_feature(thread_sanitizer) || __has_feature(address_sanitizer)
#define ST_NO_CLONES 1
#endif
#endif
#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
#define ST_NO_CLONES 1
#endif

#ifdef ST_NO_CLONES
#define ST_CLONES
#else
#define ST_CLONES __attribute__((target_clones("avx512f", "default")))
#endif

#endif
