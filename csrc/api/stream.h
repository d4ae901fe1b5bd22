// Streams: a worker thread per created stream runs submitted work in order; synchronize waits
// and reports the first failure since the previous synchronize.
#pragma once

#include <functional>
#include <memory>

#include "acl/acl_base.h"

namespace ag {

struct Stream;

// The stream behind a handle, or nullptr when the handle is not a live stream.
std::shared_ptr<Stream> find_stream(aclrtStream handle);

// Queues work; false when the stream is being destroyed. work returns a status; a failure's
// message is taken from the worker's thread-local slot.
bool submit(Stream &s, std::function<int()> work);

}  // namespace ag
