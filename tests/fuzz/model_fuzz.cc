// Fuzz target: a ModelDesc built field by field from the input, through Model::Compile and
// three steps. This is what a C++ user, or a client sending a structured ModelDescription to
// the server, can hand the engine directly: any count, index, enum and number (NaN, infinities,
// zero, negative, huge), not only what the importers produce. Compile either refuses it with a
// reason or accepts a model that steps without a crash (fuzz_support.h).
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include "fuzz_support.h"

namespace {

// Reads the input front to back; once it is used up every read returns zero.
class ByteReader {
 public:
  ByteReader(const uint8_t* data, size_t size) : data_(data), size_(size) {}

  uint8_t Byte() { return pos_ < size_ ? data_[pos_++] : 0; }
  bool Bool() { return Byte() & 1; }
  // an integer in [lo, hi]
  int Int(int lo, int hi) { return lo + static_cast<int>(Byte() % (hi - lo + 1)); }
  // Mostly values that break validation and arithmetic, otherwise any double's bits.
  axion::Real Real() {
    static const double kPalette[] = {0,
                                      1,
                                      -1,
                                      0.5,
                                      2,
                                      0.05,
                                      1e-9,
                                      -1e-9,
                                      1e9,
                                      -1e9,
                                      1e300,
                                      -1e300,
                                      1e-300,
                                      std::numeric_limits<double>::quiet_NaN(),
                                      std::numeric_limits<double>::infinity(),
                                      -std::numeric_limits<double>::infinity()};
    constexpr int kPaletteSize = sizeof(kPalette) / sizeof(kPalette[0]);
    const uint8_t pick = Byte();
    if (pick < 224) return static_cast<axion::Real>(kPalette[pick % kPaletteSize]);
    uint64_t bits = 0;
    for (int i = 0; i < 8; ++i) bits = bits << 8 | Byte();
    double value;
    std::memcpy(&value, &bits, sizeof(value));
    return static_cast<axion::Real>(value);
  }
  axion::Vec3 Vec3() { return {Real(), Real(), Real()}; }
  axion::Pose Pose() {
    axion::Pose pose;
    if (Bool()) pose.pos = Vec3();
    if (Bool()) pose.quat = {Real(), Real(), Real(), Real()};
    return pose;
  }
  int Index(int count) { return Int(-2, count); }  // kWorldBody (-1), -2 and one past the end

 private:
  const uint8_t* data_;
  size_t size_;
  size_t pos_ = 0;
};

axion::ModelDesc BuildModel(ByteReader& in) {
  axion::ModelDesc d;
  const int bodies = in.Int(0, 6);
  for (int i = 0; i < bodies; ++i) {
    axion::BodyDesc b;
    b.pose.pos = {0, 0, 0.5 * (i + 1)};
    if (in.Bool()) b.mass = in.Real();
    if (in.Bool())
      for (axion::Real& entry : b.inertia.m) entry = in.Real();
    if (in.Bool()) b.com = in.Vec3();
    if (in.Bool()) b.pose = in.Pose();
    if (in.Bool()) b.linear_velocity = in.Vec3();
    if (in.Bool()) b.angular_velocity = in.Vec3();
    d.bodies.push_back(b);
  }
  const int shapes = in.Int(0, 6);
  for (int i = 0; i < shapes; ++i) {
    axion::ShapeDesc s;
    s.body = in.Index(bodies);
    s.type = static_cast<axion::ShapeType>(in.Int(0, 6));
    s.size = {0.1, 0.2, 0.3};
    if (in.Bool()) s.size = in.Vec3();
    if (in.Bool()) s.pose = in.Pose();
    if (s.type == axion::ShapeType::kConvexHull || in.Int(0, 7) == 0) {
      const int points = in.Int(0, 8);
      for (int k = 0; k < points; ++k)
        s.vertices.push_back(in.Bool() ? in.Vec3()
                                       : axion::Vec3{axion::Real(k & 1), axion::Real(k >> 1 & 1),
                                                     axion::Real(k >> 2)});
    }
    if (in.Bool()) s.material = {in.Real(), in.Real(), in.Real(), in.Real()};
    if (in.Bool()) {
      s.collision_group = in.Byte();
      s.collision_mask = in.Byte();
    }
    if (in.Bool()) s.contact_dim = in.Int(-1, 7);
    if (in.Bool()) {
      s.margin = in.Real();
      s.gap = in.Real();
    }
    d.shapes.push_back(s);
  }
  const int joints = in.Int(0, 6);
  for (int i = 0; i < joints; ++i) {
    axion::JointDesc j;
    j.type = static_cast<axion::JointType>(in.Int(0, 6));
    j.parent = in.Index(bodies);
    j.child = in.Index(bodies);
    if (in.Bool()) j.child_frame = in.Pose();
    if (in.Bool()) j.axis = in.Vec3();
    if (in.Bool()) j.second_axis = in.Vec3();
    if (in.Bool()) j.second_anchor = in.Vec3();
    if (j.type == axion::JointType::kGeneric || in.Int(0, 7) == 0)
      for (axion::AxisMode& mode : j.axis_mode) mode = static_cast<axion::AxisMode>(in.Int(0, 3));
    j.limited = in.Bool();
    for (int k = in.Int(0, 3); k > 0; --k) j.lower.push_back(in.Real());
    for (int k = in.Int(0, 3); k > 0; --k) j.upper.push_back(in.Real());
    if (in.Bool()) j.drive = {in.Real(), in.Real(), in.Real(), in.Real()};
    for (int k = in.Int(0, 3); k > 0; --k)
      j.dof_drive.push_back({in.Real(), in.Real(), in.Real(), in.Real()});
    for (int k = in.Int(0, 3); k > 0; --k) j.dof_armature.push_back(in.Real());
    for (int k = in.Int(0, 3); k > 0; --k) j.dof_friction_loss.push_back(in.Real());
    if (in.Bool()) j.reference = in.Real();
    if (in.Bool()) j.compliance = in.Real();
    if (in.Bool()) j.armature = in.Real();
    if (in.Bool()) j.friction_loss = in.Real();
    j.collide_connected = in.Bool();
    d.joints.push_back(j);
  }
  for (int i = in.Int(0, 4); i > 0; --i) {
    axion::ActuatorDesc a;
    a.type = static_cast<axion::ActuatorType>(in.Int(0, 3));
    a.joint = in.Index(joints);
    a.dof = in.Int(-1, 3);
    if (in.Bool()) a.gear = in.Real();
    a.ctrl_limited = in.Bool();
    if (in.Bool()) {
      a.ctrl_min = in.Real();
      a.ctrl_max = in.Real();
    }
    if (in.Bool()) {
      a.kp = in.Real();
      a.kv = in.Real();
    }
    a.force_limited = in.Bool();
    if (in.Bool()) {
      a.force_min = in.Real();
      a.force_max = in.Real();
    }
    d.actuators.push_back(a);
  }
  for (int i = in.Int(0, 2); i > 0; --i) {
    axion::JointCouplingDesc c;
    c.joint = in.Index(joints);
    c.dof = in.Int(-1, 3);
    c.leader_joint = in.Index(joints);
    c.leader_dof = in.Int(-1, 3);
    if (in.Bool())
      for (axion::Real& coefficient : c.polynomial) coefficient = in.Real();
    if (in.Bool()) c.compliance = in.Real();
    d.couplings.push_back(c);
  }
  for (int i = in.Int(0, 2); i > 0; --i) {
    axion::ContactPairDesc p;
    p.shape_a = in.Index(shapes);
    p.shape_b = in.Index(shapes);
    if (in.Bool()) p.friction = in.Real();
    if (in.Bool()) p.torsional_friction = in.Real();
    if (in.Bool()) p.rolling_friction = in.Real();
    p.contact_dim = in.Int(0, 7);
    d.contact_pairs.push_back(p);
  }
  for (int i = in.Int(0, 2); i > 0; --i)
    d.exclude_body_pairs.push_back({in.Index(bodies), in.Index(bodies)});
  if (in.Bool()) d.contact_capacity = in.Int(-2, 8);
  // a few solver options, as a client's SolverOptions message sets them
  axion::SolverOptions& o = d.options;
  if (in.Bool()) o.timestep = in.Real();
  if (in.Bool()) o.gravity = in.Vec3();
  if (in.Bool()) o.joint_formulation = static_cast<axion::Formulation>(in.Int(0, 2));
  if (in.Bool()) o.contact_formulation = static_cast<axion::Formulation>(in.Int(0, 2));
  if (in.Bool()) o.baumgarte = in.Real();
  if (in.Bool()) o.contact_margin = in.Real();
  if (in.Bool()) o.contact_compliance = in.Real();
  if (in.Bool()) o.newton_iterations = in.Int(-1, 60);
  if (in.Bool()) o.cr_iterations = in.Int(-1, 60);
  if (in.Bool()) o.newton_tolerance = in.Real();
  if (in.Bool()) o.line_search_steps = in.Int(-1, 8);
  if (in.Bool()) o.fb_epsilon = in.Real();
  if (in.Bool()) o.step_halvings = in.Int(-1, 12);
  if (in.Bool()) o.contact_redos = in.Int(-1, 5);
  if (in.Bool()) o.missed_contact_depth = in.Real();
  if (in.Bool()) o.preconditioner = static_cast<axion::Preconditioner>(in.Int(0, 2));
  if (in.Bool()) o.loop_rows = in.Int(-1, 20);
  o.islands = !in.Bool();
  o.friction_newton = !in.Bool();
  // tendons last (earlier corpus entries decode as before), and the actuators that drive them
  for (int i = in.Int(0, 2); i > 0; --i) {
    axion::TendonDesc t;
    for (int k = in.Int(0, 3); k > 0; --k)
      t.joints.push_back({in.Index(joints), in.Int(-1, 3), in.Real()});
    t.limited = in.Bool();
    if (in.Bool()) {
      t.lower = in.Real();
      t.upper = in.Real();
    }
    if (in.Bool()) t.stiffness = in.Real();
    if (in.Bool()) t.damping = in.Real();
    if (in.Bool()) t.spring_length = in.Real();
    if (in.Bool()) t.friction_loss = in.Real();
    d.tendons.push_back(t);
  }
  for (axion::ActuatorDesc& a : d.actuators) {
    if (in.Bool()) a.tendon = in.Int(-2, 2);
    if (in.Bool()) a.target_scale = in.Real();
  }
  // site actuators last of all (they end the input, so earlier entries decode as before)
  for (axion::ActuatorDesc& a : d.actuators) {
    if (!in.Bool()) continue;
    a.site_body = in.Index(bodies);
    if (in.Bool()) a.site_pose = in.Pose();
    for (axion::Real& x : a.site_wrench) {
      if (in.Bool()) x = in.Real();
    }
  }
  // newer fields after them all: more coordinates for each tendon (rows over several slots),
  // holds with compliance and damping, site pushes in world axes and with a reaction body
  for (axion::TendonDesc& t : d.tendons) {
    for (int k = in.Int(0, 6); k > 0; --k)
      t.joints.push_back({in.Index(joints), in.Int(-1, 3), in.Real()});
    t.hold = in.Bool();
    if (in.Bool()) t.hold_offset = in.Real();
    if (in.Bool()) t.hold_compliance = in.Real();
    if (in.Bool()) t.hold_damping = in.Real();
  }
  for (axion::ActuatorDesc& a : d.actuators) {
    a.site_force_world = in.Bool();
    if (in.Bool()) a.site_reaction_body = in.Int(-2, bodies);
  }
  // later still: the depenetration speed, and height fields' grids (small ones, mostly whole,
  // sometimes short or odd)
  if (in.Bool()) d.options.max_depenetration_speed = in.Real();
  for (axion::ShapeDesc& s : d.shapes) {
    if (s.type != axion::ShapeType::kHeightField && in.Int(0, 7) != 0) continue;
    s.heightfield.rows = in.Int(0, 6);
    s.heightfield.cols = in.Int(0, 6);
    int count = s.heightfield.rows * s.heightfield.cols;
    if (in.Int(0, 7) == 0) count += in.Int(-2, 2);
    for (int k = 0; k < count; ++k)
      s.heightfield.heights.push_back(in.Bool() ? in.Real() : axion::Real(0.05 * (k % 3)));
  }
  // adhesion pads: a body, sometimes a missing one, or one beside another transmission; the
  // explicit pairs' own margins and gaps
  for (axion::ActuatorDesc& a : d.actuators) {
    if (in.Int(0, 3) == 0) a.adhesion_body = in.Int(-2, bodies);
  }
  for (axion::ContactPairDesc& p : d.contact_pairs) {
    if (in.Bool()) p.margin = in.Real();
    if (in.Bool()) p.gap = in.Real();
  }
  return d;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  ByteReader in(data, size);
  axion::fuzz::CompileAndStep(BuildModel(in));
  return 0;
}
