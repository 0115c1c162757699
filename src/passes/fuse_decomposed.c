/* placeholder, replaced below */
#include "plan/plan.h"
st_status st_pass_fuse_decomposed(st_plan *p) { (void)p; return ST_OK; }
