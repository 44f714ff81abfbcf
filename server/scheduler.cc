#include "server/scheduler.h"

#include <future>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"

namespace axion::server {

Scheduler::Scheduler(const Options& options, SimulationCore* core, Metrics* metrics)
    : options_(options), core_(core), metrics_(metrics) {
  thread_ = std::thread([this] { Loop(); });
}

Scheduler::~Scheduler() { Stop(); }

absl::Status Scheduler::Enqueue(Entry entry, bool bypass_limit) {
  entry.enqueued = std::chrono::steady_clock::now();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (stopping_) return absl::UnavailableError("server is shutting down");
    if (!bypass_limit && static_cast<int64_t>(queue_.size()) >= options_.max_queue) {
      return absl::ResourceExhaustedError(
          absl::StrCat("server queue is full (", queue_.size(),
                       " requests, --max_queue=", options_.max_queue, "); retry later"));
    }
    if (entry.step) {
      queued_step_worlds_ += entry.step->request->world_ids_size();
    } else {
      ++queued_tasks_;
    }
    queue_.push_back(std::move(entry));
    metrics_->queue_depth().Set(static_cast<double>(queue_.size()));
  }
  cv_.notify_one();
  return absl::OkStatus();
}

absl::Status Scheduler::SubmitStep(StepJob job) {
  Entry entry;
  entry.step = std::make_unique<StepJob>(std::move(job));
  return Enqueue(std::move(entry), /*bypass_limit=*/false);
}

absl::Status Scheduler::Submit(std::function<void()> task) {
  Entry entry;
  entry.task = std::move(task);
  return Enqueue(std::move(entry), /*bypass_limit=*/false);
}

absl::Status Scheduler::RunAndWait(std::function<void()> task) {
  if (thread_.get_id() == std::this_thread::get_id()) {
    task();
    return absl::OkStatus();
  }
  std::promise<void> finished;
  Entry entry;
  entry.task = [&task, &finished] {
    task();
    finished.set_value();
  };
  absl::Status status = Enqueue(std::move(entry), /*bypass_limit=*/true);
  if (!status.ok()) return status;
  finished.get_future().wait();
  return absl::OkStatus();
}

void Scheduler::Stop() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

uint64_t Scheduler::batch_count() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return batch_count_;
}

void Scheduler::Loop() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (true) {
    cv_.wait(lock, [this] { return !queue_.empty() || stopping_; });
    if (queue_.empty()) break;  // stopping, and nothing left to run

    if (!queue_.front().step) {
      std::function<void()> task = std::move(queue_.front().task);
      queue_.pop_front();
      --queued_tasks_;
      metrics_->queue_depth().Set(static_cast<double>(queue_.size()));
      lock.unlock();
      task();
      lock.lock();
      continue;
    }

    // Batching window: measured from the oldest request, so no request waits longer than
    // max_batch_delay for company.
    const auto window_end =
        queue_.front().enqueued + absl::ToChronoNanoseconds(options_.max_batch_delay);
    const int64_t live_worlds = core_->world_count();
    cv_.wait_until(lock, window_end, [&] {
      return stopping_ || queued_tasks_ > 0 || queued_step_worlds_ >= live_worlds;
    });

    // Take the steps at the head (up to the first task) whose worlds are not yet in the batch
    // and not held by an earlier deferred request.
    std::vector<Entry> batch;
    std::deque<Entry> rest;
    absl::flat_hash_set<uint64_t> claimed;
    bool barrier = false;
    while (!queue_.empty()) {
      Entry entry = std::move(queue_.front());
      queue_.pop_front();
      if (barrier || !entry.step) {
        barrier = true;
        rest.push_back(std::move(entry));
        continue;
      }
      bool conflict = false;
      for (uint64_t id : entry.step->request->world_ids()) {
        if (claimed.contains(id)) conflict = true;
      }
      for (uint64_t id : entry.step->request->world_ids()) claimed.insert(id);
      if (conflict) {
        rest.push_back(std::move(entry));
      } else {
        queued_step_worlds_ -= entry.step->request->world_ids_size();
        batch.push_back(std::move(entry));
      }
    }
    queue_ = std::move(rest);
    ++batch_count_;
    metrics_->queue_depth().Set(static_cast<double>(queue_.size()));
    lock.unlock();
    RunBatch(batch);
    lock.lock();
  }
}

void Scheduler::RunBatch(std::vector<Entry>& batch) {
  const auto start = std::chrono::steady_clock::now();
  const auto now = std::chrono::system_clock::now();
  std::vector<SimulationCore::PreparedStep> prepared(batch.size());
  std::vector<bool> admitted(batch.size(), false);
  std::vector<const SimulationCore::World*> worlds;
  std::vector<int> steps;
  for (size_t i = 0; i < batch.size(); ++i) {
    StepJob& job = *batch[i].step;
    metrics_->queue_wait_seconds().Observe(
        std::chrono::duration<double>(start - batch[i].enqueued).count());
    if (job.cancelled && job.cancelled()) {
      job.done(absl::CancelledError("request cancelled by the client before it ran"));
      continue;
    }
    if (now > job.deadline) {
      job.done(absl::DeadlineExceededError("deadline passed while the request was queued"));
      continue;
    }
    // Validate the whole request before applying any of it: a bad request changes no world.
    absl::StatusOr<SimulationCore::PreparedStep> step = core_->PrepareStep(job.owner, *job.request);
    if (!step.ok()) {
      job.done(step.status());
      continue;
    }
    absl::Status applied = core_->ApplyStepInputs(*step);
    if (!applied.ok()) {
      job.done(applied);
      continue;
    }
    prepared[i] = std::move(*step);
    admitted[i] = true;
    worlds.insert(worlds.end(), prepared[i].worlds.begin(), prepared[i].worlds.end());
    steps.insert(steps.end(), prepared[i].steps.begin(), prepared[i].steps.end());
  }
  const absl::Status stepped = core_->StepWorlds(worlds, steps);
  for (size_t i = 0; i < batch.size(); ++i) {
    if (!admitted[i]) continue;
    StepJob& job = *batch[i].step;
    if (!stepped.ok()) {
      job.done(stepped);
      continue;
    }
    std::vector<const SimulationCore::World*> job_worlds(prepared[i].worlds.begin(),
                                                         prepared[i].worlds.end());
    job.done(
        core_->Observe(job_worlds, job.request->observe(), job.response->mutable_observations()));
  }
}

}  // namespace axion::server
