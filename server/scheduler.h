// The one thread that touches the engine. Step requests from every client queue here and are
// merged into batched engine calls (dynamic batching, as inference servers batch requests);
// every other engine access (create, destroy, get/set state, snapshots) runs here too, as a
// task ordered with the steps, so the Simulator never sees two threads.
//
// Ordering. The queue is FIFO. A batch takes the step requests at the head of the queue up to
// the first task; a request touching a world already in the batch (or in an earlier request
// left for the next batch) waits for the next batch, so each world's requests run one at a time
// in arrival order. A task runs alone once everything queued before it has run.
//
// Batching window. The first step request of a batch waits at most `max_batch_delay` for more
// to arrive; the window closes early when every live world already has a queued request (no
// other request could join) or when a task is queued behind it.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "axion/v1/axion.pb.h"
#include "server/metrics.h"
#include "server/simulation_core.h"

namespace axion::server {

class Scheduler {
 public:
  struct Options {
    absl::Duration max_batch_delay = absl::Microseconds(200);  // batching window
    int max_queue = 1024;  // queued requests (steps and tasks) before RESOURCE_EXHAUSTED
  };

  // A step request waiting for its batch. The request and response stay valid until `done`,
  // which runs on the scheduler thread exactly once.
  struct StepJob {
    std::string owner;  // client identity
    const v1::StepRequest* request = nullptr;
    v1::StepResponse* response = nullptr;
    std::function<bool()> cancelled;  // true once the caller has gone away
    std::chrono::system_clock::time_point deadline = std::chrono::system_clock::time_point::max();
    std::function<void(const absl::Status&)> done;
  };

  Scheduler(const Options& options, SimulationCore* core, Metrics* metrics);
  ~Scheduler();  // Stop()

  // Queues a step; RESOURCE_EXHAUSTED when the queue is full, UNAVAILABLE once stopped. On error
  // `done` is not called.
  absl::Status SubmitStep(StepJob job);
  // Queues `task` to run on the scheduler thread after everything queued before it.
  absl::Status Submit(std::function<void()> task);
  // Runs `task` on the scheduler thread and waits for it, regardless of the queue limit (start-up
  // and shutdown work). UNAVAILABLE once stopped.
  absl::Status RunAndWait(std::function<void()> task);
  // Runs everything still queued, then ends the thread. Later submissions get UNAVAILABLE.
  void Stop();

  uint64_t batch_count() const;  // batched engine passes run so far

 private:
  struct Entry {
    std::unique_ptr<StepJob> step;  // either a step ...
    std::function<void()> task;     // ... or a task
    std::chrono::steady_clock::time_point enqueued;
  };

  absl::Status Enqueue(Entry entry, bool bypass_limit);
  void Loop();
  void RunBatch(std::vector<Entry>& batch);

  const Options options_;
  SimulationCore* const core_;
  Metrics* const metrics_;

  mutable std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<Entry> queue_;         // guarded by mutex_
  int64_t queued_step_worlds_ = 0;  // world ids in queued steps, guarded by mutex_
  int queued_tasks_ = 0;            // guarded by mutex_
  bool stopping_ = false;           // guarded by mutex_
  uint64_t batch_count_ = 0;        // guarded by mutex_
  std::thread thread_;
};

}  // namespace axion::server
