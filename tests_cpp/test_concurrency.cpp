// Threads, streams and fork(): every operator from many threads at once gives the serial results;
// one stream fed from several threads; executors made on one thread and run on another; the
// executor and stream registries under churn (run under TSan by tools/test.sh); a forked child
// computes correctly after its parent ran parallel kernels, and sees its parent's streams as not
// live (an error, never a hang).
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <thread>

#include "op_table.h"

using namespace agtest;

namespace {

constexpr int kThreads = 4;

// out's storage after a synchronous run of a fresh valid call.
std::vector<unsigned char> serial_result(const OpDef &op) {
    Call c(op);
    uint64_t ws = 0;
    aclOpExecutor *e = nullptr;
    EXPECT_EQ(op.phase1(c.t, c.o, &ws, &e), ACLNN_SUCCESS) << take_error();
    EXPECT_EQ(run_phase2(op.phase2, ws, e), ACLNN_SUCCESS) << take_error();
    return c.owned.back().storage_bytes();
}

std::vector<std::vector<unsigned char>> serial_results() {
    std::vector<std::vector<unsigned char>> r;
    for (const OpDef &op : ops()) r.push_back(serial_result(op));
    return r;
}

TEST(Concurrency, EveryOperatorFromManyThreadsAtOnce) {
    const auto want = serial_results();
    std::atomic<int> wrong{0}, lost_messages{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t)
        threads.emplace_back([&, t] {
            for (int round = 0; round < 25; ++round)
                for (size_t k = 0; k < ops().size(); ++k) {
                    const OpDef &op = ops()[(k + size_t(t)) % ops().size()];
                    Call c(op);
                    uint64_t ws = 0;
                    aclOpExecutor *e = nullptr;
                    // a failing call in between: its message stays with this thread
                    if (op.phase1(c.t, c.o, nullptr, &e) == ACLNN_SUCCESS) ++wrong;
                    const char *m = aclGetRecentErrMsg();
                    if (!m || std::string(m).find(op.name) == std::string::npos) ++lost_messages;
                    if (op.phase1(c.t, c.o, &ws, &e) != ACLNN_SUCCESS || op.phase2(nullptr, ws, e, nullptr) != 0 ||
                        c.owned.back().storage_bytes() != want[(k + size_t(t)) % ops().size()])
                        ++wrong;
                }
        });
    for (std::thread &th : threads) th.join();
    EXPECT_EQ(wrong, 0);
    EXPECT_EQ(lost_messages, 0);
}

TEST(Concurrency, OneStreamFedFromSeveralThreads) {
    const auto want = serial_results();
    aclrtStream stream = nullptr;
    ASSERT_EQ(aclrtCreateStream(&stream), ACL_SUCCESS);
    // every thread's calls, alive until the stream is synchronized
    std::vector<std::deque<Call>> calls(kThreads);
    std::atomic<int> failed{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t)
        threads.emplace_back([&, t] {
            for (int round = 0; round < 10; ++round)
                for (const OpDef &op : ops()) {
                    Call &c = calls[size_t(t)].emplace_back(op);
                    uint64_t ws = 0;
                    aclOpExecutor *e = nullptr;
                    if (op.phase1(c.t, c.o, &ws, &e) != ACLNN_SUCCESS || op.phase2(nullptr, ws, e, stream) != 0)
                        ++failed;
                }
        });
    for (std::thread &th : threads) th.join();
    EXPECT_EQ(aclrtSynchronizeStream(stream), ACL_SUCCESS) << take_error();
    EXPECT_EQ(aclrtDestroyStream(stream), ACL_SUCCESS);
    EXPECT_EQ(failed, 0);
    for (const auto &per_thread : calls)
        for (const Call &c : per_thread)
            EXPECT_EQ(c.owned.back().storage_bytes(), want[size_t(&c.op - ops().data())]) << c.op.name;
}

TEST(Concurrency, ExecutorsMadeOnOneThreadRunOnAnother) {
    const auto want = serial_results();
    std::deque<Call> calls;
    for (const OpDef &op : ops()) calls.emplace_back(op);
    std::vector<aclOpExecutor *> execs(calls.size(), nullptr);
    std::vector<uint64_t> sizes(calls.size(), 0);
    std::thread([&] {
        for (size_t i = 0; i < calls.size(); ++i)
            EXPECT_EQ(calls[i].op.phase1(calls[i].t, calls[i].o, &sizes[i], &execs[i]), ACLNN_SUCCESS);
    }).join();
    aclrtStream stream = nullptr;
    std::thread([&] { ASSERT_EQ(aclrtCreateStream(&stream), ACL_SUCCESS); }).join();
    std::thread([&] {
        // half synchronously, half on the stream made by a third thread
        for (size_t i = 0; i < calls.size(); ++i)
            EXPECT_EQ(calls[i].op.phase2(nullptr, sizes[i], execs[i], i % 2 ? stream : nullptr), ACLNN_SUCCESS);
        EXPECT_EQ(aclrtSynchronizeStream(stream), ACL_SUCCESS);
    }).join();
    EXPECT_EQ(aclrtDestroyStream(stream), ACL_SUCCESS);
    for (size_t i = 0; i < calls.size(); ++i) EXPECT_EQ(calls[i].owned.back().storage_bytes(), want[i]) << i;
}

// A single-use executor launched from several threads at once runs exactly once: the others
// find it consumed (161002), however the launches interleave.
TEST(Concurrency, SingleUseExecutorRacedRunsOnce) {
    const OpDef &op = ops()[0];
    for (int round = 0; round < 50; ++round) {
        Call c(op);
        uint64_t ws = 0;
        aclOpExecutor *e = nullptr;
        ASSERT_EQ(op.phase1(c.t, c.o, &ws, &e), ACLNN_SUCCESS) << take_error();
        std::atomic<int> ready{0}, ran{0}, refused{0};
        std::vector<std::thread> threads;
        for (int t = 0; t < kThreads; ++t)
            threads.emplace_back([&] {
                ++ready;
                while (ready < kThreads) std::this_thread::yield();
                const aclnnStatus s = op.phase2(nullptr, ws, e, nullptr);
                (s == ACLNN_SUCCESS ? ran : refused) += s == ACLNN_SUCCESS || s == ACLNN_ERR_PARAM_INVALID;
                take_error();
            });
        for (std::thread &th : threads) th.join();
        EXPECT_EQ(ran, 1) << "round " << round;
        EXPECT_EQ(refused, kThreads - 1) << "round " << round;
    }
}

// Executors and streams made, used and destroyed from several threads at once.
TEST(Concurrency, RegistriesUnderChurn) {
    const OpDef &op = ops()[0];
    std::atomic<int> failed{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t)
        threads.emplace_back([&] {
            Call c(op);
            for (int round = 0; round < 20; ++round) {
                aclrtStream stream = nullptr;
                uint64_t ws = 0;
                aclOpExecutor *e = nullptr;
                failed += aclrtCreateStream(&stream) != ACL_SUCCESS;
                failed += op.phase1(c.t, c.o, &ws, &e) != ACLNN_SUCCESS;
                failed += aclSetAclOpExecutorRepeatable(e) != ACLNN_SUCCESS;
                for (int run = 0; run < 3; ++run) failed += op.phase2(nullptr, ws, e, stream) != ACLNN_SUCCESS;
                failed += aclDestroyAclOpExecutor(e) != ACLNN_SUCCESS;  // queued runs keep it alive
                failed += aclrtDestroyStream(stream) != ACL_SUCCESS;     // finishes them first
                failed += aclDestroyAclOpExecutor(e) != ACLNN_ERR_PARAM_INVALID;
                take_error();
            }
        });
    for (std::thread &th : threads) th.join();
    EXPECT_EQ(failed, 0);
}

// ---- fork() ----

// Runs `child` in a forked child (which a watchdog alarm kills if it hangs) and returns its exit
// code: 0 when every check there passed, else the number of the first failed one.
int in_child(const std::function<int()> &child) {
    const pid_t pid = fork();
    if (pid == 0) {
        alarm(60);
        _exit(child());
    }
    int status = 0;
    EXPECT_EQ(waitpid(pid, &status, 0), pid);
    if (WIFSIGNALED(status)) ADD_FAILURE() << "the child died of signal " << WTERMSIG(status) << " (14: it hung)";
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// LogSigmoidBackward over enough elements to run in parallel.
struct Big {
    HostTensor g{{256, 256}, ACL_FLOAT}, x{{256, 256}, ACL_FLOAT}, buffer{{1}, ACL_FLOAT}, out{{256, 256}, ACL_FLOAT};
    Big() {
        std::mt19937_64 rng(5);
        g.fill_random(rng, -1, 1);
        x.fill_random(rng, -8, 8);
    }
    aclnnStatus run(aclrtStream stream = nullptr) {
        uint64_t ws = 0;
        aclOpExecutor *e = nullptr;
        const aclnnStatus s = aclnnLogSigmoidBackwardGetWorkspaceSize(g.t(), x.t(), buffer.t(), out.t(), &ws, &e);
        return s ? s : aclnnLogSigmoidBackward(nullptr, ws, e, stream);
    }
};

TEST(Fork, ChildComputesAfterParentRanParallelKernels) {
    ThreadCount threads(2);
    Big big;
    ASSERT_EQ(big.run(), ACLNN_SUCCESS);
    const auto want = big.out.storage_bytes();
    EXPECT_EQ(in_child([&] {
                  big.out.fill_storage(0);
                  if (big.run() != ACLNN_SUCCESS) return 1;
                  if (big.out.storage_bytes() != want) return 2;
                  return ascendgradGetNumThreads() == 1 ? 0 : 3;  // kernels are serial in a child
              }),
              0);
    big.out.fill_storage(0);  // the parent still runs in parallel
    ASSERT_EQ(big.run(), ACLNN_SUCCESS);
    EXPECT_EQ(big.out.storage_bytes(), want);
    EXPECT_EQ(ascendgradGetNumThreads(), 2);
}

TEST(Fork, ParentStreamsAreNotLiveInTheChild) {
    Big big;
    aclrtStream stream = nullptr;
    ASSERT_EQ(aclrtCreateStream(&stream), ACL_SUCCESS);
    ASSERT_EQ(big.run(stream), ACLNN_SUCCESS);  // the worker has run
    ASSERT_EQ(aclrtSynchronizeStream(stream), ACL_SUCCESS);
    const auto want = big.out.storage_bytes();
    EXPECT_EQ(in_child([&] {
                  big.out.fill_storage(0);
                  const auto before = big.out.storage_bytes();
                  if (big.run(stream) != ACLNN_ERR_PARAM_INVALID) return 1;
                  if (take_error().find("fork()") == std::string::npos) return 2;
                  if (big.out.storage_bytes() != before) return 3;
                  if (aclrtSynchronizeStream(stream) != ACL_ERROR_INVALID_PARAM) return 4;
                  if (aclrtDestroyStream(stream) != ACL_ERROR_INVALID_PARAM) return 5;
                  aclrtStream own = nullptr;  // the child's own streams work
                  if (aclrtCreateStream(&own) != ACL_SUCCESS || big.run(own) != ACLNN_SUCCESS) return 6;
                  if (aclrtSynchronizeStream(own) != ACL_SUCCESS || aclrtDestroyStream(own) != ACL_SUCCESS) return 7;
                  return big.out.storage_bytes() == want ? 0 : 8;
              }),
              0);
    big.out.fill_storage(0);  // and the parent's stream still works
    ASSERT_EQ(big.run(stream), ACLNN_SUCCESS);
    EXPECT_EQ(aclrtSynchronizeStream(stream), ACL_SUCCESS);
    EXPECT_EQ(aclrtDestroyStream(stream), ACL_SUCCESS);
    EXPECT_EQ(big.out.storage_bytes(), want);
}

}  // namespace
