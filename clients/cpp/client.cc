#include "axion/client/client.h"

#include <bit>
#include <chrono>
#include <cstring>
#include <utility>

namespace axion::client {
namespace {

uint32_t FromWire(uint32_t word) {
  if constexpr (std::endian::native == std::endian::big) return __builtin_bswap32(word);
  return word;
}

template <typename Response, typename Call>
absl::StatusOr<Response> Invoke(const Client& client, Call call) {
  grpc::ClientContext context;
  client.PrepareContext(&context);
  Response response;
  grpc::Status status = call(&context, &response);
  if (!status.ok()) return FromGrpcStatus(status);
  return response;
}

}  // namespace

absl::Status FromGrpcStatus(const grpc::Status& status) {
  if (status.ok()) return absl::OkStatus();
  // gRPC and absl number their codes identically (google.rpc.Code).
  return absl::Status(static_cast<absl::StatusCode>(status.error_code()), status.error_message());
}

absl::StatusOr<std::unique_ptr<Client>> Client::Create(const ClientOptions& options) {
  if (options.target.empty()) return absl::InvalidArgumentError("target: empty");
  std::shared_ptr<grpc::ChannelCredentials> credentials;
  grpc::ChannelArguments arguments;
  arguments.SetMaxReceiveMessageSize(options.max_message_bytes);
  arguments.SetMaxSendMessageSize(options.max_message_bytes);
  if (options.use_tls) {
    grpc::SslCredentialsOptions ssl;
    ssl.pem_root_certs = options.tls_root_certs;
    ssl.pem_cert_chain = options.tls_client_cert;
    ssl.pem_private_key = options.tls_client_key;
    credentials = grpc::SslCredentials(ssl);
    if (!options.tls_server_name.empty()) {
      arguments.SetSslTargetNameOverride(options.tls_server_name);
    }
  } else {
    if (!options.tls_client_cert.empty() || !options.tls_root_certs.empty()) {
      return absl::InvalidArgumentError("TLS certificates given but use_tls is false");
    }
    credentials = grpc::InsecureChannelCredentials();
  }
  std::unique_ptr<Client> client(new Client());
  client->options_ = options;
  client->channel_ = grpc::CreateCustomChannel(options.target, credentials, arguments);
  client->stub_ = v1::Simulation::NewStub(client->channel_);
  return client;
}

void Client::PrepareContext(grpc::ClientContext* context) const {
  if (!options_.client_id.empty()) context->AddMetadata("x-axion-client", options_.client_id);
  if (!options_.auth_token.empty()) {
    context->AddMetadata("authorization", "Bearer " + options_.auth_token);
  }
  if (options_.timeout != absl::InfiniteDuration()) {
    context->set_deadline(std::chrono::system_clock::now() +
                          absl::ToChronoNanoseconds(options_.timeout));
  }
}

bool Client::WaitForConnected(absl::Duration timeout) {
  return channel_->WaitForConnected(std::chrono::system_clock::now() +
                                    absl::ToChronoNanoseconds(timeout));
}

absl::StatusOr<v1::CreateWorldsResponse> Client::CreateWorlds(
    const v1::CreateWorldsRequest& request) {
  return Invoke<v1::CreateWorldsResponse>(*this, [&](auto* context, auto* response) {
    return stub_->CreateWorlds(context, request, response);
  });
}

absl::StatusOr<v1::CreateWorldsResponse> Client::CreateWorlds(const v1::Scene& scene, int count) {
  v1::CreateWorldsRequest request;
  *request.mutable_scene() = scene;
  request.set_count(count);
  return CreateWorlds(request);
}

absl::StatusOr<v1::DestroyWorldsResponse> Client::DestroyWorlds(
    const v1::DestroyWorldsRequest& request) {
  return Invoke<v1::DestroyWorldsResponse>(*this, [&](auto* context, auto* response) {
    return stub_->DestroyWorlds(context, request, response);
  });
}

absl::StatusOr<v1::DestroyWorldsResponse> Client::DestroyWorlds(
    absl::Span<const uint64_t> world_ids) {
  v1::DestroyWorldsRequest request;
  for (uint64_t id : world_ids) request.add_world_ids(id);
  return DestroyWorlds(request);
}

absl::StatusOr<v1::ListWorldsResponse> Client::ListWorlds() {
  return Invoke<v1::ListWorldsResponse>(*this, [&](auto* context, auto* response) {
    return stub_->ListWorlds(context, v1::ListWorldsRequest(), response);
  });
}

absl::StatusOr<v1::DescribeWorldResponse> Client::DescribeWorld(uint64_t world_id,
                                                                bool include_model) {
  v1::DescribeWorldRequest request;
  request.set_world_id(world_id);
  request.set_include_model(include_model);
  return Invoke<v1::DescribeWorldResponse>(*this, [&](auto* context, auto* response) {
    return stub_->DescribeWorld(context, request, response);
  });
}

absl::StatusOr<v1::StepResponse> Client::Step(const v1::StepRequest& request) {
  return Invoke<v1::StepResponse>(*this, [&](auto* context, auto* response) {
    return stub_->Step(context, request, response);
  });
}

absl::StatusOr<v1::GetStateResponse> Client::GetState(const v1::GetStateRequest& request) {
  return Invoke<v1::GetStateResponse>(*this, [&](auto* context, auto* response) {
    return stub_->GetState(context, request, response);
  });
}

absl::StatusOr<v1::SetStateResponse> Client::SetState(const v1::SetStateRequest& request) {
  return Invoke<v1::SetStateResponse>(*this, [&](auto* context, auto* response) {
    return stub_->SetState(context, request, response);
  });
}

absl::StatusOr<v1::ResetResponse> Client::Reset(const v1::ResetRequest& request) {
  return Invoke<v1::ResetResponse>(*this, [&](auto* context, auto* response) {
    return stub_->Reset(context, request, response);
  });
}

absl::StatusOr<v1::SnapshotResponse> Client::Snapshot(absl::Span<const uint64_t> world_ids) {
  v1::SnapshotRequest request;
  for (uint64_t id : world_ids) request.add_world_ids(id);
  return Invoke<v1::SnapshotResponse>(*this, [&](auto* context, auto* response) {
    return stub_->Snapshot(context, request, response);
  });
}

absl::StatusOr<v1::RestoreResponse> Client::Restore(const v1::RestoreRequest& request) {
  return Invoke<v1::RestoreResponse>(*this, [&](auto* context, auto* response) {
    return stub_->Restore(context, request, response);
  });
}

absl::StatusOr<v1::GetParametersResponse> Client::GetParameters(
    absl::Span<const uint64_t> world_ids) {
  v1::GetParametersRequest request;
  for (uint64_t id : world_ids) request.add_world_ids(id);
  return Invoke<v1::GetParametersResponse>(*this, [&](auto* context, auto* response) {
    return stub_->GetParameters(context, request, response);
  });
}

absl::StatusOr<v1::SetParametersResponse> Client::SetParameters(
    const v1::SetParametersRequest& request) {
  return Invoke<v1::SetParametersResponse>(*this, [&](auto* context, auto* response) {
    return stub_->SetParameters(context, request, response);
  });
}

std::unique_ptr<StepStream> Client::OpenStepStream() {
  std::unique_ptr<StepStream> stream(new StepStream());
  // Streams live as long as a training run: no per-call deadline.
  if (!options_.client_id.empty()) {
    stream->context_.AddMetadata("x-axion-client", options_.client_id);
  }
  if (!options_.auth_token.empty()) {
    stream->context_.AddMetadata("authorization", "Bearer " + options_.auth_token);
  }
  stream->call_ = stub_->StepStream(&stream->context_);
  return stream;
}

StepStream::~StepStream() {
  if (!finished_) {
    context_.TryCancel();
    // Drain so the call can complete; the final status does not matter any more.
    v1::StepStreamResponse ignored;
    while (call_->Read(&ignored)) {
    }
    call_->Finish().ok();
  }
}

absl::Status StepStream::Write(const v1::StepStreamRequest& request) {
  if (finished_) return absl::FailedPreconditionError("stream already finished");
  if (!call_->Write(request)) {
    return absl::UnavailableError("stream closed by the server; Read or Finish for its status");
  }
  return absl::OkStatus();
}

absl::StatusOr<v1::StepStreamResponse> StepStream::Read() {
  if (finished_) return absl::FailedPreconditionError("stream already finished");
  v1::StepStreamResponse response;
  if (call_->Read(&response)) return response;
  finished_ = true;
  absl::Status status = FromGrpcStatus(call_->Finish());
  if (status.ok()) return absl::OutOfRangeError("stream ended");
  return status;
}

absl::Status StepStream::Finish() {
  if (finished_) return absl::FailedPreconditionError("stream already finished");
  call_->WritesDone();
  v1::StepStreamResponse ignored;
  while (call_->Read(&ignored)) {
  }
  finished_ = true;
  return FromGrpcStatus(call_->Finish());
}

void StepStream::Cancel() { context_.TryCancel(); }

v1::Scene MjcfScene(std::string xml) {
  v1::Scene scene;
  scene.set_mjcf(std::move(xml));
  return scene;
}

v1::Scene UrdfScene(std::string xml, bool floating_base) {
  v1::Scene scene;
  scene.set_urdf(std::move(xml));
  scene.set_urdf_floating_base(floating_base);
  return scene;
}

v1::Scene ModelScene(v1::ModelDescription model) {
  v1::Scene scene;
  *scene.mutable_model() = std::move(model);
  return scene;
}

std::string PackFloat32(absl::Span<const float> values) {
  std::string bytes(4 * values.size(), '\0');
  for (size_t i = 0; i < values.size(); ++i) {
    const uint32_t word = FromWire(std::bit_cast<uint32_t>(values[i]));
    std::memcpy(bytes.data() + 4 * i, &word, 4);
  }
  return bytes;
}

std::vector<float> UnpackFloat32(std::string_view bytes) {
  std::vector<float> values(bytes.size() / 4);
  for (size_t i = 0; i < values.size(); ++i) {
    uint32_t word;
    std::memcpy(&word, bytes.data() + 4 * i, 4);
    values[i] = std::bit_cast<float>(FromWire(word));
  }
  return values;
}

std::vector<int32_t> UnpackInt32(std::string_view bytes) {
  std::vector<int32_t> values(bytes.size() / 4);
  for (size_t i = 0; i < values.size(); ++i) {
    uint32_t word;
    std::memcpy(&word, bytes.data() + 4 * i, 4);
    values[i] = static_cast<int32_t>(FromWire(word));
  }
  return values;
}

}  // namespace axion::client
