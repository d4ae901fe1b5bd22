// Softmax backward's contiguous lines, the loop orders side by side: each line summed, then
// written (two passes), the same with the writes by streaming stores (`stream_run`, where the
// output's alignment allows), or pipelined (a line written while the next is summed). The kernel's
// `run` picks one by where the data sit (softmax_backward.cpp); this times all on one machine, the
// inputs 16 bytes past a page boundary (where NumPy's large arrays start), the output there too
// (NumPy's `out=`), at a page boundary (the result pool's) and 2 KiB further (its stores then never
// share the low 12 address bits of the loads beside them), in rounds that interleave every
// variant: "warm" is the fastest of 10 back-to-back calls, "after flush" of 2 calls after writing
// 512 MiB elsewhere. Built from the kernel's source, once per ISA path:
//
//   F="-O3 -DNDEBUG -std=c++17 -fno-math-errno -ffp-contract=off -fopenmp -Icsrc"
//   g++ $F -mavx2 -mfma -mf16c -DAG_ISA_NS=avx2 bench/softmax_lines.cpp csrc/kernels/parallel.cpp -o lines_avx2
//   (baseline: no -m flags; avx512: -mavx512f -mavx512dq -mavx512bw -mavx512vl -mavx2 -mfma -mf16c)
//   ./lines_avx2 [threads=2] [rounds=4] [dtypes=f32,bf16,f16,f64] [rows n]   (default sizes 2048x4096, 256x4096)
#include "kernels/softmax_backward.cpp"

#include <chrono>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <random>
#include <vector>

#define AG_NAME2(x) #x
#define AG_NAME(x) AG_NAME2(x)

int64_t ag::kern::View::numel() const {  // (dispatch.cpp's, which this does not link)
    int64_t n = 1;
    for (int i = 0; i < ndim; ++i) n *= shape[i];
    return n;
}

namespace {
using namespace ag::kern;

template <class T> T from_float(float f);
template <> float from_float<float>(float f) { return f; }
template <> double from_float<double>(float f) { return f; }
template <> half_t from_float<half_t>(float f) { return half_t{float_to_half(f)}; }
template <> bf16_t from_float<bf16_t>(float f) { return bf16_t{float_to_bf16(f)}; }

// `bytes` at `offset` past a page boundary, every page touched
char *at_offset(std::vector<std::vector<char>> &keep, size_t bytes, size_t offset) {
    keep.emplace_back(bytes + 8192, 0);
    char *p = keep.back().data();
    return p + (4096 - reinterpret_cast<uintptr_t>(p) % 4096) % 4096 + offset;
}

double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

template <class T>
void measure(const char *dtype, int64_t rows, int64_t n, int threads, int rounds) {
    set_num_threads(threads);
    const int64_t N = rows * n;
    std::vector<std::vector<char>> keep;
    T *g = reinterpret_cast<T *>(at_offset(keep, N * sizeof(T), 16));
    T *y = reinterpret_cast<T *>(at_offset(keep, N * sizeof(T), 16));
    std::mt19937 rng(1);
    std::normal_distribution<float> normal;
    std::uniform_real_distribution<float> uniform;
    for (int64_t i = 0; i < N; ++i) g[i] = from_float<T>(normal(rng)), y[i] = from_float<T>(uniform(rng));
    constexpr size_t offsets[] = {16, 0, 2064};
    constexpr int kOuts = int(std::size(offsets));
    T *outs[kOuts];
    for (int o = 0; o < kOuts; ++o) outs[o] = reinterpret_cast<T *>(at_offset(keep, N * sizeof(T), offsets[o]));
    std::vector<char> flush(size_t(512) << 20, 1);
    const int64_t shape[2] = {rows, n}, st[2] = {n, 1};
    const int64_t *strides[3] = {st, st, st};
    const Iter<3> it = make_iter<3>(shape, 2, strides, 1);
    const int64_t sd[3] = {1, 1, 1};
    constexpr const char *kOrders[] = {"two passes", "pipelined", "two passes, streamed"};
    constexpr int kN = int(std::size(kOrders));
    std::vector<double> warm[kOuts][kN], cold[kOuts][kN];
    for (int round = 0; round < rounds; ++round)
        for (int o = 0; o < kOuts; ++o)
            for (int order = 0; order < kN; ++order) {
                const auto call = [&] {
                    parallel_for(rows, N, [&](int64_t b, int64_t e) {
                        lines<true>(g, y, outs[o], it, b, e, n, sd, order == 1, order == 2);
                    });
                };
                call();
                double w = 1e9, c = 1e9;
                for (int k = 0; k < 10; ++k) {
                    const double t = now();
                    call();
                    w = std::min(w, now() - t);
                }
                for (int k = 0; k < 2; ++k) {
                    for (size_t i = 0; i < flush.size(); i += 64) flush[i]++;
                    const double t = now();
                    call();
                    c = std::min(c, now() - t);
                }
                warm[o][order].push_back(w);
                cold[o][order].push_back(c);
            }
    for (int o = 0; o < kOuts; ++o)
        for (int p = 0; p < kN; ++p)
            std::printf("%s %s %lldx%lld, %d threads, inputs +16 B, out +%zu B, %s: warm min %.3f med %.3f | after flush min %.3f med %.3f ms\n",
                        AG_NAME(AG_ISA_NS), dtype, (long long)rows, (long long)n, threads, offsets[o],
                        kOrders[p], *std::min_element(warm[o][p].begin(), warm[o][p].end()) * 1e3,
                        median(warm[o][p]) * 1e3, *std::min_element(cold[o][p].begin(), cold[o][p].end()) * 1e3,
                        median(cold[o][p]) * 1e3);
}
}  // namespace

int main(int argc, char **argv) {
    const int threads = argc > 1 ? std::atoi(argv[1]) : 2, rounds = argc > 2 ? std::atoi(argv[2]) : 4;
    const std::string dtypes = std::string(",") + (argc > 3 ? argv[3] : "f32,bf16,f16") + ",";
    std::vector<std::pair<int64_t, int64_t>> sizes = {{2048, 4096}, {256, 4096}};
    if (argc > 5) sizes = {{std::atoll(argv[4]), std::atoll(argv[5])}};
    for (const auto &[rows, n] : sizes) {
        if (dtypes.find(",f32,") != std::string::npos) measure<float>("f32", rows, n, threads, rounds);
        if (dtypes.find(",bf16,") != std::string::npos) measure<bf16_t>("bf16", rows, n, threads, rounds);
        if (dtypes.find(",f16,") != std::string::npos) measure<half_t>("f16", rows, n, threads, rounds);
        if (dtypes.find(",f64,") != std::string::npos) measure<double>("f64", rows, n, threads, rounds);
    }
}
