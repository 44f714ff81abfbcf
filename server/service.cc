#include "server/service.h"

#include <chrono>
#include <deque>
#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"
#include "grpcpp/grpcpp.h"
#include "server/status.h"

namespace axion::server {
namespace {

constexpr size_t kMaxClientIdBytes = 256;
constexpr char kBearerPrefix[] = "Bearer ";

// Compares without an early exit so the time taken does not reveal how much of a token matched.
bool ConstantTimeEquals(std::string_view a, std::string_view b) {
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  const size_t n = std::min(a.size(), b.size());
  for (size_t i = 0; i < n; ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

std::string_view ToView(const grpc::string_ref& ref) {
  return std::string_view(ref.data(), ref.size());
}

// A stream refused at admission: finishes at once with `status`.
class RefusedStream
    : public grpc::ServerBidiReactor<v1::StepStreamRequest, v1::StepStreamResponse> {
 public:
  explicit RefusedStream(const grpc::Status& status) { Finish(status); }
  void OnDone() override { delete this; }
};

}  // namespace

// One StepStream call. Requests are read ahead up to max_stream_in_flight and queued on the
// scheduler as they arrive; answers are written strictly in request order, one per request.
// The reactor owns each request until its answer is written, and is deleted in OnDone, which
// gRPC calls only after Finish, which is called only when no request is left with the
// scheduler.
class StepStreamReactor
    : public grpc::ServerBidiReactor<v1::StepStreamRequest, v1::StepStreamResponse> {
 public:
  StepStreamReactor(SimulationService* service, grpc::CallbackServerContext* context,
                    std::string owner)
      : service_(service), context_(context), owner_(std::move(owner)) {
    std::lock_guard<std::mutex> lock(mutex_);
    StartReadLocked();
  }

  void OnReadDone(bool ok) override {
    std::lock_guard<std::mutex> lock(mutex_);
    reading_ = false;
    if (finished_) return;
    if (!ok) {
      reads_done_ = true;  // the client closed its side (or the call ended)
      MaybeFinishLocked();
      return;
    }
    auto pending = std::make_unique<Pending>();
    pending->request = std::move(incoming_);
    incoming_.Clear();
    pending->response.set_request_id(pending->request.request_id());
    Pending* raw = pending.get();
    pending_.push_back(std::move(pending));

    Scheduler::StepJob job;
    job.owner = owner_;
    job.request = &raw->request.step();
    job.response = raw->response.mutable_step();
    job.cancelled = [context = context_] { return context->IsCancelled(); };
    job.deadline = context_->deadline();
    job.done = [this, raw](const absl::Status& status) { OnStepDone(raw, status); };
    absl::Status queued = service_->scheduler_->SubmitStep(std::move(job));
    if (!queued.ok()) CompleteLocked(raw, queued);
    if (!draining_ && !cancelled_) StartReadLocked();
    MaybeWriteLocked();
  }

  void OnWriteDone(bool ok) override {
    std::lock_guard<std::mutex> lock(mutex_);
    writing_ = false;
    pending_.pop_front();
    if (!ok) cancelled_ = true;  // the client is gone; answer nothing more
    if (!draining_ && !cancelled_) StartReadLocked();
    MaybeWriteLocked();
  }

  void OnCancel() override {
    std::lock_guard<std::mutex> lock(mutex_);
    cancelled_ = true;
    MaybeWriteLocked();
  }

  void OnDone() override {
    service_->Unregister(this);
    // A thread that called Finish may still be leaving a method under the lock.
    { std::lock_guard<std::mutex> lock(mutex_); }
    delete this;
  }

  // Server shutdown: read nothing more, answer what is in flight, then end the stream.
  void Drain() {
    std::lock_guard<std::mutex> lock(mutex_);
    draining_ = true;
    MaybeWriteLocked();
  }

 private:
  struct Pending {
    v1::StepStreamRequest request;
    v1::StepStreamResponse response;
    bool ready = false;
  };

  void OnStepDone(Pending* pending, const absl::Status& status) {
    std::lock_guard<std::mutex> lock(mutex_);
    CompleteLocked(pending, status);
    MaybeWriteLocked();
  }

  void CompleteLocked(Pending* pending, const absl::Status& status) {
    if (!status.ok()) pending->response.clear_step();
    ToProtoStatus(status, pending->response.mutable_status());
    pending->ready = true;
    service_->metrics_->CountRequest("StepStream", status.code());
  }

  void StartReadLocked() {
    if (reading_ || reads_done_ || finished_) return;
    if (static_cast<int>(pending_.size()) >= service_->options_.max_stream_in_flight) return;
    reading_ = true;
    StartRead(&incoming_);
  }

  void MaybeWriteLocked() {
    if (finished_ || writing_) return;
    if (cancelled_) {
      // Nobody will read the answers: drop the finished ones (from anywhere in the queue); the
      // rest are still with the scheduler and must come back before Finish.
      std::erase_if(pending_, [](const std::unique_ptr<Pending>& p) { return p->ready; });
    } else if (!pending_.empty() && pending_.front()->ready) {
      writing_ = true;
      StartWrite(&pending_.front()->response);
      return;
    }
    MaybeFinishLocked();
  }

  void MaybeFinishLocked() {
    if (finished_ || writing_ || !pending_.empty()) return;
    if (cancelled_) {
      finished_ = true;
      Finish(ToGrpcStatus(absl::CancelledError("stream cancelled")));
    } else if (draining_) {
      finished_ = true;
      Finish(ToGrpcStatus(absl::UnavailableError("server is shutting down")));
    } else if (reads_done_) {
      finished_ = true;
      Finish(grpc::Status::OK);
    }
  }

  SimulationService* const service_;
  grpc::CallbackServerContext* const context_;
  const std::string owner_;

  std::mutex mutex_;
  v1::StepStreamRequest incoming_;                // target of the outstanding read
  std::deque<std::unique_ptr<Pending>> pending_;  // requests in arrival order, until written
  bool reading_ = false;                          // a read is outstanding
  bool writing_ = false;                          // a write is outstanding (of pending_.front())
  bool reads_done_ = false;                       // the client half-closed
  bool cancelled_ = false;                        // the call was cancelled or a write failed
  bool draining_ = false;                         // server shutdown
  bool finished_ = false;                         // Finish was called
};

SimulationService::SimulationService(const Options& options, Scheduler* scheduler,
                                     SimulationCore* core, Metrics* metrics)
    : options_(options), scheduler_(scheduler), core_(core), metrics_(metrics) {}

absl::StatusOr<std::string> SimulationService::Admit(grpc::CallbackServerContext* context) const {
  if (draining_) return absl::UnavailableError("server is shutting down");
  if (!accepting_) return absl::UnavailableError("server is starting");
  const auto& metadata = context->client_metadata();
  if (!options_.auth_token.empty()) {
    auto it = metadata.find("authorization");
    if (it == metadata.end()) {
      return absl::UnauthenticatedError(
          "metadata 'authorization': missing (expected 'Bearer <token>')");
    }
    const std::string_view value = ToView(it->second);
    const std::string_view prefix(kBearerPrefix);
    if (!value.starts_with(prefix) ||
        !ConstantTimeEquals(value.substr(prefix.size()), options_.auth_token)) {
      return absl::UnauthenticatedError("metadata 'authorization': invalid bearer token");
    }
  }
  std::string client = "default";
  auto it = metadata.find("x-axion-client");
  if (it != metadata.end() && !it->second.empty()) {
    if (it->second.size() > kMaxClientIdBytes) {
      return absl::InvalidArgumentError(
          absl::StrCat("metadata 'x-axion-client': ", it->second.size(),
                       " bytes, above the limit of ", kMaxClientIdBytes));
    }
    client = std::string(ToView(it->second));
  }
  if (options_.identity_from_certificate) {
    std::shared_ptr<const grpc::AuthContext> auth = context->auth_context();
    std::vector<grpc::string_ref> peer =
        auth ? auth->GetPeerIdentity() : std::vector<grpc::string_ref>{};
    if (peer.empty()) {
      return absl::UnauthenticatedError("TLS client certificate without a subject identity");
    }
    // The certificate scopes the identity, so one certificate holder cannot reach another's
    // worlds by sending their x-axion-client value.
    return absl::StrCat("cert:", std::string(ToView(peer.front())), "/", client);
  }
  return client;
}

void SimulationService::Finish(grpc::ServerUnaryReactor* reactor, const char* method,
                               const absl::Status& status) {
  metrics_->CountRequest(method, status.code());
  reactor->Finish(ToGrpcStatus(status));
}

template <typename Handler>
grpc::ServerUnaryReactor* SimulationService::RunOnScheduler(grpc::CallbackServerContext* context,
                                                            const char* method, Handler handler) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  absl::StatusOr<std::string> owner = Admit(context);
  if (!owner.ok()) {
    Finish(reactor, method, owner.status());
    return reactor;
  }
  return Schedule(context, reactor, method, *std::move(owner), std::move(handler));
}

template <typename Handler>
grpc::ServerUnaryReactor* SimulationService::Schedule(grpc::CallbackServerContext* context,
                                                      grpc::ServerUnaryReactor* reactor,
                                                      const char* method, std::string owner,
                                                      Handler handler) {
  absl::Status queued = scheduler_->Submit(
      [this, context, reactor, method, handler = std::move(handler), owner = std::move(owner)] {
        absl::Status status;
        if (context->IsCancelled()) {
          status = absl::CancelledError("request cancelled by the client before it ran");
        } else if (std::chrono::system_clock::now() > context->deadline()) {
          status = absl::DeadlineExceededError("deadline passed while the request was queued");
        } else {
          status = handler(owner);
        }
        Finish(reactor, method, status);
      });
  if (!queued.ok()) Finish(reactor, method, queued);
  return reactor;
}

grpc::ServerUnaryReactor* SimulationService::CreateWorlds(grpc::CallbackServerContext* context,
                                                          const v1::CreateWorldsRequest* request,
                                                          v1::CreateWorldsResponse* response) {
  // The scene is read and compiled here, on the calling thread, before the creation queues: a
  // heavy import (an MJCF muscle model's length-range simulation) would otherwise hold up every
  // world's steps on the scheduler. A scene sent before comes from the core's cache.
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  absl::StatusOr<std::string> owner = Admit(context);
  absl::StatusOr<std::shared_ptr<const PreparedScene>> scene =
      owner.ok() ? core_->PrepareScene(request->scene()) : owner.status();
  if (!scene.ok()) {
    Finish(reactor, "CreateWorlds", scene.status());
    return reactor;
  }
  return Schedule(context, reactor, "CreateWorlds", *std::move(owner),
                  [this, request, response, scene = *std::move(scene)](const std::string& owner) {
                    return core_->CreateWorlds(owner, *request, *scene, response);
                  });
}

grpc::ServerUnaryReactor* SimulationService::DestroyWorlds(grpc::CallbackServerContext* context,
                                                           const v1::DestroyWorldsRequest* request,
                                                           v1::DestroyWorldsResponse* response) {
  return RunOnScheduler(context, "DestroyWorlds",
                        [this, request, response](const std::string& owner) {
                          return core_->DestroyWorlds(owner, *request, response);
                        });
}

grpc::ServerUnaryReactor* SimulationService::ListWorlds(grpc::CallbackServerContext* context,
                                                        const v1::ListWorldsRequest* request,
                                                        v1::ListWorldsResponse* response) {
  return RunOnScheduler(context, "ListWorlds", [this, request, response](const std::string& owner) {
    return core_->ListWorlds(owner, *request, response);
  });
}

grpc::ServerUnaryReactor* SimulationService::DescribeWorld(grpc::CallbackServerContext* context,
                                                           const v1::DescribeWorldRequest* request,
                                                           v1::DescribeWorldResponse* response) {
  return RunOnScheduler(context, "DescribeWorld",
                        [this, request, response](const std::string& owner) {
                          return core_->DescribeWorld(owner, *request, response);
                        });
}

grpc::ServerUnaryReactor* SimulationService::GetState(grpc::CallbackServerContext* context,
                                                      const v1::GetStateRequest* request,
                                                      v1::GetStateResponse* response) {
  return RunOnScheduler(context, "GetState", [this, request, response](const std::string& owner) {
    return core_->GetState(owner, *request, response);
  });
}

grpc::ServerUnaryReactor* SimulationService::SetState(grpc::CallbackServerContext* context,
                                                      const v1::SetStateRequest* request,
                                                      v1::SetStateResponse* response) {
  return RunOnScheduler(context, "SetState", [this, request, response](const std::string& owner) {
    return core_->SetState(owner, *request, response);
  });
}

grpc::ServerUnaryReactor* SimulationService::Reset(grpc::CallbackServerContext* context,
                                                   const v1::ResetRequest* request,
                                                   v1::ResetResponse* response) {
  return RunOnScheduler(context, "Reset", [this, request, response](const std::string& owner) {
    return core_->Reset(owner, *request, response);
  });
}

grpc::ServerUnaryReactor* SimulationService::Snapshot(grpc::CallbackServerContext* context,
                                                      const v1::SnapshotRequest* request,
                                                      v1::SnapshotResponse* response) {
  return RunOnScheduler(context, "Snapshot", [this, request, response](const std::string& owner) {
    return core_->Snapshot(owner, *request, response);
  });
}

grpc::ServerUnaryReactor* SimulationService::Restore(grpc::CallbackServerContext* context,
                                                     const v1::RestoreRequest* request,
                                                     v1::RestoreResponse* response) {
  return RunOnScheduler(context, "Restore", [this, request, response](const std::string& owner) {
    return core_->Restore(owner, *request, response);
  });
}

grpc::ServerUnaryReactor* SimulationService::GetParameters(grpc::CallbackServerContext* context,
                                                           const v1::GetParametersRequest* request,
                                                           v1::GetParametersResponse* response) {
  return RunOnScheduler(context, "GetParameters",
                        [this, request, response](const std::string& owner) {
                          return core_->GetParameters(owner, *request, response);
                        });
}

grpc::ServerUnaryReactor* SimulationService::SetParameters(grpc::CallbackServerContext* context,
                                                           const v1::SetParametersRequest* request,
                                                           v1::SetParametersResponse* response) {
  return RunOnScheduler(context, "SetParameters",
                        [this, request, response](const std::string& owner) {
                          return core_->SetParameters(owner, *request, response);
                        });
}

grpc::ServerUnaryReactor* SimulationService::Step(grpc::CallbackServerContext* context,
                                                  const v1::StepRequest* request,
                                                  v1::StepResponse* response) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  absl::StatusOr<std::string> owner = Admit(context);
  if (!owner.ok()) {
    Finish(reactor, "Step", owner.status());
    return reactor;
  }
  Scheduler::StepJob job;
  job.owner = std::move(*owner);
  job.request = request;
  job.response = response;
  job.cancelled = [context] { return context->IsCancelled(); };
  job.deadline = context->deadline();
  job.done = [this, reactor](const absl::Status& status) { Finish(reactor, "Step", status); };
  absl::Status queued = scheduler_->SubmitStep(std::move(job));
  if (!queued.ok()) Finish(reactor, "Step", queued);
  return reactor;
}

grpc::ServerBidiReactor<v1::StepStreamRequest, v1::StepStreamResponse>*
SimulationService::StepStream(grpc::CallbackServerContext* context) {
  absl::StatusOr<std::string> owner = Admit(context);
  if (!owner.ok()) {
    metrics_->CountRequest("StepStream", owner.status().code());
    return new RefusedStream(ToGrpcStatus(owner.status()));
  }
  std::lock_guard<std::mutex> lock(streams_mutex_);
  // Checked again under the lock so a stream cannot slip past BeginDrain's sweep.
  if (draining_) {
    const absl::Status status = absl::UnavailableError("server is shutting down");
    metrics_->CountRequest("StepStream", status.code());
    return new RefusedStream(ToGrpcStatus(status));
  }
  auto* reactor = new StepStreamReactor(this, context, std::move(*owner));
  streams_.insert(reactor);
  return reactor;
}

void SimulationService::Unregister(StepStreamReactor* reactor) {
  std::lock_guard<std::mutex> lock(streams_mutex_);
  streams_.erase(reactor);
}

void SimulationService::BeginDrain() {
  std::lock_guard<std::mutex> lock(streams_mutex_);
  draining_ = true;
  for (StepStreamReactor* stream : streams_) stream->Drain();
}

}  // namespace axion::server
