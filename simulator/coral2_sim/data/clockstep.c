/* The chaos harness's stepping wall clock (pipeline/sim/clock.py), preloaded with
 * LD_PRELOAD: CLOCK_REALTIME (clock_gettime, gettimeofday, time) reads the true time
 * plus the offset, in seconds, held in the file CORAL2_CLOCK_OFFSET_FILE names (read
 * again at most every 50 ms). CLOCK_MONOTONIC and every sleep are left alone, as a
 * real clock step leaves them; libfaketime 0.9.10 cannot leave them alone under
 * Python 3.11's absolute-deadline sleeps (EINVAL). No lock: a fork may come at any
 * time, and an aligned double is read and written whole. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/time.h>
#include <time.h>

static int (*real_clock_gettime)(clockid_t, struct timespec *);
static volatile double offset_s;
static volatile double read_at = -1.0;

static double current_offset(void)
{
    struct timespec now;
    real_clock_gettime(CLOCK_MONOTONIC, &now);
    double m = (double)now.tv_sec + (double)now.tv_nsec / 1e9;
    if (read_at < 0 || m - read_at > 0.05) {
        const char *path = getenv("CORAL2_CLOCK_OFFSET_FILE");
        FILE *f = path ? fopen(path, "re") : NULL;
        if (f) {
            double v;
            if (fscanf(f, "%lf", &v) == 1)
                offset_s = v;
            fclose(f);
        }
        read_at = m;
    }
    return offset_s;
}

int clock_gettime(clockid_t id, struct timespec *tp)
{
    if (!real_clock_gettime)
        real_clock_gettime = dlsym(RTLD_NEXT, "clock_gettime");
    int rc = real_clock_gettime(id, tp);
    if (rc == 0 && (id == CLOCK_REALTIME || id == CLOCK_REALTIME_COARSE)) {
        long long ns = (long long)tp->tv_sec * 1000000000LL + tp->tv_nsec
                       + (long long)(current_offset() * 1e9);
        tp->tv_sec = (time_t)(ns / 1000000000LL);
        tp->tv_nsec = (long)(ns % 1000000000LL);
    }
    return rc;
}

int gettimeofday(struct timeval *tv, void *tz)
{
    (void)tz;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    if (tv) {
        tv->tv_sec = ts.tv_sec;
        tv->tv_usec = ts.tv_nsec / 1000;
    }
    return 0;
}

time_t time(time_t *t)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    if (t)
        *t = ts.tv_sec;
    return ts.tv_sec;
}
