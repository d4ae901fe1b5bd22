// Executors: what phase 1 builds and phase 2 runs. Handles given to callers are registry keys,
// never reused, so a stale or doubly destroyed handle is recognised instead of dereferenced.
#pragma once

#include <array>
#include <memory>
#include <mutex>

#include "aclnn/acl_meta.h"
#include "kernels/common.h"

namespace ag {

struct Executor {
    static constexpr int kMaxIO = 8;
    using IO = std::array<kern::View, kMaxIO>;

    const char *op = "";           // operator name, for messages
    uint64_t workspace = 0;        // bytes phase 2 needs
    bool repeatable = false;
    // Inputs then outputs, in signature order; data == nullptr for an absent optional one.
    // Kept here so aclSetInputTensorAddr / aclSetOutputTensorAddr can repoint them.
    IO io;
    int n_in = 0, n_out = 0;
    bool empty = false;  // nothing to compute (some tensor has no elements)
    // Memcheck: the io slots' argument names, the inputs the run never reads (a bit per slot),
    // and the slots phase 1 reported (not again at launch unless repointed; guarded by mu).
    const char *const *names = nullptr;
    uint32_t unread = 0;
    uint32_t mc_reported = 0;
    // Guards io: a launch takes a copy of it, so aclSet*TensorAddr after a launch only affects
    // later launches, even while earlier ones still wait on a stream.
    std::mutex mu;

    virtual ~Executor() = default;
    // Every call allocates an executor and frees it at launch: each thread keeps one freed
    // executor's block for its next (glibc's malloc and free of a block this size, kilobytes, took
    // a tenth of a tiny call's instructions).
    static constexpr std::size_t kBlock = 4096;  // that block's size: every executor fits (new_executor)
    static void *operator new(std::size_t n);
    static void operator delete(void *p, std::size_t n);
    // Runs the computation on the views `io` (a launch-time copy of the member); returns a
    // status (with message) for data-dependent failures, before writing anything. Never called
    // for empty problems. Must not modify the executor: queued runs may overlap a later launch.
    virtual aclnnStatus run(const IO &io, void *workspace) const = 0;
};

// A new executor, default-initialized: make_unique's value-initialization would first zero the
// whole object, the 25 dims of each of its views included (kilobytes per call).
template <class E>
std::unique_ptr<E> new_executor() {
    static_assert(sizeof(E) <= Executor::kBlock, "an executor larger than the spare block");
    return std::unique_ptr<E>(new E);
}

// Phase 1 tail: registers exec and hands out its handle and workspace size.
aclnnStatus publish(std::unique_ptr<Executor> exec, uint64_t *workspaceSize, aclOpExecutor **executor);

// How many executors are live (tests: a failing phase 1 leaves none behind).
size_t live_executors();

// Phase 2 for every operator: looks the handle up, checks the workspace, runs it on `stream`
// (synchronously for NULL) and retires a single-use executor.
aclnnStatus launch(const char *op, void *workspace, uint64_t workspaceSize, aclOpExecutor *executor,
                   aclrtStream stream);

}  // namespace ag
