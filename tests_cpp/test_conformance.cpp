// Conformance with CANN's statuses: one row per documented rule of each operator, asserting the
// status ascendgrad's phase 1 returns (and, for accepted calls, that phase 2 runs). Each row
// names its source: a seed page (the operator pages of SPEC's seeds/: 000 SoftmaxBackward,
// 001 LogSigmoidBackward, 002 SoftshrinkBackward, 003 CrossEntropyLossGrad, 004 KlDivBackward) or
// the function of CANN's op_api source (hicann/ops-nn) or its op_api unit test that states it.
// Each row also records CANN's status; where ours differs, the row names the line of the table
// "Where ascendgrad differs from CANN" (docs/c-api.md) that says why, and a test checks it exists.
#include <fstream>
#include <functional>
#include <set>
#include <sstream>

#include "op_table.h"

using namespace agtest;

namespace {

constexpr int kOk = ACLNN_SUCCESS, kNull = ACLNN_ERR_PARAM_NULLPTR, kInvalid = ACLNN_ERR_PARAM_INVALID;
constexpr int kTiling = 561002;      // ACLNN_ERR_INNER_TILING_ERROR (CrossEntropyLossGrad's shape errors)
constexpr int kUndocumented = -1;    // CANN states the rule but not the status it returns
constexpr int kUndefined = -2;       // CANN's behaviour is undefined (it does not check)

constexpr int kDescriptorRank = ag::kern::kMaxRank;  // what an aclTensor describes (gert::Shape: 25)

struct Rule {
    std::string name;    // gtest parameter name: Op_rule
    std::string op;
    std::string source;  // where CANN states the rule
    std::function<void(Call &)> setup;
    int cann;            // CANN's status, or kUndocumented / kUndefined
    int ours;
    std::string differs;  // key of the table's line (docs/c-api.md), when ours != cann
    std::vector<std::string> fragments = {};  // in our message, when ours != 0
};

const std::string kSm = "aclnnSoftmaxBackward", kLs = "aclnnLogSigmoidBackward", kSs = "aclnnSoftshrinkBackward",
                  kCe = "aclnnCrossEntropyLossGrad", kKl = "aclnnKlDivBackward";

std::string short_op(const std::string &op) { return op.substr(5); }

Shape pad_rank(Shape s, int rank) {
    s.insert(s.begin(), size_t(std::max<int>(0, rank - int(s.size()))), 1);
    return s;
}

// Replaces arg by a fresh zero-filled contiguous tensor of this shape and dtype (values valid for
// every operator: class 0 for targets).
void set(Call &c, const std::string &arg, const Shape &shape, aclDataType dtype) {
    HostTensor &h = c.owned.emplace_back(shape, dtype);
    c.t[size_t(c.index(arg))] = h.t();
}
void set_dtype(Call &c, const std::string &arg, aclDataType dtype) { set(c, arg, c.def(arg).shape, dtype); }
void set_shape(Call &c, const std::string &arg, const Shape &shape) { set(c, arg, shape, c.def(arg).dtype); }
void set_rank(Call &c, const std::string &arg, int rank) { set_shape(c, arg, pad_rank(c.def(arg).shape, rank)); }

// arg as a descriptor of another format over a fresh storage (aclCreateTensor's format argument)
void set_format(Call &c, const std::string &arg, aclFormat format) {
    const ArgDef &d = c.def(arg);
    HostTensor &h = c.owned.emplace_back(d.shape, d.dtype);
    const Shape st = contiguous_strides(d.shape), storage = {std::max<int64_t>(1, numel(d.shape))};
    c.pass(arg, aclCreateTensor(d.shape.data(), d.shape.size(), d.dtype, st.data(), 0, format, storage.data(), 1,
                                h.data()));
}

// The call CANN documents as valid: CrossEntropyLossGrad without smoothing and without z-loss
// inputs ("当前仅支持输入0.0", "当前仅支持传入nullptr", seed 003).
void cann_base(Call &c) {
    if (c.op.name != kCe) return;
    c.o.label_smoothing = 0.0;
    c.o.zloss_scale = 0.0;
    c.t[size_t(c.index("gradZlossOptional"))] = nullptr;
    c.t[size_t(c.index("lseForZlossOptional"))] = nullptr;
}

// ---- rows generated for every tensor argument ----

void argument_rows(std::vector<Rule> &rows) {
    for (const OpDef &op : ops()) {
        const std::string opn = op.name;
        const bool ce = opn == kCe;
        for (const ArgDef &a : op.args) {
            const std::string arg = a.name, prefix = short_op(opn) + "_" + arg + "_";
            const bool optional = a.role == Role::Optional || (ce && arg == "lseForZlossOptional");
            const bool buffer = a.role == Role::Ignored;
            // NULL: 161001 for every required tensor (CheckNotNull: OP_CHECK_NULL; seed 003's table)
            rows.push_back({prefix + "null", opn,
                            ce ? "seed 003 return table: gradLoss, logProb, target, out NULL -> 161001"
                               : "op_api CheckNotNull (OP_CHECK_NULL)",
                            [arg](Call &c) { c.t[size_t(c.index(arg))] = nullptr; }, optional ? kOk : kNull,
                            optional ? kOk : kNull, ""});
            // A negative dim: a descriptor CANN creates; phase 1 rejects it (every shape rule
            // compares it with another argument's dims). LogSigmoid's buffer is not checked at all.
            Shape neg = a.shape.empty() ? Shape{-1} : a.shape;
            neg.back() = -std::max<int64_t>(1, neg.back());
            rows.push_back({prefix + "negative_dim", opn,
                            buffer ? "op_api CheckShapeValid: buffer's shape is not checked"
                                   : "op_api UT logsigmoid_backward_testcase_026_exception_negative_dim; shape checks",
                            [arg, neg](Call &c) {
                                HostTensor &h = c.owned.emplace_back(Shape{8}, ACL_DOUBLE);
                                const Shape st = contiguous_strides(neg), storage = {8};
                                c.pass(arg, aclCreateTensor(neg.data(), neg.size(), c.def(arg).dtype, st.data(), 0,
                                                            ACL_FORMAT_ND, storage.data(), 1, h.data()));
                            },
                            buffer ? kOk : ce ? kUndocumented : kInvalid, buffer ? kOk : kInvalid, "",
                            {arg, "negative size " + std::to_string(neg.back()), "dimension " +
                                                                                     std::to_string(neg.size() - 1)}});
            // A negative storage dim under a valid view: CANN creates it and checks only view dims;
            // ours names it in phase 1 (no extent of the memory is known). The buffer is unchecked.
            rows.push_back({prefix + "negative_storage_dim", opn, "acl_op_api.cpp aclCreateTensor: storage dims not validated",
                            [arg](Call &c) {
                                const ArgDef &d = c.def(arg);
                                HostTensor &h = c.owned.emplace_back(Shape{std::max<int64_t>(1, numel(d.shape))},
                                                                     d.dtype);
                                const Shape st = contiguous_strides(d.shape), storage = {3, -8};
                                c.pass(arg, aclCreateTensor(d.shape.data(), d.shape.size(), d.dtype, st.data(), 0,
                                                            ACL_FORMAT_ND, storage.data(), 2, h.data()));
                            },
                            buffer ? kOk : kUndefined, buffer ? kOk : kInvalid, buffer ? "" : "a negative storage dim",
                            {arg, "negative storage size -8 in dimension 1 of storage shape [3, -8]"}});
            // An unsupported dtype: int32 for float tensors, float for the target (CheckDtypeValid)
            if (!buffer) {
                const aclDataType wrong = a.dtype == ACL_INT64 ? ACL_FLOAT : ACL_INT32;
                rows.push_back({prefix + "dtype_" + dtype_str(wrong), opn,
                                ce ? "seed 003 return table: dtype not supported -> 161002"
                                   : "op_api CheckDtypeValid (OP_CHECK_DTYPE_NOT_SUPPORT)",
                                [arg, wrong](Call &c) { set_dtype(c, arg, wrong); }, kInvalid, kInvalid, "",
                                {arg, dtype_str(wrong) == std::string("i32") ? "DT_INT32" : "DT_FLOAT"}});
            }
        }
    }
}

// ---- operator rules ----

void softmax_rows(std::vector<Rule> &rows) {
    auto row = [&](const std::string &name, const std::string &src, std::function<void(Call &)> f, int cann, int ours,
                   const std::string &differs = "", std::vector<std::string> frags = {}) {
        rows.push_back({"SoftmaxBackward_" + name, kSm, src, std::move(f), cann, ours, differs, std::move(frags)});
    };
    const char *dt = "op_api CheckDtypeValid; seed 000: FLOAT16, FLOAT32, BFLOAT16";
    row("f16", dt, [](Call &c) { for (auto a : {"gradOutput", "output", "out"}) set_dtype(c, a, ACL_FLOAT16); }, kOk, kOk);
    row("bf16", dt, [](Call &c) { for (auto a : {"gradOutput", "output", "out"}) set_dtype(c, a, ACL_BF16); }, kOk, kOk);
    row("f64", "op_api UT case_003_double_abnormal",
        [](Call &c) { for (auto a : {"gradOutput", "output", "out"}) set_dtype(c, a, ACL_DOUBLE); }, kInvalid, kOk,
        "ACL_DOUBLE");
    row("output_dtype_differs", "op_api UT case_005_diff_input_dtype_abnormal (OP_CHECK_DTYPE_NOT_MATCH)",
        [](Call &c) { set_dtype(c, "output", ACL_FLOAT16); }, kInvalid, kInvalid, "", {"output", "DT_FLOAT16"});
    row("out_other_float_dtype", "seed 000: out of other dtypes through automatic cast",
        [](Call &c) { set_dtype(c, "out", ACL_FLOAT16); }, kOk, kOk);
    row("out_int32", "seed 000: out of other dtypes through automatic cast",
        [](Call &c) { set_dtype(c, "out", ACL_INT32); }, kOk, kInvalid, "non-float", {"out", "DT_INT32"});
    const char *dim = "op_api CheckDim: -n <= dim < n, n = max(rank, 1)";
    row("dim_last", dim, [](Call &c) { c.o.dim = 1; }, kOk, kOk);
    row("dim_minus_rank", dim, [](Call &c) { c.o.dim = -2; }, kOk, kOk);
    row("dim_rank", "op_api UT case_013_dim_invalid", [](Call &c) { c.o.dim = 2; }, kInvalid, kInvalid, "",
        {"provided dim 2 not in the range of input size 2."});
    row("dim_below", dim, [](Call &c) { c.o.dim = -3; }, kInvalid, kInvalid, "", {"provided dim -3"});
    auto rank0 = [](int64_t d) {
        return [d](Call &c) {
            for (auto a : {"gradOutput", "output", "out"}) set(c, a, {}, ACL_FLOAT16);
            c.o.dim = d;
        };
    };
    row("rank0_dim0", "op_api UT case_zero_dim_num (a 0-d tensor counts as rank 1)", rank0(0), kOk, kOk);
    row("rank0_dim_minus1", dim, rank0(-1), kOk, kOk);
    row("rank0_dim1", dim, rank0(1), kInvalid, kInvalid, "", {"provided dim 1 not in the range of input size 1."});
    row("output_shape", "op_api UT case_007_diff_input_shape_abnormal (OP_CHECK_SHAPE_NOT_EQUAL)",
        [](Call &c) { set_shape(c, "output", {2, 4}); }, kInvalid, kInvalid, "", {"output", "[2, 4]"});
    row("out_shape", "op_api UT case_010_diff_in_out_shape_normal",
        [](Call &c) { set_shape(c, "out", {2, 4}); }, kInvalid, kInvalid, "", {"out", "[2, 4]"});
    auto rank = [](int r) {
        return [r](Call &c) { for (auto a : {"gradOutput", "output", "out"}) set_rank(c, a, r); };
    };
    row("rank8", "op_api UT case_011_8_dim_input; CheckShape OP_CHECK_MAX_DIM(gradOutput, AXIS_LIMIT = 8)", rank(8),
        kOk, kOk);
    row("rank9", "op_api UT case_018_9_dim_input", rank(9), kInvalid, kInvalid, "",
        {"gradOutput tensor cannot be larger than 8 dimensions"});
    row("empty", "op_api aclnnSoftmaxBackwardGetWorkspaceSize: empty tensors need no work",
        [](Call &c) { for (auto a : {"gradOutput", "output", "out"}) set_shape(c, a, {2, 0}); }, kOk, kOk);
    row("empty_inputs_out_mismatch", "op_api UT case_016_input_emptytensor_normal (CheckParams skips the checks)",
        [](Call &c) { for (auto a : {"gradOutput", "output"}) set_shape(c, a, {2, 0}); }, kOk, kInvalid,
        "empty inputs", {"out", "[2, 3]"});
    row("format_NHWC", "op_api UT case_014_format_NHWC_normal (format not checked)",
        [](Call &c) { for (auto a : {"gradOutput", "output", "out"}) set_format(c, a, ACL_FORMAT_NHWC); }, kOk, kOk);
    row("strided_inputs", "op_api UT case_017_input_contigous_normal",
        [](Call &c) {
            for (auto a : {"gradOutput", "output"}) {
                const Shape st = {1, 2};  // a transposed (3, 2) storage
                c.pass(a, c.create(a, {2, 3}, ACL_FLOAT, &st));
            }
        },
        kOk, kOk);
}

void logsigmoid_rows(std::vector<Rule> &rows) {
    auto row = [&](const std::string &name, const std::string &src, std::function<void(Call &)> f, int cann, int ours,
                   const std::string &differs = "", std::vector<std::string> frags = {}) {
        rows.push_back({"LogSigmoidBackward_" + name, kLs, src, std::move(f), cann, ours, differs, std::move(frags)});
    };
    const char *all[] = {"gradOutput", "self", "buffer", "gradInput"};
    auto every = [all](std::function<void(Call &, const char *)> f) {
        return [all, f](Call &c) { for (auto a : all) f(c, a); };
    };
    row("f16", "op_api UT testcase_002_normal_float16", every([](Call &c, const char *a) { set_dtype(c, a, ACL_FLOAT16); }),
        kOk, kOk);
    row("bf16", "op_api UT ascend910B2_case_bf16; seed 001: BFLOAT16 on A2",
        every([](Call &c, const char *a) { set_dtype(c, a, ACL_BF16); }), kOk, kOk);
    row("f64", "op_api UT testcase_007_exception_float64_dtype_not_supported",
        every([](Call &c, const char *a) { set_dtype(c, a, ACL_DOUBLE); }), kInvalid, kOk, "ACL_DOUBLE");
    row("complex64", "op_api UT testcase_016_exception_complex64_dtype_not_supported",
        every([](Call &c, const char *a) { set_dtype(c, a, ACL_COMPLEX64); }), kInvalid, kInvalid, "",
        {"gradOutput", "DT_COMPLEX64"});
    row("self_dtype_differs", "op_api UT testcase_008_normal_dtype_not_the_same (OP_CHECK_DTYPE_NOT_SAME)",
        [](Call &c) { set_dtype(c, "self", ACL_FLOAT16); }, kInvalid, kInvalid, "", {"self", "DT_FLOAT16"});
    row("gradInput_other_float_dtype", "op_api CheckDtypeValid: OP_CHECK_DTYPE_NOT_SAME(gradOutput, gradInput)",
        [](Call &c) { set_dtype(c, "gradInput", ACL_FLOAT16); }, kInvalid, kOk, "other float dtype");
    row("buffer_dtype_and_shape_ignored", "op_api CheckDtypeValid / CheckShapeValid: buffer [[maybe_unused]]",
        [](Call &c) { set(c, "buffer", {5}, ACL_INT32); }, kOk, kOk);
    row("self_shape", "op_api UT testcase_013_exception_different_shape",
        [](Call &c) { set_shape(c, "self", {3, 2}); }, kInvalid, kInvalid, "", {"self", "[3, 2]"});
    row("gradInput_shape", "op_api CheckShapeValid (OP_CHECK_SHAPE_NOT_EQUAL_WITH_EXPECTED_SIZE)",
        [](Call &c) { set_shape(c, "gradInput", {2, 4}); }, kInvalid, kInvalid, "", {"gradInput", "[2, 4]"});
    row("rank0", "op_api UT testcase_025_normal_scalar", every([](Call &c, const char *a) { set_shape(c, a, {}); }), kOk,
        kOk);
    auto rank = [every](int r) { return every([r](Call &c, const char *a) { set_rank(c, a, r); }); };
    row("rank9", "op_api UT testcase_018_normal_large_dims (CheckShapeValid has no rank limit)", rank(9), kOk, kOk);
    row("rank25", "no rank limit; gert::Shape::kMaxDimNum = 25 dims per aclTensor", rank(kDescriptorRank), kOk, kOk);
    row("rank26", "gert::Shape::kMaxDimNum = 25: beyond it CANN's descriptor is undefined", rank(kDescriptorRank + 1),
        kUndefined, kInvalid, "more than 25 dims", {"gradOutput tensor cannot be larger than 25 dimensions"});
    row("buffer_rank26_ignored", "op_api CheckShapeValid: buffer's shape is not checked",
        [](Call &c) { set_rank(c, "buffer", kDescriptorRank + 1); }, kOk, kOk);
    row("negative_dims_vs_rank9", "op_api UT testcase_026_exception_negative_dim",
        [](Call &c) {
            set_rank(c, "gradOutput", 9);
            set_rank(c, "gradInput", 9);
            HostTensor &h = c.owned.emplace_back(Shape{8}, ACL_FLOAT);
            const Shape neg = {-1, -1}, st = {1, 1}, storage = {8};
            c.pass("self", aclCreateTensor(neg.data(), 2, ACL_FLOAT, st.data(), 0, ACL_FORMAT_ND, storage.data(), 1,
                                           h.data()));
        },
        kInvalid, kInvalid, "", {"self", "negative size -1 in dimension 0"});
    row("negative_dims_storage_too", "op_api UT logsigmoid_backward_testcase_026_exception_negative_dim",
        [](Call &c) {  // as that test's TensorDesc makes them: storage dims = view dims = {-1, -1}
            HostTensor &h = c.owned.emplace_back(Shape{8}, ACL_FLOAT);
            const Shape neg = {-1, -1};
            for (const char *a : {"gradOutput", "self", "buffer", "gradInput"})
                c.pass(a, aclCreateTensor(neg.data(), 2, ACL_FLOAT, nullptr, 0, ACL_FORMAT_ND, neg.data(), 2, h.data()));
        },
        kInvalid, kInvalid, "", {"gradOutput", "negative size -1 in dimension 0"});
    row("empty", "op_api UT testcase_003_normal_empty_tensor",
        every([](Call &c, const char *a) { set_shape(c, a, {0}); }), kOk, kOk);
    row("self_empty_gradOutput_not", "op_api UT testcase_019_normal_self_empty_tensor",
        [](Call &c) { set_shape(c, "self", {0}); set_shape(c, "buffer", {0}); }, kInvalid, kInvalid, "",
        {"self", "[0]"});
    row("gradOutput_empty_self_not", "op_api UT testcase_020_exception_gradOutput_empty_tensor",
        [](Call &c) { set_shape(c, "gradOutput", {0}); set_shape(c, "gradInput", {0}); }, kInvalid, kInvalid, "",
        {"[0]"});
    row("format_NC1HWC0", "op_api UT testcase_012_normal_different_format",
        [](Call &c) { set_format(c, "self", ACL_FORMAT_NC1HWC0); }, kOk, kOk);
    row("strided", "op_api UT testcase_014_normal_not_contiguous_float",
        [](Call &c) {
            for (auto a : {"gradOutput", "self"}) {
                const Shape st = {1, 2};
                c.pass(a, c.create(a, {2, 3}, ACL_FLOAT, &st));
            }
        },
        kOk, kOk);
}

void softshrink_rows(std::vector<Rule> &rows) {
    auto row = [&](const std::string &name, const std::string &src, std::function<void(Call &)> f, int cann, int ours,
                   const std::string &differs = "", std::vector<std::string> frags = {}) {
        rows.push_back({"SoftshrinkBackward_" + name, kSs, src, std::move(f), cann, ours, differs, std::move(frags)});
    };
    row("lambd_null", "op_api CheckNotNull: OP_CHECK_NULL(lambd)", [](Call &c) { c.o.lambd_null = true; }, kNull, kNull);
    row("f16", "seed 002: FLOAT16, FLOAT",
        [](Call &c) { for (auto a : {"gradOutput", "self", "gradInput"}) set_dtype(c, a, ACL_FLOAT16); }, kOk, kOk);
    row("bf16", "op_api GetDtypeSupportList: BF16 beyond ASCEND910/310P",
        [](Call &c) { for (auto a : {"gradOutput", "self", "gradInput"}) set_dtype(c, a, ACL_BF16); }, kOk, kOk);
    row("mixed_f32_f16", "op_api UT normal_gradOut_float_self_float16_nd (each dtype checked alone)",
        [](Call &c) { set_dtype(c, "self", ACL_FLOAT16); }, kOk, kOk);
    row("f64", "op_api CheckDtypeValid: FLOAT, FLOAT16, BF16",
        [](Call &c) { for (auto a : {"gradOutput", "self", "gradInput"}) set_dtype(c, a, ACL_DOUBLE); }, kInvalid, kOk,
        "ACL_DOUBLE");
    row("self_complex64", "op_api UT self_invalid_dtype_complex", [](Call &c) { set_dtype(c, "self", ACL_COMPLEX64); },
        kInvalid, kInvalid, "", {"self", "DT_COMPLEX64"});
    row("broadcast", "seed 002: gradOutput and self broadcast; gradInput = the broadcast shape",
        [](Call &c) { set_shape(c, "gradOutput", {3}); }, kOk, kOk);
    row("not_broadcastable", "op_api UT gradOutput_self_shape_not_equal (OP_CHECK_BROADCAST)",
        [](Call &c) { set_shape(c, "gradOutput", {2, 3, 1}); }, kInvalid, kInvalid, "", {"gradOutput", "[2, 3, 1]"});
    row("gradInput_shape", "op_api UT self_out_shape_not_equal",
        [](Call &c) { set_shape(c, "gradInput", {2, 3, 2}); }, kInvalid, kInvalid, "", {"gradInput", "[2, 3, 2]"});
    row("rank8", "op_api CheckShapeValid: OP_CHECK_MAX_DIM(gradOutput / self, MAX_SUPPORT_DIMS_NUMS = 8)",
        [](Call &c) { for (auto a : {"gradOutput", "self", "gradInput"}) set_rank(c, a, 8); }, kOk, kOk);
    row("self_rank9", "op_api UT self_invalid_shape_9_dim",
        [](Call &c) { set_rank(c, "self", 9); set_rank(c, "gradInput", 9); }, kInvalid, kInvalid, "",
        {"self tensor cannot be larger than 8 dimensions"});
    row("gradOutput_rank9", "op_api UT gradOutput_invalid_shape_9_dim",
        [](Call &c) { set_rank(c, "gradOutput", 9); set_rank(c, "gradInput", 9); }, kInvalid, kInvalid, "",
        {"gradOutput tensor cannot be larger than 8 dimensions"});
    row("lambd_zero", "op_api CheckParams: lambd >= 0", [](Call &c) { c.o.lambd = 0.0; }, kOk, kOk);
    row("lambd_negative", "op_api CheckParams: lambd->ToFloat() < 0 -> 161002", [](Call &c) { c.o.lambd = -0.5; },
        kInvalid, kInvalid, "", {"lambd should be greater or equal to 0"});
    row("lambd_nan", "op_api CheckParams: NaN < 0 is false, so CANN accepts NaN",
        [](Call &c) { c.o.lambd = NAN; }, kOk, kInvalid, "NaN", {"lambd"});
    row("lambd_bool", "op_api CheckParams: lambd->ToFloat() of any scalar",
        [](Call &c) { c.o.lambd = 1.0, c.o.lambd_dtype = ACL_BOOL; }, kOk, kInvalid, "bool", {"lambd", "DT_BOOL"});
    row("lambd_f16", "op_api CheckParams: lambd->ToFloat() of any scalar",
        [](Call &c) { c.o.lambd_dtype = ACL_FLOAT16; }, kOk, kOk);
    row("empty", "op_api UT empty_tensor",
        [](Call &c) { for (auto a : {"gradOutput", "self", "gradInput"}) set_shape(c, a, {0}); }, kOk, kOk);
    row("empty_2_0_3", "op_api UT empty_tensor_2_0_3",
        [](Call &c) { for (auto a : {"gradOutput", "self", "gradInput"}) set_shape(c, a, {2, 0, 3}); }, kOk, kOk);
}

void cross_entropy_rows(std::vector<Rule> &rows) {
    auto row = [&](const std::string &name, const std::string &src, std::function<void(Call &)> f, int cann, int ours,
                   const std::string &differs = "", std::vector<std::string> frags = {}) {
        rows.push_back(
            {"CrossEntropyLossGrad_" + name, kCe, src, std::move(f), cann, ours, differs, std::move(frags)});
    };
    const char *seed = "seed 003";
    for (aclDataType t : {ACL_FLOAT16, ACL_BF16})
        row(std::string("dtype_") + dtype_str(t), "seed 003: gradLoss, logProb, out FLOAT16, FLOAT, BFLOAT16",
            [t](Call &c) { for (auto a : {"gradLoss", "logProb", "out"}) set_dtype(c, a, t); }, kOk, kOk);
    row("f64", "seed 003: FLOAT16, FLOAT, BFLOAT16",
        [](Call &c) { for (auto a : {"gradLoss", "logProb", "out"}) set_dtype(c, a, ACL_DOUBLE); }, kInvalid, kOk,
        "ACL_DOUBLE");
    row("gradLoss_dtype_differs", "seed 003 constraints: gradLoss, logProb, out dtypes the same",
        [](Call &c) { set_dtype(c, "gradLoss", ACL_FLOAT16); }, kUndocumented, kInvalid, "", {"gradLoss", "DT_FLOAT16"});
    row("out_dtype_differs", "seed 003: out dtype as gradLoss", [](Call &c) { set_dtype(c, "out", ACL_FLOAT16); },
        kUndocumented, kInvalid, "", {"out", "DT_FLOAT16"});
    row("target_int32", "seed 003: target INT64", [](Call &c) { set_dtype(c, "target", ACL_INT32); }, kInvalid, kOk,
        "target int32");
    row("weight_f16", "seed 003: weightOptional FLOAT",
        [](Call &c) { set_dtype(c, "weightOptional", ACL_FLOAT16); }, kInvalid, kOk, "weight of any float dtype");
    row("weight_absent", seed, [](Call &c) { c.t[size_t(c.index("weightOptional"))] = nullptr; }, kOk, kOk);
    for (const char *r : {"none", "mean", "sum"})
        row(std::string("reduction_") + r, "seed 003: reductionOptional none | mean | sum",
            [r](Call &c) {
                c.o.reduction = r;
                if (std::string(r) == "none") set_shape(c, "gradLoss", {2});
            },
            kOk, kOk);
    row("reduction_other", "op_host Tiling: an unknown reduction string is treated as none",
        [](Call &c) { c.o.reduction = "avg"; }, kOk, kInvalid, "reduction other than", {"reductionOptional", "avg"});
    row("gradLoss_1d_for_none", "seed 003: gradLoss (N,) for none", [](Call &c) {
            c.o.reduction = "none";
        },
        kUndocumented, kInvalid, "", {"gradLoss", "[2]"});
    row("logProb_rank3", "seed 003 return table: logProb shape not supported -> 561002",
        [](Call &c) { set_shape(c, "logProb", {2, 3, 1}); set_shape(c, "out", {2, 3, 1}); }, kTiling, kInvalid,
        "561002", {"logProb", "[2, 3, 1]"});
    row("target_rows_differ", "op_host GetTilingInput: dim 0 of log_prob == size of target -> 561002",
        [](Call &c) { set_shape(c, "target", {3}); }, kTiling, kInvalid, "561002", {"target", "[3]"});
    row("weight_classes_differ", "op_host GetTilingInput: dim 1 of log_prob == size of weight -> 561002",
        [](Call &c) { set_shape(c, "weightOptional", {4}); }, kTiling, kInvalid, "561002", {"weightOptional", "[4]"});
    row("zero_classes", "seed 003: logProb (N, C), C > 0",
        [](Call &c) { set_shape(c, "logProb", {2, 0}); set_shape(c, "out", {2, 0}); set_shape(c, "weightOptional", {0}); },
        kUndocumented, kInvalid, "", {"C > 0"});
    row("label_smoothing_nonzero", "seed 003: labelSmoothing in [0, 1], only 0.0 supported",
        [](Call &c) { c.o.label_smoothing = 0.1; }, kUndocumented, kOk, "label smoothing");
    row("label_smoothing_above1", "seed 003: labelSmoothing in [0.0, 1.0]", [](Call &c) { c.o.label_smoothing = 1.5; },
        kUndocumented, kInvalid, "", {"labelSmoothing", "1.5"});
    row("zloss_inputs_given", "seed 003: gradZlossOptional / lseForZlossOptional only nullptr (no effect)",
        [](Call &c) {
            set(c, "gradZlossOptional", {}, ACL_FLOAT);
            set(c, "lseForZlossOptional", {2}, ACL_FLOAT);
        },
        kUndocumented, kOk, "z-loss");
    row("zloss_scale_without_lse", "seed 003: lseSquareScaleForZloss only 0.0", [](Call &c) { c.o.zloss_scale = 0.5; },
        kUndocumented, kNull, "z-loss", {"lseForZlossOptional"});
    row("empty_batch", "seed 003: N any (N < 200000)",
        [](Call &c) { set_shape(c, "logProb", {0, 3}); set_shape(c, "out", {0, 3}); set_shape(c, "target", {0}); },
        kUndocumented, kOk);
    row("batch_200000", "seed 003 constraints: N < 200000",
        [](Call &c) {
            set_shape(c, "logProb", {200000, 1});
            set_shape(c, "out", {200000, 1});
            set_shape(c, "target", {200000});
            set_shape(c, "weightOptional", {1});
        },
        kUndocumented, kOk, "N < 200000");
}

void kl_div_rows(std::vector<Rule> &rows) {
    auto row = [&](const std::string &name, const std::string &src, std::function<void(Call &)> f, int cann, int ours,
                   const std::string &differs = "", std::vector<std::string> frags = {}) {
        rows.push_back({"KlDivBackward_" + name, kKl, src, std::move(f), cann, ours, differs, std::move(frags)});
    };
    const char *all[] = {"gradOutput", "self", "target", "out"};
    row("f16", "op_api GetSupportDtypeList", [all](Call &c) { for (auto a : all) set_dtype(c, a, ACL_FLOAT16); }, kOk,
        kOk);
    row("bf16", "op_api GetSupportDtypeList (910B, 910_93)",
        [all](Call &c) { for (auto a : all) set_dtype(c, a, ACL_BF16); }, kOk, kOk);
    row("mixed", "op_api UT: fp16 grad, fp32 self, fp16 target, fp32 out -> SUCCESS",
        [](Call &c) { set_dtype(c, "gradOutput", ACL_FLOAT16); set_dtype(c, "target", ACL_FLOAT16); }, kOk, kOk);
    row("f64", "op_api CheckDtypeValid: FLOAT, FLOAT16, BF16 (seed 004 also lists DOUBLE)",
        [all](Call &c) { for (auto a : all) set_dtype(c, a, ACL_DOUBLE); }, kInvalid, kOk, "ACL_DOUBLE");
    for (int r : {0, 1, 2, 3})
        row("reduction_" + std::to_string(r), "seed 004: reduction 0 none | 1 mean | 2 sum | 3 batchmean",
            [r](Call &c) { c.o.kl_reduction = r; }, kOk, kOk);
    row("reduction_6", "op_api GetReductionStr: other values are 'none' (UT case_fp_reduction_exceed)",
        [](Call &c) { c.o.kl_reduction = 6; }, kOk, kInvalid, "reduction outside 0..3", {"reduction", "6"});
    row("log_target", "seed 004: logTarget", [](Call &c) { c.o.log_target = true; }, kOk, kOk);
    row("gradOutput_broadcasts", "op_api UT: grad [3, 1] with self / target [3, 5], reduction none",
        [](Call &c) {
            set_shape(c, "gradOutput", {2, 1});
            c.o.kl_reduction = 0;
        },
        kOk, kOk);
    row("gradOutput_not_to_B", "op_api CheckShape: gradOutput must broadcast to B",
        [](Call &c) { set_shape(c, "gradOutput", {2, 2, 3}); }, kInvalid, kInvalid, "",
        {"shape of gradOutput must broadcast to [2, 3]"});
    row("target_not_broadcastable", "op_api UT: target [3, 4, 6, 4] vs self [3, 4, 6, 3] (OP_CHECK_BROADCAST_AND_INFER_SHAPE)",
        [](Call &c) { set_shape(c, "target", {2, 4}); }, kInvalid, kInvalid, "", {"target", "[2, 4]"});
    row("target_broadcasts", "op_api CheckShape: self and target broadcast to B",
        [](Call &c) { set_shape(c, "target", {3}); }, kOk, kOk);
    row("out_shape", "op_api UT: out [3, 4, 6, 5] vs self [3, 4, 6, 3] (OP_CHECK_SHAPE_NOT_EQUAL)",
        [](Call &c) { set_shape(c, "out", {2, 4}); }, kInvalid, kInvalid, "", {"out", "[2, 4]"});
    row("rank8", "op_api CheckShape: OP_CHECK_MAX_DIM(each, MAX_DIM_LEN = 8)",
        [all](Call &c) { for (auto a : all) set_rank(c, a, 8); }, kOk, kOk);
    row("target_rank8", "op_api CheckShape: OP_CHECK_MAX_DIM(target, 8)", [](Call &c) { set_rank(c, "target", 8); },
        kOk, kOk);
    row("target_rank9", "op_api CheckShape: OP_CHECK_MAX_DIM(target, 8)", [](Call &c) { set_rank(c, "target", 9); },
        kInvalid, kInvalid, "", {"target tensor cannot be larger than 8 dimensions"});
    row("self_out_rank9", "op_api CheckShape: OP_CHECK_MAX_DIM(self / out, 8)",
        [](Call &c) { set_rank(c, "self", 9); set_rank(c, "out", 9); }, kInvalid, kInvalid, "",
        {"self tensor cannot be larger than 8 dimensions"});
    row("empty_self", "op_api aclnnKlDivBackwardGetWorkspaceSize: empty self needs no work",
        [all](Call &c) { for (auto a : all) set_shape(c, a, {0, 3}); }, kOk, kOk);
}

std::vector<Rule> all_rules() {
    std::vector<Rule> rows;
    argument_rows(rows);
    softmax_rows(rows);
    logsigmoid_rows(rows);
    softshrink_rows(rows);
    cross_entropy_rows(rows);
    kl_div_rows(rows);
    return rows;
}

bool contains(const std::string &s, const std::string &needle) { return s.find(needle) != std::string::npos; }

class Conformance : public ::testing::TestWithParam<Rule> {};

TEST_P(Conformance, Status) {
    const Rule &r = GetParam();
    SCOPED_TRACE(r.source);
    // A row is consistent: a status other than CANN's (or where CANN's is undefined) names the
    // line of the table that says why; the same status names none.
    const bool differs = r.cann == kUndefined || (r.cann >= 0 && r.cann != r.ours);
    if (differs) {
        EXPECT_FALSE(r.differs.empty()) << "CANN returns " << r.cann << ": name the table's line";
    } else if (r.cann >= 0) {
        EXPECT_TRUE(r.differs.empty()) << "same status as CANN, yet marked as a difference";
    }
    const OpDef &op = op_named(r.op);
    Call c(op);
    cann_base(c);
    take_error();
    r.setup(c);
    uint64_t ws = 0;
    aclOpExecutor *e = nullptr;
    const aclnnStatus s = op.phase1(c.t, c.o, &ws, &e);
    const std::string msg = take_error();
    ASSERT_EQ(s, r.ours) << msg;
    if (s == kOk) {
        EXPECT_EQ(run_phase2(op.phase2, ws, e), kOk) << take_error();
        return;
    }
    EXPECT_TRUE(contains(msg, r.op)) << msg;
    for (const std::string &f : r.fragments) EXPECT_TRUE(contains(msg, f)) << "\"" << f << "\" not in: " << msg;
}

INSTANTIATE_TEST_SUITE_P(Rules, Conformance, ::testing::ValuesIn(all_rules()),
                         [](const ::testing::TestParamInfo<Rule> &info) { return info.param.name; });

// Every difference a row relies on is a line of the table in docs/c-api.md.
TEST(ConformanceReadme, EveryDifferenceIsInTheTable) {
    std::ifstream f(ASCENDGRAD_SOURCE_DIR "/docs/c-api.md");
    ASSERT_TRUE(f) << "docs/c-api.md not found";
    std::stringstream ss;
    ss << f.rdbuf();
    const std::string readme = ss.str();
    const size_t start = readme.find("## Where ascendgrad differs from CANN");
    ASSERT_NE(start, std::string::npos);
    const size_t end = readme.find("\n## ", start + 1);
    const std::string table = readme.substr(start, end == std::string::npos ? std::string::npos : end - start);
    std::set<std::string> keys;
    for (const Rule &r : all_rules())
        if (!r.differs.empty()) keys.insert(r.differs);
    for (const std::string &k : keys) EXPECT_TRUE(contains(table, k)) << "the table has no line with \"" << k << "\"";
}

}  // namespace

// ---- rank: every rank the API accepts reaches the kernels, and is computed right ----

namespace {

// LogSigmoidBackward at rank 9 and at the descriptor's 25, against a float64 reference, with
// permuted (non-mergeable) strides so the kernel really walks every dim.
void expect_logsigmoid_rank(int rank) {
    SCOPED_TRACE("rank " + std::to_string(rank));
    Shape shape(size_t(rank), 1);  // more dims of size > 1 than 8: 2^8 * 3 at rank 9, 2^12 * 3 at 25
    for (int d = 0; d < rank; ++d) shape[size_t(d)] = rank <= 12 || d % 2 == 1 ? 2 : 1;
    shape[size_t(rank - 1)] = 3;
    // reversed strides: the view is a transpose, no two dims merge
    Shape st(static_cast<size_t>(rank));
    int64_t acc = 1;
    for (int d = 0; d < rank; ++d) {
        st[size_t(d)] = acc;
        acc *= shape[size_t(d)];
    }
    std::mt19937_64 rng{static_cast<uint64_t>(rank)};
    HostTensor g(shape, st, 0, ACL_FLOAT), x(shape, st, 0, ACL_FLOAT), buf(shape, ACL_FLOAT), out(shape, ACL_FLOAT);
    g.fill_random(rng, -2.0, 2.0);
    x.fill_random(rng, -8.0, 8.0);
    out.fill_storage(kCanary);
    uint64_t ws = 0;
    aclOpExecutor *e = nullptr;
    ASSERT_EQ(aclnnLogSigmoidBackwardGetWorkspaceSize(g.t(), x.t(), buf.t(), out.t(), &ws, &e), kOk) << take_error();
    ASSERT_EQ(run_phase2(aclnnLogSigmoidBackward, ws, e), kOk) << take_error();
    const std::vector<double> gv = g.values(), xv = x.values(), got = out.values();
    std::vector<double> ref(gv.size()), tol(gv.size());
    for (size_t i = 0; i < gv.size(); ++i) {
        ref[i] = gv[i] / (1.0 + std::exp(xv[i]));
        tol[i] = 4 * eps_of(ACL_FLOAT) * std::fabs(ref[i]) + denorm_min_of(ACL_FLOAT);
    }
    expect_close(got, ref, tol, "LogSigmoidBackward rank " + std::to_string(rank));
}

TEST(ConformanceRank, LogSigmoidRank9IsComputed) { expect_logsigmoid_rank(9); }
TEST(ConformanceRank, LogSigmoidRank25IsComputed) { expect_logsigmoid_rank(kDescriptorRank); }

// A negative dim never reaches an extent computation: the getters give it back as passed.
TEST(ConformanceNegativeDim, DescriptorKeepsTheShape) {
    float storage[4] = {};
    const Shape shape = {2, -3}, st = {1, 1}, sdims = {4};
    aclTensor *t = aclCreateTensor(shape.data(), 2, ACL_FLOAT, st.data(), 0, ACL_FORMAT_ND, sdims.data(), 1, storage);
    ASSERT_NE(t, nullptr) << take_error();
    int64_t *dims = nullptr;
    uint64_t n = 0;
    ASSERT_EQ(aclGetViewShape(t, &dims, &n), kOk);
    EXPECT_EQ(Shape(dims, dims + n), shape);
    delete[] dims;
    aclDestroyTensor(t);
}

}  // namespace
