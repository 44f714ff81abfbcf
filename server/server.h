// axion-server as a library: the gRPC server, its scheduler and engine, the Prometheus
// endpoint, health checking and reflection. main.cc maps flags onto ServerOptions; tests and
// benchmarks run the same server in-process.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "axion/simulator.h"

namespace grpc {
class Server;
}
namespace prometheus {
class Exposer;
}

namespace axion::server {

class Metrics;
class Scheduler;
class SimulationCore;
class SimulationService;

struct ServerOptions {
  std::string host = "0.0.0.0";  // listen address of the gRPC and metrics ports
  int port = 50051;              // gRPC port; 0 picks a free port (see AxionServer::port())
  int metrics_port = 8080;       // Prometheus /metrics; 0 picks a free port, -1 disables
  Backend backend = Backend::kAuto;
  int engine_threads = 0;   // CPU backend threads; 0: all hardware threads
  uint16_t replica_id = 0;  // high 16 bits of world ids
  absl::Duration max_batch_delay = absl::Microseconds(200);  // batching window
  int max_queue = 4096;              // queued requests before RESOURCE_EXHAUSTED
  int max_message_bytes = 64 << 20;  // largest request or response
  int max_worlds_per_client = 4096;
  int max_bodies_per_world = 4096;
  int max_steps_per_request = 10000;
  int max_stream_in_flight = 16;  // pipelined requests per StepStream
  std::string snapshot_dir;       // non-empty: save worlds at shutdown, restore at start
  std::string asset_dir;          // MJCF / URDF file references resolve here; "" = refused
  int scene_cache_size = 16;      // compiled scenes kept for repeated CreateWorlds (CoreOptions)
  absl::Duration drain_timeout = absl::Seconds(30);
  std::string tls_cert_file;       // PEM server certificate chain; with tls_key_file enables TLS
  std::string tls_key_file;        // PEM private key
  std::string tls_client_ca_file;  // PEM CA: require and verify client certificates
  std::string auth_token;          // non-empty: require `authorization: Bearer <token>`
};

class AxionServer {
 public:
  // Builds the engine, restores saved worlds, starts listening and reports SERVING.
  static absl::StatusOr<std::unique_ptr<AxionServer>> Create(const ServerOptions& options);
  ~AxionServer();  // Shutdown()

  int port() const { return port_; }
  int metrics_port() const { return metrics_port_; }  // -1 when disabled
  Backend backend() const;

  // Graceful shutdown, idempotent: NOT_SERVING, refuse new calls, answer in-flight requests
  // (open streams end with UNAVAILABLE once answered), save worlds to snapshot_dir, stop.
  // Returns the status of saving the worlds.
  absl::Status Shutdown();

  uint64_t batch_count() const;  // batched engine passes so far (for tests and benchmarks)

 private:
  AxionServer() = default;

  ServerOptions options_;
  std::unique_ptr<Metrics> metrics_;
  std::unique_ptr<SimulationCore> core_;
  std::unique_ptr<Scheduler> scheduler_;
  std::unique_ptr<SimulationService> service_;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<prometheus::Exposer> exposer_;
  int port_ = 0;
  int metrics_port_ = -1;
  std::mutex shutdown_mutex_;
  bool started_ = false;  // Create completed; only then does Shutdown save worlds
  bool shut_down_ = false;
  absl::Status shutdown_status_;
};

}  // namespace axion::server
