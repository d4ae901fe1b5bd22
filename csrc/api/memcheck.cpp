#include "memcheck.h"

#include <pthread.h>

#include <algorithm>
#include <cinttypes>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "ascendgrad/ascendgrad.h"
#include "objects.h"

namespace ag::memcheck {

int g_mode = 0;

namespace {

enum Kind { kOutOfBounds, kUnknown, kUseAfterFree, kBadFree, kCopyOverrun, kUninit, kOverlap, kLeak, kKinds };
const char *const kKindNames[kKinds] = {"out-of-bounds view",      "unknown address", "use after free",
                                        "double or invalid free", "copy overrun",    "uninitialised read",
                                        "overlap",                "leak"};

constexpr size_t kQuarantineBytes = size_t(256) << 20;  // freed blocks kept (poisoned) before release
constexpr unsigned char kPoison = 0xff;                 // NaN in every float dtype
constexpr uintptr_t kNearby = 4096;  // an unknown address this close to a block is described by it
constexpr int64_t kMaxRuns = int64_t(1) << 20;  // byte runs enumerated per view (beyond: extent only)

using Range = std::pair<uintptr_t, uintptr_t>;  // [first, second)

struct Block {
    uintptr_t start = 0;
    size_t size = 0;
    std::string origin;  // "aclrtMalloc #3", or a host buffer's name
    std::string freed_by;
    uint64_t free_no = 0;  // of all frees, in order
    bool host = false;  // registered host memory: counted as written
    std::vector<Range> written;  // offsets from start, sorted and disjoint
    uintptr_t end() const { return start + size; }
};

struct Object {
    uint64_t seq;
    std::string what;  // "tensor FLOAT [2, 3] (aclCreateTensor #4)"; for executors, made when reported:
    const char *op;    // an executor's operator, and its ordinal among that operator's phase 1 calls
    uint64_t n;
    bool reported = false;
};

struct CStrLess {
    bool operator()(const char *a, const char *b) const { return std::strcmp(a, b) < 0; }
};

struct State {
    std::mutex mu;
    std::map<uintptr_t, Block> live, freed;  // device allocations; the quarantine
    std::deque<uintptr_t> fifo;              // the quarantine's order of frees
    size_t quarantined = 0;
    std::multimap<uintptr_t, Block> host;    // registered host buffers (may overlap)
    std::unordered_map<const void *, Object> objects;
    std::map<const char *, uint64_t, CStrLess> calls;  // ordinals per creating function
    uint64_t seq = 0;
    uint64_t init_seq = 0;  // seq at the latest aclInit
    uint64_t frees = 0;
    uint64_t counts[kKinds] = {};
    FILE *out = stderr;
};

State &state() {
    // never destroyed: checks may run during static teardown
    static State *s = [] {
        pthread_atfork([] { state().mu.lock(); }, [] { state().mu.unlock(); }, [] { state().mu.unlock(); });
        return new State;
    }();
    return *s;
}

// ---- reporting (callers hold the lock) ----

void report(State &s, Kind k, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void report(State &s, Kind k, const char *fmt, ...) {
    char body[1024];
    va_list ap;
    va_start(ap, fmt);
    std::vsnprintf(body, sizeof body, fmt, ap);
    va_end(ap);
    const char *label = kKindNames[k];
    if (k == kBadFree) label = std::strstr(body, "already freed") ? "double free" : "invalid free";
    std::fprintf(s.out, "ascendgrad memcheck: %s: %s\n", label, body);
    std::fflush(s.out);
    ++s.counts[k];
    if (g_mode == 2) std::abort();
}

std::string ordinal(State &s, const char *fn) { return std::string(fn) + " #" + std::to_string(++s.calls[fn]); }

std::string block_desc(const Block &b) {
    char buf[160];
    std::snprintf(buf, sizeof buf, "an allocation of %zu bytes at %p (%s)", b.size, reinterpret_cast<void *>(b.start),
                  b.origin.c_str());
    return buf;
}

// Where [a, b) lies relative to block bl: "8 bytes after the block", "4 bytes before the block".
std::string relation(const Block &bl, uintptr_t a, uintptr_t b) {
    std::string r;
    if (a < bl.start) r = std::to_string(bl.start - a) + " bytes before";
    if (b > bl.end()) r += (r.empty() ? "" : " and ") + std::to_string(b - bl.end()) + " bytes after";
    return r + " the block";
}

const Block *containing(const std::map<uintptr_t, Block> &m, uintptr_t p) {
    auto it = m.upper_bound(p);
    if (it == m.begin()) return nullptr;
    --it;
    return p < it->second.end() ? &it->second : nullptr;
}

// A registered host buffer holding [a, b), else one holding a (for the report), else nullptr.
const Block *host_containing(const State &s, uintptr_t a, uintptr_t b, bool *whole) {
    const Block *partial = nullptr;
    for (auto it = s.host.begin(); it != s.host.end() && it->first <= a; ++it) {
        if (a >= it->second.end()) continue;
        if (b <= it->second.end()) {
            *whole = true;
            return &it->second;
        }
        partial = &it->second;
    }
    *whole = false;
    return partial;
}

// Describes an address in no block by the nearest live allocation below it, when close.
std::string nearby(const State &s, uintptr_t p) {
    auto it = s.live.upper_bound(p);
    if (it != s.live.begin()) {
        const Block &b = std::prev(it)->second;
        if (p - b.end() < kNearby)
            return std::to_string(p - b.end()) + " bytes after " + block_desc(b);
    }
    if (it != s.live.end() && it->first - p < kNearby)
        return std::to_string(it->first - p) + " bytes before " + block_desc(it->second);
    return "in no live allocation";
}

// Checks an access of bytes [a, b) made through pointer `anchor` (the address the program
// passed: a copy's pointer, a view's element 0). Returns the device block when the access lies
// inside one (for the written-range bookkeeping), else nullptr; reports when it is not inside a
// live block or registered buffer. `extra` ends out-of-bounds lines (a copy's count).
// `who` makes the report's subject ("aclrtMemcpy dst"), only when there is a report.
template <class Who>
Block *check_access(State &s, Kind oob, const Who &who, const char *verb, uintptr_t anchor, uintptr_t a, uintptr_t b,
                    bool *ok, const char *extra = "") {
    *ok = false;
    if (const Block *bl = containing(s.live, anchor)) {
        if (a >= bl->start && b <= bl->end()) {
            *ok = true;
            return const_cast<Block *>(bl);
        }
        report(s, oob, "%s %s bytes [%" PRIdPTR ", %" PRIdPTR ") of %s: %s%s", who().c_str(), verb,
               intptr_t(a - bl->start), intptr_t(b - bl->start), block_desc(*bl).c_str(), relation(*bl, a, b).c_str(),
               extra);
        return nullptr;
    }
    // freed before registered: a NumPy array made over freed memory is a use after free
    if (const Block *f = containing(s.freed, anchor)) {
        report(s, kUseAfterFree, "%s %s bytes [%" PRIdPTR ", %" PRIdPTR ") inside a block of %zu bytes at %p freed by %s (allocated by %s)",
               who().c_str(), verb, intptr_t(a - f->start), intptr_t(b - f->start), f->size,
               reinterpret_cast<void *>(f->start), f->freed_by.c_str(), f->origin.c_str());
        return nullptr;
    }
    bool whole = false;
    if (const Block *h = host_containing(s, anchor, anchor + 1, &whole)) {
        if (host_containing(s, a, b, &whole) && whole) {
            *ok = true;
            return nullptr;
        }
        report(s, oob, "%s %s bytes [%" PRIdPTR ", %" PRIdPTR ") of %s: %s%s", who().c_str(), verb,
               intptr_t(a - h->start), intptr_t(b - h->start), block_desc(*h).c_str(), relation(*h, a, b).c_str(),
               extra);
        return nullptr;
    }
    report(s, kUnknown, "%s %s %zu bytes at %p: %s", who().c_str(), verb, size_t(b - a), reinterpret_cast<void *>(a),
           nearby(s, a).c_str());
    return nullptr;
}

// ---- written ranges ----

void mark_written(Block &bl, uintptr_t a, uintptr_t b) {
    Range r{a - bl.start, b - bl.start};
    auto &w = bl.written;
    auto it = std::lower_bound(w.begin(), w.end(), r, [](const Range &x, const Range &y) { return x.second < y.first; });
    // it: the first range that ends at or after r starts; merge every range touching r
    auto last = it;
    while (last != w.end() && last->first <= r.second) {
        r.first = std::min(r.first, last->first);
        r.second = std::max(r.second, last->second);
        ++last;
    }
    it = w.erase(it, last);
    w.insert(it, r);
}

// The first part of [a, b) never written, as offsets; {0, 0} when all of it was.
Range unwritten(const Block &bl, uintptr_t a, uintptr_t b) {
    uintptr_t lo = a - bl.start;
    const uintptr_t hi = b - bl.start;
    // from the first range ending after lo (binary search: many runs may check one block)
    auto it = std::upper_bound(bl.written.begin(), bl.written.end(), lo,
                               [](uintptr_t x, const Range &r) { return x < r.second; });
    for (; it != bl.written.end(); ++it) {
        const Range &r = *it;
        if (r.first > lo) return {lo, std::min(hi, r.first)};
        lo = r.second;
        if (lo >= hi) return {0, 0};
    }
    return lo < hi ? Range{lo, hi} : Range{0, 0};
}

// ---- views ----

size_t elem_size(kern::DType t) {
    switch (t) {
        case kern::DType::F16: case kern::DType::BF16: return 2;
        case kern::DType::F32: case kern::DType::I32: return 4;
        case kern::DType::F64: case kern::DType::I64: return 8;
        case kern::DType::Bool: return 1;
    }
    return 1;
}

const char *dtype_str(kern::DType t) {
    switch (t) {
        case kern::DType::F16: return "FLOAT16";
        case kern::DType::BF16: return "BF16";
        case kern::DType::F32: return "FLOAT";
        case kern::DType::F64: return "DOUBLE";
        case kern::DType::I32: return "INT32";
        case kern::DType::I64: return "INT64";
        case kern::DType::Bool: return "BOOL";
    }
    return "?";
}

// "aclnnXxx argument 'target' (INT64 [2])"; the call is the operator's name and `suffix`.
std::string arg_desc(const Executor &e, const char *suffix, int slot, const kern::View &v) {
    std::string name = e.names ? e.names[slot] : "#" + std::to_string(slot);
    return std::string(e.op) + suffix + " argument '" + name + "' (" + dtype_str(v.dtype) + " " +
           shape_str(std::vector<int64_t>(v.shape, v.shape + v.ndim)) + ")";
}

struct Extent {
    uintptr_t a, b;  // bytes [a, b) the view can touch
};

Extent extent_of(const kern::View &v) {
    const int64_t es = int64_t(elem_size(v.dtype));
    int64_t lo = 0, hi = 0;
    for (int i = 0; i < v.ndim; ++i) {
        const int64_t span = (v.shape[i] - 1) * v.stride[i];
        (span < 0 ? lo : hi) += span;
    }
    const uintptr_t base = reinterpret_cast<uintptr_t>(v.data);
    return {base + uintptr_t(lo * es), base + uintptr_t((hi + 1) * es)};
}

// Calls f(a, b) for byte runs covering exactly the bytes of the view's elements (one run when
// they fill the extent). Returns false, having called nothing, when that takes over kMaxRuns.
template <class F>
bool for_each_run(const kern::View &v, F &&f) {
    const Extent x = extent_of(v);
    const int64_t es = int64_t(elem_size(v.dtype));
    std::pair<int64_t, int64_t> d[kern::kMaxRank];  // |stride|, size over the dims that move
    int m = 0;
    for (int i = 0; i < v.ndim; ++i)
        if (v.shape[i] > 1 && v.stride[i] != 0) d[m++] = {v.stride[i] < 0 ? -v.stride[i] : v.stride[i], v.shape[i]};
    for (int i = 1; i < m; ++i)  // insertion sort (rank <= 8; std::sort trips GCC's -Warray-bounds)
        for (int j = i; j > 0 && d[j] < d[j - 1]; --j) std::swap(d[j], d[j - 1]);
    int64_t reach = 0;  // offsets [0, reach] are all covered by the dims before i
    int dense = 0;
    while (dense < m && d[dense].first <= reach + 1) reach += d[dense].first * (d[dense].second - 1), ++dense;
    if (dense == m) {
        f(x.a, x.b);
        return true;
    }
    // Runs of `reach + 1` elements, one per combination of the remaining dims.
    int64_t runs = 1;
    for (int i = dense; i < m; ++i) {
        runs *= d[i].second;
        if (runs > kMaxRuns) return false;
    }
    int64_t idx[kern::kMaxRank] = {};
    for (int64_t r = 0; r < runs; ++r) {
        int64_t off = 0;
        for (int i = dense; i < m; ++i) off += idx[i] * d[i].first;
        f(x.a + uintptr_t(off * es), x.a + uintptr_t((off + reach + 1) * es));
        for (int i = dense; i < m && ++idx[i] == d[i].second; ++i) idx[i] = 0;
    }
    return true;
}

bool empty_view(const kern::View &v) { return !v.data || v.numel() == 0; }

// One view of an operator: bounds, liveness and (reads at launch: phase 1 reads nothing, the
// data may be copied in after it) initialisation. Returns true when the view was reported.
bool check_view(State &s, const char *suffix, const Executor &e, int slot, const kern::View &v, bool write,
                bool check_init) {
    const Extent x = extent_of(v);
    auto who = [&] { return arg_desc(e, suffix, slot, v); };
    const char *verb = write ? "writes" : "reads";
    bool ok = false;
    Block *bl = check_access(s, kOutOfBounds, who, verb, reinterpret_cast<uintptr_t>(v.data), x.a, x.b, &ok);
    if (!ok) return true;
    if (!bl || write || !check_init) return false;
    Range gap{0, 0};
    for_each_run(v, [&](uintptr_t a, uintptr_t b) {
        if (gap.second == 0) gap = unwritten(*bl, a, b);
    });
    if (gap.second == 0) return false;
    report(s, kUninit, "%s reads bytes [%" PRIdPTR ", %" PRIdPTR ") of %s: bytes [%zu, %zu) were never written",
           who().c_str(), intptr_t(x.a - bl->start), intptr_t(x.b - bl->start), block_desc(*bl).c_str(),
           size_t(gap.first), size_t(gap.second));
    return true;
}

void mark_view_written(State &s, const kern::View &v) {
    Block *bl = const_cast<Block *>(containing(s.live, reinterpret_cast<uintptr_t>(v.data)));
    if (!bl) return;
    const Extent x = extent_of(v);
    if (x.a < bl->start || x.b > bl->end()) return;
    if (!for_each_run(v, [&](uintptr_t a, uintptr_t b) { mark_written(*bl, a, b); })) mark_written(*bl, x.a, x.b);
}

bool identical(const kern::View &a, const kern::View &b) {
    return a.data == b.data && a.dtype == b.dtype && a.ndim == b.ndim && std::equal(a.shape, a.shape + a.ndim, b.shape) &&
           std::equal(a.stride, a.stride + a.ndim, b.stride);
}

bool reads(const Executor &e, int slot) { return slot < e.n_in && !(e.unread >> slot & 1); }

// ---- leaks ----

void add_object(State &s, const void *p, std::string what, const char *op = nullptr, uint64_t n = 0) {
    s.objects[p] = Object{++s.seq, std::move(what), op, n};
}

// Objects made after creation number `since` and still alive.
void report_leaks(State &s, const char *when, uint64_t since) {
    std::vector<std::pair<uint64_t, std::string>> found;
    for (auto &[p, o] : s.objects)
        if (!o.reported && o.seq > since) {
            o.reported = true;
            found.emplace_back(o.seq, o.op ? "executor (" + std::string(o.op) + "GetWorkspaceSize #" + std::to_string(o.n) + ")"
                                           : o.what);
        }
    std::sort(found.begin(), found.end());
    for (auto &[seq, what] : found) report(s, kLeak, "%s still live at %s", what.c_str(), when);
}

void at_exit() {
    State &s = state();
    std::lock_guard<std::mutex> lock(s.mu);
    report_leaks(s, "exit", 0);
    uint64_t total = 0;
    std::string parts;
    for (int k = 0; k < kKinds; ++k)
        if (s.counts[k]) {
            total += s.counts[k];
            parts += (parts.empty() ? "" : ", ") + std::string(kKindNames[k]) + " " + std::to_string(s.counts[k]);
        }
    if (total)
        std::fprintf(s.out, "ascendgrad memcheck: summary: %" PRIu64 " finding%s: %s\n", total, total == 1 ? "" : "s",
                     parts.c_str());
    std::fflush(s.out);
}

// Reads ASCENDGRAD_MEMCHECK when the library loads, before any constructor of a program's own
// objects can call the API.
__attribute__((constructor(101))) void init() {
    const char *v = std::getenv("ASCENDGRAD_MEMCHECK");
    if (!v || !*v || std::strcmp(v, "0") == 0) return;
    g_mode = std::strcmp(v, "abort") == 0 ? 2 : 1;
    State &s = state();
    if (const char *log = std::getenv("ASCENDGRAD_MEMCHECK_LOG"); log && *log) {
        // appended: processes started by one test run may share the file
        if (FILE *f = std::fopen(log, "a")) s.out = f;
        else std::fprintf(stderr, "ascendgrad memcheck: cannot open %s (%s): writing to stderr\n", log, std::strerror(errno));
    }
    std::atexit(at_exit);
}

}  // namespace

// ---- runtime ----

void on_malloc(const char *fn, void *p, size_t size) {
    State &s = state();
    std::lock_guard<std::mutex> lock(s.mu);
    Block b;
    b.start = reinterpret_cast<uintptr_t>(p);
    b.size = size;
    b.origin = ordinal(s, fn);
    char what[160];
    std::snprintf(what, sizeof what, "allocation of %zu bytes at %p (%s)", size, p, b.origin.c_str());
    add_object(s, p, what);
    s.live.emplace(b.start, std::move(b));
}

void on_free(const char *fn, void *p) {
    State &s = state();
    std::lock_guard<std::mutex> lock(s.mu);
    auto it = s.live.find(reinterpret_cast<uintptr_t>(p));
    if (it == s.live.end()) {  // allocated before memcheck was on: nothing to keep
        std::free(p);
        return;
    }
    Block b = std::move(it->second);
    s.live.erase(it);
    s.objects.erase(p);
    b.freed_by = ordinal(s, fn);
    b.free_no = ++s.frees;
    b.written.clear();
    std::memset(p, kPoison, b.size);
    s.quarantined += b.size;
    s.fifo.push_back(b.start);
    s.freed.emplace(b.start, std::move(b));
    while (s.quarantined > kQuarantineBytes && s.fifo.size() > 1) {
        auto old = s.freed.find(s.fifo.front());
        s.fifo.pop_front();
        s.quarantined -= old->second.size;
        std::free(reinterpret_cast<void *>(old->first));
        s.freed.erase(old);
    }
}

void on_invalid_free(const char *fn, void *p) {
    State &s = state();
    std::lock_guard<std::mutex> lock(s.mu);
    const uintptr_t a = reinterpret_cast<uintptr_t>(p);
    if (const Block *f = containing(s.freed, a)) {
        if (a == f->start)
            report(s, kBadFree, "%s(%p): a block of %zu bytes already freed by %s (allocated by %s)", fn, p, f->size,
                   f->freed_by.c_str(), f->origin.c_str());
        else
            report(s, kBadFree, "%s(%p): %zu bytes inside a block of %zu bytes at %p already freed by %s", fn, p,
                   size_t(a - f->start), f->size, reinterpret_cast<void *>(f->start), f->freed_by.c_str());
    } else if (const Block *b = containing(s.live, a)) {
        report(s, kBadFree, "%s(%p): %zu bytes inside %s, not its start", fn, p, size_t(a - b->start),
               block_desc(*b).c_str());
    } else {
        report(s, kBadFree, "%s(%p): not an address aclrtMalloc returned (%s)", fn, p, nearby(s, a).c_str());
    }
}

void on_memcpy(void *dst, size_t destMax, const void *src, size_t count, aclrtMemcpyKind kind) {
    State &s = state();
    std::lock_guard<std::mutex> lock(s.mu);
    const uintptr_t d = reinterpret_cast<uintptr_t>(dst), sr = reinterpret_cast<uintptr_t>(src);
    // ACL_MEMCPY_DEFAULT: the kind follows the addresses; host memory is what we do not know
    auto known = [&](uintptr_t p) {
        bool whole;
        return containing(s.live, p) || containing(s.freed, p) || host_containing(s, p, p + 1, &whole);
    };
    const bool dev_src = kind == ACL_MEMCPY_DEVICE_TO_HOST || kind == ACL_MEMCPY_DEVICE_TO_DEVICE ||
                         (kind == ACL_MEMCPY_DEFAULT && known(sr));
    const bool dev_dst = kind == ACL_MEMCPY_HOST_TO_DEVICE || kind == ACL_MEMCPY_DEVICE_TO_DEVICE ||
                         (kind == ACL_MEMCPY_DEFAULT && known(d));
    char extra[96];
    std::snprintf(extra, sizeof extra, " (count %zu, destMax %zu)", count, destMax);
    bool ok = false;
    if (dev_src) {
        auto who = [] { return std::string("aclrtMemcpy src"); };
        if (Block *bl = check_access(s, kCopyOverrun, who, "reads", sr, sr, sr + count, &ok, extra)) {
            const Range gap = unwritten(*bl, sr, sr + count);
            if (gap.second)
                report(s, kUninit, "aclrtMemcpy src reads bytes [%zu, %zu) of %s: bytes [%zu, %zu) were never written",
                       size_t(sr - bl->start), size_t(sr + count - bl->start), block_desc(*bl).c_str(),
                       size_t(gap.first), size_t(gap.second));
        }
    }
    if (dev_dst) {
        auto who = [] { return std::string("aclrtMemcpy dst"); };
        if (Block *bl = check_access(s, kCopyOverrun, who, "writes", d, d, d + count, &ok, extra))
            mark_written(*bl, d, d + count);
    }
}

void on_memset(void *dst, size_t count) {
    State &s = state();
    std::lock_guard<std::mutex> lock(s.mu);
    const uintptr_t d = reinterpret_cast<uintptr_t>(dst);
    bool ok = false;
    auto who = [] { return std::string("aclrtMemset devPtr"); };
    if (Block *bl = check_access(s, kCopyOverrun, who, "writes", d, d, d + count, &ok))
        mark_written(*bl, d, d + count);
}

void on_init() {
    State &s = state();
    std::lock_guard<std::mutex> lock(s.mu);
    s.init_seq = s.seq;
}

void on_finalize() {
    State &s = state();
    std::lock_guard<std::mutex> lock(s.mu);
    report_leaks(s, "aclFinalize", s.init_seq);  // what the program made before aclInit is not ACL's
}

// ---- objects ----

void on_create(const aclTensor *t) {
    State &s = state();
    std::lock_guard<std::mutex> lock(s.mu);
    add_object(s, t, std::string("tensor ") + (dtype_name(t->dtype) + 3) + " " + shape_str(t->view) + " (" +
                         ordinal(s, "aclCreateTensor") + ")");
}

void on_create(const aclScalar *sc) {
    State &s = state();
    std::lock_guard<std::mutex> lock(s.mu);
    add_object(s, sc, std::string("scalar ") + (dtype_name(sc->dtype) + 3) + " (" + ordinal(s, "aclCreateScalar") + ")");
}

void on_create(const aclIntArray *a) {
    State &s = state();
    std::lock_guard<std::mutex> lock(s.mu);
    add_object(s, a, "int array of " + std::to_string(a->values.size()) + " values (" +
                         ordinal(s, "aclCreateIntArray") + ")");
}

bool on_destroy(const void *object, const char *fn) {
    State &s = state();
    std::lock_guard<std::mutex> lock(s.mu);
    if (s.objects.erase(object)) return true;
    report(s, kBadFree, "%s(%p): not a live object (already destroyed, or never created)", fn, object);
    return false;
}

// ---- executors ----

uint32_t on_publish(const Executor &e, aclOpExecutor *handle) {
    State &s = state();
    std::lock_guard<std::mutex> lock(s.mu);
    add_object(s, handle, std::string(), e.op, ++s.calls[e.op]);  // counted per operator
    uint32_t reported = 0;
    if (e.empty) return 0;
    for (int i = 0; i < e.n_in + e.n_out; ++i) {
        const kern::View &v = e.io[i];
        if (empty_view(v) || (i < e.n_in && !reads(e, i))) continue;
        if (check_view(s, "GetWorkspaceSize", e, i, v, i >= e.n_in, false)) reported |= 1u << i;
    }
    return reported;
}

void on_launch(const Executor &e, const Executor::IO &io, uint32_t reported, const void *workspace) {
    State &s = state();
    std::lock_guard<std::mutex> lock(s.mu);
    if (e.workspace > 0) {
        const uintptr_t w = reinterpret_cast<uintptr_t>(workspace);
        bool ok;
        check_access(s, kOutOfBounds, [&] { return std::string(e.op) + " argument 'workspace'"; }, "uses", w, w,
                     w + e.workspace, &ok);
    }
    if (e.empty) return;
    for (int i = 0; i < e.n_in + e.n_out; ++i) {
        const kern::View &v = io[i];
        if (empty_view(v) || (i < e.n_in && !reads(e, i)) || (reported >> i & 1)) continue;
        check_view(s, "", e, i, v, i >= e.n_in, true);
    }
    // Outputs sharing memory with inputs: phase 1 rejects it, aclSet*TensorAddr can bring it back.
    for (int o = e.n_in; o < e.n_in + e.n_out; ++o) {
        if (empty_view(io[o])) continue;
        const Extent xo = extent_of(io[o]);
        for (int i = 0; i < e.n_in; ++i) {
            if (empty_view(io[i]) || !reads(e, i) || identical(io[o], io[i])) continue;
            const Extent xi = extent_of(io[i]);
            if (!(xo.a < xi.b && xi.a < xo.b)) continue;
            bool whole;
            const Block *bl = containing(s.live, xo.a);
            if (!bl) bl = host_containing(s, xo.a, xo.a + 1, &whole);
            const uintptr_t base = bl ? bl->start : 0;  // offsets within the allocation, else addresses
            report(s, kOverlap, "%s writes bytes [%" PRIdPTR ", %" PRIdPTR ") of %s, which %s reads as bytes [%" PRIdPTR
                   ", %" PRIdPTR "): only the identical view may share memory (in place)",
                   arg_desc(e, "", o, io[o]).c_str(), intptr_t(xo.a - base), intptr_t(xo.b - base),
                   bl ? block_desc(*bl).c_str() : "memory", arg_desc(e, "", i, io[i]).c_str() + std::strlen(e.op) + 1,
                   intptr_t(xi.a - base), intptr_t(xi.b - base));
        }
    }
    for (int o = e.n_in; o < e.n_in + e.n_out; ++o)
        if (!empty_view(io[o])) mark_view_written(s, io[o]);
}

uint64_t frees() {
    State &s = state();
    std::lock_guard<std::mutex> lock(s.mu);
    return s.frees;
}

void on_run(const Executor &e, const Executor::IO &io, uint64_t frees_at_launch) {
    State &s = state();
    std::lock_guard<std::mutex> lock(s.mu);
    if (s.frees == frees_at_launch || e.empty) return;
    for (int i = 0; i < e.n_in + e.n_out; ++i) {
        const kern::View &v = io[i];
        if (empty_view(v) || (i < e.n_in && !reads(e, i))) continue;
        const Block *f = containing(s.freed, reinterpret_cast<uintptr_t>(v.data));
        if (!f || f->free_no <= frees_at_launch) continue;
        const Extent x = extent_of(v);
        report(s, kUseAfterFree,
               "%s %s bytes [%" PRIdPTR ", %" PRIdPTR ") inside a block of %zu bytes at %p freed by %s (allocated by "
               "%s) after the launch, before its stream ran it",
               arg_desc(e, "", i, v).c_str(), i < e.n_in ? "reads" : "writes", intptr_t(x.a - f->start),
               intptr_t(x.b - f->start), f->size, reinterpret_cast<void *>(f->start), f->freed_by.c_str(),
               f->origin.c_str());
    }
}

void on_retire(aclOpExecutor *handle) {
    State &s = state();
    std::lock_guard<std::mutex> lock(s.mu);
    s.objects.erase(handle);
}

// ---- host memory ----

void register_host(const void *p, size_t size, const char *what) {
    if (!p || !size) return;
    State &s = state();
    std::lock_guard<std::mutex> lock(s.mu);
    Block b;
    b.start = reinterpret_cast<uintptr_t>(p);
    b.size = size;
    b.origin = what ? what : "registered host buffer";
    b.host = true;
    s.host.emplace(b.start, std::move(b));
}

void unregister_host(const void *p, size_t size) {
    if (!p || !size) return;
    State &s = state();
    std::lock_guard<std::mutex> lock(s.mu);
    auto [lo, hi] = s.host.equal_range(reinterpret_cast<uintptr_t>(p));
    for (auto it = lo; it != hi; ++it)
        if (it->second.size == size) {
            s.host.erase(it);
            return;
        }
}

}  // namespace ag::memcheck

extern "C" {

int ascendgradMemcheckEnabled(void) { return ag::memcheck::enabled() ? 1 : 0; }

void ascendgradMemcheckRegister(const void *ptr, size_t size, const char *name) {
    if (ag::memcheck::enabled()) ag::memcheck::register_host(ptr, size, name);
}

void ascendgradMemcheckUnregister(const void *ptr, size_t size) {
    if (ag::memcheck::enabled()) ag::memcheck::unregister_host(ptr, size);
}

}  // extern "C"
