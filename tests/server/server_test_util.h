// In-process axion-server on a free loopback port, clients, and small scenes written out in
// full so each test reads on its own.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <memory>
#include <string>
#include <vector>

#include "axion/client/client.h"
#include "axion/v1/axion.pb.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/server.h"

namespace axion::server::test {

inline constexpr double kGravity = 9.81;
inline constexpr double kTimestep = 0.01;

inline ServerOptions TestServerOptions() {
  ServerOptions options;
  options.host = "127.0.0.1";
  options.port = 0;
  // The metrics endpoint (civetweb) takes up to 2 s to stop; tests that scrape it turn it on.
  options.metrics_port = -1;
  options.backend = Backend::kCpu;
  options.engine_threads = 1;
  options.drain_timeout = absl::Seconds(10);
  return options;
}

inline std::unique_ptr<AxionServer> StartServer(const ServerOptions& options) {
  absl::StatusOr<std::unique_ptr<AxionServer>> server = AxionServer::Create(options);
  EXPECT_TRUE(server.ok()) << server.status();
  return server.ok() ? std::move(*server) : nullptr;
}

inline client::ClientOptions LocalClientOptions(const AxionServer& server,
                                                const std::string& client_id) {
  client::ClientOptions options;
  options.target = "127.0.0.1:" + std::to_string(server.port());
  options.client_id = client_id;
  options.timeout = absl::Seconds(60);
  return options;
}

inline std::unique_ptr<client::Client> Connect(const client::ClientOptions& options) {
  absl::StatusOr<std::unique_ptr<client::Client>> client = client::Client::Create(options);
  EXPECT_TRUE(client.ok()) << client.status();
  return client.ok() ? std::move(*client) : nullptr;
}

inline std::unique_ptr<client::Client> Connect(const AxionServer& server,
                                               const std::string& client_id = "test") {
  return Connect(LocalClientOptions(server, client_id));
}

// A test with its own in-process server and a client of identity "alice".
class ServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    server_ = StartServer(TestServerOptions());
    ASSERT_NE(server_, nullptr);
    client_ = Connect(*server_, "alice");
  }

  std::unique_ptr<AxionServer> server_;
  std::unique_ptr<client::Client> client_;
};

inline void SetVec(v1::Vec3* v, double x, double y, double z) {
  v->set_x(x);
  v->set_y(y);
  v->set_z(z);
}

// One free sphere (m = 1 kg, r = 0.1 m) at height z0 and nothing to hit: free fall, so after n
// steps its velocity is exactly -g n h.
inline v1::ModelDescription FallingBallScene(double z0 = 10) {
  v1::ModelDescription model;
  model.set_name("falling_ball");
  v1::Body* ball = model.add_bodies();
  ball->set_name("ball");
  ball->set_mass(1);
  for (double i : {0.004, 0.004, 0.004}) ball->add_inertia(i);
  SetVec(ball->mutable_pose()->mutable_pos(), 0, 0, z0);
  v1::Shape* shape = model.add_shapes();
  shape->set_body(0);
  shape->set_type(v1::SHAPE_TYPE_SPHERE);
  SetVec(shape->mutable_size(), 0.1, 0, 0);
  model.mutable_options()->mutable_timestep()->set_value(kTimestep);
  return model;
}

// A wheel (I_xx = 0.1 kg m^2) on a revolute joint about the world x axis through its centre of
// mass, driven by an effort actuator with ctrl range [-1, 1] N m: gravity exerts no torque, so a
// torque tau gives joint velocity tau n h / I_xx after n steps.
inline v1::ModelDescription WheelScene() {
  v1::ModelDescription model;
  model.set_name("wheel");
  v1::Body* wheel = model.add_bodies();
  wheel->set_name("wheel");
  wheel->set_mass(1);
  for (double i : {0.1, 0.1, 0.1}) wheel->add_inertia(i);
  SetVec(wheel->mutable_pose()->mutable_pos(), 0, 0, 1);
  v1::Joint* hinge = model.add_joints();
  hinge->set_name("hinge");
  hinge->set_type(v1::JOINT_TYPE_REVOLUTE);
  hinge->set_parent(-1);
  hinge->set_child(0);
  v1::Actuator* motor = model.add_actuators();
  motor->set_name("motor");
  motor->set_type(v1::ACTUATOR_TYPE_EFFORT);
  motor->set_joint(0);
  motor->set_ctrl_limited(true);
  motor->set_ctrl_min(-1);
  motor->set_ctrl_max(1);
  model.mutable_options()->mutable_timestep()->set_value(kTimestep);
  return model;
}

// A sphere (m = 2 kg, r = 0.1 m) resting on the ground plane: the contact carries its weight.
inline v1::ModelDescription RestingBallScene() {
  v1::ModelDescription model;
  model.set_name("resting_ball");
  v1::Shape* ground = model.add_shapes();
  ground->set_name("ground");
  ground->set_body(-1);
  ground->set_type(v1::SHAPE_TYPE_PLANE);
  v1::Body* ball = model.add_bodies();
  ball->set_name("ball");
  ball->set_mass(2);
  for (double i : {0.008, 0.008, 0.008}) ball->add_inertia(i);
  SetVec(ball->mutable_pose()->mutable_pos(), 0, 0, 0.1);
  v1::Shape* shape = model.add_shapes();
  shape->set_name("ball");
  shape->set_body(0);
  shape->set_type(v1::SHAPE_TYPE_SPHERE);
  SetVec(shape->mutable_size(), 0.1, 0, 0);
  model.mutable_options()->mutable_timestep()->set_value(kTimestep);
  return model;
}

inline std::vector<uint64_t> MustCreate(client::Client& client, const v1::ModelDescription& model,
                                        int count) {
  absl::StatusOr<v1::CreateWorldsResponse> created =
      client.CreateWorlds(client::ModelScene(model), count);
  EXPECT_TRUE(created.ok()) << created.status();
  if (!created.ok()) return {};
  return {created->world_ids().begin(), created->world_ids().end()};
}

inline v1::StepRequest StepRequestFor(const std::vector<uint64_t>& ids, int steps) {
  v1::StepRequest request;
  for (uint64_t id : ids) request.add_world_ids(id);
  request.add_steps(steps);
  return request;
}

inline v1::GetStateResponse MustGetState(client::Client& client, const std::vector<uint64_t>& ids) {
  v1::GetStateRequest request;
  for (uint64_t id : ids) request.add_world_ids(id);
  v1::ObservationRequest* observe = request.mutable_observe();
  observe->set_body_pose(true);
  observe->set_body_velocity(true);
  observe->set_joint_position(true);
  observe->set_joint_velocity(true);
  observe->set_stats(true);
  observe->set_controls(true);
  absl::StatusOr<v1::GetStateResponse> state = client.GetState(request);
  EXPECT_TRUE(state.ok()) << state.status();
  return state.ok() ? *state : v1::GetStateResponse();
}

// Plain HTTP/1.0 GET over a loopback socket; returns the whole response (headers and body).
inline std::string HttpGet(int port, const std::string& path) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return "";
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  std::string response;
  if (connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0) {
    const std::string request = "GET " + path + " HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n";
    if (send(fd, request.data(), request.size(), 0) == static_cast<ssize_t>(request.size())) {
      char buffer[4096];
      ssize_t n;
      while ((n = recv(fd, buffer, sizeof(buffer), 0)) > 0) response.append(buffer, n);
    }
  }
  close(fd);
  return response;
}

// Value of an unlabelled sample `name` in a Prometheus text exposition; -1 when absent.
inline double MetricValue(const std::string& exposition, const std::string& name) {
  size_t pos = 0;
  while ((pos = exposition.find(name + " ", pos)) != std::string::npos) {
    if (pos == 0 || exposition[pos - 1] == '\n') {
      return std::stod(exposition.substr(pos + name.size() + 1));
    }
    pos += name.size();
  }
  return -1;
}

}  // namespace axion::server::test
