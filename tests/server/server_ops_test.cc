// Operations and security: Prometheus metrics, gRPC health and reflection, bearer tokens, TLS
// and mutual TLS.
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "absl/strings/str_cat.h"
#include "grpcpp/generic/generic_stub.h"
#include "server_test_util.h"

namespace axion::server::test {
namespace {

using ::testing::HasSubstr;

// ---- metrics ---------------------------------------------------------------------------------

TEST(MetricsTest, EndpointServesTheDocumentedMetrics) {
  ServerOptions options = TestServerOptions();
  options.metrics_port = 0;
  std::unique_ptr<AxionServer> server = StartServer(options);
  ASSERT_NE(server, nullptr);
  std::unique_ptr<client::Client> client = Connect(*server);
  const std::vector<uint64_t> ids = MustCreate(*client, RestingBallScene(), 3);
  ASSERT_TRUE(client->Step(StepRequestFor(ids, 4)).ok());
  EXPECT_EQ(client->Step(StepRequestFor({42}, 1)).status().code(), absl::StatusCode::kNotFound);

  const std::string response = HttpGet(server->metrics_port(), "/metrics");
  ASSERT_THAT(response, HasSubstr("200 OK"));
  for (const char* name :
       {"axion_requests_total", "axion_worlds_alive", "axion_batch_worlds",
        "axion_queue_wait_seconds", "axion_engine_step_seconds", "axion_newton_iterations",
        "axion_cr_iterations", "axion_solver_residual", "axion_nonconverged_world_steps_total",
        "axion_halved_world_steps_total", "axion_redone_world_steps_total",
        "axion_contacts_per_world", "axion_device_memory_bytes", "axion_world_steps_total",
        "axion_queue_depth", "axion_scene_cache_lookups_total", "axion_scene_prepare_seconds"}) {
    EXPECT_THAT(response, HasSubstr(std::string("# TYPE ") + name + " ")) << name;
  }
  EXPECT_THAT(response, HasSubstr(R"(axion_requests_total{code="OK",method="Step"} 1)"));
  EXPECT_THAT(response, HasSubstr(R"(axion_requests_total{code="NOT_FOUND",method="Step"} 1)"));
  EXPECT_THAT(response, HasSubstr(R"(axion_requests_total{code="OK",method="CreateWorlds"} 1)"));
  EXPECT_EQ(MetricValue(response, "axion_worlds_alive"), 3);
  EXPECT_EQ(MetricValue(response, "axion_world_steps_total"), 12);  // 3 worlds x 4 steps
  EXPECT_EQ(MetricValue(response, "axion_batch_worlds_count"), 1);
  EXPECT_EQ(MetricValue(response, "axion_batch_worlds_sum"), 3);
  EXPECT_EQ(MetricValue(response, "axion_newton_iterations_count"), 3);  // per world
  EXPECT_GT(MetricValue(response, "axion_device_memory_bytes"), 0);
  EXPECT_EQ(MetricValue(response, "axion_queue_depth"), 0);
  EXPECT_THAT(response, HasSubstr(R"(axion_scene_cache_lookups_total{result="miss"} 1)"));
  EXPECT_EQ(MetricValue(response, "axion_scene_prepare_seconds_count"), 1);
}

// A scene sent again is found compiled: the second request's worlds come from the cache (one
// prepare, one hit) and move on their own. A cache of size 0 reads every request anew.
TEST(MetricsTest, RepeatedScenesAreCompiledOnce) {
  for (int cache_size : {16, 0}) {
    ServerOptions options = TestServerOptions();
    options.metrics_port = 0;
    options.scene_cache_size = cache_size;
    std::unique_ptr<AxionServer> server = StartServer(options);
    ASSERT_NE(server, nullptr);
    std::unique_ptr<client::Client> client = Connect(*server);
    const std::vector<uint64_t> first = MustCreate(*client, FallingBallScene(), 2);
    const std::vector<uint64_t> second = MustCreate(*client, FallingBallScene(), 1);
    ASSERT_TRUE(client->Step(StepRequestFor(second, 10)).ok());
    v1::GetStateRequest get;
    for (uint64_t id : {first[0], second[0]}) get.add_world_ids(id);
    get.mutable_observe()->set_body_pose(true);
    absl::StatusOr<v1::GetStateResponse> state = client->GetState(get);
    ASSERT_TRUE(state.ok()) << state.status();
    const std::vector<float> pose = client::UnpackFloat32(state->observations().body_pose());
    ASSERT_EQ(pose.size(), 14u);
    EXPECT_GT(pose[2], pose[7 + 2]);  // the stepped world's ball fell, the other's did not
    const std::string response = HttpGet(server->metrics_port(), "/metrics");
    const bool kept = cache_size > 0;
    EXPECT_THAT(response, HasSubstr(absl::StrCat(
                              R"(axion_scene_cache_lookups_total{result="hit"} )", kept ? 1 : 0)));
    EXPECT_THAT(response, HasSubstr(absl::StrCat(
                              R"(axion_scene_cache_lookups_total{result="miss"} )", kept ? 1 : 2)));
    EXPECT_EQ(MetricValue(response, "axion_scene_prepare_seconds_count"), kept ? 1 : 2);
  }
}

// ---- health and reflection -------------------------------------------------------------------

// A unary call with raw protobuf bytes, for services whose generated stubs are not installed.
absl::StatusOr<std::string> RawUnaryCall(const std::shared_ptr<grpc::Channel>& channel,
                                         const std::string& method, const std::string& request) {
  grpc::GenericStub stub(channel);
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  grpc::CompletionQueue queue;
  grpc::Slice slice(request);
  grpc::ByteBuffer request_buffer(&slice, 1);
  std::unique_ptr<grpc::GenericClientAsyncResponseReader> call =
      stub.PrepareUnaryCall(&context, method, request_buffer, &queue);
  call->StartCall();
  grpc::ByteBuffer response_buffer;
  grpc::Status status;
  call->Finish(&response_buffer, &status, reinterpret_cast<void*>(1));
  void* tag;
  bool ok;
  if (!queue.Next(&tag, &ok) || !ok) return absl::UnavailableError("call did not complete");
  if (!status.ok()) return client::FromGrpcStatus(status);
  std::vector<grpc::Slice> slices;
  if (!response_buffer.Dump(&slices).ok()) return absl::InternalError("bad response");
  std::string bytes;
  for (const grpc::Slice& s : slices)
    bytes.append(reinterpret_cast<const char*>(s.begin()), s.size());
  return bytes;
}

TEST(HealthTest, ReportsServingForTheServerAndTheService) {
  std::unique_ptr<AxionServer> server = StartServer(TestServerOptions());
  ASSERT_NE(server, nullptr);
  std::unique_ptr<client::Client> client = Connect(*server);
  // grpc.health.v1.HealthCheckResponse{status: SERVING (1)} encodes as 08 01.
  absl::StatusOr<std::string> overall =
      RawUnaryCall(client->channel(), "/grpc.health.v1.Health/Check", "");
  ASSERT_TRUE(overall.ok()) << overall.status();
  EXPECT_EQ(*overall, std::string("\x08\x01", 2));
  const std::string service = "axion.v1.Simulation";
  absl::StatusOr<std::string> simulation =
      RawUnaryCall(client->channel(), "/grpc.health.v1.Health/Check",
                   std::string("\x0a") + static_cast<char>(service.size()) + service);
  ASSERT_TRUE(simulation.ok()) << simulation.status();
  EXPECT_EQ(*simulation, std::string("\x08\x01", 2));
}

TEST(ReflectionTest, ListsTheSimulationService) {
  std::unique_ptr<AxionServer> server = StartServer(TestServerOptions());
  ASSERT_NE(server, nullptr);
  std::unique_ptr<client::Client> client = Connect(*server);
  grpc::GenericStub stub(client->channel());
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  grpc::CompletionQueue queue;
  std::unique_ptr<grpc::GenericClientAsyncReaderWriter> call = stub.PrepareCall(
      &context, "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo", &queue);
  void* tag;
  bool ok;
  auto wait = [&] { return queue.Next(&tag, &ok) && ok; };
  call->StartCall(reinterpret_cast<void*>(1));
  ASSERT_TRUE(wait());
  // ServerReflectionRequest{list_services: ""} encodes as 3a 00.
  grpc::Slice request_slice(std::string("\x3a\x00", 2));
  grpc::ByteBuffer request(&request_slice, 1);
  call->Write(request, reinterpret_cast<void*>(2));
  ASSERT_TRUE(wait());
  grpc::ByteBuffer response;
  call->Read(&response, reinterpret_cast<void*>(3));
  ASSERT_TRUE(wait());
  std::vector<grpc::Slice> slices;
  ASSERT_TRUE(response.Dump(&slices).ok());
  std::string bytes;
  for (const grpc::Slice& s : slices)
    bytes.append(reinterpret_cast<const char*>(s.begin()), s.size());
  EXPECT_THAT(bytes, HasSubstr("axion.v1.Simulation"));
  call->WritesDone(reinterpret_cast<void*>(4));
  wait();
  grpc::Status status;
  call->Finish(&status, reinterpret_cast<void*>(5));
  queue.Next(&tag, &ok);
}

// ---- bearer token ----------------------------------------------------------------------------

TEST(AuthTokenTest, MissingOrWrongTokensAreRefused) {
  ServerOptions options = TestServerOptions();
  options.auth_token = "s3cret-token";
  std::unique_ptr<AxionServer> server = StartServer(options);
  ASSERT_NE(server, nullptr);

  std::unique_ptr<client::Client> anonymous = Connect(*server);
  absl::Status status = anonymous->ListWorlds().status();
  EXPECT_EQ(status.code(), absl::StatusCode::kUnauthenticated);
  EXPECT_THAT(status.message(), HasSubstr("authorization"));

  client::ClientOptions wrong = LocalClientOptions(*server, "test");
  wrong.auth_token = "s3cret-tokem";
  EXPECT_EQ(Connect(wrong)->CreateWorlds(client::ModelScene(FallingBallScene()), 1).status().code(),
            absl::StatusCode::kUnauthenticated);
  // Streams are refused the same way.
  std::unique_ptr<client::StepStream> stream = anonymous->OpenStepStream();
  v1::StepStreamRequest request;
  stream->Write(request).IgnoreError();
  EXPECT_EQ(stream->Read().status().code(), absl::StatusCode::kUnauthenticated);

  client::ClientOptions right = LocalClientOptions(*server, "test");
  right.auth_token = "s3cret-token";
  std::unique_ptr<client::Client> authorised = Connect(right);
  EXPECT_EQ(MustCreate(*authorised, FallingBallScene(), 1).size(), 1u);
  EXPECT_TRUE(
      authorised->Step(StepRequestFor({authorised->ListWorlds()->worlds(0).world_id()}, 1)).ok());
}

// ---- TLS -------------------------------------------------------------------------------------

std::string ReadText(const std::filesystem::path& path) {
  std::ifstream file(path);
  return std::string((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
}

// A throw-away CA with a server certificate for localhost / 127.0.0.1 and two client
// certificates, made with the openssl command line tool.
class TlsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::system("openssl version > /dev/null 2>&1") != 0) {
      GTEST_SKIP() << "openssl command not found; TLS tests need it to make certificates";
    }
    dir_ =
        std::filesystem::temp_directory_path() / ("axion_tls_test_" + std::to_string(::getpid()));
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    const std::string d = dir_.string();
    const std::string key = "-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes";
    std::ofstream(dir_ / "server.ext") << "subjectAltName=DNS:localhost,IP:127.0.0.1\n";
    const std::string script = "set -e; cd " + d + "; " + "openssl req -x509 " + key +
                               " -keyout ca.key -out ca.pem -days 2 -subj /CN=axion-test-ca;" +
                               "openssl req " + key +
                               " -keyout other_ca.key -out other_ca.pem -x509 -days 2 "
                               "-subj /CN=other-ca;" +
                               Sign("server", "localhost", key, "-extfile server.ext") +
                               Sign("alice", "alice", key, "") + Sign("bob", "bob", key, "");
    ASSERT_EQ(std::system(("(" + script + ") > openssl.log 2>&1").c_str()), 0)
        << ReadText(dir_ / "openssl.log");
  }

  void TearDown() override {
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
  }

  static std::string Sign(const std::string& name, const std::string& cn, const std::string& key,
                          const std::string& extra) {
    return "openssl req " + key + " -keyout " + name + ".key -out " + name +
           ".csr -subj /CN=" + cn + ";" + "openssl x509 -req -in " + name +
           ".csr -CA ca.pem -CAkey ca.key " + "-CAcreateserial -days 2 -out " + name + ".pem " +
           extra + ";";
  }

  ServerOptions TlsServerOptions(bool require_client_certs) const {
    ServerOptions options = TestServerOptions();
    options.tls_cert_file = (dir_ / "server.pem").string();
    options.tls_key_file = (dir_ / "server.key").string();
    if (require_client_certs) options.tls_client_ca_file = (dir_ / "ca.pem").string();
    return options;
  }

  client::ClientOptions TlsClientOptions(const AxionServer& server, const std::string& ca,
                                         const std::string& cert_name) const {
    client::ClientOptions options = LocalClientOptions(server, "same-id");
    options.use_tls = true;
    options.tls_root_certs = ReadText(dir_ / ca);
    options.tls_server_name = "localhost";
    options.timeout = absl::Seconds(10);
    if (!cert_name.empty()) {
      options.tls_client_cert = ReadText(dir_ / (cert_name + ".pem"));
      options.tls_client_key = ReadText(dir_ / (cert_name + ".key"));
    }
    return options;
  }

  std::filesystem::path dir_;
};

TEST_F(TlsTest, ServerCertificateIsVerifiedByTheClient) {
  std::unique_ptr<AxionServer> server = StartServer(TlsServerOptions(false));
  ASSERT_NE(server, nullptr);
  std::unique_ptr<client::Client> trusting = Connect(TlsClientOptions(*server, "ca.pem", ""));
  EXPECT_EQ(MustCreate(*trusting, FallingBallScene(), 1).size(), 1u);

  std::unique_ptr<client::Client> distrusting =
      Connect(TlsClientOptions(*server, "other_ca.pem", ""));
  EXPECT_EQ(distrusting->ListWorlds().status().code(), absl::StatusCode::kUnavailable);

  client::ClientOptions plaintext = LocalClientOptions(*server, "same-id");
  plaintext.timeout = absl::Seconds(10);
  EXPECT_EQ(Connect(plaintext)->ListWorlds().status().code(), absl::StatusCode::kUnavailable);
}

TEST_F(TlsTest, ClientCertificatesAreRequiredAndScopeTheIdentity) {
  std::unique_ptr<AxionServer> server = StartServer(TlsServerOptions(true));
  ASSERT_NE(server, nullptr);
  std::unique_ptr<client::Client> no_cert = Connect(TlsClientOptions(*server, "ca.pem", ""));
  EXPECT_FALSE(no_cert->ListWorlds().ok());

  std::unique_ptr<client::Client> alice = Connect(TlsClientOptions(*server, "ca.pem", "alice"));
  std::unique_ptr<client::Client> bob = Connect(TlsClientOptions(*server, "ca.pem", "bob"));
  const std::vector<uint64_t> ids = MustCreate(*alice, FallingBallScene(), 1);
  ASSERT_EQ(ids.size(), 1u);
  EXPECT_TRUE(alice->Step(StepRequestFor(ids, 1)).ok());
  // Same x-axion-client value, different certificate: a different client.
  EXPECT_EQ(bob->Step(StepRequestFor(ids, 1)).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(bob->ListWorlds()->worlds_size(), 0);
}

}  // namespace
}  // namespace axion::server::test
