#include "aclnnop/aclnn_softshrink_backward.h"

#include "common.h"

namespace agpy {
namespace {

const ArgNames kNames = {{"gradOutput", "grad_output"}, {"self", "x"}, {"gradInput", "out"}};

// numpy.result_type(g, x); float16 with bfloat16 has none in NumPy: float32, their compute type
// (and PyTorch's promotion).
py::dtype result_dtype(const py::array &g, const py::array &x) {
    if (g.dtype().is(x.dtype()) || g.dtype().equal(x.dtype())) return g.dtype();  // the usual case, without NumPy's call
    try {
        return py::dtype::from_args(py::module_::import("numpy").attr("result_type")(g, x));
    } catch (const py::error_already_set &) {
        return py::dtype("float32");
    }
}

// NumPy broadcasting of the two shapes; when they do not broadcast, g's shape, so that the
// library reports the mismatch with its own message.
std::vector<int64_t> broadcast_shape(const py::array &g, const py::array &x) {
    std::vector<int64_t> a = shape_of(g), b = shape_of(x);
    if (a.size() < b.size()) a.insert(a.begin(), b.size() - a.size(), 1);
    if (b.size() < a.size()) b.insert(b.begin(), a.size() - b.size(), 1);
    for (size_t i = 0; i < a.size(); ++i) {
        if (a[i] != b[i] && a[i] != 1 && b[i] != 1) return shape_of(g);
        a[i] = a[i] == 1 ? b[i] : a[i];
    }
    return a;
}

// λ as an aclScalar of its own dtype (a Python float is f64, a Python int i64): the library
// checks dtype and value. None gives NULL, which the library reports.
struct Lambd {
    aclScalar *s = nullptr;
    explicit Lambd(py::handle v) {
        if (v.is_none()) return;
        if (PyFloat_CheckExact(v.ptr())) {  // the usual λ, without NumPy's conversion
            double d = PyFloat_AS_DOUBLE(v.ptr());
            s = aclCreateScalar(&d, ACL_DOUBLE);
            if (!s) raise_status(ACLNN_ERR_PARAM_INVALID);
            return;
        }
        auto wrong = [v] { return py::type_error("lambd must be a single real number, got " + type_name(v)); };
        py::array a;
        try {
            a = as_input(v, "lambd");
        } catch (const py::type_error &) {  // a str, an object: not a number at all
            throw wrong();
        }
        if (a.ndim() != 0) throw wrong();
        s = aclCreateScalar(const_cast<void *>(a.data()), acl_dtype(a.dtype()));
        if (!s) raise_status(ACLNN_ERR_PARAM_INVALID);
    }
    ~Lambd() { aclDestroyScalar(s); }
    Lambd(const Lambd &) = delete;
    Lambd &operator=(const Lambd &) = delete;
};

}  // namespace

void bind_softshrink_backward(py::module_ &m, py::module_ &raw) {
    m.def(
        "softshrink_backward",
        [](py::handle grad_output, py::handle x, py::handle lambd, py::handle out) {
            // dtypes may differ (NumPy scalars included); a Python number or sequence takes the other's
            auto [g, xs] = as_input_pair(grad_output, "grad_output", x, "x");
            const Lambd lam(lambd);
            py::array o = out.is_none() ? new_array(broadcast_shape(g, xs), result_dtype(g, xs))
                                        : as_output(out, "out");
            TensorRef tg(g), tx(xs), to(o);
            run_two_phase(
                [&](uint64_t *ws, aclOpExecutor **ex) {
                    return aclnnSoftshrinkBackwardGetWorkspaceSize(tg.get(), tx.get(), lam.s, to.get(), ws, ex);
                },
                aclnnSoftshrinkBackward, kNames);
            return o;
        },
        py::arg("grad_output"), py::arg("x"), py::arg("lambd") = 0.5, py::arg("out") = py::none());

    raw.def(
        "softshrink_backward_get_workspace_size",
        [](py::object grad_output, py::object self, py::object lambd, py::object grad_input) {
            uint64_t ws = 0;
            aclOpExecutor *ex = nullptr;
            aclnnStatus s = aclnnSoftshrinkBackwardGetWorkspaceSize(
                tensor_arg(grad_output, "grad_output"), tensor_arg(self, "self"), scalar_arg(lambd, "lambd"),
                tensor_arg(grad_input, "grad_input"), &ws, &ex);
            return phase1_result(s, ws, ex, {grad_output, self, grad_input});
        },
        py::arg("grad_output"), py::arg("self"), py::arg("lambd"), py::arg("grad_input"));
    def_phase2(raw, "softshrink_backward", aclnnSoftshrinkBackward);
}

}  // namespace agpy
