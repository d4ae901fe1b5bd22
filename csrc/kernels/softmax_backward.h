#pragma once
#include "common.h"

namespace ag::kern {

// out = y * (g - sum_dim(g * y)). g and y share shape and dtype; out has g's shape and any
// floating dtype; out may be g or y itself. `dim` is in [0, ndim) (0 for a 0-d view).
void softmax_backward(const View &g, const View &y, int dim, const View &out);
AG_ISA_KERNEL(void softmax_backward_kernel(const View &g, const View &y, int dim, const View &out))

}  // namespace ag::kern
