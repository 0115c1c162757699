/* status.c — the thread-local error message behind st_last_error(). */
#include "core/status.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static _Thread_local char st_msg[ST_ERROR_MAX];
static _Thread_local st_status st_code;

st_status st_error(st_status code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(st_msg, sizeof st_msg, fmt, ap);
    va_end(ap);
    st_code = code;
    return code;
}

st_status st_error_prefix(st_status code, const char *fmt, ...)
{
    char old[ST_ERROR_MAX];
    va_list ap;
    memcpy(old, st_msg, sizeof old);
    st_code = code;
    va_start(ap, fmt);
    int n = vsnprintf(st_msg, sizeof st_msg, fmt, ap);
    va_end(ap);
    if (n >= 0 && (size_t)n < sizeof st_msg) {
        size_t room = sizeof st_msg - (size_t)n;
        size_t len = strnlen(old, room - 1);
        memcpy(st_msg + n, old, len);
        st_msg[(size_t)n + len] = 0;
    }
    return code;
}

void st_error_clear(void)
{
    st_msg[0] = 0;
    st_code = ST_OK;
}

st_status st_error_code(void) { return st_code; }

const char *st_last_error(void) { return st_msg; }

const char *st_status_name(st_status s)
{
    switch (s) {
    case ST_OK: return "ok";
    case ST_ERR_INVALID_ARG: return "invalid argument";
    case ST_ERR_IO: return "i/o error";
    case ST_ERR_MODEL: return "malformed model";
    case ST_ERR_UNSUPPORTED: return "unsupported";
    case ST_ERR_SHAPE: return "shape error";
    case ST_ERR_DTYPE: return "dtype error";
    case ST_ERR_NOMEM: return "out of memory";
    case ST_ERR_BACKEND: return "backend error";
    case ST_ERR_HAZARD: return "hazard";
    case ST_ERR_BUSY: return "busy";
    case ST_ERR_INTERNAL: return "internal error";
    case ST_ERR_CANCELLED: return "cancelled";
    case ST_ERR_TIMEOUT: return "deadline passed";
    }
    return "unknown status";
}
