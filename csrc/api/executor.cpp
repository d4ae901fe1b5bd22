#include "executor.h"

#include <pthread.h>

#include <algorithm>
#include <cstring>
#include <mutex>
#include <unordered_map>

#include "memcheck.h"
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
    // never destroyed: executors may outlive static teardown
    static Registry *r = [] {
        // held across fork(), so that the child's copy is consistent and unlocked
        pthread_atfork([] { registry().mu.lock(); }, [] { registry().mu.unlock(); }, [] { registry().mu.unlock(); });
        return new Registry;
    }();
    return *r;
}

std::shared_ptr<Executor> find(aclOpExecutor *h) {
    Registry &r = registry();
    std::lock_guard<std::mutex> lock(r.mu);
    auto it = r.live.find(reinterpret_cast<uintptr_t>(h));
    return it == r.live.end() ? nullptr : it->second;
}

// find() for a launch: a single-use executor leaves the registry in the same step (the call
// consumes it, whatever its outcome); *single_use tells which.
std::shared_ptr<Executor> take(aclOpExecutor *h, bool *single_use) {
    Registry &r = registry();
    std::lock_guard<std::mutex> lock(r.mu);
    auto it = r.live.find(reinterpret_cast<uintptr_t>(h));
    if (it == r.live.end()) return nullptr;
    *single_use = !it->second->repeatable;
    if (!*single_use) return it->second;
    std::shared_ptr<Executor> e = std::move(it->second);
    r.live.erase(it);
    return e;
}

void retire(aclOpExecutor *h) {
    Registry &r = registry();
    std::lock_guard<std::mutex> lock(r.mu);
    r.live.erase(reinterpret_cast<uintptr_t>(h));
}

// Under AddressSanitizer every executor gets its own block, so that a use after free is caught.
#if defined(__SANITIZE_ADDRESS__)
constexpr bool kSpare = false;
#else
constexpr bool kSpare = true;
#endif
struct SpareBlock {
    void *p = nullptr;
    ~SpareBlock() { ::operator delete(p); }
};
thread_local SpareBlock spare;

}  // namespace

void *Executor::operator new(std::size_t n) {
    if (!kSpare || n > kBlock) return ::operator new(n);
    if (void *p = spare.p) {
        spare.p = nullptr;
        return p;
    }
    return ::operator new(kBlock);
}

void Executor::operator delete(void *p, std::size_t n) {
    if (!kSpare || n > kBlock || spare.p) return ::operator delete(p);
    spare.p = p;
}

size_t live_executors() {
    Registry &r = registry();
    std::lock_guard<std::mutex> lock(r.mu);
    return r.live.size();
}

aclnnStatus publish(std::unique_ptr<Executor> exec, uint64_t *workspaceSize, aclOpExecutor **executor) {
    const uint64_t ws = exec->workspace;
    Registry &r = registry();
    uintptr_t key;
    {
        std::lock_guard<std::mutex> lock(r.mu);
        key = (r.next++) << 4;
        // not yet handed out: nobody else can reach it
        if (memcheck::enabled()) exec->mc_reported = memcheck::on_publish(*exec, reinterpret_cast<aclOpExecutor *>(key));
        r.live.emplace(key, std::shared_ptr<Executor>(std::move(exec)));
    }
    *workspaceSize = ws;
    *executor = reinterpret_cast<aclOpExecutor *>(key);
    return ACLNN_SUCCESS;
}

aclnnStatus launch(const char *op, void *workspace, uint64_t workspaceSize, aclOpExecutor *executor,
                   aclrtStream stream) {
    if (!executor) return fail(ACLNN_ERR_PARAM_NULLPTR, "%s: executor is nullptr.", op);
    bool single_use = false;
    std::shared_ptr<Executor> exec = take(executor, &single_use);
    if (exec && single_use && memcheck::enabled()) memcheck::on_retire(executor);
    if (!exec)
        return fail(ACLNN_ERR_PARAM_INVALID,
                    "%s: executor %p is not live: it was already run (executors are single-use unless made "
                    "repeatable) or destroyed.",
                    op, static_cast<void *>(executor));
    std::shared_ptr<Stream> s;
    if (stream) {
        s = find_stream(stream);
        if (!s) return fail(ACLNN_ERR_PARAM_INVALID, "%s: stream %p %s.", op, stream, kNotLiveStream);
    }
    if (std::strcmp(exec->op, op) != 0)
        return fail(ACLNN_ERR_PARAM_INVALID, "%s: executor was created by %sGetWorkspaceSize.", op, exec->op);
    if (workspaceSize < exec->workspace)
        return fail(ACLNN_ERR_PARAM_INVALID, "%s: workspaceSize %llu is smaller than the %llu bytes required.", op,
                    (unsigned long long)workspaceSize, (unsigned long long)exec->workspace);
    if (!workspace && workspaceSize > 0)
        return fail(ACLNN_ERR_PARAM_INVALID, "%s: workspace is NULL but workspaceSize is %llu.", op,
                    (unsigned long long)workspaceSize);
    if (exec->empty) return ACLNN_SUCCESS;
    // A repeatable executor's views may be repointed later: this launch runs on a copy taken now.
    // A single-use one has left the registry, so nobody can repoint it: no copy.
    const Executor::IO *io = &exec->io;
    Executor::IO now;
    uint32_t reported = exec->mc_reported;
    if (!single_use) {
        std::lock_guard<std::mutex> lock(exec->mu);
        now = exec->io;
        reported = exec->mc_reported;
        io = &now;
    }
    if (memcheck::enabled()) memcheck::on_launch(*exec, *io, reported, workspace);
    if (!s) return exec->run(*io, workspace);
    const uint64_t frees = memcheck::enabled() ? memcheck::frees() : 0;
    if (!submit(*s, [exec, workspace, io = *io, frees] {
            if (memcheck::enabled()) memcheck::on_run(*exec, io, frees);  // memory freed while it waited
            return exec->run(io, workspace);
        }))
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
        if (ag::memcheck::enabled()) ag::memcheck::on_retire(executor);
        return ACLNN_SUCCESS;
    });
}

// The aclDataType a validated kernel view has (the inverse of to_kern on validated dtypes).
static aclDataType from_kern(ag::kern::DType t) {
    switch (t) {
        case ag::kern::DType::F16: return ACL_FLOAT16;
        case ag::kern::DType::BF16: return ACL_BF16;
        case ag::kern::DType::F32: return ACL_FLOAT;
        case ag::kern::DType::F64: return ACL_DOUBLE;
        case ag::kern::DType::I32: return ACL_INT32;
        case ag::kern::DType::I64: return ACL_INT64;
        case ag::kern::DType::Bool: return ACL_BOOL;
    }
    return ACL_DT_UNDEFINED;
}

static aclnnStatus set_addr(const char *fn, aclOpExecutor *executor, size_t index, bool output,
                            aclTensor *tensor, void *addr) {
    if (!executor || !tensor) return fail(ACLNN_ERR_PARAM_NULLPTR, "%s: executor or tensor is nullptr.", fn);
    auto exec = ag::find(executor);
    if (!exec) return fail(ACLNN_ERR_PARAM_INVALID, "%s: executor %p is not live.", fn, static_cast<void *>(executor));
    std::lock_guard<std::mutex> lock(exec->mu);  // not while a run uses io
    const size_t count = output ? exec->n_out : exec->n_in;
    if (index >= count)
        return fail(ACLNN_ERR_PARAM_INVALID, "%s: index %zu out of range: %s has %zu %s.", fn, index, exec->op,
                    count, output ? "outputs" : "inputs");
    ag::kern::View &v = exec->io[(output ? exec->n_in : 0) + index];
    if (!v.data) return fail(ACLNN_ERR_PARAM_INVALID, "%s: %s %zu was not given in phase 1.", fn,
                             output ? "output" : "input", index);
    // to_kern maps dtypes no kernel uses to F32: compare with the dtype the view came from
    if (tensor->rank() != v.ndim || tensor->dtype != from_kern(v.dtype) ||
        !std::equal(tensor->view.begin(), tensor->view.end(), v.shape) ||
        !std::equal(tensor->strides.begin(), tensor->strides.end(), v.stride))
        return fail(ACLNN_ERR_PARAM_INVALID, "%s: tensor %s does not match the view given in phase 1.", fn,
                    ag::shape_str(tensor->view).c_str());
    if (!addr && tensor->numel() > 0) return fail(ACLNN_ERR_PARAM_NULLPTR, "%s: addr is nullptr.", fn);
    tensor->data = addr;
    ag::set_view(v, *tensor);
    exec->mc_reported &= ~(1u << ((output ? exec->n_in : 0) + index));  // memcheck: checked again at launch
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
