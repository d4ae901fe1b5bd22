#pragma once
#include "common.h"

namespace ag::kern {

enum class CeReduction { None, Mean, Sum };

// What one serial pass over target yields before anything is written. The sums run in row order
// in double, so they (and every result scaled by them) do not depend on the thread count.
struct CeScan {
    int64_t bad_row = -1;     // first row whose target is outside [0, C) and not ignore_index
    int64_t bad_value = 0;    // its target value
    double weight_total = 0;  // W = sum_i w[t_i] over rows not ignored (the 'mean' divisor)
    int64_t kept = 0;         // rows not ignored (the z-loss 'mean' divisor)
};

// target: (N,) int32/int64; weight: (C,) any float dtype, or data == nullptr for ones.
CeScan cross_entropy_scan(const View &target, const View &weight, int64_t classes, int64_t ignore_index);

struct CeArgs {
    View grad_loss, log_prob, target, weight, grad_zloss, lse, out;  // absent: data == nullptr
    CeReduction reduction = CeReduction::Mean;
    int64_t ignore_index = -100;
    double label_smoothing = 0;
    double zloss_scale = 0;  // lseSquareScaleForZloss; 0 turns the z-loss term off
};

// out (N, C) in one pass over log_prob; `scan` must come from cross_entropy_scan on the same
// target and weight and report no bad row. out may be log_prob itself (each out element reads
// only its own log_prob element and per-row constants).
void cross_entropy_loss_grad(const CeArgs &a, const CeScan &scan);
AG_ISA_KERNEL(CeScan cross_entropy_scan_kernel(const View &target, const View &weight, int64_t classes,
                                              int64_t ignore_index))
AG_ISA_KERNEL(void cross_entropy_loss_grad_kernel(const CeArgs &a, const CeScan &scan))

}  // namespace ag::kern
