// URDF importer: links, joints, meshes, options, errors and warnings.
#include "axion/urdf.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "axion/mjcf.h"
#include "axion/model.h"
#include "axion/simulator.h"
#include "gtest/gtest.h"

namespace axion {
namespace {

const std::string kModels = AXION_TEST_MODELS;

// The robot of `xml` with a floating base, on top of `options`.
absl::StatusOr<ImportResult> LoadFloating(const std::string& xml, UrdfOptions options = {}) {
  options.floating_base = true;
  return LoadUrdfString(xml, "", options);
}

bool HasWarning(const ImportResult& r, const std::string& needle) {
  for (const std::string& w : r.warnings) {
    if (w.find(needle) != std::string::npos) return true;
  }
  return false;
}

TEST(UrdfTest, TwoLinkArmStructure) {
  absl::StatusOr<ImportResult> r = LoadUrdfFile(kModels + "/two_link_arm.urdf");
  ASSERT_TRUE(r.ok()) << r.status();
  const ModelDesc& m = r->model;
  EXPECT_EQ(m.name, "two_link_arm");
  // Fixed base: the base link is the world; its box is a world shape.
  ASSERT_EQ(m.bodies.size(), 2u);
  EXPECT_EQ(m.bodies[0].name, "upper");
  EXPECT_EQ(m.bodies[0].mass, 1);
  EXPECT_NEAR(m.bodies[0].com.z, -0.25, 1e-15);
  EXPECT_NEAR(m.bodies[1].pose.pos.z, 1.5, 1e-15);
  ASSERT_EQ(m.shapes.size(), 3u);
  EXPECT_EQ(m.shapes[0].body, kWorldBody);
  EXPECT_EQ(m.shapes[0].type, ShapeType::kBox);
  EXPECT_NEAR(m.shapes[0].size.x, 0.05, 1e-15);
  EXPECT_NEAR(m.shapes[0].pose.pos.z, 2.3, 1e-15);
  EXPECT_EQ(m.shapes[1].type, ShapeType::kCylinder);
  EXPECT_NEAR(m.shapes[1].size.y, 0.25, 1e-15);  // half of length 0.5, along z
  ASSERT_EQ(m.joints.size(), 2u);
  EXPECT_EQ(m.joints[0].type, JointType::kRevolute);
  EXPECT_EQ(m.joints[0].parent, kWorldBody);
  EXPECT_TRUE(m.joints[0].limited);
  EXPECT_EQ(m.joints[0].lower[0], -3);
  Vec3 axis = rotate(m.joints[0].child_frame.quat, Vec3{1, 0, 0});
  EXPECT_NEAR(axis.y, 1, 1e-15);
  EXPECT_EQ(m.joints[1].type, JointType::kRevolute);
  EXPECT_FALSE(m.joints[1].limited);  // continuous
  // One effort actuator per moving joint, ctrl range = +-effort.
  ASSERT_EQ(m.actuators.size(), 2u);
  EXPECT_EQ(m.actuators[0].name, "shoulder");
  EXPECT_EQ(m.actuators[0].type, ActuatorType::kEffort);
  EXPECT_EQ(m.actuators[0].ctrl_max, 20);
  EXPECT_EQ(m.actuators[1].ctrl_min, -5);
  EXPECT_TRUE(HasWarning(*r, "<visual>"));
  EXPECT_TRUE(HasWarning(*r, "velocity limits"));
  // <visual> is reported once however many links have one.
  int visual_lines = 0;
  for (const std::string& w : r->warnings) visual_lines += w.find("<visual>") != std::string::npos;
  EXPECT_EQ(visual_lines, 1);
  EXPECT_TRUE(Model::Compile(m).ok());
}

TEST(UrdfTest, OriginsComposeAndInertiaRotatesIntoTheLinkFrame) {
  std::string xml = R"(<robot name="r">
    <link name="base"/>
    <link name="a">
      <inertial><origin xyz="0.1 0 0" rpy="0 0 1.5707963267948966"/><mass value="2"/>
        <inertia ixx="1" iyy="2" izz="3" ixy="0" ixz="0" iyz="0"/></inertial>
    </link>
    <joint name="j" type="prismatic">
      <origin xyz="1 2 3" rpy="0 0 1.5707963267948966"/>
      <parent link="base"/><child link="a"/><axis xyz="0 0 1"/>
      <limit lower="-0.5" upper="0.5" effort="0" velocity="0"/>
      <dynamics damping="0.3" friction="0.1"/>
    </joint></robot>)";
  absl::StatusOr<ImportResult> r = LoadUrdfString(xml, "");
  ASSERT_TRUE(r.ok()) << r.status();
  const BodyDesc& a = r->model.bodies[0];
  // The inertia frame is turned 90 degrees about z: x and y moments swap.
  EXPECT_NEAR(a.inertia(0, 0), 2, 1e-12);
  EXPECT_NEAR(a.inertia(1, 1), 1, 1e-12);
  EXPECT_NEAR(a.inertia(2, 2), 3, 1e-12);
  EXPECT_NEAR(a.pose.pos.y, 2, 1e-15);
  Vec3 x = rotate(a.pose.quat, Vec3{1, 0, 0});
  EXPECT_NEAR(x.y, 1, 1e-12);
  const JointDesc& j = r->model.joints[0];
  EXPECT_EQ(j.type, JointType::kPrismatic);
  EXPECT_EQ(j.drive.damping, 0.3);
  EXPECT_FALSE(r->model.actuators[0].ctrl_limited);  // effort 0: no bound
  EXPECT_EQ(j.friction_loss, 0.1);  // <dynamics friction>: dry friction along the joint
}

TEST(UrdfTest, FloatingBaseAndMasslessFrames) {
  std::string xml = R"(<robot name="r">
    <link name="base"><inertial><mass value="3"/><inertia ixx="1" iyy="1" izz="1"/></inertial>
      <collision><geometry><sphere radius="0.2"/></geometry></collision></link>
    <link name="tool_frame">
      <collision><origin xyz="0 0 0.1"/><geometry><sphere radius="0.05"/></geometry></collision></link>
    <link name="wheel"><inertial><mass value="1"/><inertia ixx="0.1" iyy="0.1" izz="0.1"/></inertial></link>
    <joint name="mount" type="fixed"><origin xyz="0 0 0.5"/><parent link="base"/><child link="tool_frame"/></joint>
    <joint name="spin" type="continuous"><origin xyz="0.3 0 0"/><parent link="tool_frame"/><child link="wheel"/></joint>
  </robot>)";
  UrdfOptions options;
  options.floating_base = true;
  absl::StatusOr<ImportResult> r = LoadUrdfString(xml, "", options);
  ASSERT_TRUE(r.ok()) << r.status();
  const ModelDesc& m = r->model;
  // base is free (no joint); the massless tool_frame is merged into it.
  ASSERT_EQ(m.bodies.size(), 2u);
  ASSERT_EQ(m.joints.size(), 1u);
  EXPECT_EQ(m.joints[0].name, "spin");
  EXPECT_EQ(m.joints[0].parent, 0);
  EXPECT_EQ(m.joints[0].child, 1);
  EXPECT_NEAR(m.bodies[1].pose.pos.x, 0.3, 1e-15);
  EXPECT_NEAR(m.bodies[1].pose.pos.z, 0.5, 1e-15);
  ASSERT_EQ(m.shapes.size(), 2u);
  EXPECT_EQ(m.shapes[1].body, 0);
  EXPECT_NEAR(m.shapes[1].pose.pos.z, 0.6, 1e-15);
  EXPECT_TRUE(HasWarning(*r, "tool_frame"));
  EXPECT_TRUE(Model::Compile(m).ok());

  // Fixed base (the default): the base link is static, the wheel hangs off the world.
  absl::StatusOr<ImportResult> fixed = LoadUrdfString(xml, "");
  ASSERT_TRUE(fixed.ok()) << fixed.status();
  ASSERT_EQ(fixed->model.bodies.size(), 1u);
  EXPECT_EQ(fixed->model.joints[0].parent, kWorldBody);
  EXPECT_EQ(fixed->model.shapes[0].body, kWorldBody);
}

// A unit cube as binary STL, ASCII STL and OBJ: each loads as an 8-vertex hull.
void WriteCubeMeshes(const std::string& dir) {
  std::vector<std::array<float, 3>> corners;
  for (int i = 0; i < 8; ++i)
    corners.push_back({float(i & 1), float((i >> 1) & 1), float((i >> 2) & 1)});
  // 12 triangles covering the cube's faces (winding is irrelevant for a hull).
  int tris[12][3] = {{0, 1, 3}, {0, 3, 2}, {4, 5, 7}, {4, 7, 6}, {0, 1, 5}, {0, 5, 4},
                     {2, 3, 7}, {2, 7, 6}, {0, 2, 6}, {0, 6, 4}, {1, 3, 7}, {1, 7, 5}};
  std::ofstream bin(dir + "/cube_bin.stl", std::ios::binary);
  char header[80] = "binary cube";
  bin.write(header, 80);
  uint32_t count = 12;
  bin.write(reinterpret_cast<const char*>(&count), 4);
  for (auto& t : tris) {
    float normal[3] = {0, 0, 0};
    bin.write(reinterpret_cast<const char*>(normal), 12);
    for (int v : t) bin.write(reinterpret_cast<const char*>(corners[v].data()), 12);
    uint16_t attr = 0;
    bin.write(reinterpret_cast<const char*>(&attr), 2);
  }
  bin.close();
  std::ofstream ascii(dir + "/cube_ascii.stl");
  ascii << "solid cube\n";
  for (auto& t : tris) {
    ascii << " facet normal 0 0 0\n  outer loop\n";
    for (int v : t)
      ascii << "   vertex " << corners[v][0] << " " << corners[v][1] << " " << corners[v][2]
            << "\n";
    ascii << "  endloop\n endfacet\n";
  }
  ascii << "endsolid cube\n";
  ascii.close();
  std::ofstream obj(dir + "/cube.obj");
  obj << "# cube\n";
  for (auto& c : corners) obj << "v " << c[0] << " " << c[1] << " " << c[2] << "\n";
  for (auto& t : tris) obj << "f " << t[0] + 1 << " " << t[1] + 1 << " " << t[2] + 1 << "\n";
}

// A link on a fixed joint is one rigid body with its parent: the total mass, the combined
// centre of mass and the inertia about it (parallel-axis theorem), with no joint of its own.
// Its child joints hang from the merged body at the right place.
TEST(UrdfTest, FixedLinksMergeIntoTheirParentWithTheirMass) {
  std::string xml = R"(<robot name="r">
    <link name="trunk"><inertial><mass value="4"/><inertia ixx="0.1" iyy="0.2" izz="0.3"/></inertial></link>
    <link name="imu"><inertial><origin xyz="0 0 0.05"/><mass value="1"/>
      <inertia ixx="0.01" iyy="0.01" izz="0.01"/></inertial></link>
    <link name="leg"><inertial><mass value="1"/><inertia ixx="0.01" iyy="0.01" izz="0.01"/></inertial></link>
    <joint name="imu_joint" type="fixed"><origin xyz="0.5 0 0"/><parent link="trunk"/><child link="imu"/>
      <axis xyz="0 0 0"/></joint>
    <joint name="hip" type="continuous"><origin xyz="0 0.2 0"/><parent link="imu"/><child link="leg"/></joint>
  </robot>)";
  absl::StatusOr<ImportResult> r = LoadFloating(xml);
  ASSERT_TRUE(r.ok()) << r.status();
  const ModelDesc& m = r->model;
  ASSERT_EQ(m.bodies.size(), 2u);
  const BodyDesc& trunk = m.bodies[0];
  EXPECT_EQ(trunk.name, "trunk");
  EXPECT_DOUBLE_EQ(trunk.mass, 5);
  // centre: (4 * 0 + 1 * (0.5, 0, 0.05)) / 5
  EXPECT_NEAR(trunk.com.x, 0.1, 1e-15);
  EXPECT_NEAR(trunk.com.z, 0.01, 1e-15);
  // Ixx = 0.1 + 0.01 + 4 * 0.01^2 + 1 * 0.04^2; Iyy adds the x and z offsets; Ixz couples them
  EXPECT_NEAR(trunk.inertia(0, 0), 0.1 + 0.01 + 4 * 1e-4 + 0.04 * 0.04, 1e-15);
  EXPECT_NEAR(trunk.inertia(1, 1), 0.2 + 0.01 + 4 * (0.01 + 1e-4) + (0.4 * 0.4 + 0.04 * 0.04),
              1e-15);
  EXPECT_NEAR(trunk.inertia(0, 2), -(4 * (-0.1) * (-0.01) + 1 * 0.4 * 0.04), 1e-15);
  ASSERT_EQ(m.joints.size(), 1u);
  EXPECT_EQ(m.joints[0].name, "hip");
  EXPECT_EQ(m.joints[0].parent, 0);
  EXPECT_NEAR(m.bodies[1].pose.pos.x, 0.5, 1e-15);
  EXPECT_NEAR(m.bodies[1].pose.pos.y, 0.2, 1e-15);
  EXPECT_TRUE(HasWarning(*r, "link 'imu' into link 'trunk'"));
  // The fixed joint is accounted for, without an Axion joint.
  ASSERT_EQ(r->source_joints.size(), 2u);
  EXPECT_EQ(r->source_joints[0].name, "imu_joint");
  EXPECT_EQ(r->source_joints[0].joint, -1);
  // Every link says which body carries it, and where: the imu 0.5 m along the trunk's x axis.
  ASSERT_EQ(r->source_bodies.size(), 3u);
  EXPECT_EQ(r->source_bodies[0].name, "trunk");
  EXPECT_EQ(r->source_bodies[0].body, 0);
  EXPECT_EQ(r->source_bodies[0].offset.pos.x, 0);
  EXPECT_EQ(r->source_bodies[1].name, "imu");
  EXPECT_EQ(r->source_bodies[1].body, 0);
  EXPECT_NEAR(r->source_bodies[1].offset.pos.x, 0.5, 1e-15);
  EXPECT_EQ(r->source_bodies[2].name, "leg");
  EXPECT_EQ(r->source_bodies[2].body, 1);
  EXPECT_EQ(r->source_bodies[2].offset.pos.y, 0);
  // With a fixed base the trunk and the imu are static: their frames in the world frame.
  absl::StatusOr<ImportResult> fixed = LoadUrdfString(xml, "", UrdfOptions{});
  ASSERT_TRUE(fixed.ok()) << fixed.status();
  ASSERT_EQ(fixed->source_bodies.size(), 3u);
  EXPECT_EQ(fixed->source_bodies[1].body, kWorldBody);
  EXPECT_NEAR(fixed->source_bodies[1].offset.pos.x, 0.5, 1e-15);
  EXPECT_EQ(fixed->source_bodies[2].body, 0);
}

// The file's coordinates of a URDF robot are its moving joints' own, in the file's joint order:
// one per revolute, continuous or prismatic joint, a spherical joint's quaternion and its spin
// in the child link's frame, none for a fixed joint.
TEST(UrdfTest, FileCoordinatesAreTheJointsOwn) {
  std::string xml = R"(<robot name="r">
    <link name="base"><inertial><mass value="4"/><inertia ixx="0.1" iyy="0.2" izz="0.3"/></inertial></link>
    <link name="upper"><inertial><mass value="1"/><inertia ixx="0.01" iyy="0.01" izz="0.01"/></inertial></link>
    <link name="lower"><inertial><mass value="1"/><inertia ixx="0.01" iyy="0.01" izz="0.01"/></inertial></link>
    <link name="tool"><inertial><mass value="0.1"/><inertia ixx="0.001" iyy="0.001" izz="0.001"/></inertial></link>
    <link name="wrist"><inertial><mass value="0.5"/><inertia ixx="0.01" iyy="0.01" izz="0.01"/></inertial></link>
    <joint name="shoulder" type="continuous"><origin xyz="0 0.2 0"/><parent link="base"/><child link="upper"/>
      <axis xyz="0 1 0"/></joint>
    <joint name="slider" type="prismatic"><origin xyz="0.3 0 0"/><parent link="upper"/><child link="lower"/>
      <axis xyz="1 0 0"/><limit lower="-0.1" upper="0.1" effort="10" velocity="1"/></joint>
    <joint name="tool_mount" type="fixed"><origin xyz="0.1 0 0"/><parent link="lower"/><child link="tool"/></joint>
    <joint name="wrist_ball" type="spherical"><origin xyz="0.2 0 0"/><parent link="lower"/><child link="wrist"/></joint>
  </robot>)";
  absl::StatusOr<ImportResult> r = LoadUrdfString(xml, "", UrdfOptions{});
  ASSERT_TRUE(r.ok()) << r.status();
  absl::StatusOr<std::shared_ptr<const Model>> model = Model::Compile(r->model);
  ASSERT_TRUE(model.ok()) << model.status();
  const Quat ball = quat_from_axis_angle(normalized(Vec3{1, 2, -1}), 0.8);
  JointState joints;
  joints.position = {0.7, 0.05, ball.w, ball.x, ball.y, ball.z};
  joints.velocity = {1.5, -0.2, 0.3, -0.6, 0.9};
  BodyState rest;
  for (const BodyDesc& b : (*model)->desc().bodies) {
    rest.pose.insert(rest.pose.end(), {b.pose.pos.x, b.pose.pos.y, b.pose.pos.z, b.pose.quat.w,
                                       b.pose.quat.x, b.pose.quat.y, b.pose.quat.z});
  }
  rest.velocity.assign(6 * (*model)->body_count(), 0);
  absl::StatusOr<BodyState> bodies = BodyStateFromJoints(**model, joints, rest);
  ASSERT_TRUE(bodies.ok()) << bodies.status();
  absl::StatusOr<FileCoordinates> file = FileJointCoordinates(*r, **model, *bodies, joints);
  ASSERT_TRUE(file.ok()) << file.status();
  ASSERT_EQ(r->source_joints.size(), 4u);
  EXPECT_EQ(file->position_count, (std::vector<int>{1, 1, 0, 4}));
  EXPECT_EQ(file->velocity_count, (std::vector<int>{1, 1, 0, 3}));
  ASSERT_EQ(file->position.size(), 6u);
  for (int k = 0; k < 6; ++k) EXPECT_NEAR(file->position[k], joints.position[k], 1e-15) << k;
  EXPECT_NEAR(file->velocity[0], 1.5, 1e-15);
  EXPECT_NEAR(file->velocity[1], -0.2, 1e-15);
  // the ball's spin: given in the parent's joint frame (the wrist starts aligned with the lower
  // link), reported in the wrist's own frame, as MuJoCo's ball DOFs are
  const Vec3 spin = rotate_inv(ball, Vec3{0.3, -0.6, 0.9});
  for (int k = 0; k < 3; ++k) EXPECT_NEAR(file->velocity[2 + k], spin[k], 1e-12) << k;
}

// ROS mobile bases (Clearpath's husky) root their tree at a massless base_footprint with the
// massive base_link fixed to it: with a floating base the two are one free body with
// base_link's mass, at base_link's centre. A floating base with no mass at all stays welded to
// the world, as pybullet fixes a base of mass 0.
TEST(UrdfTest, MasslessFloatingRootTakesTheMassOfItsFixedLinks) {
  const std::string robot = R"(<robot name="r">
    <link name="base_footprint"/>
    <link name="base_link"><inertial><origin xyz="0 0 0.1"/><mass value="40"/>
      <inertia ixx="1" iyy="2" izz="2.5"/></inertial></link>
    <joint name="base_joint" type="fixed"><origin xyz="0 0 0.2"/><parent link="base_footprint"/>
      <child link="base_link"/></joint>
    <link name="wheel"><inertial><mass value="2"/><inertia ixx="0.1" iyy="0.1" izz="0.1"/></inertial>
    </link>
    <joint name="axle" type="continuous"><origin xyz="0.3 0 0"/><parent link="base_link"/>
      <child link="wheel"/><axis xyz="0 1 0"/></joint>
  </robot>)";
  absl::StatusOr<ImportResult> r = LoadFloating(robot);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->model.bodies.size(), 2u);
  EXPECT_EQ(r->model.bodies[0].name, "base_footprint");
  EXPECT_EQ(r->model.bodies[0].mass, 40);
  EXPECT_NEAR(r->model.bodies[0].com.z, 0.3, 1e-15);
  EXPECT_NEAR(r->model.bodies[0].inertia(2, 2), 2.5, 1e-12);
  EXPECT_EQ(r->model.joints[0].parent, 0);
  // a base without any mass (pybullet's planes and tables) stays welded to the world, saying so,
  // and a massless link that moves is still an error
  absl::StatusOr<ImportResult> massless = LoadFloating(R"(<robot name="r">
    <link name="base_footprint"><collision><geometry><box size="1 1 0.1"/></geometry></collision>
    </link><link name="sensor"/>
    <joint name="mount" type="fixed"><parent link="base_footprint"/><child link="sensor"/></joint>
  </robot>)");
  ASSERT_TRUE(massless.ok()) << massless.status();
  EXPECT_TRUE(massless->model.bodies.empty());
  ASSERT_EQ(massless->model.shapes.size(), 1u);
  EXPECT_EQ(massless->model.shapes[0].body, kWorldBody);
  EXPECT_TRUE(HasWarning(*massless, "root link 'base_footprint' has no mass"));
  absl::StatusOr<ImportResult> moving = LoadFloating(R"(<robot name="r">
    <link name="base"><inertial><mass value="1"/><inertia ixx="1" iyy="1" izz="1"/></inertial></link>
    <link name="flap"/>
    <joint name="hinge" type="continuous"><parent link="base"/><child link="flap"/></joint>
  </robot>)");
  ASSERT_FALSE(moving.ok());
  EXPECT_NE(moving.status().message().find("link 'flap': mass must be positive"), std::string::npos)
      << moving.status();
}

// Leftovers of a xacro run and pybullet's lenient vectors (Clearpath's husky, pybullet's
// microtaur): "$(optenv NAME DEFAULT)" takes its default (the server's environment is never
// read), a vector of more than three numbers its first three, each with a warning; other
// substitution args are errors naming the attribute.
TEST(UrdfTest, SubstitutionArgsAndLongVectorsAreReadAsPybulletReadsThem) {
  auto arm = [](const std::string& xyz, const std::string& rpy) {
    return absl::StrCat(R"(<robot name="r">
      <link name="base"/>
      <link name="arm"><inertial><mass value="1"/><inertia ixx="0.1" iyy="0.1" izz="0.1"/></inertial></link>
      <joint name="j" type="continuous"><parent link="base"/><child link="arm"/>
        <origin xyz=")",
                        xyz, R"(" rpy=")", rpy, R"("/></joint></robot>)");
  };
  absl::StatusOr<ImportResult> r =
      LoadUrdfString(arm("$(optenv ARM_XYZ 0.1 0 0.2)", "0 0 1.5708 0"), "", UrdfOptions{});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_NEAR(r->model.bodies[0].pose.pos.x, 0.1, 1e-15);
  EXPECT_NEAR(r->model.bodies[0].pose.pos.z, 0.2, 1e-15);
  const Vec3 x = rotate(r->model.bodies[0].pose.quat, Vec3{1, 0, 0});
  EXPECT_NEAR(x.y, 1, 1e-9);  // yaw of 1.5708 rad
  EXPECT_TRUE(HasWarning(*r, "'$(optenv ARM_XYZ 0.1 0 0.2)' read as '0.1 0 0.2'"));
  EXPECT_TRUE(HasWarning(*r, "read by their first 3"));
  for (const char* bad : {"$(env ARM_XYZ)", "$(optenv ARM_XYZ)", "$(optenv ARM_XYZ 0 0 0"}) {
    absl::StatusOr<ImportResult> refused = LoadUrdfString(arm(bad, "0 0 0"), "", UrdfOptions{});
    ASSERT_FALSE(refused.ok()) << bad;
    EXPECT_NE(refused.status().message().find("attribute 'xyz'"), std::string::npos)
        << refused.status();
    EXPECT_NE(refused.status().message().find("substitution arg"), std::string::npos)
        << refused.status();
  }
  // two numbers stay an error
  EXPECT_FALSE(LoadUrdfString(arm("0 0", "0 0 0"), "", UrdfOptions{}).ok());
}

// Conventions of robot files in the wild: pybullet's spherical joints become ball joints, a
// limit whose lower is above its upper leaves the joint unlimited (pybullet's reading), and a
// root link named "world" is the world even with a floating base. Each says so in a warning.
TEST(UrdfTest, ConventionsOfRobotFilesInTheWild) {
  std::string xml = R"(<robot name="r">
    <link name="world"/>
    <link name="slider"><inertial><mass value="1"/><inertia ixx="0.1" iyy="0.1" izz="0.1"/></inertial></link>
    <link name="head"><inertial><mass value="1"/><inertia ixx="0.1" iyy="0.1" izz="0.1"/></inertial></link>
    <joint name="rail" type="prismatic"><parent link="world"/><child link="slider"/><axis xyz="1 0 0"/>
      <limit effort="0" lower="1" upper="-1" velocity="10"/></joint>
    <joint name="neck" type="spherical"><origin xyz="0 0 0.3"/><parent link="slider"/><child link="head"/>
      <limit lower="-1" upper="1" effort="0" velocity="0"/></joint>
  </robot>)";
  absl::StatusOr<ImportResult> r = LoadFloating(xml);
  ASSERT_TRUE(r.ok()) << r.status();
  const ModelDesc& m = r->model;
  ASSERT_EQ(m.bodies.size(), 2u);
  ASSERT_EQ(m.joints.size(), 2u);
  EXPECT_EQ(m.joints[0].type, JointType::kPrismatic);
  EXPECT_EQ(m.joints[0].parent, kWorldBody);
  EXPECT_FALSE(m.joints[0].limited);
  EXPECT_EQ(m.joints[1].type, JointType::kBall);
  EXPECT_NEAR(m.bodies[1].pose.pos.z, 0.3, 1e-15);
  EXPECT_TRUE(HasWarning(*r, "lower 1 is above upper -1: the joint is left unlimited"));
  EXPECT_TRUE(HasWarning(*r, "'spherical' (pybullet's, not URDF's) becomes a ball joint"));
  EXPECT_TRUE(HasWarning(*r, "limits of spherical joints are not supported"));
}

// Principal moments that break the triangle inequality (a vendor's arm link) are an error that
// names the link and the way out; with balance_inertia they take their mean, with a warning.
TEST(UrdfTest, InertiaBreakingTheTriangleInequalityIsRefusedOrBalanced) {
  std::string xml = R"(<robot name="r">
    <link name="base"/>
    <link name="link2"><inertial><mass value="1.7"/>
      <inertia ixx="0.0031" iyy="0.0236" izz="0.0269" ixy="0" ixz="0" iyz="0"/></inertial></link>
    <joint name="j" type="continuous"><parent link="base"/><child link="link2"/></joint>
  </robot>)";
  absl::StatusOr<ImportResult> refused = LoadUrdfString(xml, "");
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("link 'link2'"), std::string::npos);
  EXPECT_NE(refused.status().message().find("triangle inequality"), std::string::npos);
  EXPECT_NE(refused.status().message().find("balance_inertia"), std::string::npos);
  UrdfOptions options;
  options.balance_inertia = true;
  absl::StatusOr<ImportResult> balanced = LoadUrdfString(xml, "", options);
  ASSERT_TRUE(balanced.ok()) << balanced.status();
  const Real mean = (0.0031 + 0.0236 + 0.0269) / 3;
  for (int k = 0; k < 3; ++k) EXPECT_NEAR(balanced->model.bodies[0].inertia(k, k), mean, 1e-15);
  EXPECT_TRUE(HasWarning(*balanced, "each moment set to their mean"));
}

// Files written for pybullet often leave <inertia> zero, since pybullet takes it from the
// collision geometry by default: an error that names the option, which does the same (a box
// offset from the file's centre of mass: its own inertia scaled to the link's mass, moved to
// that centre).
TEST(UrdfTest, InertiaFromCollisionGeometry) {
  std::string xml = R"(<robot name="r">
    <link name="blob"><inertial><origin xyz="0 0 0.01"/><mass value="2"/>
      <inertia ixx="1" iyy="1" izz="0" ixy="0" ixz="0" iyz="0"/></inertial>
      <collision><origin xyz="0 0 0.05"/><geometry><box size="0.2 0.4 0.1"/></geometry></collision></link>
  </robot>)";
  absl::StatusOr<ImportResult> refused = LoadFloating(xml);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("inertia_from_collision"), std::string::npos)
      << refused.status();
  UrdfOptions options;
  options.inertia_from_collision = true;
  absl::StatusOr<ImportResult> r = LoadFloating(xml, options);
  ASSERT_TRUE(r.ok()) << r.status();
  const BodyDesc& blob = r->model.bodies[0];
  EXPECT_DOUBLE_EQ(blob.mass, 2);
  EXPECT_NEAR(blob.com.z, 0.01, 1e-15);
  const double d = 0.04;  // box centre above the centre of mass
  EXPECT_NEAR(blob.inertia(0, 0), 2 * (0.4 * 0.4 + 0.1 * 0.1) / 12 + 2 * d * d, 1e-12);
  EXPECT_NEAR(blob.inertia(1, 1), 2 * (0.2 * 0.2 + 0.1 * 0.1) / 12 + 2 * d * d, 1e-12);
  EXPECT_NEAR(blob.inertia(2, 2), 2 * (0.2 * 0.2 + 0.4 * 0.4) / 12, 1e-12);
  EXPECT_TRUE(HasWarning(*r, "taken from their collision geometry"));
}

// The robot's links do not collide with each other unless self_collision is on (those joined by
// a joint never do): coarse collision geometry often overlaps in the file's own pose. With it
// on, pairs that touch or overlap there (c's sphere inside a's box) never collide either.
TEST(UrdfTest, SelfCollisionIsAnOption) {
  std::string xml = R"(<robot name="r">
    <link name="a"><inertial><mass value="1"/><inertia ixx="0.1" iyy="0.1" izz="0.1"/></inertial>
      <collision><geometry><box size="0.4 0.4 0.4"/></geometry></collision></link>
    <link name="b"><inertial><mass value="1"/><inertia ixx="0.1" iyy="0.1" izz="0.1"/></inertial>
      <collision><geometry><sphere radius="0.1"/></geometry></collision></link>
    <link name="c"><inertial><mass value="1"/><inertia ixx="0.1" iyy="0.1" izz="0.1"/></inertial>
      <collision><geometry><sphere radius="0.1"/></geometry></collision></link>
    <link name="d"><inertial><mass value="1"/><inertia ixx="0.1" iyy="0.1" izz="0.1"/></inertial>
      <collision><geometry><sphere radius="0.1"/></geometry></collision></link>
    <joint name="ab" type="continuous"><origin xyz="0.3 0 0"/><parent link="a"/><child link="b"/></joint>
    <joint name="bc" type="continuous"><origin xyz="-0.2 0 0"/><parent link="b"/><child link="c"/></joint>
    <joint name="cd" type="continuous"><origin xyz="0.9 0 0"/><parent link="c"/><child link="d"/></joint>
  </robot>)";
  UrdfOptions options;
  for (bool self : {false, true}) {
    options.self_collision = self;
    absl::StatusOr<ImportResult> r = LoadFloating(xml, options);
    ASSERT_TRUE(r.ok()) << r.status();
    absl::StatusOr<std::shared_ptr<const Model>> model = Model::Compile(r->model);
    ASSERT_TRUE(model.ok()) << model.status();
    // a-d and b-d may meet; a-c overlap from the start
    EXPECT_EQ((*model)->collision_pairs().size(), self ? 2u : 0u) << "self_collision " << self;
    for (const ShapeDesc& shape : r->model.shapes) {
      EXPECT_EQ(shape.collision_group, self ? 1u : kUrdfRobotGroup);
    }
    EXPECT_EQ(HasWarning(*r, "1 link pairs touch or overlap in the file's pose"), self);
    EXPECT_EQ(HasWarning(*r, "'a' and 'c'"), self);
  }
}

TEST(UrdfMeshTest, StlAndObjMeshesBecomeConvexHulls) {
  std::string dir = ::testing::TempDir();
  WriteCubeMeshes(dir);
  for (const char* file : {"cube_bin.stl", "cube_ascii.stl", "cube.obj"}) {
    std::string xml = std::string(R"(<robot name="r">
      <link name="base"/>
      <link name="box"><inertial><mass value="1"/><inertia ixx="0.1" iyy="0.1" izz="0.1"/></inertial>
        <collision><geometry><mesh filename=")") +
                      file + R"(" scale="2 2 0.5"/></geometry></collision></link>
      <joint name="j" type="revolute"><parent link="base"/><child link="box"/>
        <limit lower="-1" upper="1" effort="1" velocity="1"/></joint></robot>)";
    absl::StatusOr<ImportResult> r = LoadUrdfString(xml, dir);
    ASSERT_TRUE(r.ok()) << file << ": " << r.status();
    ASSERT_EQ(r->model.shapes.size(), 1u);
    const ShapeDesc& s = r->model.shapes[0];
    EXPECT_EQ(s.type, ShapeType::kConvexHull) << file;
    ASSERT_EQ(s.vertices.size(), 8u) << file;  // duplicates across triangles removed
    double max_x = 0, max_z = 0;
    for (Vec3 v : s.vertices) {
      max_x = std::max(max_x, v.x);
      max_z = std::max(max_z, v.z);
    }
    EXPECT_EQ(max_x, 2);
    EXPECT_EQ(max_z, 0.5);
    EXPECT_TRUE(Model::Compile(r->model).ok()) << file;
  }
  // package:// paths are looked up in the package directories.
  std::string xml = R"(<robot name="r"><link name="base">
      <collision><geometry><mesh filename="package://my_robot/cube.obj"/></geometry></collision></link></robot>)";
  UrdfOptions options;
  options.package_dirs = {dir};
  absl::StatusOr<ImportResult> r = LoadUrdfString(xml, "/nonexistent", options);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->model.shapes[0].vertices.size(), 8u);
}

// A 1 m cube in centimetres whose node lifts it 1 m along z and stretches it 2x along z: in
// metres it spans x, y in [-0.5, 0.5] and z in [0, 2], a 1 x 1 x 2 m block standing on its
// link's origin. Quads as a <polylist> with normals interleaved in <p>. The file says Y_UP
// over z-up data, as MeshLab writes every file; like RViz, Gazebo and pybullet, the loader
// leaves the up axis alone.
const char kColladaBlock[] = R"(<?xml version="1.0" encoding="utf-8"?>
<COLLADA xmlns="http://www.collada.org/2005/11/COLLADASchema" version="1.4.1">
  <asset><unit name="centimeter" meter="0.01"/><up_axis>Y_UP</up_axis></asset>
  <library_geometries>
    <geometry id="cube-mesh" name="cube">
      <mesh>
        <source id="cube-positions">
          <float_array id="cube-positions-array" count="24">
            -50 -50 -50  50 -50 -50  -50 50 -50  50 50 -50
            -50 -50 50   50 -50 50   -50 50 50   50 50 50</float_array>
          <technique_common><accessor source="#cube-positions-array" count="8" stride="3">
            <param name="X" type="float"/><param name="Y" type="float"/><param name="Z" type="float"/>
          </accessor></technique_common>
        </source>
        <source id="cube-normals">
          <float_array id="cube-normals-array" count="18">-1 0 0 1 0 0 0 -1 0 0 1 0 0 0 -1 0 0 1</float_array>
          <technique_common><accessor source="#cube-normals-array" count="6" stride="3"/></technique_common>
        </source>
        <vertices id="cube-vertices"><input semantic="POSITION" source="#cube-positions"/></vertices>
        <polylist count="6">
          <input semantic="VERTEX" source="#cube-vertices" offset="0"/>
          <input semantic="NORMAL" source="#cube-normals" offset="1"/>
          <vcount>4 4 4 4 4 4</vcount>
          <p>0 0 4 0 6 0 2 0  1 1 3 1 7 1 5 1  0 2 1 2 5 2 4 2  2 3 6 3 7 3 3 3
             0 4 2 4 3 4 1 4  4 5 5 5 7 5 6 5</p>
        </polylist>
      </mesh>
    </geometry>
  </library_geometries>
  <library_visual_scenes>
    <visual_scene id="Scene">
      <node id="Block"><translate>0 0 100</translate><scale>1 1 2</scale>
        <instance_geometry url="#cube-mesh"/></node>
    </visual_scene>
  </library_visual_scenes>
  <scene><instance_visual_scene url="#Scene"/></scene>
</COLLADA>
)";

// The URDF of one link, its centre of mass 1 m above its origin, whose collision geometry is
// `mesh` (a file name as URDF gives it).
std::string MeshLinkUrdf(const std::string& mesh) {
  return R"(<robot name="r"><link name="block"><inertial><origin xyz="0 0 1"/><mass value="1"/>
      <inertia ixx="1" iyy="1" izz="1"/></inertial>
      <collision><geometry><mesh filename=")" +
         mesh + R"("/></geometry></collision></link></robot>)";
}

TEST(UrdfMeshTest, ColladaMeshesTakeTheirUnitsAndNodesNotTheirUpAxis) {
  const std::string dir = ::testing::TempDir() + "/collada_block";
  std::filesystem::create_directories(dir + "/meshes");
  std::ofstream(dir + "/meshes/block.dae") << kColladaBlock;
  UrdfOptions options;
  options.package_dirs = {dir};
  options.inertia_from_collision = true;
  absl::StatusOr<ImportResult> r =
      LoadFloating(MeshLinkUrdf("package://robot/meshes/block.dae"), options);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->model.shapes.size(), 1u);
  const ShapeDesc& hull = r->model.shapes[0];
  EXPECT_EQ(hull.type, ShapeType::kConvexHull);
  ASSERT_EQ(hull.vertices.size(), 8u);
  for (const Vec3& v : hull.vertices) {
    EXPECT_NEAR(std::abs(v.x), 0.5, 1e-12);
    EXPECT_NEAR(std::abs(v.y), 0.5, 1e-12);
    EXPECT_TRUE(std::abs(v.z) < 1e-12 || std::abs(v.z - 2) < 1e-12) << v.z;
  }
  // The solid block's inertia about its centre, 1 m up.
  const BodyDesc& block = r->model.bodies[0];
  EXPECT_NEAR(block.com.z, 1, 1e-12);
  EXPECT_NEAR(block.inertia(0, 0), (1 + 4) / 12.0, 1e-12);
  EXPECT_NEAR(block.inertia(1, 1), (1 + 4) / 12.0, 1e-12);
  EXPECT_NEAR(block.inertia(2, 2), (1 + 1) / 12.0, 1e-12);

  // Dropped onto a floor, the block lands and stands on its base.
  ModelDesc desc = r->model;
  desc.bodies[0].pose.pos = {0, 0, 0.05};
  ShapeDesc floor;
  floor.type = ShapeType::kPlane;
  desc.shapes.push_back(floor);
  absl::StatusOr<std::shared_ptr<const Model>> model = Model::Compile(desc);
  ASSERT_TRUE(model.ok()) << model.status();
  SimulatorOptions sim_options;
  sim_options.backend = Backend::kCpu;
  std::unique_ptr<Simulator> sim = *Simulator::Create(sim_options);
  const WorldId world = sim->CreateWorlds(*model, 1)->front();
  ASSERT_TRUE(sim->Step({world}, {300}).ok());
  absl::StatusOr<BodyState> state = sim->GetBodyState(world);
  ASSERT_TRUE(state.ok()) << state.status();
  EXPECT_NEAR(state->pose[2], 0, 1e-3);            // the link's origin, its base, on the floor
  EXPECT_NEAR(std::abs(state->pose[3]), 1, 1e-6);  // upright
  for (int k = 0; k < 6; ++k) EXPECT_NEAR(state->velocity[k], 0, 1e-3) << k;
}

// A scene in metres that reaches its geometries every other way the format allows:
// a <matrix> (a turn of 90 degrees about z and a lift of 1 m), a <rotate>, an <instance_node>
// into a library, a mirroring <scale>, and <triangles>, <tristrips>, <trifans> and <polygons>
// (with a hole). A position no primitive names (99 99 99) stays out of the mesh.
TEST(UrdfMeshTest, ColladaScenesPlaceEveryPrimitive) {
  const char dae[] = R"(<COLLADA version="1.4.1">
  <library_geometries>
    <geometry id="square"><mesh>
      <source id="sp"><float_array id="spa" count="15">0 0 0 1 0 0 1 1 0 0 1 0 99 99 99</float_array>
        <technique_common><accessor source="#spa" count="5" stride="3"/></technique_common></source>
      <vertices id="sv"><input semantic="POSITION" source="#sp"/></vertices>
      <triangles count="2"><input semantic="VERTEX" source="#sv" offset="0"/><p>0 1 2 0 2 3</p></triangles>
    </mesh></geometry>
    <geometry id="strips"><mesh>
      <source id="tp"><float_array id="tpa" count="24">9 0 0 0 9 2 0 0 9 0 2 0 9 0 0 3 9 0 0 4 9 0 0 5</float_array>
        <technique_common><accessor source="#tpa" count="6" stride="4" offset="1"/></technique_common></source>
      <vertices id="tv"><input semantic="POSITION" source="#tp"/></vertices>
      <tristrips count="1"><input semantic="VERTEX" source="#tv" offset="0"/><p>0 1 2 3</p></tristrips>
      <trifans count="1"><input semantic="VERTEX" source="#tv" offset="0"/><p>0 2 4</p></trifans>
      <polygons count="1"><input semantic="VERTEX" source="#tv" offset="0"/><ph><p>0 1 5</p><h>2 3 4</h></ph></polygons>
    </mesh></geometry>
  </library_geometries>
  <library_nodes><node id="mirrored"><scale>-1 1 1</scale><instance_geometry url="#strips"/></node></library_nodes>
  <library_visual_scenes><visual_scene id="s">
    <node><matrix>0 -1 0 0  1 0 0 0  0 0 1 1  0 0 0 1</matrix><instance_geometry url="#square"/></node>
    <node><rotate>0 0 1 180</rotate><instance_node url="#mirrored"/></node>
  </visual_scene></library_visual_scenes>
  <scene><instance_visual_scene url="#s"/></scene></COLLADA>)";
  const std::string dir = ::testing::TempDir();
  std::ofstream(dir + "/scene.dae") << dae;
  absl::StatusOr<ImportResult> r = LoadFloating(MeshLinkUrdf("scene.dae"));
  ASSERT_FALSE(r.ok());  // a relative path is the URDF's directory's: "" here
  r = LoadUrdfString(MeshLinkUrdf("scene.dae"), dir);
  ASSERT_TRUE(r.ok()) << r.status();
  // The square turned onto x <= 0 at z = 1; the strips' points (read past the 9s that pad
  // each) mirrored in x, then turned half a turn about z: (x, y, z) -> (x, -y, z).
  std::vector<std::array<double, 3>> expected = {
      {0, 0, 1}, {0, 1, 1}, {-1, 1, 1}, {-1, 0, 1},  // the square
      {0, 0, 0}, {2, 0, 0}, {0, -2, 0}, {0, 0, 3},   // the strip's four
      {0, 0, 4},                                     // the fan's third
      {0, 0, 5}};                                    // the polygon's (its hole adds none)
  std::vector<std::array<double, 3>> loaded;
  for (const Vec3& v : r->model.shapes[0].vertices) loaded.push_back({v.x, v.y, v.z});
  for (auto& p : loaded)
    for (double& c : p) c = std::round(c * 1e9) / 1e9 + 0.0;  // -0 and round-off off
  std::sort(expected.begin(), expected.end());
  std::sort(loaded.begin(), loaded.end());
  EXPECT_EQ(loaded, expected);
}

TEST(UrdfMeshTest, MalformedColladaFilesAreRefusedWithTheirLine) {
  const std::string dir = ::testing::TempDir();
  struct Case {
    std::string dae;
    std::vector<std::string> needles;
  };
  const std::string geometry_head =
      R"(<COLLADA><library_geometries><geometry id="g"><mesh>
      <source id="p"><float_array id="a" count="9">0 0 0 1 0 0 0 1 0</float_array></source>
      <vertices id="v"><input semantic="POSITION" source="#p"/></vertices>
)";
  const std::string scene_tail = R"(
      </mesh></geometry></library_geometries>
      <library_visual_scenes><visual_scene id="s"><node><instance_geometry url="#g"/></node>
      </visual_scene></library_visual_scenes></COLLADA>)";
  std::vector<Case> cases = {
      {"<COLLADA>\n<asset>\n</COLLADA>", {"bad.dae", "line 2", "malformed XML"}},
      {"<robot/>", {"not a COLLADA document", "<robot>"}},
      {R"(<COLLADA><asset><unit meter="-1"/></asset></COLLADA>)",
       {"<unit>", "'meter'", "positive"}},
      {geometry_head +
           R"(<triangles count="1"><input semantic="VERTEX" source="#v" offset="0"/><p>0 1 3</p></triangles>)" +
           scene_tail,
       {"line 4", "<p>", "names position 3", "has 3"}},
      {geometry_head +
           R"(<triangles count="1"><input semantic="VERTEX" source="#v" offset="0"/><p>0 1 x</p></triangles>)" +
           scene_tail,
       {"<p>", "not a non-negative integer"}},
      {geometry_head +
           R"(<polylist count="1"><input semantic="VERTEX" source="#v" offset="0"/><vcount>4</vcount><p>0 1 2</p></polylist>)" +
           scene_tail,
       {"<vcount>", "more corners than <p> has"}},
      {R"(<COLLADA><library_visual_scenes><visual_scene id="s"><node><instance_geometry url="#gone"/>
       </node></visual_scene></library_visual_scenes></COLLADA>)",
       {"line 1", "<instance_geometry>", "no <geometry> with id 'gone'"}},
      {R"(<COLLADA><library_nodes><node id="n"><instance_node url="#n"/></node></library_nodes>
       <library_visual_scenes><visual_scene id="s"><instance_node url="#n"/><node><instance_node url="#n"/>
       </node></visual_scene></library_visual_scenes></COLLADA>)",
       {"nest more than 64"}},
      {R"(<COLLADA><library_geometries/></COLLADA>)", {"places no triangles"}},
  };
  // Each node instancing the next twice: 2^30 paths through 30 nodes.
  std::string doubling = "<COLLADA><library_nodes>";
  for (int i = 0; i < 30; ++i) {
    doubling += absl::StrCat("<node id=\"n", i, "\"><instance_node url=\"#n", i + 1,
                             "\"/><instance_node url=\"#n", i + 1, "\"/></node>");
  }
  doubling += R"(<node id="n30"/></library_nodes><library_visual_scenes><visual_scene id="s">
      <node><instance_node url="#n0"/></node></visual_scene></library_visual_scenes></COLLADA>)";
  cases.push_back({doubling, {"instances more than 1048576 nodes"}});
  for (const Case& c : cases) {
    std::ofstream(dir + "/bad.dae") << c.dae;
    absl::StatusOr<ImportResult> r = LoadUrdfString(MeshLinkUrdf("bad.dae"), dir);
    ASSERT_FALSE(r.ok()) << c.dae;
    EXPECT_NE(r.status().message().find("link 'block'"), std::string::npos) << r.status();
    for (const std::string& needle : c.needles) {
      EXPECT_NE(r.status().message().find(needle), std::string::npos)
          << "'" << needle << "' not in: " << r.status().message();
    }
  }
}

// A ROS workspace: packages sit in repositories below its src/, some in a directory named
// otherwise than the package (its package.xml names it). package:// paths find them there.
TEST(UrdfMeshTest, PackagesAreFoundInAWorkspace) {
  const std::string src = ::testing::TempDir() + "/ws_crawl/src";
  const std::string robot = src + "/robots_repo/descriptions/my_robot";
  const std::string gripper = src + "/grippers/gripper_pkg_dir";
  for (const std::string& dir : {robot + "/meshes", gripper + "/meshes"})
    std::filesystem::create_directories(dir);
  WriteCubeMeshes(robot + "/meshes");
  WriteCubeMeshes(gripper + "/meshes");
  std::ofstream(robot + "/package.xml") << "<package format=\"2\"><name>my_robot</name></package>";
  std::ofstream(gripper + "/package.xml") << "<package><name> gripper </name></package>";
  // a package of the same name inside another package is not one ROS would find
  std::filesystem::create_directories(gripper + "/test/my_robot/meshes");
  std::ofstream(gripper + "/test/my_robot/package.xml") << "<package/>";
  std::string xml = R"(<robot name="r"><link name="base">
      <collision><geometry><mesh filename="package://my_robot/meshes/cube.obj"/></geometry></collision>
      <collision><geometry><mesh filename="package://gripper/meshes/cube_bin.stl" scale="2 2 2"/></geometry></collision>
      </link></robot>)";
  UrdfOptions options;
  options.package_dirs = {src};
  absl::StatusOr<ImportResult> r = LoadUrdfString(xml, "/nonexistent", options);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->model.shapes.size(), 2u);
  EXPECT_EQ(r->model.shapes[0].vertices.size(), 8u);
  EXPECT_EQ(r->model.shapes[1].vertices.size(), 8u);
  // Without the workspace, the error names the file it could not find.
  absl::StatusOr<ImportResult> missing = LoadUrdfString(xml, "/nonexistent");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("package://my_robot/meshes/cube.obj"),
            std::string::npos)
      << missing.status();
}

TEST(UrdfErrorTest, ClearErrors) {
  struct Case {
    std::string xml;
    std::vector<std::string> needles;
  };
  std::vector<Case> cases = {
      {"<robot name=\"r\">\n<link name=\"a\">\n</robot>", {"<string>:2:", "malformed XML"}},
      {R"(<robot name="r"><link name="a"><collision><geometry><mesh filename="missing_part.stl"/></geometry></collision></link></robot>)",
       {"link 'a'", "'filename'", "missing_part.stl", "not found"}},
      {R"(<robot name="r"><link name="a"><inertial><mass value="-1"/><inertia ixx="1" iyy="1" izz="1"/></inertial></link></robot>)",
       {"link 'a'", "'value'", "negative"}},
      {R"(<robot name="r"><link name="a"/><link name="b"/>
          <joint name="j" type="revolute"><parent link="a"/><child link="b"/><limit effort="1"/></joint></robot>)",
       {"link 'b'", "mass must be positive", "joint 'j'"}},
      {R"(<robot name="r"><link name="a"/><joint name="j" type="hinge"><parent link="a"/><child link="a"/></joint></robot>)",
       {"joint 'j'", "'type'", "hinge"}},
      {R"(<robot name="r"><link name="a"/><joint name="j" type="fixed"><parent link="a"/><child link="zz"/></joint></robot>)",
       {"joint 'j'", "unknown link 'zz'"}},
      {R"(<robot name="r"><link name="a"/><link name="b"/></robot>)", {"root"}},
      {R"(<robot name="r"><link name="a"><inertial><mass value="1"/><inertia ixx="1" iyy="-1" izz="1"/></inertial></link></robot>)",
       {"link 'a'", "positive definite"}},
      {R"(<mujoco/>)", {"<robot>"}},
      // found by tests/fuzz: a link on a cycle of joints apart from the tree was dropped, and
      // a mimic joint on it threw out of the loader
      {R"(<robot name="r"><link name="a"/><link name="b"/>
          <joint name="j" type="fixed"><parent link="b"/><child link="b"/></joint></robot>)",
       {"joint 'j'", "link 'b' is its own parent"}},
      {R"(<robot name="r"><link name="a"/><link name="b"/><link name="c"/>
          <joint name="bc" type="fixed"><parent link="b"/><child link="c"/></joint>
          <joint name="cb" type="fixed"><parent link="c"/><child link="b"/></joint></robot>)",
       {"link 'b'", "not connected to the root link 'a'", "cycle"}},
      {R"(<robot name="r"><link name="a"/><link name="b"/><link name="c"/>
          <joint name="j" type="fixed"><parent link="a"/><child link="b"/></joint>
          <joint name="j" type="fixed"><parent link="b"/><child link="c"/></joint></robot>)",
       {"joint 'j'", "'name'", "is used twice"}},
  };
  for (const Case& c : cases) {
    absl::StatusOr<ImportResult> r = LoadUrdfString(c.xml, "/nonexistent");
    ASSERT_FALSE(r.ok()) << c.xml;
    for (const std::string& needle : c.needles) {
      EXPECT_NE(r.status().message().find(needle), std::string::npos)
          << "'" << needle << "' not in: " << r.status().message();
    }
  }
}

TEST(UrdfWarningTest, UnsupportedElementsAreNamed) {
  std::string xml = R"(<robot name="r">
    <link name="a"><collision><geometry><capsule radius="1" length="2"/></geometry></collision></link>
    <transmission name="t"/><gazebo/>
  </robot>)";
  absl::StatusOr<ImportResult> r = LoadUrdfString(xml, "");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(HasWarning(*r, "<capsule>"));
  EXPECT_TRUE(HasWarning(*r, "<transmission>"));
  EXPECT_TRUE(HasWarning(*r, "<gazebo>"));
}

}  // namespace
}  // namespace axion
