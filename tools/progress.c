/*
 * progress.c — a one-line progress report for long work (bench runs,
 * check --runs) on stderr, drawn only when stderr is a terminal: a pipe or
 * a log file gets nothing, so captured output stays what it was.  The
 * line is overwritten with a carriage return and spaces rather than
 * terminal escapes, so any terminal shows it.
 */
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tool.h"

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int shown;   /* length of the line on screen, to blank it */

static void draw(const char *line)
{
    int n = (int)strlen(line);
    fprintf(stderr, "\r%s%*s", line, shown > n ? shown - n : 0, "");
    if (shown > n) fprintf(stderr, "\r%s", line);
    fflush(stderr);
    shown = n;
}

void tool_progress_start(tool_progress *p, const char *what, int total)
{
    p->on = total > 0 && isatty(STDERR_FILENO);
    p->what = what;
    p->total = total;
    p->last_ms = 0;
    if (p->on) tool_progress_step(p, 0, NULL);
}

void tool_progress_step(tool_progress *p, int done, const char *detail)
{
    if (!p->on) return;
    double t = now_ms();
    /* ten redraws a second at most: a fast model's runs would otherwise
     * spend their time on the terminal */
    if (done > 0 && done < p->total && t - p->last_ms < 100) return;
    p->last_ms = t;
    char line[160];
    snprintf(line, sizeof line, "%s %d/%d%s%s", p->what, done, p->total, detail ? ", " : "", detail ? detail : "");
    draw(line);
}

void tool_progress_clear(void)
{
    if (!shown) return;
    fprintf(stderr, "\r%*s\r", shown, "");
    fflush(stderr);
    shown = 0;
}

void tool_progress_end(tool_progress *p)
{
    if (p->on) tool_progress_clear();
    p->on = false;
}
