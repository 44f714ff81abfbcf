// gRPC handlers of axion.v1.Simulation (callback API: no thread per call or stream). Each
// handler authenticates the caller, then hands the request to the scheduler thread, where the
// SimulationCore does the work; the answer is sent from there. Handlers only translate between
// proto and engine, and report errors through ToGrpcStatus.
#pragma once

#include <atomic>
#include <mutex>
#include <string>

#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "axion/v1/axion.grpc.pb.h"
#include "server/metrics.h"
#include "server/scheduler.h"
#include "server/simulation_core.h"

namespace axion::server {

class StepStreamReactor;

class SimulationService final : public v1::Simulation::CallbackService {
 public:
  struct Options {
    std::string auth_token;  // non-empty: require `authorization: Bearer <token>`
    // TLS with verified client certificates: the certificate subject is part of the identity.
    bool identity_from_certificate = false;
    int max_stream_in_flight = 16;  // requests of one stream queued at once (pipelining depth)
  };

  SimulationService(const Options& options, Scheduler* scheduler, SimulationCore* core,
                    Metrics* metrics);

  // Calls are refused with UNAVAILABLE until the server has finished starting.
  void SetAccepting(bool accepting) { accepting_ = accepting; }
  // Refuses new calls (UNAVAILABLE) and ends every open stream once the requests it has in
  // flight are answered.
  void BeginDrain();

  grpc::ServerUnaryReactor* CreateWorlds(grpc::CallbackServerContext* context,
                                         const v1::CreateWorldsRequest* request,
                                         v1::CreateWorldsResponse* response) override;
  grpc::ServerUnaryReactor* DestroyWorlds(grpc::CallbackServerContext* context,
                                          const v1::DestroyWorldsRequest* request,
                                          v1::DestroyWorldsResponse* response) override;
  grpc::ServerUnaryReactor* ListWorlds(grpc::CallbackServerContext* context,
                                       const v1::ListWorldsRequest* request,
                                       v1::ListWorldsResponse* response) override;
  grpc::ServerUnaryReactor* DescribeWorld(grpc::CallbackServerContext* context,
                                          const v1::DescribeWorldRequest* request,
                                          v1::DescribeWorldResponse* response) override;
  grpc::ServerUnaryReactor* Step(grpc::CallbackServerContext* context,
                                 const v1::StepRequest* request,
                                 v1::StepResponse* response) override;
  grpc::ServerBidiReactor<v1::StepStreamRequest, v1::StepStreamResponse>* StepStream(
      grpc::CallbackServerContext* context) override;
  grpc::ServerUnaryReactor* GetState(grpc::CallbackServerContext* context,
                                     const v1::GetStateRequest* request,
                                     v1::GetStateResponse* response) override;
  grpc::ServerUnaryReactor* SetState(grpc::CallbackServerContext* context,
                                     const v1::SetStateRequest* request,
                                     v1::SetStateResponse* response) override;
  grpc::ServerUnaryReactor* Reset(grpc::CallbackServerContext* context,
                                  const v1::ResetRequest* request,
                                  v1::ResetResponse* response) override;
  grpc::ServerUnaryReactor* Snapshot(grpc::CallbackServerContext* context,
                                     const v1::SnapshotRequest* request,
                                     v1::SnapshotResponse* response) override;
  grpc::ServerUnaryReactor* Restore(grpc::CallbackServerContext* context,
                                    const v1::RestoreRequest* request,
                                    v1::RestoreResponse* response) override;
  grpc::ServerUnaryReactor* GetParameters(grpc::CallbackServerContext* context,
                                          const v1::GetParametersRequest* request,
                                          v1::GetParametersResponse* response) override;
  grpc::ServerUnaryReactor* SetParameters(grpc::CallbackServerContext* context,
                                          const v1::SetParametersRequest* request,
                                          v1::SetParametersResponse* response) override;

 private:
  friend class StepStreamReactor;

  // Admission of a call: serving, authenticated; returns the caller's identity.
  absl::StatusOr<std::string> Admit(grpc::CallbackServerContext* context) const;
  // Sends `status` (through ToGrpcStatus) and counts the request.
  void Finish(grpc::ServerUnaryReactor* reactor, const char* method, const absl::Status& status);

  // Runs `handler(owner)` (a SimulationCore call) on the scheduler thread and answers with its
  // status.
  template <typename Handler>
  grpc::ServerUnaryReactor* RunOnScheduler(grpc::CallbackServerContext* context, const char* method,
                                           Handler handler);
  // The same for a caller admitted already.
  template <typename Handler>
  grpc::ServerUnaryReactor* Schedule(grpc::CallbackServerContext* context,
                                     grpc::ServerUnaryReactor* reactor, const char* method,
                                     std::string owner, Handler handler);

  void Unregister(StepStreamReactor* reactor);

  const Options options_;
  Scheduler* const scheduler_;
  SimulationCore* const core_;  // used on the scheduler thread only (but PrepareScene)
  Metrics* const metrics_;
  std::atomic<bool> accepting_{false};
  std::atomic<bool> draining_{false};

  std::mutex streams_mutex_;
  absl::flat_hash_set<StepStreamReactor*> streams_;  // open streams, guarded by streams_mutex_
};

}  // namespace axion::server
