// The objects behind the opaque aclnn handles, and the conversions the operators need.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "aclnn/acl_meta.h"
#include "kernels/common.h"

namespace ag {

// A tensor's dims, set once at its creation: up to kInline of them in place, more on the heap, so
// that a tensor of the usual ranks is one allocation (a std::vector each made it four: a tenth of
// a tiny NumPy call, which creates its tensors per call, as host code often does).
class Dims {
public:
    static constexpr size_t kInline = 8;
    Dims() = default;
    Dims(const Dims &) = delete;
    Dims &operator=(const Dims &) = delete;
    ~Dims() {
        if (p_ != in_) delete[] p_;
    }
    // Room for n dims, their values unset (once per tensor).
    int64_t *init(size_t n) {
        if (n > kInline) p_ = new int64_t[n];
        n_ = n;
        return p_;
    }
    size_t size() const { return n_; }
    const int64_t *data() const { return p_; }
    const int64_t *begin() const { return p_; }
    const int64_t *end() const { return p_ + n_; }
    int64_t operator[](size_t i) const { return p_[i]; }
    bool operator==(const Dims &o) const { return n_ == o.n_ && std::equal(begin(), end(), o.begin()); }
    bool operator!=(const Dims &o) const { return !(*this == o); }

private:
    int64_t in_[kInline];
    int64_t *p_ = in_;
    size_t n_ = 0;
};

}  // namespace ag

struct aclTensor {
    ag::Dims view;
    ag::Dims strides;
    ag::Dims storage;
    int64_t offset = 0;
    aclDataType dtype = ACL_DT_UNDEFINED;
    aclFormat format = ACL_FORMAT_ND;
    void *data = nullptr;
    bool numel_overflow = false;  // view numel beyond int64: reported by the operators
    // Index of the first negative view dim, or -1; the same of the storage dims. Such a
    // descriptor is accepted (as CANN) but describes no memory: the operators reject it before
    // anything uses its extent.
    int negative_dim = -1;
    int negative_storage_dim = -1;

    // Counted once at creation (the view never changes after it): phase 1 asks several times.
    int64_t count = 0;

    int rank() const { return int(view.size()); }
    int64_t numel() const { return count; }  // INT64_MAX when numel_overflow; -1 when negative_dim >= 0
};

struct aclScalar {
    aclDataType dtype = ACL_DT_UNDEFINED;
    alignas(8) unsigned char value[8] = {};
};

struct aclIntArray {
    std::vector<int64_t> values;
};

namespace ag {

const char *dtype_name(aclDataType t);            // "DT_FLOAT", ...
std::string shape_str(const int64_t *dims, size_t n);  // "[2, 3]"
inline std::string shape_str(const std::vector<int64_t> &s) { return shape_str(s.data(), s.size()); }
inline std::string shape_str(const Dims &s) { return shape_str(s.data(), s.size()); }
std::string dtype_list_str(std::initializer_list<aclDataType> list);
bool is_float(aclDataType t);                     // f16, bf16, f32, f64
kern::DType to_kern(aclDataType t);               // for validated dtypes only

// v = the kernel's view of a validated tensor (rank <= kern::kMaxRank, no negative dim): data points
// at element 0. Written in place, only the first rank dims: a returned View is copied whole.
void set_view(kern::View &v, const aclTensor &t);

// A scalar's value as double (any numeric dtype).
double scalar_value(const aclScalar &s);

}  // namespace ag
