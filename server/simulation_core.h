// The server's view of the engine: one axion::Simulator plus the table of worlds it serves
// (server ids with the replica prefix, owners, models). Handlers translate between proto and
// these calls; nothing here knows about gRPC.
//
// Threading: the Simulator is not thread-safe, so a SimulationCore is used from one thread
// only, the scheduler thread (see scheduler.h), but for PrepareScene, which any thread may call.
// Every method validates its whole request before changing anything, so an error leaves every
// world untouched.
#pragma once

#include <cstdint>
#include <list>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/types/span.h"
#include "axion/mjcf.h"
#include "axion/simulator.h"
#include "axion/v1/axion.pb.h"
#include "server/metrics.h"

namespace axion::server {

struct CoreOptions {
  SimulatorOptions simulator;         // engine backend and threads
  uint16_t replica_id = 0;            // high 16 bits of every world id this server assigns
  int max_worlds_per_client = 4096;   // worlds one client identity may hold
  int max_bodies_per_world = 4096;    // largest scene accepted
  int max_steps_per_request = 10000;  // steps one request may ask of one world
  std::string asset_dir;              // where MJCF / URDF file references resolve; "" = none
  int scene_cache_size = 16;          // compiled scenes kept for later requests; 0: none
};

// A scene read and compiled, what CreateWorlds needs of it; shared by every request that sends
// the same scene (SceneCache), so their worlds share one Model.
struct PreparedScene {
  std::shared_ptr<const Model> model;
  // Where the scene file's bodies and joints went, and the same as FileJointCoordinates takes it
  // (SourceMapToImport) or why the scene has no file coordinates.
  std::shared_ptr<const v1::SourceMap> source;
  std::shared_ptr<const absl::StatusOr<ImportResult>> file;
  std::vector<std::string> warnings;  // the importer's
};

// The last `capacity` scenes prepared, by their bytes (deterministic serialisation). Training
// workers each create their worlds of one scene in a request of their own: the first request
// pays the import (0.3 s for an MJCF muscle model's length-range simulation) and the compile,
// the others find them here. Scenes that read files from the asset directory are not kept (a
// file may change between requests), nor are scenes over kMaxKeyBytes. Thread-safe.
class SceneCache {
 public:
  static constexpr size_t kMaxKeyBytes = size_t{4} << 20;
  explicit SceneCache(int capacity) : capacity_(capacity) {}
  // The scene prepared for `key`, or nullptr; a hit becomes the most recent entry.
  std::shared_ptr<const PreparedScene> Find(const std::string& key);
  // Keeps `scene` for `key`, dropping the least recently used entry past the capacity.
  void Insert(std::string key, std::shared_ptr<const PreparedScene> scene);

 private:
  struct Entry {
    size_t hash;
    std::string key;
    std::shared_ptr<const PreparedScene> scene;
  };
  const int capacity_;
  absl::Mutex mutex_;
  std::list<Entry> entries_ ABSL_GUARDED_BY(mutex_);  // most recent first; a handful of scenes
};

class SimulationCore {
 public:
  // A world as the server knows it.
  struct World {
    uint64_t id = 0;        // server id: (replica_id << 48) | counter
    WorldId engine_id = 0;  // id inside the Simulator
    std::string owner;      // client identity
    std::shared_ptr<const Model> model;
    // Where the scene file's bodies and joints went; shared by the worlds created together.
    std::shared_ptr<const v1::SourceMap> source;
    // `source` as FileJointCoordinates takes it (SourceMapToImport), or why the world has no
    // file coordinates; shared likewise.
    std::shared_ptr<const absl::StatusOr<ImportResult>> file;
    SolverOptions options;      // effective options (scene plus creation overrides)
    int contact_capacity = -1;  // requested at creation; -1: the model's
  };

  // A validated step request: resolved worlds and decoded inputs. Producing one changes nothing.
  struct PreparedStep {
    std::vector<World*> worlds;         // (world_count), request order
    std::vector<int> steps;             // (world_count)
    std::vector<Real> controls;         // (sum of actuator_count) or empty: keep current
    std::vector<Real> external_forces;  // (sum of body_count x 6) or empty: keep current
    std::vector<Real> mocap_pose;       // (sum of mocap_count x 7) or empty: keep current
  };

  static absl::StatusOr<std::unique_ptr<SimulationCore>> Create(const CoreOptions& options,
                                                                Metrics* metrics);

  // Reads and compiles a scene (or finds it in the cache), checking the server's scene limits.
  // Touches no world, so any thread may call it: the service runs it before queueing the
  // creation, so that a heavy import does not hold up every world's steps on the scheduler.
  absl::StatusOr<std::shared_ptr<const PreparedScene>> PrepareScene(const v1::Scene& scene);
  // Creates request.count() worlds of `scene` (PrepareScene of request.scene()).
  absl::Status CreateWorlds(const std::string& owner, const v1::CreateWorldsRequest& request,
                            const PreparedScene& scene, v1::CreateWorldsResponse* response);
  absl::Status DestroyWorlds(const std::string& owner, const v1::DestroyWorldsRequest& request,
                             v1::DestroyWorldsResponse* response);
  absl::Status ListWorlds(const std::string& owner, const v1::ListWorldsRequest& request,
                          v1::ListWorldsResponse* response);
  absl::Status DescribeWorld(const std::string& owner, const v1::DescribeWorldRequest& request,
                             v1::DescribeWorldResponse* response);
  absl::Status GetState(const std::string& owner, const v1::GetStateRequest& request,
                        v1::GetStateResponse* response);
  absl::Status SetState(const std::string& owner, const v1::SetStateRequest& request,
                        v1::SetStateResponse* response);
  absl::Status Reset(const std::string& owner, const v1::ResetRequest& request,
                     v1::ResetResponse* response);
  absl::Status Snapshot(const std::string& owner, const v1::SnapshotRequest& request,
                        v1::SnapshotResponse* response);
  absl::Status Restore(const std::string& owner, const v1::RestoreRequest& request,
                       v1::RestoreResponse* response);
  absl::Status GetParameters(const std::string& owner, const v1::GetParametersRequest& request,
                             v1::GetParametersResponse* response);
  // Compiles each listed world's model with the request's values and swaps them in together
  // (Simulator::SetWorldModels); the worlds keep their state.
  absl::Status SetParameters(const std::string& owner, const v1::SetParametersRequest& request,
                             v1::SetParametersResponse* response);

  // Stepping in phases so the scheduler can merge many requests into one engine call:
  // PrepareStep (validate, no change), ApplyStepInputs, StepWorlds (the batched engine call),
  // Observe.
  absl::StatusOr<PreparedStep> PrepareStep(const std::string& owner,
                                           const v1::StepRequest& request);
  absl::Status ApplyStepInputs(const PreparedStep& step);
  // One engine call for all listed worlds; records engine and per-world solver metrics.
  absl::Status StepWorlds(absl::Span<const World* const> worlds, absl::Span<const int> steps);
  absl::Status Observe(absl::Span<const World* const> worlds, const v1::ObservationRequest& observe,
                       v1::Observations* out) const;

  // Writes every world (scene, owner, engine snapshot) to `dir`, one file per world, and
  // removes files of worlds that no longer exist.
  absl::Status SaveWorlds(const std::string& dir);
  // Recreates the worlds saved in `dir` with their ids and owners. Returns how many.
  absl::StatusOr<int> LoadWorlds(const std::string& dir);

  int world_count() const { return static_cast<int>(worlds_.size()); }
  const Simulator& simulator() const { return *simulator_; }

 private:
  SimulationCore(const CoreOptions& options, std::unique_ptr<Simulator> simulator,
                 Metrics* metrics);

  // The world `id` if it exists and belongs to `owner`; NOT_FOUND naming `field` otherwise.
  absl::StatusOr<World*> Find(const std::string& owner, uint64_t id, const std::string& field);
  // Resolves a list of ids (no duplicates allowed).
  absl::StatusOr<std::vector<World*>> FindAll(const std::string& owner,
                                              const google::protobuf::RepeatedField<uint64_t>& ids,
                                              const char* field);
  std::vector<World*> OwnedWorlds(const std::string& owner);
  absl::StatusOr<World*> AddWorld(uint64_t id, const std::string& owner,
                                  std::shared_ptr<const Model> model,
                                  std::shared_ptr<const v1::SourceMap> source,
                                  std::shared_ptr<const absl::StatusOr<ImportResult>> file,
                                  const SolverOptions& options, int contact_capacity,
                                  WorldId engine_id);
  void RemoveWorld(World* world);
  void UpdateGauges();

  const CoreOptions options_;
  std::unique_ptr<Simulator> simulator_;
  Metrics* metrics_;
  SceneCache scene_cache_;
  // Server id -> world; ids grow with creation, so map order is creation order.
  std::map<uint64_t, std::unique_ptr<World>> worlds_;
  absl::flat_hash_map<std::string, int> owner_world_count_;
  uint64_t next_counter_ = 1;  // low 48 bits of the next id
};

}  // namespace axion::server
