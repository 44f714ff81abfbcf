// Standard scenes shared by the tests and the benchmarks, so that a "10-link chain" or a
// "10-box stack" means the same thing in every table and every parity test.
#pragma once

#include <cmath>
#include <cstdint>
#include <string>
#include <utility>

#include "axion/model.h"

namespace axion::scenes {

// Inertia of a solid box with half extents `half` about its centre.
inline Mat33 BoxInertia(Real mass, Vec3 half) {
  Real x = 2 * half.x, y = 2 * half.y, z = 2 * half.z;
  return mat33_diag(
      {mass * (y * y + z * z) / 12, mass * (x * x + z * z) / 12, mass * (x * x + y * y) / 12});
}

inline Mat33 SphereInertia(Real mass, Real radius) {
  Real i = Real(0.4) * mass * radius * radius;
  return mat33_diag({i, i, i});
}

// `count` free bodies tumbling under gravity, no contacts.
inline ModelDesc FreeBodies(int count) {
  ModelDesc d;
  for (int i = 0; i < count; ++i) {
    BodyDesc b;
    b.mass = 1 + Real(0.1) * i;
    b.inertia = BoxInertia(b.mass, {0.1, 0.2, 0.3});
    b.pose.pos = {Real(i), 0, 1};
    b.angular_velocity = {1, 2, 3};
    d.bodies.push_back(b);
  }
  return d;
}

// A chain of `links` 0.5 m boxes hinged about y end to end, link 0 to the world at the origin,
// released horizontally along +x.
inline ModelDesc Chain(int links) {
  ModelDesc d;
  for (int i = 0; i < links; ++i) {
    BodyDesc b;
    b.mass = 1;
    b.inertia = BoxInertia(1, {0.25, 0.02, 0.02});
    b.pose.pos = {Real(0.25) + Real(0.5) * i, 0, 0};
    d.bodies.push_back(b);
    JointDesc j;
    j.parent = i == 0 ? kWorldBody : i - 1;
    j.child = i;
    j.child_frame.pos = {-0.25, 0, 0};
    j.axis = Vec3{0, 1, 0};
    d.joints.push_back(j);
  }
  return d;
}

// Adds a solid box body of half extents `half` at `pos` with its box shape; returns the body.
inline int AddBox(ModelDesc& d, Vec3 pos, Vec3 half, Real mass = 1) {
  BodyDesc b;
  b.mass = mass;
  b.inertia = BoxInertia(mass, half);
  b.pose.pos = pos;
  d.bodies.push_back(b);
  ShapeDesc s;
  s.body = static_cast<int>(d.bodies.size()) - 1;
  s.type = ShapeType::kBox;
  s.size = half;
  d.shapes.push_back(s);
  return s.body;
}

// `count` 0.2 m boxes stacked on a ground plane, touching.
inline ModelDesc Stack(int count) {
  ModelDesc d;
  ShapeDesc ground;
  ground.type = ShapeType::kPlane;
  d.shapes.push_back(ground);
  for (int i = 0; i < count; ++i) AddBox(d, {0, 0, Real(0.1) + Real(0.2) * i}, {0.1, 0.1, 0.1});
  return d;
}

// Three slides to the world for body `child`: it translates freely, its rotation held
// (JointFixesRotation).
inline JointDesc SlidesToWorld(int child) {
  JointDesc slides;
  slides.type = JointType::kGeneric;
  slides.child = child;
  slides.axis_mode = {AxisMode::kFree,   AxisMode::kFree,   AxisMode::kFree,
                      AxisMode::kLocked, AxisMode::kLocked, AxisMode::kLocked};
  return slides;
}

// `count` spheres of radius 0.1 m dropped in layers of 25 into an open box (floor and four walls);
// `on_slides`: each on three slides to the world, its rotation held (JointFixesRotation).
inline ModelDesc SpheresInBox(int count, bool on_slides = false) {
  ModelDesc d;
  ShapeDesc floor;
  floor.type = ShapeType::kPlane;
  d.shapes.push_back(floor);
  const Real half = 0.6;
  for (int side = 0; side < 4; ++side) {
    ShapeDesc wall;
    wall.type = ShapeType::kBox;
    bool x = side < 2;
    Real sign = side % 2 == 0 ? 1 : -1;
    wall.pose.pos =
        x ? Vec3{sign * (half + Real(0.05)), 0, 0.5} : Vec3{0, sign * (half + Real(0.05)), 0.5};
    wall.size = x ? Vec3{0.05, half + Real(0.1), 0.5} : Vec3{half + Real(0.1), 0.05, 0.5};
    d.shapes.push_back(wall);
  }
  for (int i = 0; i < count; ++i) {
    BodyDesc b;
    b.mass = 0.5;
    b.inertia = SphereInertia(b.mass, 0.1);
    int layer = i / 25, k = i % 25;
    b.pose.pos = {Real(-0.48) + Real(0.24) * (k % 5) + Real(0.01) * layer,
                  Real(-0.48) + Real(0.24) * (k / 5), Real(0.12) + Real(0.22) * layer};
    d.bodies.push_back(b);
    ShapeDesc s;
    s.body = i;
    s.type = ShapeType::kSphere;
    s.size = {0.1, 0, 0};
    d.shapes.push_back(s);
    if (on_slides) d.joints.push_back(SlidesToWorld(i));
  }
  d.contact_capacity = 8 * count;
  return d;
}

// SpheresInBox's spheres with torsional (0.02 m) and rolling (0.01 m) friction, contact
// dimension 6, each spun about the vertical at 5 rad/s.
inline ModelDesc SpinningSpheresInBox(int count) {
  ModelDesc d = SpheresInBox(count);
  for (ShapeDesc& shape : d.shapes) {
    shape.contact_dim = 6;
    shape.material.torsional_friction = Real(0.02);
    shape.material.rolling_friction = Real(0.01);
  }
  for (BodyDesc& body : d.bodies) body.angular_velocity = {0, 0, 5};
  return d;
}

// Rough terrain: a 4 m x 4 m height field of 41 x 41 points (bumps of 0.17 m over 10 cm
// cells), with a box, a capsule, a ball, a cylinder and a convex hull dropped onto it, each
// landing across several cells.
inline ModelDesc BodiesOnTerrain() {
  ModelDesc d;
  d.options.timestep = 0.005;
  ShapeDesc terrain;
  terrain.name = "terrain";
  terrain.type = ShapeType::kHeightField;
  terrain.size = {2, 2, 0.5};
  terrain.material.friction = 0.8;
  terrain.heightfield.rows = terrain.heightfield.cols = 41;
  for (int r = 0; r < 41; ++r) {
    for (int c = 0; c < 41; ++c) {
      const Real x = Real(-2) + Real(0.1) * c, y = Real(-2) + Real(0.1) * r;
      terrain.heightfield.heights.push_back(Real(0.12) * std::sin(Real(2.5) * x) *
                                                std::cos(Real(1.7) * y) +
                                            Real(0.05) * std::sin(7 * x + 3 * y));
    }
  }
  d.shapes.push_back(terrain);
  const ShapeType types[] = {ShapeType::kBox, ShapeType::kCapsule, ShapeType::kSphere,
                             ShapeType::kCylinder, ShapeType::kConvexHull};
  for (int i = 0; i < 5; ++i) {
    BodyDesc b;
    b.mass = 1;
    b.inertia = BoxInertia(b.mass, {0.15, 0.12, 0.1});
    b.pose.pos = {Real(-1.2) + Real(0.6) * i, Real(0.3) * (i % 2), Real(0.6)};
    b.pose.quat = quat_from_axis_angle(normalized(Vec3{1, Real(0.5) * i, 2}), Real(0.3) * i);
    d.bodies.push_back(b);
    ShapeDesc s;
    s.body = i;
    s.type = types[i];
    s.size = types[i] == ShapeType::kBox ? Vec3{0.15, 0.12, 0.1} : Vec3{0.1, 0.12, 0};
    if (types[i] == ShapeType::kConvexHull) {
      for (int k = 0; k < 8; ++k)
        s.vertices.push_back({k & 1 ? Real(0.14) : Real(-0.12), k & 2 ? Real(0.1) : Real(-0.13),
                              k & 4 ? Real(0.09) : Real(-0.11)});
    }
    s.material.friction = 0.8;
    d.shapes.push_back(s);
  }
  return d;
}

// A hand hung from the world by a ball joint that turns at most 0.4 rad (with damping), thrown
// sideways so the cone binds; two fingers hinged on it, the second coupled to the first in
// mirror (y = -x) and held by dry friction of 0.002 N m; a position servo on the first, bounded
// to 0.3 N m, sent to 0.8 rad. Every row kind of a robot file's joints: cone limit, ball drive,
// coupling through three bodies (it lists the hand twice), saturating servo, friction loss.
inline ModelDesc RobotJoints() {
  ModelDesc d;
  d.options.timestep = 0.01;
  BodyDesc hand;
  hand.name = "hand";
  hand.mass = 1;
  hand.inertia = BoxInertia(1, {0.1, 0.05, 0.15});
  hand.pose.pos = {0, 0, -0.15};
  hand.angular_velocity = {3, 0, 1};
  hand.linear_velocity = cross(hand.angular_velocity, hand.pose.pos);
  d.bodies.push_back(hand);
  for (int i = 0; i < 2; ++i) {
    BodyDesc finger;
    finger.mass = 0.2;
    finger.inertia = BoxInertia(0.2, {0.01, 0.01, 0.05});
    finger.pose.pos = {Real(i == 0 ? -0.05 : 0.05), 0, -0.35};
    d.bodies.push_back(finger);
  }
  JointDesc wrist;
  wrist.type = JointType::kBall;
  wrist.child = 0;
  wrist.child_frame.pos = {0, 0, 0.15};
  wrist.limited = true;
  wrist.upper = {0.4};
  wrist.drive.damping = 0.05;
  d.joints.push_back(wrist);
  for (int i = 0; i < 2; ++i) {
    JointDesc knuckle;
    knuckle.parent = 0;
    knuckle.child = 1 + i;
    knuckle.child_frame.pos = {0, 0, 0.05};
    knuckle.axis = Vec3{0, 1, 0};
    knuckle.friction_loss = i == 1 ? 0.002 : 0;
    d.joints.push_back(knuckle);
  }
  ActuatorDesc servo;
  servo.joint = 1;
  servo.type = ActuatorType::kPosition;
  servo.kp = 20;
  servo.kv = 1;
  servo.force_limited = true;
  servo.force_min = -0.3;
  servo.force_max = 0.3;
  d.actuators.push_back(servo);
  JointCouplingDesc mirror;
  mirror.joint = 2;
  mirror.leader_joint = 1;
  mirror.polynomial = {0, -1, 0, 0, 0};
  d.couplings.push_back(mirror);
  return d;
}

// RobotJoints with its coupling replaced by tendons: the knuckles' angles apart by at most 0.2
// rad (L = q1 - q2 limited), a spring-damper with dry friction along half the second, and a
// bounded servo on the first tendon pulling it to zero.
inline ModelDesc RobotJointsWithTendons() {
  ModelDesc d = RobotJoints();
  d.couplings.clear();
  TendonDesc span;
  span.name = "span";
  span.joints = {{1, 0, 1}, {2, 0, -1}};
  span.limited = true;
  span.lower = -0.2;
  span.upper = 0.2;
  TendonDesc spring;
  spring.name = "spring";
  spring.joints = {{2, 0, 0.5}};
  spring.stiffness = 2;
  spring.damping = 0.1;
  spring.friction_loss = 0.01;
  d.tendons = {span, spring};
  ActuatorDesc servo;
  servo.name = "span_servo";
  servo.type = ActuatorType::kPosition;
  servo.tendon = 0;
  servo.kp = 5;
  servo.kv = 0.2;
  servo.force_limited = true;
  servo.force_min = -0.1;
  servo.force_max = 0.1;
  d.actuators.push_back(servo);
  return d;
}

// Systems that touch nothing of each other in one world, so each is an island of its own
// (kernels_solver.h, world_build_islands): a 5-link chain hung at the origin, released
// horizontally; two boxes dropped onto the floor and onto each other at y = 3 (they land, the
// top one sliding); and, when `wedged`, a box held by a slide 1 mm inside a static pad at
// y = -3, whose joint and contact contradict each other, so its solve never converges. (The pad
// is a box: the floor plane itself would leave the pair out, Model::pair_rules.)
inline ModelDesc Islands(bool wedged) {
  ModelDesc d = Chain(5);
  ShapeDesc floor;
  floor.type = ShapeType::kPlane;
  d.shapes.push_back(floor);
  const int bottom = AddBox(d, {0, 3, 0.15}, {0.1, 0.1, 0.1});
  const int top = AddBox(d, {0.03, 3, 0.4}, {0.1, 0.1, 0.1});
  d.bodies[bottom].linear_velocity = {0.2, 0, 0};
  d.bodies[top].linear_velocity = {-0.4, 0, 0};
  if (wedged) {
    JointDesc slide;
    slide.type = JointType::kPrismatic;
    slide.child = AddBox(d, {0, -3, 0.099}, {0.1, 0.1, 0.1});
    slide.axis = Vec3{1, 0, 0};
    d.joints.push_back(slide);
    ShapeDesc pad;
    pad.type = ShapeType::kBox;
    pad.pose.pos = {0, -3, -0.05};
    pad.size = {0.3, 0.3, 0.05};
    d.shapes.push_back(pad);
  }
  return d;
}

// An arm 1 m long (a capsule of radius 0.05, hinged at the origin about z) turning at `omega`
// rad/s towards a post, a static sphere of radius 0.05 at kArmPost; no gravity, h = 0.05 s. At
// 20 rad/s it would turn 1 rad in the step, through the post: the contact's row, linearised at
// the step's start, stops it where the arm lies inside the post, which the contact redos take
// again (SolverOptions::contact_redos, kernels_contact.h world_find_missed_contacts).
inline constexpr Vec3 kArmPost{0.6, 0.4, 0};
inline ModelDesc ArmTurningIntoPost(Real omega) {
  ModelDesc d;
  d.options.timestep = 0.05;
  d.options.gravity = {0, 0, 0};
  BodyDesc arm;
  arm.name = "arm";
  arm.mass = 1;
  arm.inertia = BoxInertia(1, {0.5, 0.05, 0.05});
  arm.pose.pos = {0.5, 0, 0};
  arm.angular_velocity = {0, 0, omega};
  arm.linear_velocity = {0, Real(0.5) * omega, 0};
  d.bodies.push_back(arm);
  JointDesc hinge;
  hinge.type = JointType::kRevolute;
  hinge.child = 0;
  hinge.child_frame.pos = {-0.5, 0, 0};
  hinge.axis = Vec3{0, 0, 1};
  d.joints.push_back(hinge);
  ShapeDesc rod;
  rod.body = 0;
  rod.type = ShapeType::kCapsule;
  rod.size = {0.05, 0.5, 0};
  rod.pose.quat = quat_from_axis_angle({0, 1, 0}, Real(1.5707963267948966));  // z along the arm
  d.shapes.push_back(rod);
  ShapeDesc post;
  post.type = ShapeType::kSphere;
  post.size = {0.05, 0, 0};
  post.pose.pos = kArmPost;
  d.shapes.push_back(post);
  return d;
}

// A paddle (a box on mocap body 0, starting at x = -0.2 on the floor) and two 1 kg balls of
// 5 cm radius: body 0 resting on the floor at x = 0.1, ahead of the paddle; body 1 at
// (-0.2, 0, 0.5), welded 0.4 m above the paddle (a fixed joint whose parent side is on the
// mocap body). Moving the mocap body pushes the first and carries the second.
inline ModelDesc MocapPaddle() {
  ModelDesc d;
  d.options.timestep = 0.01;
  d.mocap_bodies.push_back({"paddle", Pose{{-0.2, 0, 0.1}, {}}});
  ShapeDesc floor;
  floor.type = ShapeType::kPlane;
  d.shapes.push_back(floor);
  ShapeDesc paddle;
  paddle.name = "paddle";
  paddle.type = ShapeType::kBox;
  paddle.mocap = 0;
  paddle.size = {0.05, 0.2, 0.1};
  d.shapes.push_back(paddle);
  const char* names[] = {"ball", "handle"};
  const Vec3 positions[] = {{0.1, 0, 0.05}, {-0.2, 0, 0.5}};
  for (int i = 0; i < 2; ++i) {
    BodyDesc body;
    body.name = names[i];
    body.mass = 1;
    body.inertia = SphereInertia(1, 0.05);
    body.pose.pos = positions[i];
    d.bodies.push_back(body);
    ShapeDesc sphere;
    sphere.body = i;
    sphere.size = {0.05, 0, 0};
    d.shapes.push_back(sphere);
  }
  JointDesc weld;
  weld.name = "weld";
  weld.type = JointType::kFixed;
  weld.child = 1;
  weld.parent_mocap = 0;
  d.joints.push_back(weld);
  return d;
}

// 72 spheres of 2.5 cm in nine columns of eight, 7 cm apart, each offset by up to 5 mm (a fixed
// sequence), dropped at h = 0.01 s into a box of four walls (friction 1): the columns topple
// into a pile whose contacts slide and stick in turn (ContactTest's presolve tests).
inline ModelDesc ToppledPile(int presolve_sweeps) {
  constexpr int kColumns = 3, kLayers = 8;
  constexpr Real kRadius = 0.025, kSpacing = 0.07, kHalfWidth = 0.12;
  ModelDesc d;
  d.options.timestep = 0.01;
  d.options.contact_presolve_sweeps = presolve_sweeps;
  ShapeDesc floor;
  floor.name = "ground";
  floor.type = ShapeType::kPlane;
  floor.material.friction = 1.0;
  d.shapes.push_back(floor);
  // four walls: planes whose normals point into the box
  const Vec3 x{1, 0, 0}, y{0, 1, 0};
  const Real quarter = Real(1.5707963267948966);
  const std::pair<Vec3, Quat> walls[4] = {{{-kHalfWidth, 0, 0}, quat_from_axis_angle(y, quarter)},
                                          {{kHalfWidth, 0, 0}, quat_from_axis_angle(y, -quarter)},
                                          {{0, -kHalfWidth, 0}, quat_from_axis_angle(x, -quarter)},
                                          {{0, kHalfWidth, 0}, quat_from_axis_angle(x, quarter)}};
  for (const auto& [pos, rot] : walls) {
    ShapeDesc wall = floor;
    wall.pose.quat = rot;
    wall.name = "wall" + std::to_string(d.shapes.size());
    wall.pose.pos = pos;
    d.shapes.push_back(wall);
  }
  uint32_t seed = 1;  // a fixed sequence of offsets in [-5, 5] mm
  auto jitter = [&seed] {
    seed = seed * 1664525u + 1013904223u;
    return Real(0.005) * (Real(seed >> 8) / Real(1 << 24) * 2 - 1);
  };
  for (int i = 0; i < kColumns; ++i) {
    for (int j = 0; j < kColumns; ++j) {
      for (int k = 0; k < kLayers; ++k) {
        BodyDesc b;
        b.name = "sphere" + std::to_string(d.bodies.size());
        b.mass = 0.0654;
        b.inertia = SphereInertia(b.mass, kRadius);
        b.pose.pos = {kSpacing * (i - 1) + jitter(), kSpacing * (j - 1) + jitter(),
                      0.3 + kSpacing * k};
        ShapeDesc s;
        s.body = static_cast<int>(d.bodies.size());
        s.type = ShapeType::kSphere;
        s.size = {kRadius, 0, 0};
        s.material.friction = 1.0;
        d.bodies.push_back(b);
        d.shapes.push_back(s);
      }
    }
  }
  return d;
}

}  // namespace axion::scenes
