// The bad-input matrix (SPEC §1 two-phase contract, §2.6 common rules), table-driven: for every
// argument of every operator, each way it can be wrong. Every row asserts the exact status, a
// message naming the operator and the argument, and that nothing was written: every storage
// (out's canary included) is byte-identical afterwards, workspaceSize and executor keep their
// sentinels and no executor is left behind. Faults aclCreateTensor rejects (a view outside its
// storage) are checked at creation (NULL + message), then as the NULL argument; a negative dim,
// view or storage, is a descriptor aclCreateTensor accepts (as CANN) and phase 1 rejects.
#include <functional>
#include <memory>

#include "api/executor.h"
#include "op_table.h"

using namespace agtest;

namespace {

constexpr aclnnStatus kOk = ACLNN_SUCCESS, kNull = ACLNN_ERR_PARAM_NULLPTR, kInvalid = ACLNN_ERR_PARAM_INVALID;

// One row of the matrix.
struct Case {
    std::string name;                    // gtest parameter name
    std::string op;
    std::function<void(Call &)> fault;
    aclnnStatus status;                  // phase 1's (or phase 2's when at_phase2)
    std::vector<std::string> fragments;  // in the message, besides the operator's name
    bool at_phase2 = false;              // phase 1 succeeds; the data-dependent check fails
    std::string create_fragment;         // the fault's aclCreateTensor fails with this message
};

bool contains(const std::string &s, const std::string &needle) { return s.find(needle) != std::string::npos; }

std::string short_op(const std::string &op) { return op.substr(5); }  // without "aclnn"

// ---- the generated rows: every tensor argument of every operator ----

void tensor_rows(std::vector<Case> &rows) {
    for (const OpDef &op : ops()) {
        const std::string opn = op.name;
        for (const ArgDef &a : op.args) {
            const std::string arg = a.name, prefix = short_op(opn) + "_" + arg + "_";
            // Only phase 2's kernel reads an argument's data; LogSigmoid's buffer is never read,
            // so it is checked for presence only (as CANN): its other faults are accepted.
            const bool ignored = a.role == Role::Ignored;
            auto row = [&](const std::string &fault, std::function<void(Call &)> f, aclnnStatus status,
                           std::vector<std::string> frags, std::string create = "") {
                // a NULL handle means "absent" to an optional argument
                const bool null_handle = fault == "Null" || !create.empty();
                if ((ignored && !null_handle) || (null_handle && a.role == Role::Optional)) status = kOk;
                frags.insert(frags.begin(), arg);
                rows.push_back({prefix + fault, opn, std::move(f), status, std::move(frags), false, std::move(create)});
            };
            row("Null", [arg](Call &c) { c.t[size_t(c.index(arg))] = nullptr; }, kNull,
                {"got null for argument " + arg});
            const aclDataType wrong = a.dtype == ACL_INT64 ? ACL_FLOAT : ACL_INT32;
            row("WrongDtype", [arg, wrong](Call &c) { c.pass(arg, c.create(arg, c.def(arg).shape, wrong)); },
                kInvalid, {wrong == ACL_INT32 ? "DT_INT32" : "DT_FLOAT"});
            // a value no enumerator has (C callers pass any int): reported, not undefined
            row("UnknownDtype", [arg](Call &c) { c.pass(arg, c.create(arg, c.def(arg).shape, aclDataType(1000))); },
                kInvalid, {"DT_UNDEFINED"});
            // CANN's own rank limit (OP_CHECK_MAX_DIM, 8) where its op_api has one for this
            // argument; elsewhere rank 9 is only a shape the other arguments do not match.
            const bool limited = (opn == "aclnnSoftmaxBackward" && arg == "gradOutput") ||
                                 (opn == "aclnnSoftshrinkBackward" && (arg == "gradOutput" || arg == "self")) ||
                                 opn == "aclnnKlDivBackward";
            row("Rank9", [arg](Call &c) { c.pass(arg, c.create(arg, Shape(9, 1), c.def(arg).dtype)); }, kInvalid,
                {limited ? "larger than 8" : shape_str(Shape(9, 1))});
            // beyond what an aclTensor describes: every argument that is read
            row("Rank26", [arg](Call &c) { c.pass(arg, c.create(arg, Shape(26, 1), c.def(arg).dtype)); }, kInvalid,
                {"larger than 25 dimensions, but got 26"});
            Shape bad = a.bad_shape;
            if (bad.empty()) {
                bad = a.shape.empty() ? Shape{2} : a.shape;
                if (!a.shape.empty()) bad.back() += 1;
            }
            row("Shape",
                [arg, bad](Call &c) { c.pass(arg, c.create(arg, bad, c.def(arg).dtype)); }, kInvalid,
                {shape_str(bad)});
            row("NegativeDim",
                [arg](Call &c) {
                    Shape neg = c.def(arg).shape;
                    if (neg.empty()) neg = {-1};
                    else neg.back() = -neg.back();
                    c.pass(arg, c.create(arg, neg, c.def(arg).dtype));
                },
                kInvalid, {"negative size", "in dimension"});
            row("NegativeStorageDim",
                [arg](Call &c) {
                    const Shape neg_storage = {4, -2};
                    c.pass(arg, c.create(arg, c.def(arg).shape, c.def(arg).dtype, nullptr, 0, &neg_storage));
                },
                kInvalid, {"negative storage size -2 in dimension 1"});
            row("NumelOverflow",
                [arg](Call &c) {
                    const Shape huge = {int64_t(1) << 32, int64_t(1) << 32}, zero = {0, 0};
                    c.pass(arg, c.create(arg, huge, c.def(arg).dtype, &zero));
                },
                kInvalid, {"more elements than int64"});
            row("OutsideStorage",
                [arg](Call &c) {
                    const ArgDef &d = c.def(arg);
                    const Shape storage = {numel(d.shape) + kPad - 1};  // one element short
                    c.pass(arg, c.create(arg, d.shape, d.dtype, nullptr, kPad, &storage));
                },
                kNull, {"got null for argument " + arg}, "reaches outside storage");
            row("NullData",
                [arg](Call &c) {
                    const ArgDef &d = c.def(arg);
                    const Shape st = contiguous_strides(d.shape), storage = {numel(d.shape)};
                    c.pass(arg, aclCreateTensor(d.shape.data(), d.shape.size(), d.dtype, st.data(), 0, ACL_FORMAT_ND,
                                                storage.data(), 1, nullptr));
                },
                kNull, {"NULL data address"});
            if (a.role != Role::Output) continue;
            row("OverlapsItself",
                [arg](Call &c) {
                    const ArgDef &d = c.def(arg);
                    Shape st = contiguous_strides(d.shape);
                    st[0] = 0;  // every row is the same memory
                    c.pass(arg, c.create(arg, d.shape, d.dtype, &st, kPad));
                },
                kInvalid, {"overlap itself"});
            // out as a view that starts one element before input `in` and runs into it.
            for (const ArgDef &in : op.args) {
                if (in.role == Role::Output) continue;
                const std::string inn = in.name;
                rows.push_back(
                    {prefix + "PartiallyOverlaps_" + inn, opn,
                     [arg, inn](Call &c) {
                         const ArgDef &d = c.def(arg);
                         const int64_t first = kPad * int64_t(aclDataTypeSize(c.def(inn).dtype)),
                                       es = int64_t(aclDataTypeSize(d.dtype));
                         c.pass(arg, c.create(inn, d.shape, d.dtype, nullptr, first / es - 1));
                     },
                     in.role == Role::Ignored ? kOk : kInvalid, {arg, inn, "partially overlaps"}});
            }
        }
    }
}

// ---- the operator-specific rows: values out of range ----

void value_rows(std::vector<Case> &rows) {
    auto opt = [&](const std::string &op, const std::string &name, std::function<void(Options &)> f,
                   std::vector<std::string> frags, aclnnStatus status = kInvalid) {
        rows.push_back({short_op(op) + "_" + name, op, [f](Call &c) { f(c.o); }, status, std::move(frags)});
    };
    const std::string sm = "aclnnSoftmaxBackward", ss = "aclnnSoftshrinkBackward", ce = "aclnnCrossEntropyLossGrad",
                      kl = "aclnnKlDivBackward";
    opt(sm, "dim_2", [](Options &o) { o.dim = 2; }, {"provided dim 2 not in the range of input size 2."});
    opt(sm, "dim_minus3", [](Options &o) { o.dim = -3; }, {"provided dim -3 not in the range of input size 2."});
    opt(sm, "dim_int64max", [](Options &o) { o.dim = INT64_MAX; }, {"provided dim 9223372036854775807"});
    opt(sm, "dim_int64min", [](Options &o) { o.dim = INT64_MIN; }, {"provided dim -9223372036854775808"});
    opt(ss, "lambd_Null", [](Options &o) { o.lambd_null = true; }, {"lambd", "null"}, kNull);
    opt(ss, "lambd_negative", [](Options &o) { o.lambd = -0.5; },
        {"lambd should be greater or equal to 0, but found to be [-0.500000]."});
    opt(ss, "lambd_NaN", [](Options &o) { o.lambd = NAN; }, {"lambd should be greater or equal to 0"});
    opt(ss, "lambd_negative_f64", [](Options &o) { o.lambd = -1e-300, o.lambd_dtype = ACL_DOUBLE; },
        {"lambd should be greater or equal to 0"});
    opt(ss, "lambd_bool", [](Options &o) { o.lambd = 1, o.lambd_dtype = ACL_BOOL; }, {"lambd", "DT_BOOL"});
    opt(ce, "reduction_avg", [](Options &o) { o.reduction = "avg"; }, {"reductionOptional", "\"avg\""});
    opt(ce, "reduction_empty", [](Options &o) { o.reduction = ""; }, {"reductionOptional", "\"\""});
    opt(ce, "reduction_MEAN", [](Options &o) { o.reduction = "MEAN"; }, {"reductionOptional", "\"MEAN\""});
    opt(ce, "labelSmoothing_negative", [](Options &o) { o.label_smoothing = -0.1; },
        {"labelSmoothing should be in [0, 1], but got -0.1"});
    opt(ce, "labelSmoothing_above1", [](Options &o) { o.label_smoothing = 1.5; }, {"labelSmoothing", "1.5"});
    opt(ce, "labelSmoothing_NaN", [](Options &o) { o.label_smoothing = NAN; }, {"labelSmoothing", "nan"});
    opt(ce, "lseSquareScaleForZloss_inf", [](Options &o) { o.zloss_scale = INFINITY; },
        {"lseSquareScaleForZloss", "inf"});
    opt(ce, "lseSquareScaleForZloss_NaN", [](Options &o) { o.zloss_scale = NAN; }, {"lseSquareScaleForZloss", "nan"});
    opt(kl, "reduction_minus1", [](Options &o) { o.kl_reduction = -1; }, {"reduction", "but got -1"});
    opt(kl, "reduction_4", [](Options &o) { o.kl_reduction = 4; }, {"reduction", "but got 4"});

    // Shapes valid in general but not for this call.
    auto tensor = [&](const std::string &op, const std::string &name, std::function<void(Call &)> f,
                      std::vector<std::string> frags) {
        rows.push_back({short_op(op) + "_" + name, op, std::move(f), kInvalid, std::move(frags)});
    };
    tensor(ce, "logProb_rank1", [](Call &c) { c.pass("logProb", c.create("logProb", {6}, ACL_FLOAT)); },
           {"logProb", "[6]"});
    tensor(ce, "logProb_classes_differ_from_weight",
           [](Call &c) { c.pass("logProb", c.create("logProb", {2, 4}, ACL_FLOAT)); },
           {"weightOptional", "[4]", "[3]"});
    tensor(ce, "logProb_rows_differ_from_target",
           [](Call &c) { c.pass("logProb", c.create("logProb", {3, 3}, ACL_FLOAT)); }, {"target", "[3]", "[2]"});
    tensor(ce, "logProb_0classes", [](Call &c) { c.pass("logProb", c.create("logProb", {2, 0}, ACL_FLOAT)); },
           {"logProb", "C > 0"});
    tensor(ce, "gradLoss_scalar_for_none", [](Call &c) { c.o.reduction = "none"; }, {"gradLoss", "[2]", "[]"});
    tensor(ce, "target_int16", [](Call &c) { c.pass("target", c.create("target", {2}, ACL_INT16)); },
           {"target", "DT_INT16"});
    tensor(ce, "weight_f32_dtype_int64", [](Call &c) { c.pass("weightOptional", c.create("weightOptional", {3}, ACL_INT64)); },
           {"weightOptional", "DT_INT64"});
    tensor(sm, "output_other_float_dtype", [](Call &c) { c.pass("output", c.create("output", {2, 3}, ACL_DOUBLE)); },
           {"output", "DT_DOUBLE"});
    tensor(kl, "gradOutput_does_not_broadcast",
           [](Call &c) { c.pass("gradOutput", c.create("gradOutput", {2, 2, 3}, ACL_FLOAT)); },
           {"shape of gradOutput must broadcast to [2, 3], but current is [2, 2, 3]"});
    tensor(ss, "self_does_not_broadcast", [](Call &c) { c.pass("self", c.create("self", {3, 1}, ACL_FLOAT)); },
           {"self", "[3, 1]", "gradOutput", "[2, 3]"});

    // Targets are data: checked in phase 2, before anything is written.
    auto target = [&](const std::string &name, std::vector<double> values, aclDataType dt, std::string frag) {
        rows.push_back({short_op(ce) + "_target_" + name, ce,
                        [values, dt](Call &c) {
                            if (dt != ACL_INT64) c.pass("target", c.create("target", {2}, dt));
                            HostTensor &h = c.tensor("target");
                            for (size_t i = 0; i < values.size(); ++i) {
                                // the values at the view's place in the (re)typed storage
                                unsigned char *p = static_cast<unsigned char *>(h.data()) +
                                                   (dt == ACL_INT64 ? kPad * 8 : 0) + i * aclDataTypeSize(dt);
                                write_elem(p, dt, values[i]);
                            }
                        },
                        kInvalid, {"Target " + frag, "out of bounds"}, true});
    };
    target("equal_C", {0, 3}, ACL_INT64, "3");
    target("negative", {-1, 0}, ACL_INT64, "-1");
    target("huge", {0, 4e18}, ACL_INT64, "4000000000000000000");
    target("int32_equal_C", {3, 0}, ACL_INT32, "3");
}

std::vector<Case> all_rows() {
    std::vector<Case> rows;
    tensor_rows(rows);
    value_rows(rows);
    return rows;
}

class BadInput : public ::testing::TestWithParam<Case> {};

TEST_P(BadInput, ExactStatusMessageAndNothingWritten) {
    const Case &row = GetParam();
    const OpDef &op = op_named(row.op);
    Call call(op);
    take_error();
    row.fault(call);
    if (!row.create_fragment.empty())
        EXPECT_TRUE(contains(call.create_msg, "aclCreateTensor") && contains(call.create_msg, row.create_fragment))
            << "aclCreateTensor should fail with \"" << row.create_fragment << "\", message: " << call.create_msg;
    const auto before = call.storages();
    const size_t live = ag::live_executors();
    uint64_t ws = 0xdeadbeef;
    aclOpExecutor *const sentinel = reinterpret_cast<aclOpExecutor *>(uintptr_t(0xabc1));  // odd: never a handle
    aclOpExecutor *e = sentinel;
    aclnnStatus s = op.phase1(call.t, call.o, &ws, &e);
    if (row.status == kOk) {  // an accepted "fault" (what the operator never reads)
        ASSERT_EQ(s, kOk) << take_error();
        EXPECT_EQ(run_phase2(op.phase2, ws, e), kOk) << take_error();
        return;
    }
    std::string msg = take_error();
    if (row.at_phase2) {
        ASSERT_EQ(s, kOk) << msg;
        s = op.phase2(nullptr, ws, e, nullptr);
        msg = take_error();
    } else {
        EXPECT_EQ(ws, 0xdeadbeefu) << "a failing phase 1 wrote workspaceSize";
        EXPECT_EQ(e, sentinel) << "a failing phase 1 wrote executor";
    }
    EXPECT_EQ(s, row.status) << msg;
    EXPECT_TRUE(contains(msg, op.name)) << "message does not name " << op.name << ": " << msg;
    for (const std::string &f : row.fragments) EXPECT_TRUE(contains(msg, f)) << "\"" << f << "\" not in: " << msg;
    EXPECT_EQ(ag::live_executors(), live) << "an executor was left behind";
    const auto after = call.storages();
    for (size_t i = 0; i < before.size(); ++i)
        EXPECT_TRUE(before[i] == after[i]) << "storage of " << op.args[i].name << " was written";
}

INSTANTIATE_TEST_SUITE_P(Matrix, BadInput, ::testing::ValuesIn(all_rows()),
                         [](const ::testing::TestParamInfo<Case> &info) { return info.param.name; });

// ---- phase-1 output pointers and phase 2: executors, workspaces, streams ----

// An executor that only records whether it ran: lets phase 2's workspace check be tested with a
// non-zero requirement (every operator's phase 1 asks for none today).
struct RecordingExec : ag::Executor {
    std::shared_ptr<bool> ran = std::make_shared<bool>(false);
    aclnnStatus run(const IO &, void *) const override {
        *ran = true;
        return kOk;
    }
};

struct Phase2Case {
    std::string name;
    std::string op;
};

std::vector<Phase2Case> phase2_rows() {
    std::vector<Phase2Case> r;
    for (const OpDef &op : ops()) r.push_back({short_op(op.name), op.name});
    return r;
}

class Phase2BadInput : public ::testing::TestWithParam<Phase2Case> {
protected:
    const OpDef &op() const { return op_named(GetParam().op); }
    // out's storage (the last argument is every operator's output)
    static std::vector<unsigned char> out_bytes(const Call &c) { return c.owned.back().storage_bytes(); }
    aclOpExecutor *prepare(Call &c, uint64_t *ws) {
        aclOpExecutor *e = nullptr;
        EXPECT_EQ(op().phase1(c.t, c.o, ws, &e), kOk) << take_error();
        return e;
    }
    void expect_msg(std::initializer_list<std::string> frags) {
        const std::string msg = take_error();
        for (const std::string &f : frags) EXPECT_TRUE(contains(msg, f)) << "\"" << f << "\" not in: " << msg;
    }
    // A phase-2 call that must fail with `status` and this message, leaving c's out as it was.
    void expect_rejected(const Call &c, const std::function<aclnnStatus()> &phase2, aclnnStatus status,
                         std::initializer_list<std::string> frags) {
        const auto before = out_bytes(c);
        EXPECT_EQ(phase2(), status);
        expect_msg(frags);
        EXPECT_EQ(out_bytes(c), before);
    }
};

TEST_P(Phase2BadInput, Phase1WorkspaceSizeNull) {
    Call c(op());
    aclOpExecutor *const sentinel = reinterpret_cast<aclOpExecutor *>(uintptr_t(0xabc1));
    aclOpExecutor *e = sentinel;
    const size_t live = ag::live_executors();
    EXPECT_EQ(op().phase1(c.t, c.o, nullptr, &e), kNull);
    expect_msg({op().name, "workspaceSize"});
    EXPECT_EQ(e, sentinel);
    EXPECT_EQ(ag::live_executors(), live);
}

TEST_P(Phase2BadInput, Phase1ExecutorNull) {
    Call c(op());
    uint64_t ws = 77;
    const size_t live = ag::live_executors();
    EXPECT_EQ(op().phase1(c.t, c.o, &ws, nullptr), kNull);
    expect_msg({op().name, "executor"});
    EXPECT_EQ(ws, 77u);
    EXPECT_EQ(ag::live_executors(), live);
}

TEST_P(Phase2BadInput, ExecutorNull) {
    EXPECT_EQ(op().phase2(nullptr, 0, nullptr, nullptr), kNull);
    expect_msg({op().name, "executor"});
}

TEST_P(Phase2BadInput, ExecutorReused) {
    Call c(op());
    uint64_t ws = 0;
    aclOpExecutor *e = prepare(c, &ws);
    ASSERT_EQ(run_phase2(op().phase2, ws, e), kOk) << take_error();
    c.owned.back().fill_storage(kCanary);
    expect_rejected(c, [&] { return op().phase2(nullptr, ws, e, nullptr); }, kInvalid,
                    {op().name, "executor", "not live"});
}

TEST_P(Phase2BadInput, ExecutorDestroyedTwiceThenRun) {
    Call c(op());
    uint64_t ws = 0;
    aclOpExecutor *e = prepare(c, &ws);
    ASSERT_EQ(aclSetAclOpExecutorRepeatable(e), kOk);
    const size_t live = ag::live_executors();
    ASSERT_EQ(aclDestroyAclOpExecutor(e), kOk);
    EXPECT_EQ(ag::live_executors(), live - 1);
    EXPECT_EQ(aclDestroyAclOpExecutor(e), kInvalid);
    expect_msg({"aclDestroyAclOpExecutor", "not live"});
    expect_rejected(c, [&] { return op().phase2(nullptr, ws, e, nullptr); }, kInvalid,
                    {op().name, "executor", "not live"});
}

TEST_P(Phase2BadInput, WorkspaceNullWithNonZeroSize) {
    Call c(op());
    uint64_t ws = 0;
    aclOpExecutor *e = prepare(c, &ws);
    expect_rejected(c, [&] { return op().phase2(nullptr, ws + 64, e, nullptr); }, kInvalid,
                    {op().name, "workspace is NULL"});
}

TEST_P(Phase2BadInput, WorkspaceTooSmall) {
    auto exec = std::make_unique<RecordingExec>();
    exec->op = op().name;
    exec->workspace = 64;
    std::shared_ptr<bool> ran = exec->ran;
    uint64_t ws = 0;
    aclOpExecutor *e = nullptr;
    ASSERT_EQ(ag::publish(std::move(exec), &ws, &e), kOk);
    ASSERT_EQ(ws, 64u);
    std::vector<unsigned char> w(64);
    EXPECT_EQ(op().phase2(w.data(), 63, e, nullptr), kInvalid);
    expect_msg({op().name, "workspaceSize 63 is smaller than the 64 bytes required"});
    EXPECT_FALSE(*ran);
}

TEST_P(Phase2BadInput, ExecutorOfAnotherOperator) {
    const OpDef *other = &ops()[0];
    for (size_t i = 0; i < ops().size(); ++i)
        if (ops()[i].name == op().name) other = &ops()[(i + 1) % ops().size()];
    Call c(*other);
    uint64_t ws = 0;
    aclOpExecutor *e = nullptr;
    ASSERT_EQ(other->phase1(c.t, c.o, &ws, &e), kOk) << take_error();
    expect_rejected(c, [&] { return op().phase2(nullptr, ws, e, nullptr); }, kInvalid,
                    {op().name, std::string(other->name) + "GetWorkspaceSize"});
}

TEST_P(Phase2BadInput, DestroyedStream) {
    Call c(op());
    uint64_t ws = 0;
    aclOpExecutor *e = prepare(c, &ws);
    aclrtStream stream = nullptr;
    ASSERT_EQ(aclrtCreateStream(&stream), ACL_SUCCESS);
    ASSERT_EQ(aclrtDestroyStream(stream), ACL_SUCCESS);
    expect_rejected(c, [&] { return op().phase2(nullptr, ws, e, stream); }, kInvalid,
                    {op().name, "stream", "not a live stream"});
}

INSTANTIATE_TEST_SUITE_P(Matrix, Phase2BadInput, ::testing::ValuesIn(phase2_rows()),
                         [](const ::testing::TestParamInfo<Phase2Case> &info) { return info.param.name; });

TEST(ExecutorHandles, NullToDestroyAndRepeatable) {
    EXPECT_EQ(aclDestroyAclOpExecutor(nullptr), ACLNN_ERR_INNER_NULLPTR);
    EXPECT_TRUE(contains(take_error(), "aclDestroyAclOpExecutor: executor is nullptr"));
    EXPECT_EQ(aclSetAclOpExecutorRepeatable(nullptr), ACLNN_ERR_INNER_NULLPTR);
    EXPECT_TRUE(contains(take_error(), "aclSetAclOpExecutorRepeatable: executor is nullptr"));
}

}  // namespace

// ---- found by fuzzing (tests_cpp/fuzz) ----

// Empty tensors whose other dims multiply past int64 (their numel is 0, so they are valid):
// no overflow on the way to that 0, in the checks or in the kernels.
TEST(FuzzRegression, EmptyTensorsWithHugeDims) {
    const int64_t big = int64_t(1) << 62;
    const Shape huge_empty = {big, 2, 0}, zeros = {0, 0, 0};
    float storage[4] = {};
    const int64_t one = 1;
    auto make = [&](const Shape &shape, const Shape &strides) {
        return aclCreateTensor(shape.data(), shape.size(), ACL_FLOAT, strides.data(), 0, ACL_FORMAT_ND, &one, 1,
                               storage);
    };
    uint64_t ws = 0;
    aclOpExecutor *e = nullptr;
    aclTensor *a = make(huge_empty, zeros), *b = make(huge_empty, zeros), *c = make(huge_empty, {2, 1, 1});
    ASSERT_TRUE(a && b && c) << take_error();
    ASSERT_EQ(aclnnSoftmaxBackwardGetWorkspaceSize(a, b, 0, c, &ws, &e), kOk) << take_error();
    EXPECT_EQ(aclnnSoftmaxBackward(nullptr, ws, e, nullptr), kOk);
    // KL: self non-empty, the broadcast shape B empty: out is the sum over no pre-images, 0
    HostTensor self({1, 1, 1}, ACL_FLOAT), out({1, 1, 1}, ACL_FLOAT), small({1}, ACL_FLOAT);
    small.fill({2.0});
    for (aclTensor *g : {small.t(), b}) {  // gradOutput broadcast to B, or B itself
        out.fill({kCanary});
        EXPECT_EQ(aclnnKlDivBackwardGetWorkspaceSize(g, self.t(), a, 1, false, out.t(), &ws, &e), kOk) << take_error();
        EXPECT_EQ(aclnnKlDivBackward(nullptr, ws, e, nullptr), kOk) << take_error();
        EXPECT_EQ(out.at(0), 0.0);
    }
    for (aclTensor *x : {a, b, c}) aclDestroyTensor(x);
}
