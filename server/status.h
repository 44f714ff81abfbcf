// The single translation from absl::Status (engine and server errors) to gRPC status. Every
// handler reports errors through these functions, so a code means the same thing on every RPC
// and in-band stream errors match unary ones.
#pragma once

#include "absl/status/status.h"
#include "axion/v1/axion.pb.h"
#include "grpcpp/support/status.h"

namespace axion::server {

// absl and gRPC share code numbering (both follow google.rpc.Code), so codes map 1:1; the
// message is kept verbatim.
grpc::Status ToGrpcStatus(const absl::Status& status);

// In-band form of ToGrpcStatus for stream responses (google.rpc.Status layout).
void ToProtoStatus(const absl::Status& status, v1::Status* out);

// Reverse direction for statuses produced by gRPC itself (e.g. in the client library).
absl::Status FromGrpcStatus(const grpc::Status& status);

// Canonical upper-case name of a code ("OK", "NOT_FOUND", ...), used as a metrics label.
const char* StatusCodeName(absl::StatusCode code);

}  // namespace axion::server
