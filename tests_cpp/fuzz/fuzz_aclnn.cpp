// libFuzzer target over the C API of all five operators. The input decodes into tensors (NULL or
// not, dtype, rank, dims, strides, offset, storage dims, out aliasing an input's storage), options
// and data (targets included); phase 1 runs, and phase 2 on success, into buffers of exactly the
// storage extents (so ASan sees any access outside them). Invariants, beyond "no crash, no ASan
// or UBSan report":
//   - every non-zero status leaves a message;
//   - a failing phase 1 writes nothing: no buffer byte, not workspaceSize, not executor, and
//     leaves no executor behind;
//   - a failing phase 2 writes nothing; a successful one writes only out's view elements and
//     never an input that does not share out's storage.
// Build: -DCMAKE_CXX_COMPILER=clang++ -DASCENDGRAD_BUILD_FUZZ=ON -DASCENDGRAD_SANITIZE=address,undefined
#include <fuzzer/FuzzedDataProvider.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "acl/acl.h"
#include "aclnnop/aclnn_cross_entropy_loss_grad.h"
#include "aclnnop/aclnn_kl_div_backward.h"
#include "aclnnop/aclnn_logsigmoid_backward.h"
#include "aclnnop/aclnn_softmax_backward.h"
#include "aclnnop/aclnn_softshrink_backward.h"
#include "api/executor.h"

namespace {

using Shape = std::vector<int64_t>;

constexpr int64_t kMaxStorageElems = 1 << 12;  // keeps every input cheap to copy and compare
constexpr int64_t kMaxWork = 1 << 15;          // phase 2 only below this many iterated elements

[[noreturn]] void violated(const char *what) {
    std::fprintf(stderr, "fuzz_aclnn: invariant violated: %s\n", what);
    std::abort();
}

// a * b for a, b >= 0, saturated at cap (decoded dims reach 2^62)
int64_t mul_sat(int64_t a, int64_t b, int64_t cap) { return int64_t(std::min<__int128>(__int128(a) * b, cap)); }

int64_t numel(const Shape &s) {
    __int128 n = 1;
    for (int64_t d : s) n = std::min<__int128>(n * (d < 0 ? 0 : d), __int128(1) << 62);
    return int64_t(n);
}

// One tensor argument: its storage buffer (exactly the storage extent) and handle.
struct Arg {
    bool null = false;
    aclDataType dtype = ACL_FLOAT;
    Shape view, strides, storage;
    bool contiguous = true;  // strides == NULL
    int64_t offset = 0;
    int alias = -1;  // out only: the index of the input whose buffer it views
    std::vector<unsigned char> own;
    unsigned char *data = nullptr;
    size_t bytes = 0;
    aclTensor *t = nullptr;
};

const aclDataType kDtypes[] = {ACL_FLOAT,  ACL_FLOAT16, ACL_BF16, ACL_DOUBLE,  ACL_INT32,        ACL_INT64,
                               ACL_BOOL,   ACL_INT8,    ACL_UINT8, ACL_INT16, ACL_DT_UNDEFINED, aclDataType(1000)};

int64_t pick_dim(FuzzedDataProvider &p) {
    switch (p.ConsumeIntegralInRange<int>(0, 15)) {
        case 0: return -1;
        case 1: return int64_t(1) << 31;
        case 2: return int64_t(1) << 62;
        default: return p.ConsumeIntegralInRange<int64_t>(0, 5);
    }
}

// The shape an argument has in a valid call (`natural`), or one near it, or any.
Shape pick_shape(FuzzedDataProvider &p, const Shape &natural) {
    Shape s = natural;
    switch (p.ConsumeIntegralInRange<int>(0, 11)) {
        case 0: {  // any
            // up to 27 dims: past the limit of 8 some operators have and the 25 an aclTensor holds
            s.assign(size_t(p.ConsumeIntegralInRange<int>(0, p.ConsumeIntegralInRange<int>(0, 3) ? 9 : 27)), 0);
            for (int64_t &d : s) d = pick_dim(p);
            break;
        }
        case 1:  // one dim changed
            if (!s.empty()) s[p.ConsumeIntegralInRange<size_t>(0, s.size() - 1)] = pick_dim(p);
            break;
        case 2:  // broadcastable: some dims 1, maybe leading ones dropped
            for (int64_t &d : s)
                if (p.ConsumeBool()) d = 1;
            if (!s.empty() && p.ConsumeBool()) s.erase(s.begin());
            break;
        default: break;
    }
    return s;
}

// Decodes everything but the data; `natural` is the argument's shape in a valid call.
void decode(FuzzedDataProvider &p, Arg &a, const Shape &natural, aclDataType natural_dtype) {
    a.null = p.ConsumeIntegralInRange<int>(0, 31) == 0;
    a.dtype = p.ConsumeIntegralInRange<int>(0, 7) ? natural_dtype : p.PickValueInArray(kDtypes);
    a.view = pick_shape(p, natural);
    a.contiguous = p.ConsumeBool();
    a.strides.assign(a.view.size(), 0);
    if (!a.contiguous) {
        int64_t acc = 1;
        for (size_t i = a.view.size(); i-- > 0;) {
            switch (p.ConsumeIntegralInRange<int>(0, 3)) {
                case 0: a.strides[i] = p.ConsumeIntegralInRange<int64_t>(-7, 7); break;  // zero and negative too
                case 1: a.strides[i] = -acc; break;
                default: a.strides[i] = acc;
            }
            acc = mul_sat(acc, std::max<int64_t>(a.view[i], 1), 1 << 20);
        }
    }
    // Offset and storage: by default just enough for the view (plus slack), else anything.
    int64_t lo = 0, hi = 0;
    const bool empty = numel(a.view) == 0;
    Shape st = a.contiguous ? Shape() : a.strides;
    if (a.contiguous) {
        st.assign(a.view.size(), 0);
        int64_t acc = 1;
        for (size_t i = a.view.size(); i-- > 0;) {
            st[i] = acc;
            acc = mul_sat(acc, std::max<int64_t>(a.view[i], 1), int64_t(1) << 40);
        }
    }
    for (size_t i = 0; i < a.view.size() && !empty; ++i) {
        const __int128 span = __int128(std::max<int64_t>(a.view[i], 1) - 1) * st[i];
        const int64_t s = int64_t(std::clamp<__int128>(span, -(int64_t(1) << 50), int64_t(1) << 50));
        (s < 0 ? lo : hi) += s;
    }
    const int64_t slack = p.ConsumeIntegralInRange<int64_t>(0, 3);
    if (p.ConsumeIntegralInRange<int>(0, 7)) {
        a.offset = -lo + slack;
        a.storage = {hi - lo + 1 + 2 * slack};
    } else {
        a.offset = p.ConsumeIntegralInRange<int64_t>(-2, 20);
        a.storage.assign(size_t(p.ConsumeIntegralInRange<int>(0, 2)), 0);
        for (int64_t &d : a.storage) d = p.ConsumeIntegralInRange<int64_t>(-1, 40);
    }
}

// Allocates the storage (or views `into`'s) and creates the handle.
void create(Arg &a, Arg *into) {
    const int64_t es = int64_t(aclDataTypeSize(a.dtype));
    const int64_t elems = numel(a.storage);
    if (into) {
        a.data = into->data;
        a.bytes = into->bytes;
        // the storage is into's bytes, in a's elements
        a.storage = {es ? int64_t(into->bytes) / es : 0};
    } else {
        if (elems > kMaxStorageElems) a.storage = {kMaxStorageElems};
        a.bytes = size_t(std::min(elems, kMaxStorageElems) * es);
        a.own.assign(a.bytes, 0);
        a.data = a.own.data();
    }
    if (a.null) return;
    // a zero-byte storage still gets a distinct address: data == NULL means "no data"
    static unsigned char zero_bytes;
    void *data = a.bytes ? static_cast<void *>(a.data) : &zero_bytes;
    a.t = aclCreateTensor(a.view.data(), a.view.size(), a.dtype, a.contiguous ? nullptr : a.strides.data(), a.offset,
                          ACL_FORMAT_ND, a.storage.data(), a.storage.size(), data);
    if (!a.t && !aclGetRecentErrMsg()) violated("aclCreateTensor failed without a message");
}

struct Options {
    int64_t dim = 0;
    double lambd = 0.5;
    aclDataType lambd_dtype = ACL_FLOAT;
    bool lambd_null = false;
    const char *reduction = "mean";
    int64_t ignore_index = -100;
    double label_smoothing = 0, zloss_scale = 0;
    int64_t kl_reduction = 1;
    bool log_target = false;
};

void decode_options(FuzzedDataProvider &p, Options &o, int rank) {
    const int64_t dims[] = {0, 1, -1, 2, -2, 3, 8, -9, INT64_MAX, INT64_MIN};
    o.dim = p.ConsumeIntegralInRange<int>(0, 2) ? p.ConsumeIntegralInRange<int64_t>(-std::max(rank, 1), rank)
                                                : p.PickValueInArray(dims);
    const double reals[] = {0.0, 0.5, 1.0, -0.5, 1.5, NAN, INFINITY, -INFINITY, 1e-300, 0.1};
    o.lambd = p.PickValueInArray(reals);
    o.lambd_dtype = p.PickValueInArray(kDtypes);
    o.lambd_null = p.ConsumeIntegralInRange<int>(0, 15) == 0;
    const char *reductions[] = {"mean", "sum", "none", nullptr, "avg", ""};
    o.reduction = p.PickValueInArray(reductions);
    const int64_t ignores[] = {-100, -1, 0, 1, 2, INT64_MIN};
    o.ignore_index = p.PickValueInArray(ignores);
    o.label_smoothing = p.PickValueInArray(reals);
    o.zloss_scale = p.ConsumeBool() ? 0.0 : p.PickValueInArray(reals);
    o.kl_reduction = p.ConsumeIntegralInRange<int64_t>(-1, 4);
    o.log_target = p.ConsumeBool();
}

// Input data: any bits for floats (NaN and inf included), small integers (mostly valid class
// indices, some not) for the rest.
void fill(Arg &a, uint32_t seed, int64_t classes) {
    if (a.alias >= 0) return;
    uint64_t x = seed * 0x9e3779b97f4a7c15ull + 1;
    auto next = [&] { return x ^= x << 13, x ^= x >> 7, x ^= x << 17; };
    const size_t es = std::max<size_t>(1, aclDataTypeSize(a.dtype));
    for (size_t i = 0; i + es <= a.bytes; i += es) {
        const uint64_t r = next();
        if (a.dtype == ACL_INT64 || a.dtype == ACL_INT32) {
            const int64_t v = int64_t(r % uint64_t(classes + 3)) - 1;  // -1 .. classes + 1
            std::memcpy(a.data + i, &v, es);  // little-endian: the low bytes for int32
        } else {
            std::memcpy(a.data + i, &r, es);
        }
    }
}

struct Call {
    int op = 0;
    std::vector<Arg> args;  // signature order; the last is out
    Options o;
    aclnnStatus phase1(uint64_t *ws, aclOpExecutor **e) {
        auto t = [&](size_t i) { return args[i].t; };
        switch (op) {
            case 0: return aclnnSoftmaxBackwardGetWorkspaceSize(t(0), t(1), o.dim, t(2), ws, e);
            case 1: return aclnnLogSigmoidBackwardGetWorkspaceSize(t(0), t(1), t(2), t(3), ws, e);
            case 2: {
                unsigned char v[8] = {};
                const double d = o.lambd;
                const float f = float(d);
                if (aclDataTypeSize(o.lambd_dtype) == 8) std::memcpy(v, &d, 8);
                else std::memcpy(v, &f, 4);
                aclScalar *lambd = o.lambd_null ? nullptr : aclCreateScalar(v, o.lambd_dtype);
                const aclnnStatus s = aclnnSoftshrinkBackwardGetWorkspaceSize(t(0), t(1), lambd, t(2), ws, e);
                aclDestroyScalar(lambd);
                return s;
            }
            case 3:
                return aclnnCrossEntropyLossGradGetWorkspaceSize(t(0), t(1), t(2), t(3), t(4), t(5),
                                                                 const_cast<char *>(o.reduction), o.ignore_index,
                                                                 o.label_smoothing, o.zloss_scale, t(6), ws, e);
            default: return aclnnKlDivBackwardGetWorkspaceSize(t(0), t(1), t(2), o.kl_reduction, o.log_target, t(3), ws, e);
        }
    }
    aclnnStatus phase2(void *w, uint64_t ws, aclOpExecutor *e) {
        using P2 = aclnnStatus (*)(void *, uint64_t, aclOpExecutor *, aclrtStream);
        const P2 fns[] = {aclnnSoftmaxBackward, aclnnLogSigmoidBackward, aclnnSoftshrinkBackward,
                          aclnnCrossEntropyLossGrad, aclnnKlDivBackward};
        return fns[op](w, ws, e, nullptr);
    }
};

// Iterated elements of phase 2, bounded: the product of the largest dim at each aligned position.
int64_t work(const Call &c) {
    size_t rank = 0;
    for (const Arg &a : c.args) rank = std::max(rank, a.view.size());
    __int128 w = 1;
    for (size_t k = 0; k < rank; ++k) {
        int64_t m = 1;
        for (const Arg &a : c.args)
            if (k < a.view.size()) m = std::max(m, a.view[a.view.size() - 1 - k]);
        w = std::min<__int128>(w * m, __int128(1) << 62);
    }
    return int64_t(w);
}

// Byte offsets of out's view elements within its buffer.
std::vector<bool> view_bytes(const Arg &a) {
    std::vector<bool> in(a.bytes, false);
    const int64_t n = numel(a.view), es = int64_t(aclDataTypeSize(a.dtype));
    if (n == 0 || !a.t) return in;
    int64_t *st = nullptr;
    uint64_t k = 0;
    aclGetViewStrides(a.t, &st, &k);
    Shape strides(st, st + k);
    delete[] st;
    Shape idx(a.view.size(), 0);
    int64_t off = a.offset;
    for (int64_t e = 0; e < n; ++e) {
        for (int64_t b = 0; b < es; ++b) in[size_t(off * es + b)] = true;
        for (size_t d = a.view.size(); d-- > 0;) {
            off += strides[d];
            if (++idx[d] < a.view[d]) break;
            off -= idx[d] * strides[d];
            idx[d] = 0;
        }
    }
    return in;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *bytes, size_t size) {
    FuzzedDataProvider p(bytes, size);
    Call c;
    c.op = p.ConsumeIntegralInRange<int>(0, 4);
    const aclDataType fdt = p.PickValueInArray({ACL_FLOAT, ACL_FLOAT16, ACL_BF16, ACL_DOUBLE});
    Shape base(size_t(p.ConsumeIntegralInRange<int>(0, 4)));
    for (int64_t &d : base) d = p.ConsumeIntegralInRange<int64_t>(0, 5);
    const int64_t n = p.ConsumeIntegralInRange<int64_t>(0, 6), classes = p.ConsumeIntegralInRange<int64_t>(0, 6);
    std::vector<std::pair<Shape, aclDataType>> natural;
    switch (c.op) {
        case 0: natural = {{base, fdt}, {base, fdt}, {base, fdt}}; break;
        case 1: natural = {{base, fdt}, {base, fdt}, {base, fdt}, {base, fdt}}; break;
        case 2: natural = {{base, fdt}, {base, fdt}, {base, fdt}}; break;
        case 3: {
            const Shape g = p.ConsumeBool() ? Shape{} : Shape{n};
            natural = {{g, fdt},          {{n, classes}, fdt}, {{n}, ACL_INT64}, {{classes}, ACL_FLOAT},
                       {g, fdt},          {{n}, fdt},          {{n, classes}, fdt}};
            break;
        }
        default: natural = {{base, fdt}, {base, fdt}, {base, fdt}, {base, fdt}};
    }
    c.args.resize(natural.size());
    for (size_t i = 0; i < natural.size(); ++i) decode(p, c.args[i], natural[i].first, natural[i].second);
    decode_options(p, c.o, int(base.size()));
    Arg &out = c.args.back();
    if (p.ConsumeIntegralInRange<int>(0, 7) == 0) out.alias = p.ConsumeIntegralInRange<int>(0, int(c.args.size()) - 2);
    // CE's optional arguments are absent half of the time
    if (c.op == 3)
        for (size_t i : {3, 4, 5}) c.args[i].null = c.args[i].null || p.ConsumeBool();
    const uint32_t seed = p.ConsumeIntegral<uint32_t>();
    for (Arg &a : c.args) {
        create(a, a.alias >= 0 ? &c.args[size_t(a.alias)] : nullptr);
        fill(a, seed + uint32_t(&a - c.args.data()), std::max<int64_t>(classes, 1));
    }
    aclGetRecentErrMsg();  // aclCreateTensor failures are expected; start clean

    std::vector<std::vector<unsigned char>> before;
    for (const Arg &a : c.args) before.emplace_back(a.data, a.data + a.bytes);
    auto unchanged = [&](size_t i) { return std::equal(before[i].begin(), before[i].end(), c.args[i].data); };
    const size_t live = ag::live_executors();
    uint64_t ws = 0x5eed;
    // odd: never a handle (those are multiples of 16)
    aclOpExecutor *const sentinel = reinterpret_cast<aclOpExecutor *>(uintptr_t(0xf00d1));
    aclOpExecutor *e = sentinel;

    if (c.phase1(&ws, &e) != ACLNN_SUCCESS) {
        if (!aclGetRecentErrMsg()) violated("phase 1 failed without a message");
        if (ws != 0x5eed || e != sentinel) violated("a failing phase 1 wrote workspaceSize or executor");
        if (ag::live_executors() != live) violated("a failing phase 1 left an executor behind");
        for (size_t i = 0; i < c.args.size(); ++i)
            if (!unchanged(i)) violated("a failing phase 1 wrote a buffer");
    } else if (e == nullptr || e == sentinel) {
        violated("phase 1 succeeded without an executor");
    } else if (work(c) > kMaxWork) {
        if (aclDestroyAclOpExecutor(e) != ACLNN_SUCCESS) violated("destroying a fresh executor failed");
    } else {
        // exactly the size asked for (none: NULL), so ASan catches any access beyond it
        void *w = ws ? std::malloc(ws) : nullptr;
        const aclnnStatus s = c.phase2(w, ws, e);
        std::free(w);
        if (s != ACLNN_SUCCESS && !aclGetRecentErrMsg()) violated("phase 2 failed without a message");
        const std::vector<bool> in_view = view_bytes(out);
        for (size_t i = 0; i + 1 < c.args.size(); ++i)
            if (int(i) != out.alias && !unchanged(i)) violated("phase 2 wrote an input");
        const size_t o = c.args.size() - 1;
        const std::vector<unsigned char> &ob = before[out.alias >= 0 ? size_t(out.alias) : o];
        for (size_t b = 0; b < out.bytes; ++b)
            if (out.data[b] != ob[b] && (s != ACLNN_SUCCESS || !in_view[b]))
                violated(s != ACLNN_SUCCESS ? "a failing phase 2 wrote out" : "phase 2 wrote outside out's view");
    }
    for (Arg &a : c.args) aclDestroyTensor(a.t);
    return 0;
}
