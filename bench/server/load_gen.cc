// Load generator for axion-server: K concurrent clients, each stepping its own W worlds over
// loopback (StepStream, one request in flight per client, as a training loop does), against
// the same workload run in-process on a Simulator directly. Prints world-steps/s, Step latency
// percentiles and the remote / in-process ratio.
//
// Both sides do the same fixed work: every world takes warmup_rounds unmeasured and then
// `rounds` measured requests from the same initial state, so they simulate the same trajectory
// (the cost of a step depends on the state: contacts, Newton iterations). Every request sends
// controls for every world and reads back every body pose (and, with --sensors, the MJCF
// file's sensors: tests/io/models/sensors.xml has 44).
//
//   load_gen --clients=8 --worlds=128 --rounds=20
//   load_gen --target=host:50051 ...   (an external server; in-process baseline still local)
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "axion/client/client.h"
#include "axion/mjcf.h"
#include "axion/simulator.h"
#include "server/server.h"

ABSL_FLAG(int, clients, 8, "Concurrent clients (K)");
ABSL_FLAG(int, worlds, 128, "Worlds per client (W)");
ABSL_FLAG(int, steps, 1, "Steps per request per world");
ABSL_FLAG(int, rounds, 20, "Measured requests per client (steps per world / --steps)");
ABSL_FLAG(int, warmup_rounds, 3, "Unmeasured requests per client before the measured ones");
ABSL_FLAG(std::string, scene, "/usr/share/mujoco/model/humanoid/humanoid.xml", "MJCF scene");
ABSL_FLAG(std::string, target, "", "External server host:port (empty: start one in-process)");
ABSL_FLAG(std::string, backend, "auto", "Engine backend for the in-process server and baseline");
ABSL_FLAG(int, engine_threads, 0, "CPU engine threads (0: all)");
ABSL_FLAG(int, max_batch_delay_us, 200, "In-process server batching window");
ABSL_FLAG(bool, unary, false, "Use unary Step instead of StepStream");
ABSL_FLAG(bool, sensors, false,
          "Also read every world's MJCF sensors with each request (observe.sensor_data; "
          "in-process: ReadFileSensors)");

namespace {

using Clock = std::chrono::steady_clock;

axion::Backend ParseBackend(const std::string& name) {
  if (name == "cpu") return axion::Backend::kCpu;
  if (name == "cuda") return axion::Backend::kCuda;
  return axion::Backend::kAuto;
}

double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

double Percentile(std::vector<double>& values, double p) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const size_t index = std::min(values.size() - 1, static_cast<size_t>(p * values.size()));
  return values[index];
}

// Controls within each actuator's range, fixed for the run: (world_count x actuator_count).
std::vector<float> MakeControls(const axion::v1::WorldDescription& description, int world_count,
                                uint32_t seed) {
  std::mt19937 random(seed);
  std::uniform_real_distribution<float> unit(-1, 1);
  std::vector<float> controls;
  for (int w = 0; w < world_count; ++w) {
    for (const axion::v1::ActuatorInfo& actuator : description.actuators()) {
      float value = 0.3f * unit(random);
      if (actuator.ctrl_limited()) {
        value = std::clamp(value, static_cast<float>(actuator.ctrl_min()),
                           static_cast<float>(actuator.ctrl_max()));
      }
      controls.push_back(value);
    }
  }
  return controls;
}

struct RemoteResult {
  double world_steps_per_second = 0;
  double p50_ms = 0, p99_ms = 0;
  uint64_t requests = 0;
  int non_finite_worlds = 0;  // frozen by the engine after a NaN: their steps cost nothing
  bool ok = true;
};

RemoteResult RunRemote(const std::string& target, const std::string& mjcf) {
  const int client_count = absl::GetFlag(FLAGS_clients);
  const int world_count = absl::GetFlag(FLAGS_worlds);
  const int steps = absl::GetFlag(FLAGS_steps);
  const bool unary = absl::GetFlag(FLAGS_unary);
  std::atomic<int> ready{0};
  std::atomic<bool> failed{false};
  std::vector<std::vector<double>> latencies(client_count);
  const int rounds = absl::GetFlag(FLAGS_rounds);
  const int warmup_rounds = absl::GetFlag(FLAGS_warmup_rounds);
  std::atomic<int> warmed{0};
  std::vector<Clock::time_point> finished(client_count);
  Clock::time_point measure_start;
  std::atomic<bool> go{false}, measuring{false};
  std::atomic<int> non_finite_worlds{0};

  std::vector<std::thread> threads;
  for (int c = 0; c < client_count; ++c) {
    threads.emplace_back([&, c] {
      axion::client::ClientOptions options;
      options.target = target;
      options.client_id = "load-" + std::to_string(c);
      absl::StatusOr<std::unique_ptr<axion::client::Client>> client =
          axion::client::Client::Create(options);
      absl::StatusOr<axion::v1::CreateWorldsResponse> created =
          client.ok() ? (*client)->CreateWorlds(axion::client::MjcfScene(mjcf), world_count)
                      : absl::StatusOr<axion::v1::CreateWorldsResponse>(client.status());
      if (!created.ok()) {
        std::fprintf(stderr, "client %d: %s\n", c, created.status().ToString().c_str());
        failed = true;
        ++ready;
        return;
      }
      axion::v1::StepStreamRequest request;
      axion::v1::StepRequest* step = request.mutable_step();
      for (uint64_t id : created->world_ids()) step->add_world_ids(id);
      step->add_steps(steps);
      step->set_controls(axion::client::PackFloat32(
          MakeControls(created->description(), world_count, static_cast<uint32_t>(c))));
      step->mutable_observe()->set_body_pose(true);
      step->mutable_observe()->set_sensor_data(absl::GetFlag(FLAGS_sensors));
      ++ready;
      while (!go) std::this_thread::sleep_for(std::chrono::microseconds(50));

      std::unique_ptr<axion::client::StepStream> stream;
      if (!unary) stream = (*client)->OpenStepStream();
      for (int round = 0; round < warmup_rounds + rounds; ++round) {
        if (round == warmup_rounds) {
          // Measure from the moment every client has finished warming up.
          ++warmed;
          while (!measuring) std::this_thread::sleep_for(std::chrono::microseconds(50));
        }
        const Clock::time_point sent = Clock::now();
        request.set_request_id(static_cast<uint64_t>(round));
        bool ok;
        if (unary) {
          ok = (*client)->Step(*step).ok();
        } else {
          absl::StatusOr<axion::v1::StepStreamResponse> response =
              stream->Write(request).ok() ? stream->Read() : absl::UnavailableError("write failed");
          ok = response.ok() && response->status().code() == 0;
        }
        const Clock::time_point done = Clock::now();
        if (!ok) {
          failed = true;
          if (round < warmup_rounds) ++warmed;
          break;
        }
        if (round >= warmup_rounds) latencies[c].push_back(1e3 * Seconds(done - sent));
      }
      finished[c] = Clock::now();
      if (stream) stream->Finish().IgnoreError();
      axion::v1::GetStateRequest state_request;
      *state_request.mutable_world_ids() = step->world_ids();
      state_request.mutable_observe()->set_stats(true);
      absl::StatusOr<axion::v1::GetStateResponse> state = (*client)->GetState(state_request);
      if (state.ok()) {
        for (uint32_t flags : state->observations().stats().flags()) {
          if (flags & axion::kWorldNonFinite) ++non_finite_worlds;
        }
      }
      (*client)
          ->DestroyWorlds(
              std::vector<uint64_t>(created->world_ids().begin(), created->world_ids().end()))
          .IgnoreError();
    });
  }
  while (ready < client_count) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  go = true;
  while (warmed < client_count && !failed) std::this_thread::yield();
  measure_start = Clock::now();
  measuring = true;
  for (std::thread& t : threads) t.join();
  const Clock::time_point measure_end = *std::max_element(finished.begin(), finished.end());

  RemoteResult result;
  result.ok = !failed;
  std::vector<double> all;
  for (int c = 0; c < client_count; ++c) {
    all.insert(all.end(), latencies[c].begin(), latencies[c].end());
    result.requests += latencies[c].size();
  }
  result.world_steps_per_second = static_cast<double>(result.requests) * world_count * steps /
                                  Seconds(measure_end - measure_start);
  result.p50_ms = Percentile(all, 0.50);
  result.p99_ms = Percentile(all, 0.99);
  result.non_finite_worlds = non_finite_worlds;
  return result;
}

// The same work on a Simulator in this process: all K x W worlds stepped in one call per
// iteration, controls written and poses read for every world.
double RunInProcess(const std::string& mjcf) {
  const int world_count = absl::GetFlag(FLAGS_clients) * absl::GetFlag(FLAGS_worlds);
  const int steps = absl::GetFlag(FLAGS_steps);
  absl::StatusOr<axion::ImportResult> imported = axion::LoadMjcfString(mjcf, "");
  if (!imported.ok()) {
    std::fprintf(stderr, "in-process: %s\n", imported.status().ToString().c_str());
    return 0;
  }
  absl::StatusOr<std::shared_ptr<const axion::Model>> model =
      axion::Model::Compile(std::move(imported->model));
  axion::SimulatorOptions options;
  options.backend = ParseBackend(absl::GetFlag(FLAGS_backend));
  options.threads = absl::GetFlag(FLAGS_engine_threads);
  absl::StatusOr<std::unique_ptr<axion::Simulator>> simulator = axion::Simulator::Create(options);
  if (!model.ok() || !simulator.ok()) return 0;
  absl::StatusOr<std::vector<axion::WorldId>> ids = (*simulator)->CreateWorlds(*model, world_count);
  if (!ids.ok()) return 0;
  const int actuator_count = (*model)->actuator_count();
  std::mt19937 random(1);
  std::uniform_real_distribution<double> unit(-0.3, 0.3);
  std::vector<axion::Real> controls(static_cast<size_t>(world_count) * actuator_count);
  for (int w = 0; w < world_count; ++w) {
    for (int a = 0; a < actuator_count; ++a) {
      const axion::ActuatorDesc& actuator = (*model)->desc().actuators[a];
      double value = unit(random);
      if (actuator.ctrl_limited) value = std::clamp(value, actuator.ctrl_min, actuator.ctrl_max);
      controls[static_cast<size_t>(w) * actuator_count + a] = value;
    }
  }
  const std::vector<int> step_counts(ids->size(), steps);
  const bool sensors = absl::GetFlag(FLAGS_sensors);
  std::vector<float> poses, sensor_data;
  auto iteration = [&] {
    for (int w = 0; w < world_count; ++w) {
      (*simulator)
          ->SetControls((*ids)[w], absl::MakeConstSpan(
                                       controls.data() + static_cast<size_t>(w) * actuator_count,
                                       actuator_count))
          .IgnoreError();
    }
    (*simulator)->Step(*ids, step_counts).IgnoreError();
    poses.clear();
    for (axion::WorldId id : *ids) {
      absl::StatusOr<axion::BodyState> state = (*simulator)->GetBodyState(id);
      for (axion::Real v : state->pose) poses.push_back(static_cast<float>(v));
    }
    if (!sensors) return;
    sensor_data.clear();
    for (axion::WorldId id : *ids) {
      absl::StatusOr<std::vector<axion::Real>> data =
          axion::ReadFileSensors(*imported, **model, **simulator, id);
      if (data.ok()) {
        for (axion::Real v : *data) sensor_data.push_back(static_cast<float>(v));
      }
    }
  };
  for (int round = 0; round < absl::GetFlag(FLAGS_warmup_rounds); ++round) iteration();
  const Clock::time_point start = Clock::now();
  const int rounds = absl::GetFlag(FLAGS_rounds);
  for (int round = 0; round < rounds; ++round) iteration();
  const uint64_t iterations = static_cast<uint64_t>(rounds);
  const double rate =
      static_cast<double>(iterations) * world_count * steps / Seconds(Clock::now() - start);
  int non_finite = 0;
  for (axion::WorldId id : *ids) {
    absl::StatusOr<axion::WorldStats> stats = (*simulator)->GetStats(id);
    if (stats.ok() && (stats->flags & axion::kWorldNonFinite)) ++non_finite;
  }
  if (non_finite > 0) {
    std::printf("warning: in-process: %d of %d worlds became non-finite (frozen)\n", non_finite,
                world_count);
  }
  return rate;
}

}  // namespace

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage("Load generator for axion-server (remote vs in-process stepping)");
  absl::ParseCommandLine(argc, argv);
  std::ifstream file(absl::GetFlag(FLAGS_scene));
  if (!file) {
    std::fprintf(stderr, "cannot read scene %s\n", absl::GetFlag(FLAGS_scene).c_str());
    return 1;
  }
  const std::string mjcf((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());

  std::unique_ptr<axion::server::AxionServer> server;
  std::string target = absl::GetFlag(FLAGS_target);
  if (target.empty()) {
    axion::server::ServerOptions options;
    options.host = "127.0.0.1";
    options.port = 0;
    options.metrics_port = -1;
    options.backend = ParseBackend(absl::GetFlag(FLAGS_backend));
    options.engine_threads = absl::GetFlag(FLAGS_engine_threads);
    options.max_batch_delay = absl::Microseconds(absl::GetFlag(FLAGS_max_batch_delay_us));
    options.max_worlds_per_client = std::max(4096, absl::GetFlag(FLAGS_worlds));
    absl::StatusOr<std::unique_ptr<axion::server::AxionServer>> started =
        axion::server::AxionServer::Create(options);
    if (!started.ok()) {
      std::fprintf(stderr, "server: %s\n", started.status().ToString().c_str());
      return 1;
    }
    server = std::move(*started);
    target = "127.0.0.1:" + std::to_string(server->port());
  }
  const int clients = absl::GetFlag(FLAGS_clients);
  const int worlds = absl::GetFlag(FLAGS_worlds);
  std::printf("scene %s, %d clients x %d worlds = %d worlds, %d step(s) per request, %s\n",
              absl::GetFlag(FLAGS_scene).c_str(), clients, worlds, clients * worlds,
              absl::GetFlag(FLAGS_steps), absl::GetFlag(FLAGS_unary) ? "unary" : "stream");

  const uint64_t batches_before = server ? server->batch_count() : 0;
  const RemoteResult remote = RunRemote(target, mjcf);
  const uint64_t batches = server ? server->batch_count() - batches_before : 0;
  if (!remote.ok) {
    std::fprintf(stderr, "remote workload failed\n");
    return 1;
  }
  server.reset();  // free its worlds and threads before the baseline runs
  std::printf(
      "remote:     %12.0f world-steps/s   Step latency p50 %.2f ms  p99 %.2f ms  "
      "(%llu requests",
      remote.world_steps_per_second, remote.p50_ms, remote.p99_ms,
      static_cast<unsigned long long>(remote.requests));
  if (batches > 0) std::printf(", %llu engine calls", static_cast<unsigned long long>(batches));
  std::printf(")\n");
  if (remote.non_finite_worlds > 0) {
    std::printf("warning: remote: %d of %d worlds became non-finite (frozen)\n",
                remote.non_finite_worlds, clients * worlds);
  }
  const double local = RunInProcess(mjcf);
  std::printf("in-process: %12.0f world-steps/s\n", local);
  if (local > 0)
    std::printf("ratio remote / in-process: %.3f\n", remote.world_steps_per_second / local);
  return 0;
}
