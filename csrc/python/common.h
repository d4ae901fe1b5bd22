// Shared pieces of the bindings: NumPy arrays as aclTensors (in place, no copy), AclnnError,
// the two-phase call for the NumPy API, and the raw API's object types.
#pragma once

#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include "acl/acl.h"
#include "aclnn/acl_meta.h"

namespace py = pybind11;

namespace agpy {

using Phase2 = aclnnStatus (*)(void *, uint64_t, aclOpExecutor *, aclrtStream);

// A failed status; Python sees ascendgrad.AclnnError(message, status).
struct AclnnFailure : std::runtime_error {
    int status;
    AclnnFailure(int s, const std::string &msg) : std::runtime_error(msg), status(s) {}
};
// The C API's argument names of one operator and the NumPy API's: a message raised from the
// NumPy API names the NumPy arguments (the C API's own messages keep CANN's names).
using ArgNames = std::vector<std::pair<const char *, const char *>>;
// Takes the thread's message; with `names`, the C argument names in it are replaced (whole words).
[[noreturn]] void raise_status(int status, const ArgNames *names = nullptr);

aclDataType acl_dtype(const py::dtype &dt);  // TypeError when aclnn has no such type
py::dtype np_dtype(aclDataType t);
py::dtype bfloat16_dtype();

// An aclTensor describing a NumPy array where it lies; keeps the array alive.
class TensorRef {
public:
    explicit TensorRef(py::array a);
    ~TensorRef();
    TensorRef(const TensorRef &) = delete;
    TensorRef &operator=(const TensorRef &) = delete;
    aclTensor *get() const { return t_; }
    const py::array &array() const { return a_; }

private:
    py::array a_;
    aclTensor *t_ = nullptr;
    const void *base_ = nullptr;  // the bytes the view spans, a known allocation to memcheck
    size_t bytes_ = 0;
};

// An array-like as an ndarray the kernels can read in place: ndarrays are used as they are
// (any strides) unless misaligned or byte-swapped, PyTorch tensors and DLPack arrays are viewed
// without a copy (ascendgrad._interop.asarray); TypeError for non-numeric input.
py::array as_input(py::handle obj, const char *name);
// Python numbers, lists and tuples: no dtype of their own (NumPy's "weak" scalars).
bool is_weak(py::handle obj);
// An input whose Python numbers and sequences take `like`'s dtype (arrays, tensors and NumPy
// scalars keep their own, as in NumPy 2's promotion rules, NEP 50).
py::array as_input_like(py::handle obj, const char *name, const py::array &like);
// Two inputs of which either may be a Python number or sequence: it takes the other's dtype.
std::pair<py::array, py::array> as_input_pair(py::handle a, const char *a_name, py::handle b, const char *b_name);
// Where an operator needs `a` in `b`'s float dtype: a typed scalar `a` (NumPy scalar, 0-D array)
// of another float dtype is AclnnError 161002 saying how to pass it ("grad_loss is float64 but
// log_prob is float32: pass a Python float or a float32 value"). Arrays and other dtypes are
// left to the library's checks.
void check_same_float_dtype(const char *op, const py::array &a, const char *a_name, const py::array &b,
                            const char *b_name);

// The NumPy API's scalar arguments, checked in one place: a wrong Python type is a one-line
// TypeError naming the argument ("dim must be an int, got float").
int64_t int_arg(py::handle v, const char *name);    // int or NumPy integer, not bool
double float_arg(py::handle v, const char *name);   // a real number: int, float, NumPy's; not bool
bool bool_arg(py::handle v, const char *name);      // bool or numpy.bool_
std::string type_name(py::handle v);
// `out=`: a writeable ndarray (or a PyTorch CPU tensor / DLPack array viewed as one) usable in
// place, else TypeError/ValueError.
py::array as_output(py::handle obj, const char *name);
py::array new_array(const std::vector<int64_t> &shape, const py::dtype &dt);
std::vector<int64_t> shape_of(const py::array &a);

// Phase 1 (via `prepare(&ws, &executor)`), then phase 2 with the GIL released, synchronously;
// a failure raises AclnnError in the NumPy API's names.
template <class Prepare>
void run_two_phase(Prepare &&prepare, Phase2 phase2, const ArgNames &names) {
    uint64_t ws = 0;
    aclOpExecutor *ex = nullptr;
    aclnnStatus s = prepare(&ws, &ex);
    if (s != ACLNN_SUCCESS) raise_status(s, &names);
    std::unique_ptr<unsigned char[]> buf(ws ? new unsigned char[ws] : nullptr);
    {
        py::gil_scoped_release nogil;
        s = phase2(buf.get(), ws, ex, nullptr);
    }
    if (s != ACLNN_SUCCESS) raise_status(s, &names);
}

// ---- raw API ----

struct PyTensor {
    std::unique_ptr<TensorRef> ref;
};

// Owns its executor until phase 2 consumes it (single-use) or destroy_executor: an executor
// that is never run is destroyed with the Python object, not leaked.
struct PyExecutor {
    aclOpExecutor *handle = nullptr;
    bool live = false, repeatable = false;
    std::vector<py::object> keep;  // tensors the executor reads and writes
    PyExecutor() = default;
    PyExecutor(PyExecutor &&o) noexcept
        : handle(o.handle), live(std::exchange(o.live, false)), repeatable(o.repeatable), keep(std::move(o.keep)) {}
    PyExecutor &operator=(PyExecutor &&) = delete;
    ~PyExecutor() {
        if (live) aclDestroyAclOpExecutor(handle);
    }
};

aclTensor *tensor_arg(py::handle obj, const char *name);  // None -> NULL
aclScalar *scalar_arg(py::handle obj, const char *name);  // aclnn.Scalar; None -> NULL
// (status, workspace_size, Executor | None) from a phase-1 call
py::tuple phase1_result(aclnnStatus s, uint64_t ws, aclOpExecutor *ex, std::vector<py::object> keep);
// Binds raw phase 2: name(workspace, workspace_size, executor, stream=None) -> status.
void def_phase2(py::module_ &raw, const char *name, Phase2 fn);

void bind_common(py::module_ &m, py::module_ &raw);

}  // namespace agpy
