/*
 * version.c — the running library's version (strata.h's ST_VERSION_*),
 * so a program can tell it from the one it was compiled against.
 */
#include "strata.h"

#define ST_STR_(x) #x
#define ST_STR(x) ST_STR_(x)

const char *st_version(void)
{
    return ST_STR(ST_VERSION_MAJOR) "." ST_STR(ST_VERSION_MINOR) "." ST_STR(ST_VERSION_PATCH);
}

int st_version_number(void)
{
    return ST_VERSION_NUMBER;
}
