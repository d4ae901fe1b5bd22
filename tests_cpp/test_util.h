// Shared helpers for the C++ tests: host tensors behind aclTensor handles, element conversions
// through the kernel layer's own f16/bf16 functions, error-message access, float64 reference
// loops and dtype-derived tolerances. Operator-agnostic: every operator's tests may use it.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "acl/acl.h"
#include "aclnn/acl_meta.h"
#include "ascendgrad/ascendgrad.h"
#include "kernels/common.h"

namespace agtest {

using Shape = std::vector<int64_t>;

// ---- dtypes and element conversions ----

inline const char *dtype_str(aclDataType t) {
    switch (t) {
        case ACL_FLOAT16: return "f16";
        case ACL_BF16: return "bf16";
        case ACL_FLOAT: return "f32";
        case ACL_DOUBLE: return "f64";
        case ACL_INT32: return "i32";
        case ACL_INT64: return "i64";
        case ACL_BOOL: return "bool";
        default: return "other";
    }
}

inline const std::vector<aclDataType> &float_dtypes() {
    static const std::vector<aclDataType> v = {ACL_FLOAT16, ACL_BF16, ACL_FLOAT, ACL_DOUBLE};
    return v;
}

inline double half_bits_to_double(uint16_t b) { return ag::kern::half_to_float(b); }
inline double bf16_bits_to_double(uint16_t b) { return ag::kern::bf16_to_float(b); }
// One rounding from double (the library's store(), which must round once).
inline uint16_t double_to_half_bits(double v) {
    ag::kern::half_t h;
    ag::kern::store(&h, v);
    return h.bits;
}
inline uint16_t double_to_bf16_bits(double v) {
    ag::kern::bf16_t h;
    ag::kern::store(&h, v);
    return h.bits;
}

// Value of the element at p, as double.
inline double read_elem(const void *p, aclDataType t) {
    switch (t) {
        case ACL_FLOAT16: { uint16_t b; std::memcpy(&b, p, 2); return half_bits_to_double(b); }
        case ACL_BF16: { uint16_t b; std::memcpy(&b, p, 2); return bf16_bits_to_double(b); }
        case ACL_FLOAT: { float f; std::memcpy(&f, p, 4); return f; }
        case ACL_DOUBLE: { double d; std::memcpy(&d, p, 8); return d; }
        case ACL_INT32: { int32_t i; std::memcpy(&i, p, 4); return i; }
        case ACL_INT64: { int64_t i; std::memcpy(&i, p, 8); return double(i); }
        case ACL_BOOL: { uint8_t b; std::memcpy(&b, p, 1); return b ? 1.0 : 0.0; }
        default: ADD_FAILURE() << "read_elem: unsupported dtype " << int(t); return 0.0;
    }
}

// Stores v at p in dtype t (floats: rounded once, to nearest even).
inline void write_elem(void *p, aclDataType t, double v) {
    switch (t) {
        case ACL_FLOAT16: { uint16_t b = double_to_half_bits(v); std::memcpy(p, &b, 2); break; }
        case ACL_BF16: { uint16_t b = double_to_bf16_bits(v); std::memcpy(p, &b, 2); break; }
        case ACL_FLOAT: { float f = float(v); std::memcpy(p, &f, 4); break; }
        case ACL_DOUBLE: std::memcpy(p, &v, 8); break;
        case ACL_INT32: { int32_t i = int32_t(v); std::memcpy(p, &i, 4); break; }
        case ACL_INT64: { int64_t i = int64_t(v); std::memcpy(p, &i, 8); break; }
        case ACL_BOOL: { uint8_t b = v != 0; std::memcpy(p, &b, 1); break; }
        default: ADD_FAILURE() << "write_elem: unsupported dtype " << int(t);
    }
}

// v after a round trip through dtype t.
inline double quantize(double v, aclDataType t) {
    unsigned char buf[8];
    write_elem(buf, t, v);
    return read_elem(buf, t);
}

// Unit roundoff scale of a float dtype: the spacing of values in [1, 2).
inline double eps_of(aclDataType t) {
    switch (t) {
        case ACL_FLOAT16: return std::ldexp(1.0, -10);
        case ACL_BF16: return std::ldexp(1.0, -7);
        case ACL_FLOAT: return std::ldexp(1.0, -23);
        default: return std::ldexp(1.0, -52);
    }
}
// Smallest positive (subnormal) value of a float dtype.
inline double denorm_min_of(aclDataType t) {
    switch (t) {
        case ACL_FLOAT16: return std::ldexp(1.0, -24);
        case ACL_BF16: return std::ldexp(1.0, -133);
        case ACL_FLOAT: return std::ldexp(1.0, -149);
        default: return std::numeric_limits<double>::denorm_min();
    }
}
// "f32-class" compute: float32 for f16/bf16/f32 inputs, float64 for f64 inputs.
inline aclDataType compute_dtype(aclDataType input) { return input == ACL_DOUBLE ? ACL_DOUBLE : ACL_FLOAT; }

// ---- shapes ----

inline int64_t numel(const Shape &s) {
    int64_t n = 1;
    for (int64_t d : s) n *= d;
    return n;
}

inline Shape contiguous_strides(const Shape &s) {
    Shape st(s.size());
    int64_t acc = 1;
    for (size_t i = s.size(); i-- > 0;) {
        st[i] = acc;
        acc *= s[i] > 0 ? s[i] : 1;
    }
    return st;
}

inline std::string shape_str(const Shape &s) {
    std::string r = "[";
    for (size_t i = 0; i < s.size(); ++i) r += (i ? ", " : "") + std::to_string(s[i]);
    return r + "]";
}

// Storage offsets (in elements) of every view element, row-major (last dim fastest).
inline std::vector<int64_t> view_offsets(const Shape &shape, const Shape &strides, int64_t offset) {
    const int64_t n = numel(shape);
    std::vector<int64_t> r;
    r.reserve(size_t(n > 0 ? n : 0));
    if (n <= 0) return r;
    Shape idx(shape.size(), 0);
    int64_t off = offset;
    for (int64_t k = 0; k < n; ++k) {
        r.push_back(off);
        for (size_t d = shape.size(); d-- > 0;) {
            off += strides[d];
            if (++idx[d] < shape[d]) break;
            off -= idx[d] * strides[d];
            idx[d] = 0;
        }
    }
    return r;
}

// Calls f(indices) for every 1-D line of `shape` along `dim`; indices are the row-major
// (linear) view indices of the line's elements in order. A rank-0 shape is one line of one.
inline void for_each_line(const Shape &shape, int dim, const std::function<void(const std::vector<int64_t> &)> &f) {
    if (shape.empty()) {
        f({0});
        return;
    }
    const int64_t n = shape[dim];
    int64_t inner = 1, outer = 1;
    for (size_t d = dim + 1; d < shape.size(); ++d) inner *= shape[d];
    for (int d = 0; d < dim; ++d) outer *= shape[d];
    std::vector<int64_t> line(static_cast<size_t>(n));
    for (int64_t o = 0; o < outer; ++o)
        for (int64_t i = 0; i < inner; ++i) {
            for (int64_t k = 0; k < n; ++k) line[k] = (o * n + k) * inner + i;
            if (n > 0) f(line);
        }
}

// ---- errors ----

// The calling thread's pending error message (taken), or "" when there is none.
inline std::string take_error() {
    const char *m = aclGetRecentErrMsg();
    return m ? std::string(m) : std::string();
}

// ---- a host tensor behind an aclTensor handle ----

// A view (shape, strides, element offset) into an owned storage of `storage_elems` elements.
// The aclTensor handle is created at construction and destroyed with the object.
class HostTensor {
public:
    HostTensor() = default;
    // Contiguous.
    HostTensor(Shape shape, aclDataType dtype) : HostTensor(shape, contiguous_strides(shape), 0, dtype, -1) {}
    // Strided view; storage_elems < 0 sizes the storage to just hold the view.
    HostTensor(Shape shape, Shape strides, int64_t offset, aclDataType dtype, int64_t storage_elems = -1)
        : shape_(std::move(shape)), strides_(std::move(strides)), offset_(offset), dtype_(dtype) {
        offsets_ = view_offsets(shape_, strides_, offset_);
        int64_t need = 0;
        for (int64_t o : offsets_) {
            EXPECT_GE(o, 0) << "view reaches below its storage";
            need = std::max(need, o + 1);
        }
        storage_elems_ = storage_elems >= 0 ? storage_elems : std::max<int64_t>(need, 1);
        const size_t es = aclDataTypeSize(dtype_);
        buf_.assign((size_t(storage_elems_) * es + 7) / 8 + 1, 0.0);
        const int64_t sdim = storage_elems_;
        handle_ = aclCreateTensor(shape_.data(), shape_.size(), dtype_, strides_.data(), offset_, ACL_FORMAT_ND,
                                  &sdim, 1, buf_.data());
        EXPECT_NE(handle_, nullptr) << "aclCreateTensor failed: " << take_error();
        // host memory in place of aclrtMalloc memory: known to memcheck
        ascendgradMemcheckRegister(buf_.data(), size_t(storage_elems_) * es, "test buffer");
    }
    HostTensor(const HostTensor &) = delete;
    HostTensor &operator=(const HostTensor &) = delete;
    HostTensor(HostTensor &&o) noexcept { *this = std::move(o); }
    HostTensor &operator=(HostTensor &&o) noexcept {
        std::swap(shape_, o.shape_);
        std::swap(strides_, o.strides_);
        std::swap(offset_, o.offset_);
        std::swap(dtype_, o.dtype_);
        std::swap(storage_elems_, o.storage_elems_);
        std::swap(offsets_, o.offsets_);
        std::swap(buf_, o.buf_);
        std::swap(handle_, o.handle_);
        return *this;
    }
    ~HostTensor() {
        aclDestroyTensor(handle_);
        ascendgradMemcheckUnregister(buf_.data(), size_t(storage_elems_) * es());
    }

    aclTensor *t() const { return handle_; }
    void *data() { return buf_.data(); }
    const Shape &shape() const { return shape_; }
    const Shape &strides() const { return strides_; }
    int64_t offset() const { return offset_; }
    aclDataType dtype() const { return dtype_; }
    int64_t numel() const { return int64_t(offsets_.size()); }
    int64_t storage_elems() const { return storage_elems_; }
    const std::vector<int64_t> &offsets() const { return offsets_; }

    // View element i (row-major), as double.
    double at(int64_t i) const { return storage_at(offsets_[size_t(i)]); }
    void set(int64_t i, double v) { storage_set(offsets_[size_t(i)], v); }
    double storage_at(int64_t k) const { return read_elem(bytes() + k * es(), dtype_); }
    void storage_set(int64_t k, double v) { write_elem(mbytes() + k * es(), dtype_, v); }

    std::vector<double> values() const {
        std::vector<double> r(offsets_.size());
        for (size_t i = 0; i < r.size(); ++i) r[i] = at(int64_t(i));
        return r;
    }
    void fill(const std::vector<double> &v) {
        EXPECT_EQ(int64_t(v.size()), numel());
        for (size_t i = 0; i < v.size() && i < offsets_.size(); ++i) set(int64_t(i), v[i]);
    }
    // Every storage element, including those outside the view.
    void fill_storage(double v) {
        for (int64_t k = 0; k < storage_elems_; ++k) storage_set(k, v);
    }
    // Uniform in [lo, hi), rounded to the dtype; elements outside the view too.
    void fill_random(std::mt19937_64 &rng, double lo, double hi) {
        std::uniform_real_distribution<double> u(lo, hi);
        for (int64_t k = 0; k < storage_elems_; ++k) storage_set(k, u(rng));
    }
    // The raw storage bytes.
    std::vector<unsigned char> storage_bytes() const {
        return std::vector<unsigned char>(bytes(), bytes() + storage_elems_ * es());
    }

private:
    int64_t es() const { return int64_t(aclDataTypeSize(dtype_)); }
    const unsigned char *bytes() const { return reinterpret_cast<const unsigned char *>(buf_.data()); }
    unsigned char *mbytes() { return reinterpret_cast<unsigned char *>(buf_.data()); }

    Shape shape_, strides_;
    int64_t offset_ = 0;
    aclDataType dtype_ = ACL_FLOAT;
    int64_t storage_elems_ = 0;
    std::vector<int64_t> offsets_;
    std::vector<double> buf_;  // 8-byte aligned storage
    aclTensor *handle_ = nullptr;
};

// Host memory handed to the API in place of aclrtMalloc memory, known to memcheck
// (ASCENDGRAD_MEMCHECK) for the object's lifetime.
class KnownMemory {
public:
    KnownMemory(const void *p, size_t bytes) : p_(p), bytes_(bytes) { ascendgradMemcheckRegister(p_, bytes_, "test buffer"); }
    template <class T>
    explicit KnownMemory(const std::vector<T> &v) : KnownMemory(v.data(), v.size() * sizeof(T)) {}
    KnownMemory(const KnownMemory &) = delete;
    KnownMemory &operator=(const KnownMemory &) = delete;
    ~KnownMemory() { ascendgradMemcheckUnregister(p_, bytes_); }

private:
    const void *p_;
    size_t bytes_;
};

// A contiguous tensor holding `values` (rounded to dtype).
inline HostTensor make_tensor(const Shape &shape, aclDataType dtype, const std::vector<double> &values) {
    HostTensor t(shape, dtype);
    t.fill(values);
    return t;
}

// ---- running phase 2 ----

// Runs phase 2 (`phase2` is the operator's second function) with a workspace of the size phase 1
// asked for; stream NULL runs synchronously.
template <class Phase2>
aclnnStatus run_phase2(Phase2 phase2, uint64_t workspaceSize, aclOpExecutor *executor, aclrtStream stream = nullptr) {
    void *ws = nullptr;
    if (workspaceSize > 0 && aclrtMalloc(&ws, workspaceSize, ACL_MEM_MALLOC_HUGE_FIRST) != ACL_SUCCESS) {
        ADD_FAILURE() << "aclrtMalloc of the workspace failed";
        return ACLNN_ERR_INNER;
    }
    const aclnnStatus s = phase2(ws, workspaceSize, executor, stream);
    if (stream) EXPECT_EQ(aclrtSynchronizeStream(stream), ACL_SUCCESS);
    if (ws) aclrtFree(ws);
    return s;
}

// Sets the kernel thread count for a scope, then restores the default.
struct ThreadCount {
    explicit ThreadCount(int n) { ascendgradSetNumThreads(n); }
    ~ThreadCount() { ascendgradSetNumThreads(0); }
};

// ---- comparing with a float64 reference ----

// Checks got[i] against ref[i] within tol[i]; NaN must match NaN and infinities must match
// exactly. Reports the first few failures with their index.
inline void expect_close(const std::vector<double> &got, const std::vector<double> &ref,
                         const std::vector<double> &tol, const std::string &what) {
    ASSERT_EQ(got.size(), ref.size()) << what;
    int bad = 0;
    for (size_t i = 0; i < got.size(); ++i) {
        bool ok;
        if (std::isnan(ref[i])) ok = std::isnan(got[i]);
        else if (std::isinf(ref[i])) ok = got[i] == ref[i];
        else ok = std::fabs(got[i] - ref[i]) <= tol[i];
        if (!ok && bad++ < 5)
            ADD_FAILURE() << what << ": element " << i << " got " << got[i] << " expected " << ref[i]
                          << " (tolerance " << tol[i] << ", error " << std::fabs(got[i] - ref[i]) << ")";
    }
    EXPECT_EQ(bad, 0) << what << ": " << bad << " of " << got.size() << " elements out of tolerance";
}

}  // namespace agtest
