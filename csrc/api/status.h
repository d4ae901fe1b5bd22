// Status + message plumbing of the API layer: every failing call leaves one message for the
// calling thread (aclGetRecentErrMsg), and no C++ exception leaves an exported function.
#pragma once

#include <exception>
#include <string>
#include <type_traits>

#include "aclnn/acl_meta.h"

namespace ag {

// Stores the thread's newest error message (printf format) and returns `status`.
int fail(int status, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

// The pending message of this thread, taken (moved out) so another thread can rethrow it.
std::string take_message();
void set_message(std::string msg);

// Runs f() and turns any escaping exception into ACLNN_ERR_INNER (or a NULL result).
template <class F>
auto guarded(const char *where, F &&f) noexcept -> decltype(f()) {
    try {
        return f();
    } catch (const std::exception &e) {
        fail(ACLNN_ERR_INNER, "%s: internal error: %s", where, e.what());
    } catch (...) {
        fail(ACLNN_ERR_INNER, "%s: internal error", where);
    }
    if constexpr (std::is_pointer_v<decltype(f())>) return nullptr;
    else return static_cast<decltype(f())>(ACLNN_ERR_INNER);
}

}  // namespace ag
