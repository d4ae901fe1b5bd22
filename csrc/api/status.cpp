#include "status.h"

#include <cstdarg>
#include <cstdio>

#include "acl/acl_rt.h"

namespace ag {
namespace {
thread_local std::string t_pending;    // newest message, not yet read
thread_local bool t_has_pending = false;
thread_local std::string t_returned;   // what the last aclGetRecentErrMsg handed out
}  // namespace

int fail(int status, const char *fmt, ...) {
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    std::vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    t_pending = buf;
    t_has_pending = true;
    return status;
}

std::string take_message() {
    t_has_pending = false;
    return std::move(t_pending);
}

void set_message(std::string msg) {
    t_pending = std::move(msg);
    t_has_pending = true;
}

}  // namespace ag

extern "C" const char *aclGetRecentErrMsg(void) {
    if (!ag::t_has_pending) return nullptr;
    ag::t_returned = ag::take_message();
    return ag::t_returned.c_str();
}
