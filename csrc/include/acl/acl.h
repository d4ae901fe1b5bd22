/* ascendgrad: umbrella header, as CANN's acl/acl.h. */
#ifndef ASCENDGRAD_ACL_ACL_H_
#define ASCENDGRAD_ACL_ACL_H_

#include "acl/acl_base.h"
#include "acl/acl_rt.h"

#endif /* ASCENDGRAD_ACL_ACL_H_ */
