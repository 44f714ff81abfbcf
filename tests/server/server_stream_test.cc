// StepStream semantics and dynamic batching.
#include <atomic>
#include <future>
#include <thread>

#include "server_test_util.h"

namespace axion::server::test {
namespace {

v1::StepStreamRequest StreamRequest(uint64_t request_id, const std::vector<uint64_t>& ids,
                                    int steps) {
  v1::StepStreamRequest request;
  request.set_request_id(request_id);
  *request.mutable_step() = StepRequestFor(ids, steps);
  request.mutable_step()->mutable_observe()->set_stats(true);
  return request;
}

TEST(StepStreamTest, AnswersEveryRequestInOrder) {
  std::unique_ptr<AxionServer> server = StartServer(TestServerOptions());
  ASSERT_NE(server, nullptr);
  std::unique_ptr<client::Client> client = Connect(*server);
  const std::vector<uint64_t> ids = MustCreate(*client, FallingBallScene(), 2);
  std::unique_ptr<client::StepStream> stream = client->OpenStepStream();
  // Pipelined: all requests written before any answer is read; each steps both worlds once.
  constexpr int kRequests = 24;
  for (int i = 0; i < kRequests; ++i) {
    ASSERT_TRUE(stream->Write(StreamRequest(100 + i, ids, 1)).ok());
  }
  for (int i = 0; i < kRequests; ++i) {
    absl::StatusOr<v1::StepStreamResponse> response = stream->Read();
    ASSERT_TRUE(response.ok()) << response.status();
    EXPECT_EQ(response->request_id(), 100u + i);
    EXPECT_EQ(response->status().code(), 0) << response->status().message();
    const v1::WorldStats& stats = response->step().observations().stats();
    ASSERT_EQ(stats.step_count_size(), 2);
    EXPECT_EQ(stats.step_count(0), static_cast<uint64_t>(i + 1));
    EXPECT_EQ(stats.step_count(1), static_cast<uint64_t>(i + 1));
  }
  EXPECT_TRUE(stream->Finish().ok());
}

TEST(StepStreamTest, BadRequestsAreAnsweredInBandAndTheStreamGoesOn) {
  std::unique_ptr<AxionServer> server = StartServer(TestServerOptions());
  ASSERT_NE(server, nullptr);
  std::unique_ptr<client::Client> client = Connect(*server);
  const std::vector<uint64_t> ids = MustCreate(*client, WheelScene(), 1);
  std::unique_ptr<client::StepStream> stream = client->OpenStepStream();

  v1::StepStreamRequest nan_control = StreamRequest(2, ids, 1);
  nan_control.mutable_step()->set_controls(client::PackFloat32(std::vector<float>{std::nanf("")}));
  ASSERT_TRUE(stream->Write(StreamRequest(1, ids, 1)).ok());
  ASSERT_TRUE(stream->Write(nan_control).ok());
  ASSERT_TRUE(stream->Write(StreamRequest(3, {987654321}, 1)).ok());
  ASSERT_TRUE(stream->Write(StreamRequest(4, ids, 1)).ok());

  absl::StatusOr<v1::StepStreamResponse> first = stream->Read();
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ(first->status().code(), 0);
  absl::StatusOr<v1::StepStreamResponse> second = stream->Read();
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_EQ(second->request_id(), 2u);
  EXPECT_EQ(second->status().code(), static_cast<int>(grpc::StatusCode::INVALID_ARGUMENT));
  EXPECT_THAT(second->status().message(), ::testing::HasSubstr("controls"));
  EXPECT_FALSE(second->has_step());
  absl::StatusOr<v1::StepStreamResponse> third = stream->Read();
  ASSERT_TRUE(third.ok()) << third.status();
  EXPECT_EQ(third->status().code(), static_cast<int>(grpc::StatusCode::NOT_FOUND));
  EXPECT_THAT(third->status().message(), ::testing::HasSubstr("987654321"));
  absl::StatusOr<v1::StepStreamResponse> fourth = stream->Read();
  ASSERT_TRUE(fourth.ok()) << fourth.status();
  EXPECT_EQ(fourth->status().code(), 0);
  // Only the two good requests stepped the world.
  EXPECT_EQ(fourth->step().observations().stats().step_count(0), 2u);
  EXPECT_TRUE(stream->Finish().ok());
}

TEST(StepStreamTest, ShutdownDuringAStreamAnswersInFlightRequestsThenEndsIt) {
  std::unique_ptr<AxionServer> server = StartServer(TestServerOptions());
  ASSERT_NE(server, nullptr);
  std::unique_ptr<client::Client> client = Connect(*server);
  const std::vector<uint64_t> ids = MustCreate(*client, FallingBallScene(), 1);
  std::unique_ptr<client::StepStream> stream = client->OpenStepStream();
  ASSERT_TRUE(stream->Write(StreamRequest(1, ids, 1)).ok());
  ASSERT_TRUE(stream->Read().ok());
  for (int i = 2; i <= 6; ++i) ASSERT_TRUE(stream->Write(StreamRequest(i, ids, 1)).ok());

  auto shutdown = std::async(std::launch::async, [&] { return server->Shutdown(); });
  // Whatever the server read before draining is answered in order; then the stream ends with
  // UNAVAILABLE.
  uint64_t expected_id = 2;
  absl::Status final_status;
  while (true) {
    absl::StatusOr<v1::StepStreamResponse> response = stream->Read();
    if (!response.ok()) {
      final_status = response.status();
      break;
    }
    EXPECT_EQ(response->request_id(), expected_id++);
    EXPECT_EQ(response->status().code(), 0);
  }
  EXPECT_EQ(final_status.code(), absl::StatusCode::kUnavailable) << final_status;
  EXPECT_TRUE(shutdown.get().ok());
  // The server is gone for new calls too.
  EXPECT_FALSE(client->ListWorlds().ok());
}

TEST(StepStreamTest, AnAbandonedStreamDoesNotAffectOtherClients) {
  std::unique_ptr<AxionServer> server = StartServer(TestServerOptions());
  ASSERT_NE(server, nullptr);
  std::unique_ptr<client::Client> alice = Connect(*server, "alice");
  std::unique_ptr<client::Client> bob = Connect(*server, "bob");
  const std::vector<uint64_t> alice_ids = MustCreate(*alice, FallingBallScene(), 1);
  const std::vector<uint64_t> bob_ids = MustCreate(*bob, FallingBallScene(), 1);
  {
    std::unique_ptr<client::StepStream> stream = alice->OpenStepStream();
    for (int i = 0; i < 8; ++i) ASSERT_TRUE(stream->Write(StreamRequest(i, alice_ids, 1)).ok());
    stream->Cancel();
  }  // destroyed without reading
  for (int i = 0; i < 10; ++i) ASSERT_TRUE(bob->Step(StepRequestFor(bob_ids, 1)).ok());
  const v1::GetStateResponse state = MustGetState(*bob, bob_ids);
  EXPECT_EQ(state.observations().stats().step_count(0), 10u);
  EXPECT_NEAR(client::UnpackFloat32(state.observations().body_velocity())[2],
              -kGravity * 10 * kTimestep, 1e-4);
  // Alice's world took at most the steps she sent and still answers.
  const v1::GetStateResponse alice_state = MustGetState(*alice, alice_ids);
  EXPECT_LE(alice_state.observations().stats().step_count(0), 8u);
}

TEST(StepStreamTest, StreamsFromSeveralClientsRunTogether) {
  std::unique_ptr<AxionServer> server = StartServer(TestServerOptions());
  ASSERT_NE(server, nullptr);
  constexpr int kClients = 3;
  constexpr int kRounds = 15;
  std::vector<std::unique_ptr<client::Client>> clients;
  std::vector<std::vector<uint64_t>> ids;
  for (int c = 0; c < kClients; ++c) {
    clients.push_back(Connect(*server, "client" + std::to_string(c)));
    ids.push_back(MustCreate(*clients.back(), FallingBallScene(), 4));
  }
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int c = 0; c < kClients; ++c) {
    threads.emplace_back([&, c] {
      std::unique_ptr<client::StepStream> stream = clients[c]->OpenStepStream();
      for (int r = 0; r < kRounds; ++r) {
        if (!stream->Write(StreamRequest(r, ids[c], 1)).ok()) ++failures;
        absl::StatusOr<v1::StepStreamResponse> response = stream->Read();
        if (!response.ok() || response->status().code() != 0 ||
            response->step().observations().stats().step_count(0) != static_cast<uint64_t>(r + 1)) {
          ++failures;
        }
      }
      if (!stream->Finish().ok()) ++failures;
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(failures.load(), 0);
}

// ---- dynamic batching ------------------------------------------------------------------------

struct ClientPlan {
  v1::ModelDescription scene;
  int steps_per_request;  // differs per client: one engine call mixes step counts
};

std::vector<ClientPlan> Plans() {
  return {{FallingBallScene(), 1}, {WheelScene(), 2}, {RestingBallScene(), 3}, {WheelScene(), 1}};
}

v1::StepRequest PlannedStep(const ClientPlan& plan, const std::vector<uint64_t>& ids, int round) {
  v1::StepRequest step = StepRequestFor(ids, plan.steps_per_request);
  if (plan.scene.actuators_size() > 0) {
    std::vector<float> controls;
    for (size_t w = 0; w < ids.size(); ++w) {
      controls.push_back(0.1f * static_cast<float>((round + static_cast<int>(w)) % 7) - 0.3f);
    }
    step.set_controls(client::PackFloat32(controls));
  }
  return step;
}

TEST(BatchingTest, ConcurrentClientsShareEngineCallsAndMatchUnbatchedResults) {
  constexpr int kWorldsPerClient = 8;
  constexpr int kRounds = 10;
  const std::vector<ClientPlan> plans = Plans();
  const int client_count = static_cast<int>(plans.size());

  // Batched: a long window, closed as soon as every live world has a request queued, so each
  // round of the clients' lock-step requests becomes exactly one engine call.
  ServerOptions batched_options = TestServerOptions();
  batched_options.max_batch_delay = absl::Seconds(5);
  std::unique_ptr<AxionServer> batched = StartServer(batched_options);
  ASSERT_NE(batched, nullptr);
  std::vector<std::unique_ptr<client::Client>> clients;
  std::vector<std::vector<uint64_t>> ids;
  for (int c = 0; c < client_count; ++c) {
    clients.push_back(Connect(*batched, "client" + std::to_string(c)));
    ids.push_back(MustCreate(*clients.back(), plans[c].scene, kWorldsPerClient));
  }
  const uint64_t batches_before = batched->batch_count();
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int c = 0; c < client_count; ++c) {
    threads.emplace_back([&, c] {
      for (int r = 0; r < kRounds; ++r) {
        if (!clients[c]->Step(PlannedStep(plans[c], ids[c], r)).ok()) ++failures;
      }
    });
  }
  for (std::thread& t : threads) t.join();
  ASSERT_EQ(failures.load(), 0);
  const uint64_t batches = batched->batch_count() - batches_before;
  EXPECT_LT(batches, static_cast<uint64_t>(client_count * kRounds));
  EXPECT_EQ(batches, static_cast<uint64_t>(kRounds));

  // Unbatched reference: no window, one client at a time.
  ServerOptions reference_options = TestServerOptions();
  reference_options.max_batch_delay = absl::ZeroDuration();
  std::unique_ptr<AxionServer> reference = StartServer(reference_options);
  ASSERT_NE(reference, nullptr);
  for (int c = 0; c < client_count; ++c) {
    std::unique_ptr<client::Client> solo = Connect(*reference, "client" + std::to_string(c));
    const std::vector<uint64_t> solo_ids = MustCreate(*solo, plans[c].scene, kWorldsPerClient);
    for (int r = 0; r < kRounds; ++r) {
      ASSERT_TRUE(solo->Step(PlannedStep(plans[c], solo_ids, r)).ok());
    }
    const v1::GetStateResponse expected = MustGetState(*solo, solo_ids);
    const v1::GetStateResponse actual = MustGetState(*clients[c], ids[c]);
    EXPECT_EQ(actual.observations().body_pose(), expected.observations().body_pose())
        << "client " << c;
    EXPECT_EQ(actual.observations().body_velocity(), expected.observations().body_velocity())
        << "client " << c;
    EXPECT_EQ(actual.observations().joint_position(), expected.observations().joint_position())
        << "client " << c;
  }
}

TEST(BatchingTest, RequestsForTheSameWorldRunInArrivalOrder) {
  ServerOptions options = TestServerOptions();
  options.max_batch_delay = absl::Milliseconds(50);
  std::unique_ptr<AxionServer> server = StartServer(options);
  ASSERT_NE(server, nullptr);
  std::unique_ptr<client::Client> client = Connect(*server);
  const std::vector<uint64_t> ids = MustCreate(*client, WheelScene(), 1);
  // Pipelined requests on one world with different torques: each must see the previous one's
  // result, so the final velocity is the sum of the impulses in order.
  std::unique_ptr<client::StepStream> stream = client->OpenStepStream();
  const std::vector<float> torques = {1.0f, -0.5f, 0.25f, 0.75f};
  for (size_t i = 0; i < torques.size(); ++i) {
    v1::StepStreamRequest request = StreamRequest(i, ids, 10);
    request.mutable_step()->set_controls(client::PackFloat32(std::vector<float>{torques[i]}));
    request.mutable_step()->mutable_observe()->set_joint_velocity(true);
    ASSERT_TRUE(stream->Write(request).ok());
  }
  double omega = 0;
  for (size_t i = 0; i < torques.size(); ++i) {
    absl::StatusOr<v1::StepStreamResponse> response = stream->Read();
    ASSERT_TRUE(response.ok()) << response.status();
    omega += torques[i] * 10 * kTimestep / 0.1;
    EXPECT_NEAR(client::UnpackFloat32(response->step().observations().joint_velocity())[0], omega,
                1e-3);
    EXPECT_EQ(response->step().observations().stats().step_count(0), 10 * (i + 1));
  }
  EXPECT_TRUE(stream->Finish().ok());
}

}  // namespace
}  // namespace axion::server::test
