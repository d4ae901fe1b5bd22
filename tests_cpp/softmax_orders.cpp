// Softmax's contiguous-line loops (`lines` in csrc/kernels/softmax_backward.cpp) compiled for one
// ISA in a namespace of their own (AG_ISA_NS = orders_<isa>: tests_cpp/CMakeLists.txt), so that
// test_softmax_orders runs every loop order on any CPU, whichever one the kernel picks there (by
// CPU vendor, line length and where the data sit). Only this plain function crosses over: the
// test's own code is compiled without the ISA's flags.
#include "kernels/softmax_backward.cpp"

namespace ag::kern {
inline namespace AG_ISA_NS {  // (inline, as the kernel layer opened it)
namespace {
template <class T>
void run_lines(int order, const void *g, const void *y, void *out, int64_t rows, int64_t n, int64_t so) {
    const int64_t shape[2] = {rows, n}, st[2] = {n, 1}, sto[2] = {so, 1};
    const int64_t *strides[3] = {st, st, sto};
    const Iter<3> it = make_iter<3>(shape, 2, strides, 1);
    const int64_t sd[3] = {1, 1, 1};
    lines<true>(static_cast<const T *>(g), static_cast<const T *>(y), static_cast<T *>(out), it, 0, rows, n, sd,
                order == 1, order == 2);
}
}  // namespace

// rows x n lines of g and y (rows n apart) into out (rows so apart), on this thread: order 0 two
// passes, 1 pipelined, 2 two passes with streaming stores where a line's alignment allows.
void softmax_lines(DType dt, int order, const void *g, const void *y, void *out, int64_t rows, int64_t n, int64_t so) {
    switch (dt) {
        case DType::F32: return run_lines<float>(order, g, y, out, rows, n, so);
        case DType::F64: return run_lines<double>(order, g, y, out, rows, n, so);
        case DType::F16: return run_lines<half_t>(order, g, y, out, rows, n, so);
        default: return run_lines<bf16_t>(order, g, y, out, rows, n, so);
    }
}
}  // namespace AG_ISA_NS
}  // namespace ag::kern
