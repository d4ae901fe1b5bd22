// Every operator as a table: its tensor arguments (name, shape, dtype, role, values) and options,
// with a valid call built from them (Call). Tests then change one thing and watch what happens:
// test_bad_input.cpp (the bad-input matrix), test_concurrency.cpp (threads, streams, fork).
#pragma once

#include <deque>
#include <stdexcept>
#include <string>
#include <vector>

#include "aclnnop/aclnn_cross_entropy_loss_grad.h"
#include "aclnnop/aclnn_kl_div_backward.h"
#include "aclnnop/aclnn_logsigmoid_backward.h"
#include "aclnnop/aclnn_softmax_backward.h"
#include "aclnnop/aclnn_softshrink_backward.h"
#include "test_util.h"

namespace agtest {

constexpr double kCanary = 7.0;
constexpr int64_t kPad = 4;  // elements before (offset) and after each valid view in its storage

using Tensors = std::vector<aclTensor *>;
using Phase2 = aclnnStatus (*)(void *, uint64_t, aclOpExecutor *, aclrtStream);

// The non-tensor arguments; defaults make a valid call.
struct Options {
    int64_t dim = 1;                                        // softmax
    double lambd = 0.5;                                     // softshrink
    aclDataType lambd_dtype = ACL_FLOAT;
    bool lambd_null = false;
    const char *reduction = "mean";                         // cross-entropy
    int64_t ignore_index = -100;
    double label_smoothing = 0.1, zloss_scale = 0.5;        // zloss_scale != 0: lse is required
    int64_t kl_reduction = 1;                               // kl-div
    bool log_target = false;
};

enum class Role { Input, Optional, Ignored, Output };  // Ignored: LogSigmoid's buffer

struct ArgDef {
    const char *name;
    Shape shape;
    aclDataType dtype;
    Role role;
    std::vector<double> values;  // empty: a default pattern
    Shape bad_shape = {};        // a shape this argument rejects itself; empty: last dim + 1
};

struct OpDef {
    const char *name;
    std::vector<ArgDef> args;
    aclnnStatus (*phase1)(const Tensors &, const Options &, uint64_t *, aclOpExecutor **);
    Phase2 phase2;
};

inline const std::vector<OpDef> &ops() {
    static const std::vector<OpDef> v = {
        {"aclnnSoftmaxBackward",
         {{"gradOutput", {2, 3}, ACL_FLOAT, Role::Input, {}},
          {"output", {2, 3}, ACL_FLOAT, Role::Input, {0.2, 0.3, 0.5, 0.1, 0.1, 0.8}},
          {"out", {2, 3}, ACL_FLOAT, Role::Output, {}}},
         [](const Tensors &t, const Options &o, uint64_t *ws, aclOpExecutor **e) {
             return aclnnSoftmaxBackwardGetWorkspaceSize(t[0], t[1], o.dim, t[2], ws, e);
         },
         aclnnSoftmaxBackward},
        {"aclnnLogSigmoidBackward",
         {{"gradOutput", {2, 3}, ACL_FLOAT, Role::Input, {}},
          {"self", {2, 3}, ACL_FLOAT, Role::Input, {}},
          {"buffer", {2, 3}, ACL_FLOAT, Role::Ignored, {}},
          {"gradInput", {2, 3}, ACL_FLOAT, Role::Output, {}}},
         [](const Tensors &t, const Options &, uint64_t *ws, aclOpExecutor **e) {
             return aclnnLogSigmoidBackwardGetWorkspaceSize(t[0], t[1], t[2], t[3], ws, e);
         },
         aclnnLogSigmoidBackward},
        {"aclnnSoftshrinkBackward",
         {{"gradOutput", {2, 3}, ACL_FLOAT, Role::Input, {}},
          {"self", {2, 3}, ACL_FLOAT, Role::Input, {}},
          {"gradInput", {2, 3}, ACL_FLOAT, Role::Output, {}}},
         [](const Tensors &t, const Options &o, uint64_t *ws, aclOpExecutor **e) {
             unsigned char value[8];
             write_elem(value, o.lambd_dtype, o.lambd);
             aclScalar *lambd = o.lambd_null ? nullptr : aclCreateScalar(value, o.lambd_dtype);
             const aclnnStatus s = aclnnSoftshrinkBackwardGetWorkspaceSize(t[0], t[1], lambd, t[2], ws, e);
             aclDestroyScalar(lambd);  // phase 1 keeps the value, not the scalar
             return s;
         },
         aclnnSoftshrinkBackward},
        {"aclnnCrossEntropyLossGrad",
         {{"gradLoss", {}, ACL_FLOAT, Role::Input, {0.5}},
          // another C (or N) is reported by the argument that then disagrees: see value_rows
          {"logProb", {2, 3}, ACL_FLOAT, Role::Input, {-1.2, -0.9, -1.2, -2.0, -0.5, -1.5}, {2, 3, 1}},
          {"target", {2}, ACL_INT64, Role::Input, {0, 2}},
          {"weightOptional", {3}, ACL_FLOAT, Role::Optional, {1.0, 2.0, 0.5}},
          {"gradZlossOptional", {}, ACL_FLOAT, Role::Optional, {0.25}},
          {"lseForZlossOptional", {2}, ACL_FLOAT, Role::Input, {1.5, 2.5}},
          {"out", {2, 3}, ACL_FLOAT, Role::Output, {}}},
         [](const Tensors &t, const Options &o, uint64_t *ws, aclOpExecutor **e) {
             return aclnnCrossEntropyLossGradGetWorkspaceSize(t[0], t[1], t[2], t[3], t[4], t[5],
                                                              const_cast<char *>(o.reduction), o.ignore_index,
                                                              o.label_smoothing, o.zloss_scale, t[6], ws, e);
         },
         aclnnCrossEntropyLossGrad},
        {"aclnnKlDivBackward",
         {{"gradOutput", {2, 3}, ACL_FLOAT, Role::Input, {}},
          {"self", {2, 3}, ACL_FLOAT, Role::Input, {}},
          {"target", {2, 3}, ACL_FLOAT, Role::Input, {0.1, 0.2, 0.7, 0.3, 0.3, 0.4}},
          {"out", {2, 3}, ACL_FLOAT, Role::Output, {}}},
         [](const Tensors &t, const Options &o, uint64_t *ws, aclOpExecutor **e) {
             return aclnnKlDivBackwardGetWorkspaceSize(t[0], t[1], t[2], o.kl_reduction, o.log_target, t[3], ws, e);
         },
         aclnnKlDivBackward},
    };
    return v;
}

inline const OpDef &op_named(const std::string &name) {
    for (const OpDef &op : ops())
        if (name == op.name) return op;
    throw std::runtime_error("no operator " + name);
}

// One call of an operator: valid tensors (each view at offset kPad inside a padded storage; out
// canary-filled), what is passed instead, and the options.
struct Call {
    const OpDef &op;
    std::deque<HostTensor> owned;   // every storage here is compared before and after
    Tensors t;
    Options o;
    std::vector<aclTensor *> made;  // tensors a fault created, destroyed with the call
    std::string create_msg;         // the message of an aclCreateTensor a fault expected to fail

    explicit Call(const OpDef &def) : op(def) {
        for (const ArgDef &a : op.args) {
            const int64_t n = numel(a.shape);
            HostTensor &h = owned.emplace_back(a.shape, contiguous_strides(a.shape), kPad, a.dtype, n + 2 * kPad);
            if (a.role == Role::Output) {
                h.fill_storage(kCanary);
            } else {
                h.fill_storage(-3.0);  // outside the view: must stay as it is too
                std::vector<double> v = a.values;
                for (int64_t i = int64_t(v.size()); i < n; ++i) v.push_back(0.25 * double(i + 1) - 0.6);
                h.fill(v);
            }
            t.push_back(h.t());
        }
    }
    ~Call() {
        for (aclTensor *m : made) aclDestroyTensor(m);
    }
    int index(const std::string &arg) const {
        for (size_t i = 0; i < op.args.size(); ++i)
            if (arg == op.args[i].name) return int(i);
        throw std::runtime_error(std::string(op.name) + " has no argument " + arg);
    }
    const ArgDef &def(const std::string &arg) const { return op.args[size_t(index(arg))]; }
    HostTensor &tensor(const std::string &arg) { return owned[size_t(index(arg))]; }
    std::vector<std::vector<unsigned char>> storages() const {
        std::vector<std::vector<unsigned char>> r;
        for (const HostTensor &h : owned) r.push_back(h.storage_bytes());
        return r;
    }
    // A tensor the call passes in place of `arg`; NULL is recorded with its creation message.
    void pass(const std::string &arg, aclTensor *tensor) {
        if (tensor) made.push_back(tensor);
        else create_msg = take_error();
        t[size_t(index(arg))] = tensor;
    }
    // A contiguous view of `shape` and `dtype` over arg's own storage (the call's other rules
    // then decide), or with data replaced by `data`.
    aclTensor *create(const std::string &arg, const Shape &shape, aclDataType dtype, const Shape *strides = nullptr,
                      int64_t offset = 0, const Shape *storage = nullptr) {
        HostTensor &h = tensor(arg);
        const int64_t bytes = h.storage_elems() * int64_t(aclDataTypeSize(h.dtype()));
        const Shape whole = {bytes / std::max<int64_t>(1, int64_t(aclDataTypeSize(dtype)))};
        const Shape &st = storage ? *storage : whole;
        return aclCreateTensor(shape.data(), shape.size(), dtype, strides ? strides->data() : nullptr, offset,
                               ACL_FORMAT_ND, st.data(), st.size(), h.data());
    }
};

}  // namespace agtest
