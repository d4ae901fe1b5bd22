// Argument checks shared by the operators. Each returns ACLNN_SUCCESS or a status with the
// thread's message set; `op` is the operator's name ("aclnnSoftmaxBackward").
#pragma once

#include <initializer_list>
#include <vector>

#include "objects.h"

namespace ag {

// Returns early from the calling function with the status of a failed check.
#define AG_CHECK(expr)                                   \
    do {                                                 \
        if (aclnnStatus ag_s_ = (expr)) return ag_s_;    \
    } while (0)

// The rank limit CANN's SoftmaxBackward (gradOutput), SoftshrinkBackward (gradOutput, self) and
// KlDivBackward (all four tensors) check with OP_CHECK_MAX_DIM. LogSigmoidBackward and
// CrossEntropyLossGrad have none (their shape rules fix the ranks they accept), so there any
// rank an aclTensor can describe (kern::kMaxRank) is accepted.
constexpr int kOpMaxRank = 8;

// phase-1 output pointers (workspaceSize, executor) must not be NULL
aclnnStatus check_outputs(const char *op, const uint64_t *workspaceSize, aclOpExecutor **executor);

// NULL -> 161001 "Expected a proper Tensor but got null for argument NAME."
aclnnStatus check_not_null(const char *op, const aclTensor *t, const char *name);
aclnnStatus check_scalar_not_null(const char *op, const aclScalar *s, const char *name);

// no negative dim, rank <= kern::kMaxRank, numel fits int64, data present unless empty
aclnnStatus check_tensor(const char *op, const aclTensor *t, const char *name);
// rank <= limit (the operator's own limit, where CANN has one)
aclnnStatus check_max_rank(const char *op, const aclTensor *t, const char *name, int limit);

aclnnStatus check_dtype(const char *op, const aclTensor *t, const char *name,
                        std::initializer_list<aclDataType> allowed);
aclnnStatus check_same_dtype(const char *op, const aclTensor *t, const char *name, aclDataType expected);
// the float dtypes every operator accepts: f16, bf16, f32, f64
aclnnStatus check_float_dtype(const char *op, const aclTensor *t, const char *name);

// shape(t) == shape(ref) -> else 161002 naming both shapes
aclnnStatus check_same_shape(const char *op, const aclTensor *t, const char *name, const aclTensor *ref,
                             const char *ref_name);
// shape(t) == expected[0, n) -> else 161002 naming both shapes (no allocation unless it fails)
aclnnStatus check_shape(const char *op, const aclTensor *t, const char *name, const int64_t *expected, size_t n);
inline aclnnStatus check_shape(const char *op, const aclTensor *t, const char *name,
                               const std::vector<int64_t> &expected) {
    return check_shape(op, t, name, expected.data(), expected.size());
}
inline aclnnStatus check_shape(const char *op, const aclTensor *t, const char *name,
                               std::initializer_list<int64_t> expected) {
    return check_shape(op, t, name, expected.begin(), expected.size());
}

// NumPy broadcasting of a and b into *out; 161002 naming both shapes when impossible.
aclnnStatus broadcast_shapes(const char *op, const aclTensor *a, const char *a_name, const aclTensor *b,
                             const char *b_name, std::vector<int64_t> *out);

// An output must not overlap itself (no zero or interleaved strides), nor partially overlap an
// input. Identical views (same address, dtype, shape and strides) are allowed when in_place_ok.
aclnnStatus check_output_memory(const char *op, const aclTensor *out, const char *name,
                                std::initializer_list<std::pair<const aclTensor *, const char *>> inputs,
                                bool in_place_ok);

}  // namespace ag
