#include "server/server.h"

#include <chrono>
#include <cstdio>
#include <exception>
#include <fstream>
#include <iterator>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "grpcpp/ext/proto_server_reflection_plugin.h"
#include "grpcpp/grpcpp.h"
#include "grpcpp/health_check_service_interface.h"
#include "prometheus/exposer.h"
#include "server/metrics.h"
#include "server/scheduler.h"
#include "server/service.h"
#include "server/simulation_core.h"

namespace axion::server {
namespace {

constexpr char kServiceName[] = "axion.v1.Simulation";

absl::StatusOr<std::string> ReadFile(const std::string& path, const char* flag) {
  std::ifstream file(path, std::ios::binary);
  if (!file) return absl::NotFoundError(absl::StrCat(flag, ": cannot open '", path, "'"));
  return std::string((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
}

absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> MakeCredentials(
    const ServerOptions& options) {
  const bool has_cert = !options.tls_cert_file.empty();
  const bool has_key = !options.tls_key_file.empty();
  if (has_cert != has_key) {
    return absl::InvalidArgumentError("tls_cert and tls_key must be given together");
  }
  if (!has_cert) {
    if (!options.tls_client_ca_file.empty()) {
      return absl::InvalidArgumentError("tls_client_ca requires tls_cert and tls_key");
    }
    return grpc::InsecureServerCredentials();
  }
  absl::StatusOr<std::string> cert = ReadFile(options.tls_cert_file, "tls_cert");
  if (!cert.ok()) return cert.status();
  absl::StatusOr<std::string> key = ReadFile(options.tls_key_file, "tls_key");
  if (!key.ok()) return key.status();
  grpc::SslServerCredentialsOptions ssl(
      options.tls_client_ca_file.empty()
          ? GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE
          : GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY);
  if (!options.tls_client_ca_file.empty()) {
    absl::StatusOr<std::string> ca = ReadFile(options.tls_client_ca_file, "tls_client_ca");
    if (!ca.ok()) return ca.status();
    ssl.pem_root_certs = std::move(*ca);
  }
  ssl.pem_key_cert_pairs.push_back({std::move(*key), std::move(*cert)});
  return grpc::SslServerCredentials(ssl);
}

void SetServing(grpc::Server* server, bool serving) {
  grpc::HealthCheckServiceInterface* health = server->GetHealthCheckService();
  if (health == nullptr) return;
  health->SetServingStatus(serving);
  health->SetServingStatus(kServiceName, serving);
}

}  // namespace

absl::StatusOr<std::unique_ptr<AxionServer>> AxionServer::Create(const ServerOptions& options) {
  if (options.max_queue < 1 || options.max_message_bytes < 1024 ||
      options.max_stream_in_flight < 1 || options.max_batch_delay < absl::ZeroDuration()) {
    return absl::InvalidArgumentError(
        "max_queue and max_stream_in_flight must be >= 1, max_message_bytes >= 1024 and "
        "max_batch_delay >= 0");
  }
  absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> credentials = MakeCredentials(options);
  if (!credentials.ok()) return credentials.status();

  std::unique_ptr<AxionServer> server(new AxionServer());
  server->options_ = options;
  server->metrics_ = std::make_unique<Metrics>();

  CoreOptions core_options;
  core_options.simulator.backend = options.backend;
  core_options.simulator.threads = options.engine_threads;
  core_options.replica_id = options.replica_id;
  core_options.max_worlds_per_client = options.max_worlds_per_client;
  core_options.max_bodies_per_world = options.max_bodies_per_world;
  core_options.max_steps_per_request = options.max_steps_per_request;
  core_options.asset_dir = options.asset_dir;
  core_options.scene_cache_size = options.scene_cache_size;
  absl::StatusOr<std::unique_ptr<SimulationCore>> core =
      SimulationCore::Create(core_options, server->metrics_.get());
  if (!core.ok()) return core.status();
  server->core_ = std::move(*core);

  Scheduler::Options scheduler_options;
  scheduler_options.max_batch_delay = options.max_batch_delay;
  scheduler_options.max_queue = options.max_queue;
  server->scheduler_ =
      std::make_unique<Scheduler>(scheduler_options, server->core_.get(), server->metrics_.get());

  SimulationService::Options service_options;
  service_options.auth_token = options.auth_token;
  service_options.identity_from_certificate = !options.tls_client_ca_file.empty();
  service_options.max_stream_in_flight = options.max_stream_in_flight;
  server->service_ = std::make_unique<SimulationService>(
      service_options, server->scheduler_.get(), server->core_.get(), server->metrics_.get());

  grpc::EnableDefaultHealthCheckService(true);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  grpc::ServerBuilder builder;
  builder.AddListeningPort(absl::StrCat(options.host, ":", options.port), *credentials,
                           &server->port_);
  builder.RegisterService(server->service_.get());
  builder.SetMaxReceiveMessageSize(options.max_message_bytes);
  builder.SetMaxSendMessageSize(options.max_message_bytes);
  server->server_ = builder.BuildAndStart();
  if (server->server_ == nullptr || server->port_ == 0) {
    return absl::UnavailableError(
        absl::StrCat("cannot listen on ", options.host, ":", options.port));
  }
  SetServing(server->server_.get(), false);

  if (options.metrics_port >= 0) {
    try {
      server->exposer_ = std::make_unique<prometheus::Exposer>(
          absl::StrCat(options.host, ":", options.metrics_port));
    } catch (const std::exception& e) {
      return absl::UnavailableError(absl::StrCat("cannot serve metrics on ", options.host, ":",
                                                 options.metrics_port, ": ", e.what()));
    }
    server->exposer_->RegisterCollectable(server->metrics_->registry());
    const std::vector<int> ports = server->exposer_->GetListeningPorts();
    server->metrics_port_ = ports.empty() ? options.metrics_port : ports.front();
  }

  if (!options.snapshot_dir.empty()) {
    absl::StatusOr<int> loaded = absl::InternalError("not run");
    absl::Status ran = server->scheduler_->RunAndWait(
        [&] { loaded = server->core_->LoadWorlds(options.snapshot_dir); });
    if (!ran.ok()) return ran;
    if (!loaded.ok()) {
      return absl::Status(loaded.status().code(),
                          absl::StrCat("restoring worlds from ", options.snapshot_dir, ": ",
                                       loaded.status().message()));
    }
    if (*loaded > 0) {
      std::fprintf(stderr, "axion-server: restored %d worlds from %s\n", *loaded,
                   options.snapshot_dir.c_str());
    }
  }
  server->started_ = true;
  server->service_->SetAccepting(true);
  SetServing(server->server_.get(), true);
  return server;
}

AxionServer::~AxionServer() { Shutdown().IgnoreError(); }

Backend AxionServer::backend() const { return core_->simulator().backend(); }

uint64_t AxionServer::batch_count() const { return scheduler_->batch_count(); }

absl::Status AxionServer::Shutdown() {
  std::lock_guard<std::mutex> lock(shutdown_mutex_);
  if (shut_down_) return shutdown_status_;
  shut_down_ = true;
  const auto start = std::chrono::system_clock::now();
  if (server_ != nullptr) {
    SetServing(server_.get(), false);
    service_->BeginDrain();
    // In-flight calls get three quarters of the drain budget; saving worlds gets the rest.
    server_->Shutdown(start + absl::ToChronoNanoseconds(options_.drain_timeout * 0.75));
  }
  // A server that failed to start (e.g. could not restore) must not overwrite saved worlds.
  if (started_ && !options_.snapshot_dir.empty()) {
    absl::Status saved = absl::InternalError("not run");
    absl::Status ran =
        scheduler_->RunAndWait([&] { saved = core_->SaveWorlds(options_.snapshot_dir); });
    shutdown_status_ = ran.ok() ? saved : ran;
  }
  if (scheduler_ != nullptr) scheduler_->Stop();
  if (server_ != nullptr) server_->Wait();
  exposer_.reset();
  return shutdown_status_;
}

}  // namespace axion::server
