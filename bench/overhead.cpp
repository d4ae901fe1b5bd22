// Per-call overhead of the two-phase C API on a tiny tensor (1 x 8 float32): phase 1
// (aclnnXxxGetWorkspaceSize) plus phase 2 (aclnnXxx) of each operator, over tensors created once,
// as host code calls it in a training step, over aclrtMalloc memory filled by aclrtMemcpy (so that
// bench/memcheck_overhead.sh can time it with ASCENDGRAD_MEMCHECK=1 too). Prints one JSON object:
// nanoseconds per call (median of 7 batches). bench.py builds it with the compiler against the installed package:
//   g++ -O2 -std=c++17 bench/overhead.cpp -I<include_dir> -L<lib_dir> -Wl,-rpath,<lib_dir> -lascendgrad
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "acl/acl.h"
#include "aclnnop/aclnn_cross_entropy_loss_grad.h"
#include "aclnnop/aclnn_kl_div_backward.h"
#include "aclnnop/aclnn_logsigmoid_backward.h"
#include "aclnnop/aclnn_softmax_backward.h"
#include "aclnnop/aclnn_softshrink_backward.h"

namespace {

float g[8] = {1, 2, 3, 4, 5, 6, 7, 8}, x[8] = {-0.1f, -0.2f, -0.3f, -0.4f, -0.5f, -0.6f, -0.7f, -0.8f}, out[8];
float scalar = 0.5f;
int64_t label = 3;

std::vector<void *> device_buffers;

// A device copy of `bytes` bytes at host.
void *device(const void *host, size_t bytes) {
    void *d = nullptr;
    if (aclrtMalloc(&d, bytes, ACL_MEM_MALLOC_HUGE_FIRST) != ACL_SUCCESS ||
        aclrtMemcpy(d, bytes, host, bytes, ACL_MEMCPY_HOST_TO_DEVICE) != ACL_SUCCESS) {
        std::fprintf(stderr, "aclrtMalloc/aclrtMemcpy failed\n");
        std::exit(1);
    }
    device_buffers.push_back(d);
    return d;
}

aclTensor *tensor(const std::vector<int64_t> &shape, aclDataType dt, const void *host, size_t bytes) {
    return aclCreateTensor(shape.data(), shape.size(), dt, nullptr, 0, ACL_FORMAT_ND, shape.data(), shape.size(),
                           device(host, bytes));
}

template <class F>
double ns_per_call(F &&call, int iters) {
    std::vector<double> batches;
    for (int b = 0; b < 7; ++b) {
        const auto t0 = std::chrono::steady_clock::now();
        for (int i = 0; i < iters; ++i) call();
        const auto t1 = std::chrono::steady_clock::now();
        batches.push_back(std::chrono::duration<double, std::nano>(t1 - t0).count() / iters);
    }
    std::sort(batches.begin(), batches.end());
    return batches[3];
}

void check(aclnnStatus s) {
    if (s != ACLNN_SUCCESS) {
        std::fprintf(stderr, "status %d: %s\n", s, aclGetRecentErrMsg());
        std::exit(1);
    }
}

}  // namespace

int main(int argc, char **argv) {
    const int iters = argc > 1 ? std::atoi(argv[1]) : 20000;
    aclTensor *tg = tensor({1, 8}, ACL_FLOAT, g, sizeof g), *tx = tensor({1, 8}, ACL_FLOAT, x, sizeof x);
    aclTensor *to = tensor({1, 8}, ACL_FLOAT, out, sizeof out);
    aclTensor *gl = tensor({}, ACL_FLOAT, &scalar, sizeof scalar), *tt = tensor({1}, ACL_INT64, &label, sizeof label);
    aclScalar *lambd = aclCreateScalar(&scalar, ACL_FLOAT);
    char mean[] = "mean";
    uint64_t ws = 0;
    aclOpExecutor *ex = nullptr;

    const double softmax = ns_per_call([&] {
        check(aclnnSoftmaxBackwardGetWorkspaceSize(tg, tx, -1, to, &ws, &ex));
        check(aclnnSoftmaxBackward(nullptr, ws, ex, nullptr));
    }, iters);
    const double logsigmoid = ns_per_call([&] {
        check(aclnnLogSigmoidBackwardGetWorkspaceSize(tg, tx, tx, to, &ws, &ex));
        check(aclnnLogSigmoidBackward(nullptr, ws, ex, nullptr));
    }, iters);
    const double softshrink = ns_per_call([&] {
        check(aclnnSoftshrinkBackwardGetWorkspaceSize(tg, tx, lambd, to, &ws, &ex));
        check(aclnnSoftshrinkBackward(nullptr, ws, ex, nullptr));
    }, iters);
    const double ce = ns_per_call([&] {
        check(aclnnCrossEntropyLossGradGetWorkspaceSize(gl, tx, tt, nullptr, nullptr, nullptr, mean, -100, 0.0, 0.0,
                                                        to, &ws, &ex));
        check(aclnnCrossEntropyLossGrad(nullptr, ws, ex, nullptr));
    }, iters);
    const double kl = ns_per_call([&] {
        check(aclnnKlDivBackwardGetWorkspaceSize(gl, tx, tg, 3, false, to, &ws, &ex));
        check(aclnnKlDivBackward(nullptr, ws, ex, nullptr));
    }, iters);
    std::printf("{\"softmax_backward\": %.1f, \"log_sigmoid_backward\": %.1f, \"softshrink_backward\": %.1f, "
                "\"cross_entropy_loss_grad\": %.1f, \"kl_div_backward\": %.1f}\n",
                softmax, logsigmoid, softshrink, ce, kl);
    aclDestroyTensor(tg), aclDestroyTensor(tx), aclDestroyTensor(to), aclDestroyTensor(gl), aclDestroyTensor(tt);
    aclDestroyScalar(lambd);
    for (void *d : device_buffers) aclrtFree(d);
    return 0;
}
