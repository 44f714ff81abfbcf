// MJCF importer: structure, mass properties and kinematics against MuJoCo 2.2 itself (same
// file loaded with mj_loadXML), conversion rules, errors and warnings.
#include "axion/mjcf.h"

#include <mujoco/mujoco.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "axion/model.h"
#include "gtest/gtest.h"

namespace axion {
namespace {

const char kHumanoid[] = AXION_TEST_HUMANOID;

struct MjModelDeleter {
  void operator()(mjModel* m) const { mj_deleteModel(m); }
};
using MjModelPtr = std::unique_ptr<mjModel, MjModelDeleter>;

const std::string kModels = AXION_TEST_MODELS;

MjModelPtr LoadMuJoCo(const std::string& path) {
  char error[1000] = "";
  MjModelPtr m(mj_loadXML(path.c_str(), nullptr, error, sizeof(error)));
  EXPECT_TRUE(m) << "MuJoCo could not load " << path << ": " << error;
  return m;
}

std::string WriteTemp(const std::string& name, const std::string& text) {
  std::string path = ::testing::TempDir() + name;
  std::ofstream(path) << text;
  return path;
}

// Eigenvalues of a symmetric 3x3 matrix by cyclic Jacobi rotations, ascending.
std::array<double, 3> SymmetricEigenvalues(const Mat33& input) {
  double a[3][3];
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) a[i][j] = input(i, j);
  for (int sweep = 0; sweep < 50; ++sweep) {
    double off = std::abs(a[0][1]) + std::abs(a[0][2]) + std::abs(a[1][2]);
    if (off < 1e-300) break;
    for (int p = 0; p < 2; ++p) {
      for (int q = p + 1; q < 3; ++q) {
        if (a[p][q] == 0) continue;
        double theta = (a[q][q] - a[p][p]) / (2 * a[p][q]);
        double t = (theta >= 0 ? 1 : -1) / (std::abs(theta) + std::sqrt(theta * theta + 1));
        double c = 1 / std::sqrt(t * t + 1), s = t * c;
        for (int k = 0; k < 3; ++k) {  // columns
          double akp = a[k][p], akq = a[k][q];
          a[k][p] = c * akp - s * akq;
          a[k][q] = s * akp + c * akq;
        }
        for (int k = 0; k < 3; ++k) {  // rows
          double apk = a[p][k], aqk = a[q][k];
          a[p][k] = c * apk - s * aqk;
          a[q][k] = s * apk + c * aqk;
        }
      }
    }
  }
  std::array<double, 3> e = {a[0][0], a[1][1], a[2][2]};
  std::sort(e.begin(), e.end());
  return e;
}

int FindBody(const ModelDesc& model, const std::string& name) {
  for (size_t i = 0; i < model.bodies.size(); ++i) {
    if (model.bodies[i].name == name) return static_cast<int>(i);
  }
  return -1;
}

const ImportResult::SourceJoint* FindSourceJoint(const ImportResult& r, const std::string& name) {
  for (const auto& s : r.source_joints) {
    if (s.name == name) return &s;
  }
  return nullptr;
}

// The spring/damper and armature of one DOF of a joint (per-DOF entries where given).
const DriveDesc& DofDrive(const JointDesc& joint, int dof) {
  return joint.dof_drive.empty() ? joint.drive : joint.dof_drive[dof];
}
Real DofArmature(const JointDesc& joint, int dof) {
  return joint.dof_armature.empty() ? joint.armature : joint.dof_armature[dof];
}

bool HasWarning(const ImportResult& r, const std::string& needle) {
  for (const std::string& w : r.warnings) {
    if (w.find(needle) != std::string::npos) return true;
  }
  return false;
}

// MuJoCo's moving weld groups: a body with joints and the bodies welded to it (no joint of
// their own), which the importer merges into one body named after the group's root.
int MovingWeldGroups(const mjModel* m) {
  int groups = 0;
  for (int b = 1; b < m->nbody; ++b) groups += m->body_weldid[b] == b;
  return groups;
}

// Each moving MuJoCo weld group matches the imported body of its root's name: the group's mass,
// centre of mass and principal inertia (MuJoCo's bodies combined with the parallel-axis
// theorem at qpos0) and the root's qpos0 pose. For a group of one body these are MuJoCo's own
// figures for it.
// MuJoCo keeps mesh vertices in single precision, which moves a mesh body's centre by up to
// 1e-8 m: `com_tolerance` (m) allows for that.
void ExpectBodiesMatchMuJoCo(const std::string& path, const ModelDesc& model,
                             double com_tolerance = 1e-9) {
  MjModelPtr m = LoadMuJoCo(path);
  ASSERT_TRUE(m);
  mjData* d = mj_makeData(m.get());
  mj_kinematics(m.get(), d);
  int compared = 0;
  for (int b = 1; b < m->nbody; ++b) {
    if (m->body_weldid[b] != b) continue;  // static (weld group 0), or welded to a root
    // the group's mass, centre and inertia in the world frame
    double mass = 0, com[3] = {0, 0, 0}, inertia[3][3] = {};
    for (int k = 1; k < m->nbody; ++k) {
      if (m->body_weldid[k] != b) continue;
      mass += m->body_mass[k];
      for (int c = 0; c < 3; ++c) com[c] += m->body_mass[k] * d->xipos[3 * k + c];
    }
    for (int c = 0; c < 3; ++c) com[c] /= mass;
    for (int k = 1; k < m->nbody; ++k) {
      if (m->body_weldid[k] != b) continue;
      const double* rot = d->ximat + 9 * k;  // principal axes in the world, row-major
      double r[3], rr = 0;
      for (int c = 0; c < 3; ++c) {
        r[c] = d->xipos[3 * k + c] - com[c];
        rr += r[c] * r[c];
      }
      for (int i = 0; i < 3; ++i) {
        for (int j = 0; j < 3; ++j) {
          for (int a = 0; a < 3; ++a)
            inertia[i][j] += rot[3 * i + a] * m->body_inertia[3 * k + a] * rot[3 * j + a];
          inertia[i][j] += m->body_mass[k] * ((i == j ? rr : 0) - r[i] * r[j]);
        }
      }
    }
    // A body MuJoCo leaves unnamed is matched by its place among the groups (the model then has
    // no extra bodies from joint conversion).
    const char* mj_name = mj_id2name(m.get(), mjOBJ_BODY, b);
    const std::string name = mj_name ? mj_name : absl::StrCat("body #", b);
    int i = mj_name ? FindBody(model, name) : compared;
    ASSERT_GE(i, 0) << name;
    ASSERT_LT(i, static_cast<int>(model.bodies.size())) << name;
    const BodyDesc& body = model.bodies[i];
    EXPECT_NEAR(body.mass, mass, 1e-6 * mass) << name;
    std::array<double, 3> ours = SymmetricEigenvalues(body.inertia);
    Mat33 group;
    for (int r = 0; r < 3; ++r) {
      for (int c = 0; c < 3; ++c) group(r, c) = inertia[r][c];
    }
    std::array<double, 3> theirs = SymmetricEigenvalues(group);
    for (int k = 0; k < 3; ++k) {
      EXPECT_NEAR(ours[k], theirs[k], 1e-6 * theirs[2]) << name << " principal moment " << k;
    }
    const Vec3 our_com = body.pose.pos + rotate(body.pose.quat, body.com);
    for (int k = 0; k < 3; ++k) {
      EXPECT_NEAR(our_com[k], com[k], com_tolerance) << name << " com " << k;
      EXPECT_NEAR(body.pose.pos[k], d->xpos[3 * b + k], 1e-9) << name << " position " << k;
    }
    double q_dot = body.pose.quat.w * d->xquat[4 * b] + body.pose.quat.x * d->xquat[4 * b + 1] +
                   body.pose.quat.y * d->xquat[4 * b + 2] + body.pose.quat.z * d->xquat[4 * b + 3];
    EXPECT_NEAR(std::abs(q_dot), 1.0, 1e-9) << name << " orientation";
    ++compared;
  }
  EXPECT_GT(compared, 0);
  mj_deleteData(d);
}

// Geom pairs (by name, ordered) that MuJoCo 2.2 considers for collision: its body filter
// (same weld group; a weld group and its parent weld group unless either is the world) and
// then its contype/conaffinity test (engine_collision_driver.c, filterBodyPair and
// filterBitmask).
std::set<std::pair<std::string, std::string>> MuJoCoCollisionPairs(const mjModel* m) {
  std::set<std::pair<std::string, std::string>> pairs;
  bool filter_parent = !(m->opt.disableflags & mjDSBL_FILTERPARENT);
  for (int i = 0; i < m->ngeom; ++i) {
    for (int k = i + 1; k < m->ngeom; ++k) {
      int weld_i = m->body_weldid[m->geom_bodyid[i]], weld_k = m->body_weldid[m->geom_bodyid[k]];
      int parent_i = m->body_weldid[m->body_parentid[weld_i]];
      int parent_k = m->body_weldid[m->body_parentid[weld_k]];
      if (weld_i == weld_k) continue;
      if (filter_parent && weld_i != 0 && weld_k != 0 &&
          (weld_i == parent_k || parent_i == weld_k)) {
        continue;
      }
      if (!(m->geom_contype[i] & m->geom_conaffinity[k]) &&
          !(m->geom_contype[k] & m->geom_conaffinity[i])) {
        continue;
      }
      // <contact><exclude>: ((body1 + 1) << 16) + body2 + 1 by body id (MuJoCo 2.2)
      const int body_i = m->geom_bodyid[i] + 1, body_k = m->geom_bodyid[k] + 1;
      bool excluded = false;
      for (int e = 0; e < m->nexclude; ++e) {
        excluded |= m->exclude_signature[e] == (body_i << 16) + body_k ||
                    m->exclude_signature[e] == (body_k << 16) + body_i;
      }
      if (excluded) continue;
      std::string a = mj_id2name(m, mjOBJ_GEOM, i), b = mj_id2name(m, mjOBJ_GEOM, k);
      pairs.insert({std::min(a, b), std::max(a, b)});
    }
  }
  return pairs;
}

// The compiled model's shape pairs equal MuJoCo's geom pairs, and the importer kept every
// geom's contype/conaffinity as its collision group/mask (the filter lives in
// exclude_body_pairs instead). Every geom must be named.
void ExpectCollisionPairsMatchMuJoCo(const std::string& path, const ModelDesc& desc) {
  MjModelPtr m = LoadMuJoCo(path);
  ASSERT_TRUE(m);
  absl::StatusOr<std::shared_ptr<const Model>> model = Model::Compile(desc);
  ASSERT_TRUE(model.ok()) << model.status();
  std::set<std::pair<std::string, std::string>> ours;
  for (const auto& p : (*model)->collision_pairs()) {
    std::string a = desc.shapes[p[0]].name, b = desc.shapes[p[1]].name;
    ASSERT_FALSE(a.empty() || b.empty()) << "test models name every geom";
    ours.insert({std::min(a, b), std::max(a, b)});
  }
  std::set<std::pair<std::string, std::string>> theirs = MuJoCoCollisionPairs(m.get());
  for (const auto& p : theirs) {
    EXPECT_TRUE(ours.count(p)) << "MuJoCo collides " << p.first << "-" << p.second;
  }
  for (const auto& p : ours) {
    EXPECT_TRUE(theirs.count(p)) << "MuJoCo never collides " << p.first << "-" << p.second;
  }
  ASSERT_EQ(desc.shapes.size(), static_cast<size_t>(m->ngeom));
  for (int g = 0; g < m->ngeom; ++g) {
    const ShapeDesc& shape = desc.shapes[g];
    EXPECT_EQ(shape.name, mj_id2name(m.get(), mjOBJ_GEOM, g));
    EXPECT_EQ(shape.collision_group, static_cast<uint32_t>(m->geom_contype[g])) << shape.name;
    EXPECT_EQ(shape.collision_mask, static_cast<uint32_t>(m->geom_conaffinity[g])) << shape.name;
  }
}

class HumanoidTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!std::ifstream(kHumanoid))
      GTEST_SKIP() << "MuJoCo's sample " << kHumanoid << " is not installed";
    absl::StatusOr<ImportResult> r = LoadMjcfFile(kHumanoid);
    ASSERT_TRUE(r.ok()) << r.status();
    result_ = std::move(*r);
    mj_ = LoadMuJoCo(kHumanoid);
    ASSERT_TRUE(mj_);
  }
  ImportResult result_;
  MjModelPtr mj_;
};

TEST_F(HumanoidTest, CountsMatchMuJoCoAfterMaximalCoordinateConversion) {
  const ModelDesc& model = result_.model;
  const mjModel* m = mj_.get();
  EXPECT_EQ(model.name, "Humanoid");
  EXPECT_DOUBLE_EQ(model.options.timestep, m->opt.timestep);
  EXPECT_EQ(model.shapes.size(), static_cast<size_t>(m->ngeom));
  EXPECT_EQ(model.actuators.size(), static_cast<size_t>(m->nu));
  // Every MuJoCo joint is accounted for, in MuJoCo's order.
  ASSERT_EQ(result_.source_joints.size(), static_cast<size_t>(m->njnt));
  for (int j = 0; j < m->njnt; ++j) {
    EXPECT_EQ(result_.source_joints[j].name, mj_id2name(m, mjOBJ_JOINT, j));
  }
  // Bodies: one per moving weld group (MuJoCo's nbody counts the world; the head and hands, which
  // have no joint, are merged into the torso and the lower arms), and no light body is needed.
  // Every multi-hinge
  // body has orthogonal axes; only the feet's two hinges have different anchors:
  //   lower_waist: abdomen_z, abdomen_y (stiffness 20 vs 10)      -> 1 generic, 2 DOF
  //   thighs: hip_x, hip_z, hip_y (stiffness 10, 10, 20)          -> 1 generic, 3 DOF each
  //   upper arms: shoulder1, shoulder2                            -> 1 generic, 2 DOF each
  //   feet: ankle_y at z = 0.08, ankle_x at z = 0.04 (no common anchor) -> 1 universal each
  EXPECT_EQ(model.bodies.size(), static_cast<size_t>(MovingWeldGroups(m)));
  EXPECT_EQ(model.bodies.size(), static_cast<size_t>(m->nbody - 1 - 3));
  for (const BodyDesc& b : model.bodies) EXPECT_EQ(b.name.find('/'), std::string::npos) << b.name;
  // Every MuJoCo body is accounted for, in MuJoCo's order, the merged ones on their parents.
  ASSERT_EQ(result_.source_bodies.size(), static_cast<size_t>(m->nbody - 1));
  for (int b = 1; b < m->nbody; ++b) {
    const ImportResult::SourceBody& source = result_.source_bodies[b - 1];
    EXPECT_EQ(source.name, mj_id2name(m, mjOBJ_BODY, b));
    ASSERT_GE(source.body, 0) << source.name;
    EXPECT_EQ(model.bodies[source.body].name, mj_id2name(m, mjOBJ_BODY, m->body_weldid[b]));
  }
  EXPECT_TRUE(HasWarning(result_, "body 'head' has no joint: merged into 'torso'"));
  // the right hand rides on the lower arm where MuJoCo places it
  const ImportResult::SourceBody& hand =
      result_.source_bodies[mj_name2id(m, mjOBJ_BODY, "right_hand") - 1];
  EXPECT_EQ(hand.body, FindBody(model, "right_lower_arm"));
  for (int k = 0; k < 3; ++k) EXPECT_NEAR(hand.offset.pos[k], 0.18, 1e-15) << k;
  EXPECT_NEAR(std::abs(hand.offset.quat.w), 1.0, 1e-15);
  // Joints: the free joint becomes none, the 3 jointless bodies (head, hands) none (merged), the
  // 5 multi-hinge bodies above one generic joint each, the feet a universal joint each, every
  // other hinge its own joint.
  int hinges = 0, welds = 0, generic = 0, generic_dofs = 0, universal = 0;
  for (const JointDesc& j : model.joints) {
    hinges += j.type == JointType::kRevolute;
    welds += j.type == JointType::kFixed;
    if (j.type == JointType::kUniversal) {
      ++universal;
      EXPECT_EQ(j.dof_drive.size(), 2u) << j.name;
      EXPECT_EQ(j.dof_armature.size(), 2u) << j.name;
    }
    if (j.type == JointType::kGeneric) {
      ++generic;
      generic_dofs += JointDofCount(j);
      EXPECT_EQ(j.dof_drive.size(), static_cast<size_t>(JointDofCount(j))) << j.name;
      EXPECT_EQ(j.dof_armature.size(), static_cast<size_t>(JointDofCount(j))) << j.name;
    }
  }
  EXPECT_EQ(generic, 5);
  EXPECT_EQ(generic_dofs, 12);
  EXPECT_EQ(universal, 2);
  EXPECT_EQ(hinges, m->njnt - 1 - generic_dofs - 2 * universal);
  EXPECT_EQ(welds, 0);
  EXPECT_EQ(model.joints.size(), static_cast<size_t>(hinges + welds + generic + universal));
  // DOF: MuJoCo's nv = 6 (free) + 21 hinges; Axion's joint DOF are the 21 hinge angles.
  int dofs = 0;
  for (const JointDesc& j : model.joints) dofs += JointDofCount(j);
  EXPECT_EQ(dofs, m->nv - 6);
}

// With MjcfOptions::merge_welded_bodies off, a body without joints keeps a body of its own on a
// fixed joint to its parent: MuJoCo's 16 bodies, the head and hands held by welds.
TEST(MjcfWeldOptionTest, WeldedBodiesKeepTheirOwnBodiesWhenAsked) {
  MjcfOptions options;
  options.merge_welded_bodies = false;
  absl::StatusOr<ImportResult> r = LoadMjcfFile(kHumanoid, options);
  ASSERT_TRUE(r.ok()) << r.status();
  MjModelPtr m = LoadMuJoCo(kHumanoid);
  ASSERT_TRUE(m);
  EXPECT_EQ(r->model.bodies.size(), static_cast<size_t>(m->nbody - 1));
  int welds = 0;
  for (const JointDesc& j : r->model.joints) {
    if (j.type != JointType::kFixed) continue;
    ++welds;
    EXPECT_TRUE(j.name == "head_weld" || j.name == "right_hand_weld" || j.name == "left_hand_weld")
        << j.name;
  }
  EXPECT_EQ(welds, 3);
  for (const ImportResult::SourceBody& source : r->source_bodies) {
    ASSERT_GE(source.body, 0) << source.name;
    EXPECT_EQ(r->model.bodies[source.body].name, source.name);
    EXPECT_EQ(norm(source.offset.pos), 0) << source.name;
  }
  EXPECT_FALSE(HasWarning(*r, "merged into"));
}

TEST_F(HumanoidTest, MassAndInertiaMatchMuJoCo) {
  ExpectBodiesMatchMuJoCo(kHumanoid, result_.model);
  double total = 0, light = 0;
  for (const BodyDesc& b : result_.model.bodies) {
    (b.name.find('/') == std::string::npos ? total : light) += b.mass;
  }
  EXPECT_NEAR(total, mj_getTotalmass(mj_.get()), 1e-9 * total);
  // Each light body weighs 1% of the body its chain leads to.
  double expected_light = 0;
  for (const BodyDesc& b : result_.model.bodies) {
    size_t slash = b.name.find('/');
    if (slash != std::string::npos) {
      expected_light +=
          0.01 * result_.model.bodies[FindBody(result_.model, b.name.substr(0, slash))].mass;
    }
  }
  EXPECT_NEAR(light, expected_light, 1e-12);
}

TEST_F(HumanoidTest, JointsAndActuatorsMatchMuJoCo) {
  const mjModel* m = mj_.get();
  const ModelDesc& model = result_.model;
  for (int j = 0; j < m->njnt; ++j) {
    const char* name = mj_id2name(m, mjOBJ_JOINT, j);
    const ImportResult::SourceJoint* s = FindSourceJoint(result_, name);
    ASSERT_TRUE(s) << name;
    if (m->jnt_type[j] == mjJNT_FREE) {
      EXPECT_EQ(s->joint, -1);
      continue;
    }
    ASSERT_GE(s->joint, 0) << name;
    const JointDesc& joint = model.joints[s->joint];
    int dof = m->jnt_dofadr[j];
    // Each MJCF joint keeps its own spring, damper and armature, merged or not.
    EXPECT_DOUBLE_EQ(DofDrive(joint, s->dof).stiffness, m->jnt_stiffness[j]) << name;
    EXPECT_DOUBLE_EQ(DofDrive(joint, s->dof).damping, m->dof_damping[dof]) << name;
    EXPECT_DOUBLE_EQ(DofDrive(joint, s->dof).target_position, m->qpos_spring[m->jnt_qposadr[j]])
        << name;
    EXPECT_DOUBLE_EQ(DofArmature(joint, s->dof), m->dof_armature[dof]) << name;
    // The joint's axis and anchor in the body frame: frame x and origin for a revolute joint,
    // the DOF's frame axis for a generic one, the second hinge's for a universal one.
    if (joint.type == JointType::kUniversal && s->dof == 1) {
      Vec3 axis = normalized(joint.second_axis);
      for (int k = 0; k < 3; ++k) {
        EXPECT_NEAR(axis[k], m->jnt_axis[3 * j + k], 1e-12) << name;
        EXPECT_NEAR(joint.second_anchor[k], m->jnt_pos[3 * j + k], 1e-12) << name;
      }
      EXPECT_NEAR(joint.lower[s->dof], m->jnt_range[2 * j], 1e-12) << name;
      EXPECT_NEAR(joint.upper[s->dof], m->jnt_range[2 * j + 1], 1e-12) << name;
      continue;
    }
    int frame_axis = 0;
    if (joint.type == JointType::kGeneric) {
      int seen = 0;
      for (int k = 3; k < 6; ++k) {
        if (joint.axis_mode[k] == AxisMode::kLocked) continue;
        if (seen++ == s->dof) frame_axis = k - 3;
      }
    }
    Vec3 unit{frame_axis == 0 ? 1.0 : 0.0, frame_axis == 1 ? 1.0 : 0.0,
              frame_axis == 2 ? 1.0 : 0.0};
    Vec3 axis = rotate(joint.child_frame.quat, unit);
    for (int k = 0; k < 3; ++k) {
      EXPECT_NEAR(axis[k], m->jnt_axis[3 * j + k], 1e-12) << name;
      EXPECT_NEAR(joint.child_frame.pos[k], m->jnt_pos[3 * j + k], 1e-12) << name;
    }
    ASSERT_TRUE(m->jnt_limited[j]);
    ASSERT_TRUE(joint.limited);
    EXPECT_NEAR(joint.lower[s->dof], m->jnt_range[2 * j], 1e-12) << name;
    EXPECT_NEAR(joint.upper[s->dof], m->jnt_range[2 * j + 1], 1e-12) << name;
  }
  ASSERT_EQ(model.actuators.size(), static_cast<size_t>(m->nu));
  for (int a = 0; a < m->nu; ++a) {
    const ActuatorDesc& act = model.actuators[a];
    EXPECT_EQ(act.name, mj_id2name(m, mjOBJ_ACTUATOR, a));
    EXPECT_EQ(act.type, ActuatorType::kEffort);
    EXPECT_DOUBLE_EQ(act.gear, m->actuator_gear[6 * a]);
    EXPECT_TRUE(act.ctrl_limited);
    EXPECT_DOUBLE_EQ(act.ctrl_min, m->actuator_ctrlrange[2 * a]);
    EXPECT_DOUBLE_EQ(act.ctrl_max, m->actuator_ctrlrange[2 * a + 1]);
    const ImportResult::SourceJoint* s =
        FindSourceJoint(result_, mj_id2name(m, mjOBJ_JOINT, m->actuator_trnid[2 * a]));
    ASSERT_TRUE(s);
    EXPECT_EQ(act.joint, s->joint);
    EXPECT_EQ(act.dof, s->dof);
  }
}

// Geoms keep MuJoCo's sliding friction and condim (the limbs 1, the floor 3), and contacts combine
// friction as MuJoCo does: the larger coefficient.
TEST_F(HumanoidTest, FrictionAndContactDimensionMatchMuJoCo) {
  const ModelDesc& model = result_.model;
  const mjModel* m = mj_.get();
  EXPECT_EQ(model.options.friction_combine, FrictionCombine::kMax);
  ASSERT_EQ(model.shapes.size(), static_cast<size_t>(m->ngeom));
  int frictionless = 0;
  for (int g = 0; g < m->ngeom; ++g) {
    const ShapeDesc& shape = model.shapes[g];
    EXPECT_EQ(shape.name, mj_id2name(m, mjOBJ_GEOM, g));
    EXPECT_DOUBLE_EQ(shape.material.friction, m->geom_friction[3 * g]);
    EXPECT_DOUBLE_EQ(shape.material.torsional_friction, m->geom_friction[3 * g + 1]);
    EXPECT_DOUBLE_EQ(shape.material.rolling_friction, m->geom_friction[3 * g + 2]);
    EXPECT_EQ(shape.contact_dim, m->geom_condim[g]) << shape.name;
    frictionless += shape.contact_dim == 1;
  }
  EXPECT_EQ(frictionless, m->ngeom - 1);  // all but the floor
}

TEST(MjcfGeomTest, CondimFourAndSixCarryTorsionalAndRollingFrictionAndOthersAreErrors) {
  auto load = [](const std::string& condim, const std::string& friction = "") {
    return LoadMjcfString(
        absl::StrCat(R"(<mujoco><worldbody><body><freejoint/>
        <geom type="sphere" size=".1" condim=")",
                     condim, "\"", friction.empty() ? "" : " friction=\"" + friction + "\"",
                     R"(/></body></worldbody></mujoco>)"),
        "");
  };
  absl::StatusOr<ImportResult> six = load("6");
  ASSERT_TRUE(six.ok()) << six.status();
  EXPECT_TRUE(six->warnings.empty()) << six->warnings.front();
  const ShapeDesc& ball = six->model.shapes[0];
  EXPECT_EQ(ball.contact_dim, 6);
  EXPECT_DOUBLE_EQ(ball.material.torsional_friction, 0.005);  // MuJoCo's defaults
  EXPECT_DOUBLE_EQ(ball.material.rolling_friction, 0.0001);
  absl::StatusOr<ImportResult> four = load("4", "0.5 0.02");
  ASSERT_TRUE(four.ok()) << four.status();
  EXPECT_EQ(four->model.shapes[0].contact_dim, 4);
  EXPECT_DOUBLE_EQ(four->model.shapes[0].material.friction, 0.5);
  EXPECT_DOUBLE_EQ(four->model.shapes[0].material.torsional_friction, 0.02);
  EXPECT_DOUBLE_EQ(four->model.shapes[0].material.rolling_friction, 0.0001);
  absl::StatusOr<ImportResult> negative = load("4", "0.5 -0.02");
  ASSERT_FALSE(negative.ok());
  EXPECT_NE(negative.status().message().find("torsional friction is negative"), std::string::npos)
      << negative.status();
  absl::StatusOr<ImportResult> two = load("2");
  ASSERT_FALSE(two.ok());
  EXPECT_NE(two.status().message().find("condim"), std::string::npos) << two.status();

  // a friction of fewer values keeps the ones it inherits, as MuJoCo reads it: from a class,
  // from its parent class, or MuJoCo's own defaults; the same three values as libmujoco's
  const std::string path = ::testing::TempDir() + "friction_classes.xml";
  std::ofstream(path) << R"(<mujoco>
  <default>
    <geom friction="0.8 0.03 0.002" condim="6"/>
    <default class="partial"><geom friction="0.6"/>
      <default class="nested"><geom friction="0.4 0.01"/></default>
    </default>
  </default>
  <worldbody>
    <geom name="floor" type="plane" size="1 1 0.1" friction="0.9"/>
    <body><freejoint/><geom name="a" class="partial" type="sphere" size="0.1"/></body>
    <body><freejoint/><geom name="b" class="nested" type="sphere" size="0.1"/></body>
    <body><freejoint/><geom name="c" class="nested" type="sphere" size="0.1" friction="0.3"/></body>
  </worldbody>
</mujoco>)";
  absl::StatusOr<ImportResult> classes = LoadMjcfFile(path);
  ASSERT_TRUE(classes.ok()) << classes.status();
  MjModelPtr m = LoadMuJoCo(path);
  ASSERT_TRUE(m);
  ASSERT_EQ(static_cast<int>(classes->model.shapes.size()), m->ngeom);
  for (int g = 0; g < m->ngeom; ++g) {
    const Material& material = classes->model.shapes[g].material;
    EXPECT_DOUBLE_EQ(material.friction, m->geom_friction[3 * g]) << g;
    EXPECT_DOUBLE_EQ(material.torsional_friction, m->geom_friction[3 * g + 1]) << g;
    EXPECT_DOUBLE_EQ(material.rolling_friction, m->geom_friction[3 * g + 2]) << g;
  }
  EXPECT_DOUBLE_EQ(classes->model.shapes[3].material.torsional_friction, 0.01);  // c
  EXPECT_DOUBLE_EQ(classes->model.shapes[3].material.rolling_friction, 0.002);
}

TEST_F(HumanoidTest, CompilesAndWarnsAboutWhatItIgnores) {
  absl::StatusOr<std::shared_ptr<const Model>> model = Model::Compile(result_.model);
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_TRUE(HasWarning(result_, "<light>"));
  EXPECT_TRUE(HasWarning(result_, "<camera>"));
  EXPECT_TRUE(HasWarning(result_, "'solimp'"));
  EXPECT_FALSE(HasWarning(result_, "condim"));
  EXPECT_TRUE(HasWarning(result_, "<asset>"));
  EXPECT_FALSE(HasWarning(result_, "light bodies"));
}

// MuJoCo never lets a body touch its parent (a joint between them filters it, as the ankles'
// universal joints do for shin and foot), nor a welded body its parent's other children (the
// head, welded to the torso, and the upper arms). With the head and hands merged into the
// torso and the lower arms, the joints filter every such pair: no body pair needs listing, and
// contype/conaffinity keep their meaning.
TEST_F(HumanoidTest, CollisionFilterMatchesMuJoCoParentRule) {
  ExpectCollisionPairsMatchMuJoCo(kHumanoid, result_.model);
  const ModelDesc& model = result_.model;
  auto shape_body = [&](const std::string& name) {
    for (const ShapeDesc& s : model.shapes) {
      if (s.name == name) return s.body;
    }
    ADD_FAILURE() << name;
    return kWorldBody;
  };
  EXPECT_EQ(shape_body("head"), FindBody(model, "torso"));
  EXPECT_EQ(shape_body("right_hand"), FindBody(model, "right_lower_arm"));
  EXPECT_EQ(shape_body("left_hand"), FindBody(model, "left_lower_arm"));
  EXPECT_TRUE(model.exclude_body_pairs.empty());
  EXPECT_FALSE(HasWarning(result_, "collision groups"));
  EXPECT_FALSE(HasWarning(result_, "filter"));
}

// The filter scales with the model: 12 robots, each a torso with a welded head (merged into the
// torso) and two arms whose <contact><exclude> keeps them apart (36 bodies, 12 listed pairs:
// more than a 32-bit group per body could name). The left arms' contype/conaffinity 2 (they
// touch only each other) keep their meaning.
TEST(MjcfCollisionTest, ParentAndWeldFilterMatchesMuJoCoForManyBodies) {
  const std::string robot = R"(
    <body name="{P}torso" pos="{X} 0 1"><freejoint/>
      <geom name="{P}torso" type="capsule" fromto="0 -.07 0 0 .07 0" size=".07"/>
      <body name="{P}head" pos="0 0 .19"><geom name="{P}head" size=".09"/></body>
      <body name="{P}left_arm" pos="0 .17 .06"><joint name="{P}left_shoulder" axis="0 1 0"/>
        <geom name="{P}left_arm" type="capsule" fromto="0 0 0 0 0 -.3" size=".04" contype="2"
              conaffinity="2"/></body>
      <body name="{P}right_arm" pos="0 -.17 .06"><joint name="{P}right_shoulder" axis="0 1 0"/>
        <geom name="{P}right_arm" type="capsule" fromto="0 0 0 0 0 -.3" size=".04"/></body>
    </body>)";
  std::string xml = R"(<mujoco><worldbody><geom name="floor" type="plane" size="0 0 1"/>)";
  for (int r = 0; r < 12; ++r) {
    xml += absl::StrReplaceAll(
        robot, {{"{X}", absl::StrCat(0.5 * r)}, {"{P}", absl::StrCat("r", r, "_")}});
  }
  xml += "</worldbody><contact>";
  for (int r = 0; r < 12; ++r) {
    xml += absl::StrReplaceAll(R"(<exclude body1="{P}left_arm" body2="{P}right_arm"/>)",
                               {{"{P}", absl::StrCat("r", r, "_")}});
  }
  xml += "</contact></mujoco>";
  std::string path = WriteTemp("many_robots.xml", xml);
  absl::StatusOr<ImportResult> r = LoadMjcfFile(path);
  ASSERT_TRUE(r.ok()) << r.status();
  ExpectCollisionPairsMatchMuJoCo(path, r->model);
  // Per robot: the arms' exclude (the head, merged into the torso, is filtered by the shoulders).
  EXPECT_EQ(r->model.bodies.size(), 36u);
  EXPECT_EQ(r->model.exclude_body_pairs.size(), 12u);
}

// Every shape kind, every orientation form, explicit masses and <inertial>, against MuJoCo.
TEST(MjcfMassTest, AllShapesAndOrientationsMatchMuJoCo) {
  std::string path = WriteTemp("mass_zoo.xml", R"(
<mujoco model="zoo">
  <compiler angle="degree" eulerseq="zyx"/>
  <worldbody>
    <geom name="floor" type="plane" size="5 5 1"/>
    <body name="a" pos="0.1 0.2 1" euler="10 20 30">
      <freejoint/>
      <geom type="sphere" size="0.1" pos="0.1 0 0"/>
      <geom type="capsule" fromto="0 0 0 0.3 0.1 -0.2" size="0.05"/>
      <geom type="cylinder" size="0.04 0.1" quat="0.9 0.1 0.3 0.2" pos="0 0.1 0"/>
      <geom type="box" size="0.1 0.05 0.02" axisangle="1 1 0 40" density="500"/>
      <geom type="ellipsoid" size="0.1 0.06 0.03" xyaxes="0 1 0 -1 0 0.3" mass="0.7"/>
      <body name="b" pos="0 0 -0.3" zaxis="0.2 0.3 1">
        <joint name="b_hinge" type="hinge" axis="1 0 0"/>
        <geom type="box" fromto="0 0 0 0 0 -0.2" size="0.03 0.02 0"/>
        <geom type="capsule" size="0.02 0.1" euler="90 0 0" pos="0.05 0 0"/>
        <body name="c" pos="0.1 0 0" axisangle="0 0 1 90">
          <joint name="c_slide" type="slide" axis="0 1 0"/>
          <inertial pos="0.01 0.02 0.03" quat="0.5 0.5 0.5 0.5" mass="1.5" diaginertia="0.01 0.02 0.025"/>
          <geom type="sphere" size="0.02"/>
          <body name="d" pos="0 0.1 0">
            <joint name="d_ball" type="ball"/>
            <inertial pos="0 0 -0.1" mass="0.3" fullinertia="0.004 0.005 0.006 0.001 -0.0005 0.0002"/>
          </body>
        </body>
      </body>
    </body>
  </worldbody>
</mujoco>)");
  absl::StatusOr<ImportResult> r = LoadMjcfFile(path);
  ASSERT_TRUE(r.ok()) << r.status();
  ExpectBodiesMatchMuJoCo(path, r->model);
  // The unequal ellipsoid collides as a hull; the equal-radius case would be a sphere.
  EXPECT_EQ(r->model.shapes[5].type, ShapeType::kConvexHull);
  EXPECT_TRUE(HasWarning(*r, "ellipsoid"));
  EXPECT_EQ(r->model.shapes[0].body, kWorldBody);
  EXPECT_EQ(r->model.shapes[0].type, ShapeType::kPlane);
  EXPECT_TRUE(HasWarning(*r, "finite plane"));
  // fromto: a capsule's half length is half the segment.
  EXPECT_NEAR(r->model.shapes[2].size.y, 0.5 * std::sqrt(0.09 + 0.01 + 0.04), 1e-15);
}

TEST(MjcfMassTest, InertiaFromGeomTrueOverridesInertial) {
  std::string xml = R"(
<mujoco><compiler inertiafromgeom="true"/>
  <worldbody><body name="b"><freejoint/>
    <inertial pos="0 0 0" mass="100" diaginertia="1 1 1"/>
    <geom type="box" size="0.1 0.2 0.3"/>
  </body></worldbody></mujoco>)";
  absl::StatusOr<ImportResult> r = LoadMjcfString(xml, "");
  ASSERT_TRUE(r.ok()) << r.status();
  const BodyDesc& b = r->model.bodies[0];
  double mass = 1000 * 0.2 * 0.4 * 0.6;
  EXPECT_NEAR(b.mass, mass, 1e-12);
  EXPECT_NEAR(b.inertia(0, 0), mass * (0.04 + 0.09) / 3, 1e-12);
  EXPECT_NEAR(b.inertia(2, 2), mass * (0.01 + 0.04) / 3, 1e-12);
}

TEST(MjcfJointTest, OrthogonalHingesWithOneAnchorBecomeOneGenericJoint) {
  // Hinges along x, z, y: x cross z = -y, so the frame is (x, y, z) = (joint 0, joint 2, joint 1).
  // Each keeps its own spring, damper and armature.
  std::string xml = R"(
<mujoco><worldbody><body name="base" pos="0 0 1"><freejoint/><geom size="0.1"/>
  <body name="limb" pos="0 0 -0.2">
    <joint name="jx" axis="1 0 0" pos="0 0 0.05" limited="true" range="-30 30" stiffness="10"
           damping="5" armature="0.02"/>
    <joint name="jz" axis="0 0 1" pos="0 0 0.05" stiffness="10" damping="5"/>
    <joint name="jy" axis="0 1 0" pos="0 0 0.05" limited="true" range="-90 10" stiffness="20"
           damping="1" armature="0.03" springref="-20"/>
    <geom type="capsule" fromto="0 0 0 0 0 -0.3" size="0.04"/>
  </body></body></worldbody>
  <actuator><motor joint="jy" gear="3"/></actuator></mujoco>)";
  absl::StatusOr<ImportResult> r = LoadMjcfString(xml, "");
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->model.joints.size(), 1u);
  const JointDesc& j = r->model.joints[0];
  EXPECT_EQ(j.type, JointType::kGeneric);
  EXPECT_EQ(j.name, "jx+jy+jz");
  EXPECT_EQ(j.parent, 0);
  EXPECT_EQ(j.child, 1);
  using enum AxisMode;
  std::array<AxisMode, 6> modes = {kLocked, kLocked, kLocked, kLimited, kLimited, kFree};
  EXPECT_EQ(j.axis_mode, modes);
  const double deg = M_PI / 180;
  ASSERT_EQ(j.lower.size(), 3u);
  EXPECT_NEAR(j.lower[0], -30 * deg, 1e-15);
  EXPECT_NEAR(j.upper[1], 10 * deg, 1e-15);
  Vec3 y = rotate(j.child_frame.quat, Vec3{0, 1, 0});
  EXPECT_NEAR(y.y, 1, 1e-15);
  EXPECT_NEAR(j.child_frame.pos.z, 0.05, 1e-15);
  EXPECT_EQ(FindSourceJoint(*r, "jy")->dof, 1);
  EXPECT_EQ(FindSourceJoint(*r, "jz")->dof, 2);
  ASSERT_EQ(j.dof_drive.size(), 3u);
  ASSERT_EQ(j.dof_armature.size(), 3u);
  EXPECT_EQ(j.dof_drive[0].stiffness, 10);  // jx
  EXPECT_EQ(j.dof_drive[0].damping, 5);
  EXPECT_EQ(j.dof_armature[0], 0.02);
  EXPECT_EQ(j.dof_drive[1].stiffness, 20);  // jy
  EXPECT_EQ(j.dof_drive[1].damping, 1);
  EXPECT_NEAR(j.dof_drive[1].target_position, -20 * deg, 1e-15);
  EXPECT_EQ(j.dof_armature[1], 0.03);
  EXPECT_EQ(j.dof_drive[2].stiffness, 10);  // jz
  EXPECT_EQ(j.dof_armature[2], 0);
  EXPECT_TRUE(r->warnings.empty()) << r->warnings.front();
  ASSERT_EQ(r->model.actuators.size(), 1u);
  EXPECT_EQ(r->model.actuators[0].dof, 1);
  EXPECT_EQ(r->model.actuators[0].gear, 3);
  EXPECT_TRUE(Model::Compile(r->model).ok());

  // The same body imported with merging off: an exact chain through two light bodies.
  MjcfOptions chain;
  chain.merge_joints = false;
  absl::StatusOr<ImportResult> c = LoadMjcfString(xml, "", chain);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->model.joints.size(), 3u);
  EXPECT_EQ(c->model.bodies.size(), 4u);
}

TEST(MjcfJointTest, SeparateAnchorsBecomeOneUniversalJoint) {
  std::string xml = R"(
<mujoco><worldbody><body name="foot" pos="0 0 1">
    <joint name="ankle_y" axis="0 1 0" pos="0 0 0.08" damping="2" limited="true" range="-50 50"/>
    <joint name="ankle_x" axis="1 0 0.5" pos="0 0 0.04" stiffness="3"/>
    <geom type="box" size="0.1 0.05 0.02"/>
  </body></worldbody></mujoco>)";
  absl::StatusOr<ImportResult> r = LoadMjcfString(xml, "");
  ASSERT_TRUE(r.ok()) << r.status();
  const ModelDesc& m = r->model;
  ASSERT_EQ(m.bodies.size(), 1u);  // no light body
  ASSERT_EQ(m.joints.size(), 1u);
  const JointDesc& j = m.joints[0];
  EXPECT_EQ(j.name, "ankle_y+ankle_x");
  EXPECT_EQ(j.type, JointType::kUniversal);
  EXPECT_EQ(j.parent, kWorldBody);
  EXPECT_EQ(j.child, 0);
  EXPECT_TRUE(j.collide_connected);  // MuJoCo collides bodies with the world
  // first hinge: the joint frame's x axis through its origin; second: its own axis and anchor
  Vec3 first = rotate(j.child_frame.quat, Vec3{1, 0, 0});
  EXPECT_NEAR(first.y, 1, 1e-15);
  EXPECT_NEAR(j.child_frame.pos.z, 0.08, 1e-15);
  Vec3 second = normalized(j.second_axis);
  EXPECT_NEAR(second.x, 1 / std::sqrt(1.25), 1e-15);
  EXPECT_NEAR(second.z, 0.5 / std::sqrt(1.25), 1e-15);
  EXPECT_NEAR(j.second_anchor.z, 0.04, 1e-15);
  // each hinge keeps its own limit, spring and damper; actuators address DOF 0 and 1
  EXPECT_EQ(j.axis_mode[3], AxisMode::kLimited);
  EXPECT_EQ(j.axis_mode[4], AxisMode::kFree);
  ASSERT_EQ(j.lower.size(), 2u);
  EXPECT_NEAR(j.lower[0], -50 * M_PI / 180, 1e-12);
  ASSERT_EQ(j.dof_drive.size(), 2u);
  EXPECT_EQ(j.dof_drive[0].damping, 2);
  EXPECT_EQ(j.dof_drive[1].stiffness, 3);
  ASSERT_EQ(r->source_joints.size(), 2u);
  EXPECT_EQ(r->source_joints[1].name, "ankle_x");
  EXPECT_EQ(r->source_joints[1].dof, 1);
  absl::StatusOr<std::shared_ptr<const Model>> model = Model::Compile(m);
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_EQ((*model)->joint_dof_count(), 2);
  EXPECT_EQ((*model)->joint_row_count(), 4 + 2 + 2);  // 4 bilateral, hinge 1 limits, 2 drives
}

TEST(MjcfJointTest, DefaultClassesChildclassAndSpringsFollowMuJoCo) {
  std::string path = WriteTemp("classes.xml", R"(
<mujoco>
  <default>
    <joint damping="1" armature="0.1"/>
    <geom density="2000"/>
    <default class="stiff">
      <joint stiffness="5" limited="true" range="-10 20"/>
      <default class="stiffer"><joint stiffness="9" springref="5"/></default>
    </default>
  </default>
  <worldbody>
    <body name="a" pos="0 0 1" childclass="stiff">
      <joint name="ja" axis="0 1 0"/>
      <geom size="0.1"/>
      <body name="b" pos="0 0 -0.3">
        <joint name="jb" class="stiffer" ref="3"/>
        <geom size="0.05" class="main"/>
      </body>
    </body>
  </worldbody>
</mujoco>)");
  absl::StatusOr<ImportResult> r = LoadMjcfFile(path);
  ASSERT_TRUE(r.ok()) << r.status();
  MjModelPtr m = LoadMuJoCo(path);
  ASSERT_TRUE(m);
  ExpectBodiesMatchMuJoCo(path, r->model);
  for (int j = 0; j < m->njnt; ++j) {
    const JointDesc& joint =
        r->model.joints[FindSourceJoint(*r, mj_id2name(m.get(), mjOBJ_JOINT, j))->joint];
    EXPECT_DOUBLE_EQ(joint.drive.stiffness, m->jnt_stiffness[j]);
    EXPECT_DOUBLE_EQ(joint.drive.damping, m->dof_damping[j]);
    EXPECT_DOUBLE_EQ(joint.armature, m->dof_armature[j]);
    EXPECT_NEAR(joint.lower[0], m->jnt_range[2 * j], 1e-15);
    EXPECT_NEAR(joint.upper[0], m->jnt_range[2 * j + 1], 1e-15);
    EXPECT_NEAR(joint.reference, m->qpos0[m->jnt_qposadr[j]], 1e-15);
    EXPECT_NEAR(joint.drive.target_position, m->qpos_spring[m->jnt_qposadr[j]], 1e-15);
  }
}

// Every top-level <default> is MuJoCo's main class: a second one adds to it (humanoid100.xml
// includes humanoid_body.xml, whose defaults come first), and classes nested in either start
// from main as it stands where they are defined.
TEST(MjcfJointTest, RepeatedTopLevelDefaultsAddToTheMainClass) {
  std::string path = WriteTemp("two_defaults.xml", R"(
<mujoco>
  <default>
    <geom density="500"/>
    <default class="early"><geom size="0.1"/></default>
  </default>
  <default>
    <geom density="2000" type="box"/>
    <default class="late"><geom size="0.2 0.1 0.1"/></default>
  </default>
  <worldbody>
    <body name="plain"><freejoint/><geom type="sphere" size="0.1"/></body>
    <body name="early"><freejoint/><geom class="early" type="sphere"/></body>
    <body name="late"><freejoint/><geom class="late"/></body>
  </worldbody>
</mujoco>)");
  absl::StatusOr<ImportResult> r = LoadMjcfFile(path);
  ASSERT_TRUE(r.ok()) << r.status();
  ExpectBodiesMatchMuJoCo(path, r->model);
  const double sphere = 4.0 / 3.0 * M_PI * 0.001;
  EXPECT_NEAR(r->model.bodies[FindBody(r->model, "plain")].mass, 2000 * sphere, 1e-12);
  EXPECT_NEAR(r->model.bodies[FindBody(r->model, "early")].mass, 500 * sphere, 1e-12);
  EXPECT_NEAR(r->model.bodies[FindBody(r->model, "late")].mass, 2000 * 0.016, 1e-12);
  // A nested class may still not be defined twice.
  absl::StatusOr<ImportResult> twice = LoadMjcfString(R"(<mujoco><default>
    <default class="a"/><default class="a"/></default><worldbody/></mujoco>)",
                                                      "");
  ASSERT_FALSE(twice.ok());
  EXPECT_NE(twice.status().message().find("'a' is defined twice"), std::string::npos)
      << twice.status();
}

// MuJoCo's humanoid100.xml (the humanoid and 100 free objects: capsules, ellipsoids, boxes and
// cylinders) loads, with every body's mass and inertia MuJoCo's.
TEST(MjcfSampleTest, HumanoidWithHundredObjectsMatchesMuJoCo) {
  const std::string path = "/usr/share/mujoco/model/humanoid100/humanoid100.xml";
  if (!std::ifstream(path)) GTEST_SKIP() << "MuJoCo's sample " << path << " is not installed";
  absl::StatusOr<ImportResult> r = LoadMjcfFile(path);
  ASSERT_TRUE(r.ok()) << r.status();
  MjModelPtr m = LoadMuJoCo(path);
  ASSERT_TRUE(m);
  EXPECT_EQ(r->model.bodies.size(), static_cast<size_t>(MovingWeldGroups(m.get())));
  EXPECT_EQ(r->model.shapes.size(), static_cast<size_t>(m->ngeom));
  EXPECT_EQ(r->model.actuators.size(), static_cast<size_t>(m->nu));
  ExpectBodiesMatchMuJoCo(path, r->model);
}

// Mesh geoms take MuJoCo 2.2's mass properties (a pyramid per triangle, then the box of equal
// principal moments) wherever the geom sits, and collide as the hull of their vertices: a cube
// from an OBJ file (quads), an L-shaped prism from a binary STL (not convex: MuJoCo's mass is
// the box's, 3.4157 m^3 of density for 3 m^3 of solid), and a tetrahedron given by its
// vertices alone (faces from their hull), under meshdir, scale, a geom pose and a mass.
TEST(MjcfMeshTest, MassPropertiesMatchMuJoCo) {
  const std::string dir = ::testing::TempDir() + "mesh_assets";
  ASSERT_EQ(std::system(("mkdir -p " + dir).c_str()), 0);
  std::ofstream(dir + "/cube.obj") << R"(# unit cube, quads
v 0 0 0
v 0 0 1
v 0 1 0
v 0 1 1
v 1 0 0
v 1 0 1
v 1 1 0
v 1 1 1
vt 0 0
vn 0 0 -1
f 1/1/1 3/1/1 7/1/1 5/1/1
f 2 6 8 4
f 1//1 5//1 6//1 2//1
f 3 4 8 7
f 1 2 4 3
f -4 -2 -1 -3
)";
  {
    // L-shaped profile in x-y extruded along z
    const double profile[6][2] = {{0, 0}, {2, 0}, {2, 1}, {1, 1}, {1, 2}, {0, 2}};
    std::vector<std::array<double, 3>> v;
    for (double z : {0.0, 1.0}) {
      for (const auto& p : profile) v.push_back({p[0], p[1], z});
    }
    std::vector<std::array<int, 3>> tris;
    const int fan[4][3] = {{0, 1, 2}, {0, 2, 3}, {0, 3, 4}, {0, 4, 5}};
    for (const auto& t : fan) {
      tris.push_back({t[0], t[2], t[1]});
      tris.push_back({t[0] + 6, t[1] + 6, t[2] + 6});
    }
    for (int i = 0; i < 6; ++i) {
      int j = (i + 1) % 6;
      tris.push_back({i, j, j + 6});
      tris.push_back({i, j + 6, i + 6});
    }
    // binary STL (MuJoCo reads no other): header, count, then normal, corners and attribute
    std::ofstream stl(dir + "/ell.stl", std::ios::binary);
    const std::string header(80, ' ');
    stl.write(header.data(), 80);
    const uint32_t count = static_cast<uint32_t>(tris.size());
    stl.write(reinterpret_cast<const char*>(&count), 4);
    for (const auto& t : tris) {
      float facet[12] = {0, 0, 0};
      for (int c = 0; c < 3; ++c) {
        for (int k = 0; k < 3; ++k) facet[3 + 3 * c + k] = static_cast<float>(v[t[c]][k]);
      }
      const uint16_t attribute = 0;
      stl.write(reinterpret_cast<const char*>(facet), sizeof(facet));
      stl.write(reinterpret_cast<const char*>(&attribute), 2);
    }
    // the same solid as MuJoCo's MSH, its corners shared, with normals and texture
    // coordinates (which only render) between the vertices and the faces
    std::ofstream msh(dir + "/ell.msh", std::ios::binary);
    const int32_t corners = static_cast<int32_t>(v.size());
    const int32_t counts[4] = {corners, corners, corners, static_cast<int32_t>(tris.size())};
    msh.write(reinterpret_cast<const char*>(counts), sizeof(counts));
    for (const auto& corner : v) {
      const float xyz[3] = {float(corner[0]), float(corner[1]), float(corner[2])};
      msh.write(reinterpret_cast<const char*>(xyz), sizeof(xyz));
    }
    const float up[3] = {0, 0, 1}, uv[2] = {0.5, 0.5};
    for (int32_t i = 0; i < corners; ++i) msh.write(reinterpret_cast<const char*>(up), sizeof(up));
    for (int32_t i = 0; i < corners; ++i) msh.write(reinterpret_cast<const char*>(uv), sizeof(uv));
    for (const auto& t : tris) msh.write(reinterpret_cast<const char*>(t.data()), 12);
  }
  std::string path = WriteTemp("meshes.xml", R"(
<mujoco>
  <compiler meshdir="mesh_assets"/>
  <worldbody>
    <body name="cube" pos="0 0 1"><freejoint/>
      <geom type="mesh" mesh="cube" pos="0.1 0.2 0.3" euler="30 20 10" density="500"/>
    </body>
    <body name="ell" pos="3 0 1"><freejoint/>
      <geom type="mesh" mesh="ell" euler="0 90 0"/>
      <geom type="sphere" size="0.2" pos="0 0 2"/>
    </body>
    <body name="tetra" pos="6 0 1"><freejoint/>
      <geom type="mesh" mesh="tetra" mass="2" pos="0 0 0.5"/>
    </body>
    <body name="ell_msh" pos="9 0 1"><freejoint/>
      <geom type="mesh" mesh="ell_msh" euler="10 0 30" density="700"/>
    </body>
  </worldbody>
  <asset>
    <mesh file="cube.obj" scale="0.5 1 2"/>
    <mesh name="ell" file="ell.stl" scale="0.1 0.1 0.1"/>
    <mesh name="ell_msh" file="ell.msh" scale="0.1 0.2 0.1"/>
    <mesh name="tetra" vertex="0 0 0  1 0 0  0 1 0  0 0 1"/>
  </asset>
</mujoco>)");
  absl::StatusOr<ImportResult> r = LoadMjcfFile(path);
  ASSERT_TRUE(r.ok()) << r.status();
  ExpectBodiesMatchMuJoCo(path, r->model, 1e-7);
  EXPECT_NEAR(r->model.bodies[FindBody(r->model, "cube")].mass, 500 * 0.5 * 1 * 2, 1e-9);
  EXPECT_TRUE(HasWarning(*r, "collides as the convex hull of its vertices")) << r->warnings[0];
  // The cube's hull: its 8 corners, in the geom frame.
  int cube_shapes = 0;
  for (const ShapeDesc& shape : r->model.shapes) {
    if (shape.body != FindBody(r->model, "cube")) continue;
    ++cube_shapes;
    EXPECT_EQ(shape.type, ShapeType::kConvexHull);
    EXPECT_EQ(shape.vertices.size(), 8u);
  }
  EXPECT_EQ(cube_shapes, 1);
}

// MuJoCo's sample mug.xml: a visual mesh of 24544 triangles (which carries the mug's mass) and
// boxes that collide. The mug's mass and inertia are MuJoCo's.
TEST(MjcfSampleTest, MugMatchesMuJoCo) {
  const std::string path = "/usr/share/mujoco/model/mug/mug.xml";
  if (!std::ifstream(path)) GTEST_SKIP() << "MuJoCo's sample " << path << " is not installed";
  absl::StatusOr<ImportResult> r = LoadMjcfFile(path);
  ASSERT_TRUE(r.ok()) << r.status();
  MjModelPtr m = LoadMuJoCo(path);
  ASSERT_TRUE(m);
  EXPECT_EQ(r->model.shapes.size(), static_cast<size_t>(m->ngeom));
  ExpectBodiesMatchMuJoCo(path, r->model, 1e-7);
}

// MuJoCo's slider_crank.xml drives its cranks through slider-crank transmissions: each
// actuator gets a tendon of its own, named after it, whose path is the slider site (its frame)
// and the crank site with the rod's length. Misused transmissions are refused by attribute.
TEST(MjcfSampleTest, SliderCranksBecomeTendonsOfTheirActuators) {
  const std::string path = "/usr/share/mujoco/model/slider_crank/slider_crank.xml";
  if (!std::ifstream(path)) GTEST_SKIP() << "MuJoCo's sample " << path << " is not installed";
  absl::StatusOr<ImportResult> r = LoadMjcfFile(path);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_FALSE(HasWarning(*r, "transmission"));
  ASSERT_EQ(r->model.actuators.size(), 3u);
  ASSERT_EQ(r->model.tendons.size(), 3u);
  const Real rods[3] = {0.08, 0.06, 0.05};
  for (int i = 0; i < 3; ++i) {
    const ActuatorDesc& a = r->model.actuators[i];
    EXPECT_EQ(a.type, ActuatorType::kPosition);
    EXPECT_EQ(a.kp, 30);
    ASSERT_EQ(a.tendon, i);
    const TendonDesc& t = r->model.tendons[i];
    EXPECT_EQ(t.name, a.name);
    ASSERT_EQ(t.path.size(), 2u);
    EXPECT_EQ(t.path[0].kind, TendonPathDesc::Kind::kSlider);
    EXPECT_EQ(t.path[1].kind, TendonPathDesc::Kind::kCrank);
    EXPECT_EQ(t.path[1].rod_length, rods[i]);
  }
  // "forward": the slider site fixed in the world, its z axis along (1, 0.5, 0)
  EXPECT_EQ(r->model.tendons[0].path[0].body, kWorldBody);
  const Vec3 axis = rotate(r->model.tendons[0].path[0].pose.quat, Vec3{0, 0, 1});
  EXPECT_NEAR(axis.x, 2 / std::sqrt(5.0), 1e-12);
  EXPECT_NEAR(axis.y, 1 / std::sqrt(5.0), 1e-12);
  // "backward": the slider site on the crank's child
  EXPECT_NE(r->model.tendons[1].path[0].body, kWorldBody);
  ExpectBodiesMatchMuJoCo(path, r->model);
  EXPECT_TRUE(Model::Compile(r->model).ok());

  const auto load = [](const std::string& actuator) {
    return LoadMjcfString(absl::StrCat(R"(<mujoco><worldbody>
      <site name="s" zaxis="1 0 0"/>
      <body><joint/><geom size="0.1"/><site name="c" pos="0.1 0 0"/></body>
    </worldbody><actuator>)",
                                       actuator, "</actuator></mujoco>"),
                          ".");
  };
  EXPECT_TRUE(load(R"(<motor cranksite="c" slidersite="s" cranklength="0.2"/>)").ok());
  const std::pair<const char*, const char*> refused[] = {
      {R"(<motor cranksite="c" cranklength="0.2"/>)", "'slidersite': is required"},
      {R"(<motor cranksite="c" slidersite="s"/>)", "'cranklength'"},
      {R"(<motor cranksite="c" slidersite="s" cranklength="-1"/>)", "must be positive"},
      {R"(<motor cranksite="c" slidersite="nowhere" cranklength="0.2"/>)", "unknown site"},
      {R"(<motor cranksite="c" slidersite="s" cranklength="0.2" joint="j"/>)",
       "an actuator has one transmission"},
  };
  for (const auto& [actuator, problem] : refused) {
    absl::StatusOr<ImportResult> bad = load(actuator);
    ASSERT_FALSE(bad.ok()) << actuator;
    EXPECT_NE(bad.status().message().find(problem), std::string::npos) << bad.status();
  }
}

// <connect> and <weld> become joints closing loops: a ball joint at the connect's anchor (given
// in body1's frame), a fixed joint for a weld, both holding the file's configuration, and
// neither filtering contacts (MuJoCo does not). Other equality kinds and inactive ones are
// skipped with a warning.
TEST(MjcfEqualityTest, ConnectAndWeldBecomeLoopJoints) {
  absl::StatusOr<ImportResult> r = LoadMjcfFile(kModels + "/four_bar.xml");
  ASSERT_TRUE(r.ok()) << r.status();
  const ModelDesc& model = r->model;
  ASSERT_EQ(model.joints.size(), 4u);
  const JointDesc& pivot = model.joints.back();
  EXPECT_EQ(pivot.name, "pivot");
  EXPECT_EQ(pivot.type, JointType::kBall);
  EXPECT_EQ(pivot.parent, kWorldBody);
  EXPECT_EQ(pivot.child, FindBody(model, "rocker"));
  EXPECT_TRUE(pivot.collide_connected);
  for (int k = 0; k < 3; ++k) EXPECT_NEAR(pivot.child_frame.pos[k], (Vec3{0.2, 0, 0.5})[k], 1e-12);
  MjModelPtr m = LoadMuJoCo(kModels + "/four_bar.xml");
  ASSERT_TRUE(m);
  EXPECT_EQ(m->neq, 1);
  ExpectBodiesMatchMuJoCo(kModels + "/four_bar.xml", model);

  absl::StatusOr<ImportResult> welded = LoadMjcfString(R"(<mujoco><worldbody>
    <body name="a" pos="0 0 1"><freejoint/><geom size="0.1"/></body>
    <body name="b" pos="0.5 0 1" euler="0 0 90"><freejoint/><geom size="0.1"/></body>
  </worldbody><equality>
    <weld body1="a" body2="b"/>
    <weld body1="a" active="false"/>
    <distance geom1="x" geom2="y"/>
  </equality></mujoco>)",
                                                       "");
  ASSERT_TRUE(welded.ok()) << welded.status();
  ASSERT_EQ(welded->model.joints.size(), 1u);
  const JointDesc& weld = welded->model.joints[0];
  EXPECT_EQ(weld.type, JointType::kFixed);
  EXPECT_EQ(weld.parent, FindBody(welded->model, "a"));
  EXPECT_EQ(weld.child, FindBody(welded->model, "b"));
  // the joint frame is body a's, seen from b: 0.5 m along b's -y (b is turned 90 degrees)
  EXPECT_NEAR(weld.child_frame.pos.y, 0.5, 1e-12);
  EXPECT_TRUE(HasWarning(*welded, "inactive"));
  EXPECT_TRUE(HasWarning(*welded, "element <distance> in <equality> is not supported"));

  absl::StatusOr<ImportResult> unknown = LoadMjcfString(
      R"(<mujoco><worldbody/><equality><connect body1="nope" anchor="0 0 0"/></equality></mujoco>)",
      "");
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.status().message().find("unknown body 'nope'"), std::string::npos)
      << unknown.status();
}

// Principal moments that break the triangle inequality: an error, as in MuJoCo, unless
// <compiler balanceinertia="true">, which sets them to their mean exactly as MuJoCo does.
TEST(MjcfMassTest, BalanceInertiaMatchesMuJoCo) {
  const std::string body = R"(<worldbody><body name="b"><freejoint/>
      <inertial pos="0 0 0" mass="1.7" diaginertia="0.0031 0.0236 0.0269"/></body></worldbody>)";
  absl::StatusOr<ImportResult> refused =
      LoadMjcfString(absl::StrCat("<mujoco>", body, "</mujoco>"), "");
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("triangle inequality"), std::string::npos)
      << refused.status();
  std::string path =
      WriteTemp("balanced.xml",
                absl::StrCat("<mujoco><compiler balanceinertia=\"true\"/>", body, "</mujoco>"));
  absl::StatusOr<ImportResult> balanced = LoadMjcfFile(path);
  ASSERT_TRUE(balanced.ok()) << balanced.status();
  ExpectBodiesMatchMuJoCo(path, balanced->model);
  EXPECT_TRUE(HasWarning(*balanced, "each moment set to their mean"));
}

// <compiler boundmass boundinertia>: each body's mass and each principal moment below the
// bounds raised to them, the principal axes kept (a tilted box's smallest moment raised alone),
// before the triangle-inequality check (which the raised moments then pass), for inertias from
// geoms and from <inertial> alike, as libmujoco computes them; MjcfOptions sets the same bounds
// for a file without them.
TEST(MjcfMassTest, BoundMassAndInertiaMatchMuJoCo) {
  const std::string bodies = R"(<worldbody>
    <body name="light" pos="0 0 1"><joint type="hinge"/>
      <geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.01" density="1"/></body>
    <body name="tilted" pos="0 0 3"><joint type="hinge"/>
      <geom type="box" size="1 0.05 0.05" mass="0.02" quat="0.9238795 0.2 0.3826834 0.1"/></body>
    <body name="heavy" pos="0 0 4"><joint type="hinge"/><geom type="sphere" size="0.1"/></body>
    <body name="explicit" pos="0 0 5"><joint type="hinge"/>
      <inertial pos="0.1 0 0" mass="0.001" diaginertia="0.0001 0.0001 0.001"/></body>
  </worldbody>)";
  const std::string path = WriteTemp(
      "bounded.xml", absl::StrCat(R"(<mujoco><compiler boundmass="0.01" boundinertia="0.0005"/>)",
                                  bodies, "</mujoco>"));
  absl::StatusOr<ImportResult> bounded = LoadMjcfFile(path);
  ASSERT_TRUE(bounded.ok()) << bounded.status();
  ExpectBodiesMatchMuJoCo(path, bounded->model);
  const ModelDesc& m = bounded->model;
  EXPECT_EQ(m.bodies[FindBody(m, "light")].mass, 0.01);
  EXPECT_NEAR(m.bodies[FindBody(m, "heavy")].mass, 4.18879, 1e-5);  // above the bound: its own
  const std::array<double, 3> tilted =
      SymmetricEigenvalues(m.bodies[FindBody(m, "tilted")].inertia);
  EXPECT_NEAR(tilted[0], 0.0005, 1e-15);
  EXPECT_NEAR(tilted[2], 0.02 * (1 + 0.0025) / 3, 1e-12);  // m (a^2 + c^2) / 3, kept
  // the raised moment stays about the box's long axis
  const Quat q = quat_normalized(Quat{0.9238795, 0.2, 0.3826834, 0.1});
  const Vec3 axis = rotate(q, Vec3{1, 0, 0});
  const Vec3 turned = m.bodies[FindBody(m, "tilted")].inertia * axis;
  for (int k = 0; k < 3; ++k) EXPECT_NEAR(turned[k], 0.0005 * axis[k], 1e-15) << k;
  // without the bounds the explicit inertia breaks the triangle inequality
  absl::StatusOr<ImportResult> unbounded =
      LoadMjcfString(absl::StrCat("<mujoco>", bodies, "</mujoco>"), "");
  ASSERT_FALSE(unbounded.ok());
  EXPECT_NE(unbounded.status().message().find("triangle inequality"), std::string::npos);
  // the options' bounds, for a file without them
  MjcfOptions options;
  options.bound_mass = 0.01;
  options.bound_inertia = 0.0005;
  absl::StatusOr<ImportResult> from_options =
      LoadMjcfString(absl::StrCat("<mujoco>", bodies, "</mujoco>"), "", options);
  ASSERT_TRUE(from_options.ok()) << from_options.status();
  for (size_t b = 0; b < m.bodies.size(); ++b) {
    EXPECT_EQ(from_options->model.bodies[b].mass, m.bodies[b].mass);
    for (int k = 0; k < 9; ++k) {
      EXPECT_EQ(from_options->model.bodies[b].inertia.m[k], m.bodies[b].inertia.m[k]);
    }
  }
  // a body far lighter than the heaviest is named, with the bound that helps
  const std::string arm = R"(<worldbody><body name="base" pos="0 0 1"><freejoint/>
      <geom type="sphere" size="0.1"/><body name="finger"><joint type="hinge" armature="0.75"/>
      <geom type="capsule" fromto="0 0 0 0.1 0 0" size="0.005" density="1e-4"/></body></body>
      </worldbody>)";
  absl::StatusOr<ImportResult> light =
      LoadMjcfString(absl::StrCat("<mujoco>", arm, "</mujoco>"), "");
  ASSERT_TRUE(light.ok()) << light.status();
  EXPECT_TRUE(HasWarning(*light, "body 'finger' weighs "));
  EXPECT_TRUE(HasWarning(*light, "<compiler boundmass boundinertia>"));
  absl::StatusOr<ImportResult> raised =
      LoadMjcfString(absl::StrCat(R"(<mujoco><compiler boundmass="1e-3"/>)", arm, "</mujoco>"), "");
  ASSERT_TRUE(raised.ok()) << raised.status();
  EXPECT_FALSE(HasWarning(*raised, "weighs"));
  absl::StatusOr<ImportResult> negative =
      LoadMjcfString(R"(<mujoco><compiler boundmass="-1"/><worldbody/></mujoco>)", "");
  ASSERT_FALSE(negative.ok());
  EXPECT_NE(negative.status().message().find("boundmass"), std::string::npos);
}

// <compiler settotalmass>: every body's mass and inertia scaled, last (after boundmass), so
// that the file's total, static bodies included as MuJoCo counts them, is the value.
TEST(MjcfMassTest, SetTotalMassMatchesMuJoCo) {
  const std::string bodies = R"(<worldbody>
    <body name="static" pos="0 0 -1"><geom type="box" size="0.1 0.1 0.1" mass="4"/></body>
    <body name="a" pos="0 0 1"><joint type="hinge"/><geom type="sphere" size="0.1" mass="1"/></body>
    <body name="b" pos="0 0 2"><freejoint/><geom type="box" size="0.1 0.2 0.3" mass="3"/>
      <body name="c" pos="0 0 0.5"><geom type="sphere" size="0.05" mass="0.1"/></body></body>
  </worldbody>)";
  const std::string path = WriteTemp(
      "total_mass.xml", absl::StrCat(R"(<mujoco><compiler settotalmass="16" boundmass="0.5"/>)",
                                     bodies, "</mujoco>"));
  absl::StatusOr<ImportResult> scaled = LoadMjcfFile(path);
  ASSERT_TRUE(scaled.ok()) << scaled.status();
  ExpectBodiesMatchMuJoCo(path, scaled->model);
  // 16 / (4 + 1 + 3 + 0.5): c bounded to 0.5 kg first, the static box counted
  EXPECT_NEAR(scaled->model.bodies[FindBody(scaled->model, "a")].mass, 16 / 8.5, 1e-12);
  absl::StatusOr<ImportResult> massless = LoadMjcfString(
      R"(<mujoco><compiler settotalmass="1"/><worldbody><body><joint/></body></worldbody>
         </mujoco>)",
      "");
  ASSERT_FALSE(massless.ok());
  EXPECT_NE(massless.status().message().find("settotalmass"), std::string::npos);
}

// Some exporters write "faces" of one or two corners; they enclose nothing and are skipped.
TEST(MjcfMeshTest, ObjFacesOfTwoCornersAreSkipped) {
  const std::string dir = ::testing::TempDir();
  std::ofstream(dir + "/two_corner_faces.obj") << "v 0 0 0\nv 1 0 0\nv 0 1 0\nv 0 0 1\n"
                                                  "f 1 3 2\nf 1 2 4\nf 2 3 4\nf 1 4 3\nf 1 2\n";
  absl::StatusOr<ImportResult> r = LoadMjcfString(R"(<mujoco>
    <asset><mesh file="two_corner_faces.obj"/></asset>
    <worldbody><body name="t"><freejoint/><geom type="mesh" mesh="two_corner_faces"/></body>
    </worldbody></mujoco>)",
                                                  dir);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_GT(r->model.bodies[0].mass, 0);
}

// <contact><exclude> keeps two bodies' geoms apart, whatever their contype and conaffinity:
// the pairs that collide are MuJoCo's. An explicit <pair> of two geoms the filter pairs anyway
// adds no second pair.
TEST(MjcfCollisionTest, ExcludedBodyPairsMatchMuJoCo) {
  std::string path = WriteTemp("exclude.xml", R"(
<mujoco>
  <worldbody>
    <geom name="floor" type="plane" size="5 5 0.1"/>
    <body name="a" pos="0 0 1"><freejoint/><geom name="ga" size="0.1"/></body>
    <body name="b" pos="0.1 0 1"><freejoint/><geom name="gb" size="0.1"/></body>
    <body name="c" pos="0.2 0 1"><freejoint/><geom name="gc" size="0.1"/></body>
  </worldbody>
  <contact>
    <exclude body1="a" body2="b"/>
    <exclude body1="world" body2="c"/>
    <pair geom1="ga" geom2="gc"/>
  </contact>
</mujoco>)");
  absl::StatusOr<ImportResult> r = LoadMjcfFile(path);
  ASSERT_TRUE(r.ok()) << r.status();
  ExpectCollisionPairsMatchMuJoCo(path, r->model);
  EXPECT_EQ(r->model.contact_pairs.size(), 1u);
  absl::StatusOr<ImportResult> unknown = LoadMjcfString(
      R"(<mujoco><worldbody/><contact><exclude body1="a" body2="world"/></contact></mujoco>)", "");
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.status().message().find("unknown body 'a'"), std::string::npos);
}

// Mesh errors name the geom or asset and what is wrong.
TEST(MjcfMeshTest, BadMeshesAreErrors) {
  auto load = [](const std::string& body, const std::string& asset) {
    return LoadMjcfString(
        absl::StrCat("<mujoco><asset>", asset, "</asset><worldbody><body><freejoint/>", body,
                     "</body></worldbody></mujoco>"),
        "/nonexistent");
  };
  auto expect_error = [](const absl::StatusOr<ImportResult>& r, const std::string& needle) {
    ASSERT_FALSE(r.ok()) << needle;
    EXPECT_NE(r.status().message().find(needle), std::string::npos) << r.status();
  };
  expect_error(load(R"(<geom type="mesh"/>)", ""), "a mesh geom needs it");
  expect_error(load(R"(<geom type="mesh" mesh="m"/>)", ""), "no <mesh> asset is named 'm'");
  expect_error(load(R"(<geom type="mesh" mesh="m"/>)", R"(<mesh name="m" file="m.obj"/>)"),
               "m.obj");
  expect_error(load(R"(<geom type="mesh" mesh="m"/>)",
                    R"(<mesh name="m" vertex="0 0 0 1 0 0 0 1 0 1 1 0"/>)"),
               "mesh");  // flat: no hull
  expect_error(load(R"(<geom type="mesh" mesh="m"/>)",
                    R"(<mesh name="m" vertex="0 0 0 1 0 0 0 1 0 0 0 1" face="0 1 7"/>)"),
               "7 is not a vertex index (4 vertices)");
  expect_error(load("", R"(<mesh name="m" vertex="0 0 0 1 0 0 0 1 0 0 0 1"/>
                           <mesh name="m" vertex="0 0 0 1 0 0 0 1 0 0 0 1"/>)"),
               "mesh 'm' is defined twice");
  expect_error(load("", R"(<mesh name="m" file="m.ply"/>)"),
               "unsupported format (STL, OBJ, COLLADA (.dae) and MuJoCo's MSH are supported)");
  // MSH files whose counts and contents disagree
  const std::string dir = ::testing::TempDir();
  auto write_msh = [&](const std::string& name, std::vector<int32_t> counts, int32_t corner) {
    std::ofstream out(dir + name, std::ios::binary);
    out.write(reinterpret_cast<const char*>(counts.data()), 4 * counts.size());
    for (int i = 0; i < 3 * counts[0]; ++i) {
      const float x = float(i % 3 == i / 3 % 3);
      out.write(reinterpret_cast<const char*>(&x), 4);
    }
    for (int i = 0; i < 3 * counts[3]; ++i) {
      const int32_t c = i == 2 ? corner : i % 3;
      out.write(reinterpret_cast<const char*>(&c), 4);
    }
  };
  write_msh("short.msh", {4, 4, 0, 1}, 2);    // promises normals it lacks
  write_msh("normals.msh", {4, 1, 0, 1}, 2);  // one normal for four vertices
  write_msh("corner.msh", {4, 0, 0, 2}, 9);   // a face naming vertex 9 of 4
  write_msh("empty.msh", {0, 0, 0, 0}, 0);
  auto load_file = [&](const std::string& file) {
    return LoadMjcfString(
        absl::StrCat(R"(<mujoco><asset><mesh name="m" file=")", file,
                     R"("/></asset><worldbody><body><freejoint/><geom type="mesh" mesh="m"/>)"
                     "</body></worldbody></mujoco>"),
        dir);
  };
  expect_error(load_file("short.msh"),
               "MSH size 76 bytes does not match its counts (4 vertices, 4 normals");
  expect_error(load_file("normals.msh"), "must each be 0 or one per vertex (4)");
  expect_error(load_file("corner.msh"), "face 0 names vertex 9 (4 vertices)");
  expect_error(load_file("empty.msh"), "not an MSH file");
}

// Height fields that cannot be read are errors naming the element, the attribute and the
// problem; a grid with no data is MuJoCo's zeros, and one hfield serves two geoms.
TEST(MjcfHeightFieldTest, BadHeightFieldsAreErrors) {
  const std::string dir = ::testing::TempDir();
  {
    // a binary file whose header promises more than it holds
    std::ofstream out(dir + "short.bin", std::ios::binary);
    const int32_t header[2] = {3, 3};
    const float values[4] = {0, 1, 2, 3};
    out.write(reinterpret_cast<const char*>(header), sizeof(header));
    out.write(reinterpret_cast<const char*>(values), sizeof(values));
  }
  std::ofstream(dir + "not.png") << "plain text";
  auto load = [&](const std::string& asset, const std::string& geoms) {
    return LoadMjcfString(absl::StrCat("<mujoco><asset>", asset, "</asset><worldbody>", geoms,
                                       "</worldbody></mujoco>"),
                          dir);
  };
  auto expect_error = [](const absl::StatusOr<ImportResult>& r,
                         const std::vector<std::string>& needles) {
    ASSERT_FALSE(r.ok()) << needles.front();
    for (const std::string& needle : needles)
      EXPECT_NE(r.status().message().find(needle), std::string::npos) << r.status();
  };
  const std::string geom = R"(<geom name="g" type="hfield" hfield="h"/>)";
  expect_error(load(R"(<hfield name="h" nrow="3" ncol="3"/>)", geom),
               {"hfield 'h'", "'size'", "required"});
  expect_error(load(R"(<hfield name="h" nrow="3" ncol="3" size="1 1 1 0"/>)", geom),
               {"hfield 'h'", "'size'", "base depth"});
  expect_error(load(R"(<hfield name="h" nrow="1" ncol="3" size="1 1 1 1"/>)", geom),
               {"hfield 'h'", "nrow and ncol of at least 2"});
  expect_error(
      load(R"(<hfield name="h" nrow="2" ncol="2" size="1 1 1 1" elevation="1 2 3"/>)", geom),
      {"hfield 'h'", "'elevation'", "expected 4 numbers, got 3"});
  expect_error(load(R"(<hfield name="h" file="short.bin" size="1 1 1 1"/>)", geom),
               {"hfield 'h'", "'file'", "short.bin", "header gives 3 x 3 points", "has 24"});
  expect_error(load(R"(<hfield name="h" file="not.png" size="1 1 1 1"/>)", geom),
               {"hfield 'h'", "'file'", "not.png", "not a readable PNG image"});
  expect_error(load(R"(<hfield name="h" file="missing.bin" size="1 1 1 1"/>)", geom),
               {"hfield 'h'", "missing.bin"});
  expect_error(load(R"(<hfield nrow="2" ncol="2" size="1 1 1 1"/>)", geom), {"needs a name"});
  expect_error(load(R"(<hfield name="h" nrow="2" ncol="2" size="1 1 1 1"/>
                       <hfield name="h" nrow="2" ncol="2" size="1 1 1 1"/>)",
                    geom),
               {"hfield 'h' is defined twice"});
  expect_error(load(R"(<hfield name="h" nrow="2" ncol="2" size="1 1 1 1"/>)",
                    R"(<body><freejoint/><geom name="g" type="hfield" hfield="h"/></body>)"),
               {"geom 'g'", "only allowed in <worldbody>"});
  absl::StatusOr<ImportResult> two =
      load(R"(<hfield name="h" nrow="2" ncol="3" size="1 2 0.5 0.25" elevation="4 4 4 4 4 4"/>)",
           absl::StrCat(geom, R"(<geom type="hfield" hfield="h" pos="3 0 0"/>)"));
  ASSERT_TRUE(two.ok()) << two.status();
  ASSERT_EQ(two->model.shapes.size(), 2u);
  for (const ShapeDesc& s : two->model.shapes) {
    EXPECT_EQ(s.type, ShapeType::kHeightField);
    EXPECT_EQ(s.heightfield.rows, 2);
    EXPECT_EQ(s.heightfield.cols, 3);
    // every value the same: normalised to zeros, as MuJoCo's
    EXPECT_EQ(s.heightfield.heights, std::vector<Real>(6, 0));
    EXPECT_EQ(s.size.z, 0.25);
  }
}

TEST(MjcfActuatorTest, PositionAndVelocityServos) {
  std::string xml = R"(
<mujoco><compiler autolimits="true"/><worldbody><body name="b"><joint name="j" axis="0 1 0" damping="0.5"/>
  <geom size="0.1"/></body></worldbody>
  <actuator>
    <position name="servo" joint="j" kp="30" kv="2" ctrlrange="-1 1" forcerange="-5 6"/>
    <velocity name="speed" joint="j" kv="4"/>
    <motor name="torque" joint="j" gear="7" ctrlrange="-2 3"/>
    <general name="gen" joint="j"/>
  </actuator></mujoco>)";
  absl::StatusOr<ImportResult> r = LoadMjcfString(xml, "");
  ASSERT_TRUE(r.ok()) << r.status();
  const auto& a = r->model.actuators;
  ASSERT_EQ(a.size(), 4u);
  EXPECT_EQ(a[0].type, ActuatorType::kPosition);
  EXPECT_EQ(a[0].kp, 30);
  EXPECT_EQ(a[0].kv, 2);  // the joint's damping stays the joint's, as in MuJoCo
  EXPECT_EQ(r->model.joints[0].drive.damping, 0.5);
  EXPECT_TRUE(a[0].ctrl_limited);  // autolimits: a ctrlrange implies ctrllimited
  EXPECT_TRUE(a[0].force_limited);
  EXPECT_EQ(a[0].force_min, -5);
  EXPECT_EQ(a[0].force_max, 6);
  EXPECT_EQ(a[1].type, ActuatorType::kVelocity);
  EXPECT_EQ(a[1].kv, 4);
  EXPECT_FALSE(a[1].ctrl_limited);
  EXPECT_EQ(a[2].type, ActuatorType::kEffort);
  EXPECT_EQ(a[2].gear, 7);
  EXPECT_EQ(a[2].ctrl_min, -2);
  EXPECT_EQ(a[2].ctrl_max, 3);
  EXPECT_FALSE(a[1].force_limited);
  EXPECT_EQ(a[3].type, ActuatorType::kEffort);  // <general> without gain or bias: a motor
  EXPECT_EQ(a[3].gear, 1);
  EXPECT_TRUE(r->warnings.empty()) << r->warnings.front();

  // forcerange follows ctrlrange's rules: a range without its flag limits (MuJoCo 3's default
  // autolimits), and is refused under autolimits="false" (MuJoCo 2.2's default)
  const char* unflagged_xml = R"(<worldbody><body><joint name="j" range="-1 1"/><geom size="0.1"/>
  </body></worldbody><actuator><motor joint="j" forcerange="-1 1" ctrlrange="-2 2"/></actuator>
  </mujoco>)";
  absl::StatusOr<ImportResult> inferred =
      LoadMjcfString(absl::StrCat("<mujoco>", unflagged_xml), "");
  ASSERT_TRUE(inferred.ok()) << inferred.status();
  EXPECT_TRUE(inferred->model.actuators[0].force_limited);
  EXPECT_TRUE(inferred->model.actuators[0].ctrl_limited);
  EXPECT_TRUE(inferred->model.joints[0].limited);
  absl::StatusOr<ImportResult> unflagged =
      LoadMjcfString(absl::StrCat(R"(<mujoco><compiler autolimits="false"/>)", unflagged_xml), "");
  ASSERT_FALSE(unflagged.ok());
  EXPECT_NE(unflagged.status().message().find("'limited'"), std::string::npos)
      << unflagged.status();
  absl::StatusOr<ImportResult> unflagged_force = LoadMjcfString(R"(
<mujoco><compiler autolimits="false"/><worldbody><body><joint name="j"/><geom size="0.1"/>
  </body></worldbody><actuator><motor joint="j" forcerange="-1 1"/></actuator></mujoco>)",
                                                                "");
  ASSERT_FALSE(unflagged_force.ok());
  EXPECT_NE(unflagged_force.status().message().find("'forcelimited'"), std::string::npos)
      << unflagged_force.status();
  absl::StatusOr<ImportResult> reversed = LoadMjcfString(R"(
<mujoco><worldbody><body><joint name="j"/><geom size="0.1"/></body></worldbody>
  <actuator><motor joint="j" forcelimited="true" forcerange="1 -1"/></actuator></mujoco>)",
                                                         "");
  ASSERT_FALSE(reversed.ok());
  EXPECT_NE(reversed.status().message().find("forcerange"), std::string::npos) << reversed.status();
}

// Fixed and spatial tendons load with their joints or paths, defaults and actuators (their
// dynamics against MuJoCo's: import_dynamics_test, TendonTest and SpatialTendonTest); a fixed
// tendon over any number of coordinates, one named twice taking the sum of its coefficients.
// A tendon without limits,
// spring, friction or actuator (OpenAI Gym's humanoid's hip-knee tendons) loads and adds no row.
// Bad references are errors naming the element and attribute.
TEST(MjcfTendonTest, FixedTendonsLoadAndTheRestIsNamed) {
  const std::string body = R"(
<mujoco><compiler autolimits="true"/>
  <default><tendon stiffness="3"/></default>
  <worldbody>
    <body name="a"><joint name="h1" axis="0 1 0"/><geom name="g" size="0.1"/><site name="s1"/>
      <body name="b" pos="0 0 -0.3"><joint name="h2" axis="0 1 0"/><geom size="0.1"/>
        <geom name="bx" type="box" size="0.05 0.05 0.05"/><site name="s2"/>
        <body name="c" pos="0 0 -0.3"><joint name="ball" type="ball"/><geom size="0.1"/></body>
      </body>
    </body>
  </worldbody>)";
  auto load = [&](const std::string& tendons, const std::string& actuators) {
    return LoadMjcfString(absl::StrCat(body, "<tendon>", tendons, "</tendon><actuator>", actuators,
                                       "</actuator></mujoco>"),
                          "");
  };
  absl::StatusOr<ImportResult> r = load(R"(
    <fixed name="knee" range="-0.5 0.5" damping="0.2" frictionloss="0.1">
      <joint joint="h1" coef="1"/><joint joint="h2" coef="-2"/></fixed>
    <fixed name="twice"><joint joint="h1" coef="1"/><joint joint="h1" coef="0.5"/></fixed>
    <spatial name="cable"><site site="s1"/><site site="s2"/></spatial>
    <fixed name="three" stiffness="0">
      <joint joint="h1" coef="1"/><joint joint="h2" coef="1"/><joint joint="h1" coef="1"/></fixed>)",
                                        R"(
    <motor name="pull" tendon="knee" gear="3"/>
    <motor name="cable_motor" tendon="cable"/>
    <position name="three_servo" tendon="three" kp="5"/>)");
  ASSERT_TRUE(r.ok()) << r.status();
  const ModelDesc& d = r->model;
  ASSERT_EQ(d.tendons.size(), 4u);
  const TendonDesc& knee = d.tendons[0];
  EXPECT_EQ(knee.name, "knee");
  ASSERT_EQ(knee.joints.size(), 2u);
  EXPECT_EQ(knee.joints[1].coef, -2);
  EXPECT_TRUE(knee.limited);
  EXPECT_EQ(knee.lower, -0.5);
  EXPECT_EQ(knee.upper, 0.5);
  EXPECT_EQ(knee.stiffness, 3);  // the default class's
  EXPECT_EQ(knee.damping, 0.2);
  EXPECT_EQ(knee.friction_loss, 0.1);
  EXPECT_EQ(*knee.spring_length, 0);          // at the joints' springref
  ASSERT_EQ(d.tendons[1].joints.size(), 1u);  // one coordinate named twice: the coefs add
  EXPECT_EQ(d.tendons[1].joints[0].coef, 1.5);
  const TendonDesc& cable = d.tendons[2];  // site s1 on body a to site s2 on body b
  EXPECT_EQ(cable.name, "cable");
  EXPECT_TRUE(cable.joints.empty());
  ASSERT_EQ(cable.path.size(), 2u);
  EXPECT_EQ(cable.path[0].kind, TendonPathDesc::Kind::kSite);
  EXPECT_EQ(cable.path[0].body, 0);
  EXPECT_EQ(cable.path[1].body, 1);
  EXPECT_EQ(cable.stiffness, 3);
  EXPECT_FALSE(cable.spring_length.has_value());  // the path's length at the initial poses
  const TendonDesc& three = d.tendons[3];         // h1, h2, h1 again: h1 twice as much
  ASSERT_EQ(three.joints.size(), 2u);
  EXPECT_EQ(three.joints[0].coef, 2);
  EXPECT_EQ(three.joints[1].coef, 1);
  EXPECT_EQ(three.stiffness, 0);
  ASSERT_EQ(d.actuators.size(), 3u);
  EXPECT_EQ(d.actuators[0].tendon, 0);
  EXPECT_EQ(d.actuators[0].gear, 3);
  EXPECT_EQ(d.actuators[1].tendon, 2);
  EXPECT_EQ(d.actuators[2].tendon, 3);
  EXPECT_EQ(d.actuators[2].type, ActuatorType::kPosition);
  EXPECT_FALSE(HasWarning(*r, "<spatial>"));
  EXPECT_FALSE(HasWarning(*r, "three"));
  ASSERT_TRUE(Model::Compile(d).ok());

  // an inert tendon: no warning, no row
  absl::StatusOr<ImportResult> inert =
      load(R"(<fixed name="hipknee" stiffness="0"><joint joint="h1" coef="-1"/>
              <joint joint="h2" coef="1"/></fixed>)",
           "");
  ASSERT_TRUE(inert.ok()) << inert.status();
  EXPECT_TRUE(inert->warnings.empty()) << inert->warnings.front();
  absl::StatusOr<ImportResult> none = load("", "");
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(Model::Compile(inert->model).value()->joint_row_count(),
            Model::Compile(none->model).value()->joint_row_count());

  auto fails = [&](const std::string& tendons, const std::string& actuators,
                   const std::string& text) {
    absl::StatusOr<ImportResult> bad = load(tendons, actuators);
    ASSERT_FALSE(bad.ok()) << tendons << actuators;
    EXPECT_NE(bad.status().message().find(text), std::string::npos) << bad.status();
  };
  fails("", R"(<motor tendon="nope"/>)", "unknown tendon 'nope'");
  fails(R"(<fixed name="t"><joint joint="ball" coef="1"/></fixed>)", "", "free or ball joint");
  fails(R"(<fixed name="t"><joint joint="h9" coef="1"/></fixed>)", "", "unknown joint 'h9'");
  fails(R"(<fixed name="t"><joint joint="h1"/></fixed>)", "", "'coef' is required");
  fails(R"(<fixed name="t"/>)", "", "at least one <joint>");
  fails(R"(<fixed name="t"><site site="s1"/></fixed>)", "", "only <joint> elements");
  // spatial paths: MuJoCo's sequence rules and references, with the element's line
  fails(R"(<spatial name="t"><site site="s1"/><site site="s9"/></spatial>)", "",
        "unknown site 's9'");
  fails(R"(<spatial name="t"><site site="s1"/></spatial>)", "", "at least two sites");
  fails(R"(<spatial name="t"><site site="s1"/><geom geom="g"/></spatial>)", "",
        "starts and ends at a <site>");
  fails(R"(<spatial name="t"><site site="s1"/><pulley divisor="2"/><geom geom="g"/>
           <site site="s2"/></spatial>)",
        "", "must stand between two <site> elements");
  fails(R"(<spatial name="t"><site site="s1"/><pulley/><site site="s2"/></spatial>)", "",
        "'divisor' is required");
  fails(R"(<spatial name="t"><site site="s1"/><joint joint="h1"/><site site="s2"/></spatial>)", "",
        "only <site>, <geom> and <pulley>");
  fails(R"(<spatial name="t"><site site="s1"/><geom geom="nope"/><site site="s2"/></spatial>)", "",
        "unknown geom 'nope'");
  fails(R"(<spatial name="t"><site site="s1"/><geom geom="g" sidesite="x"/><site site="s2"/>
           </spatial>)",
        "", "unknown site 'x'");
  fails(R"(<spatial name="t"><site site="s1"/><geom geom="bx"/><site site="s2"/></spatial>)", "",
        "wraps only around spheres and cylinders");

  // spatial tendons Axion does not make are skipped with a warning naming them, and so are
  // actuators on them: a site on a mocap body, a path over more than four bodies
  absl::StatusOr<ImportResult> skipped = LoadMjcfString(R"(
<mujoco><worldbody>
    <body name="target" mocap="true"><site name="on_target"/></body>
    <body name="b1"><joint axis="0 1 0"/><geom size="0.1"/><site name="p1"/>
      <body name="b2" pos="0 0 -0.3"><joint axis="0 1 0"/><geom size="0.1"/><site name="p2"/>
        <body name="b3" pos="0 0 -0.3"><joint axis="0 1 0"/><geom size="0.1"/><site name="p3"/>
          <body name="b4" pos="0 0 -0.3"><joint axis="0 1 0"/><geom size="0.1"/><site name="p4"/>
            <body name="b5" pos="0 0 -0.3"><joint axis="0 1 0"/><geom size="0.1"/>
              <site name="p5"/></body></body></body></body></body>
  </worldbody>
  <tendon>
    <spatial name="leash"><site site="on_target"/><site site="p1"/></spatial>
    <spatial name="long"><site site="p1"/><site site="p2"/><site site="p3"/><site site="p4"/>
      <site site="p5"/></spatial>
    <spatial name="four"><site site="p1"/><site site="p2"/><site site="p3"/><site site="p4"/>
    </spatial>
  </tendon>
  <actuator><motor tendon="leash"/><motor tendon="four"/></actuator></mujoco>)",
                                                        "");
  ASSERT_TRUE(skipped.ok()) << skipped.status();
  ASSERT_EQ(skipped->model.tendons.size(), 1u);
  EXPECT_EQ(skipped->model.tendons[0].name, "four");
  ASSERT_EQ(skipped->model.actuators.size(), 1u);
  EXPECT_EQ(skipped->model.actuators[0].tendon, 0);
  EXPECT_TRUE(HasWarning(*skipped, "spatial 'leash': its site 'on_target' is on a mocap body"));
  EXPECT_TRUE(HasWarning(*skipped, "spatial 'long': its path moves with 5 bodies"));
  EXPECT_TRUE(HasWarning(*skipped, "drives tendon 'leash', which is not supported"));
  ASSERT_TRUE(Model::Compile(skipped->model).ok());
  fails(R"(<fixed name="t" stiffness="-1"><joint joint="h1" coef="1"/></fixed>)", "", "stiffness");
  fails(R"(<fixed name="t"><joint joint="h1" coef="1"/></fixed>)",
        R"(<motor joint="h1" tendon="t"/>)", "one transmission");
}

// <general> actuators become the motor or servo their gain and bias make (a servo whose gain is
// not its stiffness scales its target), checked against MuJoCo's own shortcuts: the same
// actuator written both ways moves MuJoCo's joint identically.
// A filter or integrator makes it act on its activation (ActuatorDesc::dynamics); user
// dynamics and constant biases are skipped with a warning naming them.
TEST(MjcfActuatorTest, GeneralActuatorsAreMotorsOrServos) {
  const std::string xml = R"(
<mujoco><compiler autolimits="true"/><worldbody><body name="b"><joint name="j" axis="0 1 0"/>
  <geom size="0.1"/></body></worldbody>
  <actuator>
    <general name="motor" joint="j" gear="2" gainprm="3"/>
    <general name="servo" joint="j" gainprm="50" biasprm="0 -50 -5" biastype="affine"
             forcerange="-4 4"/>
    <general name="speed" joint="j" gainprm="7" biasprm="0 0 -7" biastype="affine"/>
    <general name="filtered" joint="j" dyntype="filter" dynprm="0.1"/>
    <general name="user" joint="j" dyntype="user"/>
    <general name="offset" joint="j" gainprm="50" biasprm="1 -50 0" biastype="affine"/>
    <general name="scaled" joint="j" gainprm="0.5" biasprm="0 -100 -10" biastype="affine"/>
    <general name="scaled_speed" joint="j" gainprm="2" biasprm="0 0 -8" biastype="affine"/>
  </actuator></mujoco>)";
  absl::StatusOr<ImportResult> r = LoadMjcfString(xml, "");
  ASSERT_TRUE(r.ok()) << r.status();
  const auto& a = r->model.actuators;
  ASSERT_EQ(a.size(), 6u);
  EXPECT_EQ(a[0].type, ActuatorType::kEffort);
  EXPECT_EQ(a[0].gear, 6);
  EXPECT_EQ(a[1].type, ActuatorType::kPosition);
  EXPECT_EQ(a[1].kp, 50);
  EXPECT_EQ(a[1].kv, 5);
  EXPECT_TRUE(a[1].force_limited);
  EXPECT_EQ(a[1].force_max, 4);
  EXPECT_EQ(a[2].type, ActuatorType::kVelocity);
  EXPECT_EQ(a[2].kv, 7);
  EXPECT_EQ(a[2].target_scale, 1);
  // a motor on its activation, a first-order lag of 0.1 s behind its control
  EXPECT_EQ(a[3].type, ActuatorType::kEffort);
  EXPECT_EQ(a[3].dynamics, ActuatorDynamics::kFilter);
  EXPECT_EQ(a[3].dynamics_time_constant, 0.1);
  // a gain other than the stiffness: force 0.5 ctrl - 100 q - 10 qdot, a servo to 0.005 ctrl
  EXPECT_EQ(a[4].type, ActuatorType::kPosition);
  EXPECT_EQ(a[4].kp, 100);
  EXPECT_EQ(a[4].kv, 10);
  EXPECT_EQ(a[4].target_scale, 0.005);
  EXPECT_EQ(a[5].type, ActuatorType::kVelocity);
  EXPECT_EQ(a[5].kv, 8);
  EXPECT_EQ(a[5].target_scale, 0.25);
  EXPECT_TRUE(HasWarning(*r, "activation dynamics (dyntype \"user\")"));
  EXPECT_TRUE(HasWarning(*r, "make no motor, position or velocity servo"));

  // MuJoCo itself: a <general> servo and the <position> shortcut are the same actuator
  const std::string general = WriteTemp("general_servo.xml", R"(
<mujoco><worldbody><body name="b"><joint name="j" axis="0 1 0" damping="1"/>
  <geom size="0.1" pos="0.3 0 0"/></body></worldbody>
  <actuator><general joint="j" gainprm="50" biasprm="0 -50 0" biastype="affine"/></actuator>
</mujoco>)");
  const std::string shortcut = WriteTemp("position_servo.xml", R"(
<mujoco><worldbody><body name="b"><joint name="j" axis="0 1 0" damping="1"/>
  <geom size="0.1" pos="0.3 0 0"/></body></worldbody>
  <actuator><position joint="j" kp="50"/></actuator>
</mujoco>)");
  MjModelPtr mg = LoadMuJoCo(general), ms = LoadMuJoCo(shortcut);
  ASSERT_TRUE(mg && ms);
  for (int k = 0; k < 3; ++k) EXPECT_EQ(mg->actuator_biasprm[k], ms->actuator_biasprm[k]);
  EXPECT_EQ(mg->actuator_gainprm[0], ms->actuator_gainprm[0]);
  absl::StatusOr<ImportResult> g = LoadMjcfFile(general), s = LoadMjcfFile(shortcut);
  ASSERT_TRUE(g.ok() && s.ok());
  EXPECT_EQ(g->model.actuators[0].type, s->model.actuators[0].type);
  EXPECT_EQ(g->model.actuators[0].kp, s->model.actuators[0].kp);
  EXPECT_EQ(g->model.actuators[0].kv, s->model.actuators[0].kv);
}

// <adhesion> (and a <general> on a body: the same actuator in MuJoCo) pulls its body onto what
// it touches (ActuatorDesc::adhesion_body) with gain * ctrl: MuJoCo's rules on its control
// range (required, not negative), the gear ignored with a warning, a body merged into its parent
// pulling at the parent's geoms too (warned), a static body skipped; a <general> servo on a body
// is skipped with a warning; a missing or unknown body, or a second transmission, is an error.
// MuJoCo's own active_adhesion.xml loads its two pads.
TEST(MjcfActuatorTest, AdhesionPullsItsBody) {
  auto load = [](const std::string& actuators) {
    return LoadMjcfString(absl::StrCat(R"(
<mujoco><worldbody><geom type="plane" size="0 0 1"/><body name="fixed" pos="0 0 2"/>
  <body name="base" pos="0 0 1"><freejoint/><geom size="0.1" margin="0.01" gap="0.01"/>
    <body name="cup" pos="0.3 0 0"><geom size="0.05"/></body>
  </body></worldbody><actuator>)",
                                       actuators, "</actuator></mujoco>"),
                          "");
  };
  absl::StatusOr<ImportResult> r = load(R"(
    <adhesion name="pad" body="base" ctrlrange="0 2" gain="7" forcelimited="true" forcerange="0 10"/>
    <general name="suction" body="cup" ctrllimited="true" ctrlrange="0 1" gainprm="3" gear="2"/>
    <general name="servo" body="base" ctrllimited="true" ctrlrange="0 1" biastype="affine"
             biasprm="0 -1 0"/>
    <adhesion name="nothing" body="fixed" ctrlrange="0 1"/>)");
  ASSERT_TRUE(r.ok()) << r.status();
  const auto& a = r->model.actuators;
  ASSERT_EQ(a.size(), 2u);
  EXPECT_EQ(a[0].name, "pad");
  EXPECT_EQ(a[0].type, ActuatorType::kEffort);
  EXPECT_EQ(a[0].adhesion_body, 0);
  EXPECT_EQ(a[0].gear, 7);
  EXPECT_TRUE(a[0].ctrl_limited);
  EXPECT_EQ(a[0].ctrl_max, 2);
  EXPECT_TRUE(a[0].force_limited);
  EXPECT_EQ(a[0].force_max, 10);
  EXPECT_EQ(a[0].joint, 0);
  EXPECT_EQ(a[0].site_body, -1);
  EXPECT_EQ(a[1].adhesion_body, 0);  // the cup has no joint: merged into the base
  EXPECT_EQ(a[1].gear, 3);           // the gain; the gear is not MuJoCo's on a body
  EXPECT_TRUE(HasWarning(*r, "gear is ignored on body transmissions"));
  EXPECT_TRUE(HasWarning(*r, "shares its rigid body with 'base'"));
  EXPECT_TRUE(HasWarning(*r, "with a bias on a body transmission are not supported"));
  EXPECT_TRUE(HasWarning(*r, "pulls on body 'fixed', which does not move"));
  ASSERT_TRUE(Model::Compile(r->model).ok());

  auto fails = [&](const std::string& actuators, const std::string& text) {
    absl::StatusOr<ImportResult> bad = load(actuators);
    ASSERT_FALSE(bad.ok()) << actuators;
    EXPECT_NE(bad.status().message().find(text), std::string::npos) << bad.status();
  };
  fails(R"(<adhesion body="base"/>)", "'ctrlrange': is required on <adhesion>");
  fails(R"(<adhesion body="base" ctrlrange="-1 1"/>)", "cannot be negative");
  fails(R"(<adhesion body="base" ctrlrange="0 1" gain="-2"/>)", "'gain': is negative");
  fails(R"(<adhesion ctrlrange="0 1"/>)", "'body': is required");
  fails(R"(<adhesion body="nope" ctrlrange="0 1"/>)", "unknown body 'nope'");
  fails(R"(<general body="base" joint="base_joint" ctrllimited="true" ctrlrange="0 1"/>)",
        "one transmission");

  // MuJoCo's sample: both pads load, on the arm's four boxes and the hanging sphere
  absl::StatusOr<ImportResult> sample =
      LoadMjcfFile("/usr/share/mujoco/model/adhesion/active_adhesion.xml");
  ASSERT_TRUE(sample.ok()) << sample.status();
  EXPECT_FALSE(HasWarning(*sample, "<adhesion>"));
  EXPECT_FALSE(HasWarning(*sample, "body transmission"));
  int pads = 0;
  for (const ActuatorDesc& actuator : sample->model.actuators) {
    if (actuator.adhesion_body < 0) continue;
    ++pads;
    EXPECT_EQ(actuator.gear, 5) << actuator.name;
  }
  EXPECT_EQ(sample->model.actuators.size(), 5u);
  EXPECT_EQ(pads, 2);
}

// Motors on sites push the body that carries the site, through the site's frame with the six
// gears as its wrench (a body merged into its parent carries its sites along). Servos on sites,
// Cartesian ones (refsite) and sites on the world are skipped with a warning; an unknown site,
// or a site beside a joint, is an error.
TEST(MjcfActuatorTest, SiteMotorsPushTheirBodies) {
  auto load = [](const std::string& actuators) {
    return LoadMjcfString(absl::StrCat(R"(
<mujoco><compiler autolimits="true"/><worldbody><site name="ground" pos="0 0 1"/>
  <body name="base" pos="0 0 1"><freejoint/><geom size="0.1" pos="0.02 0 0"/>
    <site name="rotor" pos="0.2 0 0" euler="90 0 0"/>
    <body name="tip" pos="0.3 0 0"><geom size="0.05"/><site name="nozzle" pos="0.1 0 0"/></body>
  </body></worldbody><actuator>)",
                                       actuators, "</actuator></mujoco>"),
                          "");
  };
  absl::StatusOr<ImportResult> r = load(R"(
    <motor name="thrust" site="rotor" gear="0 0 1 0 0 0.05" forcerange="0 3"/>
    <general name="push" site="nozzle" gainprm="2" gear="1 0 0 0 0 0"/>
    <position name="servo" site="rotor" kp="10"/>
    <motor name="cartesian" site="rotor" refsite="ground"/>
    <motor name="static" site="ground"/>)");
  ASSERT_TRUE(r.ok()) << r.status();
  const auto& a = r->model.actuators;
  ASSERT_EQ(a.size(), 2u);
  EXPECT_EQ(a[0].name, "thrust");
  EXPECT_EQ(a[0].type, ActuatorType::kEffort);
  EXPECT_EQ(a[0].site_body, 0);
  EXPECT_EQ(a[0].gear, 1);
  EXPECT_TRUE(a[0].force_limited);  // the force's range, not the wrench's
  EXPECT_EQ(a[0].force_max, 3);
  EXPECT_EQ(a[0].site_wrench, (std::array<Real, 6>{0, 0, 1, 0, 0, 0.05}));
  EXPECT_NEAR(a[0].site_pose.pos.x, 0.2, 1e-12);
  EXPECT_NEAR(std::abs(a[0].site_pose.quat.x), std::sqrt(0.5), 1e-12);  // 90 degrees about x
  // the tip has no joint: merged into the base, its nozzle 0.3 + 0.1 m out
  EXPECT_EQ(a[1].site_body, 0);
  EXPECT_EQ(a[1].gear, 2);
  EXPECT_NEAR(a[1].site_pose.pos.x, 0.4, 1e-12);
  EXPECT_EQ(a[1].site_wrench, (std::array<Real, 6>{1, 0, 0, 0, 0, 0}));
  EXPECT_TRUE(HasWarning(*r, "site actuators other than motors"));
  EXPECT_TRUE(HasWarning(*r, "pushes on site 'ground' of the world"));
  ASSERT_TRUE(Model::Compile(r->model).ok());

  auto fails = [&](const std::string& actuators, const std::string& text) {
    absl::StatusOr<ImportResult> bad = load(actuators);
    ASSERT_FALSE(bad.ok()) << actuators;
    EXPECT_NE(bad.status().message().find(text), std::string::npos) << bad.status();
  };
  fails(R"(<motor site="nope"/>)", "unknown site 'nope'");
  fails(R"(<motor site="rotor" tendon="t"/>)", "one transmission");
  fails(R"(<motor site="rotor" gear="1 2 3 4 5 6 7"/>)", "gear");
}

// <composite> rope, loop, particle, grid and cloth expand into the bodies MuJoCo 2.2 compiles
// from them: the same masses, inertias, positions and orientations body by body, the same
// joints; the loop closes with a connect (a ball joint) between its ends, a grid's and a
// cloth's neighbours are held by tendons. A rope or cloth whose holder is not named by its
// element's index is refused, as in MuJoCo.
TEST(MjcfCompositeTest, RopeLoopAndParticlesExpandAsInMuJoCo) {
  const std::string dir = "/usr/share/mujoco/model/composite/";
  absl::StatusOr<ImportResult> rope = LoadMjcfFile(dir + "rope.xml");
  ASSERT_TRUE(rope.ok()) << rope.status();
  EXPECT_EQ(rope->model.bodies.size(), 21u);
  EXPECT_EQ(rope->model.joints.size(), 20u);  // two hinges per element, one generic joint
  ExpectBodiesMatchMuJoCo(dir + "rope.xml", rope->model);

  absl::StatusOr<ImportResult> loop = LoadMjcfFile(dir + "loop.xml");
  ASSERT_TRUE(loop.ok()) << loop.status();
  EXPECT_EQ(loop->model.bodies.size(), 20u);
  ASSERT_EQ(loop->model.joints.size(), 20u);
  const JointDesc& closure = loop->model.joints.back();
  EXPECT_EQ(closure.type, JointType::kBall);
  ExpectBodiesMatchMuJoCo(dir + "loop.xml", loop->model);
  ASSERT_EQ(loop->model.exclude_body_pairs.size(), 1u);

  absl::StatusOr<ImportResult> particles = LoadMjcfFile(dir + "particle.xml");
  ASSERT_TRUE(particles.ok()) << particles.status();
  ASSERT_EQ(particles->model.bodies.size(), 1000u);
  MjModelPtr m = LoadMuJoCo(dir + "particle.xml");
  ASSERT_TRUE(m);
  ASSERT_EQ(m->nbody, 1002);  // the world, a static mocap box, then the particles in order
  for (int i = 0; i < 1000; ++i) {
    const BodyDesc& body = particles->model.bodies[i];
    for (int k = 0; k < 3; ++k) ASSERT_NEAR(body.pose.pos[k], m->body_pos[3 * (i + 2) + k], 1e-12);
    ASSERT_NEAR(body.mass, m->body_mass[i + 2], 1e-12);
  }
  EXPECT_EQ(particles->model.joints[0].type, JointType::kGeneric);  // three slides

  // composite elements ignore the file's default classes, as MuJoCo 2.2 does: the adhesion
  // sample's geoms default to boxes, its particles are spheres (frictionless), and their bodies
  // weigh what MuJoCo's do
  const std::string adhesion = "/usr/share/mujoco/model/adhesion/active_adhesion.xml";
  absl::StatusOr<ImportResult> adhering = LoadMjcfFile(adhesion);
  ASSERT_TRUE(adhering.ok()) << adhering.status();
  const ShapeDesc& particle = adhering->model.shapes.back();
  EXPECT_EQ(particle.type, ShapeType::kSphere);
  EXPECT_EQ(particle.contact_dim, 1);
  MjModelPtr ma = LoadMuJoCo(adhesion);
  ASSERT_TRUE(ma);
  EXPECT_NEAR(adhering->model.bodies.back().mass, ma->body_mass[ma->nbody - 1], 1e-12);

  // a grid: particles on three slides (none where pinned), a spatial tendon between each two
  // neighbours held by an <equality>, in MuJoCo's order and names; inside a body, on it
  const std::string grid_path = WriteTemp("grid_composite.xml", R"(<mujoco><worldbody>
    <composite type="grid" count="4 3 1" spacing="0.1" offset="1 2 3" prefix="c">
      <pin coord="1 2"/><geom size="0.02" condim="1"/><joint kind="main" damping="0.1"/>
    </composite>
    <body name="holder" pos="0 0 1"><freejoint/><geom size="0.1"/>
      <composite type="grid" count="5 1 1" spacing="0.1"><geom size="0.01"/></composite>
    </body></worldbody></mujoco>)");
  absl::StatusOr<ImportResult> grid = LoadMjcfFile(grid_path);
  ASSERT_TRUE(grid.ok()) << grid.status();
  EXPECT_FALSE(HasWarning(*grid, "composite"));
  ExpectBodiesMatchMuJoCo(grid_path, grid->model);
  MjModelPtr mg = LoadMuJoCo(grid_path);
  ASSERT_TRUE(mg);
  ASSERT_EQ(static_cast<int>(grid->model.tendons.size()), mg->ntendon);  // 17 + 4
  for (int t = 0; t < mg->ntendon; ++t) {
    const TendonDesc& thread = grid->model.tendons[t];
    EXPECT_EQ(thread.name, mj_id2name(mg.get(), mjOBJ_TENDON, t));
    EXPECT_TRUE(thread.hold);
    EXPECT_EQ(thread.path.size(), 2u);
  }
  EXPECT_EQ(grid->model.shapes[0].contact_dim, 1);  // the template's
  EXPECT_TRUE(Model::Compile(grid->model).ok());
  // cloth: a tree of hinge pairs from the holder (B<i>_<j>), capsules along x and y in turn,
  // the bodies' inertia a plate's (flatinertia), the rows the tree leaves out (and with a
  // shear template, the diagonals) held by tendons
  for (const std::string& sample :
       {std::string(dir + "cloth.xml"), std::string("/usr/share/mujoco/model/flag/flag.xml")}) {
    absl::StatusOr<ImportResult> cloth = LoadMjcfFile(sample);
    ASSERT_TRUE(cloth.ok()) << cloth.status();
    EXPECT_FALSE(HasWarning(*cloth, "<composite type=\"cloth\"> is not supported"));
    ExpectBodiesMatchMuJoCo(sample, cloth->model);
    MjModelPtr mc = LoadMuJoCo(sample);
    ASSERT_TRUE(mc);
    ASSERT_EQ(static_cast<int>(cloth->model.tendons.size()), mc->ntendon) << sample;
    for (int t = 0; t < mc->ntendon; ++t)
      EXPECT_EQ(cloth->model.tendons[t].name, mj_id2name(mc.get(), mjOBJ_TENDON, t));
  }
  // box (softbox.xml): the elements on the box's surface, each on a slide along its ray from
  // the holder, whose centre is a sphere of twice their radius; MuJoCo's joint equalities
  // become the slides' springs (each held at its reference) and held fixed tendons (each slide
  // with its neighbours along i, j and k), and its volume tendon T over every slide is held
  // with MuJoCo's softness: compliance (1 - d) A / (k d^2) = 1e-6 A for solref 0.01 1, solimp
  // 0.99 0.99, A the tendon's inverse weight (MuJoCo's tendon_invweight0)
  {
    const std::string softbox = dir + "softbox.xml";
    absl::StatusOr<ImportResult> box = LoadMjcfFile(softbox);
    ASSERT_TRUE(box.ok()) << box.status();
    EXPECT_FALSE(HasWarning(*box, "<composite type=\"box\"> is not supported"));
    ExpectBodiesMatchMuJoCo(softbox, box->model);
    MjModelPtr mb = LoadMuJoCo(softbox);
    ASSERT_TRUE(mb);
    const int slides = mb->njnt - 1;  // and the holder's free joint
    ASSERT_EQ(slides, 218);
    int held = 0;
    for (const TendonDesc& t : box->model.tendons) held += t.hold ? 1 : 0;
    EXPECT_EQ(held, mb->neq - slides);  // all but the pins: 432 neighbours and the volume
    const TendonDesc& volume = box->model.tendons.back();
    EXPECT_EQ(volume.name, "T");
    EXPECT_EQ(static_cast<int>(volume.joints.size()), mb->tendon_num[0]);
    EXPECT_NEAR(volume.hold_compliance, 1e-6 * mb->tendon_invweight0[0],
                1e-5 * volume.hold_compliance);
    EXPECT_GT(volume.hold_damping, 0);
    int springs = 0;
    for (const JointDesc& j : box->model.joints)
      springs += j.type == JointType::kPrismatic && j.drive.stiffness > 0 ? 1 : 0;
    EXPECT_EQ(springs, slides);
    EXPECT_TRUE(Model::Compile(box->model).ok());
    // elements other than spheres and capsules are refused, as MuJoCo refuses them; so is a box
    // outside a body
    absl::StatusOr<ImportResult> cubes = LoadMjcfString(R"(<mujoco><worldbody>
      <body pos="0 0 1"><freejoint/><composite type="box" count="3 3 3" spacing="0.05">
      <geom type="box" size="0.01 0.01 0.01"/></composite></body></worldbody></mujoco>)",
                                                        "");
    ASSERT_FALSE(cubes.ok());
    EXPECT_NE(cubes.status().message().find("a sphere or a capsule, not 'box'"), std::string::npos)
        << cubes.status();
    absl::StatusOr<ImportResult> loose = LoadMjcfString(R"(<mujoco><worldbody>
      <composite type="box" count="3 3 3" spacing="0.05"><geom size="0.01"/></composite>
      </worldbody></mujoco>)",
                                                        "");
    ASSERT_FALSE(loose.ok());
    EXPECT_NE(loose.status().message().find("must be inside a <body>"), std::string::npos)
        << loose.status();
  }
  // a composite's count is bounded before it is expanded (MjcfOptions::max_bodies)
  MjcfOptions few;
  few.max_bodies = 50;
  absl::StatusOr<ImportResult> many = LoadMjcfString(R"(<mujoco><worldbody>
    <composite type="grid" count="9 9 1" spacing="0.05"><geom size="0.01"/></composite>
    </worldbody></mujoco>)",
                                                     "", few);
  ASSERT_FALSE(many.ok());
  EXPECT_NE(many.status().message().find("9 x 9 x 1 makes 81 bodies, past the limit of 50"),
            std::string::npos)
      << many.status();
  absl::StatusOr<ImportResult> unheld = LoadMjcfString(R"(<mujoco><worldbody>
    <body name="holder" pos="0 0 1"><freejoint/>
      <composite type="cloth" count="3 3 1" spacing="0.1"><geom size="0.01"/></composite>
    </body></worldbody></mujoco>)",
                                                       "");
  ASSERT_FALSE(unheld.ok());
  EXPECT_NE(unheld.status().message().find("must be 'B<i>_<j>'"), std::string::npos)
      << unheld.status();
  // <equality><tendon>: a known tendon, held once; two tendons are skipped with a warning
  const auto holding = [](const std::string& equality, const std::string& defaults = "") {
    return LoadMjcfString(absl::StrCat("<mujoco>", defaults, R"(<worldbody>
      <site name="top" pos="0 0 2"/>
      <body pos="0 0 1"><freejoint/><geom size="0.1"/><site name="s"/></body></worldbody>
      <tendon><spatial name="rope"><site site="top"/><site site="s"/></spatial>
        <spatial name="other"><site site="top"/><site site="s"/></spatial></tendon>
      <equality>)",
                                       equality, "</equality></mujoco>"),
                          "");
  };
  absl::StatusOr<ImportResult> held = holding(R"(<tendon tendon1="rope" polycoef="-0.2"/>)");
  ASSERT_TRUE(held.ok()) << held.status();
  EXPECT_TRUE(held->model.tendons[0].hold);
  EXPECT_EQ(held->model.tendons[0].hold_offset, -0.2);
  EXPECT_GT(held->model.tendons[0].hold_compliance, 0);  // MuJoCo's default solref is soft
  EXPECT_GT(held->model.tendons[0].hold_damping, 0);     // and damped
  EXPECT_FALSE(held->model.tendons[1].hold);
  // a <default><equality> solref is every equality's of the class, as in MuJoCo: a time
  // constant 4 times shorter holds 16 times stiffer; a rigid <joint> equality says it ignores it
  absl::StatusOr<ImportResult> stiffer =
      holding(R"(<tendon tendon1="rope" polycoef="-0.2"/>)",
              R"(<default><equality solref="0.005 1"/></default>)");
  ASSERT_TRUE(stiffer.ok()) << stiffer.status();
  EXPECT_NEAR(stiffer->model.tendons[0].hold_compliance,
              held->model.tendons[0].hold_compliance / 16, 1e-12);
  // at the same damping ratio (solref's second number) a spring 16 times stiffer takes 4 times
  // the damping: 2 zeta sqrt(K / A)
  EXPECT_NEAR(stiffer->model.tendons[0].hold_damping, 4 * held->model.tendons[0].hold_damping,
              1e-9 * held->model.tendons[0].hold_damping);
  absl::StatusOr<ImportResult> coupled = LoadMjcfString(R"(<mujoco>
    <default><equality solref="0.005 1"/></default><worldbody>
    <body><joint name="a"/><geom size="0.1"/><body pos="0.3 0 0"><joint name="b"/>
    <geom size="0.1"/></body></body></worldbody>
    <equality><joint joint1="b" joint2="a"/></equality></mujoco>)",
                                                        "");
  ASSERT_TRUE(coupled.ok()) << coupled.status();
  EXPECT_TRUE(HasWarning(*coupled, "<equality><joint> attribute 'solref' is not supported"));
  absl::StatusOr<ImportResult> pair = holding(R"(<tendon tendon1="rope" tendon2="other"/>)");
  ASSERT_TRUE(pair.ok()) << pair.status();
  EXPECT_TRUE(HasWarning(*pair, "between two tendons on a spatial tendon is not supported"));
  EXPECT_FALSE(pair->model.tendons[0].hold);
  // between two fixed tendons: L1 - a1 L2 held (a tendon of its own), a linear polynomial only
  const auto coupling = [](const std::string& equality) {
    return LoadMjcfString(absl::StrCat(R"(<mujoco><worldbody>
      <body><joint name="a" type="slide"/><geom size="0.1"/></body>
      <body pos="1 0 0"><joint name="b" type="slide"/><geom size="0.1"/></body>
      <body pos="2 0 0"><joint name="c" type="slide"/><geom size="0.1"/></body></worldbody>
      <tendon><fixed name="ab"><joint joint="a" coef="1"/><joint joint="b" coef="1"/></fixed>
        <fixed name="bc"><joint joint="b" coef="0.5"/><joint joint="c" coef="1"/></fixed></tendon>
      <equality>)",
                                       equality, "</equality></mujoco>"),
                          "");
  };
  absl::StatusOr<ImportResult> linked =
      coupling(R"(<tendon name="link" tendon1="ab" tendon2="bc" polycoef="0.1 2"/>)");
  ASSERT_TRUE(linked.ok()) << linked.status();
  ASSERT_EQ(linked->model.tendons.size(), 3u);
  const TendonDesc& link = linked->model.tendons[2];  // a + b - 2 (0.5 b + c) = a - 2 c
  EXPECT_EQ(link.name, "link");
  EXPECT_TRUE(link.hold);
  EXPECT_EQ(link.hold_offset, 0.1);
  ASSERT_EQ(link.joints.size(), 2u);
  EXPECT_EQ(link.joints[0].coef, 1);
  EXPECT_EQ(link.joints[1].coef, -2);
  EXPECT_FALSE(linked->model.tendons[0].hold);
  EXPECT_TRUE(Model::Compile(linked->model).ok());
  absl::StatusOr<ImportResult> curved =
      coupling(R"(<tendon tendon1="ab" tendon2="bc" polycoef="0 1 0.5"/>)");
  ASSERT_TRUE(curved.ok()) << curved.status();
  EXPECT_TRUE(HasWarning(*curved, "past its linear term"));
  EXPECT_EQ(curved->model.tendons.size(), 2u);
  // held rigidly, as a joint equality: a softness asked for is named as ignored
  absl::StatusOr<ImportResult> soft =
      coupling(R"(<tendon tendon1="ab" tendon2="bc" solref="0.05 1"/>)");
  ASSERT_TRUE(soft.ok()) << soft.status();
  EXPECT_TRUE(HasWarning(*soft, "attribute 'solref' on a fixed tendon is not supported"));
  EXPECT_EQ(soft->model.tendons[2].hold_compliance, 0);
  EXPECT_FALSE(HasWarning(*linked, "on a fixed tendon"));
  for (const auto& [equality, problem] :
       {std::pair{R"(<tendon tendon1="nope"/>)", "unknown tendon 'nope'"},
        std::pair{R"(<tendon/>)", "'tendon1': is required"},
        std::pair{R"(<tendon tendon1="rope"/><tendon tendon1="rope"/>)", "already held"}}) {
    absl::StatusOr<ImportResult> bad = holding(equality);
    ASSERT_FALSE(bad.ok()) << equality;
    EXPECT_NE(bad.status().message().find(problem), std::string::npos) << bad.status();
  }
  absl::StatusOr<ImportResult> misnamed = LoadMjcfString(R"(<mujoco><worldbody>
    <body name="holder" pos="0 0 1"><freejoint/>
      <composite type="rope" count="5 1 1" spacing="0.1"><geom type="capsule" size="0.01 0.04"/></composite>
    </body></worldbody></mujoco>)",
                                                         "");
  ASSERT_FALSE(misnamed.ok());
  EXPECT_NE(misnamed.status().message().find("must be 'B<k>'"), std::string::npos)
      << misnamed.status();
}

// <contact><pair>: geoms by name, MuJoCo's defaults (condim 3, friction 1 along both tangents);
// a friction left at 1 along the second tangent is anisotropic, which is said; unknown geoms
// are errors naming them.
TEST(MjcfContactTest, PairsNameTheirGeomsAndKeepMuJoCoDefaults) {
  const std::string body = R"(<worldbody><geom name="floor" type="plane" size="0 0 0.1"/>
    <body name="b" pos="0 0 1"><freejoint/><geom name="ball" size="0.1"/></body></worldbody>)";
  absl::StatusOr<ImportResult> r = LoadMjcfString(
      absl::StrCat("<mujoco>", body, R"(<contact><pair name="p" geom1="ball" geom2="floor"/>
        <pair geom1="floor" geom2="ball" condim="1"/></contact></mujoco>)"),
      "");
  ASSERT_TRUE(r.ok()) << r.status();
  auto twice = Model::Compile(r->model);  // the same two geoms twice
  ASSERT_FALSE(twice.ok());
  EXPECT_NE(twice.status().message().find("already an explicit pair"), std::string::npos)
      << twice.status();
  r = LoadMjcfString(absl::StrCat("<mujoco>", body,
                                  R"(<contact><pair name="p" geom1="ball" geom2="floor"/>
        </contact></mujoco>)"),
                     "");
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->model.contact_pairs.size(), 1u);
  EXPECT_EQ(r->model.contact_pairs[0].friction, 1);
  EXPECT_EQ(r->model.contact_pairs[0].contact_dim, 3);
  EXPECT_TRUE(r->warnings.empty()) << r->warnings.front();
  r = LoadMjcfString(absl::StrCat("<mujoco>", body,
                                  R"(<contact><pair geom1="ball" geom2="floor" friction="0.3"/>
        </contact></mujoco>)"),
                     "");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->model.contact_pairs[0].friction, Real(0.3));
  EXPECT_TRUE(HasWarning(*r, "taken as isotropic"));
  r = LoadMjcfString(absl::StrCat("<mujoco>", body,
                                  R"(<contact><pair geom1="ball" geom2="nowhere"/>
        </contact></mujoco>)"),
                     "");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("unknown geom 'nowhere'"), std::string::npos) << r.status();
}

TEST(MjcfIncludeTest, IncludedFilesAreSplicedInPlace) {
  std::string dir = ::testing::TempDir();
  WriteTemp("inc_body.xml", R"(<mujoco><body name="ball" pos="0 0 1"><freejoint/>
      <geom class="heavy" size="0.1"/></body></mujoco>)");
  WriteTemp("inc_defaults.xml", R"(<mujoco><default><default class="heavy">
      <geom density="3000"/></default></default></mujoco>)");
  std::string path = WriteTemp("inc_main.xml", R"(<mujoco>
  <include file="inc_defaults.xml"/>
  <worldbody><include file="inc_body.xml"/></worldbody></mujoco>)");
  absl::StatusOr<ImportResult> r = LoadMjcfFile(path);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->model.bodies.size(), 1u);
  EXPECT_NEAR(r->model.bodies[0].mass, 3000 * 4.0 / 3 * M_PI * 1e-3, 1e-9);
  ExpectBodiesMatchMuJoCo(path, r->model);
}

TEST(MjcfErrorTest, MalformedXmlReportsTheLine) {
  absl::StatusOr<ImportResult> r =
      LoadMjcfString("<mujoco>\n<worldbody>\n<body>\n</worldbody>\n</mujoco>", "");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("<string>:"), std::string::npos) << r.status();
  EXPECT_NE(r.status().message().find("malformed XML"), std::string::npos) << r.status();
  // The <body> opened on line 3 is never closed.
  EXPECT_NE(r.status().message().find("<string>:3:"), std::string::npos) << r.status();
}

TEST(MjcfErrorTest, MissingIncludeNamesTheFile) {
  absl::StatusOr<ImportResult> r =
      LoadMjcfString("<mujoco>\n  <include file=\"no_such_part.xml\"/>\n</mujoco>", "/nonexistent");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(r.status().message().find("no_such_part.xml"), std::string::npos) << r.status();
  EXPECT_NE(r.status().message().find(":2:"), std::string::npos) << r.status();
}

// A referenced file must be a regular file (a mesh linked to /dev/zero would read without end),
// and with MjcfOptions::file_root it must lie within that directory, '..' and symbolic links
// resolved.
TEST(MjcfErrorTest, ReferencedFilesAreRegularAndWithinTheFileRoot) {
  namespace fs = std::filesystem;
  const fs::path root = fs::path(::testing::TempDir()) / "axion_file_root_test";
  fs::remove_all(root);
  fs::create_directories(root / "assets");
  std::ofstream(root / "assets" / "part.xml") << "<mujoco/>";
  std::ofstream(root / "outside.xml") << "<mujoco/>";
  fs::create_symlink("/dev/zero", root / "assets" / "zero.stl");
  const std::string assets = (root / "assets").string();
  absl::StatusOr<ImportResult> device =
      LoadMjcfString(R"(<mujoco><asset><mesh file="zero.stl"/></asset></mujoco>)", assets);
  ASSERT_FALSE(device.ok());
  EXPECT_NE(device.status().message().find("zero.stl' is not a regular file"), std::string::npos)
      << device.status();
  MjcfOptions confined;
  confined.file_root = assets;
  EXPECT_TRUE(
      LoadMjcfString(R"(<mujoco><include file="part.xml"/></mujoco>)", assets, confined).ok());
  // without a root, '..' is a path like any other
  EXPECT_TRUE(LoadMjcfString(R"(<mujoco><include file="../outside.xml"/></mujoco>)", assets).ok());
  absl::StatusOr<ImportResult> outside =
      LoadMjcfString(R"(<mujoco><include file="../outside.xml"/></mujoco>)", assets, confined);
  ASSERT_FALSE(outside.ok());
  EXPECT_EQ(outside.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(outside.status().message().find("outside the directory"), std::string::npos)
      << outside.status();
  fs::remove_all(root);
}

// A <composite type="cylinder"> is not supported, so the free body holding it is left without
// mass. The error names the element left out, which is the cause.
TEST(MjcfErrorTest, ErrorsNameTheUnsupportedElementsIgnoredBeforeThem) {
  absl::StatusOr<ImportResult> r = LoadMjcfString(R"(<mujoco>
  <worldbody>
    <body name="net" pos="0 0 1">
      <freejoint/>
      <composite type="cylinder" count="4 4 4" spacing="0.04">
        <geom type="capsule" size=".01 .015"/>
      </composite>
    </body>
  </worldbody>
</mujoco>)",
                                                  "");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("body 'net': mass is zero"), std::string::npos) << r.status();
  EXPECT_NE(r.status().message().find("<composite type=\"cylinder\"> (<string>:5)"),
            std::string::npos)
      << r.status();
}

// A later <option> changes only what it names, as in MuJoCo: softbox.xml sets its solver after
// its included scene set the time step, which stays.
TEST(MjcfOptionTest, LaterOptionsKeepWhatTheyDoNotName) {
  absl::StatusOr<ImportResult> r = LoadMjcfString(R"(<mujoco>
  <option timestep="0.005" gravity="0 0 -3" density="1.2" wind="1 0 0"/>
  <option viscosity="0.1"/>
  <worldbody><body><freejoint/><geom size="0.1"/></body></worldbody>
</mujoco>)",
                                                  "");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->model.options.timestep, 0.005);
  EXPECT_EQ(r->model.options.gravity[2], -3);
  EXPECT_EQ(r->model.options.fluid_density, 1.2);
  EXPECT_EQ(r->model.options.fluid_viscosity, 0.1);
  EXPECT_EQ(r->model.options.fluid_wind[0], 1);
  absl::StatusOr<ImportResult> none = LoadMjcfString(
      R"(<mujoco><worldbody><body><freejoint/><geom size="0.1"/></body></worldbody></mujoco>)", "");
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(none->model.options.timestep, 0.002);  // MuJoCo's default
}

TEST(MjcfErrorTest, BadValuesNameElementNameAndAttribute) {
  struct Case {
    const char* xml;
    std::vector<std::string> needles;
  };
  std::vector<Case> cases = {
      {R"(<mujoco><worldbody><body name="arm"><joint/>
           <inertial pos="0 0 0" mass="-2" diaginertia="1 1 1"/></body></worldbody></mujoco>)",
       {"inertial", "arm", "'mass'", "negative", ":2:"}},
      {R"(<mujoco><worldbody><body name="b"><joint/><geom name="g" size="0.1" mass="-1"/></body></worldbody></mujoco>)",
       {"geom 'g'", "'mass'", "negative"}},
      {R"(<mujoco><compiler autolimits="false"/><worldbody><body name="b"><joint name="j" range="0 1"/><geom size="1"/></body></worldbody></mujoco>)",
       {"joint 'j'", "'range'", "limited"}},
      {R"(<mujoco><worldbody><body name="b"><joint/><geom name="g" type="capsule" size="0.1"/></body></worldbody></mujoco>)",
       {"geom 'g'", "'size'"}},
      {R"(<mujoco><worldbody><body name="b"><joint/><geom name="g" type="sphere" size="x"/></body></worldbody></mujoco>)",
       {"geom 'g'", "'size'", "'x'"}},
      {R"(<mujoco><worldbody><body name="b"><joint/></body></worldbody></mujoco>)",
       {"body 'b'", "mass is zero"}},
      {R"(<mujoco><worldbody><body name="b"><joint/><geom size="1"/></body></worldbody>
           <actuator><motor name="m" joint="nope"/></actuator></mujoco>)",
       {"motor 'm'", "'joint'", "nope"}},
      {R"(<mujoco><worldbody><body name="b"><geom name="g" type="hfield" hfield="terrain"/></body></worldbody></mujoco>)",
       {"geom 'g'", "'hfield'", "no <hfield> asset is named 'terrain'"}},
      {R"(<mujoco><compiler coordinate="polar"/></mujoco>)", {"compiler", "'coordinate'"}},
      {R"(<robot/>)", {"<mujoco>"}},
  };
  for (const Case& c : cases) {
    absl::StatusOr<ImportResult> r = LoadMjcfString(c.xml, "");
    ASSERT_FALSE(r.ok()) << c.xml;
    for (const std::string& needle : c.needles) {
      EXPECT_NE(r.status().message().find(needle), std::string::npos)
          << "'" << needle << "' not in: " << r.status().message();
    }
  }
}

// Axion's friction cone is MuJoCo's elliptic one: cone="elliptic" loads without a word, a
// pyramid asked for by name is ignored with a warning, anything else is an error.
TEST(MjcfWarningTest, EllipticConeIsAxionsOwnAndAPyramidIsNamed) {
  auto load = [](const std::string& cone) {
    return LoadMjcfString(absl::StrCat(R"(<mujoco><option cone=")", cone,
                                       R"("/><worldbody><body><freejoint/><geom size="0.1"/>
      </body></worldbody></mujoco>)"),
                          "");
  };
  absl::StatusOr<ImportResult> elliptic = load("elliptic");
  ASSERT_TRUE(elliptic.ok()) << elliptic.status();
  EXPECT_TRUE(elliptic->warnings.empty()) << elliptic->warnings.front();
  absl::StatusOr<ImportResult> pyramid = load("pyramidal");
  ASSERT_TRUE(pyramid.ok()) << pyramid.status();
  EXPECT_TRUE(HasWarning(*pyramid, "cone=\"pyramidal\" was ignored"));
  absl::StatusOr<ImportResult> bad = load("square");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("'cone': must be 'pyramidal' or 'elliptic'"),
            std::string::npos)
      << bad.status();
}

// <joint springdamper>: the stiffness and damping MuJoCo derives from each joint's inertia at
// qpos0 (its DOFs' diagonal of the joint-space M^-1, armature included) are the springs and
// dampers Axion's joints get: hinges along a branch, a ball, a slide and two hinges of one body
// (an Axion joint of two DOFs, each with its own), beside a plain spring; a half-given pair is
// an error and one on a free joint is named.
TEST(MjcfSpringDamperTest, StiffnessAndDampingAreMuJoCosFromTheInertiaAtQpos0) {
  const std::string path = kModels + "/springdamper.xml";
  absl::StatusOr<ImportResult> imported = LoadMjcfFile(path);
  ASSERT_TRUE(imported.ok()) << imported.status();
  // the tail's jointless tip joins tail2, its mass with it
  ASSERT_EQ(imported->warnings.size(), 1u) << imported->warnings.front();
  EXPECT_TRUE(HasWarning(*imported, "body 'tip' has no joint: merged into 'tail2'"));
  MjModelPtr m = LoadMuJoCo(path);
  ASSERT_TRUE(m);
  int compared = 0, derived = 0;
  for (const ImportResult::SourceJoint& source : imported->source_joints) {
    if (source.joint < 0) continue;  // the free joint
    const int id = mj_name2id(m.get(), mjOBJ_JOINT, source.name.c_str());
    ASSERT_GE(id, 0) << source.name;
    const JointDesc& joint = imported->model.joints[source.joint];
    const DriveDesc& drive = joint.dof_drive.empty() ? joint.drive : joint.dof_drive[source.dof];
    const double stiffness = m->jnt_stiffness[id], damping = m->dof_damping[m->jnt_dofadr[id]];
    EXPECT_NEAR(drive.stiffness, stiffness, 1e-9 * stiffness) << source.name;
    EXPECT_NEAR(drive.damping, damping, 1e-9 * damping) << source.name;
    std::printf("%-8s stiffness %.10g (MuJoCo %.10g), damping %.10g (MuJoCo %.10g)\n",
                source.name.c_str(), double(drive.stiffness), stiffness, double(drive.damping),
                damping);
    ++compared;
    derived += source.name != "shoulder" && stiffness != 2;  // not the default's spring
  }
  EXPECT_EQ(compared, 6);
  EXPECT_EQ(derived, 5);

  auto load = [](const std::string& joint) {
    return LoadMjcfString(absl::StrCat(R"(<mujoco><worldbody><body><geom size="0.1"/>)", joint,
                                       R"(</body></worldbody></mujoco>)"),
                          "");
  };
  absl::StatusOr<ImportResult> half = load(R"(<joint name="j" springdamper="0.01 0"/>)");
  ASSERT_FALSE(half.ok());
  EXPECT_NE(half.status().message().find("joint 'j'"), std::string::npos) << half.status();
  EXPECT_NE(half.status().message().find("'springdamper': needs a positive time constant"),
            std::string::npos)
      << half.status();
  absl::StatusOr<ImportResult> none = load(R"(<joint springdamper="0 0"/>)");
  ASSERT_TRUE(none.ok()) << none.status();
  EXPECT_EQ(none->model.joints[0].drive.stiffness, 0);
  absl::StatusOr<ImportResult> free = load(R"(<joint type="free" springdamper="0.01 1"/>)");
  ASSERT_TRUE(free.ok()) << free.status();
  EXPECT_TRUE(HasWarning(*free, "springdamper on a free joint")) << free->warnings.size();
}

// <flag constraint="disable"> turns off contacts, limits, equalities and dry friction together;
// switches of MuJoCo's own machinery (energy) load silently, ones that would change the physics
// here and are not supported (override, filterparent) warn, and a value other than enable or
// disable is an error.
TEST(MjcfWarningTest, FlagsActOnTheModelOrAreNamed) {
  auto load = [](const std::string& flags) {
    return LoadMjcfString(
        absl::StrCat(R"(<mujoco><compiler angle="radian"/>
      <option><flag )",
                     flags, R"(/></option><worldbody><geom type="plane" size="0 0 1"/>
      <body name="a" pos="0 0 1"><joint name="h" axis="0 1 0" limited="true" range="-1 1"
        frictionloss="0.1"/><geom size="0.1"/>
        <body name="b" pos="0.5 0 0"><joint name="s" type="slide"/><geom size="0.1"/></body>
      </body></worldbody><equality><joint joint1="s"/></equality></mujoco>)"),
        "");
  };
  absl::StatusOr<ImportResult> all = load(R"(energy="enable" warmstart="disable")");
  ASSERT_TRUE(all.ok()) << all.status();
  EXPECT_TRUE(all->warnings.empty()) << all->warnings.front();
  EXPECT_TRUE(all->model.joints[0].limited);
  EXPECT_EQ(all->model.couplings.size(), 1u);
  absl::StatusOr<ImportResult> none = load(R"(constraint="disable" override="enable")");
  ASSERT_TRUE(none.ok()) << none.status();
  EXPECT_FALSE(none->model.joints[0].limited);
  EXPECT_EQ(none->model.joints[0].friction_loss, 0);
  EXPECT_TRUE(none->model.couplings.empty());
  for (const ShapeDesc& shape : none->model.shapes) EXPECT_EQ(shape.collision_group, 0u);
  EXPECT_TRUE(HasWarning(*none, "<flag> attribute 'override' is not supported"));
  absl::StatusOr<ImportResult> bad = load(R"(gravity="off")");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("'gravity': must be 'enable' or 'disable'"),
            std::string::npos)
      << bad.status();
}

// Sensors Axion cannot read are skipped with a warning naming them, so the sensor data holds
// the others in file order; sensors of what does not exist or of the wrong joint kind are
// errors naming file, line, element and attribute, as in MuJoCo.
TEST(MjcfSensorTest, SkippedSensorsAreNamedAndBadOnesAreErrors) {
  auto load = [](const std::string& sensors, const std::string& extra = "") {
    return LoadMjcfString(absl::StrCat(R"(<mujoco><compiler autolimits="true"/>)", extra,
                                       R"(<worldbody><site name="ground"/>
      <body name="a" pos="0 0 1"><freejoint/>
      <geom size="0.1"/><site name="s"/>
      <body name="b" pos="0.3 0 0"><joint name="h" axis="0 1 0"/><geom size="0.1"/>
        <body name="c" pos="0.3 0 0"><joint name="ball" type="ball"/><geom size="0.1"/></body>
      </body></body></worldbody>
      <actuator><motor name="m" joint="h"/><damper name="cyl" joint="h" kv="1"/></actuator>
      <sensor>)",
                                       sensors, "</sensor></mujoco>"),
                          "");
  };
  absl::StatusOr<ImportResult> r = load(R"(
      <jointpos name="first" joint="h"/>
      <jointlimitvel joint="h"/>
      <jointlimitfrc joint="h"/>
      <torque name="grounded" site="ground"/>
      <actuatorfrc name="cyl_force" actuator="cyl"/>
      <framequat name="inertial" objtype="body" objname="b"/>
      <ballquat name="last" joint="ball" noise="0.01"/>)",
                                        R"(<option><flag sensornoise="enable"/></option>)");
  ASSERT_TRUE(r.ok()) << r.status();
  for (const char* needle : {"<jointlimitvel> in <sensor>", "<jointlimitfrc> in <sensor>",
                             "actuatorfrc 'cyl_force': actuator 'cyl' is not supported",
                             "framequat 'inertial': the axes of a body's inertial frame",
                             "torque 'grounded': a force or torque sensor on the world",
                             "<flag> attribute 'sensornoise'"}) {
    EXPECT_TRUE(HasWarning(*r, needle)) << needle;
  }
  ASSERT_EQ(r->source_sensors.size(), 2u);
  EXPECT_EQ(r->source_sensors[0].name, "first");
  EXPECT_EQ(r->source_sensors[1].name, "last");
  EXPECT_EQ(r->source_sensors[1].offset, 1);
  EXPECT_EQ(r->source_sensors[1].dim, 4);
  EXPECT_EQ(r->sensor_data_count, 5);

  const std::pair<const char*, const char*> bad[] = {
      {R"(<touch site="nowhere"/>)", "touch: attribute 'site': unknown site 'nowhere'"},
      {R"(<jointpos name="j" joint="ball"/>)", "jointpos 'j': attribute 'joint': must be a hinge"},
      {R"(<ballquat joint="h"/>)", "ballquat: attribute 'joint': must be a ball joint"},
      {R"(<actuatorvel actuator="nope"/>)", "attribute 'actuator': unknown actuator 'nope'"},
      {R"(<framepos objtype="site"/>)", "framepos: attribute 'objname': is required"},
      {R"(<framepos objtype="thing" objname="s"/>)", "unknown object type 'thing'"},
      {R"(<subtreecom body="z"/>)", "subtreecom: attribute 'body': unknown body 'z'"},
      {R"(<gyro site="s" cutoff="-1"/>)", "gyro: attribute 'cutoff': is negative"},
  };
  for (const auto& [sensor, message] : bad) {
    absl::StatusOr<ImportResult> refused = load(sensor);
    ASSERT_FALSE(refused.ok()) << sensor;
    EXPECT_NE(refused.status().message().find(message), std::string::npos) << refused.status();
    EXPECT_NE(refused.status().message().find("<string>:"), std::string::npos) << refused.status();
  }
}

TEST(MjcfWarningTest, UnsupportedElementsAndAttributesAreNamed) {
  std::string xml = R"(
<mujoco>
  <size njmax="500"/>
  <option timestep="0.01" integrator="RK4"><flag override="enable"/></option>
  <worldbody>
    <body name="b"><freejoint/>
      <geom size="0.1" solref="0.02 1" rgba="1 0 0 1"/>
      <geom size="0.1" solref="0.02 1"/>
      <site name="s"/><camera name="c"/>
    </body>
    <body name="target" mocap="true" pos="0 0 2"><geom size="0.05" contype="0" conaffinity="0"/>
      <site name="tip" pos="0.1 0 0"/></body>
  </worldbody>
  <tendon/><sensor><tendonlimitpos tendon="t"/></sensor>
  <equality><distance/></equality><contact><tendon/></contact>
  <keyframe><key mpos="0 0 1"/><lag/></keyframe>
</mujoco>)";
  absl::StatusOr<ImportResult> r = LoadMjcfString(xml, "");
  ASSERT_TRUE(r.ok()) << r.status();
  for (const char* needle : {"<size>", "'integrator'", "<flag>", "'solref'", "'rgba'", "<camera>",
                             "<tendon>", "<tendonlimitpos> in <sensor>", "<distance> in <equality>",
                             "<tendon> in <contact>", "<lag> in <keyframe>"}) {
    EXPECT_TRUE(HasWarning(*r, needle)) << needle;
  }
  // Repeats are counted on one line.
  EXPECT_TRUE(HasWarning(*r, "(2 occurrences)"));
  // what only changes the drawing says so; what changes the physics is "not supported"
  EXPECT_TRUE(HasWarning(*r, "<geom> attribute 'rgba' only affects rendering"));
  EXPECT_TRUE(HasWarning(*r, "<geom> attribute 'solref' is not supported"));
  // a mocap body: static geometry the key (and Simulator::SetMocapPoses) places
  EXPECT_FALSE(HasWarning(*r, "'mocap'"));
  EXPECT_FALSE(HasWarning(*r, "'mpos'"));
  EXPECT_EQ(r->model.shapes.back().body, kWorldBody);
  EXPECT_EQ(r->model.shapes.back().mocap, 0);
  ASSERT_EQ(r->model.mocap_bodies.size(), 1u);
  EXPECT_EQ(r->model.mocap_bodies[0].name, "target");
  EXPECT_EQ(r->model.keyframes[0].mocap_pose, (std::vector<Real>{0, 0, 1, 1, 0, 0, 0}));
  // the mocap body and its site are reported in its frame, riding on it
  EXPECT_EQ(r->source_bodies.back().name, "target");
  EXPECT_EQ(r->source_bodies.back().mocap, 0);
  EXPECT_EQ(r->source_bodies.back().offset.pos.z, 0);
  EXPECT_EQ(r->source_sites.back().name, "tip");
  EXPECT_EQ(r->source_sites.back().body, kWorldBody);
  EXPECT_EQ(r->source_sites.back().mocap, 0);
  EXPECT_EQ(r->source_sites.back().offset.pos.x, 0.1);
  EXPECT_EQ(r->model.mocap_bodies[0].pose.pos.z, 2);
  EXPECT_DOUBLE_EQ(r->model.options.timestep, 0.01);
}

// MuJoCo collides two geoms when either's contype meets the other's conaffinity; Axion's filter
// asks both. A robot's geoms with conaffinity 0 (no self-collision) against a floor with
// conaffinity 1 collide in MuJoCo: the pairs the filters disagree on become explicit contact
// pairs, with MuJoCo's mixing (the larger friction and condim), and no warning is left.
TEST(MjcfCollisionTest, OneWayContypeConaffinityPairsBecomeExplicit) {
  std::string xml = R"(
<mujoco><worldbody>
  <geom name="floor" type="plane" size="0 0 1" friction="0.5"/>
  <body name="a" pos="0 0 1"><freejoint/>
    <geom name="ga" size="0.1" contype="1" conaffinity="0" friction="0.8" condim="1"/></body>
  <body name="b" pos="0 0 2"><freejoint/><geom name="gb" size="0.1" contype="1" conaffinity="0"/></body>
</worldbody></mujoco>)";
  absl::StatusOr<ImportResult> r = LoadMjcfString(xml, "");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->warnings.empty()) << r->warnings.front();
  EXPECT_EQ(r->model.shapes[1].collision_group, 1u);
  EXPECT_EQ(r->model.shapes[1].collision_mask, 0u);
  ASSERT_EQ(r->model.contact_pairs.size(), 2u);  // floor-ga, floor-gb; ga-gb collide in neither
  const ContactPairDesc& floor_a = r->model.contact_pairs[0];
  EXPECT_EQ(floor_a.shape_a, 0);
  EXPECT_EQ(floor_a.shape_b, 1);
  EXPECT_EQ(floor_a.friction, 0.8);
  EXPECT_EQ(floor_a.contact_dim, 3);
  EXPECT_EQ(r->model.contact_pairs[1].shape_b, 2);
  EXPECT_EQ(r->model.contact_pairs[1].friction, 1);
}

// <option collision>: MuJoCo's "predefined" makes only the <pair>s' contacts (Gym's swimmer
// lies on its floor without touching it), "dynamic" only those its filters pass.
TEST(MjcfCollisionTest, OptionCollisionPicksFilteredOrExplicitPairs) {
  auto model = [](const std::string& mode) {
    return absl::StrCat(R"(<mujoco><option collision=")", mode, R"("/><worldbody>
      <geom name="floor" type="plane" size="0 0 0.1"/>
      <body name="a" pos="0 0 0.1"><freejoint/><geom name="ga" size="0.1"/></body>
      <body name="b" pos="1 0 0.1"><freejoint/><geom name="gb" size="0.1"/></body>
      </worldbody><contact><pair geom1="floor" geom2="gb"/></contact></mujoco>)");
  };
  for (const char* mode : {"all", "predefined", "dynamic"}) {
    absl::StatusOr<ImportResult> r = LoadMjcfString(model(mode), "");
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_TRUE(r->warnings.empty()) << mode << ": " << r->warnings.front();
    absl::StatusOr<std::shared_ptr<const Model>> m = Model::Compile(r->model);
    ASSERT_TRUE(m.ok()) << m.status();
    const bool all = std::string(mode) == "all";
    EXPECT_EQ((*m)->MayCollide(0, 1), std::string(mode) != "predefined") << mode;  // floor-ga
    EXPECT_EQ((*m)->MayCollide(0, 2), true) << mode;                               // floor-gb
    EXPECT_EQ(r->model.contact_pairs.size(), std::string(mode) == "dynamic" ? 0u : 1u) << mode;
    EXPECT_EQ((*m)->MayCollide(1, 2), all || std::string(mode) == "dynamic") << mode;
  }
  absl::StatusOr<ImportResult> bad = LoadMjcfString(model("some"), "");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("'collision'"), std::string::npos) << bad.status();
}

TEST(MjcfStaticTest, BodiesWeldedToTheWorldBecomeWorldShapes) {
  std::string xml = R"(
<mujoco><worldbody>
  <body name="table" pos="1 0 0.5" euler="0 0 90"><geom name="top" type="box" size="0.5 0.3 0.02" pos="0.1 0 0"/></body>
  <body name="ball" pos="1 0 1"><freejoint/><geom size="0.05"/></body>
</worldbody></mujoco>)";
  absl::StatusOr<ImportResult> r = LoadMjcfString(xml, "");
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->model.bodies.size(), 1u);
  EXPECT_TRUE(r->model.joints.empty());
  const ShapeDesc& top = r->model.shapes[0];
  EXPECT_EQ(top.body, kWorldBody);
  // (0.1, 0, 0) in a frame turned 90 degrees about z, at (1, 0, 0.5).
  EXPECT_NEAR(top.pose.pos.x, 1, 1e-12);
  EXPECT_NEAR(top.pose.pos.y, 0.1, 1e-12);
  EXPECT_NEAR(top.pose.pos.z, 0.5, 1e-12);
}

}  // namespace
}  // namespace axion
