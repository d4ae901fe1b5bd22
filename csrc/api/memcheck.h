// Memcheck (ASCENDGRAD_MEMCHECK=1): checks of every memory-touching call of the C API against a
// registry of device allocations, registered host buffers and freed blocks kept in a poisoned
// quarantine; one "ascendgrad memcheck:" line per finding (docs/memcheck.md). Off by default:
// each hook sits behind enabled(), a load of a constant that the library sets when it loads.
#pragma once

#include <cstddef>
#include <cstdint>

#include "acl/acl_rt.h"
#include "executor.h"

namespace ag::memcheck {

extern int g_mode;  // 0 off, 1 report, 2 report and abort; set once when the library loads

inline bool enabled() { return __builtin_expect(g_mode != 0, 0); }

// Runtime: allocations and copies. on_free takes a live block into the quarantine (it frees
// it later: the caller must not); on_invalid_free reports a pointer that is no live allocation.
void on_malloc(const char *fn, void *p, size_t size);
void on_free(const char *fn, void *p);
void on_invalid_free(const char *fn, void *p);
void on_memcpy(void *dst, size_t destMax, const void *src, size_t count, aclrtMemcpyKind kind);
void on_memset(void *dst, size_t count);
void on_init();      // aclInit: objects made from now on are leaks if alive at aclFinalize
void on_finalize();  // leaks at aclFinalize

// Objects: creation and destruction of tensors, scalars and int arrays (for leak reports).
void on_create(const aclTensor *t);
void on_create(const aclScalar *s);
void on_create(const aclIntArray *a);
// false (after reporting it) for an object that is not live: the caller must not delete it
bool on_destroy(const void *object, const char *fn);

// Executors: phase 1 (after validation, before the handle is handed out), launch (before the
// run is started or queued) and retirement (run single-use, or destroyed). A slot repointed by
// aclSet*TensorAddr is checked again at the next launch.
// on_publish returns the slots it reported (Executor::mc_reported: not reported again at launch
// unless repointed); on_launch checks the views the run will use, and marks its outputs written.
uint32_t on_publish(const Executor &e, aclOpExecutor *handle);
void on_launch(const Executor &e, const Executor::IO &io, uint32_t reported, const void *workspace);
void on_retire(aclOpExecutor *handle);
// A launch queued on a stream: frees() when it is queued, on_run(…, that count) when its stream
// runs it, which reports memory freed in between.
uint64_t frees();
void on_run(const Executor &e, const Executor::IO &io, uint64_t frees_at_launch);

// Host memory the program hands to the API as device memory (fully initialised): the Python
// bindings' NumPy arrays, or a C program's own buffers.
void register_host(const void *p, size_t size, const char *what);
void unregister_host(const void *p, size_t size);

}  // namespace ag::memcheck
