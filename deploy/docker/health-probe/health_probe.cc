// axion-health-probe: asks a gRPC server for its grpc.health.v1 status and exits 0 only when it
// answers SERVING. The container image uses it for its HEALTHCHECK, and the Kubernetes manifests
// can use it as an exec probe where the native grpc probe cannot be used (TLS-only servers).
//
// Exit codes: 0 SERVING; 1 the server answered with any other status (NOT_SERVING while starting
// or draining, SERVICE_UNKNOWN, UNKNOWN); 2 the RPC failed (no server, deadline, TLS error);
// 3 bad command line.
//
// The probe sends and parses the two tiny health messages by hand through a generic stub instead
// of generating code from health.proto: it then links only grpc++, so it stays small and needs
// nothing from the project's proto build. Both messages have a single field, so the wire format is
// short and fixed by the protobuf encoding rules (field 1: tag byte 0x0a for a string, 0x08 for a
// varint enum).
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/flags/usage_config.h"
#include "absl/strings/match.h"

ABSL_FLAG(std::string, addr, "127.0.0.1:50051", "Server address, host:port.");
ABSL_FLAG(std::string, service, "",
          "Service name to check; empty asks for the server's overall status.");
ABSL_FLAG(double, timeout_s, 2.0, "Deadline for the health RPC, in seconds.");
ABSL_FLAG(bool, tls, false, "Connect with TLS instead of plaintext.");
ABSL_FLAG(std::string, tls_ca, "",
          "PEM file with the root certificates that sign the server's certificate; empty uses "
          "the system roots. Only with --tls.");
ABSL_FLAG(std::string, tls_server_name, "",
          "Name to verify the server's certificate against when it differs from the host in "
          "--addr (for example when probing 127.0.0.1). Only with --tls.");

namespace {

constexpr int kExitServing = 0;
constexpr int kExitNotServing = 1;
constexpr int kExitRpcFailed = 2;
constexpr int kExitUsage = 3;

// grpc.health.v1.HealthCheckResponse.ServingStatus values.
constexpr uint64_t kServingStatusServing = 1;

const char* ServingStatusName(uint64_t serving_status) {
  switch (serving_status) {
    case 0:
      return "UNKNOWN";
    case 1:
      return "SERVING";
    case 2:
      return "NOT_SERVING";
    case 3:
      return "SERVICE_UNKNOWN";
    default:
      return "UNRECOGNISED";
  }
}

// Appends `value` as a protobuf base-128 varint.
void AppendVarint(uint64_t value, std::string* out) {
  while (value >= 0x80) {
    out->push_back(static_cast<char>((value & 0x7f) | 0x80));
    value >>= 7;
  }
  out->push_back(static_cast<char>(value));
}

// Reads a varint at `*pos`, advancing it; nullopt on a truncated or over-long varint.
std::optional<uint64_t> ReadVarint(std::string_view bytes, size_t* pos) {
  uint64_t value = 0;
  for (int shift = 0; shift < 64 && *pos < bytes.size(); shift += 7) {
    const auto byte = static_cast<uint8_t>(bytes[(*pos)++]);
    value |= static_cast<uint64_t>(byte & 0x7f) << shift;
    if ((byte & 0x80) == 0) return value;
  }
  return std::nullopt;
}

// HealthCheckRequest { string service = 1; }: empty when the service is empty (proto3 omits
// default values).
std::string EncodeHealthCheckRequest(const std::string& service) {
  std::string bytes;
  if (!service.empty()) {
    bytes.push_back(0x0a);  // field 1, wire type 2 (length-delimited)
    AppendVarint(service.size(), &bytes);
    bytes += service;
  }
  return bytes;
}

// HealthCheckResponse { ServingStatus status = 1; }: returns the status, skipping fields that a
// newer server might add; nullopt on malformed bytes.
std::optional<uint64_t> DecodeHealthCheckResponse(std::string_view bytes) {
  uint64_t serving_status = 0;  // proto3 default when the field is absent
  size_t pos = 0;
  while (pos < bytes.size()) {
    const std::optional<uint64_t> key = ReadVarint(bytes, &pos);
    if (!key) return std::nullopt;
    const uint64_t field_number = *key >> 3;
    const uint64_t wire_type = *key & 0x7;
    if (wire_type == 0) {
      const std::optional<uint64_t> value = ReadVarint(bytes, &pos);
      if (!value) return std::nullopt;
      if (field_number == 1) serving_status = *value;
    } else if (wire_type == 2) {
      const std::optional<uint64_t> length = ReadVarint(bytes, &pos);
      if (!length || *length > bytes.size() - pos) return std::nullopt;
      pos += *length;
    } else if (wire_type == 1 || wire_type == 5) {
      const size_t width = wire_type == 1 ? 8 : 4;
      if (width > bytes.size() - pos) return std::nullopt;
      pos += width;
    } else {
      return std::nullopt;
    }
  }
  return serving_status;
}

std::optional<std::string> ReadFile(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) return std::nullopt;
  std::ostringstream contents;
  contents << file.rdbuf();
  return contents.str();
}

std::string ByteBufferToString(const grpc::ByteBuffer& buffer) {
  std::vector<grpc::Slice> slices;
  std::string bytes;
  if (!buffer.Dump(&slices).ok()) return bytes;
  for (const grpc::Slice& slice : slices) {
    bytes.append(reinterpret_cast<const char*>(slice.begin()), slice.size());
  }
  return bytes;
}

}  // namespace

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "Checks a server's grpc.health.v1 status; exit 0 when SERVING, 1 for any other status, "
      "2 when the RPC fails.");
  // --help lists the flags of the files named like the program (axion-health-probe): its
  // flags are in health_probe.cc
  absl::FlagsUsageConfig usage;
  usage.contains_help_flags = [](absl::string_view file) {
    return absl::EndsWith(file, "health_probe.cc");
  };
  usage.contains_helpshort_flags = usage.contains_help_flags;
  absl::SetFlagsUsageConfig(usage);
  absl::ParseCommandLine(argc, argv);

  const std::string addr = absl::GetFlag(FLAGS_addr);
  const double timeout_s = absl::GetFlag(FLAGS_timeout_s);
  if (addr.empty() || !(timeout_s > 0.0)) {
    std::fprintf(stderr, "axion-health-probe: --addr must be set and --timeout_s positive\n");
    return kExitUsage;
  }

  std::shared_ptr<grpc::ChannelCredentials> credentials = grpc::InsecureChannelCredentials();
  grpc::ChannelArguments channel_args;
  if (absl::GetFlag(FLAGS_tls)) {
    grpc::SslCredentialsOptions ssl_options;
    const std::string tls_ca = absl::GetFlag(FLAGS_tls_ca);
    if (!tls_ca.empty()) {
      std::optional<std::string> roots = ReadFile(tls_ca);
      if (!roots) {
        std::fprintf(stderr, "axion-health-probe: cannot read --tls_ca file %s\n", tls_ca.c_str());
        return kExitUsage;
      }
      ssl_options.pem_root_certs = *roots;
    }
    credentials = grpc::SslCredentials(ssl_options);
    const std::string server_name = absl::GetFlag(FLAGS_tls_server_name);
    if (!server_name.empty()) channel_args.SetSslTargetNameOverride(server_name);
  }
  std::shared_ptr<grpc::Channel> channel =
      grpc::CreateCustomChannel(addr, credentials, channel_args);

  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() +
                       std::chrono::duration_cast<std::chrono::system_clock::duration>(
                           std::chrono::duration<double>(timeout_s)));

  const std::string request_bytes = EncodeHealthCheckRequest(absl::GetFlag(FLAGS_service));
  grpc::Slice request_slice(request_bytes);
  grpc::ByteBuffer request(&request_slice, 1);
  grpc::ByteBuffer response;
  grpc::Status status;

  grpc::CompletionQueue completion_queue;
  grpc::GenericStub stub(channel);
  std::unique_ptr<grpc::ClientAsyncResponseReader<grpc::ByteBuffer>> call =
      stub.PrepareUnaryCall(&context, "/grpc.health.v1.Health/Check", request, &completion_queue);
  call->StartCall();
  int finish_tag = 0;
  call->Finish(&response, &status, &finish_tag);
  void* got_tag = nullptr;
  bool ok = false;
  const bool got_event = completion_queue.Next(&got_tag, &ok);
  completion_queue.Shutdown();
  void* drained_tag = nullptr;
  while (completion_queue.Next(&drained_tag, &ok)) {
  }
  if (!got_event || got_tag != &finish_tag) {
    std::fprintf(stderr, "axion-health-probe: %s: no completion for the health RPC\n",
                 addr.c_str());
    return kExitRpcFailed;
  }
  if (!status.ok()) {
    std::fprintf(stderr, "axion-health-probe: %s: health RPC failed: code %d: %s\n", addr.c_str(),
                 static_cast<int>(status.error_code()), status.error_message().c_str());
    return kExitRpcFailed;
  }

  const std::optional<uint64_t> serving_status =
      DecodeHealthCheckResponse(ByteBufferToString(response));
  if (!serving_status) {
    std::fprintf(stderr, "axion-health-probe: %s: malformed HealthCheckResponse\n", addr.c_str());
    return kExitRpcFailed;
  }
  std::printf("%s\n", ServingStatusName(*serving_status));
  return *serving_status == kServingStatusServing ? kExitServing : kExitNotServing;
}
