#include "executor.h"

#include <algorithm>
#include <cstring>
#include <mutex>
#include <unordered_map>

#include "objects.h"
#include "status.h"
#include "stream.h"

namespace ag {
namespace {

struct Registry {
    std::mutex mu;
    std::unordered_map<uintptr_t, std::shared_ptr<Executor>> live;
    uintptr_t next = 1;
};

Registry &registry() {
    static Registry *r = new Registry;  // never destroyed: executors may outlive static teardown
    return *r;
}

std::shared_ptr<Executor> find(aclOpExecutor *h) {
    Registry &r = registry();
    std::lock_guard<std::mutex> lock(r.mu);
    auto it = r.live.find(reinterpret_cast<uintptr_t>(h));
    return it == r.live.end() ? nullptr : it->second;
}

void retire(aclOpExecutor *h) {
    Registry &r = registry();
    std::lock_guard<std::mutex> lock(r.mu);
    r.live.erase(reinterpret_cast<uintptr_t>(h));
}

}  // namespace

aclnnStatus publish(std::unique_ptr<Executor> exec, uint64_t *workspaceSize, aclOpExecutor **executor) {
    const uint64_t ws = exec->workspace;
    Registry &r = registry();
    uintptr_t key;
    {
        std::lock_guard<std::mutex> lock(r.mu);
        key = (r.next++) << 4;
        r.live.emplace(key, std::shared_ptr<Executor>(std::move(exec)));
    }
    *workspaceSize = ws;
    *executor = reinterpret_cast<aclOpExecutor *>(key);
    return ACLNN_SUCCESS;
}

aclnnStatus launch(const char *op, void *workspace, uint64_t workspaceSize, aclOpExecutor *executor,
                   aclrtStream stream) {
    if (!executor) return fail(ACLNN_ERR_PARAM_NULLPTR, "%s: executor is nullptr.", op);
    std::shared_ptr<Executor> exec = find(executor);
    if (!exec)
        return fail(ACLNN_ERR_PARAM_INVALID,
                    "%s: executor %p is not live: it was already run (executors are single-use unless made "
                    "repeatable) or destroyed.",
                    op, static_cast<void *>(executor));
    std::shared_ptr<Stream> s;
    if (stream) {
        s = find_stream(stream);
        if (!s) return fail(ACLNN_ERR_PARAM_INVALID, "%s: stream %p is not a live stream.", op, stream);
    }
    // A single-use executor is consumed by this call, whatever its outcome.
    if (!exec->repeatable) retire(executor);
    if (std::strcmp(exec->op, op) != 0)
        return fail(ACLNN_ERR_PARAM_INVALID, "%s: executor was created by %sGetWorkspaceSize.", op, exec->op);
    if (workspaceSize < exec->workspace)
        return fail(ACLNN_ERR_PARAM_INVALID, "%s: workspaceSize %llu is smaller than the %llu bytes required.", op,
                    (unsigned long long)workspaceSize, (unsigned long long)exec->workspace);
    if (!workspace && workspaceSize > 0)
        return fail(ACLNN_ERR_PARAM_INVALID, "%s: workspace is NULL but workspaceSize is %llu.", op,
                    (unsigned long long)workspaceSize);
    if (exec->empty) return ACLNN_SUCCESS;
    if (!s) return exec->run(workspace);
    if (!submit(*s, [exec, workspace] { return exec->run(workspace); }))
        return fail(ACLNN_ERR_PARAM_INVALID, "%s: stream %p is being destroyed.", op, stream);
    return ACLNN_SUCCESS;
}

}  // namespace ag

using ag::fail;

extern "C" {

aclnnStatus aclSetAclOpExecutorRepeatable(aclOpExecutor *executor) {
    if (!executor) return fail(ACLNN_ERR_INNER_NULLPTR, "aclSetAclOpExecutorRepeatable: executor is nullptr.");
    return ag::guarded("aclSetAclOpExecutorRepeatable", [&]() -> aclnnStatus {
        auto exec = ag::find(executor);
        if (!exec)
            return fail(ACLNN_ERR_PARAM_INVALID, "aclSetAclOpExecutorRepeatable: executor %p is not live.",
                        static_cast<void *>(executor));
        exec->repeatable = true;
        return ACLNN_SUCCESS;
    });
}

aclnnStatus aclDestroyAclOpExecutor(aclOpExecutor *executor) {
    if (!executor) return fail(ACLNN_ERR_INNER_NULLPTR, "aclDestroyAclOpExecutor: executor is nullptr.");
    return ag::guarded("aclDestroyAclOpExecutor", [&]() -> aclnnStatus {
        if (!ag::find(executor))
            return fail(ACLNN_ERR_PARAM_INVALID,
                        "aclDestroyAclOpExecutor: executor %p is not live (already destroyed, or single-use and "
                        "already run).",
                        static_cast<void *>(executor));
        ag::retire(executor);  // work already queued on a stream keeps its own reference
        return ACLNN_SUCCESS;
    });
}

static aclnnStatus set_addr(const char *fn, aclOpExecutor *executor, size_t index, bool output,
                            aclTensor *tensor, void *addr) {
    if (!executor || !tensor) return fail(ACLNN_ERR_PARAM_NULLPTR, "%s: executor or tensor is nullptr.", fn);
    auto exec = ag::find(executor);
    if (!exec) return fail(ACLNN_ERR_PARAM_INVALID, "%s: executor %p is not live.", fn, static_cast<void *>(executor));
    const size_t count = output ? exec->n_out : exec->n_in;
    if (index >= count)
        return fail(ACLNN_ERR_PARAM_INVALID, "%s: index %zu out of range: %s has %zu %s.", fn, index, exec->op,
                    count, output ? "outputs" : "inputs");
    ag::kern::View &v = exec->io[(output ? exec->n_in : 0) + index];
    if (!v.data) return fail(ACLNN_ERR_PARAM_INVALID, "%s: %s %zu was not given in phase 1.", fn,
                             output ? "output" : "input", index);
    if (tensor->rank() != v.ndim || ag::to_kern(tensor->dtype) != v.dtype ||
        !std::equal(tensor->view.begin(), tensor->view.end(), v.shape) ||
        !std::equal(tensor->strides.begin(), tensor->strides.end(), v.stride))
        return fail(ACLNN_ERR_PARAM_INVALID, "%s: tensor %s does not match the view given in phase 1.", fn,
                    ag::shape_str(tensor->view).c_str());
    if (!addr && tensor->numel() > 0) return fail(ACLNN_ERR_PARAM_NULLPTR, "%s: addr is nullptr.", fn);
    tensor->data = addr;
    v = ag::to_view(*tensor);
    return ACLNN_SUCCESS;
}

aclnnStatus aclSetInputTensorAddr(aclOpExecutor *executor, size_t index, aclTensor *tensor, void *addr) {
    return ag::guarded("aclSetInputTensorAddr",
                       [&] { return set_addr("aclSetInputTensorAddr", executor, index, false, tensor, addr); });
}

aclnnStatus aclSetOutputTensorAddr(aclOpExecutor *executor, size_t index, aclTensor *tensor, void *addr) {
    return ag::guarded("aclSetOutputTensorAddr",
                       [&] { return set_addr("aclSetOutputTensorAddr", executor, index, true, tensor, addr); });
}

}  // extern "C"
