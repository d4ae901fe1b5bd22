#include "stream.h"

#include <pthread.h>
#include <unistd.h>

#include <condition_variable>
#include <deque>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>

#include "acl/acl_rt.h"
#include "status.h"

namespace ag {

struct Stream {
    std::mutex mu;
    std::condition_variable wake, idle;
    std::deque<std::function<int()>> queue;
    bool busy = false, stopping = false;
    int first_error = 0;           // first failure since the last synchronize
    std::string first_message;
    // The worker exists only in this process: a child of fork() sees the stream as not live
    // (an error, never a wait on a thread that is not there).
    const pid_t pid = getpid();
    std::thread worker;

    Stream() : worker([this] { loop(); }) {}

    void loop() {
        std::unique_lock<std::mutex> lock(mu);
        for (;;) {
            wake.wait(lock, [&] { return stopping || !queue.empty(); });
            if (queue.empty()) return;  // stopping, and everything queued is done
            std::function<int()> work = std::move(queue.front());
            queue.pop_front();
            busy = true;
            lock.unlock();
            int status = guarded("stream worker", [&] { return work(); });
            std::string msg = status ? take_message() : std::string();
            lock.lock();
            if (status && !first_error) {
                first_error = status;
                first_message = std::move(msg);
            }
            busy = false;
            if (queue.empty()) idle.notify_all();
        }
    }

    int synchronize() {
        std::unique_lock<std::mutex> lock(mu);
        idle.wait(lock, [&] { return queue.empty() && !busy; });
        const int err = first_error;
        if (err) set_message(std::move(first_message));
        first_error = 0;
        first_message.clear();
        return err;
    }

    void stop() {
        {
            std::lock_guard<std::mutex> lock(mu);
            stopping = true;
        }
        wake.notify_all();
        if (worker.joinable()) worker.join();
    }
};

namespace {

struct Streams {
    std::mutex mu;
    std::unordered_map<uintptr_t, std::shared_ptr<Stream>> live;
    uintptr_t next = 1;
};

Streams &streams() {
    // never destroyed: workers may run during static teardown
    static Streams *s = [] {
        // held across fork(), so that the child's copy is consistent and unlocked
        pthread_atfork([] { streams().mu.lock(); }, [] { streams().mu.unlock(); }, [] { streams().mu.unlock(); });
        return new Streams;
    }();
    return *s;
}

std::shared_ptr<Stream> take_stream(aclrtStream handle) {
    Streams &s = streams();
    std::lock_guard<std::mutex> lock(s.mu);
    auto it = s.live.find(reinterpret_cast<uintptr_t>(handle));
    // a parent's stream stays in the child's registry: destroying it would join a thread that
    // does not exist here
    if (it == s.live.end() || it->second->pid != getpid()) return nullptr;
    std::shared_ptr<Stream> st = std::move(it->second);
    s.live.erase(it);
    return st;
}

}  // namespace

std::shared_ptr<Stream> find_stream(aclrtStream handle) {
    Streams &s = streams();
    std::lock_guard<std::mutex> lock(s.mu);
    auto it = s.live.find(reinterpret_cast<uintptr_t>(handle));
    return it == s.live.end() || it->second->pid != getpid() ? nullptr : it->second;
}

bool submit(Stream &s, std::function<int()> work) {
    {
        std::lock_guard<std::mutex> lock(s.mu);
        if (s.stopping) return false;
        s.queue.push_back(std::move(work));
    }
    s.wake.notify_one();
    return true;
}

}  // namespace ag

using ag::fail;

extern "C" {

aclError aclrtCreateStream(aclrtStream *stream) {
    if (!stream) return fail(ACL_ERROR_INVALID_PARAM, "aclrtCreateStream: stream is NULL.");
    return ag::guarded("aclrtCreateStream", [&]() -> aclError {
        auto st = std::make_shared<ag::Stream>();
        ag::Streams &s = ag::streams();
        std::lock_guard<std::mutex> lock(s.mu);
        const uintptr_t key = (s.next++) << 4;
        s.live.emplace(key, std::move(st));
        *stream = reinterpret_cast<aclrtStream>(key);
        return ACL_SUCCESS;
    });
}

aclError aclrtDestroyStream(aclrtStream stream) {
    return ag::guarded("aclrtDestroyStream", [&]() -> aclError {
        std::shared_ptr<ag::Stream> st = ag::take_stream(stream);
        if (!st) return fail(ACL_ERROR_INVALID_PARAM, "aclrtDestroyStream: %p %s.", stream, ag::kNotLiveStream);
        st->stop();  // finishes the queued work first
        return ACL_SUCCESS;
    });
}

aclError aclrtSynchronizeStream(aclrtStream stream) {
    if (!stream) return ACL_SUCCESS;  // the NULL stream runs work synchronously
    return ag::guarded("aclrtSynchronizeStream", [&]() -> aclError {
        std::shared_ptr<ag::Stream> st = ag::find_stream(stream);
        if (!st) return fail(ACL_ERROR_INVALID_PARAM, "aclrtSynchronizeStream: %p %s.", stream, ag::kNotLiveStream);
        return st->synchronize();
    });
}

}  // extern "C"
