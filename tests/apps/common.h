/* Helpers for the test programs: work that oversubscription does not blur. */
#ifndef PERFSIFT_TEST_APPS_COMMON_H
#define PERFSIFT_TEST_APPS_COMMON_H
#include <time.h>

static inline void sleep_ms(double ms) {
  struct timespec ts;
  ts.tv_sec = (time_t)(ms / 1000.0);
  ts.tv_nsec = (long)((ms - ts.tv_sec * 1000.0) * 1e6);
  nanosleep(&ts, NULL);
}
#endif
