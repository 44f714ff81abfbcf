#include "axion/simulator.h"

#include <algorithm>
#include <cmath>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "backend.h"
#include "batch_storage.h"
#include "model_internal.h"
#include "snapshot.h"

namespace axion {

const char* BackendName(Backend backend) {
  switch (backend) {
    case Backend::kAuto:
      return "auto";
    case Backend::kCpu:
      return "cpu";
    case Backend::kCuda:
      return "cuda";
  }
  return "unknown";
}

bool CudaAvailable() {
#if defined(AXION_WITH_CUDA)
  return CudaDevicePresent();
#else
  return false;
#endif
}

class Simulator::Impl {
 public:
  struct WorldRecord {
    WorldId id;
    WorldLayout layout;
    uint64_t step_count = 0;
  };

  Backend backend_kind = Backend::kCpu;
  SimulatorOptions options;
  std::unique_ptr<ExecutionBackend> backend;
  std::vector<WorldRecord> worlds;  // in batch order
  std::unordered_map<WorldId, int> index;
  BatchStorage host;
  WorldId next_id = 1;
  bool host_current = true;    // host state arrays reflect the backend
  bool device_current = true;  // backend reflects host writes
  // The step's inputs (controls, external forces) are the host's to write and no step changes
  // them, so writing them needs no download, and a step after only they changed uploads them
  // alone: an RL loop that sets controls every step moves a few bytes per world, not the state.
  bool inputs_current = true;  // backend's actuator_ctrl and body_wrench reflect the host's
  // Body and joint state reads download only what they read (DownloadObservables).
  bool observables_current = true;  // host body_q, body_u, qpos, dof_velocity reflect backend
  // Mocap moves rewrite the host's shape poses and joint parent frames; a training loop moving
  // every world's mocap bodies each step then sends those four arrays once per step, not a
  // transfer per world (backend's UploadFrames).
  bool frames_current = true;

  absl::StatusOr<int> Find(WorldId id) const {
    auto it = index.find(id);
    if (it == index.end())
      return absl::NotFoundError(absl::StrCat("world ", id, " does not exist"));
    return it->second;
  }

  absl::Status EnsureHost() {
    if (host_current) return absl::OkStatus();
    // the download carries the backend's inputs too: bring them up to the host's first
    absl::Status s = EnsureInputs();
    if (!s.ok()) return s;
    s = backend->Download(host);
    if (s.ok()) host_current = observables_current = true;
    return s;
  }
  absl::Status EnsureObservables() {
    if (host_current || observables_current) return absl::OkStatus();
    absl::Status s = backend->DownloadObservables(host);
    if (s.ok()) observables_current = true;
    return s;
  }
  absl::Status MarkHostWritten() {
    device_current = false;
    return absl::OkStatus();
  }
  absl::Status MarkInputsWritten() {
    inputs_current = false;
    return absl::OkStatus();
  }
  absl::Status EnsureInputs() {
    if (inputs_current) return absl::OkStatus();
    absl::Status s = backend->UploadInputs(host);
    if (s.ok()) inputs_current = true;
    return s;
  }
  absl::Status EnsureDevice() {
    if (!frames_current) {
      absl::Status s = backend->UploadFrames(host);
      if (!s.ok()) return s;
      frames_current = true;
    }
    if (device_current) return EnsureInputs();
    absl::Status s = backend->Upload(host);
    if (s.ok()) device_current = inputs_current = true;
    return s;
  }

  // Puts world w's mocap bodies at `poses` (empty: their initial poses): the shapes and joint
  // anchors on them are rewritten in the model arrays, which the next step takes to a device.
  void MoveMocapBodies(int w, std::vector<Pose> poses) {
    WorldLayout& layout = worlds[w].layout;
    if (layout.model->mocap_count() == 0) return;
    layout.mocap_pose = std::move(poses);
    WriteMocapFrames(layout, w, host);
    frames_current = false;
  }

  // Re-packs the batch for `next` worlds, carrying over the state of worlds that survive.
  absl::Status Repack(std::vector<WorldRecord> next) {
    absl::Status s = EnsureHost();
    if (!s.ok()) return s;
    std::vector<WorldLayout> layouts;
    layouts.reserve(next.size());
    for (const WorldRecord& r : next) layouts.push_back(r.layout);
    BatchStorage packed = PackBatch(layouts);
    for (int w = 0; w < static_cast<int>(next.size()); ++w) {
      auto it = index.find(next[w].id);
      if (it != index.end()) CopyWorldState(host, it->second, packed, w);
    }
    s = backend->Load(packed);
    if (!s.ok()) return s;
    host = std::move(packed);
    worlds = std::move(next);
    index.clear();
    for (int w = 0; w < static_cast<int>(worlds.size()); ++w) index[worlds[w].id] = w;
    host_current = device_current = inputs_current = observables_current = frames_current = true;
    return absl::OkStatus();
  }
};

Simulator::Simulator(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Simulator::~Simulator() = default;

absl::StatusOr<std::unique_ptr<Simulator>> Simulator::Create(const SimulatorOptions& options) {
  auto impl = std::make_unique<Impl>();
  impl->options = options;
  if (options.threads < 0) {
    return absl::InvalidArgumentError(absl::StrCat("threads must be >= 0, got ", options.threads));
  }
  Backend wanted = options.backend;
  if (wanted == Backend::kAuto) wanted = CudaAvailable() ? Backend::kCuda : Backend::kCpu;
  if (wanted == Backend::kCuda) {
#if defined(AXION_WITH_CUDA)
    absl::StatusOr<std::unique_ptr<ExecutionBackend>> cuda = MakeCudaBackend();
    if (!cuda.ok()) return cuda.status();
    impl->backend = std::move(*cuda);
#else
    return absl::FailedPreconditionError(
        "the CUDA backend was requested, but this build of Axion has no CUDA support "
        "(rebuild with a CUDA toolkit, or choose the cpu or auto backend)");
#endif
  } else if (wanted == Backend::kCpu) {
    impl->backend = MakeCpuBackend(options.threads);
  } else {
    return absl::InvalidArgumentError(absl::StrCat("unknown backend ", static_cast<int>(wanted)));
  }
  impl->backend_kind = wanted;
  absl::Status s = impl->backend->Load(impl->host);
  if (!s.ok()) return s;
  return std::unique_ptr<Simulator>(new Simulator(std::move(impl)));
}

Backend Simulator::backend() const { return impl_->backend_kind; }

absl::StatusOr<std::vector<WorldId>> Simulator::CreateWorlds(std::shared_ptr<const Model> model,
                                                             int count,
                                                             const WorldOptions& options) {
  if (model == nullptr) return absl::InvalidArgumentError("model is null");
  if (count < 1)
    return absl::InvalidArgumentError(absl::StrCat("world count must be >= 1, got ", count));
  if (static_cast<int64_t>(impl_->worlds.size()) + count > impl_->options.max_worlds) {
    return absl::ResourceExhaustedError(absl::StrCat("creating ", count,
                                                     " worlds would exceed the limit of ",
                                                     impl_->options.max_worlds, " worlds"));
  }
  SolverOptions solver = options.options != nullptr ? *options.options : model->desc().options;
  absl::Status s = ValidateSolverOptions(&solver);
  if (!s.ok()) return s;
  int capacity =
      options.contact_capacity >= 0 ? options.contact_capacity : model->contact_capacity();
  if (capacity > (1 << 20)) {
    return absl::InvalidArgumentError(
        absl::StrCat("contact_capacity ", capacity, " exceeds 1048576"));
  }
  if (options.pair_capacity < -1)
    return absl::InvalidArgumentError(absl::StrCat(
        "pair_capacity must be >= 0, or -1 for the model's, got ", options.pair_capacity));
  const int pair_capacity =
      options.pair_capacity >= 0 ? options.pair_capacity : model->pair_capacity();
  if (pair_capacity > (1 << 22)) {
    return absl::InvalidArgumentError(
        absl::StrCat("pair_capacity ", pair_capacity, " exceeds 4194304"));
  }
  std::vector<Impl::WorldRecord> next = impl_->worlds;
  std::vector<WorldId> ids;
  for (int i = 0; i < count; ++i) {
    Impl::WorldRecord r;
    r.id = impl_->next_id++;
    r.layout.model = model;
    r.layout.params = MakeWorldParams(solver);
    r.layout.contact_capacity = capacity;
    r.layout.pair_capacity = pair_capacity;
    next.push_back(r);
    ids.push_back(r.id);
  }
  s = impl_->Repack(std::move(next));
  if (!s.ok()) return s;
  return ids;
}

absl::Status Simulator::DestroyWorld(WorldId world) { return DestroyWorlds({world}); }

absl::Status Simulator::DestroyWorlds(absl::Span<const WorldId> worlds) {
  std::vector<char> doomed(impl_->worlds.size(), 0);
  for (WorldId world : worlds) {
    absl::StatusOr<int> w = impl_->Find(world);
    if (!w.ok()) return w.status();
    if (doomed[*w]) {
      return absl::InvalidArgumentError(
          absl::StrCat("world ", world, " is listed twice among the worlds to destroy"));
    }
    doomed[*w] = 1;
  }
  if (worlds.empty()) return absl::OkStatus();
  std::vector<Impl::WorldRecord> next;
  next.reserve(impl_->worlds.size() - worlds.size());
  for (size_t w = 0; w < impl_->worlds.size(); ++w) {
    if (!doomed[w]) next.push_back(impl_->worlds[w]);
  }
  return impl_->Repack(std::move(next));
}

bool Simulator::HasWorld(WorldId world) const { return impl_->index.count(world) > 0; }
int Simulator::world_count() const { return static_cast<int>(impl_->worlds.size()); }
std::vector<WorldId> Simulator::world_ids() const {
  std::vector<WorldId> ids;
  for (const auto& r : impl_->worlds) ids.push_back(r.id);
  return ids;
}

absl::StatusOr<std::shared_ptr<const Model>> Simulator::GetModel(WorldId world) const {
  absl::StatusOr<int> w = impl_->Find(world);
  if (!w.ok()) return w.status();
  return impl_->worlds[*w].layout.model;
}

absl::Status Simulator::SetWorldModels(absl::Span<const WorldModelUpdate> updates) {
  Impl& im = *impl_;
  // check every update before any world changes
  std::vector<Impl::WorldRecord> next = im.worlds;
  std::vector<int> updated;     // batch indices of the updated worlds
  std::vector<int> remodelled;  // those whose model changes
  std::unordered_set<WorldId> seen;
  for (size_t i = 0; i < updates.size(); ++i) {
    const WorldModelUpdate& u = updates[i];
    absl::StatusOr<int> w = im.Find(u.world);
    if (!w.ok()) return w.status();
    if (!seen.insert(u.world).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("world ", u.world, " is listed twice among the model updates"));
    }
    updated.push_back(*w);
    WorldLayout& layout = next[*w].layout;
    if (u.model != nullptr) {
      absl::Status s = CheckSameStructure(*layout.model, *u.model);
      if (!s.ok()) {
        return absl::InvalidArgumentError(absl::StrCat("world ", u.world, ": model '",
                                                       u.model->name(), "' cannot replace '",
                                                       layout.model->name(), "': ", s.message()));
      }
      if (u.model != layout.model) remodelled.push_back(*w);
      layout.model = u.model;
    }
    if (u.options.has_value()) {
      SolverOptions options = *u.options;
      absl::Status s = ValidateSolverOptions(&options);
      if (!s.ok()) {
        return absl::InvalidArgumentError(absl::StrCat("world ", u.world, ": ", s.message()));
      }
      layout.params = MakeWorldParams(options);
    }
  }
  if (updates.empty()) return absl::OkStatus();
  std::vector<std::shared_ptr<const Model>> previous;
  for (int w : remodelled) previous.push_back(im.worlds[w].layout.model);
  // The new model arrays: written in place where every model's hulls and pair rules have the
  // sizes packed (O(updated worlds)), else the batch is re-packed, each world's state carried.
  bool in_place = true;
  for (size_t k = 0; k < remodelled.size() && in_place; ++k) {
    const Model& was = *previous[k];
    const Model& now = *next[remodelled[k]].layout.model;
    in_place = now.pair_rules().size() == was.pair_rules().size();
    for (int i = 0; i < now.shape_count() && in_place; ++i) {
      const ShapeDesc& a = was.desc().shapes[i];
      const ShapeDesc& b = now.desc().shapes[i];
      const bool hull = a.type == ShapeType::kConvexHull;
      in_place = hull == (b.type == ShapeType::kConvexHull) &&
                 (!hull || SamePoints(a.vertices, b.vertices));
      // (a height field's grid is packed like a hull: the same heights, or a re-pack)
      const bool field = a.type == ShapeType::kHeightField;
      in_place = in_place && field == (b.type == ShapeType::kHeightField) &&
                 (!field || (a.heightfield.cols == b.heightfield.cols &&
                             a.heightfield.heights == b.heightfield.heights));
    }
  }
  absl::Status s;
  if (in_place) {
    s = im.EnsureHost();
    if (!s.ok()) return s;
    std::vector<WorldLayout> before;
    for (int w : updated) before.push_back(im.worlds[w].layout);
    auto write = [&](auto layout_of) {
      for (size_t k = 0; k < updated.size(); ++k) {
        const int w = updated[k];
        im.worlds[w].layout = layout_of(k);
        WriteWorldModel(im.worlds[w].layout, w, im.host, /*hulls=*/nullptr);
      }
    };
    write([&](size_t k) { return next[updated[k]].layout; });
    // the CPU backend steps the host arrays; a device takes those worlds' parts
    s = im.backend->UploadWorldModels(im.host, updated);
    if (!s.ok()) {
      write([&](size_t k) { return before[k]; });
      im.backend->UploadWorldModels(im.host, updated).IgnoreError();  // the first error is told
      return s;
    }
  } else {
    s = im.Repack(std::move(next));
    if (!s.ok()) return s;
  }
  BatchStorage& h = im.host;
  for (size_t k = 0; k < remodelled.size(); ++k) {
    const int w = remodelled[k];
    const ModelDesc& was = previous[k]->desc();
    const ModelDesc& now = im.worlds[w].layout.model->desc();
    // bodies keep their frames: the centre of mass moves inside a body whose com changed
    bool moved = false;
    const int b0 = h.world_body_offset[w];
    for (size_t i = 0; i < now.bodies.size(); ++i) {
      const Vec3 shift = now.bodies[i].com - was.bodies[i].com;
      if (shift.x == 0 && shift.y == 0 && shift.z == 0) continue;
      moved = true;
      Real* q = &h.body_q[7 * (b0 + i)];
      Real* u = &h.body_u[6 * (b0 + i)];
      const Vec3 lever = rotate(load_quat(q + 3), shift);
      store3(q, load3(q) + lever);
      store3(u, load3(u) + cross(load3(u + 3), lever));
    }
    auto same = [](const Pose& x, const Pose& y) {
      return x.pos.x == y.pos.x && x.pos.y == y.pos.y && x.pos.z == y.pos.z &&
             x.quat.w == y.quat.w && x.quat.x == y.quat.x && x.quat.y == y.quat.y &&
             x.quat.z == y.quat.z;
    };
    const Model& model = *im.worlds[w].layout.model;
    for (size_t j = 0; j < now.joints.size() && !moved; ++j) {
      moved = !same(model.joint_parent_frame()[j], previous[k]->joint_parent_frame()[j]) ||
              !same(now.joints[j].child_frame, was.joints[j].child_frame);
    }
    // joint coordinates from the bodies where the frames they are read in moved
    if (moved) WriteJointCoordinates(w, h);
    // held controls within the new ranges
    const int a0 = h.world_actuator_offset[w];
    for (size_t a = 0; a < now.actuators.size(); ++a) {
      const ActuatorDesc& act = now.actuators[a];
      if (!act.ctrl_limited) continue;
      Real& ctrl = h.actuator_ctrl[a0 + a];
      ctrl = std::min(std::max(ctrl, act.ctrl_min), act.ctrl_max);
    }
    // an actuator that no longer has an activation (a muscle, dynamics) holds none
    for (size_t a = 0; a < now.actuators.size(); ++a) {
      if (!HasActivation(now.actuators[a])) h.actuator_activation[a0 + a] = 0;
    }
  }
  return im.MarkHostWritten();  // the state's upload carries the controls
}

absl::StatusOr<SolverOptions> Simulator::GetOptions(WorldId world) const {
  absl::StatusOr<int> w = impl_->Find(world);
  if (!w.ok()) return w.status();
  const WorldParams& p = impl_->worlds[*w].layout.params;
  SolverOptions o;
  o.timestep = p.timestep;
  o.gravity = {p.gravity[0], p.gravity[1], p.gravity[2]};
  o.joint_formulation = static_cast<Formulation>(p.joint_formulation);
  o.contact_formulation = static_cast<Formulation>(p.contact_formulation);
  o.baumgarte = p.baumgarte;
  o.contact_margin = p.contact_margin;
  o.speculative_contacts = p.speculative_contacts != 0;
  o.friction_newton = p.friction_newton != 0;
  o.friction_combine = static_cast<FrictionCombine>(p.friction_combine);
  o.contact_compliance = p.contact_compliance;
  o.contact_presolve_sweeps = p.contact_presolve_sweeps;
  o.max_depenetration_speed = p.max_depenetration_speed;
  o.fluid_density = p.fluid_density;
  o.fluid_viscosity = p.fluid_viscosity;
  o.fluid_wind = {p.fluid_wind[0], p.fluid_wind[1], p.fluid_wind[2]};
  o.newton_iterations = p.newton_iterations;
  o.cr_iterations = p.cr_iterations;
  o.newton_tolerance = p.newton_tolerance;
  o.cr_tolerance = p.cr_tolerance;
  o.line_search = p.line_search != 0;
  o.line_search_steps = p.line_search_steps;
  o.line_search_growth = p.line_search_growth;
  o.strict_after_cycle = p.strict_after_cycle != 0;
  o.fb_epsilon = p.fb_epsilon;
  o.preconditioner = static_cast<Preconditioner>(p.preconditioner);
  o.newton_stall_iterations = p.newton_stall_iterations;
  o.newton_tail_iterations = p.newton_tail_iterations;
  o.newton_tail_residual = p.newton_tail_residual;
  o.step_halvings = p.step_halvings;
  o.halving_carryover = p.halving_carryover != 0;
  o.halving_iterations = p.halving_iterations;
  o.halving_residual = p.halving_residual;
  o.missed_contact_depth = p.missed_contact_depth;
  o.contact_redos = p.contact_redos;
  o.loop_rows = p.loop_rows;
  o.islands = p.islands != 0;
  return o;
}

absl::Status Simulator::Step(absl::Span<const WorldId> worlds, absl::Span<const int> steps) {
  if (!steps.empty() && steps.size() != worlds.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("steps has ", steps.size(), " entries for ", worlds.size(), " worlds"));
  }
  Impl& im = *impl_;
  std::vector<int> targets;
  targets.reserve(worlds.size());
  std::unordered_set<WorldId> seen;
  int max_steps = 0;
  for (size_t i = 0; i < worlds.size(); ++i) {
    absl::StatusOr<int> w = im.Find(worlds[i]);
    if (!w.ok()) return w.status();
    if (!seen.insert(worlds[i]).second) {
      return absl::InvalidArgumentError(absl::StrCat("world ", worlds[i], " is listed twice"));
    }
    int n = steps.empty() ? 1 : steps[i];
    if (n < 0)
      return absl::InvalidArgumentError(
          absl::StrCat("world ", worlds[i], ": steps must be >= 0, got ", n));
    targets.push_back(*w);
    max_steps = std::max(max_steps, n);
  }
  if (max_steps == 0) return absl::OkStatus();
  absl::Status s = im.EnsureDevice();
  if (!s.ok()) return s;
  std::fill(im.host.world_step_pending.begin(), im.host.world_step_pending.end(), 0);
  for (size_t i = 0; i < targets.size(); ++i) {
    im.host.world_step_pending[targets[i]] = steps.empty() ? 1 : steps[i];
  }
  s = im.backend->Step(im.host, max_steps);
  im.host_current = im.observables_current = im.backend_kind == Backend::kCpu;
  if (!s.ok()) return s;
  for (size_t i = 0; i < targets.size(); ++i) {
    im.worlds[targets[i]].step_count += steps.empty() ? 1 : steps[i];
  }
  return absl::OkStatus();
}

absl::Status Simulator::StepAll(int steps) {
  std::vector<WorldId> ids = world_ids();
  std::vector<int> counts(ids.size(), steps);
  return Step(ids, counts);
}

absl::Status Simulator::SetControls(WorldId world, absl::Span<const Real> ctrl) {
  Impl& im = *impl_;
  absl::StatusOr<int> w = im.Find(world);
  if (!w.ok()) return w.status();
  const Model& m = *im.worlds[*w].layout.model;
  if (static_cast<int>(ctrl.size()) != m.actuator_count()) {
    return absl::InvalidArgumentError(absl::StrCat("world ", world, ": ctrl has ", ctrl.size(),
                                                   " values, the model has ", m.actuator_count(),
                                                   " actuators"));
  }
  for (int a = 0; a < m.actuator_count(); ++a) {
    const ActuatorDesc& act = m.desc().actuators[a];
    if (!std::isfinite(ctrl[a])) {
      return absl::InvalidArgumentError(
          absl::StrFormat("world %d: ctrl[%d] (actuator '%s') is not finite", world, a, act.name));
    }
    if (act.ctrl_limited && (ctrl[a] < act.ctrl_min || ctrl[a] > act.ctrl_max)) {
      return absl::InvalidArgumentError(
          absl::StrFormat("world %d: ctrl[%d] (actuator '%s') = %g is outside its range [%g, %g]",
                          world, a, act.name, static_cast<double>(ctrl[a]),
                          static_cast<double>(act.ctrl_min), static_cast<double>(act.ctrl_max)));
    }
  }
  std::copy(ctrl.begin(), ctrl.end(),
            im.host.actuator_ctrl.begin() + im.host.world_actuator_offset[*w]);
  return im.MarkInputsWritten();
}

absl::StatusOr<std::vector<Real>> Simulator::GetControls(WorldId world) const {
  Impl& im = *impl_;
  absl::StatusOr<int> w = im.Find(world);
  if (!w.ok()) return w.status();
  // the host's controls are always current (see inputs_current)
  return std::vector<Real>(im.host.actuator_ctrl.begin() + im.host.world_actuator_offset[*w],
                           im.host.actuator_ctrl.begin() + im.host.world_actuator_offset[*w + 1]);
}

absl::Status Simulator::SetActivations(WorldId world, absl::Span<const Real> activation) {
  Impl& im = *impl_;
  absl::StatusOr<int> w = im.Find(world);
  if (!w.ok()) return w.status();
  const Model& m = *im.worlds[*w].layout.model;
  if (static_cast<int>(activation.size()) != m.actuator_count()) {
    return absl::InvalidArgumentError(absl::StrCat("world ", world, ": activations have ",
                                                   activation.size(), " values, the model has ",
                                                   m.actuator_count(), " actuators"));
  }
  for (int a = 0; a < m.actuator_count(); ++a) {
    const ActuatorDesc& act = m.desc().actuators[a];
    const bool has = HasActivation(act);
    if (!ValidActivation(act, activation[a])) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "world %d: activation[%d] (actuator '%s') = %g %s", world, a, act.name,
          static_cast<double>(activation[a]),
          has ? "is not finite"
              : "is not 0 (only muscles and actuators with dynamics have an activation)"));
    }
  }
  absl::Status s = im.EnsureHost();
  if (!s.ok()) return s;
  std::copy(activation.begin(), activation.end(),
            im.host.actuator_activation.begin() + im.host.world_actuator_offset[*w]);
  return im.MarkHostWritten();
}

absl::StatusOr<std::vector<Real>> Simulator::GetActivations(WorldId world) const {
  Impl& im = *impl_;
  absl::StatusOr<int> w = im.Find(world);
  if (!w.ok()) return w.status();
  absl::Status s = im.EnsureObservables();
  if (!s.ok()) return s;
  const auto& all = im.host.actuator_activation;
  return std::vector<Real>(all.begin() + im.host.world_actuator_offset[*w],
                           all.begin() + im.host.world_actuator_offset[*w + 1]);
}

absl::StatusOr<std::vector<Real>> Simulator::GetActuatorForces(WorldId world) const {
  Impl& im = *impl_;
  absl::StatusOr<int> w = im.Find(world);
  if (!w.ok()) return w.status();
  absl::Status s = im.EnsureObservables();  // the joint coordinates and rates
  if (!s.ok()) return s;
  return ActuatorForces(*w, im.host);
}

absl::StatusOr<std::vector<Real>> Simulator::GetTendonStates(WorldId world) const {
  Impl& im = *impl_;
  absl::StatusOr<int> w = im.Find(world);
  if (!w.ok()) return w.status();
  absl::Status s = im.EnsureObservables();  // the bodies' poses and twists, joint coordinates
  if (!s.ok()) return s;
  std::vector<Real> states = TendonStates(*w, im.host);
  // A spatial tendon's at the bodies its joints place (as its sensors read it): a step's end
  // velocities meet the joints' velocity constraints at its start configuration, which leaves
  // the bodies' relative twists O(h w^2) off the joints' axes (0.2% of a cable's rate on a
  // pendulum swinging at 2 rad/s, h = 2 ms); MuJoCo's ten_velocity, J qvel, has no such part.
  const Model& model = *im.worlds[*w].layout.model;
  const std::vector<TendonDesc>& tendons = model.desc().tendons;
  if (std::none_of(tendons.begin(), tendons.end(),
                   [](const TendonDesc& t) { return !t.path.empty(); }))
    return states;
  absl::StatusOr<BodyState> bodies = GetBodyState(world);
  if (!bodies.ok()) return bodies.status();
  absl::StatusOr<JointState> joints = GetJointState(world);
  if (!joints.ok()) return joints.status();
  absl::StatusOr<std::vector<Real>> mocap = GetMocapPoses(world);
  if (!mocap.ok()) return mocap.status();
  absl::StatusOr<BodyState> placed = BodyStateFromJoints(model, *joints, *bodies, *mocap);
  if (!placed.ok()) return placed.status();
  for (int t = 0; t < static_cast<int>(tendons.size()); ++t) {
    if (tendons[t].path.empty()) continue;
    absl::StatusOr<std::pair<Real, Real>> path = SpatialTendonState(model, t, *placed);
    if (!path.ok()) return path.status();
    states[2 * t] = path->first;
    states[2 * t + 1] = path->second;
  }
  return states;
}

absl::Status Simulator::SetExternalForces(WorldId world, absl::Span<const Real> wrench) {
  Impl& im = *impl_;
  absl::StatusOr<int> w = im.Find(world);
  if (!w.ok()) return w.status();
  const int bodies = im.worlds[*w].layout.model->body_count();
  if (static_cast<int>(wrench.size()) != 6 * bodies) {
    return absl::InvalidArgumentError(absl::StrCat("world ", world, ": external forces have ",
                                                   wrench.size(), " values, expected ", 6 * bodies,
                                                   " (body_count x 6)"));
  }
  for (size_t i = 0; i < wrench.size(); ++i) {
    if (!std::isfinite(wrench[i])) {
      return absl::InvalidArgumentError(absl::StrCat("world ", world, ": external force of body ",
                                                     i / 6, " component ", i % 6,
                                                     " is not finite"));
    }
  }
  std::copy(wrench.begin(), wrench.end(),
            im.host.body_wrench.begin() + 6 * im.host.world_body_offset[*w]);
  return im.MarkInputsWritten();
}

absl::StatusOr<BodyState> Simulator::GetBodyState(WorldId world) const {
  Impl& im = *impl_;
  absl::StatusOr<int> w = im.Find(world);
  if (!w.ok()) return w.status();
  absl::Status s = im.EnsureObservables();
  if (!s.ok()) return s;
  const ModelDesc& d = im.worlds[*w].layout.model->desc();
  BodyState out;
  const int b0 = im.host.world_body_offset[*w];
  const int n = static_cast<int>(d.bodies.size());
  out.pose.resize(7 * n);
  out.velocity.resize(6 * n);
  for (int i = 0; i < n; ++i) {
    const Real* q = &im.host.body_q[7 * (b0 + i)];
    const Real* u = &im.host.body_u[6 * (b0 + i)];
    Quat rot = load_quat(q + 3);
    Vec3 lever = rotate(rot, d.bodies[i].com);
    Vec3 origin = load3(q) - lever;
    Vec3 omega = load3(u + 3);
    store3(&out.pose[7 * i], origin);
    store_quat(&out.pose[7 * i + 3], rot);
    store6(&out.velocity[6 * i], {load3(u) - cross(omega, lever), omega});
  }
  return out;
}

absl::StatusOr<std::vector<Real>> Simulator::GetExternalForces(WorldId world) const {
  Impl& im = *impl_;
  absl::StatusOr<int> w = im.Find(world);
  if (!w.ok()) return w.status();
  // the host's copy is the one written (and uploaded before a step)
  const int b0 = im.host.world_body_offset[*w], b1 = im.host.world_body_offset[*w + 1];
  return std::vector<Real>(im.host.body_wrench.begin() + 6 * b0,
                           im.host.body_wrench.begin() + 6 * b1);
}

absl::StatusOr<std::vector<Real>> Simulator::GetBodyAccelerations(WorldId world) const {
  Impl& im = *impl_;
  absl::StatusOr<int> w = im.Find(world);
  if (!w.ok()) return w.status();
  absl::Status s = im.EnsureHost();  // body_acc travels with the whole state
  if (!s.ok()) return s;
  const ModelDesc& d = im.worlds[*w].layout.model->desc();
  const int b0 = im.host.world_body_offset[*w];
  std::vector<Real> out(6 * d.bodies.size());
  for (size_t i = 0; i < d.bodies.size(); ++i) {
    const Real* acc = &im.host.body_acc[6 * (b0 + i)];
    const Quat rot = load_quat(&im.host.body_q[7 * (b0 + i) + 3]);
    const Vec3 omega = load3(&im.host.body_u[6 * (b0 + i) + 3]), alpha = load3(acc + 3);
    // the origin, rigidly at -lever from the centre of mass
    const Vec3 to_origin = Real(-1) * rotate(rot, d.bodies[i].com);
    store6(&out[6 * i],
           {load3(acc) + cross(alpha, to_origin) + cross(omega, cross(omega, to_origin)), alpha});
  }
  return out;
}

namespace {
// Body-frame poses and velocities (BodyState, validated) into the bodies' centre-of-mass state
// of the world whose first body is b0; only the bodies some joint moves where `moved_only`.
void StoreBodyState(const ModelDesc& d, const BodyState& state, int b0, BatchStorage& host,
                    bool moved_only = false) {
  std::vector<char> store(d.bodies.size(), !moved_only);
  for (const JointDesc& joint : d.joints) store[joint.child] = 1;
  for (int i = 0; i < static_cast<int>(d.bodies.size()); ++i) {
    if (!store[i]) continue;
    Quat rot = quat_normalized(load_quat(&state.pose[7 * i + 3]));
    Vec3 lever = rotate(rot, d.bodies[i].com);
    Vec3 omega = load3(&state.velocity[6 * i + 3]);
    Real* q = &host.body_q[7 * (b0 + i)];
    store3(q, load3(&state.pose[7 * i]) + lever);
    store_quat(q + 3, rot);
    store6(&host.body_u[6 * (b0 + i)],
           {load3(&state.velocity[6 * i]) + cross(omega, lever), omega});
  }
  // no step has led to the state written: no acceleration known
  std::fill_n(host.body_acc.begin() + 6 * b0, 6 * d.bodies.size(), Real(0));
}
}  // namespace

absl::Status Simulator::SetBodyState(WorldId world, const BodyState& state) {
  Impl& im = *impl_;
  absl::StatusOr<int> w = im.Find(world);
  if (!w.ok()) return w.status();
  const ModelDesc& d = im.worlds[*w].layout.model->desc();
  const int n = static_cast<int>(d.bodies.size());
  if (static_cast<int>(state.pose.size()) != 7 * n ||
      static_cast<int>(state.velocity.size()) != 6 * n) {
    return absl::InvalidArgumentError(
        absl::StrCat("world ", world, ": body state needs ", 7 * n, " pose and ", 6 * n,
                     " velocity values, got ", state.pose.size(), " and ", state.velocity.size()));
  }
  for (int i = 0; i < n; ++i) {
    for (int k = 0; k < 7; ++k) {
      if (!std::isfinite(state.pose[7 * i + k])) {
        return absl::InvalidArgumentError(absl::StrCat("world ", world, ": pose of body ", i, " ('",
                                                       d.bodies[i].name, "') is not finite"));
      }
    }
    for (int k = 0; k < 6; ++k) {
      if (!std::isfinite(state.velocity[6 * i + k])) {
        return absl::InvalidArgumentError(absl::StrCat("world ", world, ": velocity of body ", i,
                                                       " ('", d.bodies[i].name,
                                                       "') is not finite"));
      }
    }
    if (!(quat_norm(load_quat(&state.pose[7 * i + 3])) > Real(1e-9))) {
      return absl::InvalidArgumentError(absl::StrCat("world ", world, ": quaternion of body ", i,
                                                     " ('", d.bodies[i].name, "') is zero"));
    }
  }
  absl::Status s = im.EnsureHost();
  if (!s.ok()) return s;
  StoreBodyState(d, state, im.host.world_body_offset[*w], im.host);
  WriteJointCoordinates(*w, im.host);
  im.host.world_flags[*w] &= ~static_cast<uint32_t>(kWorldNonFinite);
  return im.MarkHostWritten();
}

absl::Status Simulator::SetJointState(WorldId world, const JointState& state) {
  Impl& im = *impl_;
  absl::StatusOr<int> w = im.Find(world);
  if (!w.ok()) return w.status();
  absl::StatusOr<BodyState> current = GetBodyState(world);
  if (!current.ok()) return current.status();
  const Model& model = *im.worlds[*w].layout.model;
  absl::StatusOr<std::vector<Real>> mocap = GetMocapPoses(world);
  if (!mocap.ok()) return mocap.status();
  absl::StatusOr<BodyState> bodies = BodyStateFromJoints(model, state, *std::move(current), *mocap);
  if (!bodies.ok()) {
    return absl::Status(bodies.status().code(),
                        absl::StrCat("world ", world, ": ", bodies.status().message()));
  }
  absl::Status s = im.EnsureHost();
  if (!s.ok()) return s;
  // the bodies no joint moves keep their bits
  StoreBodyState(model.desc(), *bodies, im.host.world_body_offset[*w], im.host,
                 /*moved_only=*/true);
  // the coordinates written back unwrap angles from these, so they keep the turns given
  std::copy(state.position.begin(), state.position.end(),
            im.host.qpos.begin() + im.host.world_qpos_offset[*w]);
  WriteJointCoordinates(*w, im.host);
  im.host.world_flags[*w] &= ~static_cast<uint32_t>(kWorldNonFinite);
  return im.MarkHostWritten();
}

absl::StatusOr<JointState> Simulator::GetJointState(WorldId world) const {
  Impl& im = *impl_;
  absl::StatusOr<int> w = im.Find(world);
  if (!w.ok()) return w.status();
  absl::Status s = im.EnsureObservables();
  if (!s.ok()) return s;
  JointState out;
  out.position.assign(im.host.qpos.begin() + im.host.world_qpos_offset[*w],
                      im.host.qpos.begin() + im.host.world_qpos_offset[*w + 1]);
  out.velocity.assign(im.host.dof_velocity.begin() + im.host.world_dof_offset[*w],
                      im.host.dof_velocity.begin() + im.host.world_dof_offset[*w + 1]);
  return out;
}

absl::StatusOr<WorldStats> Simulator::GetStats(WorldId world) const {
  Impl& im = *impl_;
  absl::StatusOr<int> w = im.Find(world);
  if (!w.ok()) return w.status();
  const BatchStorage& h = im.host;  // world arrays are current after every step
  WorldStats st;
  st.newton_iterations = h.world_newton_iterations[*w];
  st.cr_iterations = h.world_cr_iterations[*w];
  st.line_search_trials = h.world_line_search_trials[*w];
  st.substeps = h.world_substeps[*w];
  st.contact_redos = h.world_contact_redos[*w];
  st.residual = h.world_residual[*w];
  st.contact_count = h.world_contact_count[*w];
  st.constraint_rows =
      h.world_joint_row_count[*w] + 3 * h.world_contact_count[*w] + h.world_angular_row_count[*w];
  st.island_count = h.world_island_count[*w];
  st.flags = h.world_flags[*w];
  st.step_count = im.worlds[*w].step_count;
  st.time = h.world_time[*w];
  return st;
}

absl::StatusOr<std::vector<ContactReport>> Simulator::GetContacts(WorldId world) const {
  Impl& im = *impl_;
  absl::StatusOr<int> w = im.Find(world);
  if (!w.ok()) return w.status();
  absl::Status s = im.EnsureHost();
  if (!s.ok()) return s;
  const BatchStorage& h = im.host;
  const int b0 = h.world_body_offset[*w], s0 = h.world_shape_offset[*w];
  const int row0 = h.world_row_offset[*w] + h.world_joint_row_count[*w];
  const Real dt = h.world_step_length[*w];  // the contacts are the last (halved) step's
  const BatchView view = im.host.view();
  std::vector<ContactReport> out;
  for (int i = 0; i < h.world_contact_count[*w]; ++i) {
    const int k = h.world_contact_offset[*w] + i;
    ContactReport c;
    c.body_a = h.contact_body_a[k] < 0 ? kWorldBody : h.contact_body_a[k] - b0;
    c.body_b = h.contact_body_b[k] < 0 ? kWorldBody : h.contact_body_b[k] - b0;
    c.shape_a = h.contact_shape_a[k] - s0;
    c.shape_b = h.contact_shape_b[k] - s0;
    auto world_point = [&](int body, const Real* local) {
      if (body < 0) return load3(local);
      const Real* q = &h.body_q[7 * body];
      return load3(q) + rotate(load_quat(q + 3), load3(local));
    };
    Vec3 pa = world_point(h.contact_body_a[k], &h.contact_local_a[3 * k]);
    Vec3 pb = world_point(h.contact_body_b[k], &h.contact_local_b[3 * k]);
    c.position = Real(0.5) * (pa + pb);
    c.normal = load3(&h.contact_normal[3 * k]);
    // (the shapes' distance: the rows' gap is measured from where a margin holds them)
    c.gap = h.contact_gap[k] +
            kernels::pair_contact_offset(view, h.contact_shape_a[k], h.contact_shape_b[k]);
    Vec3 t1 = load3(&h.contact_tangent[6 * k]), t2 = load3(&h.contact_tangent[6 * k + 3]);
    const Real* lambda = &h.row_lambda[row0 + 3 * i + h.contact_angular_index[k]];
    c.force = (Real(1) / dt) * (lambda[0] * c.normal + lambda[1] * t1 + lambda[2] * t2);
    // the angular rows' axes: the normal, then its canonical tangents (kernels_contact.h)
    const int angular = h.contact_angular_rows[k];
    const Real* lambda_angular = &h.row_lambda[row0 + 3 * i + h.contact_angular_index[k] + 3];
    if (angular >= 1) c.torque = (lambda_angular[0] / dt) * c.normal;
    if (angular >= 3) {
      Vec3 r1, r2;
      orthonormal_basis(c.normal, &r1, &r2);
      c.torque = c.torque + (Real(1) / dt) * (lambda_angular[1] * r1 + lambda_angular[2] * r2);
    }
    out.push_back(c);
  }
  return out;
}

absl::Status Simulator::Reset(WorldId world) {
  Impl& im = *impl_;
  absl::StatusOr<int> w = im.Find(world);
  if (!w.ok()) return w.status();
  absl::Status s = im.EnsureHost();
  if (!s.ok()) return s;
  ResetWorldState(im.worlds[*w].layout, *w, im.host);
  im.worlds[*w].step_count = 0;
  im.MoveMocapBodies(*w, {});
  return im.MarkHostWritten();
}

absl::Status Simulator::Reset(WorldId world, const std::string& keyframe) {
  Impl& im = *impl_;
  absl::StatusOr<int> w = im.Find(world);
  if (!w.ok()) return w.status();
  const Model& model = *im.worlds[*w].layout.model;
  const int k = model.FindKeyframe(keyframe);
  if (k < 0) {
    std::vector<std::string> names;
    for (const KeyframeDesc& key : model.desc().keyframes) names.push_back(key.name);
    return absl::NotFoundError(absl::StrCat(
        "world ", world, ": model '", model.name(), "' has no keyframe '", keyframe, "' (it has ",
        names.empty() ? "none" : absl::StrCat("'", absl::StrJoin(names, "', '"), "'"), ")"));
  }
  absl::Status s = Reset(world);
  if (!s.ok()) return s;
  // the keyframe was validated with the model: sizes, finite values, control ranges
  const KeyframeDesc& key = model.desc().keyframes[k];
  if (!key.body_pose.empty() || !key.body_velocity.empty()) {
    absl::StatusOr<BodyState> bodies = GetBodyState(world);
    if (!bodies.ok()) return bodies.status();
    if (!key.body_pose.empty()) bodies->pose = key.body_pose;
    if (!key.body_velocity.empty()) bodies->velocity = key.body_velocity;
    s = SetBodyState(world, *bodies);
    if (!s.ok()) return s;
  }
  if (!key.controls.empty()) {
    s = SetControls(world, key.controls);
    if (!s.ok()) return s;
  }
  if (!key.activations.empty()) {
    s = SetActivations(world, key.activations);
    if (!s.ok()) return s;
  }
  if (!key.mocap_pose.empty()) {
    s = SetMocapPoses(world, key.mocap_pose);
    if (!s.ok()) return s;
  }
  im.host.world_time[*w] = key.time;
  return im.MarkHostWritten();
}

absl::StatusOr<std::string> Simulator::Snapshot(WorldId world) const {
  Impl& im = *impl_;
  absl::StatusOr<int> w = im.Find(world);
  if (!w.ok()) return w.status();
  absl::Status s = im.EnsureHost();
  if (!s.ok()) return s;
  const WorldLayout& layout = im.worlds[*w].layout;
  return EncodeSnapshot(im.host, *w, *layout.model, im.worlds[*w].step_count, layout.mocap_pose);
}

absl::Status Simulator::Restore(WorldId world, std::string_view bytes) {
  Impl& im = *impl_;
  absl::StatusOr<int> w = im.Find(world);
  if (!w.ok()) return w.status();
  absl::Status s = im.EnsureHost();
  if (!s.ok()) return s;
  WorldLayout& layout = im.worlds[*w].layout;
  std::vector<Pose> mocap;
  absl::StatusOr<uint64_t> steps = DecodeSnapshot(bytes, *layout.model, *w, im.host, &mocap);
  if (!steps.ok()) {
    return absl::Status(steps.status().code(),
                        absl::StrCat("world ", world, ": ", steps.status().message()));
  }
  im.worlds[*w].step_count = *steps;
  im.MoveMocapBodies(*w, std::move(mocap));
  return im.MarkHostWritten();
}

absl::StatusOr<std::vector<Real>> Simulator::GetMocapPoses(WorldId world) const {
  Impl& im = *impl_;
  absl::StatusOr<int> w = im.Find(world);
  if (!w.ok()) return w.status();
  const WorldLayout& layout = im.worlds[*w].layout;
  std::vector<Real> out(7 * layout.model->mocap_count());
  for (int m = 0; m < layout.model->mocap_count(); ++m) {
    const Pose& pose = layout.mocap_pose.empty() ? layout.model->desc().mocap_bodies[m].pose
                                                 : layout.mocap_pose[m];
    store3(&out[7 * m], pose.pos);
    store_quat(&out[7 * m + 3], pose.quat);
  }
  return out;
}

absl::Status Simulator::SetMocapPoses(WorldId world, absl::Span<const Real> pose) {
  Impl& im = *impl_;
  absl::StatusOr<int> w = im.Find(world);
  if (!w.ok()) return w.status();
  const ModelDesc& d = im.worlds[*w].layout.model->desc();
  const size_t n = d.mocap_bodies.size();
  if (pose.size() != 7 * n) {
    return absl::InvalidArgumentError(absl::StrCat("world ", world, ": mocap poses need ", 7 * n,
                                                   " values (7 per mocap body), got ",
                                                   pose.size()));
  }
  std::vector<Pose> poses(n);
  for (size_t m = 0; m < n; ++m) {
    for (int k = 0; k < 7; ++k) {
      if (!std::isfinite(pose[7 * m + k])) {
        return absl::InvalidArgumentError(absl::StrCat("world ", world, ": pose of mocap body ", m,
                                                       " ('", d.mocap_bodies[m].name,
                                                       "') is not finite"));
      }
    }
    const Quat q = load_quat(&pose[7 * m + 3]);
    if (!(quat_norm(q) > Real(1e-9))) {
      return absl::InvalidArgumentError(absl::StrCat("world ", world, ": quaternion of mocap body ",
                                                     m, " ('", d.mocap_bodies[m].name,
                                                     "') is zero"));
    }
    poses[m] = {load3(&pose[7 * m]), quat_normalized(q)};
  }
  im.MoveMocapBodies(*w, std::move(poses));
  return absl::OkStatus();
}

size_t Simulator::memory_capacity_bytes() const { return impl_->backend->device_capacity_bytes(); }

size_t Simulator::memory_bytes() const {
  return impl_->backend_kind == Backend::kCpu ? impl_->host.bytes()
                                              : impl_->backend->device_bytes();
}

}  // namespace axion
