// The objects behind the opaque aclnn handles, and the conversions the operators need.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "aclnn/acl_meta.h"
#include "kernels/common.h"

struct aclTensor {
    std::vector<int64_t> view;
    std::vector<int64_t> strides;
    std::vector<int64_t> storage;
    int64_t offset = 0;
    aclDataType dtype = ACL_DT_UNDEFINED;
    aclFormat format = ACL_FORMAT_ND;
    void *data = nullptr;
    bool numel_overflow = false;  // view numel beyond int64: reported by the operators
    // Index of the first negative view dim, or -1. Such a descriptor is accepted (as CANN) but
    // describes no memory: the operators reject it before anything uses its extent.
    int negative_dim = -1;

    // Counted once at creation (the view never changes after it): phase 1 asks several times.
    int64_t count = 0;

    int rank() const { return int(view.size()); }
    int64_t numel() const { return count; }  // meaningless when numel_overflow; -1 when negative_dim >= 0
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
std::string shape_str(const std::vector<int64_t> &shape);  // "[2, 3]"
std::string dtype_list_str(std::initializer_list<aclDataType> list);
bool is_float(aclDataType t);                     // f16, bf16, f32, f64
kern::DType to_kern(aclDataType t);               // for validated dtypes only

// v = the kernel's view of a validated tensor (rank <= kern::kMaxRank, no negative dim): data points
// at element 0. Written in place, only the first rank dims: a returned View is copied whole.
void set_view(kern::View &v, const aclTensor &t);

// A scalar's value as double (any numeric dtype).
double scalar_value(const aclScalar &s);

}  // namespace ag
