/* The scorecard's SPMD program with chosen problems (tests/scorecard/scorecard.py).
 * Work is sleeping: wall time that a shared, oversubscribed machine does not blur.
 *
 * Every iteration (ITERS = 6 by default, iters=N):
 *   setup BASE ms | solve { smooth 2 BASE ms; restrict BASE ms } |
 *   exchange { Irecv from rank - 1; Send to rank + 1; Wait } | output BASE / 2 ms | Allreduce
 * BASE = 10 ms by default (base=MS). Problems, each argument once or more:
 *   imb=REGION:RANKS:MS  ranks RANKS sleep MS ms more in REGION (setup, solve/smooth,
 *                        solve/restrict or output) every iteration
 *   late=RANKS:MS        ranks RANKS sleep MS ms in exchange before they send: their right
 *                        neighbours wait for the message (a late sender)
 * RANKS: "all", or ranks and ranges, "1,3-4". Known answer: the injected ranks and region
 * (exchange for late) carry the problem; nothing else is imbalanced but for wake-up noise. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../apps/common.h"
#include "perfsift.h"

struct problem {
  char region[32];
  int ranks[64]; /* 1: the rank is affected (rank < 64) */
  double ms;
};

static int parse_ranks(const char *s, int *out) {
  if (strcmp(s, "all") == 0) {
    for (int r = 0; r < 64; ++r) out[r] = 1;
    return 0;
  }
  while (*s) {
    char *end;
    long a = strtol(s, &end, 10), b = a;
    if (end == s) return -1;
    if (*end == '-') {
      s = end + 1;
      b = strtol(s, &end, 10);
      if (end == s) return -1;
    }
    if (a < 0 || b < a || b >= 64) return -1;
    for (long r = a; r <= b; ++r) out[r] = 1;
    s = end;
    if (*s == ',')
      ++s;
    else if (*s)
      return -1;
  }
  return 0;
}

/* "REGION:RANKS:MS" (with_region) or "RANKS:MS" */
static int parse_problem(const char *arg, int with_region, struct problem *p) {
  char buf[256];
  snprintf(buf, sizeof buf, "%s", arg);
  char *first = strchr(buf, ':');
  if (!first) return -1;
  char *rest = buf;
  memset(p, 0, sizeof *p);
  if (with_region) {
    *first = 0;
    if (strlen(buf) >= sizeof p->region) return -1;
    memcpy(p->region, buf, strlen(buf) + 1);
    rest = first + 1;
  }
  char *colon = strrchr(rest, ':');
  if (!colon) return -1;
  *colon = 0;
  p->ms = atof(colon + 1);
  return parse_ranks(rest, p->ranks);
}

static struct problem imb[8], late[8];
static int nimb, nlate, rank;

static double extra(const char *region) {
  double ms = 0;
  for (int k = 0; k < nimb; ++k)
    if (strcmp(imb[k].region, region) == 0 && rank < 64 && imb[k].ranks[rank]) ms += imb[k].ms;
  return ms;
}

/* Region `name` at `path` (its place in the region tree) */
static void work(const char *path, const char *name, double ms) {
  perfsift_region_begin(name);
  sleep_ms(ms + extra(path));
  perfsift_region_end(name);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int iters = 6;
  double base = 10;
  for (int i = 1; i < argc; ++i) {
    int bad = 0;
    if (strncmp(argv[i], "iters=", 6) == 0)
      iters = atoi(argv[i] + 6);
    else if (strncmp(argv[i], "base=", 5) == 0)
      base = atof(argv[i] + 5);
    else if (strncmp(argv[i], "imb=", 4) == 0 && nimb < 8)
      bad = parse_problem(argv[i] + 4, 1, &imb[nimb++]);
    else if (strncmp(argv[i], "late=", 5) == 0 && nlate < 8)
      bad = parse_problem(argv[i] + 5, 0, &late[nlate++]);
    else
      bad = 1;
    if (bad) {
      if (rank == 0)
        fprintf(stderr, "spmd: bad argument '%s' (iters=N, base=MS, imb=REGION:RANKS:MS, late=RANKS:MS)\n", argv[i]);
      MPI_Abort(MPI_COMM_WORLD, 2);
    }
  }
  double delay = 0;
  for (int k = 0; k < nlate; ++k)
    if (rank < 64 && late[k].ranks[rank]) delay += late[k].ms;
  const int left = (rank + size - 1) % size, right = (rank + 1) % size;
  double in = 0, out = rank, sum = 0;
  for (int it = 0; it < iters; ++it) {
    work("setup", "setup", base);
    perfsift_region_begin("solve");
    work("solve/smooth", "smooth", 2 * base);
    work("solve/restrict", "restrict", base);
    perfsift_region_end("solve");
    perfsift_region_begin("exchange");
    MPI_Request req;
    MPI_Irecv(&in, 1, MPI_DOUBLE, left, it, MPI_COMM_WORLD, &req);
    if (delay > 0) sleep_ms(delay);
    MPI_Send(&out, 1, MPI_DOUBLE, right, it, MPI_COMM_WORLD);
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    perfsift_region_end("exchange");
    work("output", "output", base / 2);
    out += in;
    MPI_Allreduce(&out, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  }
  MPI_Finalize();
  return 0;
}
