/*
 * status.h — error codes and the per-thread error message.
 *
 * A failing function builds its message where it understands the failure,
 * calls st_error(), and returns the code that st_error() returns.  Callers
 * higher up may add context in front with st_error_prefix() ("loading
 * 'yolo.onnx': ").  The message is thread-local: concurrent sessions never
 * clobber each other's errors.
 */
#ifndef ST_STATUS_H
#define ST_STATUS_H

#include "strata.h"

#if defined(__GNUC__)
#define ST_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define ST_PRINTF(a, b)
#endif

#define ST_ERROR_MAX 1024

/* Sets the message and returns code, so `return st_error(...)` reads well. */
st_status st_error(st_status code, const char *fmt, ...) ST_PRINTF(2, 3);
/* Puts text in front of the current message; returns code unchanged. */
st_status st_error_prefix(st_status code, const char *fmt, ...) ST_PRINTF(2, 3);
void st_error_clear(void);
/* The code given with the current message (ST_OK after st_error_clear):
 * the command line words an out-of-memory failure by it. */
st_status st_error_code(void);

#define ST_TRY(expr)                      \
    do {                                  \
        st_status st_try_ = (expr);       \
        if (st_try_ != ST_OK) return st_try_; \
    } while (0)

#endif
