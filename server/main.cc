// axion-server: serves batched rigid-body simulation over gRPC. Starts with no arguments
// (port 50051, metrics on 8080, automatic backend); see --help for the flags.
#include <pthread.h>
#include <signal.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/flags/usage_config.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "server/server.h"

ABSL_FLAG(std::string, host, "0.0.0.0", "Address the gRPC and metrics ports listen on");
ABSL_FLAG(int, port, 50051, "gRPC port (0: pick a free port)");
ABSL_FLAG(int, metrics_port, 8080, "Prometheus /metrics port (-1: disabled)");
ABSL_FLAG(std::string, backend, "auto", "Engine backend: auto, cpu or cuda");
ABSL_FLAG(int, engine_threads, 0, "CPU backend worker threads (0: all hardware threads)");
ABSL_FLAG(int, replica_id, 0, "Replica id in [0, 65535], the high 16 bits of every world id");
ABSL_FLAG(int, max_batch_delay_us, 200,
          "Longest time (microseconds) a step request waits for others to batch with");
ABSL_FLAG(int, max_queue, 4096, "Queued requests before RESOURCE_EXHAUSTED");
ABSL_FLAG(int, max_message_bytes, 64 << 20, "Largest request or response message (bytes)");
ABSL_FLAG(int, max_worlds_per_client, 4096, "Worlds one client identity may hold");
ABSL_FLAG(int, max_bodies_per_world, 4096, "Largest scene accepted (bodies)");
ABSL_FLAG(int, max_steps_per_request, 10000, "Steps one request may ask of one world");
ABSL_FLAG(int, max_stream_in_flight, 16, "Pipelined requests per StepStream");
ABSL_FLAG(std::string, snapshot_dir, "",
          "Save every world here on shutdown and restore them at start (empty: off)");
ABSL_FLAG(std::string, asset_dir, "",
          "Directory MJCF/URDF file references resolve against (empty: such scenes refused)");
ABSL_FLAG(int, scene_cache_size, 16,
          "compiled scenes kept for later CreateWorlds requests that send the same scene (MJCF "
          "and URDF scenes that read no files, and model descriptions); 0 keeps none");
ABSL_FLAG(int, drain_timeout_s, 30, "Seconds a graceful shutdown may take");
ABSL_FLAG(std::string, tls_cert, "", "PEM server certificate chain (enables TLS with tls_key)");
ABSL_FLAG(std::string, tls_key, "", "PEM server private key");
ABSL_FLAG(std::string, tls_client_ca, "",
          "PEM CA bundle: require client certificates signed by it");
ABSL_FLAG(std::string, auth_token, "",
          "Require 'authorization: Bearer <token>' on every call (empty: off). Prefer "
          "AXION_AUTH_TOKEN in the environment, which is not visible in the process list");

namespace {

bool ParseBackend(const std::string& name, axion::Backend* backend) {
  if (name == "auto") {
    *backend = axion::Backend::kAuto;
  } else if (name == "cpu") {
    *backend = axion::Backend::kCpu;
  } else if (name == "cuda") {
    *backend = axion::Backend::kCuda;
  } else {
    return false;
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage("Batched rigid-body simulation server (gRPC axion.v1.Simulation)");
  // --help lists the flags of the files named like the program (axion-server): its flags are
  // in server/main.cc
  absl::FlagsUsageConfig usage;
  usage.contains_help_flags = [](absl::string_view file) {
    return absl::EndsWith(file, "server/main.cc");
  };
  usage.contains_helpshort_flags = usage.contains_help_flags;
  absl::SetFlagsUsageConfig(usage);
  absl::ParseCommandLine(argc, argv);

  // Block the shutdown signals in every thread (threads inherit the mask) so that only the
  // sigwait below receives them.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  axion::server::ServerOptions options;
  options.host = absl::GetFlag(FLAGS_host);
  options.port = absl::GetFlag(FLAGS_port);
  options.metrics_port = absl::GetFlag(FLAGS_metrics_port);
  if (!ParseBackend(absl::GetFlag(FLAGS_backend), &options.backend)) {
    std::fprintf(stderr, "axion-server: --backend: unknown value '%s' (auto, cpu or cuda)\n",
                 absl::GetFlag(FLAGS_backend).c_str());
    return 2;
  }
  options.engine_threads = absl::GetFlag(FLAGS_engine_threads);
  const int replica_id = absl::GetFlag(FLAGS_replica_id);
  if (replica_id < 0 || replica_id > 0xffff) {
    std::fprintf(stderr, "axion-server: --replica_id: value %d outside [0, 65535]\n", replica_id);
    return 2;
  }
  options.replica_id = static_cast<uint16_t>(replica_id);
  options.max_batch_delay = absl::Microseconds(absl::GetFlag(FLAGS_max_batch_delay_us));
  options.max_queue = absl::GetFlag(FLAGS_max_queue);
  options.max_message_bytes = absl::GetFlag(FLAGS_max_message_bytes);
  options.max_worlds_per_client = absl::GetFlag(FLAGS_max_worlds_per_client);
  options.max_bodies_per_world = absl::GetFlag(FLAGS_max_bodies_per_world);
  options.max_steps_per_request = absl::GetFlag(FLAGS_max_steps_per_request);
  options.max_stream_in_flight = absl::GetFlag(FLAGS_max_stream_in_flight);
  options.snapshot_dir = absl::GetFlag(FLAGS_snapshot_dir);
  options.asset_dir = absl::GetFlag(FLAGS_asset_dir);
  options.scene_cache_size = absl::GetFlag(FLAGS_scene_cache_size);
  options.drain_timeout = absl::Seconds(absl::GetFlag(FLAGS_drain_timeout_s));
  options.tls_cert_file = absl::GetFlag(FLAGS_tls_cert);
  options.tls_key_file = absl::GetFlag(FLAGS_tls_key);
  options.tls_client_ca_file = absl::GetFlag(FLAGS_tls_client_ca);
  options.auth_token = absl::GetFlag(FLAGS_auth_token);
  if (const char* token = std::getenv("AXION_AUTH_TOKEN");
      options.auth_token.empty() && token != nullptr) {
    options.auth_token = token;
  }

  absl::StatusOr<std::unique_ptr<axion::server::AxionServer>> server =
      axion::server::AxionServer::Create(options);
  if (!server.ok()) {
    std::fprintf(stderr, "axion-server: %s\n", server.status().ToString().c_str());
    return 1;
  }
  std::fprintf(stderr, "axion-server: serving on %s:%d (backend %s, metrics port %d)\n",
               options.host.c_str(), (*server)->port(), axion::BackendName((*server)->backend()),
               (*server)->metrics_port());

  int signal_number = 0;
  sigwait(&signals, &signal_number);
  std::fprintf(stderr, "axion-server: signal %d, draining (at most %d s)\n", signal_number,
               absl::GetFlag(FLAGS_drain_timeout_s));

  // Whatever happens while draining, the process ends within the drain timeout.
  std::atomic<bool> drained{false};
  std::thread watchdog([&drained, timeout = options.drain_timeout] {
    const auto end = std::chrono::steady_clock::now() + absl::ToChronoNanoseconds(timeout);
    while (!drained && std::chrono::steady_clock::now() < end) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    if (!drained) {
      std::fprintf(stderr, "axion-server: drain timeout exceeded, exiting\n");
      std::_Exit(1);
    }
  });
  const absl::Status saved = (*server)->Shutdown();
  drained = true;
  watchdog.join();
  if (!saved.ok()) {
    std::fprintf(stderr, "axion-server: saving worlds failed: %s\n", saved.ToString().c_str());
    return 1;
  }
  std::fprintf(stderr, "axion-server: stopped\n");
  return 0;
}
