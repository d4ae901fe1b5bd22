#pragma once
#include "common.h"

namespace ag::kern {

// out = g where |x| > lambd, 0 where |x| <= lambd (closed band), NaN where x is NaN. g and x
// broadcast (NumPy) to out's shape and may differ in dtype: computed in double if either is
// double, else in float, with lambd rounded to that type. out may be g or x itself (same view).
void softshrink_backward(const View &g, const View &x, double lambd, const View &out);
AG_ISA_KERNEL(void softshrink_backward_kernel(const View &g, const View &x, double lambd, const View &out))

}  // namespace ag::kern
