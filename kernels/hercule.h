// Hercule's model-based diagnosis (Li & Malony; thesis 2007), the pure part: recognising
// a parallel model from the communication structure, the master-worker decomposition of
// a worker's waiting (thesis eq. 5.3), and the arithmetic of relative diagnosis.
// Reconstructions the thesis leaves open (its figures are missing from the text) are
// marked [R], as in notes/hercule-spec.md.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace perfsift::kernels::hercule {

// ---- relative diagnosis (thesis 5.3.2)
// Strong scaling: a metric that scales with the rank count (speedup) is expected to be
// the reference's times ranks / reference ranks [R: the thesis's numbers fit it].
double expected_strong_scaling(double reference, int64_t ranks, int64_t reference_ranks);
// Weak scaling: (x - reference) / reference, in percent.
double difference_percent(double x, double reference);
// Weak scaling keeps the work per rank, strong the total: "weak" or "strong", whichever
// ratio against the reference is nearer 1 (`work_per_rank_ratio`: the run's computation per
// rank over the reference's).
const char *scaling_kind(double work_per_rank_ratio, int64_t ranks, int64_t reference_ranks);
// A Px x Py wavefront has Px + Py - 1 stages [R].
int64_t pipeline_depth(int64_t px, int64_t py);

// ---- recognition
// Messages from one rank to another (a sparse communication matrix).
struct PairCount {
  int32_t src = 0, dst = 0;
  int64_t messages = 0;
};
struct MasterWorkerScore {
  double confidence = 0;  // touching x served x balance
  int32_t master = -1;
  double touching = 0;  // share of messages to or from the master
  double served = 0;    // share of the other ranks it exchanges messages with
  double balance = 0;   // fewer of requests and replies over the more
};
// One rank serving request/reply traffic from all others: the rank with the most
// partners is the master candidate.
MasterWorkerScore score_master_worker(const std::vector<PairCount> &pairs, int32_t nranks);

struct GridScore {
  double neighbour_share = 0;  // messages between grid neighbours, of all
  int32_t px = 0, py = 0;      // rank r sits at (r % px, r / px)
};
// The 2-D grid layout (px x py = nranks, both >= 2) under which most messages go
// between neighbours.
GridScore best_grid(const std::vector<PairCount> &pairs, int32_t nranks);

struct DivideConquerScore {
  double confidence = 0;  // pow2 x levels x few_partners (the caller discounts forwarding)
  double pow2 = 0;        // share of messages between bisection partners (split_level >= 0)
  double levels = 0;      // mean over ranks of the distinct one-bit distances they use, of log2(P)
  // Ranks meeting at most one partner per level (ceil(log2 P)), of all ranks: an
  // all-to-all's ranks meet every other rank, which no recursion does.
  double few_partners = 0;
  int64_t median_pair_messages = 0;  // messages per communicating pair (both ways), median
};
// Recursive halving (or doubling) of process groups: every exchange is between the two
// halves of a group, rank for rank, and each rank meets a partner at every level.
DivideConquerScore score_divide_and_conquer(const std::vector<PairCount> &pairs, int32_t nranks);
// The level of a message between a and b in the recursive bisection of ranks 0..nranks-1,
// or -1: a group [lo, hi) splits at mid = lo + (hi - lo) / 2 (or rounded up, the odd rank
// then in the lower half) and pairs lo + i with mid + i; the level is ceil(log2(hi - lo)) - 1,
// highest for the first split. On 2^k ranks the partners are r and r XOR 2^level.
int32_t split_level(int32_t a, int32_t b, int32_t nranks);

// A rank's point-to-point completions in order: 'S' or 'R' with the partner, 'X' for a
// call that sent and received at once (Sendrecv). Wavefront ranks forward: a block of
// receives from upstream partners is followed by a block of sends to other (downstream)
// partners; a halo or pairwise exchange sends to and receives from the same partners,
// often in one call. Returns {receive blocks followed by a disjoint send block, receive
// blocks followed by any send block, plus exchanges}.
struct Completion {
  char kind;  // 'S', 'R' or 'X'
  int32_t partner;
};
std::pair<int64_t, int64_t> forwarding_blocks(const std::vector<Completion> &sequence);

// Waiting intervals seen in the order they start (one rank's blocking calls): the part of
// [begin, end) not yet counted; `until` is how far the earlier intervals reached. A Waitall
// completing several messages waits once, not once per message.
int64_t add_uncovered(int64_t &until, int64_t begin, int64_t end);

// Request/reply turns: of the messages between the master and each worker in time order,
// the runs of one direction (a request, a task and a result are two turns, as a request
// and a reply). Balance = the fewer of the turns to and from the master over the more,
// summed over workers: a task farm with several messages per task, or tasks in flight,
// is as balanced as one request and one reply.
struct Turn {
  int32_t worker = 0;
  bool to_master = false;
  int64_t time = 0;
};
double turn_balance(std::vector<Turn> turns);

// ---- master-worker (thesis 5.2)
struct Span {
  int64_t begin = 0, end = 0;
};
// One worker as the trace shows it (ns).
struct Worker {
  int64_t start = 0;        // leaves MPI_Init
  int64_t finish = 0;       // sends its last message to the master: its last task is done
  int64_t end = 0;          // leaves MPI_Finalize (the wait for the last rank included)
  std::vector<Span> mpi;    // its time in MPI calls, the wait in MPI_Finalize included
  std::vector<Span> setup;  // the master working on this worker's tasks (mapped or derived)
  int64_t compute = -1;     // task processing in its mapped region; -1: its time outside MPI
  int64_t comm = 0;         // effective communication of its messages with the master (LogGPS)
  int64_t tasks = 0;
};
struct Master {
  int64_t ready = 0;           // first communicates with a worker (its initialisation is over)
  int64_t finalize_enter = 0;  // its finalisation is over
};
// t_wait = t_seq + t_w-setup + t_w-bn + t_w-final (eq. 5.3): each moment the worker spends
// in MPI is split by what the master was doing meanwhile [R: the thesis defines the terms,
// not the split]:
//   seq      before the master was ready, and after the last worker finished until the
//            master finalised;
//   setup    the master working on one of this worker's tasks;
//   bn       the rest while this worker still had tasks: the master serving other workers;
//   final    after this worker's last task, until the last worker's ended.
// Effective communication comes out of the waiting (first out of bn: a transfer follows
// the master's send). The terms and the communication add up to the worker's time in MPI,
// at most its lost time (elapsed minus task processing, which lies outside MPI).
struct Decomposition {
  int64_t seq = 0, setup = 0, bn = 0, final = 0, comm = 0;
  int64_t compute = 0, elapsed = 0;  // task processing, start -> end
  int64_t tasks = 0;
  int64_t wait() const { return seq + setup + bn + final; }
  double efficiency() const { return elapsed > 0 ? static_cast<double>(compute) / static_cast<double>(elapsed) : 0; }
  int64_t loss() const { return elapsed - compute; }  // "total elapsed time minus effective task processing"
};
// last_finish: the latest task finish over all workers.
Decomposition decompose(const Worker &w, const Master &m, int64_t last_finish);

}  // namespace perfsift::kernels::hercule
