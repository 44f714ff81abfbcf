// URDF importer: links and joints into bodies and joints by the rules in axion/urdf.h.
#include "axion/urdf.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "collision/collision.h"
#include "collision/hull.h"
#include "collision/mass.h"
#include "io/io_util.h"
#include "tinyxml2.h"

namespace axion {
namespace {

using tinyxml2::XMLDocument;
using tinyxml2::XMLElement;

struct UrdfLink {
  std::string name;
  std::string where;
  Real mass = 0;
  Vec3 com;
  Mat33 inertia;
  std::vector<ShapeDesc> shapes;  // poses in the link frame
  int parent_joint = -1;
  std::vector<int> child_joints;
  Pose world;             // with every joint at zero
  int body = kWorldBody;  // Axion body carrying this link
  Pose offset;            // link frame in that body's frame
};

struct UrdfJoint {
  std::string name;
  std::string where;
  std::string type;
  int parent = -1, child = -1;  // link indices
  Pose origin;                  // child link frame in the parent link frame
  Vec3 axis{1, 0, 0};
  bool has_limit = false;
  Real lower = 0, upper = 0, effort = 0, velocity = 0;
  bool unlimited = false;  // lower above upper in the file: no limits (pybullet's convention)
  Real damping = 0, friction = 0;
  // <mimic joint multiplier offset>: q = multiplier q_leader + offset
  std::string mimic, mimic_where;
  Real mimic_multiplier = 1, mimic_offset = 0;
};

class UrdfLoader {
 public:
  explicit UrdfLoader(const UrdfOptions& options) : options_(options) {}
  absl::StatusOr<ImportResult> Load(std::string_view xml, const std::string& file,
                                    const std::string& base_dir);

 private:
  std::string Where(const XMLElement* e) const { return absl::StrCat(file_, ":", e->GetLineNum()); }
  absl::Status Error(const XMLElement* e, const std::string& what, const std::string& name,
                     const std::string& attribute, const std::string& problem) const {
    std::string subject = name.empty() ? what : absl::StrCat(what, " '", name, "'");
    if (attribute.empty()) {
      return absl::InvalidArgumentError(absl::StrCat(Where(e), ": ", subject, ": ", problem));
    }
    return absl::InvalidArgumentError(
        absl::StrCat(Where(e), ": ", subject, ": attribute '", attribute, "': ", problem));
  }
  // Reads `count` reals from attribute `key` of `e` (absent: fallback, or an error if required).
  absl::StatusOr<std::vector<Real>> Reals(const XMLElement* e, const std::string& owner,
                                          const std::string& owner_name, const char* key,
                                          size_t count, std::vector<Real> fallback,
                                          bool required = false) const;
  // One optional number of joint `joint`'s element `e` into *out (`fallback` when absent).
  absl::Status JointScalar(const XMLElement* e, const std::string& joint, const char* key,
                           Real fallback, Real* out) const {
    AXION_IO_ASSIGN_OR_RETURN(std::vector<Real> v, Reals(e, "joint", joint, key, 1, {fallback}));
    *out = v[0];
    return absl::OkStatus();
  }
  absl::StatusOr<Pose> Origin(const XMLElement* parent, const std::string& owner,
                              const std::string& owner_name) const;
  absl::Status ParseLink(const XMLElement* e);
  absl::Status ParseJoint(const XMLElement* e);
  absl::StatusOr<bool> ParseGeometry(const XMLElement* collision, const std::string& link,
                                     ShapeDesc* shape);
  absl::StatusOr<std::string> ResolveMesh(const XMLElement* e, const std::string& link,
                                          const std::string& filename) const;
  void WarnUnknownChildren(const XMLElement* e, const std::string& context,
                           const std::set<std::string>& known);
  absl::Status Build();
  absl::Status Couple();
  absl::Status InertiaFromCollision(const XMLElement* e, UrdfLink* link);
  absl::Status ExcludeOverlappingLinks();

  const UrdfOptions& options_;
  mutable io::Warnings warnings_;  // also added to while reading attributes (Reals)
  std::string file_;
  std::string base_dir_;
  std::vector<UrdfLink> links_;
  std::vector<UrdfJoint> joints_;
  std::map<std::string, int> link_index_;
  ImportResult result_;
};

absl::StatusOr<std::vector<Real>> UrdfLoader::Reals(const XMLElement* e, const std::string& owner,
                                                    const std::string& owner_name, const char* key,
                                                    size_t count, std::vector<Real> fallback,
                                                    bool required) const {
  const char* attribute = e->Attribute(key);
  if (!attribute) {
    if (required)
      return Error(e, owner, owner_name, key, absl::StrCat("<", e->Name(), "> needs it"));
    return fallback;
  }
  // ROS substitution args a xacro run left in the file, "$(optenv NAME DEFAULT)": the default,
  // as roslaunch takes it when NAME is unset. The server's own environment is never read (a
  // client's file must not learn it); "$(env NAME)", which has no default, is an error.
  std::string text = attribute;
  for (size_t start = text.find("$("); start != std::string::npos; start = text.find("$(")) {
    const size_t end = text.find(')', start);
    std::vector<std::string> words = absl::StrSplit(
        text.substr(start + 2, end == std::string::npos ? std::string::npos : end - start - 2), ' ',
        absl::SkipEmpty());
    if (end == std::string::npos || words.size() < 3 || words[0] != "optenv") {
      return Error(e, owner, owner_name, key,
                   absl::StrCat("'", attribute,
                                "': a substitution arg other than $(optenv NAME DEFAULT), which "
                                "needs the environment of a ROS launch"));
    }
    text.replace(start, end - start + 1, absl::StrJoin(words.begin() + 2, words.end(), " "));
    warnings_.Add("substitution-args",
                  absl::StrCat("ROS substitution args take their defaults (first: ", Where(e),
                               ": '", attribute, "' read as '", text, "')"));
  }
  std::vector<Real> values;
  if (!io::ParseReals(text, &values)) {
    return Error(e, owner, owner_name, key,
                 absl::StrCat("'", text, "' is not a list of finite numbers"));
  }
  if (values.size() > count && count == 3) {
    // pybullet reads the first three of a longer vector; so does Axion, saying so
    warnings_.Add("long-vector",
                  absl::StrCat("vectors of more than 3 numbers are read by their first 3, as "
                               "pybullet reads them (first: ",
                               Where(e), ": ", key, "='", text, "')"));
    values.resize(3);
  }
  if (values.size() != count) {
    return Error(e, owner, owner_name, key,
                 absl::StrCat("expected ", count, " numbers, got ", values.size()));
  }
  return values;
}

absl::StatusOr<Pose> UrdfLoader::Origin(const XMLElement* parent, const std::string& owner,
                                        const std::string& owner_name) const {
  const XMLElement* origin = parent->FirstChildElement("origin");
  if (!origin) return Pose{};
  AXION_IO_ASSIGN_OR_RETURN(std::vector<Real> xyz,
                            Reals(origin, owner, owner_name, "xyz", 3, {0, 0, 0}));
  AXION_IO_ASSIGN_OR_RETURN(std::vector<Real> rpy,
                            Reals(origin, owner, owner_name, "rpy", 3, {0, 0, 0}));
  return Pose{{xyz[0], xyz[1], xyz[2]}, io::QuatFromRpy({rpy[0], rpy[1], rpy[2]})};
}

void UrdfLoader::WarnUnknownChildren(const XMLElement* e, const std::string& context,
                                     const std::set<std::string>& known) {
  for (const XMLElement* c = e->FirstChildElement(); c; c = c->NextSiblingElement()) {
    if (known.count(c->Name())) continue;
    warnings_.Add(absl::StrCat("elem:", context, ":", c->Name()),
                  absl::StrCat("element <", c->Name(), "> in <", context,
                               "> is not supported and was ignored (first at ", Where(c), ")"));
  }
}

absl::StatusOr<std::string> UrdfLoader::ResolveMesh(const XMLElement* e, const std::string& link,
                                                    const std::string& filename) const {
  std::vector<std::string> candidates;
  std::string name = filename;
  if (absl::StartsWith(name, "file://")) name = name.substr(7);
  if (absl::StartsWith(name, "package://")) {
    std::string rest = name.substr(10);
    size_t slash = rest.find('/');
    std::string package = rest.substr(0, slash);
    std::string inside = slash == std::string::npos ? "" : rest.substr(slash + 1);
    for (const std::string& dir : options_.package_dirs) {
      candidates.push_back(io::JoinPath(dir, rest));
      candidates.push_back(io::JoinPath(dir, inside));
    }
    // A workspace's packages lie below its source directory, in repositories: searched for
    // only when the file is not where the package directories name it.
    if (std::none_of(candidates.begin(), candidates.end(), io::FileExists)) {
      constexpr int kPackageSearchDepth = 4;
      for (const std::string& dir : options_.package_dirs) {
        const std::string found = io::FindPackageDir(dir, package, kPackageSearchDepth);
        if (!found.empty()) candidates.push_back(io::JoinPath(found, inside));
      }
    }
    // Without a ROS workspace, look beside the URDF and up its directory tree.
    std::string dir = base_dir_.empty() ? "." : base_dir_;
    for (int up = 0; up < 4; ++up) {
      candidates.push_back(io::JoinPath(dir, rest));
      candidates.push_back(io::JoinPath(dir, inside));
      dir = io::JoinPath(dir, "..");
    }
  } else {
    candidates.push_back(io::JoinPath(base_dir_, name));
  }
  for (const std::string& c : candidates) {
    if (io::FileExists(c)) return c;
  }
  return absl::NotFoundError(absl::StrCat(Where(e), ": link '", link,
                                          "': mesh: attribute 'filename': file '", filename,
                                          "' not found (looked for '", candidates[0], "'",
                                          candidates.size() > 1 ? " and others" : "", ")"));
}

// Reads <collision><geometry>; false when the geometry kind is unsupported (warned).
absl::StatusOr<bool> UrdfLoader::ParseGeometry(const XMLElement* collision, const std::string& link,
                                               ShapeDesc* shape) {
  const XMLElement* geometry = collision->FirstChildElement("geometry");
  if (!geometry || !geometry->FirstChildElement()) {
    return Error(collision, "link", link, "", "<collision> without <geometry>");
  }
  const XMLElement* g = geometry->FirstChildElement();
  std::string kind = g->Name();
  auto positive = [&](const char* key, const std::vector<Real>& v) -> absl::Status {
    for (Real x : v) {
      if (!(x > 0))
        return Error(g, "link", link, key, absl::StrCat(kind, " dimensions must be positive"));
    }
    return absl::OkStatus();
  };
  if (kind == "box") {
    AXION_IO_ASSIGN_OR_RETURN(std::vector<Real> size, Reals(g, "link", link, "size", 3, {}, true));
    AXION_IO_RETURN_IF_ERROR(positive("size", size));
    shape->type = ShapeType::kBox;
    shape->size = {size[0] / 2, size[1] / 2, size[2] / 2};
  } else if (kind == "sphere") {
    AXION_IO_ASSIGN_OR_RETURN(std::vector<Real> r, Reals(g, "link", link, "radius", 1, {}, true));
    AXION_IO_RETURN_IF_ERROR(positive("radius", r));
    shape->type = ShapeType::kSphere;
    shape->size = {r[0], 0, 0};
  } else if (kind == "cylinder") {
    AXION_IO_ASSIGN_OR_RETURN(std::vector<Real> r, Reals(g, "link", link, "radius", 1, {}, true));
    AXION_IO_ASSIGN_OR_RETURN(std::vector<Real> l, Reals(g, "link", link, "length", 1, {}, true));
    AXION_IO_RETURN_IF_ERROR(positive("radius", r));
    AXION_IO_RETURN_IF_ERROR(positive("length", l));
    shape->type = ShapeType::kCylinder;
    shape->size = {r[0], l[0] / 2, 0};
  } else if (kind == "mesh") {
    const char* filename = g->Attribute("filename");
    if (!filename) return Error(g, "link", link, "filename", "<mesh> needs it");
    AXION_IO_ASSIGN_OR_RETURN(std::vector<Real> scale,
                              Reals(g, "link", link, "scale", 3, {1, 1, 1}));
    AXION_IO_ASSIGN_OR_RETURN(std::string path, ResolveMesh(g, link, filename));
    absl::StatusOr<std::vector<Vec3>> vertices =
        io::LoadMeshVertices(path, {scale[0], scale[1], scale[2]}, options_.file_root);
    if (!vertices.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat(Where(g), ": link '", link, "': ", vertices.status().message()));
    }
    if (!io::PointsSpanVolume(*vertices)) {
      return Error(g, "link", link, "filename",
                   absl::StrCat("mesh '", path, "' is flat (its vertices span no volume)"));
    }
    shape->type = ShapeType::kConvexHull;
    shape->vertices = std::move(*vertices);
    warnings_.Add("mesh-hull", absl::StrCat("mesh collision geometry collides as the convex hull "
                                            "of its vertices (first at ",
                                            Where(g), ")"));
  } else {
    warnings_.Add(absl::StrCat("geometry:", kind),
                  absl::StrCat("collision geometry <", kind,
                               "> is not supported and was ignored "
                               "(first at ",
                               Where(g), ")"));
    return false;
  }
  return true;
}

// The link's collision geometry as a solid of uniform density carrying the link's mass: its
// inertia about the link's centre of mass (the file's, kept). Planes and shapes without volume
// are an error, as is a link with mass and no geometry to spread it over.
absl::Status UrdfLoader::InertiaFromCollision(const XMLElement* e, UrdfLink* link) {
  MassProperties solid;
  for (const ShapeDesc& shape : link->shapes) {
    absl::StatusOr<MassProperties> unit =
        ShapeMassProperties(shape.type, shape.size, shape.vertices, 1);
    if (!unit.ok()) {
      return Error(e, "link", link->name, "",
                   absl::StrCat("inertia_from_collision: ", unit.status().message()));
    }
    MassProperties placed = TransformMassProperties(*unit, shape.pose.pos, shape.pose.quat);
    solid = solid.mass > 0 ? CombineMassProperties(solid, placed) : placed;
  }
  if (!(solid.mass > 0)) {
    return Error(e, "link", link->name, "",
                 "inertia_from_collision: the link has mass but no collision geometry");
  }
  const Real scale = link->mass / solid.mass;
  link->inertia = scale * solid.inertia + io::PointMassTensor(link->mass, solid.com - link->com);
  warnings_.Add("inertia-from-collision",
                absl::StrCat("link inertias are taken from their collision geometry at uniform "
                             "density (first at ",
                             link->where, ")"));
  return absl::OkStatus();
}

// With self-collision on, body pairs whose shapes already touch or overlap in the file's pose
// (within the contact margin) never collide (MoveIt's rule for the default pose): coarse
// collision geometry (hulls of concave links) of a joint chain overlaps there, no motion of the
// chain can separate it, and colliding it from the first step threw the xArm's links apart.
absl::Status UrdfLoader::ExcludeOverlappingLinks() {
  ModelDesc& model = result_.model;
  std::vector<HullData> hulls(model.shapes.size());
  std::vector<ShapeGeom> geoms(model.shapes.size());
  std::vector<Pose> world(model.shapes.size());
  for (size_t s = 0; s < model.shapes.size(); ++s) {
    const ShapeDesc& shape = model.shapes[s];
    if (shape.type == ShapeType::kConvexHull) {
      absl::StatusOr<HullData> hull = BuildHull(shape.vertices);
      if (!hull.ok()) return hull.status();
      hulls[s] = std::move(*hull);
      geoms[s] = HullShapeGeom(hulls[s]);
    } else {
      geoms[s].type = static_cast<int32_t>(shape.type);
      geoms[s].size = shape.size;
    }
    world[s] = shape.body == kWorldBody
                   ? shape.pose
                   : io::ComposePose(model.bodies[shape.body].pose, shape.pose);
  }
  // within the contact margin counts: such a pair is a contact from the first step
  const Real margin = model.options.contact_margin;
  std::set<std::pair<int, int>> joined, overlapping;
  // the pairs the engine filters already: bodies joined directly, but for a moving joint to the
  // world (a fixed base's first links still meet the base's shapes)
  for (const JointDesc& j : model.joints) {
    if (j.collide_connected || (j.parent == kWorldBody && j.type != JointType::kFixed)) continue;
    joined.insert({std::min(j.parent, j.child), std::max(j.parent, j.child)});
  }
  std::string first;
  for (size_t s = 0; s < model.shapes.size(); ++s) {
    for (size_t t = s + 1; t < model.shapes.size(); ++t) {
      const int a = model.shapes[s].body, b = model.shapes[t].body;
      const std::pair<int, int> pair{std::min(a, b), std::max(a, b)};
      if (a == b || joined.count(pair) || overlapping.count(pair)) continue;
      ContactPoint points[kMaxPairContacts];
      const int count = collide_shapes(geoms[s], world[s].pos, world[s].quat, geoms[t],
                                       world[t].pos, world[t].quat, margin, points);
      if (count == 0) continue;
      overlapping.insert(pair);
      if (first.empty()) {
        auto name = [&](int body) {
          return body == kWorldBody ? std::string("the base") : model.bodies[body].name;
        };
        first = absl::StrCat("'", name(a), "' and '", name(b), "'");
      }
    }
  }
  for (const auto& [a, b] : overlapping) model.exclude_body_pairs.push_back({a, b});
  if (!overlapping.empty()) {
    warnings_.Add("overlapping-links",
                  absl::StrCat("self_collision: ", overlapping.size(),
                               " link pairs touch or overlap in the file's pose and never collide "
                               "(first: ",
                               first, ")"));
  }
  return absl::OkStatus();
}

absl::Status UrdfLoader::ParseLink(const XMLElement* e) {
  UrdfLink link;
  const char* name = e->Attribute("name");
  if (!name || !*name) return Error(e, "link", "", "name", "is required");
  link.name = name;
  link.where = Where(e);
  if (link_index_.count(link.name)) return Error(e, "link", link.name, "name", "is used twice");
  WarnUnknownChildren(e, "link", {"inertial", "collision", "visual"});
  if (const XMLElement* inertial = e->FirstChildElement("inertial")) {
    AXION_IO_ASSIGN_OR_RETURN(Pose origin, Origin(inertial, "link", link.name));
    const XMLElement* mass = inertial->FirstChildElement("mass");
    if (!mass) return Error(inertial, "link", link.name, "", "<inertial> without <mass>");
    AXION_IO_ASSIGN_OR_RETURN(std::vector<Real> m,
                              Reals(mass, "link", link.name, "value", 1, {}, true));
    if (m[0] < 0)
      return Error(mass, "link", link.name, "value", absl::StrCat("mass ", m[0], " is negative"));
    link.mass = m[0];
    link.com = origin.pos;
    const XMLElement* inertia = inertial->FirstChildElement("inertia");
    if (!inertia) return Error(inertial, "link", link.name, "", "<inertial> without <inertia>");
    Mat33 t;
    const char* keys[6] = {"ixx", "iyy", "izz", "ixy", "ixz", "iyz"};
    Real v[6];
    for (int i = 0; i < 6; ++i) {
      AXION_IO_ASSIGN_OR_RETURN(std::vector<Real> x,
                                Reals(inertia, "link", link.name, keys[i], 1, {0}, i < 3));
      v[i] = x[0];
    }
    t(0, 0) = v[0];
    t(1, 1) = v[1];
    t(2, 2) = v[2];
    t(0, 1) = t(1, 0) = v[3];
    t(0, 2) = t(2, 0) = v[4];
    t(1, 2) = t(2, 1) = v[5];
    if (link.mass > 0 && !options_.inertia_from_collision) {
      Real minor = t(0, 0) * t(1, 1) - t(0, 1) * t(0, 1);
      if (!(t(0, 0) > 0 && minor > 0 && det(t) > 0)) {
        return Error(inertia, "link", link.name, "ixx",
                     "inertia tensor is not positive definite (inertia_from_collision, axion-sim "
                     "--inertia_from_collision, takes it from the collision geometry instead, as "
                     "pybullet does by default)");
      }
      Real moments[3];
      if (io::BreaksTriangleInequality(t, moments)) {
        if (!options_.balance_inertia) {
          return Error(inertia, "link", link.name, "ixx",
                       io::TriangleInequalityMessage(moments, false));
        }
        warnings_.Add(absl::StrCat("balanced:", link.name),
                      absl::StrCat(Where(inertia), ": link '", link.name,
                                   "': ", io::TriangleInequalityMessage(moments, true)));
        t = io::BalancedInertia(moments);
      }
    }
    link.inertia = io::RotateTensor(origin.quat, t);
  }
  bool warned_visual = false;
  for (const XMLElement* c = e->FirstChildElement(); c; c = c->NextSiblingElement()) {
    std::string tag = c->Name();
    if (tag == "visual") {
      if (!warned_visual) {
        warnings_.Add("visual",
                      absl::StrCat("<visual> elements are ignored (first at ", Where(c), ")"));
        warned_visual = true;
      }
      continue;
    }
    if (tag != "collision") continue;
    ShapeDesc shape;
    if (const char* shape_name = c->Attribute("name")) shape.name = shape_name;
    AXION_IO_ASSIGN_OR_RETURN(shape.pose, Origin(c, "link", link.name));
    AXION_IO_ASSIGN_OR_RETURN(bool supported, ParseGeometry(c, link.name, &shape));
    if (supported) link.shapes.push_back(std::move(shape));
  }
  if (options_.inertia_from_collision && link.mass > 0) {
    AXION_IO_RETURN_IF_ERROR(InertiaFromCollision(e, &link));
  }
  link_index_[link.name] = static_cast<int>(links_.size());
  links_.push_back(std::move(link));
  return absl::OkStatus();
}

absl::Status UrdfLoader::ParseJoint(const XMLElement* e) {
  UrdfJoint joint;
  const char* name = e->Attribute("name");
  if (!name || !*name) return Error(e, "joint", "", "name", "is required");
  joint.name = name;
  joint.where = Where(e);
  // names are how <mimic> (and a user's controls) find a joint
  for (const UrdfJoint& other : joints_)
    if (other.name == joint.name) return Error(e, "joint", joint.name, "name", "is used twice");
  const char* type = e->Attribute("type");
  if (!type) return Error(e, "joint", joint.name, "type", "is required");
  joint.type = type;
  static const std::set<std::string> kTypes = {"revolute", "continuous", "prismatic", "fixed",
                                               "floating", "planar",     "spherical"};
  if (!kTypes.count(joint.type)) {
    return Error(e, "joint", joint.name, "type",
                 absl::StrCat("unknown joint type '", joint.type, "'"));
  }
  if (joint.type == "spherical") {
    warnings_.Add("spherical",
                  absl::StrCat("joint type 'spherical' (pybullet's, not URDF's) becomes a ball "
                               "joint (first at ",
                               joint.where, ")"));
  }
  WarnUnknownChildren(e, "joint",
                      {"origin", "parent", "child", "axis", "limit", "dynamics", "mimic"});
  for (const char* side : {"parent", "child"}) {
    const XMLElement* c = e->FirstChildElement(side);
    const char* link = c ? c->Attribute("link") : nullptr;
    if (!link)
      return Error(c ? c : e, "joint", joint.name, "link",
                   absl::StrCat("<", side, " link=...> is required"));
    auto it = link_index_.find(link);
    if (it == link_index_.end()) {
      return Error(c, "joint", joint.name, "link", absl::StrCat("unknown link '", link, "'"));
    }
    (std::string(side) == "parent" ? joint.parent : joint.child) = it->second;
  }
  AXION_IO_ASSIGN_OR_RETURN(joint.origin, Origin(e, "joint", joint.name));
  if (const XMLElement* axis = e->FirstChildElement("axis")) {
    AXION_IO_ASSIGN_OR_RETURN(std::vector<Real> a,
                              Reals(axis, "joint", joint.name, "xyz", 3, {1, 0, 0}));
    // fixed, floating and spherical joints have no axis: URDF says to ignore it
    const bool uses_axis = joint.type == "revolute" || joint.type == "continuous" ||
                           joint.type == "prismatic" || joint.type == "planar";
    if (uses_axis) {
      joint.axis = {a[0], a[1], a[2]};
      if (norm(joint.axis) < Real(1e-12))
        return Error(axis, "joint", joint.name, "xyz", "axis is zero");
      joint.axis = normalized(joint.axis);
    }
  }
  if (const XMLElement* limit = e->FirstChildElement("limit")) {
    joint.has_limit = true;
    AXION_IO_RETURN_IF_ERROR(JointScalar(limit, joint.name, "lower", 0, &joint.lower));
    AXION_IO_RETURN_IF_ERROR(JointScalar(limit, joint.name, "upper", 0, &joint.upper));
    AXION_IO_RETURN_IF_ERROR(JointScalar(limit, joint.name, "effort", 0, &joint.effort));
    AXION_IO_RETURN_IF_ERROR(JointScalar(limit, joint.name, "velocity", 0, &joint.velocity));
    if (joint.effort < 0) return Error(limit, "joint", joint.name, "effort", "is negative");
    if ((joint.type == "revolute" || joint.type == "prismatic") && !(joint.lower <= joint.upper)) {
      if (!(std::isfinite(joint.lower) && std::isfinite(joint.upper))) {
        return Error(limit, "joint", joint.name, "lower", "limits must be finite");
      }
      // pybullet's convention for a joint without limits
      joint.unlimited = true;
      warnings_.Add(absl::StrCat("reversed-limits:", joint.name),
                    absl::StrCat(Where(limit), ": joint '", joint.name, "': lower ", joint.lower,
                                 " is above upper ", joint.upper,
                                 ": the joint is left unlimited, as pybullet does"));
    }
    if (joint.type == "spherical") {
      warnings_.Add("spherical-limit",
                    absl::StrCat("limits of spherical joints are not supported and were ignored "
                                 "(first at ",
                                 Where(limit), ")"));
    }
    if (joint.velocity > 0) {
      warnings_.Add(
          "velocity-limit",
          absl::StrCat("joint velocity limits are not enforced (first at ", Where(limit), ")"));
    }
  } else if (joint.type == "revolute" || joint.type == "prismatic") {
    return Error(e, "joint", joint.name, "",
                 absl::StrCat("a ", joint.type, " joint needs <limit>"));
  }
  if (const XMLElement* mimic = e->FirstChildElement("mimic")) {
    const char* leader = mimic->Attribute("joint");
    if (!leader || !*leader)
      return Error(mimic, "joint", joint.name, "mimic", "<mimic joint=...> is required");
    joint.mimic = leader;
    joint.mimic_where = Where(mimic);
    AXION_IO_RETURN_IF_ERROR(
        JointScalar(mimic, joint.name, "multiplier", 1, &joint.mimic_multiplier));
    AXION_IO_RETURN_IF_ERROR(JointScalar(mimic, joint.name, "offset", 0, &joint.mimic_offset));
  }
  if (const XMLElement* dynamics = e->FirstChildElement("dynamics")) {
    AXION_IO_RETURN_IF_ERROR(JointScalar(dynamics, joint.name, "damping", 0, &joint.damping));
    AXION_IO_RETURN_IF_ERROR(JointScalar(dynamics, joint.name, "friction", 0, &joint.friction));
    if (joint.damping < 0) return Error(dynamics, "joint", joint.name, "damping", "is negative");
    if (joint.friction < 0) return Error(dynamics, "joint", joint.name, "friction", "is negative");
  }
  if (joint.child == joint.parent) {
    return Error(e, "joint", joint.name, "",
                 absl::StrCat("link '", links_[joint.child].name, "' is its own parent"));
  }
  UrdfLink& child = links_[joint.child];
  if (child.parent_joint >= 0) {
    return Error(e, "joint", joint.name, "",
                 absl::StrCat("link '", child.name, "' already has parent joint '",
                              joints_[child.parent_joint].name, "'"));
  }
  child.parent_joint = static_cast<int>(joints_.size());
  links_[joint.parent].child_joints.push_back(static_cast<int>(joints_.size()));
  joints_.push_back(std::move(joint));
  return absl::OkStatus();
}

absl::Status UrdfLoader::Build() {
  int root = -1;
  for (size_t i = 0; i < links_.size(); ++i) {
    if (links_[i].parent_joint >= 0) continue;
    if (root >= 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          links_[i].where, ": link '", links_[i].name, "' has no parent joint, but link '",
          links_[root].name, "' is already the root (one tree expected)"));
    }
    root = static_cast<int>(i);
  }
  if (root < 0)
    return absl::InvalidArgumentError(
        absl::StrCat(file_, ": no root link (the joints form a cycle)"));
  ModelDesc& model = result_.model;
  // The root's mass with the links fixed to it: a floating base without any stays welded to
  // the world, as pybullet fixes a base of mass 0 (its planes, tables and trays).
  Real root_mass = 0;
  for (std::vector<int> fixed_links = {root}; !fixed_links.empty();) {
    const int l = fixed_links.back();
    fixed_links.pop_back();
    root_mass += links_[l].mass;
    for (int j : links_[l].child_joints) {
      if (joints_[j].type == "fixed") fixed_links.push_back(joints_[j].child);
    }
  }
  const bool floating_asked = options_.floating_base && links_[root].name != "world";
  const bool floating_root = floating_asked && root_mass > 0;
  if (floating_asked && !floating_root) {
    warnings_.Add("massless-base",
                  absl::StrCat("root link '", links_[root].name,
                               "' has no mass, nor any link fixed to it: welded to the world "
                               "despite floating_base, as pybullet fixes a base of mass 0"));
  }
  // Depth-first from the root: parents are placed before their children.
  std::vector<int> body_link;  // per body: the link it was made for
  std::vector<int> stack = {root};
  std::vector<bool> visited(links_.size(), false);
  while (!stack.empty()) {
    int l = stack.back();
    stack.pop_back();
    if (visited[l])
      return absl::InvalidArgumentError(
          absl::StrCat(links_[l].where, ": link '", links_[l].name, "' is reached twice (cycle)"));
    visited[l] = true;
    UrdfLink& link = links_[l];
    const UrdfJoint* joint = link.parent_joint >= 0 ? &joints_[link.parent_joint] : nullptr;
    const UrdfLink* parent = joint ? &links_[joint->parent] : nullptr;
    link.world = parent ? io::ComposePose(parent->world, joint->origin) : Pose{};
    // a root link named "world" is the world frame (ROS and Gazebo's convention)
    bool fixed = joint ? joint->type == "fixed" : !floating_root;
    if (fixed) {
      // Welded to the world (fixed base), or fixed to its parent: one rigid body with it, the
      // link's mass added to the parent's. Exact, and cheaper and better conditioned than a
      // body of its own held by six rows: robot files hang 1 g sensor frames on 5 kg trunks.
      link.body = parent ? parent->body : kWorldBody;
      link.offset = parent ? io::ComposePose(parent->offset, joint->origin) : Pose{};
      if (joint)
        result_.source_joints.push_back({joint->name, -1, 0, ImportResult::JointKind::kFixed, l});
      if (parent && link.mass <= 0) {
        warnings_.Add(absl::StrCat("merged:", link.name),
                      absl::StrCat("link '", link.name, "' has no mass: merged into link '",
                                   parent->name, "'"));
      } else if (parent && link.body != kWorldBody) {
        BodyDesc& body = model.bodies[link.body];
        const Vec3 com = link.offset.pos + rotate(link.offset.quat, link.com);
        const Real mass = body.mass + link.mass;
        const Vec3 merged_com = (Real(1) / mass) * (body.mass * body.com + link.mass * com);
        body.inertia = body.inertia + io::PointMassTensor(body.mass, body.com - merged_com) +
                       io::RotateTensor(link.offset.quat, link.inertia) +
                       io::PointMassTensor(link.mass, com - merged_com);
        body.com = merged_com;
        body.mass = mass;
        warnings_.Add("merged-fixed",
                      absl::StrCat("links on fixed joints are merged into their parent's body, "
                                   "mass and inertia included (first: link '",
                                   link.name, "' into link '", parent->name, "')"));
      }
    } else {
      // Its mass may come from links fixed to it (ROS's massless base_footprint carries
      // base_link): checked once they are merged, below.
      body_link.push_back(l);
      BodyDesc body;
      body.name = link.name;
      body.mass = link.mass;
      body.com = link.com;
      body.inertia = link.inertia;
      body.pose = link.world;
      link.body = static_cast<int>(model.bodies.size());
      link.offset = Pose{};
      model.bodies.push_back(std::move(body));
      if (joint && joint->type != "floating") {
        JointDesc d;
        d.name = joint->name;
        d.parent = parent->body;
        d.child = link.body;
        d.child_frame.quat = io::QuatFromXAxis(joint->axis);
        d.collide_connected = false;
        if (joint->type == "revolute" || joint->type == "continuous" ||
            joint->type == "prismatic") {
          d.type = joint->type == "prismatic" ? JointType::kPrismatic : JointType::kRevolute;
          if (joint->type != "continuous" && !joint->unlimited) {
            d.limited = true;
            d.lower = {joint->lower};
            d.upper = {joint->upper};
          }
          d.drive.damping = joint->damping;
          d.friction_loss = joint->friction;
          ActuatorDesc a;
          a.name = joint->name;
          a.type = ActuatorType::kEffort;
          a.joint = static_cast<int>(model.joints.size());
          a.gear = 1;
          if (options_.position_kp > 0) {
            // a position servo: ctrl is the target, within the joint's limits where it has them
            a.type = ActuatorType::kPosition;
            a.kp = options_.position_kp;
            a.kv = options_.position_kv;
            a.ctrl_limited = d.limited;
            if (d.limited) {
              a.ctrl_min = joint->lower;
              a.ctrl_max = joint->upper;
            }
            // the joint's effort limit bounds the servo's force
            a.force_limited = joint->effort > 0;
            a.force_min = -joint->effort;
            a.force_max = joint->effort;
          } else if (joint->effort > 0) {
            a.ctrl_limited = true;
            a.ctrl_min = -joint->effort;
            a.ctrl_max = joint->effort;
          }
          // a mimic joint moves with its leader, without an actuator of its own (Couple)
          if (joint->mimic.empty()) model.actuators.push_back(std::move(a));
        } else if (joint->type == "spherical") {
          d.type = JointType::kBall;
          d.child_frame = Pose{};
          d.drive.damping = joint->damping;
          d.friction_loss = joint->friction;
        } else if (joint->type == "planar") {
          // Frame x along the plane normal: the two in-plane translations and the rotation
          // about the normal are free.
          d.type = JointType::kGeneric;
          d.axis_mode = {AxisMode::kLocked, AxisMode::kFree,   AxisMode::kFree,
                         AxisMode::kFree,   AxisMode::kLocked, AxisMode::kLocked};
          d.drive.damping = joint->damping;
          d.friction_loss = joint->friction;
        } else {
          d.type = JointType::kFixed;
          d.child_frame = Pose{};
        }
        using Kind = ImportResult::JointKind;
        const Kind kind = joint->type == "prismatic"    ? Kind::kSlide
                          : joint->type == "spherical"  ? Kind::kBall
                          : joint->type == "planar"     ? Kind::kPlanar
                          : d.type == JointType::kFixed ? Kind::kFixed
                                                        : Kind::kHinge;
        result_.source_joints.push_back(
            {joint->name, static_cast<int>(model.joints.size()), 0, kind, l});
        model.joints.push_back(std::move(d));
      } else if (joint) {
        result_.source_joints.push_back({joint->name, -1, 0, ImportResult::JointKind::kFree, l});
      }
    }
    for (const ShapeDesc& s : link.shapes) {
      ShapeDesc shape = s;
      shape.body = link.body;
      if (!options_.self_collision) {
        shape.collision_group = kUrdfRobotGroup;
        shape.collision_mask = ~kUrdfRobotGroup;
      }
      shape.pose = io::ComposePose(link.body == kWorldBody ? link.world : link.offset, s.pose);
      model.shapes.push_back(std::move(shape));
    }
    for (auto it = link.child_joints.rbegin(); it != link.child_joints.rend(); ++it) {
      stack.push_back(joints_[*it].child);
    }
  }
  // Every link has one parent joint and only the root has none, so a link the walk missed hangs
  // on a cycle of joints apart from the tree; it would otherwise be dropped without a word.
  for (size_t i = 0; i < links_.size(); ++i) {
    if (visited[i]) continue;
    return absl::InvalidArgumentError(absl::StrCat(
        links_[i].where, ": link '", links_[i].name, "' is not connected to the root link '",
        links_[root].name, "': its parent joints form a cycle"));
  }
  // A body that moves needs mass, its own or its fixed links' (a floating root has some: one
  // without stayed welded above).
  for (size_t b = 0; b < model.bodies.size(); ++b) {
    if (model.bodies[b].mass > 0) continue;
    const UrdfLink& link = links_[body_link[b]];
    const UrdfJoint& joint = joints_[link.parent_joint];
    return absl::InvalidArgumentError(absl::StrCat(
        link.where, ": link '", link.name,
        "': mass must be positive for a link that moves, its own or that of links fixed to it "
        "(joint '",
        joint.name, "' is ", joint.type, ")"));
  }
  // Where each link went, in file order (a static link's frame in the world frame).
  for (const UrdfLink& link : links_) {
    result_.source_bodies.push_back(
        {link.name, link.body, link.body == kWorldBody ? link.world : link.offset});
  }
  return absl::OkStatus();
}

// <mimic>: each mimic joint's coordinate follows its leader's, q = multiplier q_leader +
// offset, held exactly by a JointCouplingDesc (the leader feels the follower's load, as through
// a real gear train or linkage).
absl::Status UrdfLoader::Couple() {
  std::map<std::string, int> axion_joint;  // URDF joint -> Axion joint (-1: merged or floating)
  for (const auto& s : result_.source_joints) axion_joint[s.name] = s.joint;
  std::map<std::string, const UrdfJoint*> by_name;
  for (const UrdfJoint& j : joints_) by_name[j.name] = &j;
  for (const UrdfJoint& joint : joints_) {
    if (joint.mimic.empty()) continue;
    auto leader = axion_joint.find(joint.mimic);
    if (leader == axion_joint.end())
      return absl::InvalidArgumentError(absl::StrCat(joint.mimic_where, ": joint '", joint.name,
                                                     "': mimic: unknown joint '", joint.mimic,
                                                     "'"));
    auto placed = axion_joint.find(joint.name);
    if (placed == axion_joint.end())
      return absl::InternalError(absl::StrCat(joint.mimic_where, ": joint '", joint.name,
                                              "' was not placed in the model"));
    const int follower = placed->second;
    auto scalar = [](const std::string& type) {
      return type == "revolute" || type == "continuous" || type == "prismatic";
    };
    // every placed joint is one of joints_, so the leader is found
    const UrdfJoint& lead = *by_name[joint.mimic];
    if (!scalar(joint.type) || !scalar(lead.type) || follower < 0 || leader->second < 0) {
      warnings_.Add(absl::StrCat("mimic:", joint.name),
                    absl::StrCat(joint.mimic_where, ": joint '", joint.name, "' (", joint.type,
                                 ") mimics '", joint.mimic, "' (", lead.type,
                                 "): only revolute, continuous and prismatic joints couple; "
                                 "the mimic was ignored"));
      continue;
    }
    JointCouplingDesc c;
    c.name = absl::StrCat(joint.name, "_mimic");
    c.joint = follower;
    c.leader_joint = leader->second;
    c.polynomial = {joint.mimic_offset, joint.mimic_multiplier, 0, 0, 0};
    result_.model.couplings.push_back(c);
  }
  return absl::OkStatus();
}

absl::StatusOr<ImportResult> UrdfLoader::Load(std::string_view xml, const std::string& file,
                                              const std::string& base_dir) {
  if (!(std::isfinite(options_.position_kp) && options_.position_kp >= 0) ||
      !(std::isfinite(options_.position_kv) && options_.position_kv >= 0)) {
    return absl::InvalidArgumentError(
        absl::StrCat("position_kp and position_kv must be finite and >= 0, got ",
                     options_.position_kp, " and ", options_.position_kv));
  }
  file_ = file;
  base_dir_ = base_dir;
  XMLDocument doc;
  if (doc.Parse(xml.data(), xml.size()) != tinyxml2::XML_SUCCESS) {
    return absl::InvalidArgumentError(
        absl::StrCat(file, ":", doc.ErrorLineNum(), ": malformed XML: ", doc.ErrorStr()));
  }
  const XMLElement* root = doc.RootElement();
  if (!root || std::string(root->Name()) != "robot") {
    return absl::InvalidArgumentError(
        absl::StrCat(file, ":", root ? root->GetLineNum() : 1, ": root element must be <robot>"));
  }
  result_.model.name = root->Attribute("name") ? root->Attribute("name") : "";
  WarnUnknownChildren(root, "robot", {"link", "joint", "material"});
  for (const XMLElement* e = root->FirstChildElement("link"); e;
       e = e->NextSiblingElement("link")) {
    AXION_IO_RETURN_IF_ERROR(ParseLink(e));
  }
  if (links_.empty())
    return absl::InvalidArgumentError(absl::StrCat(file, ": robot has no <link>"));
  for (const XMLElement* e = root->FirstChildElement("joint"); e;
       e = e->NextSiblingElement("joint")) {
    AXION_IO_RETURN_IF_ERROR(ParseJoint(e));
  }
  AXION_IO_RETURN_IF_ERROR(Build());
  AXION_IO_RETURN_IF_ERROR(Couple());
  if (options_.self_collision) AXION_IO_RETURN_IF_ERROR(ExcludeOverlappingLinks());
  result_.warnings = warnings_.Lines();
  return std::move(result_);
}

}  // namespace

absl::StatusOr<ImportResult> LoadUrdfFile(const std::string& path, const UrdfOptions& options) {
  absl::StatusOr<std::string> text = io::ReadFile(path);
  if (!text.ok()) return text.status();
  UrdfLoader loader(options);
  return loader.Load(*text, path, io::DirName(path));
}

absl::StatusOr<ImportResult> LoadUrdfString(std::string_view xml, const std::string& base_dir,
                                            const UrdfOptions& options) {
  UrdfLoader loader(options);
  return loader.Load(xml, "<string>", base_dir);
}

}  // namespace axion
