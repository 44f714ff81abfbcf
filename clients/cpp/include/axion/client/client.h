// C++ client of axion-server (service axion.v1.Simulation). Every call takes and returns the
// proto messages of axion/v1/axion.proto; this layer adds the connection (TLS, bearer token,
// client identity), deadlines, absl::Status results and helpers for the packed float32 arrays.
//
//   axion::client::ClientOptions options;
//   options.target = "localhost:50051";
//   auto client = axion::client::Client::Create(options);
//   auto created = (*client)->CreateWorlds(axion::client::MjcfScene(xml), 16);
//   axion::v1::StepRequest step;
//   for (uint64_t id : created->world_ids()) step.add_world_ids(id);
//   step.mutable_observe()->set_body_pose(true);
//   auto result = (*client)->Step(step);
//   std::vector<float> pose = axion::client::UnpackFloat32(result->observations().body_pose());
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "axion/v1/axion.grpc.pb.h"
#include "grpcpp/grpcpp.h"

namespace axion::client {

struct ClientOptions {
  std::string target = "localhost:50051";  // host:port of the server
  std::string client_id;                   // sent as x-axion-client; worlds belong to it
  std::string auth_token;                  // sent as `authorization: Bearer <token>`
  bool use_tls = false;
  std::string tls_root_certs;        // PEM contents of the CA to trust; empty: system roots
  std::string tls_client_cert;       // PEM contents of a client certificate (mutual TLS)
  std::string tls_client_key;        // PEM contents of its private key
  std::string tls_server_name;       // expected server name when it differs from the target host
  int max_message_bytes = 64 << 20;  // largest request or response
  absl::Duration timeout = absl::InfiniteDuration();  // deadline of each unary call
};

// A StepStream call: Write requests and Read one response per request, in order.
class StepStream {
 public:
  ~StepStream();  // cancels the stream if it was not finished
  absl::Status Write(const v1::StepStreamRequest& request);
  // The next response; the stream's final status once the server has ended it.
  absl::StatusOr<v1::StepStreamResponse> Read();
  // Half-closes and returns the stream's final status (after reading what is left).
  absl::Status Finish();
  void Cancel();

 private:
  friend class Client;
  StepStream() = default;
  grpc::ClientContext context_;
  std::unique_ptr<grpc::ClientReaderWriter<v1::StepStreamRequest, v1::StepStreamResponse>> call_;
  bool finished_ = false;
};

class Client {
 public:
  static absl::StatusOr<std::unique_ptr<Client>> Create(const ClientOptions& options);

  // Waits until the channel is connected; false on timeout.
  bool WaitForConnected(absl::Duration timeout);

  absl::StatusOr<v1::CreateWorldsResponse> CreateWorlds(const v1::CreateWorldsRequest& request);
  absl::StatusOr<v1::CreateWorldsResponse> CreateWorlds(const v1::Scene& scene, int count);
  absl::StatusOr<v1::DestroyWorldsResponse> DestroyWorlds(const v1::DestroyWorldsRequest& request);
  absl::StatusOr<v1::DestroyWorldsResponse> DestroyWorlds(absl::Span<const uint64_t> world_ids);
  absl::StatusOr<v1::ListWorldsResponse> ListWorlds();
  absl::StatusOr<v1::DescribeWorldResponse> DescribeWorld(uint64_t world_id,
                                                          bool include_model = false);
  absl::StatusOr<v1::StepResponse> Step(const v1::StepRequest& request);
  absl::StatusOr<v1::GetStateResponse> GetState(const v1::GetStateRequest& request);
  absl::StatusOr<v1::SetStateResponse> SetState(const v1::SetStateRequest& request);
  absl::StatusOr<v1::ResetResponse> Reset(const v1::ResetRequest& request);
  absl::StatusOr<v1::SnapshotResponse> Snapshot(absl::Span<const uint64_t> world_ids);
  absl::StatusOr<v1::RestoreResponse> Restore(const v1::RestoreRequest& request);
  absl::StatusOr<v1::GetParametersResponse> GetParameters(absl::Span<const uint64_t> world_ids);
  absl::StatusOr<v1::SetParametersResponse> SetParameters(const v1::SetParametersRequest& request);
  std::unique_ptr<StepStream> OpenStepStream();

  v1::Simulation::Stub* stub() { return stub_.get(); }
  const std::shared_ptr<grpc::Channel>& channel() const { return channel_; }
  // Adds this client's metadata (identity, token) and deadline to a context for direct stub use.
  void PrepareContext(grpc::ClientContext* context) const;

 private:
  Client() = default;
  ClientOptions options_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::Simulation::Stub> stub_;
};

// Scenes.
v1::Scene MjcfScene(std::string xml);
v1::Scene UrdfScene(std::string xml, bool floating_base = false);
v1::Scene ModelScene(v1::ModelDescription model);

// Packed little-endian float32 arrays of the API.
std::string PackFloat32(absl::Span<const float> values);
std::vector<float> UnpackFloat32(std::string_view bytes);
std::vector<int32_t> UnpackInt32(std::string_view bytes);

absl::Status FromGrpcStatus(const grpc::Status& status);

}  // namespace axion::client
