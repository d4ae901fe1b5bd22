// Executors: what phase 1 builds and phase 2 runs. Handles given to callers are registry keys,
// never reused, so a stale or doubly destroyed handle is recognised instead of dereferenced.
#pragma once

#include <memory>
#include <mutex>

#include "aclnn/acl_meta.h"
#include "kernels/common.h"

namespace ag {

struct Executor {
    static constexpr int kMaxIO = 8;

    const char *op = "";           // operator name, for messages
    uint64_t workspace = 0;        // bytes phase 2 needs
    bool repeatable = false;
    // Inputs then outputs, in signature order; data == nullptr for an absent optional one.
    // Kept here so aclSetInputTensorAddr / aclSetOutputTensorAddr can repoint them.
    kern::View io[kMaxIO];
    int n_in = 0, n_out = 0;

    virtual ~Executor() = default;
    // Runs the computation; returns a status (with message) for data-dependent failures, before
    // writing anything. Never called for empty problems.
    virtual aclnnStatus run(void *workspace) = 0;
    bool empty = false;  // nothing to compute (some tensor has no elements)
    // Guards io while a run uses it: runs of one executor are serialized, and a run queued on a
    // stream swaps in the io of its launch (see launch), so aclSet*TensorAddr after the launch
    // only affects later launches.
    std::mutex mu;
};

// Phase 1 tail: registers exec and hands out its handle and workspace size.
aclnnStatus publish(std::unique_ptr<Executor> exec, uint64_t *workspaceSize, aclOpExecutor **executor);

// Phase 2 for every operator: looks the handle up, checks the workspace, runs it on `stream`
// (synchronously for NULL) and retires a single-use executor.
aclnnStatus launch(const char *op, void *workspace, uint64_t workspaceSize, aclOpExecutor *executor,
                   aclrtStream stream);

}  // namespace ag
