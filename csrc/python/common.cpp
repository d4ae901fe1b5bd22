#include "common.h"

#include <cctype>
#include <cstdlib>
#include <mutex>
#include <new>
#include <vector>

#include "ascendgrad/ascendgrad.h"

namespace agpy {
namespace {

// Objects kept for the life of the process are leaked on purpose: a static py::object would be
// released after the interpreter has finalized, which crashes at exit.
py::handle numpy() {
    static PyObject *m = py::module_::import("numpy").release().ptr();
    return m;
}

// ascendgrad._interop: PyTorch tensors, DLPack and __array__ objects as ndarrays, in place.
py::handle interop() {
    static PyObject *m = py::module_::import("ascendgrad._interop").release().ptr();
    return m;
}

int flags(const py::array &a) { return py::detail::array_proxy(a.ptr())->flags; }

bool usable_in_place(const py::array &a) {
    const char order = a.dtype().byteorder();
    if (order == '>') return false;  // byte-swapped: the kernels read native values
    if (!(flags(a) & py::detail::npy_api::NPY_ARRAY_ALIGNED_)) return false;
    for (py::ssize_t i = 0; i < a.ndim(); ++i)
        if (a.strides(i) % a.itemsize()) return false;
    return true;
}

struct PyScalar {
    aclScalar *s = nullptr;
    aclDataType dtype = ACL_DT_UNDEFINED;
    double value = 0;
    ~PyScalar() { aclDestroyScalar(s); }
};

struct PyStream {
    aclrtStream handle = nullptr;
    std::vector<py::object> pending;  // what queued work reads or writes, until synchronize
    PyStream() {
        if (aclrtCreateStream(&handle) != ACL_SUCCESS) raise_status(ACLNN_ERR_RUNTIME_ERROR);
    }
    ~PyStream() { close(); }
    void close() {
        if (handle) {
            py::gil_scoped_release nogil;
            aclrtDestroyStream(handle);  // waits for the queued work
        }
        handle = nullptr;
        pending.clear();
    }
    int synchronize() {
        if (!handle) return ACLNN_ERR_PARAM_INVALID;
        int s;
        {
            py::gil_scoped_release nogil;
            s = aclrtSynchronizeStream(handle);
        }
        pending.clear();
        return s;
    }
};

}  // namespace

namespace {

// `msg` with every whole word that is a C argument name replaced by the NumPy one; text in
// double quotes (a value the caller passed) is kept as it is.
std::string renamed(const std::string &msg, const ArgNames &names) {
    auto ident = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
    std::string r;
    bool quoted = false;
    for (size_t i = 0; i < msg.size();) {
        if (!ident(msg[i]) || quoted) {
            quoted ^= msg[i] == '"';
            r += msg[i++];
            continue;
        }
        size_t j = i;
        while (j < msg.size() && ident(msg[j])) ++j;
        const std::string word = msg.substr(i, j - i);
        const char *py_name = nullptr;
        for (const auto &n : names)
            if (word == n.first) py_name = n.second;
        r += py_name ? py_name : word;
        i = j;
    }
    return r;
}

PyObject *numpy_type(const char *name) {  // numpy.integer, numpy.floating, numpy.bool_ (kept for good)
    return py::object(numpy().attr(name)).release().ptr();
}

PyObject *numpy_generic() {  // numpy.generic: NumPy's scalar types
    static PyObject *t = numpy_type("generic");
    return t;
}

}  // namespace

void raise_status(int status, const ArgNames *names) {
    const char *msg = aclGetRecentErrMsg();
    std::string text = msg ? msg : "aclnn call failed with status " + std::to_string(status);
    throw AclnnFailure(status, names ? renamed(text, *names) : text);
}

std::string type_name(py::handle v) { return py::str(py::type::of(v).attr("__name__")).cast<std::string>(); }

int64_t int_arg(py::handle v, const char *name) {
    static PyObject *integer = numpy_type("integer");
    PyObject *p = v.ptr();
    if (PyBool_Check(p) || !(PyLong_Check(p) || PyObject_IsInstance(p, integer) == 1))
        throw py::type_error(std::string(name) + " must be an int, got " + type_name(v));
    py::int_ i = py::reinterpret_steal<py::int_>(PyNumber_Index(p));
    if (!i) throw py::error_already_set();
    int overflow = 0;
    const long long r = PyLong_AsLongLongAndOverflow(i.ptr(), &overflow);
    if (overflow) throw py::value_error(std::string(name) + " must fit in int64, got " + py::str(i).cast<std::string>());
    return r;
}

double float_arg(py::handle v, const char *name) {
    PyObject *p = v.ptr();
    bool real = !PyBool_Check(p) && (PyFloat_Check(p) || PyLong_Check(p));
    if (!real && PyObject_IsInstance(p, numpy_generic()) == 1) {  // a NumPy scalar: integer or float (bfloat16 too)
        const aclDataType t = acl_dtype(py::reinterpret_borrow<py::object>(v).attr("dtype").cast<py::dtype>());
        real = t != ACL_BOOL && t != ACL_COMPLEX64 && t != ACL_COMPLEX128 && t != ACL_DT_UNDEFINED;
    }
    if (!real) throw py::type_error(std::string(name) + " must be a float, got " + type_name(v));
    const double d = PyFloat_AsDouble(p);
    if (d == -1.0 && PyErr_Occurred()) throw py::error_already_set();  // an int beyond the float range
    return d;
}

bool bool_arg(py::handle v, const char *name) {
    static PyObject *np_bool = numpy_type("bool_");
    PyObject *p = v.ptr();
    if (!(PyBool_Check(p) || PyObject_IsInstance(p, np_bool) == 1))
        throw py::type_error(std::string(name) + " must be a bool, got " + type_name(v));
    return PyObject_IsTrue(p) == 1;
}

py::dtype bfloat16_dtype() {
    static PyObject *dt = py::dtype::from_args(py::module_::import("ml_dtypes").attr("bfloat16")).release().ptr();
    return py::reinterpret_borrow<py::dtype>(dt);
}

aclDataType acl_dtype(const py::dtype &dt) {
    const int size = int(dt.itemsize());
    switch (dt.kind()) {
        case 'f': return size == 2 ? ACL_FLOAT16 : size == 4 ? ACL_FLOAT : size == 8 ? ACL_DOUBLE : ACL_DT_UNDEFINED;
        case 'i': return size == 1 ? ACL_INT8 : size == 2 ? ACL_INT16 : size == 4 ? ACL_INT32 : ACL_INT64;
        case 'u': return size == 1 ? ACL_UINT8 : size == 2 ? ACL_UINT16 : size == 4 ? ACL_UINT32 : ACL_UINT64;
        case 'b': return ACL_BOOL;
        case 'c': return size == 8 ? ACL_COMPLEX64 : ACL_COMPLEX128;
        default: break;
    }
    if (dt.num() == bfloat16_dtype().num()) return ACL_BF16;
    return ACL_DT_UNDEFINED;
}

py::dtype np_dtype(aclDataType t) {
    switch (t) {
        case ACL_FLOAT16: return py::dtype("float16");
        case ACL_FLOAT: return py::dtype("float32");
        case ACL_DOUBLE: return py::dtype("float64");
        case ACL_BF16: return bfloat16_dtype();
        case ACL_INT8: return py::dtype("int8");
        case ACL_INT16: return py::dtype("int16");
        case ACL_INT32: return py::dtype("int32");
        case ACL_INT64: return py::dtype("int64");
        case ACL_UINT8: return py::dtype("uint8");
        case ACL_UINT16: return py::dtype("uint16");
        case ACL_UINT32: return py::dtype("uint32");
        case ACL_UINT64: return py::dtype("uint64");
        case ACL_BOOL: return py::dtype("bool");
        case ACL_COMPLEX64: return py::dtype("complex64");
        case ACL_COMPLEX128: return py::dtype("complex128");
        default: throw py::value_error("aclDataType " + std::to_string(int(t)) + " has no NumPy equivalent");
    }
}

TensorRef::TensorRef(py::array a) : a_(std::move(a)) {
    const aclDataType dt = acl_dtype(a_.dtype());
    if (dt == ACL_DT_UNDEFINED)
        throw py::type_error("arrays of dtype " + py::str(a_.dtype()).cast<std::string>() + " are not supported");
    const int nd = int(a_.ndim());
    const int64_t es = a_.itemsize();
    std::vector<int64_t> shape(nd), strides(nd);
    int64_t lo = 0, hi = 0;
    bool empty = false;
    for (int i = 0; i < nd; ++i) {
        shape[i] = a_.shape(i);
        strides[i] = a_.strides(i) / es;
        empty |= shape[i] == 0;
        const int64_t span = (shape[i] - 1) * strides[i];
        (span < 0 ? lo : hi) += span;
    }
    if (empty) lo = hi = 0;
    // The storage is the memory the view spans; offset locates element 0 within it.
    const int64_t storage = empty ? 0 : hi - lo + 1;
    char *base = static_cast<char *>(const_cast<void *>(a_.data())) + lo * es;
    t_ = aclCreateTensor(shape.data(), nd, dt, strides.data(), -lo, ACL_FORMAT_ND, &storage, 1, base);
    if (!t_) raise_status(ACLNN_ERR_PARAM_INVALID);
    base_ = base;
    bytes_ = size_t(storage * es);
    ascendgradMemcheckRegister(base_, bytes_, "NumPy array");
}

TensorRef::~TensorRef() {
    aclDestroyTensor(t_);
    ascendgradMemcheckUnregister(base_, bytes_);
}

std::vector<int64_t> shape_of(const py::array &a) { return {a.shape(), a.shape() + a.ndim()}; }

py::array as_input(py::handle obj, const char *name) {
    if (obj.is_none()) throw py::type_error(std::string(name) + " must be an array of numbers, not None");
    py::object o;  // (not a py::array: a default one is an empty array, not null)
    if (py::isinstance<py::array>(obj))
        o = py::reinterpret_borrow<py::object>(obj);
    else if (PyFloat_CheckExact(obj.ptr()) || PyLong_CheckExact(obj.ptr()) || PyObject_IsInstance(obj.ptr(), numpy_generic()) == 1)
        o = py::array::ensure(obj);  // a number: numpy.asarray's result, without a Python-level call
    if (!o) o = interop().attr("asarray")(obj);
    py::array a = o.cast<py::array>();
    if (acl_dtype(a.dtype()) == ACL_DT_UNDEFINED)
        throw py::type_error(std::string(name) + " must be an array of numbers, got dtype " +
                             py::str(a.dtype()).cast<std::string>());
    if (!usable_in_place(a))
        a = numpy().attr("ascontiguousarray")(a, a.dtype().attr("newbyteorder")("=")).cast<py::array>();
    return a;
}

bool is_weak(py::handle obj) {
    PyObject *p = obj.ptr();
    if (!(PyLong_Check(p) || PyFloat_Check(p) || PyComplex_Check(p) || PyList_Check(p) || PyTuple_Check(p)))
        return false;  // arrays, tensors: the common case, decided without a call into NumPy
    return PyObject_IsInstance(p, numpy_generic()) != 1;  // np.float64 is a float too
}

py::array as_input_like(py::handle obj, const char *name, const py::array &like) {
    if (!is_weak(obj)) return as_input(obj, name);
    return as_input(as_input(obj, name).attr("astype")(like.dtype()), name);
}

std::pair<py::array, py::array> as_input_pair(py::handle a, const char *a_name, py::handle b, const char *b_name) {
    if (is_weak(a)) {
        py::array bb = as_input(b, b_name);
        return {as_input_like(a, a_name, bb), bb};
    }
    py::array aa = as_input(a, a_name);
    return {aa, as_input_like(b, b_name, aa)};
}

namespace {
bool is_float(const py::dtype &dt) {
    const aclDataType t = acl_dtype(dt);
    return t == ACL_FLOAT16 || t == ACL_BF16 || t == ACL_FLOAT || t == ACL_DOUBLE;
}
}  // namespace

void check_same_float_dtype(const char *op, const py::array &a, const char *a_name, const py::array &b,
                            const char *b_name) {
    // a scalar only: NumPy's promotion rules are what a user may expect there (arrays get the
    // library's message)
    if (a.ndim() != 0) return;
    const py::dtype da = a.dtype(), db = b.dtype();
    if (!is_float(da) || !is_float(db) || acl_dtype(da) == acl_dtype(db)) return;
    const std::string want = py::str(db).cast<std::string>();
    throw AclnnFailure(ACLNN_ERR_PARAM_INVALID,
                       std::string(op) + ": " + a_name + " is " + py::str(da).cast<std::string>() + " but " + b_name +
                           " is " + want + ": pass a Python float or a " + want + " value (Python numbers take " +
                           b_name + "'s dtype, NumPy scalars keep theirs).");
}

py::array as_output(py::handle obj, const char *name) {
    // a PyTorch CPU tensor or DLPack array is written in place through an ndarray view
    py::array a = py::isinstance<py::array>(obj) ? py::reinterpret_borrow<py::array>(obj)
                                                 : interop().attr("output_array")(obj).cast<py::array>();
    if (!(flags(a) & py::detail::npy_api::NPY_ARRAY_WRITEABLE_))
        throw py::value_error(std::string(name) + " is read-only");
    if (!usable_in_place(a))
        throw py::value_error(std::string(name) + " must be aligned, in native byte order, with strides that are "
                              "multiples of its item size");
    return a;
}

namespace {

// Memory of large results, kept when their array dies and given to the next result of the same
// size class: a training loop asks for the same sizes call after call, and fresh pages cost more
// than the kernel that fills them (each one a page fault; under a hypervisor more, and varying).
// Bounded: at most kPoolMax bytes wait here; memory in use is never held back.
constexpr size_t kPoolMin = size_t(1) << 20;    // smaller results: NumPy's allocation is cheap
constexpr size_t kPoolMax = size_t(256) << 20;  // bytes kept for reuse, at most
constexpr size_t kPoolClass = size_t(64) << 10; // sizes rounded up to a multiple of this

struct Block {
    void *p;
    size_t bytes;  // a multiple of kPoolClass
};
struct Pool {
    std::mutex mutex;
    std::vector<Block> blocks;  // most recently freed last
    size_t bytes = 0;
};
Pool &pool() {
    static Pool *p = new Pool;  // leaked: results may die during the interpreter's finalization
    return *p;
}

Block take(size_t n) {
    const size_t bytes = (n + kPoolClass - 1) / kPoolClass * kPoolClass;
    {
        Pool &q = pool();
        std::lock_guard<std::mutex> lock(q.mutex);
        for (size_t i = q.blocks.size(); i-- > 0;)
            if (q.blocks[i].bytes == bytes) {
                const Block b = q.blocks[i];
                q.blocks.erase(q.blocks.begin() + std::ptrdiff_t(i));
                q.bytes -= b.bytes;
                return b;
            }
    }
    void *p = std::aligned_alloc(64, bytes);  // (no huge-page advice: their faults can stall on compaction)
    if (!p) throw std::bad_alloc();
    return {p, bytes};
}

void give(Block b) {
    if (b.bytes > kPoolMax) {
        std::free(b.p);
        return;
    }
    Pool &q = pool();
    std::lock_guard<std::mutex> lock(q.mutex);
    while (q.bytes + b.bytes > kPoolMax) {  // the oldest make room
        std::free(q.blocks.front().p);
        q.bytes -= q.blocks.front().bytes;
        q.blocks.erase(q.blocks.begin());
    }
    q.blocks.push_back(b);
    q.bytes += b.bytes;
}

}  // namespace

py::array new_array(const std::vector<int64_t> &shape, const py::dtype &dt) {
    const std::vector<py::ssize_t> sh(shape.begin(), shape.end());
    size_t n = size_t(dt.itemsize());
    for (int64_t d : shape) n *= size_t(d);
    if (n < kPoolMin) return py::array(dt, sh);
    Block *b = new Block(take(n));
    py::capsule owner(b, [](void *q) {
        Block *k = static_cast<Block *>(q);
        give(*k);
        delete k;
    });
    return py::array(dt, sh, b->p, owner);  // C order
}

aclTensor *tensor_arg(py::handle obj, const char *name) {
    if (obj.is_none()) return nullptr;
    if (!py::isinstance<PyTensor>(obj))
        throw py::type_error(std::string(name) + " must be an aclnn.Tensor or None");
    return obj.cast<PyTensor &>().ref->get();
}

aclScalar *scalar_arg(py::handle obj, const char *name) {
    if (obj.is_none()) return nullptr;
    if (!py::isinstance<PyScalar>(obj)) throw py::type_error(std::string(name) + " must be an aclnn.Scalar or None");
    return obj.cast<PyScalar &>().s;
}

py::tuple phase1_result(aclnnStatus s, uint64_t ws, aclOpExecutor *ex, std::vector<py::object> keep) {
    if (s != ACLNN_SUCCESS) return py::make_tuple(s, 0, py::none());
    PyExecutor e;
    e.handle = ex;
    e.live = true;
    e.keep = std::move(keep);
    return py::make_tuple(s, ws, py::cast(std::move(e)));
}

static aclnnStatus run_phase2(Phase2 fn, py::object workspace, uint64_t workspace_size, py::object executor,
                       py::object stream) {
    void *ws = nullptr;
    if (!workspace.is_none()) {
        py::array a = as_output(workspace, "workspace");
        if (a.dtype().kind() != 'u' || a.itemsize() != 1 || !(flags(a) & py::detail::npy_api::NPY_ARRAY_C_CONTIGUOUS_))
            throw py::type_error("workspace must be a C-contiguous numpy uint8 array");
        if (uint64_t(a.nbytes()) < workspace_size)
            throw py::value_error("workspace has " + std::to_string(a.nbytes()) + " bytes, fewer than workspace_size " +
                                  std::to_string(workspace_size));
        ws = a.mutable_data();
    }
    aclOpExecutor *ex = nullptr;
    PyExecutor *pe = nullptr;
    if (!executor.is_none()) {
        if (!py::isinstance<PyExecutor>(executor)) throw py::type_error("executor must be an aclnn.Executor or None");
        pe = &executor.cast<PyExecutor &>();
        ex = pe->handle;
    }
    aclrtStream st = nullptr;
    if (!stream.is_none()) {
        if (!py::isinstance<PyStream>(stream)) throw py::type_error("stream must be an aclnn.Stream or None");
        PyStream &ps = stream.cast<PyStream &>();
        st = ps.handle ? ps.handle : reinterpret_cast<aclrtStream>(uintptr_t(1));  // closed: rejected below
        // Asynchronous work must find its arrays alive until the stream is synchronized.
        if (ex) ps.pending.push_back(executor);
        if (!workspace.is_none()) ps.pending.push_back(workspace);
    }
    if (pe && !pe->repeatable) pe->live = false;  // phase 2 consumes a single-use executor, whatever its status
    py::gil_scoped_release nogil;
    return fn(ws, workspace_size, ex, st);
}

void def_phase2(py::module_ &raw, const char *name, Phase2 fn) {
    raw.def(
        name,
        [fn](py::object workspace, uint64_t workspace_size, py::object executor, py::object stream) {
            return run_phase2(fn, workspace, workspace_size, executor, stream);
        },
        py::arg("workspace"), py::arg("workspace_size"), py::arg("executor"), py::arg("stream") = py::none());
}

void bind_common(py::module_ &m, py::module_ &raw) {
    py::register_exception_translator([](std::exception_ptr p) {
        try {
            if (p) std::rethrow_exception(p);
        } catch (const AclnnFailure &e) {
            py::object cls = py::module_::import("ascendgrad._errors").attr("AclnnError");
            py::object exc = cls(e.what(), e.status);
            PyErr_SetObject(cls.ptr(), exc.ptr());
        }
    });

    m.attr("__version__") = ascendgradVersion();
    m.def("set_num_threads", &ascendgradSetNumThreads, py::arg("n"),
          "Threads the kernels use (n <= 0: back to OMP_NUM_THREADS or the core count).");
    m.def("get_num_threads", &ascendgradGetNumThreads, "Threads the kernels use.");
    m.def("set_thread_num_threads", &ascendgradSetThreadNumThreads, py::arg("n"),
          "Threads the kernels use when called from this thread (n <= 0: the process-wide count).");
    m.def("kernel_isa", &ascendgradKernelIsa,
          "Instruction set the kernels run with: 'avx512', 'avx2', 'neon' or 'baseline' (at most ASCENDGRAD_ISA).");

    py::class_<PyTensor>(raw, "Tensor", "An aclTensor over a NumPy array, in place (no copy); keeps the array alive.")
        .def(py::init([](py::object array) {
                 py::array a;
                 if (py::isinstance<py::array>(array)) {
                     a = py::reinterpret_borrow<py::array>(array);
                     if (!usable_in_place(a))
                         throw py::value_error("Tensor: the array must be aligned, in native byte order, with strides "
                                               "that are multiples of its item size");
                 } else {
                     a = as_input(array, "array");
                 }
                 return PyTensor{std::make_unique<TensorRef>(a)};
             }),
             py::arg("array"))
        .def_property_readonly("array", [](const PyTensor &t) { return t.ref->array(); })
        .def_property_readonly("shape", [](const PyTensor &t) { return py::tuple(t.ref->array().attr("shape")); })
        .def_property_readonly("dtype", [](const PyTensor &t) { return t.ref->array().dtype(); })
        .def("__repr__", [](const PyTensor &t) {
            return "aclnn.Tensor(shape=" + py::str(t.ref->array().attr("shape")).cast<std::string>() +
                   ", dtype=" + py::str(t.ref->array().dtype()).cast<std::string>() + ")";
        });

    py::class_<PyScalar>(raw, "Scalar", "An aclScalar holding a copy of value converted to dtype.")
        .def(py::init([](py::object value, py::object dtype) {
                 py::dtype dt = py::isinstance<py::int_>(dtype) ? np_dtype(aclDataType(dtype.cast<int>()))
                                                                : py::dtype::from_args(dtype);
                 const aclDataType t = acl_dtype(dt);
                 if (t == ACL_DT_UNDEFINED) throw py::type_error("Scalar: unsupported dtype");
                 py::array a = numpy().attr("asarray")(value, dt).cast<py::array>();
                 if (a.ndim() != 0) throw py::value_error("Scalar: value must be a single number");
                 auto s = std::make_unique<PyScalar>();
                 s->s = aclCreateScalar(const_cast<void *>(a.data()), t);
                 if (!s->s) raise_status(ACLNN_ERR_PARAM_INVALID);
                 s->dtype = t;
                 s->value = numpy().attr("float64")(a).cast<double>();
                 return s;
             }),
             py::arg("value"), py::arg("dtype"))
        .def_property_readonly("value", [](const PyScalar &s) { return s.value; })
        .def_property_readonly("dtype", [](const PyScalar &s) { return int(s.dtype); })
        .def("__repr__", [](const PyScalar &s) {
            return "aclnn.Scalar(" + py::repr(py::float_(s.value)).cast<std::string>() + ", dtype=" +
                   std::to_string(int(s.dtype)) + ")";
        });

    py::class_<PyStream>(raw, "Stream", "A stream: work runs asynchronously, in order, on a worker thread.")
        .def(py::init<>())
        .def("synchronize", &PyStream::synchronize,
             "Waits for the queued work; returns the first error status since the previous synchronize.")
        .def("close", &PyStream::close, "Finishes the queued work and destroys the stream.")
        .def("__enter__", [](py::object self) { return self; })
        .def("__exit__", [](PyStream &s, py::args) { s.close(); });

    py::class_<PyExecutor>(raw, "Executor", "An aclOpExecutor made by a ``*_get_workspace_size`` call.")
        .def_property_readonly("handle", [](const PyExecutor &e) { return reinterpret_cast<uintptr_t>(e.handle); })
        .def("__repr__", [](const PyExecutor &e) {
            return "aclnn.Executor(handle=" + std::to_string(reinterpret_cast<uintptr_t>(e.handle)) + ")";
        });

    raw.def(
        "get_recent_err_msg",
        []() -> py::object {
            const char *m = aclGetRecentErrMsg();
            return m ? py::str(m) : py::object(py::none());
        },
        "The newest error message of this thread, then cleared; None when there is none.");
    raw.def(
        "set_executor_repeatable",
        [](py::object e) {
            if (e.is_none()) return aclSetAclOpExecutorRepeatable(nullptr);
            PyExecutor &pe = e.cast<PyExecutor &>();
            const aclnnStatus s = aclSetAclOpExecutorRepeatable(pe.handle);
            if (s == ACLNN_SUCCESS) pe.repeatable = true;
            return s;
        },
        py::arg("executor"));
    raw.def(
        "destroy_executor",
        [](py::object e) {
            if (e.is_none()) return aclDestroyAclOpExecutor(nullptr);
            PyExecutor &pe = e.cast<PyExecutor &>();
            const aclnnStatus s = aclDestroyAclOpExecutor(pe.handle);
            if (s == ACLNN_SUCCESS) pe.live = false;
            return s;
        },
        py::arg("executor"));
}

}  // namespace agpy
