// Runs golden case folders (python -m ascendgrad golden) through the aclnn C API, the way a
// device test harness does: read manifest.json and the inputs' raw .bin files, launch the
// operator, write each output as ACTUAL_DIR/<case>/<name>.bin for `golden --check`.
//   run_cases GOLDEN_DIR ACTUAL_DIR
// Only the public ACL/aclnn API is used, so it builds unchanged against CANN.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "aclnnop/aclnn_cross_entropy_loss_grad.h"
#include "aclnnop/aclnn_kl_div_backward.h"
#include "aclnnop/aclnn_logsigmoid_backward.h"
#include "aclnnop/aclnn_softmax_backward.h"
#include "aclnnop/aclnn_softshrink_backward.h"

#include "../acl_example.h"

namespace fs = std::filesystem;

// The little JSON a manifest needs: objects, arrays, strings, numbers, true/false/null.
struct Json {
    enum Kind { Null, Bool, Num, Str, Arr, Obj } kind = Null;
    double num = 0;
    std::string str;
    std::vector<Json> arr;
    std::map<std::string, Json> obj;
    const Json &operator[](const std::string &k) const {
        static const Json none;
        auto it = obj.find(k);
        return it == obj.end() ? none : it->second;
    }
};

static Json Parse(const char *&p) {
    while (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t') ++p;
    Json j;
    if (*p == '{' || *p == '[') {
        const bool isObj = *p++ == '{';
        j.kind = isObj ? Json::Obj : Json::Arr;
        while (true) {
            while (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t' || *p == ',') ++p;
            if (*p == '}' || *p == ']' || !*p) break;
            if (isObj) {
                std::string key = Parse(p).str;
                while (*p == ' ' || *p == ':') ++p;
                j.obj[key] = Parse(p);
            } else {
                j.arr.push_back(Parse(p));
            }
        }
        if (*p) ++p;
    } else if (*p == '"') {
        j.kind = Json::Str;
        for (++p; *p && *p != '"'; ++p) j.str += (*p == '\\' && p[1]) ? *++p : *p;  // names need no \u
        if (*p) ++p;
    } else if (*p == 't' || *p == 'f' || *p == 'n') {
        j.kind = *p == 'n' ? Json::Null : Json::Bool;
        j.num = *p == 't';
        p += *p == 'f' ? 5 : 4;
    } else {
        j.kind = Json::Num;
        char *end = nullptr;
        j.num = std::strtod(p, &end);
        p = end == p ? p + 1 : end;
    }
    return j;
}

static double Number(const Json &j, double fallback) {  // attrs may hold "inf"/"-inf"/"nan"
    if (j.kind == Json::Str) return std::strtod(j.str.c_str(), nullptr);
    return j.kind == Json::Num || j.kind == Json::Bool ? j.num : fallback;
}

static std::vector<uint8_t> ReadFile(const fs::path &path) {
    std::ifstream f(path, std::ios::binary);
    return std::vector<uint8_t>((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}

static aclDataType DataType(const std::string &name) {
    static const std::map<std::string, aclDataType> types = {
        {"float16", ACL_FLOAT16}, {"bfloat16", ACL_BF16}, {"float32", ACL_FLOAT},
        {"float64", ACL_DOUBLE},  {"int64", ACL_INT64},   {"int32", ACL_INT32}};
    return types.at(name);
}

// One case folder: inputs from their .bin files, outputs allocated from the manifest.
static int RunCase(const fs::path &golden, const fs::path &actual, aclrtStream stream) {
    const std::vector<uint8_t> text = ReadFile(golden / "manifest.json");
    const std::string src(text.begin(), text.end());
    const char *p = src.c_str();
    const Json m = Parse(p);
    std::map<std::string, DeviceTensor> t;  // by the manifest's names
    for (const char *group : {"inputs", "outputs"}) {
        for (const Json &e : m[group].arr) {
            std::vector<int64_t> shape;
            for (const Json &d : e["shape"].arr) shape.push_back(int64_t(d.num));
            std::vector<uint8_t> data = ReadFile(golden / e["bin"].str);
            if (data.empty()) data.resize(1);  // an empty tensor still gets a buffer
            if (MakeTensor(data, shape, DataType(e["dtype"].str), &t[e["name"].str])) return 1;
        }
    }
    auto in = [&](const char *name) { return t.count(name) ? t[name].tensor : nullptr; };
    const std::string op = m["op"].str;
    const Json &a = m["attrs"];
    const std::string out = m["outputs"].arr.at(0)["name"].str;
    uint64_t ws = 0;
    aclOpExecutor *ex = nullptr;
    aclnnStatus rc = ACL_SUCCESS;
    Phase2Fn phase2 = nullptr;
    std::unique_ptr<aclScalar, aclnnStatus (*)(const aclScalar *)> lambd(nullptr, aclDestroyScalar);
    std::string reduction = a["reduction"].kind == Json::Str ? a["reduction"].str : "mean";
    if (op == "softmax_backward") {
        rc = aclnnSoftmaxBackwardGetWorkspaceSize(in("grad_output"), in("output"), int64_t(Number(a["dim"], -1)),
                                                  t[out].tensor, &ws, &ex);
        phase2 = aclnnSoftmaxBackward;
    } else if (op == "log_sigmoid_backward") {
        const aclTensor *buffer = in("buffer") ? in("buffer") : in("x");  // CANN ignores it
        rc = aclnnLogSigmoidBackwardGetWorkspaceSize(in("grad_output"), in("x"), buffer, t[out].tensor, &ws, &ex);
        phase2 = aclnnLogSigmoidBackward;
    } else if (op == "softshrink_backward") {
        double value = Number(a["lambd"], 0.5);
        lambd.reset(aclCreateScalar(&value, ACL_DOUBLE));
        rc = aclnnSoftshrinkBackwardGetWorkspaceSize(in("grad_output"), in("x"), lambd.get(), t[out].tensor, &ws, &ex);
        phase2 = aclnnSoftshrinkBackward;
    } else if (op == "cross_entropy_loss_grad") {
        rc = aclnnCrossEntropyLossGradGetWorkspaceSize(
            in("grad_loss"), in("log_prob"), in("target"), in("weight"), in("grad_zloss"), in("lse_for_zloss"),
            reduction.data(), int64_t(Number(a["ignore_index"], -100)), Number(a["label_smoothing"], 0),
            Number(a["lse_square_scale_for_zloss"], 0), t[out].tensor, &ws, &ex);
        phase2 = aclnnCrossEntropyLossGrad;
    } else if (op == "kl_div_backward") {
        const std::map<std::string, int64_t> codes = {{"none", 0}, {"mean", 1}, {"sum", 2}, {"batchmean", 3}};
        rc = aclnnKlDivBackwardGetWorkspaceSize(in("grad_output"), in("x"), in("target"), codes.at(reduction),
                                                Number(a["log_target"], 0) != 0, t[out].tensor, &ws, &ex);
        phase2 = aclnnKlDivBackward;
    } else {
        std::printf("%s: unknown op %s\n", golden.c_str(), op.c_str());
        return 1;
    }
    CHECK_OK(rc, (op + " phase 1").c_str());
    if (RunOnStream(phase2, op.c_str(), ws, ex, stream)) return 1;

    const Json &o = m["outputs"].arr.at(0);
    std::vector<uint8_t> result(ReadFile(golden / o["bin"].str).size());
    CHECK_OK(aclrtMemcpy(result.data(), result.size(), t[out].data, result.size(), ACL_MEMCPY_DEVICE_TO_HOST),
             "aclrtMemcpy");
    fs::create_directories(actual);
    std::ofstream(actual / o["bin"].str, std::ios::binary)
        .write(reinterpret_cast<const char *>(result.data()), std::streamsize(result.size()));
    for (auto &kv : t) {
        aclDestroyTensor(kv.second.tensor);
        aclrtFree(kv.second.data);
    }
    std::printf("%s: %s written\n", golden.filename().c_str(), o["bin"].str.c_str());
    return 0;
}

int main(int argc, char **argv) {
    if (argc != 3) {
        std::printf("usage: %s GOLDEN_DIR ACTUAL_DIR\n", argv[0]);
        return 2;
    }
    aclrtStream stream = nullptr;
    if (InitRuntime(0, &stream)) return 1;
    int failed = 0;
    for (const fs::directory_entry &d : fs::directory_iterator(argv[1]))
        if (fs::exists(d.path() / "manifest.json"))
            failed += RunCase(d.path(), fs::path(argv[2]) / d.path().filename(), stream);
    aclrtDestroyStream(stream);
    aclrtResetDevice(0);
    aclFinalize();
    return failed ? 1 : 0;
}
