// Softmax backward's loop orders over contiguous lines, run directly (softmax_orders.cpp): each
// line summed then written (two passes), pipelined (a line written while the next is summed), and
// two passes with streaming stores. The kernel picks one by CPU vendor, line length and where the
// data sit, so on any one machine the others go unused; every order must give the same bits on
// every ISA (the same additions in the same order for each line's sum, one expression per
// element), write nothing outside the lines, and agree with the float64 reference.
#include "test_util.h"

namespace ag::kern {
#define AG_ORDERS_DECLARE(isa)                                                                              \
    namespace orders_##isa {                                                                                \
    void softmax_lines(DType dt, int order, const void *g, const void *y, void *out, int64_t rows, int64_t n, \
                       int64_t so);                                                                         \
    }
AG_ORDERS_DECLARE(baseline)
#if defined(AG_ORDERS_AVX2)
AG_ORDERS_DECLARE(avx2)
#endif
#if defined(AG_ORDERS_AVX512)
AG_ORDERS_DECLARE(avx512)
#endif
#if defined(AG_ORDERS_NEON)
AG_ORDERS_DECLARE(neon)
#endif
}  // namespace ag::kern

namespace {

using namespace agtest;
using ag::kern::DType;
using ag::kern::Isa;
using Lines = void (*)(DType, int, const void *, const void *, void *, int64_t, int64_t, int64_t);

const std::pair<Isa, Lines> kCompiled[] = {
    {Isa::Baseline, &ag::kern::orders_baseline::softmax_lines},
#if defined(AG_ORDERS_AVX2)
    {Isa::Avx2, &ag::kern::orders_avx2::softmax_lines},
#endif
#if defined(AG_ORDERS_AVX512)
    {Isa::Avx512, &ag::kern::orders_avx512::softmax_lines},
#endif
#if defined(AG_ORDERS_NEON)
    {Isa::Neon, &ag::kern::orders_neon::softmax_lines},
#endif
};

bool cpu_has(Isa isa) {
    const Isa before = ag::kern::active_isa();
    const bool yes = ag::kern::set_isa(isa);
    ag::kern::set_isa(before);
    return yes;
}

constexpr const char *kOrders[] = {"two passes", "pipelined", "two passes, streamed"};
constexpr unsigned char kGuard = 0xa5;

// `bytes` from a 64-byte boundary plus `shift`, in storage kept in `keep`; every byte kGuard
char *at(std::vector<std::vector<char>> &keep, size_t bytes, size_t shift) {
    keep.emplace_back(bytes + shift + 64, char(kGuard));
    char *p = keep.back().data();
    return p + (64 - reinterpret_cast<uintptr_t>(p) % 64) % 64 + shift;
}

TEST(SoftmaxOrders, SameBitsInEveryOrderOnEveryIsa) {
    const std::pair<aclDataType, DType> dtypes[] = {
        {ACL_FLOAT, DType::F32}, {ACL_DOUBLE, DType::F64}, {ACL_FLOAT16, DType::F16}, {ACL_BF16, DType::BF16}};
    std::mt19937 rng(7);
    std::normal_distribution<double> normal;
    std::uniform_real_distribution<double> uniform;
    int ran = 0;
    for (const auto &[isa, lines] : kCompiled) {
        if (!cpu_has(isa)) {
            std::printf("%s: not on this CPU\n", ag::kern::isa_name(isa));
            continue;
        }
        ++ran;
        for (const auto &[adt, dt] : dtypes) {
            const size_t es = aclDataTypeSize(adt);
            const double eps = eps_of(compute_dtype(adt)), eps_out = eps_of(adt);
            // lines shorter than a vector to several pages; rows 0-2 finite, 3 with a NaN, 4 an infinity
            for (int64_t n : {1, 7, 33, 100, 1000, 4096, 4101, 8195}) {
                const int64_t rows = 5;
                std::vector<std::vector<char>> keep;
                char *g = at(keep, size_t(rows * n) * es, es), *y = at(keep, size_t(rows * n) * es, es);
                std::vector<double> gd(size_t(rows * n)), yd(gd.size());
                for (size_t i = 0; i < gd.size(); ++i) {
                    write_elem(g + i * es, adt, normal(rng));
                    write_elem(y + i * es, adt, uniform(rng));
                }
                write_elem(g + size_t(3 * n + 7 % n) * es, adt, std::nan(""));
                write_elem(y + size_t(4 * n + n / 2) * es, adt, INFINITY);
                for (size_t i = 0; i < gd.size(); ++i) gd[i] = read_elem(g + i * es, adt), yd[i] = read_elem(y + i * es, adt);
                // out at a 64-byte boundary, 1 element past it and 16 bytes past it; rows n or n + 3 apart
                for (size_t shift : {size_t(0), es, size_t(16)}) {
                    for (int64_t so : {n, n + 3}) {
                        const size_t bytes = size_t((rows - 1) * so + n) * es;
                        char *outs[3];
                        for (int o = 0; o < 3; ++o) {
                            outs[o] = at(keep, bytes, shift);
                            lines(dt, o, g, y, outs[o], rows, n, so);
                        }
                        SCOPED_TRACE(std::string(ag::kern::isa_name(isa)) + " " + dtype_str(adt) + " n=" +
                                     std::to_string(n) + " out +" + std::to_string(shift) + " B, rows " +
                                     std::to_string(so) + " apart");
                        for (int o = 0; o < 3; ++o) {
                            // nothing written outside the lines (nor before or after them)
                            const char *base = keep[keep.size() - 3 + o].data();
                            const char *end = base + keep[keep.size() - 3 + o].size();
                            int64_t outside = 0;
                            for (const char *p = base; p < end; ++p) {
                                const int64_t e = int64_t(p - outs[o]) / int64_t(es);
                                const bool in = p >= outs[o] && p < outs[o] + bytes && e % so < n;
                                outside += !in && static_cast<unsigned char>(*p) != kGuard;
                            }
                            EXPECT_EQ(outside, 0) << kOrders[o] << ": bytes written outside the lines";
                            if (o == 0) continue;
                            for (int64_t r = 0; r < rows; ++r)
                                EXPECT_EQ(std::memcmp(outs[o] + size_t(r * so) * es, outs[0] + size_t(r * so) * es, size_t(n) * es), 0)
                                    << kOrders[o] << " differs from two passes in row " << r;
                        }
                        // rows 0-2 against float64: y (g - sum g y), the sum's rounding scaled by n
                        for (int64_t r = 0; r < 3; ++r) {
                            double s = 0, a = 0;
                            for (int64_t k = 0; k < n; ++k) s += gd[r * n + k] * yd[r * n + k], a += std::fabs(gd[r * n + k] * yd[r * n + k]);
                            for (int64_t k = 0; k < n; ++k) {
                                const double gk = gd[r * n + k], yk = yd[r * n + k], ref = yk * (gk - s);
                                const double tol = std::fabs(ref) * eps_out + denorm_min_of(adt) +
                                                   std::fabs(yk) * (std::fabs(gk) + a) * double(n + 2) * eps;
                                const double got = read_elem(outs[0] + size_t(r * so + k) * es, adt);
                                ASSERT_LE(std::fabs(got - ref), tol) << "row " << r << ", element " << k;
                            }
                        }
                        // the NaN's row all NaN; the infinity's row: y = inf makes its element non-finite
                        for (int64_t k = 0; k < n; ++k)
                            ASSERT_TRUE(std::isnan(read_elem(outs[0] + size_t(3 * so + k) * es, adt))) << "NaN row, element " << k;
                        EXPECT_FALSE(std::isfinite(read_elem(outs[0] + size_t(4 * so + n / 2) * es, adt)));
                    }
                }
            }
        }
    }
    EXPECT_GE(ran, 1);
}

}  // namespace
