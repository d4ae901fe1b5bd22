// Streams: a worker thread per created stream runs submitted work in order; synchronize waits
// and reports the first failure since the previous synchronize.
#pragma once

#include <functional>
#include <memory>

#include "acl/acl_base.h"

namespace ag {

struct Stream;

// What a handle that find_stream rejects is (messages).
constexpr const char *kNotLiveStream = "is not a live stream (destroyed, or created before fork() in a parent process)";

// The stream behind a handle, or nullptr when the handle is not a live stream. A child of fork()
// has no stream of its parent's: their workers do not exist there.
std::shared_ptr<Stream> find_stream(aclrtStream handle);

// Queues work; false when the stream is being destroyed. work returns a status; a failure's
// message is taken from the worker's thread-local slot.
bool submit(Stream &s, std::function<int()> work);

}  // namespace ag
