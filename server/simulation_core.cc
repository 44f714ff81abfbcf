#include "server/simulation_core.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/hash/hash.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "axion/v1/world_store.pb.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"
#include "server/arrays.h"
#include "server/parameters.h"
#include "server/scene.h"

namespace axion::server {
namespace {

constexpr int kIdCounterBits = 48;
constexpr uint64_t kIdCounterMask = (uint64_t{1} << kIdCounterBits) - 1;
constexpr char kWorldFilePrefix[] = "world-";
constexpr char kWorldFileSuffix[] = ".axw";

// Engine errors carry the engine's world id, which clients never see; prefix the server id.
absl::Status ForWorld(uint64_t id, const absl::Status& status) {
  if (status.ok()) return status;
  return absl::Status(status.code(), absl::StrCat("world ", id, ": ", status.message()));
}

// Same, and drop the engine's own "world <engine id>: " prefix, which would only confuse.
std::string EngineMessage(const SimulationCore::World& world, const absl::Status& status) {
  std::string message(status.message());
  const std::string engine_prefix = absl::StrCat("world ", world.engine_id, ": ");
  if (message.starts_with(engine_prefix)) message.erase(0, engine_prefix.size());
  return message;
}

absl::Status ForWorld(const SimulationCore::World& world, const absl::Status& status) {
  if (status.ok()) return status;
  return absl::Status(status.code(),
                      absl::StrCat("world ", world.id, ": ", EngineMessage(world, status)));
}

int ActuatorCount(const SimulationCore::World& w) { return w.model->actuator_count(); }
int BodyCount(const SimulationCore::World& w) { return w.model->body_count(); }
int PositionCount(const SimulationCore::World& w) { return w.model->joint_position_count(); }
int DofCount(const SimulationCore::World& w) { return w.model->joint_dof_count(); }
int MocapCount(const SimulationCore::World& w) { return w.model->mocap_count(); }

// Decodes a packed float32 array holding `per_world(world)` x `row` values per world, in world
// order, checking size and finiteness. Empty input decodes to an empty vector ("keep current").
absl::Status DecodeFloats(const std::string& bytes, const char* field,
                          absl::Span<SimulationCore::World* const> worlds,
                          const std::function<int(const SimulationCore::World&)>& per_world,
                          int row, const char* row_shape, std::vector<Real>* out) {
  out->clear();
  if (bytes.empty()) return absl::OkStatus();
  int64_t expected = 0;
  for (const SimulationCore::World* world : worlds) expected += int64_t{per_world(*world)} * row;
  const int64_t count = Float32Count(bytes);
  if (count != expected) {
    return absl::InvalidArgumentError(absl::StrCat(
        field, ": expected ", expected, " float32 values (", 4 * expected, " bytes) for ",
        worlds.size(), " worlds of shape ", row_shape, ", got ", bytes.size(), " bytes"));
  }
  out->resize(static_cast<size_t>(expected));
  int64_t index = 0;
  for (const SimulationCore::World* world : worlds) {
    const int64_t n = int64_t{per_world(*world)} * row;
    for (int64_t j = 0; j < n; ++j, ++index) {
      const float value = ReadFloat32At(bytes, index);
      if (!std::isfinite(value)) {
        return absl::InvalidArgumentError(absl::StrCat(field, ": world ", world->id, ", element ",
                                                       j, ": value ", value, " is not finite"));
      }
      (*out)[static_cast<size_t>(index)] = value;
    }
  }
  return absl::OkStatus();
}

// Controls must lie in each ctrl-limited actuator's range. The client sends float32, and a limit
// such as 0.4 has no exact float32, so the comparison is made in float32 (the client's own
// rounding of the limit is accepted) and the value is then clamped to the exact range.
absl::Status CheckControlRanges(absl::Span<SimulationCore::World* const> worlds,
                                std::vector<Real>* controls) {
  if (controls->empty()) return absl::OkStatus();
  size_t index = 0;
  for (const SimulationCore::World* world : worlds) {
    const ModelDesc& desc = world->model->desc();
    for (int a = 0; a < world->model->actuator_count(); ++a, ++index) {
      const ActuatorDesc& actuator = desc.actuators[a];
      if (!actuator.ctrl_limited) continue;
      Real& value = (*controls)[index];
      const float value_f = static_cast<float>(value);
      if (value_f < static_cast<float>(actuator.ctrl_min) ||
          value_f > static_cast<float>(actuator.ctrl_max)) {
        return absl::InvalidArgumentError(absl::StrCat(
            "controls: world ", world->id, ", actuator ", a, " '", actuator.name, "': value ",
            value_f, " outside ctrl range [", actuator.ctrl_min, ", ", actuator.ctrl_max, "]"));
      }
      value = std::min(std::max(value, actuator.ctrl_min), actuator.ctrl_max);
    }
  }
  return absl::OkStatus();
}

// File coordinates exist only for worlds of a model file: a request asking for them of a world
// without is refused whole, before it changes anything (a step's inputs included).
absl::Status CheckFileObservations(absl::Span<const SimulationCore::World* const> worlds,
                                   const v1::ObservationRequest& observe) {
  if (!observe.file_position() && !observe.file_velocity() && !observe.sensor_data())
    return absl::OkStatus();
  const char* field = observe.file_position()   ? "observe.file_position"
                      : observe.file_velocity() ? "observe.file_velocity"
                                                : "observe.sensor_data";
  for (const SimulationCore::World* world : worlds) {
    const absl::Status& status = world->file->status();
    if (!status.ok()) {
      return absl::Status(status.code(),
                          absl::StrCat(field, ": world ", world->id, ": ", status.message()));
    }
  }
  return absl::OkStatus();
}

// Body poses from a client: quaternions must be non-zero; they are normalised here.
absl::Status NormalizePoses(absl::Span<SimulationCore::World* const> worlds, const char* field,
                            std::vector<Real>* poses,
                            int (*count)(const SimulationCore::World&) = BodyCount,
                            const char* element = "body") {
  if (poses->empty()) return absl::OkStatus();
  size_t offset = 0;
  for (const SimulationCore::World* world : worlds) {
    for (int b = 0; b < count(*world); ++b, offset += 7) {
      Real* q = poses->data() + offset + 3;
      const Real n = std::sqrt(q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3]);
      if (!(n > Real(1e-6))) {
        return absl::InvalidArgumentError(absl::StrCat(field, ": world ", world->id, ", ", element,
                                                       " ", b, ": quaternion norm ", n,
                                                       " is not positive"));
      }
      for (int k = 0; k < 4; ++k) q[k] /= n;
    }
  }
  return absl::OkStatus();
}

// Applies `pose` / `velocity` (either may be empty: keep) to the worlds' bodies.
absl::Status ApplyBodyState(Simulator* simulator, absl::Span<SimulationCore::World* const> worlds,
                            const std::vector<Real>& pose, const std::vector<Real>& velocity) {
  if (pose.empty() && velocity.empty()) return absl::OkStatus();
  size_t pose_offset = 0, velocity_offset = 0;
  for (SimulationCore::World* world : worlds) {
    absl::StatusOr<BodyState> state = simulator->GetBodyState(world->engine_id);
    if (!state.ok()) return ForWorld(*world, state.status());
    const size_t body_count = static_cast<size_t>(world->model->body_count());
    if (!pose.empty()) {
      std::copy_n(pose.begin() + static_cast<std::ptrdiff_t>(pose_offset), body_count * 7,
                  state->pose.begin());
      pose_offset += body_count * 7;
    }
    if (!velocity.empty()) {
      std::copy_n(velocity.begin() + static_cast<std::ptrdiff_t>(velocity_offset), body_count * 6,
                  state->velocity.begin());
      velocity_offset += body_count * 6;
    }
    absl::Status status = simulator->SetBodyState(world->engine_id, *state);
    if (!status.ok()) return ForWorld(*world, status);
  }
  return absl::OkStatus();
}

// The joint state to give one world: the request's positions and velocities where given (its
// slices of `position` / `velocity` start at the offsets), the world's current ones where not,
// since the engine takes both whole.
absl::StatusOr<JointState> RequestedJointState(const Simulator& simulator,
                                               const SimulationCore::World& world,
                                               const std::vector<Real>& position,
                                               size_t position_offset,
                                               const std::vector<Real>& velocity,
                                               size_t velocity_offset) {
  JointState state;
  if (position.empty() || velocity.empty()) {
    absl::StatusOr<JointState> current = simulator.GetJointState(world.engine_id);
    if (!current.ok()) return ForWorld(world, current.status());
    state = std::move(*current);
  }
  if (!position.empty()) {
    const auto first = position.begin() + static_cast<std::ptrdiff_t>(position_offset);
    state.position.assign(first, first + PositionCount(world));
  }
  if (!velocity.empty()) {
    const auto first = velocity.begin() + static_cast<std::ptrdiff_t>(velocity_offset);
    state.velocity.assign(first, first + DofCount(world));
  }
  return state;
}

// Runs the engine's forward kinematics on each world's requested joint state without setting
// it, so that whatever SetJointState would refuse (a ball joint's zero quaternion) is refused
// before any world changes. Where the bodies end up does not matter here: they start from
// identity poses.
absl::Status CheckJointState(const Simulator& simulator,
                             absl::Span<SimulationCore::World* const> worlds,
                             const std::vector<Real>& position, const std::vector<Real>& velocity) {
  if (position.empty() && velocity.empty()) return absl::OkStatus();
  const char* field = velocity.empty()   ? "joint_position"
                      : position.empty() ? "joint_velocity"
                                         : "joint_position / joint_velocity";
  size_t position_offset = 0, velocity_offset = 0;
  for (const SimulationCore::World* world : worlds) {
    absl::StatusOr<JointState> joints = RequestedJointState(
        simulator, *world, position, position_offset, velocity, velocity_offset);
    if (!joints.ok()) return joints.status();
    const size_t body_count = static_cast<size_t>(world->model->body_count());
    BodyState bodies;
    bodies.pose.assign(body_count * 7, 0);
    for (size_t b = 0; b < body_count; ++b) bodies.pose[7 * b + 3] = 1;
    bodies.velocity.assign(body_count * 6, 0);
    absl::StatusOr<BodyState> placed =
        BodyStateFromJoints(*world->model, *joints, std::move(bodies));
    if (!placed.ok()) {
      return absl::Status(placed.status().code(), absl::StrCat(field, ": world ", world->id, ": ",
                                                               placed.status().message()));
    }
    if (!position.empty()) position_offset += static_cast<size_t>(PositionCount(*world));
    if (!velocity.empty()) velocity_offset += static_cast<size_t>(DofCount(*world));
  }
  return absl::OkStatus();
}

// Sets the worlds' joint state (either part may be empty: keep), after any body state of the
// same request, so that a part left out is the one the new body state gives.
absl::Status ApplyJointState(Simulator* simulator, absl::Span<SimulationCore::World* const> worlds,
                             const std::vector<Real>& position, const std::vector<Real>& velocity) {
  if (position.empty() && velocity.empty()) return absl::OkStatus();
  size_t position_offset = 0, velocity_offset = 0;
  for (const SimulationCore::World* world : worlds) {
    absl::StatusOr<JointState> joints = RequestedJointState(
        *simulator, *world, position, position_offset, velocity, velocity_offset);
    if (!joints.ok()) return joints.status();
    absl::Status status = simulator->SetJointState(world->engine_id, *joints);
    if (!status.ok()) return ForWorld(*world, status);
    if (!position.empty()) position_offset += static_cast<size_t>(PositionCount(*world));
    if (!velocity.empty()) velocity_offset += static_cast<size_t>(DofCount(*world));
  }
  return absl::OkStatus();
}

// NOT_FOUND naming the keyframes the world's scene has, when `keyframe` is none of them.
absl::Status CheckKeyframe(const SimulationCore::World& world, const std::string& keyframe) {
  if (world.model->FindKeyframe(keyframe) >= 0) return absl::OkStatus();
  const std::vector<KeyframeDesc>& keys = world.model->desc().keyframes;
  std::string known = "it has none";
  if (!keys.empty()) {
    known = "its keyframes: ";
    for (size_t k = 0; k < keys.size(); ++k) {
      absl::StrAppend(&known, k == 0 ? "" : ", ", "'", keys[k].name, "'");
    }
    // unnamed ones (MJCF keys often are) are reached by index only
    absl::StrAppend(&known, "; or an index from 0 to ", keys.size() - 1);
  }
  return absl::NotFoundError(absl::StrCat("keyframe: world ", world.id, ": scene '",
                                          world.model->name(), "' has no keyframe '", keyframe,
                                          "' (", known, ")"));
}

// Sets per-world slices of a flat array with `setter`.
absl::Status ApplyPerWorld(
    absl::Span<SimulationCore::World* const> worlds, const std::vector<Real>& values,
    const std::function<int(const SimulationCore::World&)>& per_world, int row,
    const std::function<absl::Status(WorldId, absl::Span<const Real>)>& set) {
  if (values.empty()) return absl::OkStatus();
  size_t offset = 0;
  for (const SimulationCore::World* world : worlds) {
    const size_t n = static_cast<size_t>(per_world(*world)) * static_cast<size_t>(row);
    absl::Status status = set(world->engine_id, absl::MakeConstSpan(values.data() + offset, n));
    if (!status.ok()) return ForWorld(*world, status);
    offset += n;
  }
  return absl::OkStatus();
}

absl::Status WriteFileAtomically(const std::filesystem::path& path, const std::string& bytes) {
  const std::filesystem::path temp = path.string() + ".tmp";
  {
    std::ofstream file(temp, std::ios::binary | std::ios::trunc);
    if (!file) return absl::UnavailableError(absl::StrCat("cannot write ", temp.string()));
    file.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    if (!file) return absl::UnavailableError(absl::StrCat("short write to ", temp.string()));
  }
  std::error_code error;
  std::filesystem::rename(temp, path, error);
  if (error) {
    return absl::UnavailableError(
        absl::StrCat("cannot rename ", temp.string(), ": ", error.message()));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::unique_ptr<SimulationCore>> SimulationCore::Create(const CoreOptions& options,
                                                                       Metrics* metrics) {
  if (options.max_worlds_per_client < 1 || options.max_bodies_per_world < 1 ||
      options.max_steps_per_request < 1) {
    return absl::InvalidArgumentError(
        "max_worlds_per_client, max_bodies_per_world and max_steps_per_request must be >= 1");
  }
  absl::StatusOr<std::unique_ptr<Simulator>> simulator = Simulator::Create(options.simulator);
  if (!simulator.ok()) return simulator.status();
  return std::unique_ptr<SimulationCore>(
      new SimulationCore(options, std::move(*simulator), metrics));
}

SimulationCore::SimulationCore(const CoreOptions& options, std::unique_ptr<Simulator> simulator,
                               Metrics* metrics)
    : options_(options),
      simulator_(std::move(simulator)),
      metrics_(metrics),
      scene_cache_(options.scene_cache_size) {
  UpdateGauges();
}

void SimulationCore::UpdateGauges() {
  metrics_->worlds_alive().Set(static_cast<double>(worlds_.size()));
  metrics_->device_memory_bytes().Set(static_cast<double>(simulator_->memory_bytes()));
  metrics_->device_memory_capacity_bytes().Set(
      static_cast<double>(simulator_->memory_capacity_bytes()));
}

absl::StatusOr<SimulationCore::World*> SimulationCore::Find(const std::string& owner, uint64_t id,
                                                            const std::string& field) {
  auto it = worlds_.find(id);
  // Another client's world is reported exactly like a missing one, so ids leak nothing.
  if (it == worlds_.end() || it->second->owner != owner) {
    return absl::NotFoundError(absl::StrCat(field, ": world ", id, " not found"));
  }
  return it->second.get();
}

absl::StatusOr<std::vector<SimulationCore::World*>> SimulationCore::FindAll(
    const std::string& owner, const google::protobuf::RepeatedField<uint64_t>& ids,
    const char* field) {
  std::vector<World*> worlds;
  worlds.reserve(static_cast<size_t>(ids.size()));
  absl::flat_hash_set<uint64_t> seen;
  for (int i = 0; i < ids.size(); ++i) {
    absl::StatusOr<World*> world = Find(owner, ids[i], absl::StrCat(field, "[", i, "]"));
    if (!world.ok()) return world.status();
    if (!seen.insert(ids[i]).second) {
      return absl::InvalidArgumentError(
          absl::StrCat(field, "[", i, "]: world ", ids[i], " is listed twice"));
    }
    worlds.push_back(*world);
  }
  return worlds;
}

std::vector<SimulationCore::World*> SimulationCore::OwnedWorlds(const std::string& owner) {
  std::vector<World*> worlds;
  for (auto& [id, world] : worlds_) {
    if (world->owner == owner) worlds.push_back(world.get());
  }
  return worlds;
}

absl::StatusOr<SimulationCore::World*> SimulationCore::AddWorld(
    uint64_t id, const std::string& owner, std::shared_ptr<const Model> model,
    std::shared_ptr<const v1::SourceMap> source,
    std::shared_ptr<const absl::StatusOr<ImportResult>> file, const SolverOptions& options,
    int contact_capacity, WorldId engine_id) {
  auto world = std::make_unique<World>();
  world->id = id;
  world->engine_id = engine_id;
  world->owner = owner;
  world->model = std::move(model);
  world->source = std::move(source);
  world->file = std::move(file);
  world->options = options;
  world->contact_capacity = contact_capacity;
  World* raw = world.get();
  worlds_.emplace(id, std::move(world));
  ++owner_world_count_[owner];
  return raw;
}

void SimulationCore::RemoveWorld(World* world) {
  auto count = owner_world_count_.find(world->owner);
  if (count != owner_world_count_.end() && --count->second == 0) owner_world_count_.erase(count);
  worlds_.erase(world->id);
}

std::shared_ptr<const PreparedScene> SceneCache::Find(const std::string& key) {
  const size_t hash = absl::HashOf(key);
  absl::MutexLock lock(&mutex_);
  for (auto it = entries_.begin(); it != entries_.end(); ++it) {
    if (it->hash != hash || it->key != key) continue;
    entries_.splice(entries_.begin(), entries_, it);
    return entries_.front().scene;
  }
  return nullptr;
}

void SceneCache::Insert(std::string key, std::shared_ptr<const PreparedScene> scene) {
  if (capacity_ <= 0 || key.size() > kMaxKeyBytes) return;
  const size_t hash = absl::HashOf(key);
  absl::MutexLock lock(&mutex_);
  // (two requests may have prepared the same scene at once: the later one replaces it)
  entries_.remove_if([&](const Entry& e) { return e.hash == hash && e.key == key; });
  entries_.push_front({hash, std::move(key), std::move(scene)});
  if (static_cast<int>(entries_.size()) > capacity_) entries_.pop_back();
}

absl::StatusOr<std::shared_ptr<const PreparedScene>> SimulationCore::PrepareScene(
    const v1::Scene& scene) {
  std::string key;
  {
    google::protobuf::io::StringOutputStream stream(&key);
    google::protobuf::io::CodedOutputStream coded(&stream);
    coded.SetSerializationDeterministic(true);
    scene.SerializeToCodedStream(&coded);
  }
  if (std::shared_ptr<const PreparedScene> found = scene_cache_.Find(key)) {
    metrics_->scene_cache_hits().Increment();
    return found;
  }
  metrics_->scene_cache_misses().Increment();
  const auto start = std::chrono::steady_clock::now();
  absl::StatusOr<ImportedScene> imported =
      ImportScene(scene, options_.asset_dir, options_.max_bodies_per_world);
  if (!imported.ok()) {
    // Whatever went wrong reading the scene, the request itself is what is malformed.
    return absl::InvalidArgumentError(imported.status().message());
  }
  if (static_cast<int64_t>(imported->model.bodies.size()) > options_.max_bodies_per_world) {
    return absl::InvalidArgumentError(absl::StrCat(
        "scene: ", imported->model.bodies.size(), " bodies, above the server limit of ",
        options_.max_bodies_per_world, " bodies per world"));
  }
  absl::StatusOr<std::shared_ptr<const Model>> model = Model::Compile(std::move(imported->model));
  if (!model.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("scene: ", model.status().message()));
  }
  auto prepared = std::make_shared<PreparedScene>();
  prepared->model = *std::move(model);
  prepared->source = std::make_shared<const v1::SourceMap>(std::move(imported->source));
  prepared->file =
      std::make_shared<const absl::StatusOr<ImportResult>>(SourceMapToImport(*prepared->source));
  prepared->warnings = std::move(imported->warnings);
  metrics_->scene_prepare_seconds().Observe(
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  // a scene that reads files is read again next time (they may have changed)
  if (!SceneReadsFiles(scene)) scene_cache_.Insert(std::move(key), prepared);
  return prepared;
}

absl::Status SimulationCore::CreateWorlds(const std::string& owner,
                                          const v1::CreateWorldsRequest& request,
                                          const PreparedScene& scene,
                                          v1::CreateWorldsResponse* response) {
  const int count = request.count() == 0 ? 1 : request.count();
  if (count < 0) {
    return absl::InvalidArgumentError(absl::StrCat("count: value ", count, " is negative"));
  }
  auto owned = owner_world_count_.find(owner);
  const int64_t held = owned == owner_world_count_.end() ? 0 : owned->second;
  if (held + count > options_.max_worlds_per_client) {
    return absl::ResourceExhaustedError(
        absl::StrCat("count: creating ", count, " worlds would give client '", owner, "' ",
                     held + count, " worlds, above the limit of ", options_.max_worlds_per_client));
  }
  if (request.contact_capacity() < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("contact_capacity: value ", request.contact_capacity(), " is negative"));
  }
  SolverOptions effective = scene.model->desc().options;
  absl::Status overrides = ApplySolverOverrides(request.solver_options(), &effective);
  if (!overrides.ok()) return overrides;
  WorldOptions world_options;
  const bool override_options = request.has_solver_options();
  if (override_options) world_options.options = &effective;
  const int contact_capacity = request.contact_capacity() > 0 ? request.contact_capacity() : -1;
  world_options.contact_capacity = contact_capacity;
  absl::StatusOr<std::vector<WorldId>> engine_ids =
      simulator_->CreateWorlds(scene.model, count, world_options);
  if (!engine_ids.ok()) return engine_ids.status();
  for (WorldId engine_id : *engine_ids) {
    const uint64_t id =
        (uint64_t{options_.replica_id} << kIdCounterBits) | (next_counter_++ & kIdCounterMask);
    absl::StatusOr<World*> world = AddWorld(id, owner, scene.model, scene.source, scene.file,
                                            effective, contact_capacity, engine_id);
    if (!world.ok()) return world.status();
    response->add_world_ids(id);
  }
  for (const std::string& warning : scene.warnings) response->add_warnings(warning);
  DescribeModel(*scene.model, effective, contact_capacity, *scene.source, *scene.file,
                response->mutable_description());
  UpdateGauges();
  return absl::OkStatus();
}

absl::Status SimulationCore::DestroyWorlds(const std::string& owner,
                                           const v1::DestroyWorldsRequest& request,
                                           v1::DestroyWorldsResponse* response) {
  std::vector<World*> worlds;
  if (request.all()) {
    if (!request.world_ids().empty()) {
      return absl::InvalidArgumentError("world_ids: must be empty when all is set");
    }
    worlds = OwnedWorlds(owner);
  } else {
    absl::StatusOr<std::vector<World*>> found = FindAll(owner, request.world_ids(), "world_ids");
    if (!found.ok()) return found.status();
    worlds = std::move(*found);
  }
  // one repack of the batch for all of them (one by one, N worlds cost N repacks of the rest)
  std::vector<WorldId> engine_ids;
  engine_ids.reserve(worlds.size());
  for (const World* world : worlds) engine_ids.push_back(world->engine_id);
  absl::Status status = simulator_->DestroyWorlds(engine_ids);
  if (!status.ok()) return status;
  for (World* world : worlds) {
    const uint64_t id = world->id;
    RemoveWorld(world);
    response->add_world_ids(id);
  }
  UpdateGauges();
  return absl::OkStatus();
}

absl::Status SimulationCore::ListWorlds(const std::string& owner, const v1::ListWorldsRequest&,
                                        v1::ListWorldsResponse* response) {
  for (World* world : OwnedWorlds(owner)) {
    v1::WorldInfo* info = response->add_worlds();
    info->set_world_id(world->id);
    info->set_model_name(world->model->name());
    absl::StatusOr<WorldStats> stats = simulator_->GetStats(world->engine_id);
    if (!stats.ok()) return ForWorld(*world, stats.status());
    info->set_step_count(stats->step_count);
    info->set_time(stats->time);
  }
  return absl::OkStatus();
}

absl::Status SimulationCore::DescribeWorld(const std::string& owner,
                                           const v1::DescribeWorldRequest& request,
                                           v1::DescribeWorldResponse* response) {
  absl::StatusOr<World*> world = Find(owner, request.world_id(), "world_id");
  if (!world.ok()) return world.status();
  response->set_world_id((*world)->id);
  DescribeModel(*(*world)->model, (*world)->options, (*world)->contact_capacity, *(*world)->source,
                *(*world)->file, response->mutable_description());
  if (request.include_model()) {
    ModelDescToProto((*world)->model->desc(), response->mutable_model());
    SolverOptionsToProto((*world)->options, response->mutable_model()->mutable_options());
  }
  return absl::OkStatus();
}

absl::Status SimulationCore::GetState(const std::string& owner, const v1::GetStateRequest& request,
                                      v1::GetStateResponse* response) {
  absl::StatusOr<std::vector<World*>> worlds = FindAll(owner, request.world_ids(), "world_ids");
  if (!worlds.ok()) return worlds.status();
  return Observe(*worlds, request.observe(), response->mutable_observations());
}

absl::Status SimulationCore::SetState(const std::string& owner, const v1::SetStateRequest& request,
                                      v1::SetStateResponse*) {
  absl::StatusOr<std::vector<World*>> worlds = FindAll(owner, request.world_ids(), "world_ids");
  if (!worlds.ok()) return worlds.status();
  std::vector<Real> pose, velocity, controls, forces;
  absl::Status status = DecodeFloats(request.body_pose(), "body_pose", *worlds, BodyCount, 7,
                                     "(body_count x 7)", &pose);
  if (status.ok()) status = NormalizePoses(*worlds, "body_pose", &pose);
  if (status.ok()) {
    status = DecodeFloats(request.body_velocity(), "body_velocity", *worlds, BodyCount, 6,
                          "(body_count x 6)", &velocity);
  }
  if (status.ok()) {
    status = DecodeFloats(request.controls(), "controls", *worlds, ActuatorCount, 1,
                          "(actuator_count)", &controls);
  }
  if (status.ok()) status = CheckControlRanges(*worlds, &controls);
  if (status.ok()) {
    status = DecodeFloats(request.external_forces(), "external_forces", *worlds, BodyCount, 6,
                          "(body_count x 6)", &forces);
  }
  std::vector<Real> joint_position, joint_velocity;
  if (status.ok()) {
    status = DecodeFloats(request.joint_position(), "joint_position", *worlds, PositionCount, 1,
                          "(joint_position_count)", &joint_position);
  }
  if (status.ok()) {
    status = DecodeFloats(request.joint_velocity(), "joint_velocity", *worlds, DofCount, 1,
                          "(joint_dof_count)", &joint_velocity);
  }
  std::vector<Real> mocap;
  if (status.ok()) {
    status = DecodeFloats(request.mocap_pose(), "mocap_pose", *worlds, MocapCount, 7,
                          "(mocap_count x 7)", &mocap);
  }
  if (status.ok()) status = NormalizePoses(*worlds, "mocap_pose", &mocap, MocapCount, "mocap body");
  if (status.ok()) status = CheckJointState(*simulator_, *worlds, joint_position, joint_velocity);
  if (!status.ok()) return status;
  // first, so that joints on a mocap body start from where it now is
  status = ApplyPerWorld(*worlds, mocap, MocapCount, 7, [&](WorldId id, auto values) {
    return simulator_->SetMocapPoses(id, values);
  });
  if (!status.ok()) return status;
  status = ApplyBodyState(simulator_.get(), *worlds, pose, velocity);
  if (!status.ok()) return status;
  // after the body state, so that a floating base is where its limbs are placed from
  status = ApplyJointState(simulator_.get(), *worlds, joint_position, joint_velocity);
  if (!status.ok()) return status;
  status = ApplyPerWorld(*worlds, controls, ActuatorCount, 1, [&](WorldId id, auto values) {
    return simulator_->SetControls(id, values);
  });
  if (!status.ok()) return status;
  return ApplyPerWorld(*worlds, forces, BodyCount, 6, [&](WorldId id, auto values) {
    return simulator_->SetExternalForces(id, values);
  });
}

absl::Status SimulationCore::Reset(const std::string& owner, const v1::ResetRequest& request,
                                   v1::ResetResponse* response) {
  std::vector<World*> listed;
  if (request.all()) {
    if (!request.world_ids().empty()) {
      return absl::InvalidArgumentError("world_ids: must be empty when all is set");
    }
    listed = OwnedWorlds(owner);
  } else {
    absl::StatusOr<std::vector<World*>> found = FindAll(owner, request.world_ids(), "world_ids");
    if (!found.ok()) return found.status();
    listed = std::move(*found);
  }
  if (!request.mask().empty() && request.mask_size() != static_cast<int>(listed.size())) {
    return absl::InvalidArgumentError(absl::StrCat(
        "mask: expected ", listed.size(), " values (one per world), got ", request.mask_size()));
  }
  std::vector<World*> worlds;
  for (size_t i = 0; i < listed.size(); ++i) {
    if (request.mask().empty() || request.mask(static_cast<int>(i))) worlds.push_back(listed[i]);
  }
  std::vector<Real> pose, velocity;
  absl::Status status = DecodeFloats(request.body_pose(), "body_pose", worlds, BodyCount, 7,
                                     "(body_count x 7)", &pose);
  if (status.ok()) status = NormalizePoses(worlds, "body_pose", &pose);
  if (status.ok()) {
    status = DecodeFloats(request.body_velocity(), "body_velocity", worlds, BodyCount, 6,
                          "(body_count x 6)", &velocity);
  }
  std::vector<Real> joint_position, joint_velocity;
  if (status.ok()) {
    status = DecodeFloats(request.joint_position(), "joint_position", worlds, PositionCount, 1,
                          "(joint_position_count)", &joint_position);
  }
  if (status.ok()) {
    status = DecodeFloats(request.joint_velocity(), "joint_velocity", worlds, DofCount, 1,
                          "(joint_dof_count)", &joint_velocity);
  }
  if (status.ok()) status = CheckJointState(*simulator_, worlds, joint_position, joint_velocity);
  const std::string& keyframe = request.keyframe();
  for (size_t i = 0; status.ok() && !keyframe.empty() && i < worlds.size(); ++i) {
    status = CheckKeyframe(*worlds[i], keyframe);
  }
  if (!status.ok()) return status;
  for (World* world : worlds) {
    status = keyframe.empty() ? simulator_->Reset(world->engine_id)
                              : simulator_->Reset(world->engine_id, keyframe);
    if (!status.ok()) return ForWorld(*world, status);
    response->add_world_ids(world->id);
  }
  status = ApplyBodyState(simulator_.get(), worlds, pose, velocity);
  if (!status.ok()) return status;
  return ApplyJointState(simulator_.get(), worlds, joint_position, joint_velocity);
}

absl::Status SimulationCore::Snapshot(const std::string& owner, const v1::SnapshotRequest& request,
                                      v1::SnapshotResponse* response) {
  absl::StatusOr<std::vector<World*>> worlds = FindAll(owner, request.world_ids(), "world_ids");
  if (!worlds.ok()) return worlds.status();
  for (World* world : *worlds) {
    absl::StatusOr<std::string> bytes = simulator_->Snapshot(world->engine_id);
    if (!bytes.ok()) return ForWorld(*world, bytes.status());
    v1::WorldSnapshot* snapshot = response->add_snapshots();
    snapshot->set_world_id(world->id);
    snapshot->set_data(std::move(*bytes));
  }
  return absl::OkStatus();
}

absl::Status SimulationCore::Restore(const std::string& owner, const v1::RestoreRequest& request,
                                     v1::RestoreResponse*) {
  google::protobuf::RepeatedField<uint64_t> ids;
  for (const v1::WorldSnapshot& snapshot : request.snapshots()) ids.Add(snapshot.world_id());
  absl::StatusOr<std::vector<World*>> worlds = FindAll(owner, ids, "snapshots.world_id");
  if (!worlds.ok()) return worlds.status();
  // The engine checks a snapshot only while restoring it, so keep each world's current state to
  // put back if a later snapshot of the request is refused: all or nothing.
  std::vector<std::string> backups;
  for (World* world : *worlds) {
    absl::StatusOr<std::string> bytes = simulator_->Snapshot(world->engine_id);
    if (!bytes.ok()) return ForWorld(*world, bytes.status());
    backups.push_back(std::move(*bytes));
  }
  for (size_t i = 0; i < worlds->size(); ++i) {
    World* world = (*worlds)[i];
    absl::Status status =
        simulator_->Restore(world->engine_id, request.snapshots(static_cast<int>(i)).data());
    if (!status.ok()) {
      for (size_t k = 0; k < i; ++k) {
        absl::Status undo = simulator_->Restore((*worlds)[k]->engine_id, backups[k]);
        if (!undo.ok()) return ForWorld(*(*worlds)[k], undo);
      }
      return absl::Status(status.code(), absl::StrCat("snapshots[", i, "]: world ", world->id, ": ",
                                                      EngineMessage(*world, status)));
    }
  }
  return absl::OkStatus();
}

absl::Status SimulationCore::GetParameters(const std::string& owner,
                                           const v1::GetParametersRequest& request,
                                           v1::GetParametersResponse* response) {
  absl::StatusOr<std::vector<World*>> worlds = FindAll(owner, request.world_ids(), "world_ids");
  if (!worlds.ok()) return worlds.status();
  for (const World* world : *worlds) {
    response->add_world_ids(world->id);
    AppendParameters(world->model->desc(), world->options, response->mutable_parameters());
  }
  return absl::OkStatus();
}

absl::Status SimulationCore::SetParameters(const std::string& owner,
                                           const v1::SetParametersRequest& request,
                                           v1::SetParametersResponse*) {
  absl::StatusOr<std::vector<World*>> worlds = FindAll(owner, request.world_ids(), "world_ids");
  if (!worlds.ok()) return worlds.status();
  // each world's values written into copies, compiled and checked before any world changes
  std::vector<ModelDesc> descs;
  std::vector<SolverOptions> options;
  descs.reserve(worlds->size());
  for (const World* world : *worlds) {
    descs.push_back(world->model->desc());
    options.push_back(world->options);
  }
  std::vector<ParameterTarget> targets;
  for (size_t i = 0; i < worlds->size(); ++i)
    targets.push_back({(*worlds)[i]->id, &descs[i], &options[i]});
  bool changes_model = false, changes_options = false;
  absl::Status status =
      ApplyParameters(request.parameters(), targets, &changes_model, &changes_options);
  if (!status.ok()) return status;
  std::vector<WorldModelUpdate> updates(worlds->size());
  for (size_t i = 0; i < worlds->size(); ++i) {
    const World& world = *(*worlds)[i];
    updates[i].world = world.engine_id;
    if (changes_model) {
      absl::StatusOr<std::shared_ptr<const Model>> model = Model::Compile(std::move(descs[i]));
      if (!model.ok()) return ForWorld(world, model.status());
      status = CheckSameStructure(*world.model, **model);
      if (!status.ok()) return ForWorld(world, status);
      updates[i].model = *std::move(model);
    }
    if (changes_options) updates[i].options = options[i];
  }
  status = simulator_->SetWorldModels(updates);
  if (!status.ok()) return status;
  for (size_t i = 0; i < worlds->size(); ++i) {
    World& world = *(*worlds)[i];
    if (updates[i].model != nullptr) world.model = updates[i].model;
    if (changes_options) world.options = options[i];
  }
  return absl::OkStatus();
}

absl::StatusOr<SimulationCore::PreparedStep> SimulationCore::PrepareStep(
    const std::string& owner, const v1::StepRequest& request) {
  if (request.world_ids().empty()) {
    return absl::InvalidArgumentError("world_ids: no worlds to step");
  }
  PreparedStep step;
  absl::StatusOr<std::vector<World*>> worlds = FindAll(owner, request.world_ids(), "world_ids");
  if (!worlds.ok()) return worlds.status();
  step.worlds = std::move(*worlds);
  const int world_count = static_cast<int>(step.worlds.size());
  if (request.steps_size() > 1 && request.steps_size() != world_count) {
    return absl::InvalidArgumentError(absl::StrCat("steps: expected 0, 1 or ", world_count,
                                                   " values, got ", request.steps_size()));
  }
  step.steps.resize(static_cast<size_t>(world_count));
  for (int i = 0; i < world_count; ++i) {
    const int n = request.steps().empty() ? 1 : request.steps(request.steps_size() == 1 ? 0 : i);
    if (n < 0 || n > options_.max_steps_per_request) {
      return absl::InvalidArgumentError(
          absl::StrCat("steps: world ", step.worlds[static_cast<size_t>(i)]->id, ": value ", n,
                       " outside [0, ", options_.max_steps_per_request, "]"));
    }
    step.steps[static_cast<size_t>(i)] = n;
  }
  absl::Status status = DecodeFloats(request.controls(), "controls", step.worlds, ActuatorCount, 1,
                                     "(actuator_count)", &step.controls);
  if (status.ok()) status = CheckControlRanges(step.worlds, &step.controls);
  if (status.ok()) {
    status = DecodeFloats(request.external_forces(), "external_forces", step.worlds, BodyCount, 6,
                          "(body_count x 6)", &step.external_forces);
  }
  if (status.ok()) {
    status = DecodeFloats(request.mocap_pose(), "mocap_pose", step.worlds, MocapCount, 7,
                          "(mocap_count x 7)", &step.mocap_pose);
  }
  if (status.ok()) {
    status = NormalizePoses(step.worlds, "mocap_pose", &step.mocap_pose, MocapCount, "mocap body");
  }
  if (status.ok()) status = CheckFileObservations(step.worlds, request.observe());
  if (!status.ok()) return status;
  return step;
}

absl::Status SimulationCore::ApplyStepInputs(const PreparedStep& step) {
  absl::Status status =
      ApplyPerWorld(step.worlds, step.controls, ActuatorCount, 1,
                    [&](WorldId id, auto values) { return simulator_->SetControls(id, values); });
  if (!status.ok()) return status;
  status = ApplyPerWorld(step.worlds, step.mocap_pose, MocapCount, 7, [&](WorldId id, auto values) {
    return simulator_->SetMocapPoses(id, values);
  });
  if (!status.ok()) return status;
  return ApplyPerWorld(
      step.worlds, step.external_forces, BodyCount, 6,
      [&](WorldId id, auto values) { return simulator_->SetExternalForces(id, values); });
}

absl::Status SimulationCore::StepWorlds(absl::Span<const World* const> worlds,
                                        absl::Span<const int> steps) {
  std::vector<WorldId> engine_ids;
  std::vector<int> engine_steps;
  engine_ids.reserve(worlds.size());
  engine_steps.reserve(worlds.size());
  for (size_t i = 0; i < worlds.size(); ++i) {
    if (steps[i] == 0) continue;
    engine_ids.push_back(worlds[i]->engine_id);
    engine_steps.push_back(steps[i]);
  }
  if (engine_ids.empty()) return absl::OkStatus();
  const auto start = std::chrono::steady_clock::now();
  absl::Status status = simulator_->Step(engine_ids, engine_steps);
  const std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - start;
  metrics_->engine_step_seconds().Observe(elapsed.count());
  metrics_->batch_worlds().Observe(static_cast<double>(engine_ids.size()));
  metrics_->engine_step_calls().Increment();
  if (!status.ok()) return status;
  Metrics::WorldStepAccumulator accumulator(*metrics_);
  for (size_t i = 0; i < worlds.size(); ++i) {
    if (steps[i] == 0) continue;
    absl::StatusOr<WorldStats> stats = simulator_->GetStats(worlds[i]->engine_id);
    if (!stats.ok()) return ForWorld(*worlds[i], stats.status());
    accumulator.Add(steps[i], stats->newton_iterations, stats->cr_iterations, stats->residual,
                    stats->contact_count, (stats->flags & kWorldNotConverged) == 0,
                    stats->substeps > 1, stats->contact_redos > 0);
  }
  accumulator.Commit(metrics_);
  metrics_->device_memory_bytes().Set(static_cast<double>(simulator_->memory_bytes()));
  metrics_->device_memory_capacity_bytes().Set(
      static_cast<double>(simulator_->memory_capacity_bytes()));
  return absl::OkStatus();
}

absl::Status SimulationCore::Observe(absl::Span<const World* const> worlds,
                                     const v1::ObservationRequest& observe,
                                     v1::Observations* out) const {
  absl::Status checked = CheckFileObservations(worlds, observe);
  if (!checked.ok()) return checked;
  for (const World* world : worlds) out->add_world_ids(world->id);
  size_t total_bodies = 0;
  for (const World* world : worlds) total_bodies += static_cast<size_t>(world->model->body_count());
  if (observe.body_pose() || observe.body_velocity()) {
    std::string* pose = observe.body_pose() ? out->mutable_body_pose() : nullptr;
    std::string* velocity = observe.body_velocity() ? out->mutable_body_velocity() : nullptr;
    if (pose) pose->reserve(total_bodies * 7 * 4);
    if (velocity) velocity->reserve(total_bodies * 6 * 4);
    for (const World* world : worlds) {
      absl::StatusOr<BodyState> state = simulator_->GetBodyState(world->engine_id);
      if (!state.ok()) return ForWorld(*world, state.status());
      if (pose) AppendFloat32(state->pose, pose);
      if (velocity) AppendFloat32(state->velocity, velocity);
    }
  }
  if (observe.joint_position() || observe.joint_velocity()) {
    for (const World* world : worlds) {
      absl::StatusOr<JointState> state = simulator_->GetJointState(world->engine_id);
      if (!state.ok()) return ForWorld(*world, state.status());
      if (observe.joint_position()) AppendFloat32(state->position, out->mutable_joint_position());
      if (observe.joint_velocity()) AppendFloat32(state->velocity, out->mutable_joint_velocity());
    }
  }
  if (observe.file_position() || observe.file_velocity()) {
    for (const World* world : worlds) {
      absl::StatusOr<BodyState> bodies = simulator_->GetBodyState(world->engine_id);
      if (!bodies.ok()) return ForWorld(*world, bodies.status());
      absl::StatusOr<JointState> joints = simulator_->GetJointState(world->engine_id);
      if (!joints.ok()) return ForWorld(*world, joints.status());
      absl::StatusOr<FileCoordinates> file =
          FileCoordinatesOf(**world->file, *world->model, *bodies, *joints);
      if (!file.ok()) return ForWorld(*world, file.status());
      if (observe.file_position()) AppendFloat32(file->position, out->mutable_file_position());
      if (observe.file_velocity()) AppendFloat32(file->velocity, out->mutable_file_velocity());
    }
  }
  if (observe.sensor_data()) {
    for (const World* world : worlds) {
      absl::StatusOr<std::vector<Real>> data =
          SensorDataOf(**world->file, *world->model, *simulator_, world->engine_id);
      if (!data.ok()) return ForWorld(*world, data.status());
      AppendFloat32(*data, out->mutable_sensor_data());
    }
  }
  if (observe.body_contact_force() || observe.contacts()) {
    v1::Contacts* contacts = observe.contacts() ? out->mutable_contacts() : nullptr;
    std::vector<Real> body_force;  // (body_count x 3)
    std::vector<int32_t> bodies;   // (contact_count x 2)
    std::vector<Real> data;        // (contact_count x 10)
    std::vector<Real> torque;      // (contact_count x 3)
    for (const World* world : worlds) {
      absl::StatusOr<std::vector<ContactReport>> reports =
          simulator_->GetContacts(world->engine_id);
      if (!reports.ok()) return ForWorld(*world, reports.status());
      if (observe.body_contact_force()) {
        body_force.assign(static_cast<size_t>(world->model->body_count()) * 3, 0);
        for (const ContactReport& c : *reports) {
          // `force` acts on a; b receives the reaction.
          for (int k = 0; k < 3; ++k) {
            if (c.body_a >= 0) body_force[static_cast<size_t>(c.body_a) * 3 + k] += c.force[k];
            if (c.body_b >= 0) body_force[static_cast<size_t>(c.body_b) * 3 + k] -= c.force[k];
          }
        }
        AppendFloat32(body_force, out->mutable_body_contact_force());
      }
      if (contacts) {
        contacts->add_count(static_cast<int32_t>(reports->size()));
        bodies.clear();
        data.clear();
        torque.clear();
        for (const ContactReport& c : *reports) {
          bodies.push_back(c.body_a);
          bodies.push_back(c.body_b);
          data.insert(data.end(), {c.position.x, c.position.y, c.position.z, c.normal.x, c.normal.y,
                                   c.normal.z, c.gap, c.force.x, c.force.y, c.force.z});
          torque.insert(torque.end(), {c.torque.x, c.torque.y, c.torque.z});
        }
        AppendInt32(bodies, contacts->mutable_body());
        AppendFloat32(data, contacts->mutable_data());
        AppendFloat32(torque, contacts->mutable_torque());
      }
    }
  }
  if (observe.stats()) {
    v1::WorldStats* stats = out->mutable_stats();
    for (const World* world : worlds) {
      absl::StatusOr<WorldStats> s = simulator_->GetStats(world->engine_id);
      if (!s.ok()) return ForWorld(*world, s.status());
      stats->add_newton_iterations(s->newton_iterations);
      stats->add_cr_iterations(s->cr_iterations);
      stats->add_residual(s->residual);
      stats->add_contact_count(s->contact_count);
      stats->add_constraint_rows(s->constraint_rows);
      stats->add_flags(s->flags);
      stats->add_step_count(s->step_count);
      stats->add_time(s->time);
      stats->add_substeps(s->substeps);
      stats->add_contact_redos(s->contact_redos);
      stats->add_line_search_trials(s->line_search_trials);
      stats->add_island_count(s->island_count);
    }
  }
  if (observe.controls()) {
    for (const World* world : worlds) {
      absl::StatusOr<std::vector<Real>> controls = simulator_->GetControls(world->engine_id);
      if (!controls.ok()) return ForWorld(*world, controls.status());
      AppendFloat32(*controls, out->mutable_controls());
    }
  }
  if (observe.actuator_force()) {
    for (const World* world : worlds) {
      absl::StatusOr<std::vector<Real>> forces = simulator_->GetActuatorForces(world->engine_id);
      if (!forces.ok()) return ForWorld(*world, forces.status());
      AppendFloat32(*forces, out->mutable_actuator_force());
    }
  }
  if (observe.mocap_pose()) {
    for (const World* world : worlds) {
      absl::StatusOr<std::vector<Real>> mocap = simulator_->GetMocapPoses(world->engine_id);
      if (!mocap.ok()) return ForWorld(*world, mocap.status());
      AppendFloat32(*mocap, out->mutable_mocap_pose());
    }
  }
  if (observe.tendon_state()) {
    for (const World* world : worlds) {
      absl::StatusOr<std::vector<Real>> tendons = simulator_->GetTendonStates(world->engine_id);
      if (!tendons.ok()) return ForWorld(*world, tendons.status());
      AppendFloat32(*tendons, out->mutable_tendon_state());
    }
  }
  if (observe.activation()) {
    for (const World* world : worlds) {
      absl::StatusOr<std::vector<Real>> activation = simulator_->GetActivations(world->engine_id);
      if (!activation.ok()) return ForWorld(*world, activation.status());
      AppendFloat32(*activation, out->mutable_activation());
    }
  }
  return absl::OkStatus();
}

absl::Status SimulationCore::SaveWorlds(const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code error;
  fs::create_directories(dir, error);
  if (error) {
    return absl::UnavailableError(absl::StrCat("snapshot_dir ", dir, ": ", error.message()));
  }
  absl::flat_hash_set<std::string> written;
  uint64_t index = 0;
  for (const auto& [id, world] : worlds_) {
    v1::StoredWorld stored;
    stored.set_world_id(id);
    stored.set_owner(world->owner);
    ModelDescToProto(world->model->desc(), stored.mutable_model());
    SolverOptionsToProto(world->options, stored.mutable_effective_options());
    stored.set_contact_capacity(world->contact_capacity);
    stored.set_creation_index(index++);
    *stored.mutable_source() = *world->source;
    absl::StatusOr<std::string> snapshot = simulator_->Snapshot(world->engine_id);
    if (!snapshot.ok()) return ForWorld(*world, snapshot.status());
    stored.set_snapshot(std::move(*snapshot));
    const std::string name = absl::StrFormat("%s%016x%s", kWorldFilePrefix, id, kWorldFileSuffix);
    absl::Status status = WriteFileAtomically(fs::path(dir) / name, stored.SerializeAsString());
    if (!status.ok()) return status;
    written.insert(name);
  }
  // Worlds destroyed since the last start must not come back at the next one.
  for (const fs::directory_entry& entry : fs::directory_iterator(dir, error)) {
    const std::string name = entry.path().filename().string();
    if (name.starts_with(kWorldFilePrefix) && name.ends_with(kWorldFileSuffix) &&
        !written.contains(name)) {
      fs::remove(entry.path(), error);
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<int> SimulationCore::LoadWorlds(const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code error;
  if (!fs::is_directory(dir, error)) return 0;
  std::vector<v1::StoredWorld> stored;
  for (const fs::directory_entry& entry : fs::directory_iterator(dir, error)) {
    const std::string name = entry.path().filename().string();
    if (!name.starts_with(kWorldFilePrefix) || !name.ends_with(kWorldFileSuffix)) continue;
    std::ifstream file(entry.path(), std::ios::binary);
    const std::string bytes((std::istreambuf_iterator<char>(file)),
                            std::istreambuf_iterator<char>());
    v1::StoredWorld world;
    if (!file.good() && !file.eof()) {
      return absl::DataLossError(absl::StrCat("cannot read ", entry.path().string()));
    }
    if (!world.ParseFromString(bytes)) {
      return absl::DataLossError(absl::StrCat(entry.path().string(), ": not a stored world"));
    }
    stored.push_back(std::move(world));
  }
  if (error)
    return absl::UnavailableError(absl::StrCat("snapshot_dir ", dir, ": ", error.message()));
  std::sort(stored.begin(), stored.end(), [](const v1::StoredWorld& a, const v1::StoredWorld& b) {
    return a.world_id() < b.world_id();
  });
  // Worlds created together share one compiled Model; recompile each distinct scene once.
  absl::flat_hash_map<std::string, std::shared_ptr<const Model>> models;
  absl::flat_hash_map<std::string, std::shared_ptr<const v1::SourceMap>> sources;
  absl::flat_hash_map<std::string, std::shared_ptr<const absl::StatusOr<ImportResult>>> files;
  struct RestoreMember {
    const v1::StoredWorld* record;
    std::shared_ptr<const v1::SourceMap> source;
    std::shared_ptr<const absl::StatusOr<ImportResult>> file;
  };
  struct RestoreRun {
    std::shared_ptr<const Model> model;
    SolverOptions options;
    std::string options_key;
    int contact_capacity;
    std::vector<RestoreMember> members;
  };
  std::vector<RestoreRun> runs;
  absl::flat_hash_set<uint64_t> ids;
  for (const v1::StoredWorld& record : stored) {
    if (worlds_.contains(record.world_id()) || !ids.insert(record.world_id()).second) {
      return absl::AlreadyExistsError(
          absl::StrCat(dir, ": world ", record.world_id(), " stored twice"));
    }
    std::string key;
    record.model().SerializeToString(&key);
    std::shared_ptr<const Model>& model = models[key];
    if (!model) {
      absl::StatusOr<ModelDesc> desc = ModelDescFromProto(record.model());
      if (!desc.ok()) return ForWorld(record.world_id(), desc.status());
      absl::StatusOr<std::shared_ptr<const Model>> compiled = Model::Compile(std::move(*desc));
      if (!compiled.ok()) return ForWorld(record.world_id(), compiled.status());
      model = *compiled;
    }
    record.source().SerializeToString(&key);
    std::shared_ptr<const v1::SourceMap>& source = sources[key];
    if (!source) source = std::make_shared<const v1::SourceMap>(record.source());
    // rebuilt from the stored map, so a restored world observes what it did before
    std::shared_ptr<const absl::StatusOr<ImportResult>>& file = files[key];
    if (!file)
      file = std::make_shared<const absl::StatusOr<ImportResult>>(SourceMapToImport(*source));
    SolverOptions options = model->desc().options;
    absl::Status status = ApplySolverOverrides(record.effective_options(), &options);
    if (!status.ok()) return ForWorld(record.world_id(), status);
    record.effective_options().SerializeToString(&key);
    const bool same_run = !runs.empty() && runs.back().model == model &&
                          runs.back().options_key == key &&
                          runs.back().contact_capacity == record.contact_capacity();
    if (!same_run) runs.push_back({model, options, key, record.contact_capacity(), {}});
    runs.back().members.push_back({&record, source, file});
  }
  // Each run of worlds of one model, options and capacity is created in one call: one re-pack
  // of the batch per run (a world at a time, N worlds cost N re-packs of all before them).
  for (const RestoreRun& run : runs) {
    WorldOptions world_options;
    world_options.options = &run.options;
    world_options.contact_capacity = run.contact_capacity;
    const int count = static_cast<int>(run.members.size());
    absl::StatusOr<std::vector<WorldId>> engine_ids =
        simulator_->CreateWorlds(run.model, count, world_options);
    if (!engine_ids.ok())
      return ForWorld(run.members.front().record->world_id(), engine_ids.status());
    for (int k = 0; k < count; ++k) {
      const v1::StoredWorld& record = *run.members[k].record;
      absl::Status status = simulator_->Restore((*engine_ids)[k], record.snapshot());
      if (!status.ok()) return ForWorld(record.world_id(), status);
      absl::StatusOr<World*> world =
          AddWorld(record.world_id(), record.owner(), run.model, run.members[k].source,
                   run.members[k].file, run.options, record.contact_capacity(), (*engine_ids)[k]);
      if (!world.ok()) return world.status();
      if ((record.world_id() >> kIdCounterBits) == options_.replica_id) {
        next_counter_ = std::max(next_counter_, (record.world_id() & kIdCounterMask) + 1);
      }
    }
  }
  UpdateGauges();
  return static_cast<int>(stored.size());
}

}  // namespace axion::server
