#pragma once
#include "common.h"

namespace ag::kern {

// The parameters beside the views (grad and target broadcast to `shape`; out has self's shape),
// which are passed apart: an executor repoints its views per launch and keeps these as they are.
struct KlArgs {
    int64_t shape[kMaxRank] = {};  // B = broadcast(self, target); out's shape broadcasts to it
    int ndim = 0;
    bool log_target = false;
    bool f64 = false;         // compute in double (some input, self included, is f64)
    double scale = 1;         // c: 1/numel(B) ('mean'), 1/B[0] ('batchmean'), else 1
};

// out = sum over B's broadcast dims of -(log_target ? exp(t) : t) * g * c, back to out's shape.
// Each out element's sum runs in an order fixed by the shapes alone (its pre-images in index
// order; with few out elements and long sums, fixed chunks of them added up in chunk order), so
// results do not depend on the thread count; an empty pre-image (a dim of B is 0) gives 0. out may be grad
// or target itself when it has B's shape (then every out element reads only its own position).
void kl_div_backward(const View &grad, const View &target, const View &out, const KlArgs &a);
AG_ISA_KERNEL(void kl_div_backward_kernel(const View &grad, const View &target, const View &out, const KlArgs &a))

}  // namespace ag::kern
