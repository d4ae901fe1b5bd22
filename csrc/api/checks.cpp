#include "checks.h"

#include <algorithm>

#include "status.h"

namespace ag {

aclnnStatus check_outputs(const char *op, const uint64_t *workspaceSize, aclOpExecutor **executor) {
    if (!workspaceSize || !executor)
        return fail(ACLNN_ERR_PARAM_NULLPTR, "%sGetWorkspaceSize: The workspaceSize or executor is nullptr.", op);
    return ACLNN_SUCCESS;
}

aclnnStatus check_not_null(const char *op, const aclTensor *t, const char *name) {
    if (!t) return fail(ACLNN_ERR_PARAM_NULLPTR, "%s: Expected a proper Tensor but got null for argument %s.", op, name);
    return ACLNN_SUCCESS;
}

aclnnStatus check_scalar_not_null(const char *op, const aclScalar *s, const char *name) {
    if (!s)
        return fail(ACLNN_ERR_PARAM_NULLPTR,
                    "%s: Expected a value of type number for argument %s but instead found type null.", op, name);
    return ACLNN_SUCCESS;
}

aclnnStatus check_max_rank(const char *op, const aclTensor *t, const char *name, int limit) {
    if (t->rank() > limit)
        return fail(ACLNN_ERR_PARAM_INVALID, "%s: The %s tensor cannot be larger than %d dimensions, but got %d.",
                    op, name, limit, t->rank());
    return ACLNN_SUCCESS;
}

aclnnStatus check_tensor(const char *op, const aclTensor *t, const char *name) {
    if (t->negative_dim >= 0)
        return fail(ACLNN_ERR_PARAM_INVALID, "%s: Tensor %s has a negative size %lld in dimension %d of shape %s.", op,
                    name, (long long)t->view[size_t(t->negative_dim)], t->negative_dim, shape_str(t->view).c_str());
    if (t->negative_storage_dim >= 0)
        return fail(ACLNN_ERR_PARAM_INVALID,
                    "%s: Tensor %s has a negative storage size %lld in dimension %d of storage shape %s.", op, name,
                    (long long)t->storage[size_t(t->negative_storage_dim)], t->negative_storage_dim,
                    shape_str(t->storage).c_str());
    AG_CHECK(check_max_rank(op, t, name, kern::kMaxRank));
    if (t->numel_overflow)
        return fail(ACLNN_ERR_PARAM_INVALID, "%s: Tensor %s of shape %s has more elements than int64 can count.",
                    op, name, shape_str(t->view).c_str());
    if (!t->data && t->numel() > 0)
        return fail(ACLNN_ERR_PARAM_NULLPTR, "%s: Tensor %s of shape %s has a NULL data address.", op, name,
                    shape_str(t->view).c_str());
    return ACLNN_SUCCESS;
}

static aclnnStatus dtype_error(const char *op, const aclTensor *t, const char *name,
                               std::initializer_list<aclDataType> allowed) {
    return fail(ACLNN_ERR_PARAM_INVALID, "%s: Tensor %s not implemented for %s, should be in dtype support list %s.",
                op, name, dtype_name(t->dtype), dtype_list_str(allowed).c_str());
}

aclnnStatus check_dtype(const char *op, const aclTensor *t, const char *name,
                        std::initializer_list<aclDataType> allowed) {
    if (std::find(allowed.begin(), allowed.end(), t->dtype) == allowed.end())
        return dtype_error(op, t, name, allowed);
    return ACLNN_SUCCESS;
}

aclnnStatus check_float_dtype(const char *op, const aclTensor *t, const char *name) {
    return check_dtype(op, t, name, {ACL_FLOAT16, ACL_BF16, ACL_FLOAT, ACL_DOUBLE});
}

aclnnStatus check_same_dtype(const char *op, const aclTensor *t, const char *name, aclDataType expected) {
    if (t->dtype != expected)
        return fail(ACLNN_ERR_PARAM_INVALID, "%s: Tensor %s expected dtype is %s but found %s.", op, name,
                    dtype_name(expected), dtype_name(t->dtype));
    return ACLNN_SUCCESS;
}

aclnnStatus check_same_shape(const char *op, const aclTensor *t, const char *name, const aclTensor *ref,
                             const char *ref_name) {
    if (t->view != ref->view)
        return fail(ACLNN_ERR_PARAM_INVALID,
                    "%s: Expected tensor for %s to have same size as tensor for %s, but %s does not equal %s.", op,
                    name, ref_name, shape_str(t->view).c_str(), shape_str(ref->view).c_str());
    return ACLNN_SUCCESS;
}

aclnnStatus check_shape(const char *op, const aclTensor *t, const char *name, const int64_t *expected, size_t n) {
    if (t->view.size() != n || !std::equal(expected, expected + n, t->view.begin()))
        return fail(ACLNN_ERR_PARAM_INVALID, "%s: Expected tensor for %s to have size %s, but got %s.", op, name,
                    shape_str(expected, n).c_str(), shape_str(t->view).c_str());
    return ACLNN_SUCCESS;
}

aclnnStatus broadcast_shapes(const char *op, const aclTensor *a, const char *a_name, const aclTensor *b,
                             const char *b_name, std::vector<int64_t> *out) {
    const size_t n = std::max(a->view.size(), b->view.size());
    std::vector<int64_t> r(n);
    for (size_t i = 0; i < n; ++i) {
        const int64_t da = i < n - a->view.size() ? 1 : a->view[i - (n - a->view.size())];
        const int64_t db = i < n - b->view.size() ? 1 : b->view[i - (n - b->view.size())];
        if (da != db && da != 1 && db != 1)
            return fail(ACLNN_ERR_PARAM_INVALID, "%s: The size of tensor %s %s must match the size of tensor %s %s.",
                        op, a_name, shape_str(a->view).c_str(), b_name, shape_str(b->view).c_str());
        r[i] = da == 1 ? db : da;
    }
    *out = std::move(r);
    return ACLNN_SUCCESS;
}

namespace {

struct Span {  // bytes [lo, hi) a view can touch
    const char *lo, *hi;
};

Span span_of(const aclTensor *t) {
    const int64_t es = int64_t(aclDataTypeSize(t->dtype));
    int64_t lo = t->offset, hi = t->offset;
    for (int i = 0; i < t->rank(); ++i) {
        const int64_t s = (t->view[i] - 1) * t->strides[i];
        (s < 0 ? lo : hi) += s;
    }
    const char *base = static_cast<const char *>(t->data);
    return {base + lo * es, base + (hi + 1) * es};
}

// True when some element of the view is reachable by two index tuples.
bool self_overlaps(const aclTensor *t) {
    // |stride|, size (check_tensor: rank <= kMaxRank); a std::pair array would be zeroed whole first
    struct Dim {
        int64_t stride, size;
        bool operator<(const Dim &o) const { return stride < o.stride || (stride == o.stride && size < o.size); }
    } dims[kern::kMaxRank];
    int m = 0;
    for (int i = 0; i < t->rank(); ++i)
        if (t->view[i] > 1) dims[m++] = {t->strides[i] < 0 ? -t->strides[i] : t->strides[i], t->view[i]};
    for (int i = 1; i < m; ++i)  // insertion sort (few dims)
        for (int j = i; j > 0 && dims[j] < dims[j - 1]; --j) std::swap(dims[j], dims[j - 1]);
    int64_t reach = 0;  // largest offset reachable with the smaller strides
    for (int i = 0; i < m; ++i) {
        if (dims[i].stride <= reach) return true;
        reach += dims[i].stride * (dims[i].size - 1);
    }
    return false;
}

bool identical(const aclTensor *a, const aclTensor *b) {
    const int64_t es = int64_t(aclDataTypeSize(a->dtype));
    // addresses first: they differ in most calls, and then the shapes need no comparing
    return a->dtype == b->dtype &&
           static_cast<const char *>(a->data) + a->offset * es == static_cast<const char *>(b->data) + b->offset * es &&
           a->view == b->view && a->strides == b->strides;
}

}  // namespace

aclnnStatus check_output_memory(const char *op, const aclTensor *out, const char *name,
                                std::initializer_list<std::pair<const aclTensor *, const char *>> inputs,
                                bool in_place_ok) {
    if (out->numel() == 0) return ACLNN_SUCCESS;
    if (self_overlaps(out))
        return fail(ACLNN_ERR_PARAM_INVALID,
                    "%s: Output %s (shape %s, strides %s) has elements that share memory; it must not overlap itself.",
                    op, name, shape_str(out->view).c_str(), shape_str(out->strides).c_str());
    const Span so = span_of(out);
    for (auto [in, in_name] : inputs) {
        if (!in || in->numel() == 0) continue;
        if (in_place_ok && identical(out, in)) continue;
        const Span si = span_of(in);
        if (so.lo < si.hi && si.lo < so.hi)
            return fail(ACLNN_ERR_PARAM_INVALID,
                        "%s: Output %s partially overlaps input %s in memory; use separate memory or the identical "
                        "view (in-place).",
                        op, name, in_name);
    }
    return ACLNN_SUCCESS;
}

}  // namespace ag
