#pragma once
#include "common.h"

namespace ag::kern {

// out = g * sigmoid(-x) = g / (1 + e^x), without overflow for any x. g and x share shape and
// dtype; out has their shape and any floating dtype; out may be g or x itself (same view).
void log_sigmoid_backward(const View &g, const View &x, const View &out);
AG_ISA_KERNEL(void log_sigmoid_backward_kernel(const View &g, const View &x, const View &out))

}  // namespace ag::kern
