// MJCF importer. The file is read in three passes: (1) XML, <include> expansion, <compiler>
// and <default> classes; (2) the body tree into an intermediate description that mirrors MJCF
// (bodies with their joints, geoms and inertia in body frames); (3) conversion of that tree to
// Axion's maximal coordinates by the rules documented in axion/mjcf.h.
#include "axion/mjcf.h"

#include <algorithm>
#include <array>
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
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "collision/hull.h"
#include "collision/mass.h"
#include "io/io_util.h"
#include "model_internal.h"
#include "tinyxml2.h"

namespace axion {
namespace {

using tinyxml2::XMLDocument;
using tinyxml2::XMLElement;

constexpr Real kPi = Real(3.14159265358979323846);
constexpr int kMaxIncludeDepth = 16;
constexpr Real kAxisTolerance = Real(1e-9);    // |dot| of axes treated as orthogonal
constexpr Real kAnchorTolerance = Real(1e-9);  // (m) anchors treated as coincident
// Two hinges form one universal joint when the sine between their axes exceeds this (Model
// rejects nearly parallel axes, where the hinge angles are undefined).
constexpr Real kUniversalMinSine = Real(0.1);

// The sensors Axion reads: MJCF tag -> kind, values, and the attributes naming what it reads.
struct SensorSpec {
  ImportResult::SensorKind kind;
  int dim;
  std::set<std::string> reads;
};
const std::map<std::string, SensorSpec>& SensorSpecs() {
  using Kind = ImportResult::SensorKind;
  const std::set<std::string> site = {"site"}, joint = {"joint"}, tendon = {"tendon"},
                              actuator = {"actuator"}, body = {"body"},
                              object = {"objtype", "objname"},
                              referenced = {"objtype", "objname", "reftype", "refname"};
  static const auto* table = new std::map<std::string, SensorSpec>{
      {"touch", {Kind::kTouch, 1, site}},
      {"accelerometer", {Kind::kAccelerometer, 3, site}},
      {"force", {Kind::kForce, 3, site}},
      {"rangefinder", {Kind::kRangefinder, 1, site}},
      {"torque", {Kind::kTorque, 3, site}},
      {"velocimeter", {Kind::kVelocimeter, 3, site}},
      {"gyro", {Kind::kGyro, 3, site}},
      {"magnetometer", {Kind::kMagnetometer, 3, site}},
      {"jointpos", {Kind::kJointPos, 1, joint}},
      {"jointvel", {Kind::kJointVel, 1, joint}},
      {"tendonpos", {Kind::kTendonPos, 1, tendon}},
      {"tendonvel", {Kind::kTendonVel, 1, tendon}},
      {"actuatorpos", {Kind::kActuatorPos, 1, actuator}},
      {"actuatorvel", {Kind::kActuatorVel, 1, actuator}},
      {"actuatorfrc", {Kind::kActuatorFrc, 1, actuator}},
      {"ballquat", {Kind::kBallQuat, 4, joint}},
      {"ballangvel", {Kind::kBallAngVel, 3, joint}},
      {"framepos", {Kind::kFramePos, 3, referenced}},
      {"framequat", {Kind::kFrameQuat, 4, referenced}},
      {"framexaxis", {Kind::kFrameXAxis, 3, referenced}},
      {"frameyaxis", {Kind::kFrameYAxis, 3, referenced}},
      {"framezaxis", {Kind::kFrameZAxis, 3, referenced}},
      {"framelinvel", {Kind::kFrameLinVel, 3, referenced}},
      {"frameangvel", {Kind::kFrameAngVel, 3, referenced}},
      // MuJoCo 2.2's frame accelerations take no reference
      {"framelinacc", {Kind::kFrameLinAcc, 3, object}},
      {"frameangacc", {Kind::kFrameAngAcc, 3, object}},
      {"subtreecom", {Kind::kSubtreeCom, 3, body}},
      {"subtreelinvel", {Kind::kSubtreeLinVel, 3, body}},
      {"subtreeangmom", {Kind::kSubtreeAngMom, 3, body}},
      {"clock", {Kind::kClock, 1, {}}},
  };
  return *table;
}

// Attributes each element understands; anything else is reported once per (element, name).
const std::map<std::string, std::set<std::string>>& SupportedAttributes() {
  static const auto* table = [] {
    auto* elements = new std::map<std::string, std::set<std::string>>{
        {"compiler",
         {"angle", "inertiafromgeom", "eulerseq", "coordinate", "autolimits", "meshdir", "assetdir",
          "balanceinertia", "boundmass", "boundinertia", "settotalmass"}},
        {"mesh", {"name", "class", "file", "scale", "vertex", "face"}},
        {"hfield", {"name", "file", "nrow", "ncol", "size", "elevation"}},
        {"option",
         {"timestep", "gravity", "density", "viscosity", "wind", "collision", "cone", "magnetic"}},
        {"body",
         {"name", "childclass", "pos", "quat", "axisangle", "euler", "xyaxes", "zaxis", "mocap"}},
        {"inertial",
         {"pos", "quat", "axisangle", "euler", "xyaxes", "zaxis", "mass", "diaginertia",
          "fullinertia"}},
        {"joint",
         {"name", "class", "type", "pos", "axis", "range", "limited", "stiffness", "damping",
          "armature", "ref", "springref", "frictionloss", "springdamper"}},
        {"freejoint", {"name"}},
        {"geom", {"name",   "class",     "type",   "size",    "fromto",      "pos",
                  "quat",   "axisangle", "euler",  "xyaxes",  "zaxis",       "density",
                  "mass",   "friction",  "condim", "contype", "conaffinity", "mesh",
                  "hfield", "priority",  "margin", "gap"}},
        {"motor",
         {"name", "class", "joint", "tendon", "cranksite", "slidersite", "cranklength", "site",
          "gear", "ctrlrange", "ctrllimited", "forcerange", "forcelimited"}},
        {"adhesion", {"name", "class", "body", "gain", "ctrlrange", "forcerange", "forcelimited"}},
        {"connect", {"name", "class", "body1", "body2", "anchor", "active"}},
        {"weld", {"name", "class", "body1", "body2", "active"}},
        {"exclude", {"name", "body1", "body2"}},
        {"pair", {"name", "class", "geom1", "geom2", "condim", "friction", "margin", "gap"}},
        {"position",
         {"name", "class", "joint", "tendon", "cranksite", "slidersite", "cranklength", "gear",
          "ctrlrange", "ctrllimited", "forcerange", "forcelimited", "kp", "kv"}},
        {"velocity",
         {"name", "class", "joint", "tendon", "cranksite", "slidersite", "cranklength", "gear",
          "ctrlrange", "ctrllimited", "forcerange", "forcelimited", "kv"}},
        {"general",
         {"name",         "class",       "joint",    "tendon",     "cranksite",   "slidersite",
          "cranklength",  "site",        "gear",     "ctrlrange",  "ctrllimited", "forcerange",
          "forcelimited", "dyntype",     "gaintype", "biastype",   "dynprm",      "gainprm",
          "biasprm",      "lengthrange", "actrange", "actlimited", "body"}},
        {"intvelocity",
         {"name", "class", "joint", "tendon", "cranksite", "slidersite", "cranklength", "gear",
          "ctrlrange", "ctrllimited", "forcerange", "forcelimited", "kp", "actrange",
          "actlimited"}},
        {"cylinder",
         {"name", "class", "joint", "tendon", "cranksite", "slidersite", "cranklength", "gear",
          "ctrlrange", "ctrllimited", "forcerange", "forcelimited", "timeconst", "area", "diameter",
          "bias", "actrange", "actlimited"}},
        {"muscle",
         {"name",        "class",     "joint",     "tendon",      "cranksite",  "slidersite",
          "cranklength", "gear",      "ctrlrange", "ctrllimited", "forcerange", "forcelimited",
          "lengthrange", "timeconst", "range",     "force",       "scale",      "lmin",
          "lmax",        "vmax",      "fpmax",     "fvmax",       "actrange",   "actlimited"}},
        {"lengthrange",
         {"mode", "useexisting", "uselimit", "accel", "maxforce", "timeconst", "timestep",
          "inttotal", "inteval", "tolrange"}},
        {"key", {"name", "time", "qpos", "qvel", "act", "ctrl", "mpos", "mquat"}},
        {"fixed",
         {"name", "class", "limited", "range", "stiffness", "damping", "springlength",
          "frictionloss"}},
        {"spatial",
         {"name", "class", "limited", "range", "stiffness", "damping", "springlength",
          "frictionloss"}},
        // a site's type and size draw it and bound a touch sensor's zone
        {"site",
         {"name", "class", "type", "size", "fromto", "pos", "quat", "axisangle", "euler", "xyaxes",
          "zaxis"}},
    };
    // sensors: what each reads, and noise (MuJoCo's metadata, added only under <flag
    // sensornoise>), cutoff and user data (no effect)
    for (const auto& [tag, spec] : SensorSpecs()) {
      std::set<std::string>& attributes = (*elements)[tag];
      attributes = {"name", "noise", "cutoff", "user"};
      attributes.insert(spec.reads.begin(), spec.reads.end());
    }
    return elements;
  }();
  return *table;
}

// Defaults of one class: element kind -> attribute -> value. Actuator shortcuts (motor,
// position, velocity, general) share one set, as in MuJoCo, where they all set the defaults of
// the underlying general actuator.
struct DefaultClass {
  std::map<std::string, std::map<std::string, std::string>> attributes;
};

std::string DefaultKind(const std::string& tag) {
  if (tag == "motor" || tag == "position" || tag == "velocity" || tag == "general" ||
      tag == "cylinder" || tag == "muscle" || tag == "damper" || tag == "intvelocity" ||
      tag == "adhesion") {
    return "actuator";
  }
  if (tag == "fixed" || tag == "spatial") return "tendon";
  return tag;
}

// An element with its class defaults applied: the attribute values the element means.
struct Elem {
  const XMLElement* xml = nullptr;
  std::string tag;
  std::string name;
  std::string where;  // "file:line"
  std::map<std::string, std::string> attrs;
  std::set<std::string> own;  // attributes written on the element itself

  bool Has(const std::string& key) const { return attrs.count(key) > 0; }
  std::string Str(const std::string& key, const std::string& fallback = "") const {
    auto it = attrs.find(key);
    return it == attrs.end() ? fallback : it->second;
  }
  std::string Describe() const {
    return name.empty() ? absl::StrCat(where, ": ", tag)
                        : absl::StrCat(where, ": ", tag, " '", name, "'");
  }
  absl::Status Error(const std::string& key, const std::string& problem) const {
    if (key.empty()) return absl::InvalidArgumentError(absl::StrCat(Describe(), ": ", problem));
    return absl::InvalidArgumentError(
        absl::StrCat(Describe(), ": attribute '", key, "': ", problem));
  }
  // Reads between min_count and max_count reals; absent: `fallback`.
  absl::StatusOr<std::vector<Real>> Reals(const std::string& key, size_t min_count,
                                          size_t max_count, std::vector<Real> fallback = {}) const {
    auto it = attrs.find(key);
    if (it == attrs.end()) return fallback;
    std::vector<Real> values;
    if (!io::ParseReals(it->second, &values)) {
      return Error(key, absl::StrCat("'", it->second, "' is not a list of finite numbers"));
    }
    if (values.size() < min_count || values.size() > max_count) {
      return Error(key, min_count == max_count
                            ? absl::StrCat("expected ", min_count, " numbers, got ", values.size())
                            : absl::StrCat("expected ", min_count, " to ", max_count,
                                           " numbers, got ", values.size()));
    }
    return values;
  }
  absl::StatusOr<Real> Real1(const std::string& key, Real fallback) const {
    AXION_IO_ASSIGN_OR_RETURN(std::vector<Real> v, Reals(key, 1, 1, {fallback}));
    return v[0];
  }
  absl::StatusOr<Vec3> Vec(const std::string& key, Vec3 fallback) const {
    AXION_IO_ASSIGN_OR_RETURN(std::vector<Real> v,
                              Reals(key, 3, 3, {fallback.x, fallback.y, fallback.z}));
    return Vec3{v[0], v[1], v[2]};
  }
  absl::StatusOr<bool> Bool(const std::string& key, bool fallback) const {
    auto it = attrs.find(key);
    if (it == attrs.end()) return fallback;
    if (it->second == "true") return true;
    if (it->second == "false") return false;
    return Error(key, absl::StrCat("'", it->second, "' is not 'true' or 'false'"));
  }
  absl::StatusOr<int> Int(const std::string& key, int fallback) const {
    AXION_IO_ASSIGN_OR_RETURN(Real v, Real1(key, fallback));
    if (v != std::floor(v) || v < 0 || v > Real(std::numeric_limits<int>::max())) {
      return Error(key, absl::StrCat("'", Str(key), "' is not a non-negative integer"));
    }
    return static_cast<int>(v);
  }
};

enum class JointKind { kHinge, kSlide, kBall, kFree };

struct MjJoint {
  std::string name;
  std::string where;
  JointKind kind = JointKind::kHinge;
  Vec3 pos;
  Vec3 axis{0, 0, 1};  // unit
  bool limited = false;
  Real range[2] = {0, 0};
  Real stiffness = 0, damping = 0, armature = 0, ref = 0, springref = 0, frictionloss = 0;
  // springdamper (time constant s, damping ratio); 0 0: none (ApplySpringDampers)
  Real springdamper[2] = {0, 0};
};

// The DOFs (MuJoCo's qvel entries) a joint of the file has.
int FileDofCount(JointKind kind) {
  return kind == JointKind::kFree ? 6 : kind == JointKind::kBall ? 3 : 1;
}

struct MjGeom {
  std::string name;
  std::string where;
  ShapeType type = ShapeType::kSphere;
  Vec3 size;                    // Axion convention
  std::vector<Vec3> vertices;   // ellipsoid and mesh hulls
  HeightFieldDesc heightfield;  // hfield geoms
  Pose pose;                    // in the owning body's frame
  Real mass = 0;
  Vec3 mass_center;       // in the body frame: pose.pos but for meshes
  Mat33 inertia;          // about mass_center, in the body frame (kg m^2)
  bool has_mass = false;  // planes have none
  Real friction = 1;
  Real torsional_friction = Real(0.005), rolling_friction = Real(0.0001);  // (m) MuJoCo's
  int condim = 3;  // 1 frictionless, 3 sliding, 4 and torsional, 6 and rolling friction
  int contype = 1, conaffinity = 1;
  int priority = 0;  // a contact takes the higher-priority geom's friction and condim
  Real margin = 0, gap = 0;  // (m) ShapeDesc::margin and gap
};

// Mass properties of a mesh geom as MuJoCo 2.2 computes them (user_mesh.cc without
// compiler/exactmeshinertia, MuJoCo's default then), in the mesh's own frame: pyramids from
// the faces' area-weighted centre P to each triangle, volumes taken positive, give the centre
// of mass c; pyramids from c to each triangle, again positive, give the second moment C about
// c and the volume V. The geom is then the box of the same principal moments per unit mass,
// half sizes b_i = sqrt(3 c_i / V) for C's eigenvalues c_i, so its volume is
// 8 b_1 b_2 b_3 = sqrt(1728 det C / V^3), and its inertia per unit mass (tr C I - C) / V. For a
// convex mesh that is the solid's exact centre and inertia per unit mass, with the volume of
// the box; for a mesh that is not star-shaped from P the positive volumes count some regions
// more than once (MuJoCo's sample mug.xml: 0.3785 kg against 0.1333 kg of solid at its density).
struct MeshMass {
  Real volume = 0;     // of the equivalent box (m^3)
  Vec3 com;            // mesh frame (m)
  Mat33 unit_inertia;  // about com, mesh frame, per unit mass (m^2)
};
absl::StatusOr<MeshMass> MuJoCoMeshMass(const io::TriangleMesh& mesh) {
  struct Face {
    Vec3 a, b, c, center, normal;
    Real area;
  };
  std::vector<Face> faces;
  Real area_sum = 0;
  Vec3 area_moment;
  for (const std::array<int, 3>& t : mesh.triangles) {
    Face f{mesh.vertices[t[0]], mesh.vertices[t[1]], mesh.vertices[t[2]], {}, {}, 0};
    Vec3 n = cross(f.b - f.a, f.c - f.a);
    Real twice_area = norm(n);
    if (!(twice_area > 0)) continue;  // degenerate: no area, no volume
    f.area = Real(0.5) * twice_area;
    f.normal = (Real(1) / twice_area) * n;
    f.center = (Real(1) / 3) * (f.a + f.b + f.c);
    area_sum += f.area;
    area_moment += f.area * f.center;
    faces.push_back(f);
  }
  if (!(area_sum > 0)) return absl::InvalidArgumentError("has no triangle of positive area");
  const Vec3 p = (Real(1) / area_sum) * area_moment;
  Real volume = 0;
  Vec3 moment;
  for (const Face& f : faces) {
    Real v = std::fabs(dot(f.center - p, f.normal)) * f.area / 3;
    volume += v;
    moment += v * (Real(0.75) * f.center + Real(0.25) * p);
  }
  if (!(volume > 0)) return absl::InvalidArgumentError("encloses no volume");
  MeshMass out;
  out.com = (Real(1) / volume) * moment;
  Real v2 = 0;
  Mat33 second;
  for (const Face& f : faces) {
    Real v = std::fabs(dot(f.center - out.com, f.normal)) * f.area / 3;
    v2 += v;
    const Vec3 corners[3] = {f.a - out.com, f.b - out.com, f.c - out.com};
    const Vec3 sum = corners[0] + corners[1] + corners[2];
    for (int i = 0; i < 3; ++i) {
      for (int j = 0; j < 3; ++j) {
        Real s = sum[i] * sum[j];
        for (const Vec3& x : corners) s += x[i] * x[j];
        second(i, j) += v * s / 20;
      }
    }
  }
  const Real det = second(0, 0) * (second(1, 1) * second(2, 2) - second(1, 2) * second(2, 1)) -
                   second(0, 1) * (second(1, 0) * second(2, 2) - second(1, 2) * second(2, 0)) +
                   second(0, 2) * (second(1, 0) * second(2, 1) - second(1, 1) * second(2, 0));
  if (!(v2 > 0) || !(det > 0)) return absl::InvalidArgumentError("is flat (spans no volume)");
  out.volume = std::sqrt(1728 * det / (v2 * v2 * v2));
  const Real trace = second(0, 0) + second(1, 1) + second(2, 2);
  for (int i = 0; i < 3; ++i) {
    for (int j = 0; j < 3; ++j)
      out.unit_inertia(i, j) = ((i == j ? trace : Real(0)) - second(i, j)) / v2;
  }
  return out;
}

// A named frame (<site>), in its body's frame.
struct MjSite {
  std::string name;
  Pose pose;
  // its shape, which bounds a touch sensor's zone (MuJoCo's site type and size)
  ImportResult::ZoneShape shape = ImportResult::ZoneShape::kSphere;
  Vec3 size{Real(0.005), Real(0.005), Real(0.005)};
};

struct MjBody {
  std::string name;
  std::string where;
  std::vector<MjSite> sites;
  int parent = -1;  // index into bodies; -1 = world
  Pose local;       // in the parent frame
  Pose world;       // at qpos0
  std::vector<MjJoint> joints;
  std::vector<MjGeom> geoms;
  bool has_inertial = false;
  Real inertial_mass = 0;
  Vec3 inertial_com;
  Mat33 inertial_tensor;
  // Resolved mass properties.
  Real mass = 0;
  Vec3 com;
  Mat33 inertia;
  bool free = false;
  bool moving = false;  // a joint on it or on an ancestor
  bool mocap = false;   // mocap="true": placed by the user (ModelDesc::mocap_bodies)
  // A cloth element's (MJCF flatinertia): its mass at its origin with the inertia of a box of
  // these sides, in place of what its geoms give.
  Vec3 plate;
};

class MjcfLoader {
 public:
  explicit MjcfLoader(const MjcfOptions& options)
      : options_(options), balance_inertia_(options.balance_inertia) {}

  // The model, or the first error; an error names the unsupported elements ignored before it
  // (a <composite> left out leaves its body without mass, which is the error then reported).
  absl::StatusOr<ImportResult> Load(std::string_view xml, const std::string& file,
                                    const std::string& base_dir);

 private:
  absl::StatusOr<ImportResult> LoadModel(std::string_view xml, const std::string& file,
                                         const std::string& base_dir);
  // --- XML and includes ---
  absl::StatusOr<XMLDocument*> Parse(std::string_view xml, const std::string& file);
  std::string Where(const XMLElement* e) const;
  absl::Status Children(const XMLElement* e, std::vector<const XMLElement*>* out, int depth);
  // `kind`: the defaults' element kind where it is not the tag's (DefaultKind): an <equality>'s
  // children take <default><equality>.
  Elem Resolve(const XMLElement* e, const std::string& class_name, const char* kind = nullptr);
  void WarnUnsupportedAttributes(const Elem& e);
  absl::Status GeneralActuator(const Elem& e, Real gear, ActuatorDesc* a, std::string* skipped);
  // <muscle>'s parameters (MuscleDesc); its force and length range are left to
  // ResolveMuscles where MuJoCo's compiler computes them.
  absl::Status MuscleActuator(const Elem& e, ActuatorDesc* a);
  // The muscles' peak forces scale / acc0 and length ranges, as MuJoCo's compiler finds them.
  absl::Status ResolveMuscles();
  void WarnElement(const XMLElement* e, const std::string& context, const std::string& reason);

  // --- sections ---
  absl::Status ParseCompiler(const XMLElement* e);
  absl::Status ParseOption(const XMLElement* e);
  absl::Status ParseDefault(const XMLElement* e, const std::string& class_name,
                            const std::string& parent_class);
  absl::Status ParseWorld(const XMLElement* e);
  absl::Status ParseAssets(const XMLElement* e);
  absl::Status ParseMesh(const XMLElement* e);
  absl::Status ParseHeightField(const XMLElement* e);
  absl::Status ParseBody(const XMLElement* e, int parent, const std::string& childclass);
  bool global_coordinates_ = false;  // <compiler coordinate="global">
  absl::Status ExpandComposite(const XMLElement* e, int parent);
  absl::Status ParseGeom(const XMLElement* e, const std::string& class_name, MjGeom* geom);
  absl::Status ParseJoint(const XMLElement* e, const std::string& class_name, int body,
                          MjJoint* joint);
  absl::Status ParseInertial(const XMLElement* e, MjBody* body);
  absl::Status ParseSite(const XMLElement* e, const std::string& class_name, MjSite* site);
  absl::Status ParseActuators(const XMLElement* e);
  absl::StatusOr<TendonDesc> SliderCrank(const Elem& e, std::string* skip) const;
  absl::Status ParseEquality(const XMLElement* e);
  absl::Status EqualityTendon(const Elem& e);
  Real TendonInverseWeight(const TendonDesc& tendon) const;
  absl::Status ApplyCompositePins();
  absl::Status ApplySpringDampers();
  absl::Status ParseTendons(const XMLElement* e);
  // A <spatial> tendon's path: its <site>, <geom> and <pulley> children resolved to Axion's
  // bodies; *skip says why the tendon cannot be made (a site on a mocap body, more than four
  // bodies) where it cannot.
  absl::Status SpatialPath(const XMLElement* e, std::vector<TendonPathDesc>* path,
                           std::string* skip);
  absl::Status ParseSensors(const XMLElement* e);
  // The geom named `name` and its MJCF body (-1: the world's); nullptr where there is none.
  std::pair<const MjGeom*, int> FindGeom(const std::string& name) const;
  // A frame sensor's object or reference: `type` body, xbody, geom or site named `name`.
  absl::StatusOr<ImportResult::SensorFrame> SensorObject(const Elem& e, const char* type_key,
                                                         const char* name_key,
                                                         bool needs_axes) const;
  // A range attribute `name` and its flag (ctrlrange / ctrllimited, a tendon's range /
  // limited): limited where the flag says so, or (flag "auto", the default) where the range is
  // given under <compiler autolimits="true"> (the default); an error under "false".
  absl::Status ReadRange(const Elem& e, const char* name, const char* flag, bool* limited,
                         Real* lower, Real* upper) const;
  absl::Status EqualityJoint(const Elem& e);
  absl::Status ContactPair(const Elem& e);
  absl::Status ParseContact(const XMLElement* e);
  absl::Status ParseKeyframes(const XMLElement* e);
  void FileQpos0(std::vector<Real>* qpos0, int* nv) const;
  absl::Status FileStateBodies(const std::vector<Real>& qpos, const std::vector<Real>& qvel,
                               std::vector<Real>* pose, std::vector<Real>* velocity) const;
  absl::StatusOr<Quat> Orientation(const Elem& e);
  Real Angle(Real value) const { return degrees_ ? value * kPi / 180 : value; }

  // --- conversion ---
  absl::Status ComputeMass();
  absl::Status ResolveMass();
  absl::Status Convert();
  absl::Status ConvertJoints(int b, int parent_body);
  void ApplyCollisionRules();
  absl::Status ParseFlags(const XMLElement* flag);
  void ApplyFlags();
  void WarnHeldOffPlanes();
  void WarnAnchorOverlaps();
  void WarnLightBodies();

  const MjcfOptions& options_;
  io::Warnings warnings_;
  std::vector<std::string> unsupported_elements_;  // "<tag> in <context>", first occurrences
  std::string base_dir_;
  std::vector<std::unique_ptr<XMLDocument>> docs_;
  std::map<const XMLDocument*, std::string> doc_file_;

  // <compiler>
  bool degrees_ = true;
  std::string eulerseq_ = "xyz";
  std::string inertiafromgeom_ = "auto";
  // MuJoCo 3's default. 2.2's (false) refused a range given without its flag, so every file 2.2
  // loads means the same under either; files written for MuJoCo 3 often leave the flags out.
  bool autolimits_ = true;
  bool balance_inertia_ = false;  // <compiler balanceinertia>, or MjcfOptions::balance_inertia
  Real bound_mass_ = 0;           // <compiler boundmass>
  Real bound_inertia_ = 0;        // <compiler boundinertia>
  Real set_total_mass_ = -1;      // <compiler settotalmass>; <= 0: off
  // <compiler><lengthrange>: MuJoCo's mjLROpt, its defaults
  struct LengthRangeOptions {
    std::string mode = "muscle";
    bool use_existing = true, use_limit = false;
    Real accel = 20, max_force = 0, time_constant = 1, timestep = 0, total_time = 10, eval_time = 2,
         tolerance = Real(0.05);
  } length_range_;
  // Muscles whose peak force (force < 0: scale / acc0) or length range MuJoCo's compiler
  // computes: ResolveMuscles does, once the model is complete.
  struct PendingMuscle {
    int actuator = -1;  // in result_.model.actuators
    std::string where;  // the element, for errors
    Real scale = 0;     // > 0: the force is scale / acc0
    bool needs_range = false;
    // the transmission: a joint (its MuJoCo qvel index), a fixed tendon's joints with their
    // gear * coef, or a spatial tendon (TendonDesc index), and the limits uselimit may take
    std::vector<std::pair<std::string, Real>> joints;
    int spatial_tendon = -1;
    bool limited = false;
    Real limit[2] = {0, 0};
  };
  std::vector<PendingMuscle> pending_muscles_;
  // Per entry of MuJoCo's act (actuators with activation dynamics): its file actuator.
  std::vector<int> activation_actuators_;
  PendingMuscle next_muscle_;      // MuscleActuator's, until the actuator is made
  std::string collision_ = "all";  // <option collision>
  // <option><flag>: MuJoCo's switches of parts of the physics, applied to the whole model at
  // the end (ApplyFlags); each true unless disabled
  struct Flags {
    bool gravity = true, contact = true, limit = true, equality = true, frictionloss = true,
         passive = true, actuation = true;
  } flags_;
  std::string meshdir_;  // of <compiler meshdir> (else assetdir), relative to the model's file

  // <asset><mesh> by name: its triangles, scaled, in the mesh file's frame
  std::map<std::string, io::TriangleMesh> meshes_;
  // <asset><hfield> by name: its grid (heights normalised to [0, 1], as MuJoCo's) and size
  // (MuJoCo's: half extents x and y, the height of 1, the depth of the base)
  struct HeightFieldAsset {
    int rows = 0, cols = 0;
    std::vector<Real> elevation;
    std::array<Real, 4> size{};
  };
  std::map<std::string, HeightFieldAsset> hfields_;

  std::map<std::string, DefaultClass> classes_;
  std::vector<MjGeom> world_geoms_;
  std::vector<MjSite> world_sites_;
  std::vector<MjBody> bodies_;
  std::vector<const XMLElement*> actuator_sections_;
  std::vector<const XMLElement*> equality_sections_;
  std::vector<Elem> tendon_equalities_;  // <equality><tendon>, made after the tendons
  std::vector<const XMLElement*> contact_sections_;
  std::vector<const XMLElement*> keyframe_sections_;
  std::vector<const XMLElement*> tendon_sections_;
  std::map<std::string, int> tendon_target_;  // MJCF tendon -> TendonDesc index
  std::set<std::string> skipped_tendons_;     // tendons not created (paths, ...)
  // A box composite's soft constraints (MuJoCo's joint equalities): each slide pinned to its
  // reference by a spring (MJCF solreffix, solimpfix), applied once the masses are known; the
  // tendons holding neighbours together and the volume, whose holds take their softness from
  // the joints' child bodies (TendonInverseWeight)
  struct CompositePin {
    int body = 0;  // bodies_, its joint 0
    std::vector<Real> solref, solimp;
  };
  std::vector<CompositePin> composite_pins_;
  std::set<std::string> soft_fixed_holds_;
  std::map<std::string, int> spatial_tendons_;     // spatial tendons made: their TendonDesc
  std::set<std::pair<int, int>> excluded_bodies_;  // <contact><exclude>: MJCF bodies (-1 world)

  ImportResult result_;
  std::vector<int> axion_body_;  // per MJCF body: its Axion body, or kWorldBody
  std::vector<Pose> offset_;     // per MJCF body: its frame in that Axion body's frame
  // per MJCF body: the mocap body that carries it (itself, or a static descendant's), else -1;
  // offset_ is then in that mocap body's frame
  std::vector<int> mocap_of_;
  // Per Axion body: the MJCF body whose frame it is, and how many of that body's joints move
  // it (its own: all of them, -1; a light body of a chain: the joints up to its own).
  std::vector<std::pair<int, int>> axion_body_frame_;
  // Per MJCF actuator in file order (MuJoCo's ctrl order): its Axion actuator, or -1 (skipped).
  std::vector<int> actuator_target_;
  // What sensors read of the actuators, tendons and sites, by name (ParseSensors).
  struct FileActuator {
    int target = -1;  // Axion actuator, -1: skipped
    Real gear = 1;    // gear[0] (a site's: 1, its gears are a wrench)
    std::vector<std::pair<std::string, Real>> joints;  // its length: sum of coef qpos
    bool on_site = false;  // a site's, or a free or ball joint's (whole_joint)
    bool on_body = false;  // an adhesion's (a body transmission)
    bool whole_joint = false;
    int spatial_tendon = -1;  // on a spatial tendon: its TendonDesc
  };
  std::map<std::string, FileActuator> file_actuators_;
  std::map<std::string, std::vector<std::pair<std::string, Real>>> fixed_tendon_joints_;
  std::vector<std::vector<int>> file_body_shapes_;  // per MJCF body: its geoms' shapes
  // site -> the site and its MJCF body (-1: the world's)
  std::map<std::string, std::pair<const MjSite*, int>> site_by_name_;
  Vec3 magnetic_{0, Real(-0.5), 0};  // <option magnetic>
  std::vector<const XMLElement*> sensor_sections_;
  std::map<std::string, std::pair<int, int>> joint_target_;  // MJCF joint -> (joint, dof)
  std::set<std::string> joint_names_;
  std::map<std::string, JointKind> joint_kind_;
  // Documents of elements a <composite> expands into, and where each composite is.
  std::map<const XMLDocument*, std::string> generated_where_;
};

absl::StatusOr<XMLDocument*> MjcfLoader::Parse(std::string_view xml, const std::string& file) {
  auto doc = std::make_unique<XMLDocument>();
  if (doc->Parse(xml.data(), xml.size()) != tinyxml2::XML_SUCCESS) {
    return absl::InvalidArgumentError(
        absl::StrCat(file, ":", doc->ErrorLineNum(), ": malformed XML: ", doc->ErrorStr()));
  }
  XMLDocument* raw = doc.get();
  doc_file_[raw] = file;
  docs_.push_back(std::move(doc));
  return raw;
}

std::string MjcfLoader::Where(const XMLElement* e) const {
  auto generated = generated_where_.find(e->GetDocument());
  if (generated != generated_where_.end()) return generated->second;
  auto it = doc_file_.find(e->GetDocument());
  return absl::StrCat(it == doc_file_.end() ? "<xml>" : it->second, ":", e->GetLineNum());
}

// The children of `e` with every <include> replaced by the children of the included file's
// root, recursively, so each section reads as if the files were one.
absl::Status MjcfLoader::Children(const XMLElement* e, std::vector<const XMLElement*>* out,
                                  int depth) {
  for (const XMLElement* c = e->FirstChildElement(); c; c = c->NextSiblingElement()) {
    if (std::string(c->Name()) != "include") {
      out->push_back(c);
      continue;
    }
    const char* file = c->Attribute("file");
    if (!file) {
      return absl::InvalidArgumentError(
          absl::StrCat(Where(c), ": include: missing attribute 'file'"));
    }
    if (depth >= kMaxIncludeDepth) {
      return absl::InvalidArgumentError(absl::StrCat(Where(c), ": include: attribute 'file': '",
                                                     file, "' nests includes deeper than ",
                                                     kMaxIncludeDepth, " (recursive include?)"));
    }
    std::string path = io::JoinPath(base_dir_, file);
    absl::StatusOr<std::string> text = io::ReadFile(path, options_.file_root);
    if (!text.ok()) {
      return absl::Status(
          text.status().code(),
          absl::StrCat(Where(c), ": include: attribute 'file': ", text.status().message()));
    }
    AXION_IO_ASSIGN_OR_RETURN(XMLDocument * doc, Parse(*text, path));
    const XMLElement* root = doc->RootElement();
    if (!root || std::string(root->Name()) != "mujoco") {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ": included file must have a <mujoco> root element"));
    }
    AXION_IO_RETURN_IF_ERROR(Children(root, out, depth + 1));
  }
  return absl::OkStatus();
}

// An attribute's value over the one it inherits (a class's over its parent's, an element's over
// its class's). MuJoCo reads a vector attribute into the inherited values, so a `friction` of
// fewer than three numbers keeps the inherited torsional and rolling terms: "0.5" under a class
// of "1 0.02 0.01" is "0.5 0.02 0.01". Other attributes replace the inherited value.
std::string InheritAttribute(const std::string& key, const std::string& inherited,
                             const std::string& value) {
  if (key != "friction" || inherited.empty()) return value;
  std::vector<Real> given, base;
  if (!io::ParseReals(value, &given) || !io::ParseReals(inherited, &base)) return value;
  std::string merged = value;
  for (size_t k = given.size(); k < base.size(); ++k)
    absl::StrAppend(&merged, " ", absl::StrFormat("%.17g", base[k]));
  return merged;
}

Elem MjcfLoader::Resolve(const XMLElement* e, const std::string& class_name, const char* kind) {
  Elem out;
  out.xml = e;
  out.tag = e->Name();
  out.where = Where(e);
  std::string cls = class_name;
  if (const char* c = e->Attribute("class")) cls = c;
  auto class_it = classes_.find(cls);
  if (class_it != classes_.end()) {
    auto kind_it =
        class_it->second.attributes.find(kind ? std::string(kind) : DefaultKind(out.tag));
    if (kind_it != class_it->second.attributes.end()) out.attrs = kind_it->second;
  }
  for (const tinyxml2::XMLAttribute* a = e->FirstAttribute(); a; a = a->Next()) {
    std::string& value = out.attrs[a->Name()];
    value = InheritAttribute(a->Name(), value, a->Value());
    out.own.insert(a->Name());
  }
  out.name = out.Str("name");
  return out;
}

void MjcfLoader::WarnUnsupportedAttributes(const Elem& e) {
  const auto& table = SupportedAttributes();
  auto it = table.find(e.tag);
  // Attributes that only change how MuJoCo draws the model (colours, materials, the visualiser's
  // groups with the default inertiagrouprange, the texture directory) say so, so that the
  // warnings of "not supported" are the ones that change the physics.
  static const std::set<std::string>* const kRendering =
      new std::set<std::string>{"rgba", "material", "group", "texturedir", "width"};
  // The actuator shortcuts share one default set (DefaultClass): a default another shortcut
  // reads (a <muscle> default's force on a <motor>) is that shortcut's, not this one's to warn of.
  const auto read_by_another_actuator = [&](const std::string& key) {
    if (DefaultKind(e.tag) != "actuator" || e.own.count(key)) return false;
    for (const char* tag :
         {"motor", "position", "velocity", "general", "muscle", "intvelocity", "cylinder"}) {
      auto other = table.find(tag);
      if (other != table.end() && other->second.count(key)) return true;
    }
    return false;
  };
  for (const auto& [key, value] : e.attrs) {
    if (it != table.end() && it->second.count(key)) continue;
    if (read_by_another_actuator(key)) continue;
    const char* reason = kRendering->count(key) ? "' only affects rendering and was ignored"
                                                : "' is not supported and was ignored";
    warnings_.Add(
        absl::StrCat("attr:", e.tag, ":", key),
        absl::StrCat("<", e.tag, "> attribute '", key, reason, " (first at ", e.Describe(), ")"));
  }
}

void MjcfLoader::WarnElement(const XMLElement* e, const std::string& context,
                             const std::string& reason) {
  std::string tag = e->Name();
  if (absl::StrContains(reason, "not supported")) {
    std::string what = absl::StrCat("<", tag, "> in <", context, "> (", Where(e), ")");
    const std::string prefix = absl::StrCat("<", tag, "> in <", context, ">");
    bool seen = false;
    for (const std::string& u : unsupported_elements_) seen = seen || absl::StartsWith(u, prefix);
    if (!seen) unsupported_elements_.push_back(what);
  }
  warnings_.Add(absl::StrCat("elem:", context, ":", tag),
                absl::StrCat("element <", tag, "> in <", context, "> ", reason, " (first at ",
                             Where(e), ")"));
}

absl::Status MjcfLoader::ParseCompiler(const XMLElement* xml) {
  Elem e = Resolve(xml, "");
  WarnUnsupportedAttributes(e);
  std::string angle = e.Str("angle", degrees_ ? "degree" : "radian");
  if (angle != "degree" && angle != "radian")
    return e.Error("angle", "must be 'degree' or 'radian'");
  degrees_ = angle == "degree";
  inertiafromgeom_ = e.Str("inertiafromgeom", inertiafromgeom_);
  if (inertiafromgeom_ != "auto" && inertiafromgeom_ != "true" && inertiafromgeom_ != "false") {
    return e.Error("inertiafromgeom", "must be 'auto', 'true' or 'false'");
  }
  eulerseq_ = e.Str("eulerseq", eulerseq_);
  if (eulerseq_.size() != 3 || eulerseq_.find_first_not_of("xyzXYZ") != std::string::npos) {
    return e.Error("eulerseq", absl::StrCat("'", eulerseq_, "' is not three of xyzXYZ"));
  }
  std::string coordinate = e.Str("coordinate", global_coordinates_ ? "global" : "local");
  if (coordinate != "local" && coordinate != "global") {
    return e.Error("coordinate",
                   absl::StrCat("must be 'local' or 'global', got '", coordinate, "'"));
  }
  global_coordinates_ = coordinate == "global";
  AXION_IO_ASSIGN_OR_RETURN(autolimits_, e.Bool("autolimits", autolimits_));
  meshdir_ = e.Str("meshdir", e.Str("assetdir", meshdir_));
  AXION_IO_ASSIGN_OR_RETURN(balance_inertia_, e.Bool("balanceinertia", balance_inertia_));
  AXION_IO_ASSIGN_OR_RETURN(bound_mass_, e.Real1("boundmass", bound_mass_));
  if (!(bound_mass_ >= 0) || !std::isfinite(bound_mass_))
    return e.Error("boundmass", "must be finite and >= 0");
  AXION_IO_ASSIGN_OR_RETURN(bound_inertia_, e.Real1("boundinertia", bound_inertia_));
  if (!(bound_inertia_ >= 0) || !std::isfinite(bound_inertia_))
    return e.Error("boundinertia", "must be finite and >= 0");
  AXION_IO_ASSIGN_OR_RETURN(set_total_mass_, e.Real1("settotalmass", set_total_mass_));
  if (!std::isfinite(set_total_mass_)) return e.Error("settotalmass", "must be finite");
  std::vector<const XMLElement*> children;
  AXION_IO_RETURN_IF_ERROR(Children(xml, &children, 0));
  for (const XMLElement* c : children) {
    if (std::string(c->Name()) != "lengthrange") {
      WarnElement(c, "compiler", "is not supported and was ignored");
      continue;
    }
    // <lengthrange>: how muscles' length ranges are found (ResolveMuscles)
    Elem lr = Resolve(c, "");
    WarnUnsupportedAttributes(lr);
    LengthRangeOptions& o = length_range_;
    o.mode = lr.Str("mode", o.mode);
    if (o.mode != "none" && o.mode != "muscle" && o.mode != "muscleuser" && o.mode != "all")
      return lr.Error("mode", "must be 'none', 'muscle', 'muscleuser' or 'all'");
    AXION_IO_ASSIGN_OR_RETURN(o.use_existing, lr.Bool("useexisting", o.use_existing));
    AXION_IO_ASSIGN_OR_RETURN(o.use_limit, lr.Bool("uselimit", o.use_limit));
    AXION_IO_ASSIGN_OR_RETURN(o.accel, lr.Real1("accel", o.accel));
    AXION_IO_ASSIGN_OR_RETURN(o.max_force, lr.Real1("maxforce", o.max_force));
    AXION_IO_ASSIGN_OR_RETURN(o.time_constant, lr.Real1("timeconst", o.time_constant));
    AXION_IO_ASSIGN_OR_RETURN(o.timestep, lr.Real1("timestep", o.timestep));
    AXION_IO_ASSIGN_OR_RETURN(o.total_time, lr.Real1("inttotal", o.total_time));
    AXION_IO_ASSIGN_OR_RETURN(o.eval_time, lr.Real1("inteval", o.eval_time));
    AXION_IO_ASSIGN_OR_RETURN(o.tolerance, lr.Real1("tolrange", o.tolerance));
    if (!(o.accel > 0) || !std::isfinite(o.accel)) return lr.Error("accel", "must be > 0");
    if (!(o.max_force >= 0) || !std::isfinite(o.max_force))
      return lr.Error("maxforce", "must be >= 0");
    if (!(o.timestep >= 0) || !(o.timestep < 1)) return lr.Error("timestep", "must be in [0, 1)");
    if (!(o.total_time > 0) || !(o.total_time <= 1000))
      return lr.Error("inttotal", "must be in (0, 1000] s");
    if (!(o.eval_time > 0) || !(o.eval_time <= o.total_time))
      return lr.Error("inteval", "must be in (0, inttotal]");
    if (!std::isfinite(o.time_constant)) return lr.Error("timeconst", "must be finite");
    if (!(o.tolerance > 0) || !std::isfinite(o.tolerance))
      return lr.Error("tolrange", "must be > 0");
  }
  return absl::OkStatus();
}

absl::Status MjcfLoader::ParseAssets(const XMLElement* xml) {
  std::vector<const XMLElement*> children;
  AXION_IO_RETURN_IF_ERROR(Children(xml, &children, 0));
  for (const XMLElement* c : children) {
    std::string tag = c->Name();
    if (tag == "mesh") {
      AXION_IO_RETURN_IF_ERROR(ParseMesh(c));
    } else if (tag == "hfield") {
      AXION_IO_RETURN_IF_ERROR(ParseHeightField(c));
    } else if (tag == "texture" || tag == "material" || tag == "skin") {
      WarnElement(c, "asset", "only affects rendering and was ignored");
    } else {
      WarnElement(c, "asset", "is not supported and was ignored");
    }
  }
  return absl::OkStatus();
}

// <hfield>: its elevation from `file` (io::LoadHeightMap), `elevation` (MuJoCo 2.3 and later)
// or neither (zeros, for a program to fill: dm_control's terrains), normalised as MuJoCo does
// ((v - min) / (max - min), all zeros where every value is the same).
absl::Status MjcfLoader::ParseHeightField(const XMLElement* xml) {
  Elem e = Resolve(xml, "main");
  WarnUnsupportedAttributes(e);
  HeightFieldAsset field;
  const std::string name = e.Str("name");
  AXION_IO_ASSIGN_OR_RETURN(std::vector<Real> size, e.Reals("size", 4, 4));
  if (size.empty()) return e.Error("size", "is required (radius x, radius y, elevation, base)");
  for (int k : {0, 1, 3}) {
    if (!(size[k] > 0)) {
      return e.Error("size", absl::StrCat("its ", k == 3 ? "base depth (4th value)" : "radii",
                                          " must be positive, got '", e.Str("size"), "'"));
    }
  }
  if (size[2] < 0) return e.Error("size", "its elevation (3rd value) is negative");
  std::copy(size.begin(), size.end(), field.size.begin());
  AXION_IO_ASSIGN_OR_RETURN(int rows, e.Int("nrow", 0));
  AXION_IO_ASSIGN_OR_RETURN(int cols, e.Int("ncol", 0));
  if (e.Has("file")) {
    if (e.Has("nrow") || e.Has("ncol") || e.Has("elevation"))
      return e.Error("file", "given with nrow, ncol or elevation (a file brings its own grid)");
    const std::string path = io::JoinPath(io::JoinPath(base_dir_, meshdir_), e.Str("file"));
    absl::StatusOr<io::HeightMap> map = io::LoadHeightMap(path, options_.file_root);
    if (!map.ok()) return e.Error("file", std::string(map.status().message()));
    field.rows = map->rows;
    field.cols = map->cols;
    field.elevation = std::move(map->values);
  } else {
    if (rows < 2 || cols < 2) {
      return e.Error("", absl::StrCat("needs a file, or nrow and ncol of at least 2 (got ", rows,
                                      " x ", cols, ")"));
    }
    field.rows = rows;
    field.cols = cols;
    const size_t count = static_cast<size_t>(rows) * cols;
    AXION_IO_ASSIGN_OR_RETURN(field.elevation, e.Reals("elevation", count, count));
    if (field.elevation.empty()) field.elevation.assign(count, 0);
  }
  if (field.rows < 2 || field.cols < 2 || field.rows > kMaxHeightFieldSide ||
      field.cols > kMaxHeightFieldSide) {
    return e.Error("", absl::StrCat("a grid of ", field.rows, " x ", field.cols, " points; 2 to ",
                                    kMaxHeightFieldSide, " per side"));
  }
  const auto [low, high] = std::minmax_element(field.elevation.begin(), field.elevation.end());
  const Real min = *low, range = *high - *low;
  for (Real& v : field.elevation) v = range > 0 ? (v - min) / range : Real(0);
  if (name.empty()) return e.Error("name", "an hfield needs a name (geoms refer to it by name)");
  if (hfields_.count(name))
    return e.Error("name", absl::StrCat("hfield '", name, "' is defined twice"));
  hfields_[name] = std::move(field);
  return absl::OkStatus();
}

absl::Status MjcfLoader::ParseMesh(const XMLElement* xml) {
  Elem e = Resolve(xml, "main");
  WarnUnsupportedAttributes(e);
  io::TriangleMesh mesh;
  AXION_IO_ASSIGN_OR_RETURN(Vec3 scale, e.Vec("scale", Vec3{1, 1, 1}));
  std::string name = e.Str("name");
  if (e.Has("file")) {
    const std::string file = e.Str("file");
    if (name.empty()) {
      name = file.substr(file.find_last_of('/') + 1);
      name = name.substr(0, name.find_last_of('.'));
    }
    // as <include> paths: relative to the model's directory (and meshdir), absolute as given
    const std::string path = io::JoinPath(io::JoinPath(base_dir_, meshdir_), file);
    absl::StatusOr<io::TriangleMesh> loaded = io::LoadTriangleMesh(path, scale, options_.file_root);
    if (!loaded.ok()) return e.Error("file", std::string(loaded.status().message()));
    mesh = std::move(*loaded);
  } else if (e.Has("vertex")) {
    AXION_IO_ASSIGN_OR_RETURN(std::vector<Real> xyz,
                              e.Reals("vertex", 12, std::numeric_limits<size_t>::max()));
    if (xyz.size() % 3 != 0) return e.Error("vertex", "needs a multiple of 3 numbers");
    for (size_t i = 0; i < xyz.size(); i += 3)
      mesh.vertices.push_back(cwise_mul(Vec3{xyz[i], xyz[i + 1], xyz[i + 2]}, scale));
  } else {
    return e.Error("file", "a mesh needs a file or its vertices");
  }
  const int vertex_count = static_cast<int>(mesh.vertices.size());
  if (e.Has("face")) {
    AXION_IO_ASSIGN_OR_RETURN(std::vector<Real> index,
                              e.Reals("face", 3, std::numeric_limits<size_t>::max()));
    if (index.size() % 3 != 0) return e.Error("face", "needs a multiple of 3 vertex indices");
    mesh.triangles.clear();
    for (size_t i = 0; i < index.size(); i += 3) {
      std::array<int, 3> t;
      for (int k = 0; k < 3; ++k) {
        Real v = index[i + k];
        if (v != std::floor(v) || v < 0 || v >= vertex_count) {
          return e.Error("face",
                         absl::StrCat(v, " is not a vertex index (", vertex_count, " vertices)"));
        }
        t[k] = static_cast<int>(v);
      }
      mesh.triangles.push_back(t);
    }
  }
  if (mesh.triangles.empty()) {
    // Vertices alone: MuJoCo takes the faces of their convex hull.
    absl::StatusOr<HullData> hull = BuildHull(io::UniqueVertices(mesh.vertices));
    if (!hull.ok()) return e.Error("vertex", std::string(hull.status().message()));
    mesh.vertices.clear();
    for (int i = 0; i < hull->vertex_count(); ++i) mesh.vertices.push_back(hull->vertex(i));
    for (int f = 0; f + 1 < static_cast<int>(hull->face_offset.size()); ++f) {
      const int begin = hull->face_offset[f], end = hull->face_offset[f + 1];
      for (int k = begin + 1; k + 1 < end; ++k)
        mesh.triangles.push_back({hull->faces[begin], hull->faces[k], hull->faces[k + 1]});
    }
  }
  if (name.empty()) return e.Error("name", "a mesh without a file needs a name");
  if (meshes_.count(name)) {
    return e.Error("name", absl::StrCat("mesh '", name, "' is defined twice"));
  }
  meshes_[name] = std::move(mesh);
  return absl::OkStatus();
}

absl::Status MjcfLoader::ParseOption(const XMLElement* xml) {
  Elem e = Resolve(xml, "");
  WarnUnsupportedAttributes(e);
  // (a later <option> changes what it names and keeps the rest: softbox.xml's after its
  // included scene's; the first starts from MuJoCo's defaults, set before the file is read)
  SolverOptions& options = result_.model.options;
  AXION_IO_ASSIGN_OR_RETURN(options.timestep, e.Real1("timestep", options.timestep));
  if (!(options.timestep > 0)) return e.Error("timestep", "must be positive");
  AXION_IO_ASSIGN_OR_RETURN(options.gravity, e.Vec("gravity", options.gravity));
  // the field magnetometers read
  AXION_IO_ASSIGN_OR_RETURN(magnetic_, e.Vec("magnetic", magnetic_));
  // the medium (MuJoCo's inertia-box fluid model; SolverOptions::fluid_density)
  AXION_IO_ASSIGN_OR_RETURN(options.fluid_density, e.Real1("density", options.fluid_density));
  if (!(options.fluid_density >= 0) || !std::isfinite(options.fluid_density))
    return e.Error("density", "must be finite and >= 0");
  AXION_IO_ASSIGN_OR_RETURN(options.fluid_viscosity, e.Real1("viscosity", options.fluid_viscosity));
  if (!(options.fluid_viscosity >= 0) || !std::isfinite(options.fluid_viscosity))
    return e.Error("viscosity", "must be finite and >= 0");
  AXION_IO_ASSIGN_OR_RETURN(options.fluid_wind, e.Vec("wind", options.fluid_wind));
  for (int k = 0; k < 3; ++k) {
    if (!std::isfinite(options.fluid_wind[k])) return e.Error("wind", "must be finite");
  }
  // which contacts MuJoCo makes: every pair its filters pass and the explicit ones (all), only
  // the explicit ones (predefined: Gym's swimmer, which touches nothing), or only the filtered
  // ones (dynamic)
  collision_ = e.Str("collision", collision_);
  if (collision_ != "all" && collision_ != "predefined" && collision_ != "dynamic")
    return e.Error("collision", absl::StrCat("must be 'all', 'predefined' or 'dynamic', got '",
                                             collision_, "'"));
  // Axion's friction cone is MuJoCo's elliptic one (isotropic Coulomb friction); MuJoCo's
  // default pyramid approximates it by its edges
  const std::string cone = e.Str("cone", "pyramidal");
  if (cone != "pyramidal" && cone != "elliptic")
    return e.Error("cone", absl::StrCat("must be 'pyramidal' or 'elliptic', got '", cone, "'"));
  if (e.Has("cone") && cone == "pyramidal") {
    warnings_.Add("cone-pyramidal",
                  absl::StrCat(Where(xml),
                               ": option: cone=\"pyramidal\" was ignored: Axion's "
                               "friction cone is circular, MuJoCo's \"elliptic\""));
  }
  for (const XMLElement* c = xml->FirstChildElement(); c; c = c->NextSiblingElement()) {
    if (std::string(c->Name()) == "flag") {
      AXION_IO_RETURN_IF_ERROR(ParseFlags(c));
    } else {
      WarnElement(c, "option", "is not supported and was ignored");
    }
  }
  return absl::OkStatus();
}

// <flag>: the switches that turn parts of the physics off act on the model (ApplyFlags);
// "constraint" turns off contacts, limits, equalities and dry friction together. Switches of
// MuJoCo's own machinery (its warm start, energy, inverse dynamics, reference checks) change
// nothing here; others that would (filterparent, clampctrl, override, sensor, sensornoise:
// sensors are read without noise) warn when set away from MuJoCo's default.
absl::Status MjcfLoader::ParseFlags(const XMLElement* flag) {
  const std::set<std::string> inert = {"warmstart", "refsafe",  "energy",
                                       "fwdinv",    "multiccd", "island"};
  const std::set<std::string> off_by_default = {"override", "sensornoise"};
  for (const tinyxml2::XMLAttribute* a = flag->FirstAttribute(); a; a = a->Next()) {
    const std::string name = a->Name(), value = a->Value();
    if (value != "enable" && value != "disable") {
      return absl::InvalidArgumentError(absl::StrCat(Where(flag), ": flag: attribute '", name,
                                                     "': must be 'enable' or 'disable', got '",
                                                     value, "'"));
    }
    const bool on = value == "enable";
    bool* known = name == "gravity"        ? &flags_.gravity
                  : name == "contact"      ? &flags_.contact
                  : name == "limit"        ? &flags_.limit
                  : name == "equality"     ? &flags_.equality
                  : name == "frictionloss" ? &flags_.frictionloss
                  : name == "passive"      ? &flags_.passive
                  : name == "actuation"    ? &flags_.actuation
                                           : nullptr;
    if (known) {
      *known = on;
    } else if (name == "constraint") {
      if (!on) flags_.contact = flags_.limit = flags_.equality = flags_.frictionloss = false;
    } else if (!inert.count(name) && on == (off_by_default.count(name) > 0)) {
      // set away from MuJoCo's default
      warnings_.Add(absl::StrCat("flag:", name),
                    absl::StrCat("<flag> attribute '", name, "' is not supported and was ignored (",
                                 Where(flag), ")"));
    }
  }
  return absl::OkStatus();
}

// The parts of the physics <flag> turned off, taken out of the model as MuJoCo leaves them out
// of its step: gravity, every contact, joint and tendon limits, equalities (not parsed at all),
// dry friction, the passive forces (joint and tendon springs and dampers, the fluid), and the
// actuators (each then pushes with nothing: an effort of gear 0; their controls stay).
void MjcfLoader::ApplyFlags() {
  ModelDesc& model = result_.model;
  if (!flags_.gravity) model.options.gravity = Vec3{};
  if (!flags_.contact) {
    for (ShapeDesc& shape : model.shapes) shape.collision_group = 0;
    model.contact_pairs.clear();
  }
  for (JointDesc& joint : model.joints) {
    if (!flags_.limit) {
      joint.limited = false;
      for (AxisMode& mode : joint.axis_mode) {
        if (mode == AxisMode::kLimited) mode = AxisMode::kFree;
      }
    }
    if (!flags_.frictionloss) {
      joint.friction_loss = 0;
      joint.dof_friction_loss.clear();
    }
    if (!flags_.passive) {
      joint.drive.stiffness = joint.drive.damping = 0;
      for (DriveDesc& drive : joint.dof_drive) drive.stiffness = drive.damping = 0;
    }
  }
  for (TendonDesc& tendon : model.tendons) {
    if (!flags_.limit) tendon.limited = false;
    if (!flags_.frictionloss) tendon.friction_loss = 0;
    if (!flags_.passive) tendon.stiffness = tendon.damping = 0;
  }
  if (!flags_.passive) model.options.fluid_density = model.options.fluid_viscosity = 0;
  if (!flags_.actuation) {
    for (ActuatorDesc& a : model.actuators) {
      a.type = ActuatorType::kEffort;
      a.gear = 0;
      a.kp = a.kv = 0;
      a.force_limited = false;
    }
  }
}

absl::Status MjcfLoader::ParseDefault(const XMLElement* e, const std::string& class_name,
                                      const std::string& parent_class) {
  // Every top-level <default> is the main class (MuJoCo's rule): a later one adds to it, and
  // its nested classes start from main as it stands then.
  const bool top_level = parent_class.empty();
  if (classes_.count(class_name) && !top_level) {
    return absl::InvalidArgumentError(absl::StrCat(Where(e), ": default: attribute 'class': '",
                                                   class_name, "' is defined twice"));
  }
  DefaultClass cls;
  if (top_level) {
    cls = classes_[class_name];
  } else {
    cls = classes_.at(parent_class);
  }
  std::vector<const XMLElement*> children;
  AXION_IO_RETURN_IF_ERROR(Children(e, &children, 0));
  std::vector<const XMLElement*> nested;
  for (const XMLElement* c : children) {
    std::string tag = c->Name();
    if (tag == "default") {
      nested.push_back(c);
      continue;
    }
    auto& attrs = cls.attributes[DefaultKind(tag)];
    for (const tinyxml2::XMLAttribute* a = c->FirstAttribute(); a; a = a->Next()) {
      std::string& value = attrs[a->Name()];
      value = InheritAttribute(a->Name(), value, a->Value());
    }
  }
  classes_[class_name] = std::move(cls);
  for (const XMLElement* c : nested) {
    const char* name = c->Attribute("class");
    if (!name) {
      return absl::InvalidArgumentError(absl::StrCat(
          Where(c), ": default: missing attribute 'class' (nested defaults need one)"));
    }
    AXION_IO_RETURN_IF_ERROR(ParseDefault(c, name, class_name));
  }
  return absl::OkStatus();
}

absl::StatusOr<Quat> MjcfLoader::Orientation(const Elem& e) {
  static const char* kKeys[] = {"quat", "axisangle", "euler", "xyaxes", "zaxis"};
  // The element's own specifier wins over one inherited from its class.
  std::vector<std::string> own, inherited;
  for (const char* k : kKeys) {
    if (e.own.count(k))
      own.push_back(k);
    else if (e.Has(k))
      inherited.push_back(k);
  }
  if (own.size() > 1) {
    return e.Error(
        own[1], absl::StrCat("conflicts with '", own[0], "': only one orientation may be given"));
  }
  std::string key = !own.empty() ? own[0] : (!inherited.empty() ? inherited[0] : "");
  if (key.empty()) return Quat{};
  if (key == "quat") {
    AXION_IO_ASSIGN_OR_RETURN(std::vector<Real> q, e.Reals("quat", 4, 4));
    Quat quat{q[0], q[1], q[2], q[3]};
    if (quat_norm(quat) < Real(1e-12)) return e.Error("quat", "is zero");
    return quat_normalized(quat);
  }
  if (key == "axisangle") {
    AXION_IO_ASSIGN_OR_RETURN(std::vector<Real> a, e.Reals("axisangle", 4, 4));
    Vec3 axis{a[0], a[1], a[2]};
    if (norm(axis) < Real(1e-12)) return e.Error("axisangle", "axis is zero");
    return quat_from_axis_angle(axis, Angle(a[3]));
  }
  if (key == "euler") {
    AXION_IO_ASSIGN_OR_RETURN(std::vector<Real> a, e.Reals("euler", 3, 3));
    Quat q;
    for (int i = 0; i < 3; ++i) {
      char c = eulerseq_[i];
      Vec3 axis{0, 0, 0};
      axis[(c == 'x' || c == 'X') ? 0 : (c == 'y' || c == 'Y') ? 1 : 2] = 1;
      Quat r = quat_from_axis_angle(axis, Angle(a[i]));
      // Lower case: rotations about the moving (intrinsic) axes; upper case: fixed axes.
      q = (c >= 'a') ? q * r : r * q;
    }
    return quat_normalized(q);
  }
  if (key == "xyaxes") {
    AXION_IO_ASSIGN_OR_RETURN(std::vector<Real> a, e.Reals("xyaxes", 6, 6));
    Vec3 x = normalized(Vec3{a[0], a[1], a[2]});
    Vec3 y{a[3], a[4], a[5]};
    y = normalized(y - dot(x, y) * x);
    Vec3 z = normalized(cross(x, y));
    if (norm(x) < Real(0.5) || norm(y) < Real(0.5) || norm(z) < Real(0.5)) {
      return e.Error("xyaxes", "axes are zero or parallel");
    }
    Mat33 r;
    for (int i = 0; i < 3; ++i) {
      r(i, 0) = x[i];
      r(i, 1) = y[i];
      r(i, 2) = z[i];
    }
    return io::QuatFromMatrix(r);
  }
  AXION_IO_ASSIGN_OR_RETURN(Vec3 z, e.Vec("zaxis", Vec3{0, 0, 1}));
  if (norm(z) < Real(1e-12)) return e.Error("zaxis", "is zero");
  return io::QuatFromZAxis(normalized(z));
}

absl::Status MjcfLoader::ParseGeom(const XMLElement* xml, const std::string& class_name,
                                   MjGeom* geom) {
  Elem e = Resolve(xml, class_name);
  WarnUnsupportedAttributes(e);
  geom->name = e.name;
  geom->where = e.Describe();
  std::string type = e.Str("type", "sphere");
  AXION_IO_ASSIGN_OR_RETURN(std::vector<Real> size, e.Reals("size", 0, 3, {}));
  size.resize(3, 0);
  Vec3 s{size[0], size[1], size[2]};
  AXION_IO_ASSIGN_OR_RETURN(Vec3 pos, e.Vec("pos", Vec3{}));
  AXION_IO_ASSIGN_OR_RETURN(Quat quat, Orientation(e));
  if (e.Has("fromto")) {
    if (type != "capsule" && type != "cylinder" && type != "box" && type != "ellipsoid") {
      return e.Error("fromto", absl::StrCat("not allowed for type '", type, "'"));
    }
    AXION_IO_ASSIGN_OR_RETURN(std::vector<Real> ft, e.Reals("fromto", 6, 6));
    Vec3 from{ft[0], ft[1], ft[2]}, to{ft[3], ft[4], ft[5]};
    Vec3 d = to - from;
    if (norm(d) < Real(1e-12)) return e.Error("fromto", "the two points coincide");
    pos = Real(0.5) * (from + to);
    quat = io::QuatFromZAxis(d);
    if (type == "capsule" || type == "cylinder") {
      s.y = Real(0.5) * norm(d);
    } else {
      // MuJoCo 2.2 makes fromto boxes and ellipsoids square in cross-section: size[0] twice.
      s.y = s.x;
      s.z = Real(0.5) * norm(d);
    }
  }
  geom->pose = {pos, quat};

  io::MassShape mass_shape = io::MassShape::kSphere;
  auto need = [&](int count) -> absl::Status {
    for (int i = 0; i < count; ++i) {
      if (!(s[i] > 0)) {
        return e.Error("size", absl::StrCat("type '", type, "' needs ", count,
                                            " positive values, got '", e.Str("size"), "'"));
      }
    }
    return absl::OkStatus();
  };
  if (type == "plane") {
    geom->type = ShapeType::kPlane;
    if (s.x > 0 || s.y > 0) {
      warnings_.Add("finite-plane",
                    absl::StrCat("finite plane ", geom->where, " is treated as an infinite plane"));
    }
  } else if (type == "sphere") {
    AXION_IO_RETURN_IF_ERROR(need(1));
    geom->type = ShapeType::kSphere;
    geom->size = {s.x, 0, 0};
    mass_shape = io::MassShape::kSphere;
  } else if (type == "capsule" || type == "cylinder") {
    AXION_IO_RETURN_IF_ERROR(need(2));
    geom->type = type == "capsule" ? ShapeType::kCapsule : ShapeType::kCylinder;
    geom->size = {s.x, s.y, 0};
    mass_shape = type == "capsule" ? io::MassShape::kCapsule : io::MassShape::kCylinder;
  } else if (type == "box") {
    AXION_IO_RETURN_IF_ERROR(need(3));
    geom->type = ShapeType::kBox;
    geom->size = s;
    mass_shape = io::MassShape::kBox;
  } else if (type == "ellipsoid") {
    AXION_IO_RETURN_IF_ERROR(need(3));
    mass_shape = io::MassShape::kEllipsoid;
    if (s.x == s.y && s.y == s.z) {
      geom->type = ShapeType::kSphere;
      geom->size = {s.x, 0, 0};
    } else {
      // Axion has no ellipsoid: a hull of 114 surface points is within 2% of its radii.
      geom->type = ShapeType::kConvexHull;
      geom->vertices = io::EllipsoidHullPoints(s, 8, 16);
      warnings_.Add(
          "ellipsoid",
          absl::StrCat("ellipsoid ", geom->where, " collides as a convex hull of ",
                       geom->vertices.size(), " surface points (mass properties are exact)"));
    }
  } else if (type == "mesh") {
    const std::string mesh_name = e.Str("mesh");
    if (mesh_name.empty()) return e.Error("mesh", "a mesh geom needs it");
    auto mesh = meshes_.find(mesh_name);
    if (mesh == meshes_.end()) {
      return e.Error("mesh", absl::StrCat("no <mesh> asset is named '", mesh_name, "'"));
    }
    absl::StatusOr<MeshMass> mass = MuJoCoMeshMass(mesh->second);
    if (!mass.ok()) {
      return e.Error("mesh", absl::StrCat("mesh '", mesh_name, "' ", mass.status().message()));
    }
    geom->type = ShapeType::kConvexHull;
    geom->vertices = io::UniqueVertices(mesh->second.vertices);
    warnings_.Add("mesh-hull",
                  absl::StrCat("mesh ", geom->where,
                               " collides as the convex hull of its vertices (its mass "
                               "properties are MuJoCo 2.2's for the mesh)"));
    if (e.Has("mass")) {
      AXION_IO_ASSIGN_OR_RETURN(geom->mass, e.Real1("mass", 0));
      if (geom->mass < 0) return e.Error("mass", absl::StrCat(geom->mass, " is negative"));
    } else {
      AXION_IO_ASSIGN_OR_RETURN(Real density, e.Real1("density", 1000));
      if (density < 0) return e.Error("density", absl::StrCat(density, " is negative"));
      geom->mass = density * mass->volume;
    }
    geom->mass_center = pos + rotate(quat, mass->com);
    geom->inertia = io::RotateTensor(quat, geom->mass * mass->unit_inertia);
    geom->has_mass = true;
  } else if (type == "hfield") {
    // MuJoCo's grid: heights = elevation x size[2], solid down to -size[3]; no mass
    const std::string field_name = e.Str("hfield");
    if (field_name.empty()) return e.Error("hfield", "an hfield geom needs it");
    auto field = hfields_.find(field_name);
    if (field == hfields_.end()) {
      return e.Error("hfield", absl::StrCat("no <hfield> asset is named '", field_name, "'"));
    }
    const HeightFieldAsset& asset = field->second;
    geom->type = ShapeType::kHeightField;
    geom->size = {asset.size[0], asset.size[1], asset.size[3]};
    geom->heightfield.rows = asset.rows;
    geom->heightfield.cols = asset.cols;
    geom->heightfield.heights = asset.elevation;
    for (Real& z : geom->heightfield.heights) z *= asset.size[2];
  } else {
    return e.Error("type", absl::StrCat("geom type '", type,
                                        "' is not supported (plane, sphere, capsule, cylinder, "
                                        "box, ellipsoid, mesh, hfield are)"));
  }

  if (geom->type != ShapeType::kPlane && geom->type != ShapeType::kHeightField && type != "mesh") {
    geom->mass_center = pos;
    Real volume = io::ShapeVolume(mass_shape, s);
    if (e.Has("mass")) {
      AXION_IO_ASSIGN_OR_RETURN(geom->mass, e.Real1("mass", 0));
      if (geom->mass < 0) return e.Error("mass", absl::StrCat(geom->mass, " is negative"));
    } else {
      AXION_IO_ASSIGN_OR_RETURN(Real density, e.Real1("density", 1000));
      if (density < 0) return e.Error("density", absl::StrCat(density, " is negative"));
      geom->mass = density * volume;
    }
    geom->inertia =
        io::RotateTensor(quat, mat33_diag(geom->mass * io::ShapeUnitInertia(mass_shape, s)));
    geom->has_mass = true;
  }
  // sliding, torsional (m) and rolling (m) friction; values left out keep MuJoCo's defaults
  AXION_IO_ASSIGN_OR_RETURN(std::vector<Real> friction,
                            e.Reals("friction", 1, 3, {1, Real(0.005), Real(0.0001)}));
  if (friction[0] < 0) return e.Error("friction", "sliding friction is negative");
  if (friction.size() > 1 && friction[1] < 0)
    return e.Error("friction", "torsional friction is negative");
  if (friction.size() > 2 && friction[2] < 0)
    return e.Error("friction", "rolling friction is negative");
  geom->friction = friction[0];
  if (friction.size() > 1) geom->torsional_friction = friction[1];
  if (friction.size() > 2) geom->rolling_friction = friction[2];
  AXION_IO_ASSIGN_OR_RETURN(geom->condim, e.Int("condim", 3));
  if (geom->condim != 1 && geom->condim != 3 && geom->condim != 4 && geom->condim != 6) {
    return e.Error("condim", absl::StrCat(geom->condim, " is not 1, 3, 4 or 6"));
  }
  AXION_IO_ASSIGN_OR_RETURN(geom->priority, e.Int("priority", 0));
  AXION_IO_ASSIGN_OR_RETURN(geom->margin, e.Real1("margin", 0));
  if (geom->margin < 0) return e.Error("margin", "is negative");
  AXION_IO_ASSIGN_OR_RETURN(geom->gap, e.Real1("gap", 0));
  if (geom->gap < 0) return e.Error("gap", "is negative");
  AXION_IO_ASSIGN_OR_RETURN(geom->contype, e.Int("contype", 1));
  AXION_IO_ASSIGN_OR_RETURN(geom->conaffinity, e.Int("conaffinity", 1));
  return absl::OkStatus();
}

absl::Status MjcfLoader::ParseJoint(const XMLElement* xml, const std::string& class_name, int body,
                                    MjJoint* joint) {
  Elem e = Resolve(xml, class_name);
  WarnUnsupportedAttributes(e);
  const MjBody& b = bodies_[body];
  joint->name = e.name.empty() ? absl::StrCat(b.name, "_joint", b.joints.size()) : e.name;
  joint->where = e.Describe();
  if (e.tag == "freejoint") {
    joint->kind = JointKind::kFree;
    return absl::OkStatus();
  }
  std::string type = e.Str("type", "hinge");
  if (type == "hinge")
    joint->kind = JointKind::kHinge;
  else if (type == "slide")
    joint->kind = JointKind::kSlide;
  else if (type == "ball")
    joint->kind = JointKind::kBall;
  else if (type == "free")
    joint->kind = JointKind::kFree;
  else
    return e.Error("type", absl::StrCat("unknown joint type '", type, "'"));
  if (joint->kind == JointKind::kFree) {
    if (e.Has("springdamper"))
      warnings_.Add("springdamper-free",
                    absl::StrCat("springdamper on a free joint (", joint->where,
                                 ") is not supported and was ignored"));
    return absl::OkStatus();
  }

  AXION_IO_ASSIGN_OR_RETURN(joint->pos, e.Vec("pos", Vec3{}));
  AXION_IO_ASSIGN_OR_RETURN(Vec3 axis, e.Vec("axis", Vec3{0, 0, 1}));
  if (norm(axis) < Real(1e-12)) return e.Error("axis", "is zero");
  joint->axis = normalized(axis);

  // `limited` defaults to "auto": "true when a range is given" with autolimits (the default),
  // and an error under <compiler autolimits="false"/>.
  std::string limited = e.Str("limited", "auto");
  if (limited == "auto") {
    if (e.Has("range") && !autolimits_) {
      return e.Error("range",
                     "given without 'limited' under <compiler autolimits=\"false\"/>: set "
                     "limited=\"true\" or \"false\"");
    }
    joint->limited = e.Has("range");
  } else {
    AXION_IO_ASSIGN_OR_RETURN(joint->limited, e.Bool("limited", false));
  }
  // Angles of hinge and ball joints follow <compiler angle>; slides are in metres.
  bool angular = joint->kind != JointKind::kSlide;
  auto convert = [&](Real v) { return angular ? Angle(v) : v; };
  AXION_IO_ASSIGN_OR_RETURN(std::vector<Real> range, e.Reals("range", 2, 2, {0, 0}));
  joint->range[0] = convert(range[0]);
  joint->range[1] = convert(range[1]);
  if (joint->limited && !(joint->range[0] < joint->range[1]) && joint->kind != JointKind::kBall) {
    return e.Error("range", absl::StrCat("lower ", range[0], " must be below upper ", range[1]));
  }
  AXION_IO_ASSIGN_OR_RETURN(joint->stiffness, e.Real1("stiffness", 0));
  AXION_IO_ASSIGN_OR_RETURN(joint->damping, e.Real1("damping", 0));
  AXION_IO_ASSIGN_OR_RETURN(joint->armature, e.Real1("armature", 0));
  AXION_IO_ASSIGN_OR_RETURN(joint->frictionloss, e.Real1("frictionloss", 0));
  if (joint->frictionloss < 0) return e.Error("frictionloss", "is negative");
  if (joint->stiffness < 0) return e.Error("stiffness", "is negative");
  if (joint->damping < 0) return e.Error("damping", "is negative");
  if (joint->armature < 0) return e.Error("armature", "is negative");
  // MuJoCo: given, both must be positive (0 0 is none)
  AXION_IO_ASSIGN_OR_RETURN(std::vector<Real> springdamper, e.Reals("springdamper", 2, 2, {0, 0}));
  if ((springdamper[0] != 0 || springdamper[1] != 0) &&
      !(springdamper[0] > 0 && springdamper[1] > 0)) {
    return e.Error("springdamper", "needs a positive time constant and damping ratio (or 0 0)");
  }
  joint->springdamper[0] = springdamper[0];
  joint->springdamper[1] = springdamper[1];
  AXION_IO_ASSIGN_OR_RETURN(Real ref, e.Real1("ref", 0));
  AXION_IO_ASSIGN_OR_RETURN(Real springref, e.Real1("springref", 0));
  joint->ref = convert(ref);
  joint->springref = convert(springref);
  if (joint->kind == JointKind::kBall) {
    // MuJoCo limits the rotation angle by the larger range entry (mj_instantiateLimit)
    const Real cone = std::max(joint->range[0], joint->range[1]);
    if (joint->limited && !(cone > 0))
      return e.Error("range", absl::StrCat("of a ball joint must have a positive entry (the "
                                           "largest turn), got ",
                                           range[0], " ", range[1]));
    if (joint->limited && cone >= Real(3.14159265358979323846)) {
      warnings_.Add("ball-limit-wide",
                    absl::StrCat("ball joint ranges of pi or more never bind and were dropped "
                                 "(first at ",
                                 joint->where, ")"));
      joint->limited = false;
    }
    joint->range[0] = 0;
    joint->range[1] = cone;
    // MuJoCo's ball springs pull toward the initial configuration, whatever ref and springref
    joint->ref = 0;
    joint->springref = 0;
  }
  return absl::OkStatus();
}

absl::Status MjcfLoader::ParseInertial(const XMLElement* xml, MjBody* body) {
  Elem e = Resolve(xml, "");
  WarnUnsupportedAttributes(e);
  e.name = body->name;
  e.tag = "inertial of body";
  if (!e.Has("mass")) return e.Error("mass", "is required");
  AXION_IO_ASSIGN_OR_RETURN(body->inertial_mass, e.Real1("mass", 0));
  if (body->inertial_mass < 0)
    return e.Error("mass", absl::StrCat(body->inertial_mass, " is negative"));
  AXION_IO_ASSIGN_OR_RETURN(body->inertial_com, e.Vec("pos", Vec3{}));
  if (e.Has("diaginertia") == e.Has("fullinertia")) {
    return e.Error("diaginertia", "exactly one of 'diaginertia' and 'fullinertia' is required");
  }
  if (e.Has("diaginertia")) {
    AXION_IO_ASSIGN_OR_RETURN(Quat quat, Orientation(e));
    AXION_IO_ASSIGN_OR_RETURN(Vec3 d, e.Vec("diaginertia", Vec3{}));
    // (the triangle inequality is checked on the body's resolved inertia, ComputeMass)
    for (int i = 0; i < 3; ++i) {
      if (d[i] < 0) return e.Error("diaginertia", "has a negative moment");
    }
    body->inertial_tensor = io::RotateTensor(quat, mat33_diag(d));
  } else {
    // MuJoCo takes fullinertia in the body frame and derives the inertial frame's orientation
    // from its eigenvectors, so an explicit orientation cannot be combined with it.
    for (const char* k : {"quat", "axisangle", "euler", "xyaxes", "zaxis"}) {
      if (e.Has(k)) return e.Error(k, "cannot be combined with 'fullinertia'");
    }
    AXION_IO_ASSIGN_OR_RETURN(std::vector<Real> f, e.Reals("fullinertia", 6, 6));
    Mat33 t;
    t(0, 0) = f[0];
    t(1, 1) = f[1];
    t(2, 2) = f[2];
    t(0, 1) = t(1, 0) = f[3];
    t(0, 2) = t(2, 0) = f[4];
    t(1, 2) = t(2, 1) = f[5];
    // Positive definite by Sylvester's criterion (leading minors).
    Real m2 = t(0, 0) * t(1, 1) - t(0, 1) * t(0, 1);
    if (!(t(0, 0) > 0 && m2 > 0 && det(t) > 0)) {
      return e.Error("fullinertia", "is not positive definite");
    }
    body->inertial_tensor = t;
  }
  body->has_inertial = true;
  return absl::OkStatus();
}

absl::Status MjcfLoader::ParseBody(const XMLElement* xml, int parent,
                                   const std::string& inherited_childclass) {
  Elem e = Resolve(xml, "");
  WarnUnsupportedAttributes(e);
  int index = static_cast<int>(bodies_.size());
  bodies_.emplace_back();
  {
    MjBody& body = bodies_.back();
    body.name = e.name.empty() ? absl::StrCat("body", index + 1) : e.name;
    body.where = e.Describe();
    body.parent = parent;
    AXION_IO_ASSIGN_OR_RETURN(body.mocap, e.Bool("mocap", false));
    if (body.mocap && parent >= 0)
      return e.Error("mocap", "is set on a body that is not a child of the world (MuJoCo's rule)");
    Pose given;
    AXION_IO_ASSIGN_OR_RETURN(given.pos, e.Vec("pos", Vec3{}));
    AXION_IO_ASSIGN_OR_RETURN(given.quat, Orientation(e));
    Pose parent_world = parent < 0 ? Pose{} : bodies_[parent].world;
    if (global_coordinates_) {
      body.world = given;
      body.local = io::ComposePose(io::InversePose(parent_world), given);
    } else {
      body.local = given;
      body.world = io::ComposePose(parent_world, body.local);
    }
  }
  // <compiler coordinate="global">: the body's geoms, joints and inertial are given in the world
  // frame too; this takes them into the body's.
  const Pose to_body = io::InversePose(bodies_[index].world);
  std::string childclass = e.Str("childclass", inherited_childclass);
  if (!childclass.empty() && !classes_.count(childclass)) {
    return e.Error("childclass", absl::StrCat("unknown default class '", childclass, "'"));
  }
  std::vector<const XMLElement*> children;
  AXION_IO_RETURN_IF_ERROR(Children(xml, &children, 0));
  for (const XMLElement* c : children) {
    std::string tag = c->Name();
    std::string cls = childclass.empty() ? "main" : childclass;
    if (const char* explicit_class = c->Attribute("class")) {
      if (!classes_.count(explicit_class)) {
        return absl::InvalidArgumentError(
            absl::StrCat(Where(c), ": ", tag, ": attribute 'class': unknown default class '",
                         explicit_class, "'"));
      }
    }
    if (tag == "geom") {
      MjGeom geom;
      AXION_IO_RETURN_IF_ERROR(ParseGeom(c, cls, &geom));
      if (geom.type == ShapeType::kPlane || geom.type == ShapeType::kHeightField) {
        return absl::InvalidArgumentError(
            absl::StrCat(geom.where, ": attribute 'type': ",
                         geom.type == ShapeType::kPlane ? "planes" : "height fields (hfield)",
                         " are only allowed in <worldbody>"));
      }
      if (global_coordinates_) {
        geom.pose = io::ComposePose(to_body, geom.pose);
        geom.mass_center = to_body.pos + rotate(to_body.quat, geom.mass_center);
        geom.inertia = io::RotateTensor(to_body.quat, geom.inertia);
      }
      bodies_[index].geoms.push_back(std::move(geom));
    } else if (tag == "joint" || tag == "freejoint") {
      MjJoint joint;
      AXION_IO_RETURN_IF_ERROR(ParseJoint(c, cls, index, &joint));
      if (global_coordinates_) {
        joint.pos = to_body.pos + rotate(to_body.quat, joint.pos);
        joint.axis = rotate(to_body.quat, joint.axis);
      }
      if (joint_names_.count(joint.name)) {
        return absl::InvalidArgumentError(absl::StrCat(
            joint.where, ": attribute 'name': joint name '", joint.name, "' is used twice"));
      }
      joint_names_.insert(joint.name);
      bodies_[index].joints.push_back(std::move(joint));
    } else if (tag == "inertial") {
      if (bodies_[index].has_inertial) {
        return absl::InvalidArgumentError(absl::StrCat(Where(c), ": body '", bodies_[index].name,
                                                       "' has more than one <inertial>"));
      }
      AXION_IO_RETURN_IF_ERROR(ParseInertial(c, &bodies_[index]));
      if (global_coordinates_) {
        MjBody& body = bodies_[index];
        body.inertial_com = to_body.pos + rotate(to_body.quat, body.inertial_com);
        body.inertial_tensor = io::RotateTensor(to_body.quat, body.inertial_tensor);
      }
    } else if (tag == "body") {
      AXION_IO_RETURN_IF_ERROR(ParseBody(c, index, childclass));
    } else if (tag == "composite") {
      if (global_coordinates_) {
        return absl::InvalidArgumentError(absl::StrCat(
            Where(c), ": composite: not supported with <compiler coordinate=\"global\">"));
      }
      AXION_IO_RETURN_IF_ERROR(ExpandComposite(c, index));
    } else if (tag == "site") {
      MjSite site;
      AXION_IO_RETURN_IF_ERROR(ParseSite(c, cls, &site));
      if (global_coordinates_) site.pose = io::ComposePose(to_body, site.pose);
      bodies_[index].sites.push_back(std::move(site));
    } else if (tag == "camera" || tag == "light") {
      WarnElement(c, "body", "has no physical effect and was ignored");
    } else {
      WarnElement(c, "body", "is not supported and was ignored");
    }
  }
  // Validate the joint set now that the body is complete.
  MjBody& body = bodies_[index];
  int free_count = 0;
  for (const MjJoint& j : body.joints) free_count += j.kind == JointKind::kFree;
  if (free_count > 0) {
    if (body.joints.size() > 1) {
      return absl::InvalidArgumentError(absl::StrCat(
          body.where, ": a free joint cannot be combined with other joints in one body"));
    }
    if (parent >= 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          body.joints[0].where,
          ": free joints are only allowed in bodies that are children of <worldbody>"));
    }
    body.free = true;
  }
  return absl::OkStatus();
}

// <composite> as MuJoCo 2.2 expands it, into the bodies, joints and geoms it stands for (probed
// against libmujoco's compiled models), which are then parsed as if the file had them:
//   particle: count[0] x count[1] x count[2] bodies at offset + spacing (i - count / 2) (integer
//     division), z fastest, each on three slide joints, with the template geom;
//   rope, loop: elements of length `spacing` along x; the body holding the composite is element
//     k of its name prefix + "B<k>" and gets geom G<k> (the template, its long axis turned onto
//     x). Elements k+1, ... chain on along +x, k-1, ..., 0 along -x, each on two hinges (y, then
//     z: the joint kind "main") at its end toward the holder, named J0_<i>, J1_<i>. A rope runs
//     straight; a loop turns by 2 pi / count at each joint and closes with a <connect> between
//     B0 and its last element (its end, -spacing/2 along B0's x) whose bodies never collide.
//   grid: count[0] x count[1] bodies B<i>_<j> at offset + spacing (i - count / 2) (real
//     division; z the offset's), each on three slide joints J<axis>_<i>_<j> but where pinned
//     (<pin coord>), with geom G<i>_<j> and site S<i>_<j>; spatial tendons T0_<i>_<j> from each
//     site to the next along i, then T1_<i>_<j> along j, each held at its length by a tendon
//     <equality> (solref 0.01 1, solimp 0.99 0.99: MuJoCo's).
//   cloth: count[0] x count[1] elements B<i>_<j>, the holding body element (ci, cj) by its
//     name; a tree from it: its column along +y then -y, then its row along +x and -x, each of
//     the row's elements with its column; each element at +-spacing from its parent on two
//     hinges at the parent's side (across the step, then about z: J0_<i>_<j>, J1_<i>_<j>), its
//     geom turned along x where i + j is even and along y where odd. Spatial tendons T<i>_<j>
//     close the rows the tree leaves out (each row but cj, along x), and with a shear template
//     TS<i>_<j> the diagonals (i, j) to (i + 1, j + 1), each held by a tendon <equality>
//     (MuJoCo's default solref); flatinertia f gives every element the inertia of a
//     spacing x spacing x f spacing box at its origin.
// The elements take MuJoCo's built-in defaults and the templates' attributes, never the file's
// default classes (probed: a file whose geoms default to boxes gets spherical particles), and
// particles are frictionless (condim 1) unless their template says otherwise.
//   box: the elements B<i>_<j>_<k> on the surface of a count[0] x count[1] x count[2] grid
//     about the holder (offset ignored, as MuJoCo 2.2 does), each on a slide J<i>_<j>_<k> along
//     its ray from the centre (its z axis, turned from the holder's the shortest way), its geom
//     G<i>_<j>_<k> (a sphere or a capsule, contype 0) reaching inwards from it; the holder's
//     centre a sphere Gcenter of twice the elements' radius (contype 0). MuJoCo's equalities:
//     each slide held at its reference (the slide template's solreffix, solimpfix) becomes the
//     slide's spring-damper (ApplyCompositePins); each slide with its neighbours along i, j and
//     k (solrefsmooth, solimpsmooth) a held fixed tendon T<i>_<j>_<k>_<axis>; the sum of all
//     slides, the volume, the held tendon T (solref 0.01 1, solimp 0.99 0.99: MuJoCo's).
// Other types (cylinder, ellipsoid) are skipped with a warning, as are skins and the twist
// and stretch joint kinds.
absl::Status MjcfLoader::ExpandComposite(const XMLElement* xml, int parent) {
  const std::string where = Where(xml);
  auto error = [&](const std::string& what) {
    return absl::InvalidArgumentError(absl::StrCat(where, ": composite: ", what));
  };
  const char* type_text = xml->Attribute("type");
  const std::string type = type_text ? type_text : "";
  if (type != "particle" && type != "grid" && type != "cloth" && type != "rope" && type != "loop" &&
      type != "box") {
    // named by a later error too (its bodies missing, a holder may have no mass)
    const std::string what = absl::StrCat("<composite type=\"", type, "\">");
    bool seen = false;
    for (const std::string& u : unsupported_elements_) seen = seen || absl::StartsWith(u, what);
    if (!seen) unsupported_elements_.push_back(absl::StrCat(what, " (", where, ")"));
    warnings_.Add(
        absl::StrCat("composite-type:", type),
        absl::StrCat("<composite type=\"", type, "\"> is not supported and was ignored (first at ",
                     where, "): particle, grid, cloth, rope, loop and box are"));
    return absl::OkStatus();
  }
  std::vector<Real> count, spacing, offset;
  if (!io::ParseReals(xml->Attribute("count") ? xml->Attribute("count") : "1 1 1", &count) ||
      count.size() != 3)
    return error("attribute 'count': expected 3 numbers");
  for (Real c : count) {
    if (!(c >= 1) || c != std::floor(c))
      return error("attribute 'count': expected positive integers");
  }
  // a few bytes ask for count0 count1 count2 bodies: bounded before any is made
  const double elements = double(count[0]) * double(count[1]) * double(count[2]);
  if (double(bodies_.size()) + elements > options_.max_bodies)
    return error(absl::StrFormat(
        "attribute 'count': %.0f x %.0f x %.0f makes %.0f bodies, past the limit of %d "
        "(MjcfOptions::max_bodies)",
        count[0], count[1], count[2], elements, options_.max_bodies));
  const int n[3] = {static_cast<int>(count[0]), static_cast<int>(count[1]),
                    static_cast<int>(count[2])};
  if (!xml->Attribute("spacing") || !io::ParseReals(xml->Attribute("spacing"), &spacing) ||
      spacing.size() != 1 || !(spacing[0] > 0))
    return error("attribute 'spacing': expected one positive number");
  if (!io::ParseReals(xml->Attribute("offset") ? xml->Attribute("offset") : "0 0 0", &offset) ||
      offset.size() != 3)
    return error("attribute 'offset': expected 3 numbers");
  const std::string prefix = xml->Attribute("prefix") ? xml->Attribute("prefix") : "";
  const Real s = spacing[0];
  const XMLElement* geom_template = nullptr;
  std::vector<const XMLElement*> joint_templates, tendon_templates, shear_templates;
  std::set<std::pair<int, int>> pins;  // a grid's elements fixed where they are
  for (const XMLElement* c = xml->FirstChildElement(); c; c = c->NextSiblingElement()) {
    const std::string tag = c->Name();
    if (tag == "geom") {
      geom_template = c;
    } else if (type == "grid" && tag == "pin") {
      std::vector<Real> coord;
      if (!c->Attribute("coord") || !io::ParseReals(c->Attribute("coord"), &coord) ||
          coord.empty() || coord.size() > 2)
        return error("<pin>: attribute 'coord': expected one or two element indices");
      coord.resize(2, 0);
      pins.insert({static_cast<int>(coord[0]), static_cast<int>(coord[1])});
    } else if ((type == "grid" || type == "cloth") && tag == "tendon" && c->Attribute("kind") &&
               std::string(c->Attribute("kind")) == "main") {
      tendon_templates.push_back(c);
    } else if (type == "cloth" && tag == "tendon" && c->Attribute("kind") &&
               std::string(c->Attribute("kind")) == "shear") {
      shear_templates.push_back(c);
    } else if (tag == "joint") {
      const char* kind = c->Attribute("kind");
      if (kind && std::string(kind) == "main") {
        joint_templates.push_back(c);
      } else {
        warnings_.Add(
            absl::StrCat("composite-joint:", kind ? kind : ""),
            absl::StrCat("composite joints of kind '", kind ? kind : "",
                         "' are not supported and were not created (first at ", Where(c), ")"));
      }
    } else if (tag == "skin") {
      WarnElement(c, "composite", "only affects rendering and was ignored");
    } else {
      WarnElement(c, "composite", "is not supported and was ignored");
    }
  }
  // MuJoCo 2.2 builds composite elements from its built-in defaults, not the file's classes
  // (a file whose geoms default to boxes still gets spherical particles): they are parsed in an
  // empty class of their own
  const std::string bare = "<composite>";
  classes_[bare];
  auto num = [](Real x) { return absl::StrFormat("%.17g", x); };
  auto vec = [&](Real x, Real y, Real z) { return absl::StrCat(num(x), " ", num(y), " ", num(z)); };
  auto doc = std::make_unique<XMLDocument>();
  XMLDocument* d = doc.get();
  generated_where_[d] = absl::StrCat(where, " (generated by <composite type=\"", type, "\">)");
  docs_.push_back(std::move(doc));
  // the template geom, named and turned as asked
  auto make_geom = [&](const std::string& name, const std::string& quat) {
    XMLElement* g = d->NewElement("geom");
    if (geom_template) {
      for (const tinyxml2::XMLAttribute* a = geom_template->FirstAttribute(); a; a = a->Next())
        g->SetAttribute(a->Name(), a->Value());
    }
    if (!name.empty()) g->SetAttribute("name", name.c_str());
    if (!quat.empty()) g->SetAttribute("quat", quat.c_str());
    // particles are frictionless unless asked otherwise
    if (type == "particle" && !g->Attribute("condim")) g->SetAttribute("condim", "1");
    return g;
  };

  if (type == "particle") {
    for (int i = 0; i < n[0]; ++i) {
      for (int j = 0; j < n[1]; ++j) {
        for (int k = 0; k < n[2]; ++k) {
          XMLElement* body = d->NewElement("body");
          body->SetAttribute("pos",
                             vec(offset[0] + s * (i - n[0] / 2), offset[1] + s * (j - n[1] / 2),
                                 offset[2] + s * (k - n[2] / 2))
                                 .c_str());
          for (const char* axis : {"1 0 0", "0 1 0", "0 0 1"}) {
            XMLElement* slide = d->NewElement("joint");
            slide->SetAttribute("type", "slide");
            slide->SetAttribute("axis", axis);
            body->InsertEndChild(slide);
          }
          body->InsertEndChild(make_geom("", ""));
          d->InsertEndChild(body);
          AXION_IO_RETURN_IF_ERROR(ParseBody(body, parent, bare));
        }
      }
    }
    return absl::OkStatus();
  }

  // copies a template's attributes but its kind
  auto apply = [](const std::vector<const XMLElement*>& templates, XMLElement* to) {
    for (const XMLElement* t : templates) {
      for (const tinyxml2::XMLAttribute* a = t->FirstAttribute(); a; a = a->Next()) {
        const std::string name = a->Name();
        if (name != "kind" && name != "solreffix" && name != "solimpfix")
          to->SetAttribute(a->Name(), a->Value());
      }
    }
  };

  // a grid's and a cloth's threads: spatial tendons between two sites, each held at its length
  // by a tendon <equality> (solref and solimp: MuJoCo's for the composite type), in sections
  // parsed after the bodies
  XMLElement* threads = d->NewElement("tendon");
  XMLElement* holds = d->NewElement("equality");
  auto thread = [&](const std::string& thread_name, const std::vector<const XMLElement*>& templates,
                    const std::string& from, const std::string& to, const char* solref,
                    const char* solimp) {
    XMLElement* spatial = d->NewElement("spatial");
    apply(templates, spatial);
    spatial->SetAttribute("name", thread_name.c_str());
    for (const std::string& end : {from, to}) {
      XMLElement* site = d->NewElement("site");
      site->SetAttribute("site", end.c_str());
      spatial->InsertEndChild(site);
    }
    threads->InsertEndChild(spatial);
    XMLElement* hold = d->NewElement("tendon");
    hold->SetAttribute("tendon1", thread_name.c_str());
    hold->SetAttribute("solref", solref);
    hold->SetAttribute("solimp", solimp);
    holds->InsertEndChild(hold);
  };
  auto add_threads = [&] {
    d->InsertEndChild(threads);
    d->InsertEndChild(holds);
    tendon_sections_.push_back(threads);
    equality_sections_.push_back(holds);
  };

  if (type == "grid") {
    if (n[2] != 1) return error("grid: count must be \"N M 1\"");
    auto name = [&](const char* kind, int i, int j) {
      return absl::StrCat(prefix, kind, i, "_", j);
    };
    for (int i = 0; i < n[0]; ++i) {
      for (int j = 0; j < n[1]; ++j) {
        XMLElement* body = d->NewElement("body");
        body->SetAttribute("name", name("B", i, j).c_str());
        body->SetAttribute("pos", vec(offset[0] + s * (i - Real(0.5) * n[0]),
                                      offset[1] + s * (j - Real(0.5) * n[1]), offset[2])
                                      .c_str());
        for (int axis = 0; !pins.count({i, j}) && axis < 3; ++axis) {
          XMLElement* slide = d->NewElement("joint");
          apply(joint_templates, slide);
          slide->SetAttribute("name", absl::StrCat(prefix, "J", axis, "_", i, "_", j).c_str());
          slide->SetAttribute("type", "slide");
          slide->SetAttribute("axis", axis == 0 ? "1 0 0" : axis == 1 ? "0 1 0" : "0 0 1");
          body->InsertEndChild(slide);
        }
        body->InsertEndChild(make_geom(name("G", i, j), ""));
        XMLElement* site = d->NewElement("site");
        site->SetAttribute("name", name("S", i, j).c_str());
        body->InsertEndChild(site);
        d->InsertEndChild(body);
        AXION_IO_RETURN_IF_ERROR(ParseBody(body, parent, bare));
      }
    }
    // a thread between each two neighbours: along i, then along j (MuJoCo 2.2's grid holds
    // them with solref 0.01 1, solimp 0.99 0.99, probed)
    for (int along = 0; along < 2; ++along) {
      for (int i = 0; i + (along == 0) < n[0]; ++i) {
        for (int j = 0; j + (along == 1) < n[1]; ++j)
          thread(absl::StrCat(prefix, "T", along, "_", i, "_", j), tendon_templates,
                 name("S", i, j), name("S", i + (along == 0), j + (along == 1)), "0.01 1",
                 "0.99 0.99 0.001 0.5 2");
      }
    }
    add_threads();
    return absl::OkStatus();
  }

  if (type == "cloth") {
    if (n[2] != 1) return error("cloth: count must be \"N M 1\"");
    if (parent < 0) return error("cloth: must be inside a <body>");
    // the holder is element (ci, cj) by its name, B<ci>_<cj> (MuJoCo 2.2 rule)
    const std::string holder = bodies_[parent].name, head = prefix + "B";
    std::vector<Real> held;
    if (!absl::StartsWith(holder, head) ||
        !io::ParseReals(absl::StrReplaceAll(holder.substr(head.size()), {{"_", " "}}), &held) ||
        held.size() != 2 || held[0] < 0 || held[0] >= n[0] || held[1] < 0 || held[1] >= n[1] ||
        held[0] != static_cast<int>(held[0]) || held[1] != static_cast<int>(held[1]))
      return error(absl::StrCat("cloth: the body holding it is named '", holder, "', but must be '",
                                head,
                                "<i>_<j>' with i, j its element's indices (MuJoCo 2.2 rule)"));
    const int ci = static_cast<int>(held[0]), cj = static_cast<int>(held[1]);
    auto name = [&](const char* kind, int i, int j) {
      return absl::StrCat(prefix, kind, i, "_", j);
    };
    // capsules and the like lie along x and y in turn, a checkerboard by i + j
    auto geom_quat = [](int i, int j) {
      return (i + j) % 2 == 0 ? "0.5 0.5 0.5 0.5" : "0.70710678118654757 0.70710678118654757 0 0";
    };
    const size_t first_body = bodies_.size();
    // element (i, j), reached from its parent along (di, dj): two hinges at the parent's side
    // (across the step and about z), its geom and site
    auto element = [&](int i, int j, int di, int dj) {
      XMLElement* body = d->NewElement("body");
      body->SetAttribute("name", name("B", i, j).c_str());
      body->SetAttribute("pos", vec(di * s, dj * s, 0).c_str());
      for (int axis = 0; axis < 2; ++axis) {
        XMLElement* hinge = d->NewElement("joint");
        apply(joint_templates, hinge);
        hinge->SetAttribute("name", absl::StrCat(prefix, "J", axis, "_", i, "_", j).c_str());
        hinge->SetAttribute("pos", vec(-di * s, -dj * s, 0).c_str());
        hinge->SetAttribute("axis", axis == 1 ? "0 0 1" : di != 0 ? "0 1 0" : "1 0 0");
        body->InsertEndChild(hinge);
      }
      body->InsertEndChild(make_geom(name("G", i, j), geom_quat(i, j)));
      XMLElement* site = d->NewElement("site");
      site->SetAttribute("name", name("S", i, j).c_str());
      body->InsertEndChild(site);
      return body;
    };
    // column i's chains from element (i, cj), in `at`: along +y, then -y
    auto columns = [&](int i, XMLElement* at) {
      for (int dj : {1, -1}) {
        XMLElement* inner = at;
        for (int j = cj + dj; j >= 0 && j < n[1]; j += dj) {
          XMLElement* body = element(i, j, 0, dj);
          inner->InsertEndChild(body);
          inner = body;
        }
      }
    };
    // the holder: its geom and site, its column, then the row along +x and -x, each element
    // with its column
    {
      MjGeom geom;
      AXION_IO_RETURN_IF_ERROR(
          ParseGeom(make_geom(name("G", ci, cj), geom_quat(ci, cj)), bare, &geom));
      bodies_[parent].geoms.push_back(std::move(geom));
      MjSite site;
      XMLElement* site_xml = d->NewElement("site");
      site_xml->SetAttribute("name", name("S", ci, cj).c_str());
      AXION_IO_RETURN_IF_ERROR(ParseSite(site_xml, bare, &site));
      bodies_[parent].sites.push_back(std::move(site));
    }
    XMLElement* root = d->NewElement("body");  // (a stand-in for the holder)
    columns(ci, root);
    for (int di : {1, -1}) {
      XMLElement* inner = root;
      for (int i = ci + di; i >= 0 && i < n[0]; i += di) {
        XMLElement* body = element(i, cj, di, 0);
        columns(i, body);
        inner->InsertEndChild(body);
        inner = body;
      }
    }
    for (XMLElement* c = root->FirstChildElement(); c; c = c->NextSiblingElement())
      AXION_IO_RETURN_IF_ERROR(ParseBody(c, parent, bare));
    // a cloth's bodies take a plate's inertia (spacing x spacing x flatinertia spacing)
    double flat = 0;
    xml->QueryDoubleAttribute("flatinertia", &flat);
    if (flat > 0) {
      const Vec3 plate{s, s, Real(flat) * s};
      bodies_[parent].plate = plate;
      for (size_t b = first_body; b < bodies_.size(); ++b) bodies_[b].plate = plate;
    }
    // the threads the tree leaves out (each row but the holder's, along x); and with a shear
    // template, the diagonals (MuJoCo's default equality solref and solimp)
    const char* solref = "0.02 1";
    const char* solimp = "0.9 0.95 0.001 0.5 2";
    for (int j = 0; j < n[1]; ++j) {
      for (int i = 0; j != cj && i + 1 < n[0]; ++i)
        thread(name("T", i, j), tendon_templates, name("S", i, j), name("S", i + 1, j), solref,
               solimp);
    }
    for (int i = 0; !shear_templates.empty() && i + 1 < n[0]; ++i) {
      for (int j = 0; j + 1 < n[1]; ++j)
        thread(name("TS", i, j), shear_templates, name("S", i, j), name("S", i + 1, j + 1), solref,
               solimp);
    }
    add_threads();
    return absl::OkStatus();
  }

  if (type == "box") {
    if (parent < 0) return error("box: must be inside a <body>");
    std::vector<Real> size;
    const char* geom_type = geom_template ? geom_template->Attribute("type") : nullptr;
    const std::string shape = geom_type ? geom_type : "sphere";
    if (shape != "sphere" && shape != "capsule")
      return error(absl::StrCat("box: its geom must be a sphere or a capsule, not '", shape, "'"));
    if (!geom_template || !geom_template->Attribute("size") ||
        !io::ParseReals(geom_template->Attribute("size"), &size) || size.empty() ||
        !(size[0] > 0) || (shape == "capsule" && (size.size() < 2 || !(size[1] >= 0))))
      return error("box: its <geom> needs a positive size");
    const Real reach = size[0] + (shape == "capsule" ? size[1] : 0);
    auto name = [&](const char* kind, int i, int j, int k) {
      return absl::StrCat(prefix, kind, i, "_", j, "_", k);
    };
    // the holder's centre: a sphere of twice the element's radius that touches nothing
    {
      XMLElement* g = make_geom(prefix + "Gcenter", "");
      g->SetAttribute("type", "sphere");
      g->SetAttribute("size", num(2 * size[0]).c_str());
      g->SetAttribute("contype", "0");
      MjGeom geom;
      AXION_IO_RETURN_IF_ERROR(ParseGeom(g, bare, &geom));
      bodies_[parent].geoms.push_back(std::move(geom));
    }
    // the pins' softness (the slides' own template) and the neighbours' (the composite's)
    auto reals = [&](const XMLElement* e, const char* key, std::vector<Real> fallback,
                     std::vector<Real>* out) -> absl::Status {
      *out = std::move(fallback);
      if (e && e->Attribute(key) && !io::ParseReals(e->Attribute(key), out))
        return error(absl::StrCat("attribute '", key, "': expected numbers"));
      return absl::OkStatus();
    };
    const std::vector<Real> default_solref = {0.02, 1}, default_solimp = {0.9, 0.9, 0.001, 0.5, 2};
    std::vector<Real> solref_fix, solimp_fix, solref_smooth, solimp_smooth;
    const XMLElement* slide_template = joint_templates.empty() ? nullptr : joint_templates.back();
    AXION_IO_RETURN_IF_ERROR(reals(slide_template, "solreffix", default_solref, &solref_fix));
    AXION_IO_RETURN_IF_ERROR(reals(slide_template, "solimpfix", default_solimp, &solimp_fix));
    AXION_IO_RETURN_IF_ERROR(reals(xml, "solrefsmooth", default_solref, &solref_smooth));
    AXION_IO_RETURN_IF_ERROR(reals(xml, "solimpsmooth", default_solimp, &solimp_smooth));
    auto join = [&](const std::vector<Real>& x) {
      std::vector<std::string> parts;
      for (Real v : x) parts.push_back(num(v));
      return absl::StrJoin(parts, " ");
    };
    // the elements on the box's surface, each on a slide along the ray from the centre (its z
    // axis, turned from the holder's z the shortest way), its geom reaching inwards from it
    auto surface = [&](int i, int j, int k) {
      return i >= 0 && j >= 0 && k >= 0 && i < n[0] && j < n[1] && k < n[2] &&
             (i == 0 || j == 0 || k == 0 || i == n[0] - 1 || j == n[1] - 1 || k == n[2] - 1);
    };
    std::vector<std::string> slides;
    for (int i = 0; i < n[0]; ++i) {
      for (int j = 0; j < n[1]; ++j) {
        for (int k = 0; k < n[2]; ++k) {
          if (!surface(i, j, k)) continue;
          const Vec3 pos{s * (i - Real(0.5) * (n[0] - 1)), s * (j - Real(0.5) * (n[1] - 1)),
                         s * (k - Real(0.5) * (n[2] - 1))};
          const Real length = norm(pos);
          if (!(length > 0)) return error("box: an element lies at the centre (count 1 1 1)");
          const Vec3 ray = (Real(1) / length) * pos;
          Quat turn{};
          if (ray.z < -1 + 1e-12) {
            turn = Quat{0, 1, 0, 0};
          } else if (ray.z < 1 - 1e-12) {
            const Vec3 axis = normalized(Vec3{-ray.y, ray.x, 0});  // z x ray
            const Real angle = std::acos(std::clamp(ray.z, Real(-1), Real(1)));
            turn = Quat{std::cos(angle / 2), std::sin(angle / 2) * axis.x,
                        std::sin(angle / 2) * axis.y, 0};
          }
          XMLElement* body = d->NewElement("body");
          body->SetAttribute("name", name("B", i, j, k).c_str());
          body->SetAttribute("pos", vec(pos.x, pos.y, pos.z).c_str());
          body->SetAttribute("quat", absl::StrCat(num(turn.w), " ", num(turn.x), " ", num(turn.y),
                                                  " ", num(turn.z))
                                         .c_str());
          XMLElement* slide = d->NewElement("joint");
          apply(joint_templates, slide);
          slide->SetAttribute("name", name("J", i, j, k).c_str());
          slide->SetAttribute("type", "slide");
          slide->SetAttribute("axis", "0 0 1");
          slide->SetAttribute("pos", "0 0 0");
          body->InsertEndChild(slide);
          XMLElement* g = make_geom(name("G", i, j, k), "");
          g->SetAttribute("pos", vec(0, 0, -reach).c_str());
          g->SetAttribute("contype", "0");
          body->InsertEndChild(g);
          d->InsertEndChild(body);
          composite_pins_.push_back({static_cast<int>(bodies_.size()), solref_fix, solimp_fix});
          AXION_IO_RETURN_IF_ERROR(ParseBody(body, parent, bare));
          slides.push_back(name("J", i, j, k));
        }
      }
    }
    // held fixed tendons: each element's slide with its neighbour's along i, j and k (MuJoCo's
    // joint equalities, solrefsmooth and solimpsmooth), and the sum of all slides, the box's
    // volume, at its initial length (solref 0.01 1, solimp 0.99 0.99: MuJoCo's)
    auto held = [&](const std::string& tendon_name,
                    const std::vector<std::pair<std::string, Real>>& coordinates,
                    const std::string& solref, const std::string& solimp) {
      XMLElement* fixed = d->NewElement("fixed");
      fixed->SetAttribute("name", tendon_name.c_str());
      for (const auto& [joint, coef] : coordinates) {
        XMLElement* c = d->NewElement("joint");
        c->SetAttribute("joint", joint.c_str());
        c->SetAttribute("coef", num(coef).c_str());
        fixed->InsertEndChild(c);
      }
      threads->InsertEndChild(fixed);
      XMLElement* hold = d->NewElement("tendon");
      hold->SetAttribute("tendon1", tendon_name.c_str());
      hold->SetAttribute("solref", solref.c_str());
      hold->SetAttribute("solimp", solimp.c_str());
      holds->InsertEndChild(hold);
      soft_fixed_holds_.insert(tendon_name);
    };
    for (int i = 0; i < n[0]; ++i) {
      for (int j = 0; j < n[1]; ++j) {
        for (int k = 0; k < n[2]; ++k) {
          for (int axis = 0; surface(i, j, k) && axis < 3; ++axis) {
            const int ni = i + (axis == 0), nj = j + (axis == 1), nk = k + (axis == 2);
            if (!surface(ni, nj, nk)) continue;
            held(absl::StrCat(name("T", i, j, k), "_", axis),
                 {{name("J", i, j, k), 1}, {name("J", ni, nj, nk), -1}}, join(solref_smooth),
                 join(solimp_smooth));
          }
        }
      }
    }
    std::vector<std::pair<std::string, Real>> all;
    for (const std::string& slide : slides) all.emplace_back(slide, 1);
    held(prefix + "T", all, "0.01 1", "0.99 0.99 0.001 0.5 2");
    add_threads();
    return absl::OkStatus();
  }

  // rope and loop
  if (n[1] != 1 || n[2] != 1) return error(absl::StrCat(type, ": count must be \"N 1 1\""));
  if (parent < 0) return error(absl::StrCat(type, ": must be inside a <body>"));
  const std::string holder = bodies_[parent].name;
  const std::string head = prefix + "B";
  int held = -1;
  if (absl::StartsWith(holder, head)) {
    std::vector<Real> k;
    if (io::ParseReals(holder.substr(head.size()), &k) && k.size() == 1 && k[0] >= 0 &&
        k[0] < n[0] && k[0] == static_cast<int>(k[0]))
      held = static_cast<int>(k[0]);
  }
  if (held < 0)
    return error(absl::StrCat(type, ": the body holding it is named '", holder, "', but must be '",
                              head, "<k>' with k its element index below ", n[0],
                              " (MuJoCo 2.2 rule)"));
  const std::string along_x = "0.70710678118654757 0 0.70710678118654757 0";  // z onto x
  // each element turns from the last by this (a rope: none, each at +-spacing along x)
  const Real turn = type == "loop" ? 2 * 3.14159265358979323846 / n[0] : 0;
  // the holder's geom
  {
    MjGeom geom;
    AXION_IO_RETURN_IF_ERROR(
        ParseGeom(make_geom(absl::StrCat(prefix, "G", held), along_x), bare, &geom));
    bodies_[parent].geoms.push_back(std::move(geom));
  }
  // each chain from the holder: +x (side +1) then -x (side -1)
  for (int side : {1, -1}) {
    XMLElement* outer = nullptr;
    XMLElement* inner = nullptr;
    for (int i = held + side; i >= 0 && i < n[0]; i += side) {
      XMLElement* body = d->NewElement("body");
      body->SetAttribute("name", absl::StrCat(head, i).c_str());
      body->SetAttribute(
          "pos", vec(side * s / 2 * (1 + std::cos(turn)), s / 2 * std::sin(turn), 0).c_str());
      body->SetAttribute(
          "quat",
          absl::StrCat(num(std::cos(turn / 2)), " 0 0 ", num(side * std::sin(turn / 2))).c_str());
      for (int axis = 0; axis < 2; ++axis) {
        XMLElement* hinge = d->NewElement("joint");
        apply(joint_templates, hinge);
        hinge->SetAttribute("name", absl::StrCat(prefix, "J", axis, "_", i).c_str());
        hinge->SetAttribute("type", "hinge");
        hinge->SetAttribute("pos", vec(-side * s / 2, 0, 0).c_str());
        hinge->SetAttribute("axis", axis == 0 ? "0 1 0" : "0 0 1");
        body->InsertEndChild(hinge);
      }
      body->InsertEndChild(make_geom(absl::StrCat(prefix, "G", i), along_x));
      if (inner) {
        inner->InsertEndChild(body);
      } else {
        outer = body;
      }
      inner = body;
    }
    if (!outer) continue;
    d->InsertEndChild(outer);
    AXION_IO_RETURN_IF_ERROR(ParseBody(outer, parent, bare));
  }
  if (type == "loop" && n[0] > 2) {
    // closing the loop: B0's free end held to the last element's, the two never colliding
    XMLElement* equality = d->NewElement("equality");
    XMLElement* connect = d->NewElement("connect");
    connect->SetAttribute("body1", (head + "0").c_str());
    connect->SetAttribute("body2", absl::StrCat(head, n[0] - 1).c_str());
    connect->SetAttribute("anchor", vec(-s / 2, 0, 0).c_str());
    equality->InsertEndChild(connect);
    d->InsertEndChild(equality);
    equality_sections_.push_back(equality);
    XMLElement* contact = d->NewElement("contact");
    XMLElement* exclude = d->NewElement("exclude");
    exclude->SetAttribute("body1", (head + "0").c_str());
    exclude->SetAttribute("body2", absl::StrCat(head, n[0] - 1).c_str());
    contact->InsertEndChild(exclude);
    d->InsertEndChild(contact);
    contact_sections_.push_back(contact);
  }
  return absl::OkStatus();
}

// A site: a named frame on its body (pos and orientation, or fromto: its midpoint, z along it
// from the second point to the first),
// which ImportResult::source_sites places on the Axion body that carries it.
absl::Status MjcfLoader::ParseSite(const XMLElement* xml, const std::string& class_name,
                                   MjSite* site) {
  Elem e = Resolve(xml, class_name);
  WarnUnsupportedAttributes(e);
  site->name = e.name;  // unnamed: "<body>_site<k>" once converted
  AXION_IO_ASSIGN_OR_RETURN(site->pose.pos, e.Vec("pos", Vec3{}));
  AXION_IO_ASSIGN_OR_RETURN(site->pose.quat, Orientation(e));
  using Zone = ImportResult::ZoneShape;
  const std::string type = e.Str("type", "sphere");
  const std::map<std::string, Zone> shapes = {{"sphere", Zone::kSphere},
                                              {"capsule", Zone::kCapsule},
                                              {"ellipsoid", Zone::kEllipsoid},
                                              {"cylinder", Zone::kCylinder},
                                              {"box", Zone::kBox}};
  if (!shapes.count(type)) return e.Error("type", absl::StrCat("unknown site type '", type, "'"));
  site->shape = shapes.at(type);
  // MuJoCo's site size: up to three values over its default of 0.005 each
  AXION_IO_ASSIGN_OR_RETURN(std::vector<Real> size, e.Reals("size", 1, 3, {}));
  for (size_t k = 0; k < size.size(); ++k) {
    if (!(size[k] >= 0)) return e.Error("size", "is negative");
    (k == 0 ? site->size.x : k == 1 ? site->size.y : site->size.z) = size[k];
  }
  if (e.Has("fromto")) {
    AXION_IO_ASSIGN_OR_RETURN(std::vector<Real> ft, e.Reals("fromto", 6, 6));
    const Vec3 from{ft[0], ft[1], ft[2]}, to{ft[3], ft[4], ft[5]};
    if (norm(to - from) < Real(1e-12)) return e.Error("fromto", "the two points coincide");
    // MuJoCo turns z onto from - to (mjuu_z2quat of fromto's first point minus its second)
    site->pose = {Real(0.5) * (from + to), io::QuatFromZAxis(from - to)};
    // and makes the half length along z half the segment
    const Real half = Real(0.5) * norm(to - from);
    if (site->shape == Zone::kCapsule || site->shape == Zone::kCylinder) site->size.y = half;
    if (site->shape == Zone::kBox || site->shape == Zone::kEllipsoid) site->size.z = half;
  }
  return absl::OkStatus();
}

absl::Status MjcfLoader::ParseWorld(const XMLElement* xml) {
  std::vector<const XMLElement*> children;
  AXION_IO_RETURN_IF_ERROR(Children(xml, &children, 0));
  for (const XMLElement* c : children) {
    std::string tag = c->Name();
    if (tag == "geom") {
      MjGeom geom;
      AXION_IO_RETURN_IF_ERROR(ParseGeom(c, "main", &geom));
      world_geoms_.push_back(std::move(geom));
    } else if (tag == "body") {
      AXION_IO_RETURN_IF_ERROR(ParseBody(c, -1, ""));
    } else if (tag == "composite") {
      AXION_IO_RETURN_IF_ERROR(ExpandComposite(c, -1));
    } else if (tag == "joint" || tag == "freejoint" || tag == "inertial") {
      return absl::InvalidArgumentError(
          absl::StrCat(Where(c), ": <", tag, "> is not allowed in <worldbody>"));
    } else if (tag == "site") {
      MjSite site;
      AXION_IO_RETURN_IF_ERROR(ParseSite(c, "main", &site));
      world_sites_.push_back(std::move(site));
    } else if (tag == "camera" || tag == "light") {
      WarnElement(c, "worldbody", "has no physical effect and was ignored");
    } else {
      WarnElement(c, "worldbody", "is not supported and was ignored");
    }
  }
  return absl::OkStatus();
}

// <connect> and <weld> hold in the configuration the file defines, as in MuJoCo. They become
// joints that close loops, which the maximal-coordinate engine solves as it does any other
// joint, exactly (MuJoCo's are soft, by solref and solimp): a connect is a ball joint at its
// anchor, a weld a fixed joint. MuJoCo does not filter contacts between bodies joined this way,
// so neither do these joints (collide_connected).
absl::Status MjcfLoader::ParseEquality(const XMLElement* section) {
  std::vector<const XMLElement*> children;
  AXION_IO_RETURN_IF_ERROR(Children(section, &children, 0));
  for (const XMLElement* c : children) {
    const std::string tag = c->Name();
    if (tag != "connect" && tag != "weld" && tag != "joint" && tag != "tendon") {
      WarnElement(c, "equality", "is not supported and was ignored (no constraint created)");
      continue;
    }
    Elem e = Resolve(c, "main", "equality");
    if (tag == "joint" || tag == "tendon") {
      const std::string one = tag + "1", two = tag + "2";
      for (const auto& [key, value] : e.attrs) {
        if (key == "name" || key == "class" || key == one || key == two || key == "polycoef" ||
            key == "active" || (tag == "tendon" && (key == "solref" || key == "solimp")))
          continue;
        warnings_.Add(
            absl::StrCat("attr:equality-", tag, ":", key),
            absl::StrCat("<equality><", tag, "> attribute '", key,
                         "' is not supported and was ignored (first at ", e.Describe(), ")"));
      }
    } else {
      WarnUnsupportedAttributes(e);
    }
    AXION_IO_ASSIGN_OR_RETURN(bool active, e.Bool("active", true));
    if (!active) {
      warnings_.Add(absl::StrCat("inactive-equality:", e.Describe()),
                    absl::StrCat(e.Describe(), " is inactive (active=\"false\") and was skipped"));
      continue;
    }
    if (tag == "joint") {
      AXION_IO_RETURN_IF_ERROR(EqualityJoint(e));
      continue;
    }
    if (tag == "tendon") {
      tendon_equalities_.push_back(std::move(e));  // once the tendons are made
      continue;
    }
    // MJCF bodies by name; body2 absent: the world
    auto find_body = [&](const char* key, bool required) -> absl::StatusOr<int> {
      const std::string name = e.Str(key);
      if (name.empty()) {
        if (required) return e.Error(key, "is required");
        return -1;
      }
      for (size_t b = 0; b < bodies_.size(); ++b) {
        if (bodies_[b].name == name) return static_cast<int>(b);
      }
      return e.Error(key, absl::StrCat("unknown body '", name, "'"));
    };
    AXION_IO_ASSIGN_OR_RETURN(int body1, find_body("body1", true));
    AXION_IO_ASSIGN_OR_RETURN(int body2, find_body("body2", false));
    const Pose frame1 = bodies_[body1].world;
    JointDesc joint;
    joint.name = e.name.empty() ? absl::StrCat(tag, "_", bodies_[body1].name) : e.name;
    joint.collide_connected = true;
    joint.parent = axion_body_[body1];
    joint.child = body2 < 0 ? kWorldBody : axion_body_[body2];
    // the static side, when it is on a mocap body, carries the joint's parent frame
    int static_side = body1;
    if (joint.child == kWorldBody) {
      std::swap(joint.parent, joint.child);
      static_side = body2;
    }
    if (joint.parent == kWorldBody && static_side >= 0) joint.parent_mocap = mocap_of_[static_side];
    if (joint.child == kWorldBody || joint.parent == joint.child) {
      warnings_.Add(absl::StrCat("static-equality:", e.Describe()),
                    absl::StrCat(e.Describe(),
                                 " joins a body to itself or two static bodies and was skipped"));
      continue;
    }
    const Pose child_pose = result_.model.bodies[joint.child].pose;
    Vec3 anchor_world = frame1.pos;  // a weld's joint frame: body1's origin
    if (tag == "connect") {
      if (!e.Has("anchor")) return e.Error("anchor", "is required");
      AXION_IO_ASSIGN_OR_RETURN(Vec3 anchor, e.Vec("anchor", Vec3{}));
      anchor_world = frame1.pos + rotate(frame1.quat, anchor);
      joint.type = JointType::kBall;
    } else {
      joint.type = JointType::kFixed;
    }
    joint.child_frame.pos = rotate_inv(child_pose.quat, anchor_world - child_pose.pos);
    joint.child_frame.quat = conjugate(child_pose.quat) * frame1.quat;
    result_.model.joints.push_back(std::move(joint));
  }
  return absl::OkStatus();
}

absl::Status MjcfLoader::ReadRange(const Elem& e, const char* name, const char* flag, bool* limited,
                                   Real* lower, Real* upper) const {
  std::string mode = e.Str(flag, "auto");
  if (mode == "auto") {
    if (e.Has(name) && !autolimits_) {
      return e.Error(name, absl::StrCat("given without '", flag,
                                        "' under <compiler autolimits=\"false\"/>: set ", flag,
                                        "=\"true\" or \"false\""));
    }
    *limited = e.Has(name);
  } else {
    AXION_IO_ASSIGN_OR_RETURN(*limited, e.Bool(flag, false));
  }
  AXION_IO_ASSIGN_OR_RETURN(std::vector<Real> range, e.Reals(name, 2, 2, {0, 0}));
  if (!*limited) return absl::OkStatus();
  if (!(range[0] < range[1]))
    return e.Error(name, absl::StrCat("lower ", range[0], " must be below upper ", range[1]));
  *lower = range[0];
  *upper = range[1];
  return absl::OkStatus();
}

// <tendon><fixed>: a TendonDesc over the scalar coordinates of its joints, any number (hinges
// and slides, as converted: a joint merged into a generic joint is that joint's DOF; one named
// twice takes the sum of its coefficients), with its length limits, spring-damper (springlength
// -1, the default, is the length with every joint at its springref, as MuJoCo 2.2 computes it
// from qpos_spring) and dry friction. <spatial>: a path (SpatialPath); one the engine cannot
// take is skipped with a warning naming it, and so are actuators on it.
// A fixed tendon's <joint> children take their own attributes only (a <joint> default class
// holds a body joint's).
absl::Status MjcfLoader::ParseTendons(const XMLElement* section) {
  std::vector<const XMLElement*> children;
  AXION_IO_RETURN_IF_ERROR(Children(section, &children, 0));
  for (const XMLElement* c : children) {
    const std::string tag = c->Name();
    const char* name_attr = c->Attribute("name");
    const std::string name = name_attr ? name_attr : "";
    if (tag != "fixed" && tag != "spatial") {
      WarnElement(c, "tendon", "is not supported and was ignored (no tendon created)");
      if (!name.empty()) skipped_tendons_.insert(name);
      continue;
    }
    if (const char* explicit_class = c->Attribute("class")) {
      if (!classes_.count(explicit_class)) {
        return absl::InvalidArgumentError(absl::StrCat(Where(c), ": ", tag,
                                                       ": attribute 'class': unknown default "
                                                       "class '",
                                                       explicit_class, "'"));
      }
    }
    Elem e = Resolve(c, "main");
    WarnUnsupportedAttributes(e);
    TendonDesc tendon;
    tendon.name = e.name;
    Real rest_at_springref = 0;
    std::vector<std::pair<std::string, Real>> file_joints;  // for tendon sensors
    std::vector<const XMLElement*> joints;
    if (tag == "spatial") {
      std::string skip;
      AXION_IO_RETURN_IF_ERROR(SpatialPath(c, &tendon.path, &skip));
      if (!skip.empty()) {
        warnings_.Add(absl::StrCat("tendon-spatial:", e.Describe()),
                      absl::StrCat(e.Describe(), ": ", skip, "; skipped"));
        if (!e.name.empty()) skipped_tendons_.insert(e.name);
        continue;
      }
      if (!e.name.empty())
        spatial_tendons_[e.name] = static_cast<int>(result_.model.tendons.size());
    } else {
      AXION_IO_RETURN_IF_ERROR(Children(c, &joints, 0));
    }
    for (const XMLElement* j : joints) {
      if (std::string(j->Name()) != "joint") {
        return absl::InvalidArgumentError(absl::StrCat(
            Where(j), ": <", j->Name(), "> in a fixed tendon: only <joint> elements belong there"));
      }
      const char* joint_name = j->Attribute("joint");
      if (!joint_name) {
        return absl::InvalidArgumentError(
            absl::StrCat(Where(j), ": tendon joint: attribute 'joint' is required"));
      }
      auto target = joint_target_.find(joint_name);
      auto kind = joint_kind_.find(joint_name);
      if (target == joint_target_.end() || kind == joint_kind_.end() ||
          kind->second == JointKind::kBall || kind->second == JointKind::kFree) {
        return absl::InvalidArgumentError(absl::StrCat(
            Where(j), ": tendon joint: attribute 'joint': ",
            joint_kind_.count(joint_name)
                ? absl::StrCat("'", joint_name,
                               "' is a free or ball joint, which has no scalar coordinate")
                : absl::StrCat("unknown joint '", joint_name, "'")));
      }
      double coef = 0;
      if (j->QueryDoubleAttribute("coef", &coef) != tinyxml2::XML_SUCCESS) {
        return absl::InvalidArgumentError(
            absl::StrCat(Where(j), ": tendon joint '", joint_name,
                         "': attribute 'coef' is required (a number)"));
      }
      for (const tinyxml2::XMLAttribute* a = j->FirstAttribute(); a; a = a->Next()) {
        if (std::string(a->Name()) != "joint" && std::string(a->Name()) != "coef")
          warnings_.Add(absl::StrCat("attr:tendon-joint:", a->Name()),
                        absl::StrCat("<joint> attribute '", a->Name(),
                                     "' in a fixed tendon is not supported and was ignored (first "
                                     "at ",
                                     Where(j), ")"));
      }
      tendon.joints.push_back({target->second.first, target->second.second, Real(coef)});
      file_joints.emplace_back(joint_name, Real(coef));
      // MuJoCo's default rest length is the tendon's length at qpos_spring: each joint at its
      // springref
      for (const MjBody& body : bodies_) {
        for (const MjJoint& mj : body.joints) {
          if (mj.name == joint_name) rest_at_springref += Real(coef) * mj.springref;
        }
      }
    }
    if (tendon.joints.empty() && tendon.path.empty())
      return e.Error("", "a fixed tendon needs at least one <joint>");
    if (!e.name.empty() && tendon.path.empty()) fixed_tendon_joints_[e.name] = file_joints;
    {
      // a coordinate named twice: the coefficients add (L is linear in it)
      std::vector<TendonJointDesc> merged;
      for (const TendonJointDesc& tj : tendon.joints) {
        auto same = std::find_if(merged.begin(), merged.end(), [&](const TendonJointDesc& m) {
          return m.joint == tj.joint && m.dof == tj.dof;
        });
        if (same == merged.end()) {
          merged.push_back(tj);
        } else {
          same->coef += tj.coef;
        }
      }
      // a coordinate whose coefficients are 0 does not enter L (MuJoCo takes such files)
      merged.erase(std::remove_if(merged.begin(), merged.end(),
                                  [](const TendonJointDesc& tj) { return tj.coef == 0; }),
                   merged.end());
      tendon.joints = std::move(merged);
    }
    if (tendon.path.empty() && tendon.joints.empty()) {
      warnings_.Add(absl::StrCat("tendon-constant:", e.Describe()),
                    absl::StrCat(e.Describe(),
                                 ": every coefficient is 0, so its length never changes and "
                                 "nothing it carries could act; skipped"));
      if (!e.name.empty()) skipped_tendons_.insert(e.name);
      continue;
    }
    AXION_IO_RETURN_IF_ERROR(
        ReadRange(e, "range", "limited", &tendon.limited, &tendon.lower, &tendon.upper));
    AXION_IO_ASSIGN_OR_RETURN(tendon.stiffness, e.Real1("stiffness", 0));
    AXION_IO_ASSIGN_OR_RETURN(tendon.damping, e.Real1("damping", 0));
    AXION_IO_ASSIGN_OR_RETURN(tendon.friction_loss, e.Real1("frictionloss", 0));
    if (tendon.stiffness < 0) return e.Error("stiffness", "is negative");
    if (tendon.damping < 0) return e.Error("damping", "is negative");
    if (tendon.friction_loss < 0) return e.Error("frictionloss", "is negative");
    AXION_IO_ASSIGN_OR_RETURN(std::vector<Real> spring, e.Reals("springlength", 1, 2, {-1}));
    if (spring.size() == 2 && spring[0] != spring[1]) {
      warnings_.Add(absl::StrCat("tendon-deadband:", e.Describe()),
                    absl::StrCat(e.Describe(),
                                 ": a springlength dead band (two values) is not "
                                 "supported; the spring rests at their mean"));
    }
    const Real rest = spring.size() == 2 ? Real(0.5) * (spring[0] + spring[1]) : spring[0];
    // -1 (MuJoCo's default, both values where there are two): the length with every joint at
    // its springref (MuJoCo 2.2's qpos_spring)
    const bool at_springref = spring[0] == -1 && (spring.size() == 1 || spring[1] == -1);
    tendon.spring_length = at_springref ? rest_at_springref : rest;
    // a spatial tendon's: its path's length at the initial poses (the engine's default; the
    // file's joints at their springref, where that is not their ref, would bend it elsewhere)
    if (!tendon.path.empty() && at_springref) {
      tendon.spring_length.reset();
      bool springref_moved = false;
      for (const MjBody& body : bodies_) {
        for (const MjJoint& joint : body.joints) springref_moved |= joint.springref != joint.ref;
      }
      if (springref_moved && tendon.stiffness > 0) {
        warnings_.Add(absl::StrCat("tendon-springref:", e.Describe()),
                      absl::StrCat(e.Describe(),
                                   ": the spring rests at the path's length in the initial "
                                   "configuration, not with the joints at their springref (give "
                                   "springlength to set it)"));
      }
    }
    if (!e.name.empty()) tendon_target_[e.name] = static_cast<int>(result_.model.tendons.size());
    result_.model.tendons.push_back(std::move(tendon));
  }
  return absl::OkStatus();
}

absl::Status MjcfLoader::SpatialPath(const XMLElement* c, std::vector<TendonPathDesc>* path,
                                     std::string* skip) {
  using Kind = TendonPathDesc::Kind;
  std::vector<const XMLElement*> children;
  AXION_IO_RETURN_IF_ERROR(Children(c, &children, 0));
  const auto error = [&](const XMLElement* x, const std::string& problem) {
    return absl::InvalidArgumentError(absl::StrCat(Where(x), ": ", x->Name(), ": ", problem));
  };
  // a site by name: its Axion body and frame
  const auto site = [&](const XMLElement* x, const char* attribute,
                        const ImportResult::SourceBody** out) -> absl::Status {
    const char* name = x->Attribute(attribute);
    if (!name) return error(x, absl::StrCat("attribute '", attribute, "' is required"));
    for (const ImportResult::SourceBody& s : result_.source_sites) {
      if (s.name == name) {
        *out = &s;
        if (s.mocap >= 0 && skip->empty())
          *skip = absl::StrCat("its site '", name, "' is on a mocap body (not supported)");
        return absl::OkStatus();
      }
    }
    return error(x, absl::StrCat("attribute '", attribute, "': unknown site '", name, "'"));
  };
  for (const XMLElement* x : children) {
    const std::string tag = x->Name();
    TendonPathDesc point;
    if (tag == "site") {
      const ImportResult::SourceBody* s = nullptr;
      AXION_IO_RETURN_IF_ERROR(site(x, "site", &s));
      point.kind = Kind::kSite;
      point.body = s->body;
      point.pose = s->offset;
    } else if (tag == "geom") {
      const char* name = x->Attribute("geom");
      if (!name) return error(x, "attribute 'geom' is required");
      // the geom on its Axion body (as a sensor's frame on a geom)
      const auto [found, file_body] = FindGeom(name);
      if (!found) return error(x, absl::StrCat("attribute 'geom': unknown geom '", name, "'"));
      if (found->type != ShapeType::kSphere && found->type != ShapeType::kCylinder)
        return error(
            x, absl::StrCat("geom '", name, "': a tendon wraps only around spheres and cylinders"));
      point.kind = found->type == ShapeType::kSphere ? Kind::kSphere : Kind::kCylinder;
      point.radius = found->size.x;
      if (file_body >= 0) {
        point.body = axion_body_[file_body];
        point.pose = io::ComposePose(offset_[file_body], found->pose);
        if (mocap_of_[file_body] >= 0 && skip->empty())
          *skip = absl::StrCat("its geom '", name, "' is on a mocap body (not supported)");
      } else {
        point.pose = found->pose;
      }
      if (x->Attribute("sidesite")) {
        const ImportResult::SourceBody* s = nullptr;
        AXION_IO_RETURN_IF_ERROR(site(x, "sidesite", &s));
        point.has_side = true;
        point.side_body = s->body;
        point.side_pos = s->offset.pos;
      }
    } else if (tag == "pulley") {
      double divisor = 0;
      if (x->QueryDoubleAttribute("divisor", &divisor) != tinyxml2::XML_SUCCESS || !(divisor > 0))
        return error(x, "attribute 'divisor' is required (a positive number)");
      point.kind = Kind::kPulley;
      point.divisor = Real(divisor);
    } else {
      return error(x, "only <site>, <geom> and <pulley> belong in a spatial tendon");
    }
    path->push_back(point);
  }
  // MuJoCo's rules for the sequence, with the elements' lines
  const int count = static_cast<int>(path->size());
  const auto kind = [&](int k) { return k < 0 || k >= count ? Kind::kPulley : (*path)[k].kind; };
  if (count < 2)
    return absl::InvalidArgumentError(
        absl::StrCat(Where(c), ": spatial: a tendon's path needs at least two sites"));
  for (int k = 0; k < count; ++k) {
    const Kind here = (*path)[k].kind;
    if ((k == 0 || k == count - 1) && here != Kind::kSite)
      return error(children[k], "a spatial tendon starts and ends at a <site>");
    if (here != Kind::kSite && (kind(k - 1) != Kind::kSite || kind(k + 1) != Kind::kSite))
      return error(children[k], "must stand between two <site> elements");
  }
  if (count > kMaxTendonPath && skip->empty())
    *skip = absl::StrCat("its path has ", count, " elements, more than the ", kMaxTendonPath,
                         " supported");
  std::set<int> bodies;
  for (const TendonPathDesc& point : *path) {
    if (point.kind != Kind::kPulley && point.body >= 0) bodies.insert(point.body);
  }
  if (bodies.size() > 4 && skip->empty())
    *skip = absl::StrCat("its path moves with ", bodies.size(),
                         " bodies; tendons over more than four are not supported");
  if (bodies.empty() && skip->empty()) *skip = "its path lies on the world alone";
  return absl::OkStatus();
}

// MuJoCo's soft equality as a spring-damper, for solref, solimp and the inverse weight A. Its
// constraint accelerates as (1 - d) a0 - d (b v + k d r) (d the impedance, k = 1 / (dmax^2
// tau^2 zeta^2) and b = 2 / (dmax tau) from solref (tau, zeta), or k = -solref[0] / dmax^2 and
// b = -solref[1] / dmax), d taken at dmax = solimp[1] (past solimp's transition width, a
// millimetre by default): at rest it stretches as a spring of compliance (1 - d) A / (k d^2)
// would; in motion it rings at 1 / tau with damping ratio zeta = b / (2 sqrt(k)), its inertia
// along the constraint scaled by 1 / (1 - d). A spring on the bodies' own inertia rings faster
// (by 1 / sqrt(1 - d)), so it takes MuJoCo's damping ratio: a damper of 2 zeta sqrt(K / A)
// (K its stiffness). (The damping MuJoCo's d b would give it, d b / ((1 - d) A), overdamped a
// cloth's threads 4.5-fold, halving their sag.) compliance -1: solref gives no stiffness.
struct Softness {
  Real compliance = 0, damping = 0;
};
Softness StaticSoftness(const std::vector<Real>& solref, const std::vector<Real>& solimp,
                        Real inverse_weight) {
  const Real dmax =
                 std::clamp(solimp.size() > 1 ? solimp[1] : Real(0.95), Real(1e-4), Real(0.9999)),
             d = dmax;
  const bool standard = solref[0] > 0;
  const Real stiffness = standard
                             ? 1 / (dmax * dmax * solref[0] * solref[0] * solref[1] * solref[1])
                             : -solref[0] / (dmax * dmax);
  const Real damping = standard ? 2 / (dmax * solref[0]) : -solref[1] / dmax;
  if (!(stiffness > 0) || !std::isfinite(stiffness)) return {-1, 0};
  Softness out;
  out.compliance = (1 - d) * inverse_weight / (stiffness * d * d);
  const Real ratio = damping / (2 * std::sqrt(stiffness));
  if (inverse_weight > 0 && ratio > 0 && std::isfinite(ratio))
    out.damping = 2 * ratio * std::sqrt(1 / (out.compliance * inverse_weight));
  return out;
}

// <equality><joint joint1 joint2 polycoef>: joint1's coordinate follows a quartic of joint2's,
// both measured from their reference (qpos0), as in MuJoCo; without joint2, joint1 is held at
// its reference plus polycoef's first entry. A rigid JointCouplingDesc (MuJoCo's is soft).
// <equality><tendon> on one tendon holds its length at its length at qpos0 plus polycoef[0]
// (TendonDesc::hold); one between two fixed tendons holds L1 - a1 L2 (a tendon of its own, the
// linear polynomial; past it, or on spatial tendons, skipped with a warning). MuJoCo's equality is
// soft: with A the tendon's inverse weight at qpos0 it is a spring-damper along L
// (StaticSoftness), whose compliance and damping become the hold's: a cloth's threads pinned
// taut, which a rigid hold could not let sag, stretch as MuJoCo's do, and their swings die
// down as MuJoCo's.
absl::Status MjcfLoader::EqualityTendon(const Elem& e) {
  if (!e.Has("tendon1")) return e.Error("tendon1", "is required");
  const std::string name = e.Str("tendon1");
  // an equality on a tendon not made is skipped with it, named
  auto skipped = [&](const std::string& tendon, const char* verb) {
    if (!skipped_tendons_.count(tendon)) return false;
    warnings_.Add(absl::StrCat("equality-tendon-skipped:", tendon),
                  absl::StrCat(e.Describe(), ": ", verb, " tendon '", tendon,
                               "', which is not supported (see its warning); skipped"));
    return true;
  };
  if (skipped(name, "holds")) return absl::OkStatus();
  auto target = tendon_target_.find(name);
  if (target == tendon_target_.end())
    return e.Error("tendon1", absl::StrCat("unknown tendon '", name, "'"));
  AXION_IO_ASSIGN_OR_RETURN(std::vector<Real> poly, e.Reals("polycoef", 1, 5, {0, 1, 0, 0, 0}));
  for (size_t k = poly.size(); k < 5; ++k) poly.push_back(k == 1 ? 1 : 0);  // MuJoCo's rest
  TendonDesc* held = &result_.model.tendons[target->second];
  if (e.Has("tendon2")) {
    // L1 - L1(qpos0) = a0 + a1 (L2 - L2(qpos0)) between two fixed tendons: the fixed tendon
    // L1 - a1 L2 held at its initial length plus a0 (named after the equality, or tendon1 and
    // tendon2); a spatial one, or a polynomial past the linear term, is skipped with a warning
    const std::string other = e.Str("tendon2");
    if (skipped(other, "couples")) return absl::OkStatus();
    auto second = tendon_target_.find(other);
    if (second == tendon_target_.end())
      return e.Error("tendon2", absl::StrCat("unknown tendon '", other, "'"));
    const TendonDesc& a = result_.model.tendons[target->second];
    const TendonDesc& b = result_.model.tendons[second->second];
    std::string skip;
    if (!a.path.empty() || !b.path.empty()) {
      skip = "on a spatial tendon is not supported";
    } else if (poly[2] != 0 || poly[3] != 0 || poly[4] != 0) {
      skip = "with a polynomial past its linear term (polycoef[2..4]) is not supported";
    }
    if (!skip.empty()) {
      warnings_.Add(absl::StrCat("equality-tendon-pair:", skip),
                    absl::StrCat("<equality><tendon> between two tendons ", skip,
                                 " and was skipped (first at ", e.Describe(), ")"));
      return absl::OkStatus();
    }
    TendonDesc coupled;
    coupled.name = e.name.empty() ? absl::StrCat(name, "-", other) : e.name;
    auto add = [&](const TendonDesc& from, Real scale) {
      for (const TendonJointDesc& tj : from.joints) {
        auto same = std::find_if(
            coupled.joints.begin(), coupled.joints.end(),
            [&](const TendonJointDesc& c) { return c.joint == tj.joint && c.dof == tj.dof; });
        if (same == coupled.joints.end()) {
          coupled.joints.push_back({tj.joint, tj.dof, scale * tj.coef});
        } else {
          same->coef += scale * tj.coef;
        }
      }
    };
    add(a, 1);
    add(b, -poly[1]);
    coupled.joints.erase(std::remove_if(coupled.joints.begin(), coupled.joints.end(),
                                        [](const TendonJointDesc& c) { return c.coef == 0; }),
                         coupled.joints.end());
    if (coupled.joints.empty()) {
      warnings_.Add(absl::StrCat("equality-tendon-empty:", e.Describe()),
                    absl::StrCat(e.Describe(), ": L1 - polycoef[1] L2 is constant; skipped"));
      return absl::OkStatus();
    }
    result_.model.tendons.push_back(std::move(coupled));
    held = &result_.model.tendons.back();
  }
  TendonDesc& tendon = *held;
  if (tendon.hold)
    return e.Error("tendon1", absl::StrCat("'", name, "' is already held by another equality"));
  tendon.hold = true;
  tendon.hold_offset = poly[0];
  AXION_IO_ASSIGN_OR_RETURN(std::vector<Real> solref, e.Reals("solref", 2, 2, {0.02, 1}));
  AXION_IO_ASSIGN_OR_RETURN(std::vector<Real> solimp,
                            e.Reals("solimp", 2, 5, {0.9, 0.95, 0.001, 0.5, 2}));
  const Softness soft = StaticSoftness(solref, solimp, TendonInverseWeight(tendon));
  if (!(soft.compliance >= 0)) return e.Error("solref", "must give a positive stiffness");
  tendon.hold_compliance = soft.compliance;
  tendon.hold_damping = soft.damping;
  // a fixed tendon's hold is rigid (its inverse weight needs the joint-space inertia), as a
  // joint equality is: a softness asked for is named as ignored
  if (tendon.path.empty() && !soft_fixed_holds_.count(tendon.name)) {
    for (const char* key : {"solref", "solimp"}) {
      if (!e.Has(key)) continue;
      warnings_.Add(absl::StrCat("attr:equality-tendon-fixed:", key),
                    absl::StrCat("<equality><tendon> attribute '", key,
                                 "' on a fixed tendon is not supported and was ignored (held "
                                 "rigidly; first at ",
                                 e.Describe(), ")"));
    }
  }
  return absl::OkStatus();
}

// A box composite's pins (MuJoCo's joint equalities holding each slide at its reference,
// solreffix and solimpfix) as spring-dampers on the slides: MuJoCo's softness (StaticSoftness)
// with the element alone for the inverse weight, added to the slide's own spring and damper
// (the rest positions weighted by stiffness). As a spring the pin is one of the slide's drive rows,
// in the tree, where a held tendon would be a row closing a loop.
absl::Status MjcfLoader::ApplyCompositePins() {
  for (const CompositePin& pin : composite_pins_) {
    MjBody& body = bodies_[pin.body];
    if (body.joints.empty() || !(body.mass > 0)) continue;
    const Softness soft = StaticSoftness(pin.solref, pin.solimp, 1 / body.mass);
    if (!(soft.compliance > 0))
      return absl::InvalidArgumentError(absl::StrCat(
          "composite element '", body.name, "': solreffix must give a positive stiffness"));
    MjJoint& slide = body.joints[0];
    const Real k = 1 / soft.compliance, total = slide.stiffness + k;
    slide.springref = slide.stiffness * slide.springref / total;  // the pin's rest: 0
    slide.stiffness = total;
    slide.damping += soft.damping;
  }
  return absl::OkStatus();
}

// <joint springdamper="timeconst dampratio">, MuJoCo's rule: the joint's stiffness and damping
// are replaced by those that make its DOFs, at the inertia they have in the file's
// configuration (qpos0), ring at 1 / timeconst with that damping ratio:
//   stiffness = I / (timeconst^2 dampratio^2),  damping = 2 I / timeconst,
// where I = n / (sum of the joint's n DOFs' inverse weights), a DOF's inverse weight being its
// diagonal entry of the joint-space M^-1 at qpos0, armature included (MuJoCo's
// dof_invweight0). M is assembled from the file's bodies, as a composite-rigid-body sum: every
// body contributes m (v_i . v_j) + w_i . I w_j for each pair of DOFs i, j that move it (w, v the
// body's angular velocity and its centre of mass's velocity under a unit rate of the DOF).
// dm_control's dog holds its tail of 21 one-gram vertebrae this way (0.001 s, ratio 50).
absl::Status MjcfLoader::ApplySpringDampers() {
  bool any = false;
  for (const MjBody& body : bodies_)
    for (const MjJoint& j : body.joints) any = any || j.springdamper[0] > 0;
  if (!any) return absl::OkStatus();
  // The DOFs, each a unit twist (angular w, linear velocity v0 of the point at the world
  // origin) in the world frame at qpos0, on its body.
  struct Dof {
    Vec3 w, v0;
    int body = 0;
    Real armature = 0;
  };
  std::vector<Dof> dofs;
  auto unit = [](int k) { return Vec3{Real(k == 0), Real(k == 1), Real(k == 2)}; };
  std::vector<std::vector<int>> joint_dofs;  // per body, per joint: its first DOF
  joint_dofs.resize(bodies_.size());
  for (size_t b = 0; b < bodies_.size(); ++b) {
    const MjBody& body = bodies_[b];
    const Mat33 rotation = quat_to_mat(body.world.quat);
    for (const MjJoint& j : body.joints) {
      joint_dofs[b].push_back(static_cast<int>(dofs.size()));
      const Vec3 anchor = body.world.pos + rotation * j.pos;
      auto hinge = [&](Vec3 axis, Vec3 through) {
        dofs.push_back({axis, cross(through, axis), static_cast<int>(b), j.armature});
      };
      switch (j.kind) {
        case JointKind::kHinge:
          hinge(rotation * j.axis, anchor);
          break;
        case JointKind::kSlide:
          dofs.push_back({Vec3{}, rotation * j.axis, static_cast<int>(b), j.armature});
          break;
        case JointKind::kBall:
          for (int k = 0; k < 3; ++k) hinge(rotation * unit(k), anchor);
          break;
        case JointKind::kFree:
          for (int k = 0; k < 3; ++k) dofs.push_back({Vec3{}, unit(k), static_cast<int>(b)});
          for (int k = 0; k < 3; ++k) hinge(rotation * unit(k), body.world.pos);
          break;
      }
    }
  }
  const int n = static_cast<int>(dofs.size());
  // M: per body, the DOFs of it and of its ancestors move it
  std::vector<double> mass_matrix(static_cast<size_t>(n) * n, 0.0);
  for (size_t k = 0; k < bodies_.size(); ++k) {
    const MjBody& body = bodies_[k];
    if (!(body.mass > 0)) continue;
    std::vector<int> moving;
    for (int a = static_cast<int>(k); a >= 0; a = bodies_[a].parent)
      for (int i = 0; i < n; ++i)
        if (dofs[i].body == a) moving.push_back(i);
    const Mat33 rotation = quat_to_mat(body.world.quat);
    const Vec3 com = body.world.pos + rotation * body.com;
    const Mat33 inertia = rotation * body.inertia * transpose(rotation);
    for (int i : moving) {
      const Vec3 vi = dofs[i].v0 + cross(dofs[i].w, com);
      for (int j : moving) {
        const Vec3 vj = dofs[j].v0 + cross(dofs[j].w, com);
        mass_matrix[static_cast<size_t>(i) * n + j] +=
            double(body.mass) * double(dot(vi, vj)) + double(dot(dofs[i].w, inertia * dofs[j].w));
      }
    }
  }
  for (int i = 0; i < n; ++i) mass_matrix[static_cast<size_t>(i) * n + i] += dofs[i].armature;
  // Cholesky, M = L L^T, pivots kept above MuJoCo's mjMINVAL (a DOF that moves nothing)
  std::vector<double>& l = mass_matrix;
  for (int j = 0; j < n; ++j) {
    double pivot = l[static_cast<size_t>(j) * n + j];
    for (int k = 0; k < j; ++k)
      pivot -= l[static_cast<size_t>(j) * n + k] * l[static_cast<size_t>(j) * n + k];
    pivot = std::sqrt(std::max(pivot, 1e-15));
    l[static_cast<size_t>(j) * n + j] = pivot;
    for (int i = j + 1; i < n; ++i) {
      double x = l[static_cast<size_t>(i) * n + j];
      for (int k = 0; k < j; ++k)
        x -= l[static_cast<size_t>(i) * n + k] * l[static_cast<size_t>(j) * n + k];
      l[static_cast<size_t>(i) * n + j] = x / pivot;
    }
  }
  // (M^-1)_dd = |L^-1 e_d|^2
  auto inverse_weight = [&](int d) {
    std::vector<double> y(n, 0.0);
    double sum = 0;
    for (int i = d; i < n; ++i) {
      double x = i == d ? 1.0 : 0.0;
      for (int k = d; k < i; ++k) x -= l[static_cast<size_t>(i) * n + k] * y[k];
      y[i] = x / l[static_cast<size_t>(i) * n + i];
      sum += y[i] * y[i];
    }
    return sum;
  };
  for (size_t b = 0; b < bodies_.size(); ++b) {
    for (size_t jj = 0; jj < bodies_[b].joints.size(); ++jj) {
      MjJoint& j = bodies_[b].joints[jj];
      if (!(j.springdamper[0] > 0) || j.kind == JointKind::kFree) continue;
      const int count = FileDofCount(j.kind);
      double weight = 0;
      for (int d = joint_dofs[b][jj]; d < joint_dofs[b][jj] + count; ++d)
        weight += inverse_weight(d);
      const double inertia = count / std::max(weight, 1e-15);
      const double timeconst = j.springdamper[0], dampratio = j.springdamper[1];
      j.stiffness = static_cast<Real>(
          inertia / std::max(1e-15, timeconst * timeconst * dampratio * dampratio));
      j.damping = static_cast<Real>(2 * inertia / std::max(1e-15, timeconst));
    }
  }
  return absl::OkStatus();
}

// A spatial tendon's inverse weight J M^-1 J^T at the bodies' initial poses, as the bodies alone
// give it (MuJoCo's tendon_invweight0 where the bodies move freely, a grid's particles): each
// straight piece's direction at its two ends (a wrap taken as the straight piece past it),
// divided by its branch's pulley divisor. A fixed tendon's is left 0, so that its hold is
// rigid, as a joint <equality> is (its weight needs the joint-space inertia), but a box
// composite's, whose softness makes the box soft: the slides' child bodies alone give it.
Real MjcfLoader::TendonInverseWeight(const TendonDesc& tendon) const {
  const std::vector<BodyDesc>& bodies = result_.model.bodies;
  if (tendon.path.empty()) {
    if (!soft_fixed_holds_.count(tendon.name)) return 0;
    // a box composite's: each slide's child alone (MuJoCo's dof_invweight0 there within 0.7%,
    // its volume tendon's tendon_invweight0 to 1e-5)
    Real weight = 0;
    for (const TendonJointDesc& coordinate : tendon.joints) {
      const JointDesc& joint = result_.model.joints[coordinate.joint];
      if (joint.type == JointType::kPrismatic)
        weight += coordinate.coef * coordinate.coef / bodies[joint.child].mass;
    }
    return weight;
  }
  std::map<int, Vec6> jacobian;  // by body
  Real divisor = 1;
  int previous = -1;  // the last site
  for (size_t k = 0; k < tendon.path.size(); ++k) {
    const TendonPathDesc& point = tendon.path[k];
    if (point.kind == TendonPathDesc::Kind::kPulley) {
      divisor = point.divisor;
      previous = -1;
      continue;
    }
    if (point.kind != TendonPathDesc::Kind::kSite) continue;
    if (previous >= 0) {
      const TendonPathDesc& from = tendon.path[previous];
      auto world = [&](const TendonPathDesc& p) {
        return p.body < 0 ? p.pose.pos
                          : bodies[p.body].pose.pos + rotate(bodies[p.body].pose.quat, p.pose.pos);
      };
      const Vec3 a = world(from), b = world(point);
      const Real length = norm(b - a);
      if (length > 0) {
        const Vec3 dir = (Real(1) / (length * divisor)) * (b - a);
        for (const auto& [p, sign] : {std::pair{&point, Real(1)}, std::pair{&from, Real(-1)}}) {
          if (p->body < 0) continue;
          const BodyDesc& body = bodies[p->body];
          const Vec3 com = body.pose.pos + rotate(body.pose.quat, body.com);
          Vec6& j = jacobian[p->body];
          j.lin += sign * dir;
          j.ang += sign * cross(world(*p) - com, dir);
        }
      }
    }
    previous = static_cast<int>(k);
  }
  Real weight = 0;
  for (const auto& [b, j] : jacobian) {
    const BodyDesc& body = bodies[b];
    const Mat33 rotation = quat_to_mat(body.pose.quat);
    const Mat33 inverse_inertia = rotation * inverse(body.inertia) * transpose(rotation);
    weight += dot(j.lin, j.lin) / body.mass + dot(j.ang, inverse_inertia * j.ang);
  }
  return weight;
}

absl::Status MjcfLoader::EqualityJoint(const Elem& e) {
  auto find = [&](const char* key) -> absl::StatusOr<std::pair<int, int>> {
    const std::string name = e.Str(key);
    auto it = joint_target_.find(name);
    if (it != joint_target_.end()) return it->second;
    if (joint_kind_.count(name))
      return e.Error(key, absl::StrCat("'", name,
                                       "' is a free or ball joint, which has no "
                                       "scalar coordinate to couple"));
    return e.Error(key, absl::StrCat("unknown joint '", name, "'"));
  };
  if (!e.Has("joint1")) return e.Error("joint1", "is required");
  JointCouplingDesc coupling;
  AXION_IO_ASSIGN_OR_RETURN(auto follower, find("joint1"));
  coupling.joint = follower.first;
  coupling.dof = follower.second;
  if (e.Has("joint2")) {
    AXION_IO_ASSIGN_OR_RETURN(auto leader, find("joint2"));
    coupling.leader_joint = leader.first;
    coupling.leader_dof = leader.second;
  }
  AXION_IO_ASSIGN_OR_RETURN(std::vector<Real> poly, e.Reals("polycoef", 1, 5, {0, 1, 0, 0, 0}));
  for (size_t k = 0; k < 5; ++k) coupling.polynomial[k] = k < poly.size() ? poly[k] : 0;
  coupling.name = e.name.empty() ? absl::StrCat("equality_", e.Str("joint1")) : e.name;
  for (const JointCouplingDesc& other : result_.model.couplings) {
    if (other.joint == coupling.joint && other.dof == coupling.dof)
      return e.Error("joint1", absl::StrCat("'", e.Str("joint1"),
                                            "' already follows another <joint> equality"));
  }
  result_.model.couplings.push_back(std::move(coupling));
  return absl::OkStatus();
}

// <contact><exclude body1 body2>: the two bodies' geoms never collide (ApplyCollisionRules turns
// that into Axion's excluded body pairs). <pair geom1 geom2>: an explicit pair (ContactPair).
absl::Status MjcfLoader::ParseContact(const XMLElement* section) {
  std::vector<const XMLElement*> children;
  AXION_IO_RETURN_IF_ERROR(Children(section, &children, 0));
  for (const XMLElement* c : children) {
    const std::string tag = c->Name();
    if (tag != "exclude" && tag != "pair") {
      WarnElement(c, "contact", "is not supported and was ignored");
      continue;
    }
    Elem e = Resolve(c, "main");
    WarnUnsupportedAttributes(e);
    if (tag == "pair") {
      AXION_IO_RETURN_IF_ERROR(ContactPair(e));
      continue;
    }
    int body[2];
    for (int k = 0; k < 2; ++k) {
      const char* key = k == 0 ? "body1" : "body2";
      const std::string name = e.Str(key);
      if (name.empty()) return e.Error(key, "is required");
      body[k] = name == "world" ? -1 : -2;
      for (size_t b = 0; b < bodies_.size() && body[k] == -2; ++b) {
        if (bodies_[b].name == name) body[k] = static_cast<int>(b);
      }
      if (body[k] == -2) return e.Error(key, absl::StrCat("unknown body '", name, "'"));
    }
    excluded_bodies_.insert({std::min(body[0], body[1]), std::max(body[0], body[1])});
  }
  return absl::OkStatus();
}

// <contact><pair geom1 geom2>: the two geoms collide whatever their filters, with the pair's own
// condim and friction (tangent 1, tangent 2, spin, roll 1, roll 2), whose defaults are MuJoCo
// 2.2's (3 and "1 1 0.005 0.0001 0.0001", not the geoms'), in place of the contact the filter
// would give them; the spin and first roll values are the pair's torsional and rolling friction.
absl::Status MjcfLoader::ContactPair(const Elem& e) {
  ContactPairDesc pair;
  pair.name = e.name;
  int* shapes[2] = {&pair.shape_a, &pair.shape_b};
  for (int k = 0; k < 2; ++k) {
    const char* key = k == 0 ? "geom1" : "geom2";
    const std::string name = e.Str(key);
    if (name.empty()) return e.Error(key, "is required");
    *shapes[k] = -1;
    const std::vector<ShapeDesc>& all = result_.model.shapes;
    for (int s = 0; s < static_cast<int>(all.size()) && *shapes[k] < 0; ++s) {
      if (all[s].name == name) *shapes[k] = s;
    }
    if (*shapes[k] < 0) return e.Error(key, absl::StrCat("unknown geom '", name, "'"));
  }
  AXION_IO_ASSIGN_OR_RETURN(std::vector<Real> condim, e.Reals("condim", 1, 1, {3}));
  if (condim[0] != 1 && condim[0] != 3 && condim[0] != 4 && condim[0] != 6)
    return e.Error("condim", absl::StrCat("must be 1, 3, 4 or 6, got ", condim[0]));
  pair.contact_dim = static_cast<int>(condim[0]);
  // values left out keep the defaults: friction="0.2" is 0.2 along one tangent, 1 along the other
  AXION_IO_ASSIGN_OR_RETURN(std::vector<Real> friction, e.Reals("friction", 1, 5, {1}));
  const Real defaults[5] = {1, 1, 0.005, 0.0001, 0.0001};
  for (size_t k = friction.size(); k < 5; ++k) friction.push_back(defaults[k]);
  for (size_t k = 0; k < 5; ++k) {
    if (friction[k] < 0) return e.Error("friction", absl::StrCat("value ", k + 1, " is negative"));
  }
  if (friction[1] != friction[0] && pair.contact_dim > 1) {
    warnings_.Add(
        "pair-anisotropic",
        absl::StrCat("a pair's friction differs between its two tangents (", friction[0], " and ",
                     friction[1], "; MuJoCo's default for a value left out is 1): it is taken as ",
                     "isotropic, the first (first at ", e.Describe(), ")"));
  }
  if (friction[4] != friction[3] && pair.contact_dim == 6) {
    warnings_.Add(
        "pair-anisotropic-rolling",
        absl::StrCat("a pair's rolling friction differs between its two axes (", friction[3],
                     " and ", friction[4], "): it is taken as isotropic, the first (first at ",
                     e.Describe(), ")"));
  }
  pair.friction = friction[0];
  pair.torsional_friction = friction[2];
  pair.rolling_friction = friction[3];
  // the pair's own margin and gap (MuJoCo's default 0 and 0), not its geoms'
  AXION_IO_ASSIGN_OR_RETURN(pair.margin, e.Real1("margin", 0));
  AXION_IO_ASSIGN_OR_RETURN(pair.gap, e.Real1("gap", 0));
  if (pair.margin < 0) return e.Error("margin", "is negative");
  if (pair.gap < 0) return e.Error("gap", "is negative");
  if (collision_ != "dynamic") result_.model.contact_pairs.push_back(std::move(pair));
  return absl::OkStatus();
}

// MuJoCo's muscle parameters, prm = (range[2], force, scale, lmin, lmax, vmax, fpmax, fvmax),
// and its time constants (tau_act, tau_deact) and length range, into *a (MuscleDesc) and
// next_muscle_ (what ResolveMuscles computes: the force where prm's is negative, the length
// range where none is given).
absl::Status AffineActuator(Real g, const std::vector<Real>& bias, Real gear, ActuatorDesc* a,
                            std::string* skipped);

absl::Status MuscleFromParameters(const Elem& e, const std::vector<Real>& prm,
                                  const std::vector<Real>& time, const std::vector<Real>& range,
                                  ActuatorDesc* a, Real* scale, bool* needs_range) {
  a->type = ActuatorType::kMuscle;
  MuscleDesc& m = a->muscle;
  m.time_activation = time[0];
  m.time_deactivation = time[1];
  m.range = {prm[0], prm[1]};
  m.length_min = prm[4];
  m.length_max = prm[5];
  m.velocity_max = prm[6];
  m.passive_force = prm[7];
  m.velocity_force_max = prm[8];
  // placeholders ResolveMuscles replaces (valid, so the model compiles before)
  *scale = prm[2] < 0 ? prm[3] : 0;
  m.force = prm[2] < 0 ? Real(1) : prm[2];
  *needs_range = !(range[0] < range[1]);
  m.length_range =
      *needs_range ? std::array<Real, 2>{0, 1} : std::array<Real, 2>{range[0], range[1]};
  if (prm[2] == 0) return e.Error("force", "is 0: the muscle could not pull");
  if (prm[2] < 0 && !(prm[3] > 0)) return e.Error("scale", "must be > 0 where force is negative");
  return absl::OkStatus();
}

// A <general> actuator as the motor or servo it is: force = gain ctrl + b0 + b1 q + b2 qdot
// (gaintype fixed, biastype none or affine, dyntype none). MuJoCo's own shortcuts are such
// actuators: a motor has no bias, a position servo gain kp and bias (0, -kp, -kv), a velocity
// servo gain kv and bias (0, 0, -kv). A gain other than the servo's stiffness (damping) scales
// its target (ActuatorDesc::target_scale = gain / kp): a gripper's 0..255 command to its
// opening. Other biases (b0: a target offset) and activation dynamics set `skipped` to what
// was found.
absl::Status MjcfLoader::GeneralActuator(const Elem& e, Real gear, ActuatorDesc* a,
                                         std::string* skipped) {
  const std::string dyntype = e.Str("dyntype", "none");
  const std::string gaintype = e.Str("gaintype", "fixed");
  const std::string biastype = e.Str("biastype", "none");
  if (dyntype == "muscle" && gaintype == "muscle" && biastype == "muscle") {
    // <muscle>'s own parameters, spelled out: the gain's and the bias's must agree
    AXION_IO_ASSIGN_OR_RETURN(std::vector<Real> dyn, e.Reals("dynprm", 1, 10, {1}));
    AXION_IO_ASSIGN_OR_RETURN(std::vector<Real> gain, e.Reals("gainprm", 1, 10, {1}));
    AXION_IO_ASSIGN_OR_RETURN(std::vector<Real> bias, e.Reals("biasprm", 1, 10, {0}));
    AXION_IO_ASSIGN_OR_RETURN(std::vector<Real> lengths, e.Reals("lengthrange", 2, 2, {0, 0}));
    dyn.resize(2, 0);
    gain.resize(9, 0);
    bias.resize(9, 0);
    for (int k : {0, 1, 2, 3, 5}) {
      if (gain[k] != bias[k]) {
        *skipped =
            "with muscle gain and bias parameters that differ in range, force, scale or "
            "lmax";
        return absl::OkStatus();
      }
    }
    gain[7] = bias[7];  // fpmax is the bias's
    next_muscle_ = PendingMuscle{};
    next_muscle_.where = e.Describe();
    return MuscleFromParameters(e, gain, dyn, lengths, a, &next_muscle_.scale,
                                &next_muscle_.needs_range);
  }
  if (dyntype == "integrator" || dyntype == "filter") {
    // the motor or servo below acts on the activation
    AXION_IO_ASSIGN_OR_RETURN(std::vector<Real> dyn, e.Reals("dynprm", 1, 10, {1}));
    a->dynamics =
        dyntype == "integrator" ? ActuatorDynamics::kIntegrator : ActuatorDynamics::kFilter;
    a->dynamics_time_constant = dyn[0];
    if (dyntype == "filter" && !(dyn[0] > 0))
      return e.Error("dynprm", "a filter's time constant (dynprm[0]) must be > 0");
  } else if (dyntype != "none") {
    *skipped = absl::StrCat("with activation dynamics (dyntype \"", dyntype, "\")");
    return absl::OkStatus();
  }
  if (gaintype != "fixed") {
    *skipped = absl::StrCat("with gaintype \"", gaintype, "\"");
    return absl::OkStatus();
  }
  if (biastype != "none" && biastype != "affine") {
    *skipped = absl::StrCat("with biastype \"", biastype, "\"");
    return absl::OkStatus();
  }
  AXION_IO_ASSIGN_OR_RETURN(std::vector<Real> gain, e.Reals("gainprm", 1, 10, {1}));
  AXION_IO_ASSIGN_OR_RETURN(std::vector<Real> bias, e.Reals("biasprm", 1, 10, {0}));
  bias.resize(3, 0);
  if (biastype == "none") bias = {0, 0, 0};
  return AffineActuator(gain[0], bias, gear, a, skipped);
}

// force = g u + b0 + b1 L + b2 Ldot (u the control, or the activation) as Axion's motor or servo.
absl::Status AffineActuator(Real g, const std::vector<Real>& bias, Real gear, ActuatorDesc* a,
                            std::string* skipped) {
  const auto same = [](Real x, Real y) { return std::abs(x - y) <= 1e-12 * std::abs(y); };
  if (bias[0] == 0 && bias[1] == 0 && bias[2] == 0) {
    a->type = ActuatorType::kEffort;
    a->gear = gear * g;
  } else if (bias[0] == 0 && bias[1] < 0 && bias[2] <= 0 && g != 0) {
    // force g ctrl - kp L - kv Ldot = kp (s ctrl - L) - kv Ldot: a servo to s ctrl
    a->type = ActuatorType::kPosition;
    a->kp = -bias[1];
    a->kv = -bias[2];
    a->target_scale = same(-bias[1], g) ? Real(1) : g / -bias[1];
  } else if (bias[0] == 0 && bias[1] == 0 && bias[2] < 0 && g != 0) {
    a->type = ActuatorType::kVelocity;
    a->kv = -bias[2];
    a->target_scale = same(-bias[2], g) ? Real(1) : g / -bias[2];
  } else {
    *skipped = "whose gain and affine bias make no motor, position or velocity servo";
    return absl::OkStatus();
  }
  return absl::OkStatus();
}

absl::Status MjcfLoader::MuscleActuator(const Elem& e, ActuatorDesc* a) {
  AXION_IO_ASSIGN_OR_RETURN(std::vector<Real> time, e.Reals("timeconst", 2, 2, {0.01, 0.04}));
  AXION_IO_ASSIGN_OR_RETURN(std::vector<Real> range, e.Reals("range", 2, 2, {0.75, 1.05}));
  AXION_IO_ASSIGN_OR_RETURN(std::vector<Real> lengths, e.Reals("lengthrange", 2, 2, {0, 0}));
  std::vector<Real> prm = range;
  for (const auto& [key, fallback] : std::vector<std::pair<const char*, Real>>{{"force", -1},
                                                                               {"scale", 200},
                                                                               {"lmin", 0.5},
                                                                               {"lmax", 1.6},
                                                                               {"vmax", 1.5},
                                                                               {"fpmax", 1.3},
                                                                               {"fvmax", 1.2}}) {
    AXION_IO_ASSIGN_OR_RETURN(Real x, e.Real1(key, fallback));
    prm.push_back(x);
  }
  next_muscle_ = PendingMuscle{};
  next_muscle_.where = e.Describe();
  return MuscleFromParameters(e, prm, time, lengths, a, &next_muscle_.scale,
                              &next_muscle_.needs_range);
}

// An actuator's slider-crank transmission (cranksite, slidersite, cranklength) as a tendon
// (TendonDesc: {kSlider, kCrank}). MuJoCo's rules: both sites and a positive crank length are
// required. A site on a mocap body sets `skip` (such a path's bodies are not the rows' own).
absl::StatusOr<TendonDesc> MjcfLoader::SliderCrank(const Elem& e, std::string* skip) const {
  using Kind = TendonPathDesc::Kind;
  TendonDesc tendon;
  for (const char* attribute : {"slidersite", "cranksite"}) {
    if (!e.own.count(attribute))
      return e.Error(attribute, "is required: a slider-crank has a crank site and a slider site");
    const std::string name = e.Str(attribute);
    auto found = std::find_if(result_.source_sites.begin(), result_.source_sites.end(),
                              [&](const ImportResult::SourceBody& s) { return s.name == name; });
    if (found == result_.source_sites.end())
      return e.Error(attribute, absl::StrCat("unknown site '", name, "'"));
    if (found->mocap >= 0 && skip->empty())
      *skip = absl::StrCat("its site '", name, "' is on a mocap body (not supported)");
    TendonPathDesc point;
    point.kind = std::string(attribute) == "slidersite" ? Kind::kSlider : Kind::kCrank;
    point.body = found->body;
    point.pose = found->offset;
    tendon.path.push_back(point);
  }
  AXION_IO_ASSIGN_OR_RETURN(tendon.path[1].rod_length, e.Real1("cranklength", 0));
  if (!(tendon.path[1].rod_length > 0))
    return e.Error("cranklength", "must be positive for a slider-crank");
  if (tendon.path[0].body == kWorldBody && tendon.path[1].body == kWorldBody && skip->empty())
    *skip = "both its sites are fixed in the world, so nothing moves it";
  return tendon;
}

absl::Status MjcfLoader::ParseActuators(const XMLElement* section) {
  std::vector<const XMLElement*> children;
  AXION_IO_RETURN_IF_ERROR(Children(section, &children, 0));
  for (const XMLElement* c : children) {
    std::string tag = c->Name();
    actuator_target_.push_back(-1);  // until created
    const char* file_name = c->Attribute("name");
    if (file_name) file_actuators_[file_name] = FileActuator{};  // skipped until created
    if (tag != "motor" && tag != "position" && tag != "velocity" && tag != "general" &&
        tag != "muscle" && tag != "intvelocity" && tag != "cylinder" && tag != "adhesion") {
      WarnElement(c, "actuator", "is not supported and was ignored (no actuator created)");
      continue;
    }
    if (const char* explicit_class = c->Attribute("class")) {
      if (!classes_.count(explicit_class)) {
        return absl::InvalidArgumentError(
            absl::StrCat(Where(c), ": ", tag, ": attribute 'class': unknown default class '",
                         explicit_class, "'"));
      }
    }
    Elem e = Resolve(c, "main");
    // MuJoCo's act holds the actuators with activation dynamics, in file order
    if (tag == "muscle" || tag == "intvelocity" || tag == "cylinder" ||
        (tag == "general" && e.Str("dyntype", "none") != "none"))
      activation_actuators_.push_back(static_cast<int>(actuator_target_.size()) - 1);
    bool skipped_transmission = false;
    // a body transmission: <adhesion>'s, or a <general>'s (the same actuator in MuJoCo)
    const bool on_body = tag == "adhesion" || (tag == "general" && e.own.count("body"));
    for (const char* transmission : {"body", "jointinparent"}) {
      if (e.own.count(transmission) && !(on_body && std::string(transmission) == "body")) {
        skipped_transmission = true;
        warnings_.Add(
            absl::StrCat("transmission:", transmission),
            absl::StrCat("actuators with transmission '", transmission,
                         "' are not supported and were skipped (first at ", e.Describe(), ")"));
      }
    }
    const auto warn_site_servo = [&] {
      warnings_.Add(absl::StrCat("transmission:site-", tag),
                    absl::StrCat("site actuators other than motors (<motor>, or a <general> "
                                 "without bias) are not supported and were skipped (first at ",
                                 e.Describe(), ")"));
    };
    if (e.own.count("site") && (e.own.count("refsite") || (tag != "motor" && tag != "general"))) {
      // a site's Cartesian servo (refsite), or a servo on a site
      skipped_transmission = true;
      warn_site_servo();
    }
    if (skipped_transmission) continue;
    if (e.own.count("joint") + e.own.count("tendon") + e.own.count("site") +
            e.own.count("cranksite") + (on_body ? 1 : 0) >
        1)
      return e.Error(e.own.count("cranksite") ? "cranksite"
                     : e.own.count("site")    ? "site"
                     : e.own.count("tendon")  ? "tendon"
                                              : "joint",
                     "is given with another of 'joint', 'tendon', 'site', 'cranksite' and "
                     "'body': an actuator has one transmission");
    ActuatorDesc a;
    bool on_site = e.own.count("site") > 0;
    // a ball or free joint's motor: a push through the joint's frame (ActuatorDesc::site_*)
    enum class WholeJoint { kNone, kBall, kFree } whole_joint = WholeJoint::kNone;
    if (on_body) {
      // a pull on the body's contacts (ActuatorDesc::adhesion_body)
      const std::string body = e.Str("body");
      if (body.empty()) return e.Error("body", "is required");
      int file_body = -1;
      for (size_t b = 0; b < bodies_.size() && file_body < 0; ++b) {
        if (bodies_[b].name == body) file_body = static_cast<int>(b);
      }
      if (file_body < 0) return e.Error("body", absl::StrCat("unknown body '", body, "'"));
      if (axion_body_[file_body] == kWorldBody) {
        warnings_.Add(absl::StrCat("actuator-static-body:", body),
                      absl::StrCat(e.Describe(), ": pulls on body '", body, "', which ",
                                   mocap_of_[file_body] >= 0 ? "is a mocap body" : "does not move",
                                   " and which its force cannot move; skipped"));
        continue;
      }
      // a body without joints is merged into its parent (ImportResult::source_bodies): the
      // pull then takes the contacts of all the merged body's shapes
      for (size_t b = 0; b < bodies_.size(); ++b) {
        if (static_cast<int>(b) != file_body && axion_body_[b] == axion_body_[file_body] &&
            !bodies_[b].geoms.empty()) {
          warnings_.Add(absl::StrCat("actuator-merged-body:", e.Describe()),
                        absl::StrCat(e.Describe(), ": body '", body,
                                     "' shares its rigid body with '", bodies_[b].name,
                                     "' (merged: no joint between them), whose geoms' contacts "
                                     "it pulls at as well"));
          break;
        }
      }
      WarnUnsupportedAttributes(e);
      a.name = e.name.empty() ? absl::StrCat(tag, "_", body) : e.name;
      a.adhesion_body = axion_body_[file_body];
    } else if (e.own.count("cranksite") || e.own.count("slidersite")) {
      // a slider-crank: a tendon of its own (TendonDesc), named after the actuator
      std::string skip;
      AXION_IO_ASSIGN_OR_RETURN(TendonDesc crank, SliderCrank(e, &skip));
      if (!skip.empty()) {
        warnings_.Add(absl::StrCat("actuator-slider-crank:", e.Describe()),
                      absl::StrCat(e.Describe(), ": ", skip, "; skipped"));
        continue;
      }
      WarnUnsupportedAttributes(e);
      a.name = e.name.empty() ? absl::StrCat(tag, "_", e.Str("cranksite")) : e.name;
      crank.name = a.name;
      a.tendon = static_cast<int>(result_.model.tendons.size());
      result_.model.tendons.push_back(std::move(crank));
    } else if (on_site) {
      // a site's frame on the body that carries it (SourceBody::offset)
      const std::string site = e.Str("site");
      auto found = std::find_if(result_.source_sites.begin(), result_.source_sites.end(),
                                [&](const ImportResult::SourceBody& s) { return s.name == site; });
      if (found == result_.source_sites.end())
        return e.Error("site", absl::StrCat("unknown site '", site, "'"));
      if (found->body == kWorldBody) {
        warnings_.Add(absl::StrCat("actuator-static-site:", site),
                      absl::StrCat(e.Describe(), ": pushes on site '", site, "' of ",
                                   found->mocap >= 0 ? "a mocap body" : "the world",
                                   ", which its force cannot move; skipped"));
        continue;
      }
      WarnUnsupportedAttributes(e);
      a.name = e.name.empty() ? absl::StrCat(tag, "_", site) : e.name;
      a.site_body = found->body;
      a.site_pose = found->offset;
    } else if (e.own.count("tendon")) {
      // a fixed tendon's length (ParseTendons)
      const std::string tendon = e.Str("tendon");
      if (skipped_tendons_.count(tendon)) {
        warnings_.Add(absl::StrCat("actuator-tendon-skipped:", tendon),
                      absl::StrCat(e.Describe(), ": drives tendon '", tendon,
                                   "', which is not supported (see its warning); skipped"));
        continue;
      }
      auto target = tendon_target_.find(tendon);
      if (target == tendon_target_.end())
        return e.Error("tendon", absl::StrCat("unknown tendon '", tendon, "'"));
      WarnUnsupportedAttributes(e);
      a.name = e.name.empty() ? absl::StrCat(tag, "_", tendon) : e.name;
      a.tendon = target->second;
    } else {
      if (!e.own.count("joint"))
        return e.Error("joint", "is required (or 'tendon': the supported transmissions)");
      WarnUnsupportedAttributes(e);
      std::string joint = e.Str("joint");
      auto target = joint_target_.find(joint);
      auto kind = joint_kind_.find(joint);
      if (kind == joint_kind_.end())
        return e.Error("joint", absl::StrCat("unknown joint '", joint, "'"));
      a.name = e.name.empty() ? absl::StrCat(tag, "_", joint) : e.name;
      if (kind->second == JointKind::kBall || kind->second == JointKind::kFree) {
        // MuJoCo's generalized force on a ball joint is a torque gear[0..2] ctrl in its child's
        // frame, its reaction on the parent; on a free joint a force gear[0..2] ctrl in the
        // world's axes at the body's origin (the joint's anchor) and a torque gear[3..5] ctrl in
        // the body's frame: a push through the joint's frame on the child body
        if (tag != "motor" && tag != "general") {
          warnings_.Add(
              absl::StrCat("actuator-joint-kind:", tag),
              absl::StrCat("servos on free and ball joints (<", tag,
                           ">) are not supported and were skipped (first at ", e.Describe(), ")"));
          continue;
        }
        int file_body = -1;
        const MjJoint* file_joint = nullptr;
        for (size_t b = 0; b < bodies_.size() && !file_joint; ++b) {
          for (const MjJoint& j : bodies_[b].joints) {
            if (j.name == joint) {
              file_body = static_cast<int>(b);
              file_joint = &j;
              break;
            }
          }
        }
        if (!file_joint || axion_body_[file_body] == kWorldBody)
          return e.Error("joint", absl::StrCat("joint '", joint, "' moves no body"));
        const bool ball = kind->second == JointKind::kBall;
        whole_joint = ball ? WholeJoint::kBall : WholeJoint::kFree;
        on_site = true;
        a.site_body = axion_body_[file_body];
        a.site_pose = compose(offset_[file_body], Pose{file_joint->pos, Quat{}});
        a.site_force_world = !ball;
        if (ball) {
          const int parent = bodies_[file_body].parent;
          a.site_reaction_body = parent < 0 ? -1 : axion_body_[parent];
        }
      } else {
        if (target == joint_target_.end())
          return e.Error("joint", absl::StrCat("unknown joint '", joint, "'"));
        a.joint = target->second.first;
        a.dof = target->second.second;
      }
    }
    AXION_IO_ASSIGN_OR_RETURN(std::vector<Real> gear, e.Reals("gear", 1, 6, {1}));
    if (on_body) {
      // MuJoCo's body transmission has no gear: the force is gain * ctrl
      bool geared = gear[0] != 1;
      for (size_t i = 1; i < gear.size(); ++i) geared = geared || gear[i] != 0;
      if (geared)
        warnings_.Add("gear-body", absl::StrCat("gear is ignored on body transmissions, as in "
                                                "MuJoCo (first at ",
                                                e.Describe(), ")"));
      gear = {1};
    }
    if (on_site) {
      // the six gears are the site's wrench per unit force (a ball joint's three its torque);
      // the force itself is ungeared
      gear.resize(6, 0);
      if (whole_joint == WholeJoint::kBall) gear = {0, 0, 0, gear[0], gear[1], gear[2]};
      std::copy(gear.begin(), gear.end(), a.site_wrench.begin());
      gear = {1};
    }
    for (size_t i = 1; i < gear.size(); ++i) {
      if (gear[i] != 0) {
        warnings_.Add("gear-extra", absl::StrCat("gear values after the first are ignored on joint "
                                                 "and tendon transmissions (first at ",
                                                 e.Describe(), ")"));
        break;
      }
    }
    // ctrlrange and forcerange: the same MuJoCo 2.2 rules
    if (tag == "adhesion") {
      // required, and limited without ctrllimited; not negative: its force only pulls
      if (!e.Has("ctrlrange")) return e.Error("ctrlrange", "is required on <adhesion>");
      AXION_IO_ASSIGN_OR_RETURN(std::vector<Real> range, e.Reals("ctrlrange", 2, 2));
      if (range[0] < 0)
        return e.Error("ctrlrange", absl::StrCat("cannot be negative on <adhesion> (its force "
                                                 "only pulls), got ",
                                                 range[0]));
      if (!(range[0] < range[1]))
        return e.Error("ctrlrange",
                       absl::StrCat("lower ", range[0], " must be below upper ", range[1]));
      a.ctrl_limited = true;
      a.ctrl_min = range[0];
      a.ctrl_max = range[1];
    } else {
      AXION_IO_RETURN_IF_ERROR(
          ReadRange(e, "ctrlrange", "ctrllimited", &a.ctrl_limited, &a.ctrl_min, &a.ctrl_max));
    }
    AXION_IO_RETURN_IF_ERROR(
        ReadRange(e, "forcerange", "forcelimited", &a.force_limited, &a.force_min, &a.force_max));
    if (tag == "general") {
      std::string skipped;
      AXION_IO_RETURN_IF_ERROR(GeneralActuator(e, gear[0], &a, &skipped));
      if (!skipped.empty()) {
        warnings_.Add(
            absl::StrCat("general:", skipped),
            absl::StrCat("<general> actuators ", skipped,
                         " are not supported and were skipped (first at ", e.Describe(), ")"));
        continue;
      }
      if (on_site && a.type != ActuatorType::kEffort) {
        if (whole_joint != WholeJoint::kNone) {
          warnings_.Add("actuator-joint-kind:general",
                        absl::StrCat("servos on free and ball joints (<general> with a bias) are "
                                     "not supported and were skipped (first at ",
                                     e.Describe(), ")"));
        } else {
          warn_site_servo();
        }
        continue;
      }
      if (on_body && a.type != ActuatorType::kEffort) {
        warnings_.Add("general:body-servo",
                      absl::StrCat("<general> actuators with a bias on a body transmission are not "
                                   "supported and were skipped (first at ",
                                   e.Describe(), ")"));
        continue;
      }
    } else if (tag == "adhesion") {
      // MuJoCo's adhesion: a general actuator of fixed gain on the body
      a.type = ActuatorType::kEffort;
      AXION_IO_ASSIGN_OR_RETURN(a.gear, e.Real1("gain", 1));
      if (a.gear < 0) return e.Error("gain", "is negative (an adhesion force only pulls)");
    } else if (tag == "motor") {
      a.type = ActuatorType::kEffort;
      a.gear = gear[0];
    } else if (tag == "muscle") {
      AXION_IO_RETURN_IF_ERROR(MuscleActuator(e, &a));
      a.gear = gear[0];
    } else if (tag == "cylinder") {
      // a filter (timeconst) on the pressure, force area * pressure + bias (MuJoCo's cylinder)
      AXION_IO_ASSIGN_OR_RETURN(a.dynamics_time_constant, e.Real1("timeconst", 1));
      if (!(a.dynamics_time_constant > 0)) return e.Error("timeconst", "must be > 0");
      a.dynamics = ActuatorDynamics::kFilter;
      AXION_IO_ASSIGN_OR_RETURN(Real area, e.Real1("area", 1));
      if (e.Has("diameter")) {
        AXION_IO_ASSIGN_OR_RETURN(Real diameter, e.Real1("diameter", 0));
        area = kPi / 4 * diameter * diameter;
      }
      AXION_IO_ASSIGN_OR_RETURN(std::vector<Real> bias, e.Reals("bias", 3, 3, {0, 0, 0}));
      std::string skipped;
      AXION_IO_RETURN_IF_ERROR(AffineActuator(area, bias, gear[0], &a, &skipped));
      if (!skipped.empty()) {
        warnings_.Add(
            "cylinder:bias",
            absl::StrCat("<cylinder> actuators ", skipped,
                         " are not supported and were skipped (first at ", e.Describe(), ")"));
        continue;
      }
    } else if (tag == "intvelocity") {
      // a position servo (kp) whose target, the activation, moves at the commanded velocity
      a.type = ActuatorType::kPosition;
      a.dynamics = ActuatorDynamics::kIntegrator;
      AXION_IO_ASSIGN_OR_RETURN(a.kp, e.Real1("kp", 1));
      if (a.kp < 0) return e.Error("kp", "is negative");
    } else {
      if (tag == "position") {
        a.type = ActuatorType::kPosition;
        AXION_IO_ASSIGN_OR_RETURN(a.kp, e.Real1("kp", 1));
        AXION_IO_ASSIGN_OR_RETURN(a.kv, e.Real1("kv", 0));
      } else {
        a.type = ActuatorType::kVelocity;
        AXION_IO_ASSIGN_OR_RETURN(a.kv, e.Real1("kv", 1));
      }
      if (a.kp < 0) return e.Error("kp", "is negative");
      if (a.kv < 0) return e.Error("kv", "is negative");
    }
    // A servo's gear g: MuJoCo's servo acts on the length L = g q with force f = kp (s ctrl -
    // L) - kv Ldot and puts g f on the joint, that is g^2 kp (s ctrl / g - q) - g^2 kv qdot: a
    // servo on q with gains g^2 kp, g^2 kv and target scale s / g
    const Real g = gear[0];
    if ((a.type == ActuatorType::kPosition || a.type == ActuatorType::kVelocity) && g != 1) {
      if (g == 0) {
        warnings_.Add(absl::StrCat("gear-zero:", e.Describe()),
                      absl::StrCat(e.Describe(), ": gear 0 leaves the servo no force; skipped"));
        continue;
      }
      a.kp *= g * g;
      a.kv *= g * g;
      a.target_scale /= g;
    }
    // MuJoCo bounds the actuator's force (gain * ctrl, a servo's f) and then gears it onto its
    // joint or tendon; ActuatorDesc bounds the geared force (a gear of 0 leaves none to bound)
    if (a.force_limited) {
      const Real low = g * a.force_min, high = g * a.force_max;
      a.force_min = std::min(low, high);
      a.force_max = std::max(low, high);
      if (!(a.force_min < a.force_max)) a.force_limited = false;
    }
    // the activation's range (actrange and actlimited, MuJoCo 2.2's rules; an <intvelocity>'s
    // is limited wherever given), where the actuator has an activation
    if (tag == "intvelocity" && e.Has("actrange") && !e.Has("actlimited")) {
      AXION_IO_ASSIGN_OR_RETURN(std::vector<Real> range, e.Reals("actrange", 2, 2, {0, 0}));
      if (!(range[0] < range[1]))
        return e.Error("actrange",
                       absl::StrCat("lower ", range[0], " must be below upper ", range[1]));
      a.activation_limited = true;
      a.activation_min = range[0], a.activation_max = range[1];
    } else {
      AXION_IO_RETURN_IF_ERROR(ReadRange(e, "actrange", "actlimited", &a.activation_limited,
                                         &a.activation_min, &a.activation_max));
    }
    if (!HasActivation(a)) a.activation_limited = false;
    actuator_target_.back() = static_cast<int>(result_.model.actuators.size());
    if (file_name) {
      FileActuator& file = file_actuators_[file_name];
      file.target = actuator_target_.back();
      file.gear = g;
      file.on_site = on_site;
      file.on_body = on_body;
      file.whole_joint = whole_joint != WholeJoint::kNone;
      if (e.own.count("tendon") && spatial_tendons_.count(e.Str("tendon")))
        file.spatial_tendon = spatial_tendons_.at(e.Str("tendon"));
      if (e.own.count("cranksite")) file.spatial_tendon = a.tendon;
      if (e.own.count("joint")) {
        file.joints = {{e.Str("joint"), g}};
      } else if (e.own.count("tendon")) {
        if (auto fixed = fixed_tendon_joints_.find(e.Str("tendon"));
            fixed != fixed_tendon_joints_.end()) {
          for (const auto& [joint, coef] : fixed->second) file.joints.emplace_back(joint, g * coef);
        }
      }
    }
    if (a.type == ActuatorType::kMuscle) {
      // what ResolveMuscles needs of its transmission
      PendingMuscle m = next_muscle_;
      m.actuator = static_cast<int>(result_.model.actuators.size());
      if (e.own.count("joint")) {
        m.joints = {{e.Str("joint"), g}};
        for (const MjBody& body : bodies_) {
          for (const MjJoint& j : body.joints) {
            if (j.name == e.Str("joint"))
              m.limited = j.limited, m.limit[0] = j.range[0], m.limit[1] = j.range[1];
          }
        }
      } else {
        const TendonDesc& t = result_.model.tendons[a.tendon];
        m.limited = t.limited;
        m.limit[0] = t.lower, m.limit[1] = t.upper;
        if (auto fixed = fixed_tendon_joints_.find(e.Str("tendon"));
            fixed != fixed_tendon_joints_.end()) {
          for (const auto& [joint, coef] : fixed->second) m.joints.emplace_back(joint, g * coef);
        } else {
          m.spatial_tendon = a.tendon;
        }
      }
      if (m.scale > 0 || m.needs_range) pending_muscles_.push_back(std::move(m));
    }
    result_.model.actuators.push_back(std::move(a));
  }
  return absl::OkStatus();
}

std::pair<const MjGeom*, int> MjcfLoader::FindGeom(const std::string& name) const {
  for (const MjGeom& g : world_geoms_) {
    if (g.name == name) return {&g, -1};
  }
  for (size_t b = 0; b < bodies_.size(); ++b) {
    for (const MjGeom& g : bodies_[b].geoms) {
      if (g.name == name) return {&g, static_cast<int>(b)};
    }
  }
  return {nullptr, -1};
}

// A frame sensor's object (objtype, objname) or reference (reftype, refname): a site, a body's
// frame (xbody), its centre of mass (body: MuJoCo's inertial frame, whose axes follow the
// principal axes MuJoCo's compiler chose: position only) or a geom, on the Axion body that
// carries it. "world" names the world's frame as a body.
absl::StatusOr<ImportResult::SensorFrame> MjcfLoader::SensorObject(const Elem& e,
                                                                   const char* type_key,
                                                                   const char* name_key,
                                                                   bool needs_axes) const {
  const std::string type = e.Str(type_key), name = e.Str(name_key);
  if (name.empty()) return e.Error(name_key, "is required");
  if (type == "site") {
    for (const ImportResult::SourceBody& site : result_.source_sites) {
      if (site.name == name) return ImportResult::SensorFrame{site.body, site.offset, site.mocap};
    }
    return e.Error(name_key, absl::StrCat("unknown site '", name, "'"));
  }
  // a body's frame, or one fixed in it
  auto on_body = [&](int b, const Pose& local) {
    if (b < 0) return ImportResult::SensorFrame{kWorldBody, local, -1};
    return ImportResult::SensorFrame{axion_body_[b], io::ComposePose(offset_[b], local),
                                     mocap_of_[b]};
  };
  auto body_index = [&](const std::string& body) -> absl::StatusOr<int> {
    if (body == "world") return -1;
    for (size_t b = 0; b < bodies_.size(); ++b) {
      if (bodies_[b].name == body) return static_cast<int>(b);
    }
    return e.Error(name_key, absl::StrCat("unknown body '", body, "'"));
  };
  if (type == "xbody") {
    AXION_IO_ASSIGN_OR_RETURN(const int b, body_index(name));
    return on_body(b, Pose{});
  }
  if (type == "body") {
    if (needs_axes) {
      return e.Error(type_key,
                     "the axes of a body's inertial frame (objtype or reftype 'body') are not "
                     "supported: MuJoCo's compiler picks them; use 'xbody' (the body's frame)");
    }
    AXION_IO_ASSIGN_OR_RETURN(const int b, body_index(name));
    return on_body(b, Pose{b < 0 ? Vec3{} : bodies_[b].com, Quat{1, 0, 0, 0}});
  }
  if (type == "geom") {
    const auto [geom, b] = FindGeom(name);
    if (geom) return on_body(b, geom->pose);
    return e.Error(name_key, absl::StrCat("unknown geom '", name, "'"));
  }
  if (type.empty()) return e.Error(type_key, "is required");
  if (type == "camera")
    return e.Error(type_key, "cameras are not supported as sensor objects (sites are)");
  return e.Error(type_key, absl::StrCat("unknown object type '", type,
                                        "' (body, xbody, geom, site or camera)"));
}

// <sensor>: each child Axion reads becomes an ImportResult::SourceSensor in file order, with
// what it reads resolved to Axion's bodies, the file's joint coordinates and the actuators
// made. Sensors of kinds Axion does not compute (
// limit sensors, frame accelerations, subtreeangmom, user, ...) and sensors of things that
// were skipped (an actuator or tendon not made, a camera, a body's inertial axes) are skipped
// with a warning naming them; unknown names and wrong joint kinds are errors, as in MuJoCo.
absl::Status MjcfLoader::ParseSensors(const XMLElement* section) {
  using Kind = ImportResult::SensorKind;
  std::vector<const XMLElement*> children;
  AXION_IO_RETURN_IF_ERROR(Children(section, &children, 0));
  for (const XMLElement* c : children) {
    const std::string tag = c->Name();
    auto spec = SensorSpecs().find(tag);
    if (spec == SensorSpecs().end()) {
      WarnElement(c, "sensor", "is not supported and was ignored (no sensor data)");
      continue;
    }
    Elem e = Resolve(c, "main");
    WarnUnsupportedAttributes(e);
    auto skip = [&](const std::string& why) {
      warnings_.Add(absl::StrCat("sensor-skipped:", e.Describe()),
                    absl::StrCat(e.Describe(), ": ", why, "; the sensor was skipped"));
    };
    ImportResult::SourceSensor sensor;
    sensor.name = e.name;
    sensor.kind = spec->second.kind;
    sensor.dim = spec->second.dim;
    AXION_IO_ASSIGN_OR_RETURN(sensor.cutoff, e.Real1("cutoff", 0));
    if (sensor.cutoff < 0) return e.Error("cutoff", "is negative");
    // a file joint by name: its index in source_joints
    auto file_joint = [&](const std::string& joint) -> absl::StatusOr<int> {
      for (size_t j = 0; j < result_.source_joints.size(); ++j) {
        if (result_.source_joints[j].name == joint) return static_cast<int>(j);
      }
      return e.Error("joint", absl::StrCat("unknown joint '", joint, "'"));
    };
    // what it sums: coef times each file joint's coordinate
    auto add_joints = [&](const std::vector<std::pair<std::string, Real>>& joints) -> absl::Status {
      for (const auto& [joint, coef] : joints) {
        AXION_IO_ASSIGN_OR_RETURN(const int j, file_joint(joint));
        sensor.joints.push_back(j);
        sensor.coefs.push_back(coef);
      }
      return absl::OkStatus();
    };
    switch (sensor.kind) {
      case Kind::kTouch:
      case Kind::kAccelerometer:
      case Kind::kForce:
      case Kind::kTorque:
      case Kind::kRangefinder:
      case Kind::kVelocimeter:
      case Kind::kGyro:
      case Kind::kMagnetometer: {
        const std::string site = e.Str("site");
        if (site.empty()) return e.Error("site", "is required");
        auto found =
            std::find_if(result_.source_sites.begin(), result_.source_sites.end(),
                         [&](const ImportResult::SourceBody& s) { return s.name == site; });
        if (found == result_.source_sites.end())
          return e.Error("site", absl::StrCat("unknown site '", site, "'"));
        sensor.object = {found->body, found->offset, found->mocap};
        break;
      }
      case Kind::kJointPos:
      case Kind::kJointVel:
      case Kind::kBallQuat:
      case Kind::kBallAngVel: {
        AXION_IO_ASSIGN_OR_RETURN(const int j, file_joint(e.Str("joint")));
        // the file's kind: a joint named in the file has one (generated names have none)
        auto named = joint_kind_.find(e.Str("joint"));
        if (named == joint_kind_.end())
          return e.Error("joint", absl::StrCat("unknown joint '", e.Str("joint"), "'"));
        const JointKind joint_kind = named->second;
        const bool ball = sensor.kind == Kind::kBallQuat || sensor.kind == Kind::kBallAngVel;
        if (ball != (joint_kind == JointKind::kBall) || joint_kind == JointKind::kFree) {
          return e.Error("joint", ball ? "must be a ball joint"
                                       : "must be a hinge or slide joint (ballquat and "
                                         "ballangvel read ball joints)");
        }
        sensor.joints = {j};
        sensor.coefs = {1};
        break;
      }
      case Kind::kTendonPos:
      case Kind::kTendonVel: {
        const std::string tendon = e.Str("tendon");
        auto fixed = fixed_tendon_joints_.find(tendon);
        if (fixed == fixed_tendon_joints_.end()) {
          if (auto spatial = spatial_tendons_.find(tendon); spatial != spatial_tendons_.end()) {
            sensor.tendon = spatial->second;
            break;
          }
          if (skipped_tendons_.count(tendon)) {
            skip(absl::StrCat("tendon '", tendon, "' is not supported (see its warning)"));
            continue;
          }
          return e.Error("tendon", absl::StrCat("unknown tendon '", tendon, "'"));
        }
        AXION_IO_RETURN_IF_ERROR(add_joints(fixed->second));
        break;
      }
      case Kind::kActuatorPos:
      case Kind::kActuatorVel:
      case Kind::kActuatorFrc: {
        const std::string name = e.Str("actuator");
        auto actuator = file_actuators_.find(name);
        if (actuator == file_actuators_.end())
          return e.Error("actuator", absl::StrCat("unknown actuator '", name, "'"));
        const FileActuator& file = actuator->second;
        if (file.target < 0) {
          skip(absl::StrCat("actuator '", name, "' is not supported (see its warning)"));
          continue;
        }
        if (sensor.kind == Kind::kActuatorFrc) {
          if (file.gear == 0) {
            skip(absl::StrCat("actuator '", name, "' has gear 0, which hides its force"));
            continue;
          }
          sensor.actuator = file.target;
          sensor.scale = 1 / file.gear;
        } else {
          if (file.on_site || file.on_body) {
            skip(absl::StrCat("the length and velocity of ",
                              file.whole_joint ? "a free or ball joint's motor '"
                              : file.on_body   ? "body (adhesion) actuator '"
                                               : "site actuator '",
                              name, "' are not supported"));
            continue;
          }
          if (file.spatial_tendon >= 0) {
            sensor.tendon = file.spatial_tendon;
            sensor.scale = file.gear;
            break;
          }
          AXION_IO_RETURN_IF_ERROR(add_joints(file.joints));
        }
        break;
      }
      case Kind::kFramePos:
      case Kind::kFrameQuat:
      case Kind::kFrameXAxis:
      case Kind::kFrameYAxis:
      case Kind::kFrameZAxis:
      case Kind::kFrameLinVel:
      case Kind::kFrameAngVel:
      case Kind::kFrameLinAcc:
      case Kind::kFrameAngAcc: {
        const bool axes = sensor.kind != Kind::kFramePos && sensor.kind != Kind::kFrameLinVel &&
                          sensor.kind != Kind::kFrameAngVel && sensor.kind != Kind::kFrameLinAcc &&
                          sensor.kind != Kind::kFrameAngAcc;
        // MuJoCo 2.2's frame accelerations have no reference (its attributes' warning says so)
        const bool referenced =
            sensor.kind != Kind::kFrameLinAcc && sensor.kind != Kind::kFrameAngAcc;
        if (e.Str("objtype") == "camera" || e.Str("reftype") == "camera") {
          skip("cameras are not supported as sensor objects");
          continue;
        }
        if (e.Str("objtype") == "body" && axes) {
          skip(
              "the axes of a body's inertial frame (objtype 'body') are not supported: use "
              "'xbody', the body's own frame");
          continue;
        }
        AXION_IO_ASSIGN_OR_RETURN(sensor.object, SensorObject(e, "objtype", "objname", axes));
        if (referenced && (e.Has("reftype") || e.Has("refname"))) {
          if (e.Str("reftype") == "body") {
            skip(
                "a body's inertial frame (reftype 'body') is not supported as a reference: "
                "use 'xbody', the body's own frame");
            continue;
          }
          AXION_IO_ASSIGN_OR_RETURN(sensor.reference, SensorObject(e, "reftype", "refname", true));
          sensor.has_reference = true;
        }
        break;
      }
      case Kind::kSubtreeCom:
      case Kind::kSubtreeLinVel:
      case Kind::kSubtreeAngMom: {
        const std::string body = e.Str("body");
        int root = -2;
        if (body == "world") root = -1;
        for (size_t b = 0; b < bodies_.size() && root == -2; ++b) {
          if (bodies_[b].name == body) root = static_cast<int>(b);
        }
        if (root == -2) return e.Error("body", absl::StrCat("unknown body '", body, "'"));
        // every file body whose chain of parents reaches the root
        for (size_t b = 0; b < bodies_.size(); ++b) {
          int up = static_cast<int>(b);
          while (up >= 0 && up != root) up = bodies_[up].parent;
          if (up != root || !(bodies_[b].mass > 0)) continue;
          sensor.masses.push_back({axion_body_[b],
                                   io::ComposePose(offset_[b], Pose{bodies_[b].com, {1, 0, 0, 0}}),
                                   mocap_of_[b]});
          sensor.mass.push_back(bodies_[b].mass);
          if (sensor.kind == Kind::kSubtreeAngMom) {
            for (int r = 0; r < 3; ++r)
              for (int c = 0; c < 3; ++c) sensor.inertia.push_back(bodies_[b].inertia(r, c));
          }
        }
        break;
      }
      case Kind::kClock:
        break;
    }
    if (sensor.kind == Kind::kMagnetometer) sensor.field = magnetic_;
    if (sensor.kind == Kind::kRangefinder) {
      // the ray leaves its site's body's geoms out, as MuJoCo's; convex hulls (meshes,
      // ellipsoids of unequal radii) it does not see, height fields it does
      const int b = site_by_name_.at(e.Str("site")).second;
      if (b >= 0) sensor.shapes = file_body_shapes_[b];
      if (std::any_of(result_.model.shapes.begin(), result_.model.shapes.end(),
                      [](const ShapeDesc& s) { return s.type == ShapeType::kConvexHull; })) {
        warnings_.Add("rangefinder-hulls",
                      absl::StrCat(e.Describe(),
                                   ": rangefinders do not see mesh geoms and ellipsoids of "
                                   "unequal radii (convex hulls here)"));
      }
    }
    if (sensor.kind == Kind::kForce || sensor.kind == Kind::kTorque) {
      // what the site's body and its descendants receive from its parent: the Axion bodies
      // of the subtree, the light bodies of its own joints excluded (they are its joint)
      const int b = site_by_name_.at(e.Str("site")).second;
      if (b < 0 || axion_body_[b] == kWorldBody) {
        skip("a force or torque sensor on the world or a static or mocap body reads nothing");
        continue;
      }
      if (axion_body_frame_[axion_body_[b]].first != b) {
        skip(absl::StrCat("its body '", bodies_[b].name,
                          "' has no joint and was merged into its parent, with which Axion "
                          "exchanges no force"));
        continue;
      }
      auto below = [&](int d) {  // d in b's subtree, b excluded
        for (d = bodies_[d].parent; d >= 0; d = bodies_[d].parent) {
          if (d == b) return true;
        }
        return false;
      };
      for (size_t i = 0; i < axion_body_frame_.size(); ++i) {
        const auto [frame, joints] = axion_body_frame_[i];
        if ((frame == b && joints == -1) || below(frame))
          sensor.bodies.push_back(static_cast<int>(i));
      }
    }
    if (sensor.kind == Kind::kTouch) {
      auto site = site_by_name_.find(e.Str("site"));
      if (site == site_by_name_.end())
        return e.Error("site", absl::StrCat("unknown site '", e.Str("site"), "'"));
      sensor.zone = site->second.first->shape;
      sensor.zone_size = site->second.first->size;
    }
    sensor.offset = result_.sensor_data_count;
    result_.sensor_data_count += sensor.dim;
    result_.source_sensors.push_back(std::move(sensor));
  }
  return absl::OkStatus();
}

// MuJoCo's compiler gives a muscle with a negative force the peak force scale / acc0, acc0 =
// |M^-1 m| the joint accelerations a unit force along the muscle gives at qpos0 (m its moment
// arms, M the joint-space mass matrix with armature, both in MuJoCo's qvel coordinates), and
// a muscle without a length range the range of lengths it reaches when simulated pulling
// alone and then pushing alone (mj_setLengthRange). Here M is the kinetic energy of the
// imported bodies moved by each unit qvel at qpos0 (the body twists FileStateBodies gives),
// m comes from the tendon's Jacobian at the same twists, and the range from Axion's own
// simulation of the same experiment: from qpos0, the muscle turned into an effort of
// +-accel / acc0 (MuJoCo takes accel / |M^-1 m| at each step's configuration), the bodies'
// velocities scaled by exp(-h / timeconst) before every step, the extremes of the last
// `inteval` seconds (or, once every length has held still for `inteval` seconds, those it
// holds: the damped simulation stays there). Joint limits are hard here where MuJoCo's yield a
// little: on arm26.xml the ranges differ by up to 7e-4 of their width (MjcfMuscleTest).
absl::Status MjcfLoader::ResolveMuscles() {
  // (<flag actuation="disable"> leaves no muscle)
  if (pending_muscles_.empty() || !flags_.actuation) return absl::OkStatus();
  ModelDesc& desc = result_.model;
  // MuJoCo's DOFs: qpos0, each joint's first qvel index, the armature on each
  std::vector<Real> qpos0;
  int nv = 0;
  FileQpos0(&qpos0, &nv);
  std::map<std::string, int> qvel_index;
  std::vector<Real> armature(nv, 0);
  int va = 0;
  for (const MjBody& body : bodies_) {
    for (const MjJoint& j : body.joints) {
      qvel_index[j.name] = va;
      for (int k = 0; k < FileDofCount(j.kind); ++k) armature[va + k] = j.armature;
      va += FileDofCount(j.kind);
    }
  }
  absl::StatusOr<std::shared_ptr<const Model>> model = Model::Compile(desc);
  if (!model.ok()) return model.status();
  // the bodies' motion under each unit qvel, and M = sum over bodies of J^T diag(m, I) J
  std::vector<BodyState> unit(nv);
  for (int k = 0; k < nv; ++k) {
    std::vector<Real> qvel(nv, 0);
    qvel[k] = 1;
    AXION_IO_RETURN_IF_ERROR(FileStateBodies(qpos0, qvel, &unit[k].pose, &unit[k].velocity));
  }
  std::vector<Real> mass(nv * nv, 0);
  for (int i = 0; i < nv; ++i) mass[i * nv + i] = armature[i];
  for (size_t b = 0; b < desc.bodies.size() && nv > 0; ++b) {
    const BodyDesc& body = desc.bodies[b];
    const Quat rot = load_quat(&unit[0].pose[7 * b + 3]);
    const Vec3 lever = rotate(rot, body.com);
    const Mat33 inertia = quat_to_mat(rot) * body.inertia * transpose(quat_to_mat(rot));
    std::vector<Vec3> linear(nv), angular(nv);
    for (int k = 0; k < nv; ++k) {
      angular[k] = load3(&unit[k].velocity[6 * b + 3]);
      linear[k] = load3(&unit[k].velocity[6 * b]) + cross(angular[k], lever);
    }
    for (int i = 0; i < nv; ++i) {
      for (int k = 0; k < nv; ++k)
        mass[i * nv + k] +=
            body.mass * dot(linear[i], linear[k]) + dot(angular[i], inertia * angular[k]);
    }
  }
  // Cholesky factor of M (lower), then acc0 per muscle
  std::vector<Real> chol = mass;
  for (int j = 0; j < nv; ++j) {
    for (int k = 0; k < j; ++k) chol[j * nv + j] -= chol[j * nv + k] * chol[j * nv + k];
    if (!(chol[j * nv + j] > 0))
      return absl::InvalidArgumentError(
          "muscles: the joint-space mass matrix at qpos0 is singular (a DOF without inertia), so "
          "no muscle force can be scaled by it (give the muscles a positive force)");
    chol[j * nv + j] = std::sqrt(chol[j * nv + j]);
    for (int i = j + 1; i < nv; ++i) {
      for (int k = 0; k < j; ++k) chol[i * nv + j] -= chol[i * nv + k] * chol[j * nv + k];
      chol[i * nv + j] /= chol[j * nv + j];
    }
  }
  // per muscle: its moment arms (dl/dqvel), |M^-1 of them| = acc0
  std::vector<Real> acc0(pending_muscles_.size()), moment_norm(pending_muscles_.size());
  for (size_t p = 0; p < pending_muscles_.size(); ++p) {
    const PendingMuscle& m = pending_muscles_[p];
    ActuatorDesc& act = desc.actuators[m.actuator];
    std::vector<Real> x(nv, 0);  // the moment arms, then M^-1 of them
    for (const auto& [joint, coef] : m.joints) {
      auto index = qvel_index.find(joint);
      if (index == qvel_index.end())
        return absl::InternalError(absl::StrCat(m.where, ": joint '", joint, "' has no DOF"));
      x[index->second] += coef;
    }
    if (m.spatial_tendon >= 0) {
      for (int k = 0; k < nv; ++k) {
        absl::StatusOr<std::pair<Real, Real>> state =
            SpatialTendonState(**model, m.spatial_tendon, unit[k]);
        if (!state.ok()) return state.status();
        x[k] = act.gear * state->second;
      }
    }
    for (Real arm : x) moment_norm[p] += arm * arm;
    moment_norm[p] = std::sqrt(moment_norm[p]);
    for (int i = 0; i < nv; ++i) {
      for (int k = 0; k < i; ++k) x[i] -= chol[i * nv + k] * x[k];
      x[i] /= chol[i * nv + i];
    }
    for (int i = nv - 1; i >= 0; --i) {
      for (int k = i + 1; k < nv; ++k) x[i] -= chol[k * nv + i] * x[k];
      x[i] /= chol[i * nv + i];
    }
    Real norm = 0;
    for (Real xi : x) norm += xi * xi;
    acc0[p] = std::sqrt(norm);
    if (!(acc0[p] > 0))
      return absl::InvalidArgumentError(absl::StrCat(
          m.where,
          ": the muscle moves no joint at qpos0 (zero moment arms), so its force cannot "
          "be scaled by the acceleration it gives; give it a positive force"));
    if (m.scale > 0) act.muscle.force = m.scale / acc0[p];
  }

  // length ranges: the joint's or tendon's limits where uselimit allows, else simulated
  const LengthRangeOptions& o = length_range_;
  std::vector<size_t> simulated;
  for (size_t p = 0; p < pending_muscles_.size(); ++p) {
    const PendingMuscle& m = pending_muscles_[p];
    if (!m.needs_range) continue;
    if (o.mode == "none")
      return absl::InvalidArgumentError(
          absl::StrCat(m.where,
                       ": the muscle has no lengthrange and <compiler><lengthrange mode=\"none\"> "
                       "computes none"));
    if (o.use_limit && m.limited) {
      desc.actuators[m.actuator].muscle.length_range = {m.limit[0], m.limit[1]};
      continue;
    }
    simulated.push_back(p);
  }
  if (simulated.empty()) return absl::OkStatus();
  ModelDesc trial = desc;
  trial.keyframes.clear();
  for (ActuatorDesc& a : trial.actuators) {
    if (a.type != ActuatorType::kMuscle) continue;
    a.type = ActuatorType::kEffort;
    a.ctrl_limited = a.force_limited = false;
  }
  if (o.timestep > 0) trial.options.timestep = o.timestep;
  const Real h = trial.options.timestep;
  // a bound on the work a file can ask for (a server loads files from its clients)
  constexpr double kMaxLengthRangeSteps = 1e5;
  const double planned = std::ceil(o.total_time / h);
  if (!(planned <= kMaxLengthRangeSteps))
    return absl::InvalidArgumentError(absl::StrCat(
        pending_muscles_[simulated[0]].where, ": finding the muscles' length ranges would take ",
        planned, " steps of ", h, " s (inttotal / timestep), more than ", kMaxLengthRangeSteps,
        "; give the muscles a lengthrange, or <compiler><lengthrange> a larger timestep or a "
        "shorter inttotal"));
  absl::StatusOr<std::shared_ptr<const Model>> trial_model = Model::Compile(std::move(trial));
  if (!trial_model.ok()) return trial_model.status();
  SimulatorOptions sim_options;
  sim_options.backend = Backend::kCpu;
  sim_options.threads = 1;
  absl::StatusOr<std::unique_ptr<Simulator>> sim = Simulator::Create(sim_options);
  if (!sim.ok()) return sim.status();
  const int worlds = 2 * static_cast<int>(simulated.size());
  absl::StatusOr<std::vector<WorldId>> ids = (*sim)->CreateWorlds(*trial_model, worlds);
  if (!ids.ok()) return ids.status();
  for (int w = 0; w < worlds; ++w) {
    const size_t p = simulated[w / 2];
    const PendingMuscle& m = pending_muscles_[p];
    std::vector<Real> ctrl(desc.actuators.size(), 0);
    Real force = o.accel / acc0[p];
    // maxforce bounds the generalized force's norm, |f| |m| with m the moment arms
    if (o.max_force > 0 && force * moment_norm[p] > o.max_force)
      force = o.max_force / moment_norm[p];
    ctrl[m.actuator] = (w % 2 == 0 ? -1 : 1) * force;
    AXION_IO_RETURN_IF_ERROR((*sim)->SetControls((*ids)[w], ctrl));
  }
  const Real damping = std::exp(-h / std::max(Real(0.01), o.time_constant));
  const int steps = static_cast<int>(std::ceil(o.total_time / h - Real(1e-9)));
  std::vector<Real> low(worlds, std::numeric_limits<Real>::infinity());
  std::vector<Real> high(worlds, -std::numeric_limits<Real>::infinity());
  // Every world's length held still (to 1e-12 m) for `inteval` seconds: the muscle has come to
  // rest at its extreme (against a joint limit, say), where the damped simulation stays, so the
  // last `inteval` seconds of the full run would read the same; it stops there.
  constexpr Real kStill = Real(1e-12);
  std::vector<Real> still_length(worlds, std::numeric_limits<Real>::quiet_NaN());
  std::vector<Real> still_since(worlds, 0);
  for (int step = 1; step <= steps; ++step) {
    for (WorldId id : *ids) {
      absl::StatusOr<BodyState> bodies = (*sim)->GetBodyState(id);
      if (!bodies.ok()) return bodies.status();
      for (Real& u : bodies->velocity) u *= damping;
      AXION_IO_RETURN_IF_ERROR((*sim)->SetBodyState(id, *bodies));
    }
    AXION_IO_RETURN_IF_ERROR((*sim)->StepAll());
    const Real time = step * h;
    const bool evaluated = time > o.total_time - o.eval_time;
    bool all_still = true;
    for (int w = 0; w < worlds; ++w) {
      const ActuatorDesc& act = desc.actuators[pending_muscles_[simulated[w / 2]].actuator];
      absl::StatusOr<WorldStats> stats = (*sim)->GetStats((*ids)[w]);
      if (!stats.ok()) return stats.status();
      if (stats->flags & kWorldNonFinite)
        return absl::InvalidArgumentError(absl::StrCat(
            pending_muscles_[simulated[w / 2]].where,
            ": the simulation that finds the muscle's length range became non-finite; give "
            "the muscle a lengthrange"));
      Real length = 0;
      if (act.tendon >= 0) {
        absl::StatusOr<std::vector<Real>> tendons = (*sim)->GetTendonStates((*ids)[w]);
        if (!tendons.ok()) return tendons.status();
        length = (*tendons)[2 * act.tendon];
      } else {
        absl::StatusOr<JointState> joints = (*sim)->GetJointState((*ids)[w]);
        if (!joints.ok()) return joints.status();
        length = joints->position[(*trial_model)->joint_position_offset()[act.joint] + act.dof];
      }
      length *= act.gear;
      if (!(std::fabs(length - still_length[w]) <= kStill)) {
        still_length[w] = length;
        still_since[w] = time;
      }
      all_still = all_still && time - still_since[w] >= o.eval_time;
      if (evaluated) {
        low[w] = std::min(low[w], length);
        high[w] = std::max(high[w], length);
      }
    }
    if (all_still) {
      for (int w = 0; w < worlds; ++w) {
        low[w] = std::min(low[w], still_length[w]);
        high[w] = std::max(high[w], still_length[w]);
      }
      break;
    }
  }
  for (size_t i = 0; i < simulated.size(); ++i) {
    const PendingMuscle& m = pending_muscles_[simulated[i]];
    const Real lower = low[2 * i], upper = high[2 * i + 1];
    if (!(lower < upper))
      return absl::InvalidArgumentError(
          absl::StrCat(m.where, ": the muscle's simulated length range (", lower, ", ", upper,
                       ") is empty; give it a lengthrange"));
    for (int side = 0; side < 2; ++side) {
      const Real spread = high[2 * i + side] - low[2 * i + side];
      if (spread > o.tolerance * (upper - lower))
        return absl::InvalidArgumentError(absl::StrCat(
            m.where, ": the simulation that finds the muscle's length range did not settle (its ",
            side == 0 ? "shortest" : "longest", " length moved by ", spread, " over the last ",
            o.eval_time, " s of ", o.total_time, ", more than tolrange ", o.tolerance,
            " of the range (", lower, ", ", upper, ")); give the muscle a lengthrange"));
    }
    desc.actuators[m.actuator].muscle.length_range = {lower, upper};
  }
  return absl::OkStatus();
}

// MuJoCo's qpos0 (the joints' reference coordinates, a free joint's body pose) and nv.
void MjcfLoader::FileQpos0(std::vector<Real>* qpos0, int* nv) const {
  qpos0->clear();
  *nv = 0;
  for (const MjBody& body : bodies_) {
    for (const MjJoint& j : body.joints) {
      switch (j.kind) {
        case JointKind::kFree:
          qpos0->insert(qpos0->end(),
                        {body.world.pos.x, body.world.pos.y, body.world.pos.z, body.world.quat.w,
                         body.world.quat.x, body.world.quat.y, body.world.quat.z});
          break;
        case JointKind::kBall:
          qpos0->insert(qpos0->end(), {1, 0, 0, 0});
          break;
        default:
          qpos0->push_back(j.ref);
      }
      *nv += FileDofCount(j.kind);
    }
  }
}

// The Axion bodies' state (BodyState's layout) at MuJoCo's qpos and qvel, by MuJoCo's forward
// kinematics (mj_kinematics: each body placed in its parent's frame, then moved by its joints
// in order, a hinge or ball turning it about its anchor, a slide along its axis, a free joint
// setting its pose), and velocities as MuJoCo's DOFs define them (a hinge's axis and a slide's
// in the frame its earlier joints leave, a ball's and a free joint's rotation in the body's
// frame). A chain's light bodies take the frames after their joints.
absl::Status MjcfLoader::FileStateBodies(const std::vector<Real>& qpos,
                                         const std::vector<Real>& qvel, std::vector<Real>* pose_out,
                                         std::vector<Real>* velocity_out) const {
  // per MJCF body: its frame, and its motion as the velocity of its origin and its spin; per
  // joint on the way, the frame after it (the light bodies')
  struct Motion {
    Pose pose;
    Vec3 linear, angular;
  };
  std::vector<Motion> motion(bodies_.size());
  std::vector<std::vector<Motion>> after_joint(bodies_.size());
  int qa = 0, va = 0;
  for (size_t b = 0; b < bodies_.size(); ++b) {
    const MjBody& body = bodies_[b];
    const Motion parent =
        body.parent < 0 ? Motion{Pose{{}, {1, 0, 0, 0}}, {}, {}} : motion[body.parent];
    Pose pose = compose(parent.pose, body.local);
    // positions: each joint moves the frame, in order
    struct Step {
      JointKind kind;
      Vec3 axis, anchor;  // world, before the joint moves the frame
      const Real* rate;
    };
    std::vector<Step> steps;
    std::vector<Pose> frames;
    for (const MjJoint& j : body.joints) {
      const Real* q = &qpos[qa];
      Step st{j.kind, rotate(pose.quat, j.axis), pose.pos + rotate(pose.quat, j.pos), &qvel[va]};
      switch (j.kind) {
        case JointKind::kFree:
          pose = {{q[0], q[1], q[2]}, quat_normalized({q[3], q[4], q[5], q[6]})};
          st.anchor = pose.pos;
          qa += 7, va += 6;
          break;
        case JointKind::kSlide:
          pose.pos += (q[0] - j.ref) * st.axis;
          qa += 1, va += 1;
          break;
        case JointKind::kHinge:
        case JointKind::kBall: {
          if (j.kind == JointKind::kBall && !(quat_norm({q[0], q[1], q[2], q[3]}) > 0))
            return absl::InvalidArgumentError(
                absl::StrCat("ball joint '", j.name, "': zero quaternion"));
          const Quat turn = j.kind == JointKind::kBall ? quat_normalized({q[0], q[1], q[2], q[3]})
                                                       : quat_from_axis_angle(j.axis, q[0] - j.ref);
          pose.quat = quat_normalized(pose.quat * turn);
          pose.pos = st.anchor - rotate(pose.quat, j.pos);
          qa += j.kind == JointKind::kBall ? 4 : 1;
          va += j.kind == JointKind::kBall ? 3 : 1;
          break;
        }
      }
      steps.push_back(st);
      frames.push_back(pose);
    }
    // velocities at each frame: the parent's motion carried there plus the joints' twists up
    // to it (a ball's and a free joint's spin along the body's final axes, as MuJoCo's DOFs)
    auto motion_at = [&](const Pose& frame, size_t joints) {
      Motion m{frame, parent.linear + cross(parent.angular, frame.pos - parent.pose.pos),
               parent.angular};
      for (size_t k = 0; k < joints; ++k) {
        const Step& st = steps[k];
        Vec3 spin;
        switch (st.kind) {
          case JointKind::kSlide:
            m.linear += st.rate[0] * st.axis;
            break;
          case JointKind::kHinge:
            spin = st.rate[0] * st.axis;
            break;
          case JointKind::kFree:
            m.linear = Vec3{st.rate[0], st.rate[1], st.rate[2]};
            spin = rotate(pose.quat, Vec3{st.rate[3], st.rate[4], st.rate[5]});
            break;
          case JointKind::kBall:
            spin = rotate(pose.quat, Vec3{st.rate[0], st.rate[1], st.rate[2]});
            break;
        }
        m.angular += spin;
        m.linear += cross(spin, frame.pos - st.anchor);
      }
      return m;
    };
    motion[b] = motion_at(pose, steps.size());
    for (size_t k = 0; k < frames.size(); ++k)
      after_joint[b].push_back(motion_at(frames[k], k + 1));
  }

  // the Axion bodies' state
  const size_t n = result_.model.bodies.size();
  if (axion_body_frame_.size() != n)
    return absl::InternalError("keyframe: the Axion bodies' MJCF frames are not all known");
  pose_out->resize(7 * n);
  velocity_out->resize(6 * n);
  for (size_t i = 0; i < n; ++i) {
    const auto [b, joints] = axion_body_frame_[i];
    const Motion& m = joints < 0 ? motion[b] : after_joint[b][joints - 1];
    store3(&(*pose_out)[7 * i], m.pose.pos);
    store_quat(&(*pose_out)[7 * i + 3], m.pose.quat);
    store6(&(*velocity_out)[6 * i], {m.linear, m.angular});
  }
  return absl::OkStatus();
}

// <keyframe><key>: MuJoCo's qpos and qvel turned into the body state they give, by MuJoCo's
// forward kinematics (mj_kinematics: each body placed in its parent's frame, then moved by its
// joints in order, a hinge or ball turning it about its anchor, a slide along its axis, a free
// joint setting its pose), and velocities as MuJoCo's DOFs define them (a hinge's axis and a
// slide's in the frame its earlier joints leave, a ball's and a free joint's rotation in the
// body's frame). A chain's light bodies take the frames after their joints. Where the model
// merged hinges into one generic joint, a pose MuJoCo reaches by two hinges may lie off the
// Axion joint by second-order terms (mjcf.h, rule 2), which the first step pulls out.
absl::Status MjcfLoader::ParseKeyframes(const XMLElement* section) {
  std::vector<const XMLElement*> children;
  AXION_IO_RETURN_IF_ERROR(Children(section, &children, 0));
  std::vector<Real> qpos0;
  int nv = 0;
  FileQpos0(&qpos0, &nv);
  const size_t nq = qpos0.size(), nu = actuator_target_.size();
  ModelDesc& model = result_.model;
  for (const XMLElement* c : children) {
    if (std::string(c->Name()) != "key") {
      WarnElement(c, "keyframe", "is not supported and was ignored");
      continue;
    }
    Elem e = Resolve(c, "");
    WarnUnsupportedAttributes(e);
    KeyframeDesc key;
    key.name = e.name;
    AXION_IO_ASSIGN_OR_RETURN(key.time, e.Real1("time", 0));
    AXION_IO_ASSIGN_OR_RETURN(std::vector<Real> qpos, e.Reals("qpos", nq, nq, qpos0));
    AXION_IO_ASSIGN_OR_RETURN(std::vector<Real> qvel,
                              e.Reals("qvel", nv, nv, std::vector<Real>(nv, 0)));
    AXION_IO_ASSIGN_OR_RETURN(std::vector<Real> ctrl,
                              e.Reals("ctrl", nu, nu, std::vector<Real>(nu, 0)));
    const size_t na = activation_actuators_.size();
    AXION_IO_ASSIGN_OR_RETURN(std::vector<Real> act,
                              e.Reals("act", na, na, std::vector<Real>(na, 0)));
    // mocap poses: the mocap bodies' own where the key gives none, as in MuJoCo
    const size_t nmocap = model.mocap_bodies.size();
    if (e.Has("mpos") || e.Has("mquat")) {
      std::vector<Real> mpos0, mquat0;
      for (const MocapBodyDesc& m : model.mocap_bodies) {
        mpos0.insert(mpos0.end(), {m.pose.pos.x, m.pose.pos.y, m.pose.pos.z});
        mquat0.insert(mquat0.end(), {m.pose.quat.w, m.pose.quat.x, m.pose.quat.y, m.pose.quat.z});
      }
      AXION_IO_ASSIGN_OR_RETURN(std::vector<Real> mpos,
                                e.Reals("mpos", 3 * nmocap, 3 * nmocap, mpos0));
      AXION_IO_ASSIGN_OR_RETURN(std::vector<Real> mquat,
                                e.Reals("mquat", 4 * nmocap, 4 * nmocap, mquat0));
      for (size_t m = 0; m < nmocap; ++m) {
        const Quat q{mquat[4 * m], mquat[4 * m + 1], mquat[4 * m + 2], mquat[4 * m + 3]};
        if (!(quat_norm(q) > Real(1e-9)))
          return e.Error("mquat", absl::StrCat("quaternion ", m, " is zero"));
        const Quat unit = quat_normalized(q);
        key.mocap_pose.insert(key.mocap_pose.end(), {mpos[3 * m], mpos[3 * m + 1], mpos[3 * m + 2],
                                                     unit.w, unit.x, unit.y, unit.z});
      }
    }

    absl::Status placed = FileStateBodies(qpos, qvel, &key.body_pose, &key.body_velocity);
    if (!placed.ok()) return e.Error("qpos", std::string(placed.message()));
    // controls of the actuators made; MuJoCo clamps a control to its range when it acts
    key.controls.assign(model.actuators.size(), 0);
    for (size_t a = 0; a < nu; ++a) {
      const int target = actuator_target_[a];
      if (target < 0) continue;
      const ActuatorDesc& act = model.actuators[target];
      Real u = ctrl[a];
      if (act.ctrl_limited && (u < act.ctrl_min || u > act.ctrl_max)) {
        u = std::clamp(u, act.ctrl_min, act.ctrl_max);
        warnings_.Add(absl::StrCat("key-ctrl:", result_.model.keyframes.size(), ":", a),
                      absl::StrCat(e.Describe(), ": ctrl of actuator '", act.name, "' (", ctrl[a],
                                   ") lies outside its ctrlrange and was clamped to ", u,
                                   ", as MuJoCo clamps it when it acts"));
      }
      key.controls[target] = u;
    }
    // muscles' activations (finite: Reals refuses others; an actuator skipped takes its own)
    for (size_t i = 0; i < na; ++i) {
      const int target = actuator_target_[activation_actuators_[i]];
      if (target < 0 || act[i] == 0) continue;
      if (key.activations.empty()) key.activations.assign(model.actuators.size(), 0);
      key.activations[target] = act[i];
    }
    model.keyframes.push_back(std::move(key));
  }
  return absl::OkStatus();
}

absl::Status MjcfLoader::ComputeMass() {
  AXION_IO_RETURN_IF_ERROR(ResolveMass());
  // <compiler boundmass boundinertia> (or MjcfOptions' larger bounds): every body's mass and
  // principal moments raised to at least the bounds, before the inertia checks, as MuJoCo does.
  const Real bound_mass = std::max(bound_mass_, options_.bound_mass);
  const Real bound_inertia = std::max(bound_inertia_, options_.bound_inertia);
  for (MjBody& b : bodies_) {
    if (b.mass < bound_mass) b.mass = bound_mass;
    if (bound_inertia > 0) b.inertia = io::BoundPrincipalMoments(b.inertia, bound_inertia);
  }
  // Inertias no real body has: refused as MuJoCo does, or balanced as its balanceinertia does.
  for (MjBody& b : bodies_) {
    Real moments[3];
    if (!(b.mass > 0) || !io::BreaksTriangleInequality(b.inertia, moments)) continue;
    if (!balance_inertia_) {
      return absl::InvalidArgumentError(
          absl::StrCat(b.where, ": ", io::TriangleInequalityMessage(moments, false)));
    }
    warnings_.Add(absl::StrCat("balanced:", b.where),
                  absl::StrCat(b.where, ": ", io::TriangleInequalityMessage(moments, true)));
    b.inertia = io::BalancedInertia(moments);
  }
  // <compiler settotalmass>: every body's mass and inertia scaled so that the model's total
  // (every body of the file, static ones included, as MuJoCo counts it) is the value, last.
  if (set_total_mass_ > 0) {
    Real total = 0;
    for (const MjBody& b : bodies_) total += b.mass;
    if (!(total > 0)) {
      return absl::InvalidArgumentError(
          "<compiler settotalmass>: the model has no mass to scale (every body is massless)");
    }
    const Real scale = set_total_mass_ / total;
    for (MjBody& b : bodies_) {
      b.mass *= scale;
      b.inertia = scale * b.inertia;
    }
  }
  return absl::OkStatus();
}

absl::Status MjcfLoader::ResolveMass() {
  for (MjBody& b : bodies_) {
    bool from_geoms = inertiafromgeom_ == "true" || (inertiafromgeom_ == "auto" && !b.has_inertial);
    if (!from_geoms) {
      if (b.has_inertial) {
        b.mass = b.inertial_mass;
        b.com = b.inertial_com;
        b.inertia = b.inertial_tensor;
      }
      continue;
    }
    // Sum of geom masses, their centre, then each geom's inertia moved to that centre.
    Real mass = 0;
    Vec3 moment;
    for (const MjGeom& g : b.geoms) {
      if (!g.has_mass) continue;
      mass += g.mass;
      moment += g.mass * g.mass_center;
    }
    b.mass = mass;
    if (mass <= 0) continue;
    b.com = (Real(1) / mass) * moment;
    Mat33 inertia;
    for (const MjGeom& g : b.geoms) {
      if (!g.has_mass) continue;
      inertia = inertia + g.inertia + io::PointMassTensor(g.mass, g.mass_center - b.com);
    }
    b.inertia = inertia;
    if (b.plate.x > 0) {
      const Vec3 p = b.plate;
      b.com = Vec3{};
      b.inertia =
          mat33_diag(Vec3{mass * (p.y * p.y + p.z * p.z) / 12, mass * (p.x * p.x + p.z * p.z) / 12,
                          mass * (p.x * p.x + p.y * p.y) / 12});
    }
  }
  return absl::OkStatus();
}

ShapeDesc MakeShape(const MjGeom& g, int body, const Pose& offset) {
  ShapeDesc s;
  s.name = g.name;
  s.body = body;
  s.type = g.type;
  s.pose = io::ComposePose(offset, g.pose);
  s.size = g.size;
  s.vertices = g.vertices;
  s.heightfield = g.heightfield;
  s.material.friction = g.friction;
  s.material.torsional_friction = g.torsional_friction;
  s.material.rolling_friction = g.rolling_friction;
  s.contact_dim = g.condim;
  s.priority = g.priority;
  s.margin = g.margin;
  s.gap = g.gap;
  s.collision_group = static_cast<uint32_t>(g.contype);
  s.collision_mask = static_cast<uint32_t>(g.conaffinity);
  return s;
}

JointDesc SingleJoint(const MjJoint& j, int parent, int child) {
  JointDesc d;
  d.name = j.name;
  d.parent = parent;
  d.child = child;
  d.child_frame.pos = j.pos;
  switch (j.kind) {
    case JointKind::kHinge:
      d.type = JointType::kRevolute;
      d.child_frame.quat = io::QuatFromXAxis(j.axis);
      break;
    case JointKind::kSlide:
      d.type = JointType::kPrismatic;
      d.child_frame.quat = io::QuatFromXAxis(j.axis);
      break;
    default:
      d.type = JointType::kBall;
      break;
  }
  d.limited = j.limited;
  if (j.limited) {
    if (j.kind != JointKind::kBall) d.lower = {j.range[0]};
    d.upper = {j.range[1]};  // a ball joint's cone
  }
  d.reference = j.ref;
  d.drive.stiffness = j.stiffness;
  d.drive.damping = j.damping;
  d.drive.target_position = j.springref;
  d.armature = j.armature;
  d.friction_loss = j.frictionloss;
  // MuJoCo filters parent-child contacts except with the world.
  d.collide_connected = parent == kWorldBody;
  return d;
}

// One MJCF joint as DOF `frame_axis` (0..5) of a joint that merges several (kGeneric,
// kUniversal): its axis mode, spring, damper, armature and limits. Entries of free axes are
// unused; they hold the widest range to keep the vectors aligned.
void AppendMergedDof(const MjJoint& j, int frame_axis, JointDesc* d) {
  d->axis_mode[frame_axis] = j.limited ? AxisMode::kLimited : AxisMode::kFree;
  DriveDesc drive;
  drive.stiffness = j.stiffness;
  drive.damping = j.damping;
  drive.target_position = j.springref;
  d->dof_drive.push_back(drive);
  d->dof_armature.push_back(j.armature);
  d->dof_friction_loss.push_back(j.frictionloss);
  d->limited = d->limited || j.limited;
  d->lower.push_back(j.limited ? j.range[0] : -std::numeric_limits<Real>::max());
  d->upper.push_back(j.limited ? j.range[1] : std::numeric_limits<Real>::max());
}

// A merged joint none of whose DOFs is limited keeps no limit vectors.
void DropUnusedLimits(JointDesc* d) {
  if (d->limited) return;
  d->lower.clear();
  d->upper.clear();
}

absl::Status MjcfLoader::ConvertJoints(int b, int parent_body) {
  const MjBody& body = bodies_[b];
  ModelDesc& model = result_.model;
  int child = axion_body_[b];
  auto kind_of = [](JointKind kind) {
    using Kind = ImportResult::JointKind;
    return kind == JointKind::kHinge   ? Kind::kHinge
           : kind == JointKind::kSlide ? Kind::kSlide
           : kind == JointKind::kBall  ? Kind::kBall
                                       : Kind::kFree;
  };
  auto record = [&](const MjJoint& j, int joint, int dof) {
    joint_target_[j.name] = {joint, dof};
    result_.source_joints.push_back({j.name, joint, dof, kind_of(j.kind), b});
  };
  if (body.free) {
    result_.source_joints.push_back(
        {body.joints[0].name, -1, 0, ImportResult::JointKind::kFree, b});
    return absl::OkStatus();
  }
  const std::vector<MjJoint>& joints = body.joints;
  if (joints.empty()) {  // MjcfOptions::merge_welded_bodies off
    JointDesc d;
    d.name = absl::StrCat(body.name, "_weld");
    d.type = JointType::kFixed;
    d.parent = parent_body;
    d.child = child;
    d.collide_connected = parent_body == kWorldBody;
    model.joints.push_back(std::move(d));
    return absl::OkStatus();
  }
  if (joints.size() == 1) {
    record(joints[0], static_cast<int>(model.joints.size()), 0);
    model.joints.push_back(SingleJoint(joints[0], parent_body, child));
    return absl::OkStatus();
  }

  // One generic joint when the MJCF joints are 2-3 hinges (or slides) about one anchor with
  // mutually orthogonal axes: its frame axes are the joint axes, and each DOF keeps its own
  // spring, damper and armature (JointDesc::dof_drive, dof_armature).
  const MjJoint& first = joints[0];
  bool mergeable = options_.merge_joints && joints.size() <= 3 &&
                   (first.kind == JointKind::kHinge || first.kind == JointKind::kSlide);
  for (size_t i = 0; mergeable && i < joints.size(); ++i) {
    const MjJoint& j = joints[i];
    mergeable = j.kind == first.kind && j.ref == 0 &&
                (j.kind == JointKind::kSlide || norm(j.pos - first.pos) <= kAnchorTolerance);
    for (size_t k = 0; mergeable && k < i; ++k) {
      mergeable = std::abs(dot(j.axis, joints[k].axis)) <= kAxisTolerance;
    }
  }
  if (mergeable) {
    // Frame axis -> MJCF joint. (axis0, axis1, axis0 x axis1) is right-handed; a third joint
    // along -(axis0 x axis1) makes (axis0, axis2, axis1) the right-handed choice instead.
    std::vector<int> order = {0, 1};
    Vec3 x = first.axis, y = joints[1].axis;
    if (joints.size() == 3) {
      if (dot(joints[2].axis, cross(x, y)) > 0) {
        order = {0, 1, 2};
      } else {
        order = {0, 2, 1};
        y = joints[2].axis;
      }
    }
    Vec3 z = cross(x, y);
    Mat33 r;
    for (int i = 0; i < 3; ++i) {
      r(i, 0) = x[i];
      r(i, 1) = y[i];
      r(i, 2) = z[i];
    }
    JointDesc d;
    std::vector<std::string> names;
    for (int o : order) names.push_back(joints[o].name);
    d.name = absl::StrJoin(names, "+");
    d.type = JointType::kGeneric;
    d.parent = parent_body;
    d.child = child;
    d.child_frame = {first.pos, io::QuatFromMatrix(r)};
    int offset = first.kind == JointKind::kHinge ? 3 : 0;
    int joint_index = static_cast<int>(model.joints.size());
    for (size_t axis = 0; axis < order.size(); ++axis) {
      AppendMergedDof(joints[order[axis]], offset + static_cast<int>(axis), &d);
    }
    DropUnusedLimits(&d);
    for (size_t i = 0; i < joints.size(); ++i) {
      int dof = static_cast<int>(std::find(order.begin(), order.end(), static_cast<int>(i)) -
                                 order.begin());
      record(joints[i], joint_index, dof);
    }
    d.collide_connected = parent_body == kWorldBody;
    model.joints.push_back(std::move(d));
    return absl::OkStatus();
  }

  // Two hinges whose anchors differ: one universal joint, MuJoCo's kinematics exactly (the
  // second hinge turns about its own anchor, carried by the first), with no body in between.
  if (joints.size() == 2 && joints[0].kind == JointKind::kHinge &&
      joints[1].kind == JointKind::kHinge && joints[0].ref == 0 && joints[1].ref == 0 &&
      norm(cross(joints[0].axis, joints[1].axis)) > kUniversalMinSine) {
    JointDesc d;
    d.name = absl::StrCat(joints[0].name, "+", joints[1].name);
    d.type = JointType::kUniversal;
    d.parent = parent_body;
    d.child = child;
    d.child_frame = {joints[0].pos, io::QuatFromXAxis(joints[0].axis)};
    d.second_axis = joints[1].axis;
    d.second_anchor = joints[1].pos;
    AppendMergedDof(joints[0], 3, &d);
    AppendMergedDof(joints[1], 4, &d);
    DropUnusedLimits(&d);
    const int joint_index = static_cast<int>(model.joints.size());
    record(joints[0], joint_index, 0);
    record(joints[1], joint_index, 1);
    d.collide_connected = parent_body == kWorldBody;
    model.joints.push_back(std::move(d));
    return absl::OkStatus();
  }

  // A chain through light bodies, in MuJoCo's joint order.
  int previous = parent_body;
  Real fraction = options_.light_body_mass_fraction;
  for (size_t i = 0; i < joints.size(); ++i) {
    const MjJoint& j = joints[i];
    int next = child;
    if (i + 1 < joints.size()) {
      const BodyDesc& real = model.bodies[child];
      BodyDesc light;
      light.name = absl::StrCat(body.name, "/", j.name);
      light.mass = fraction * real.mass;
      light.inertia = fraction * real.inertia;
      light.com = real.com;
      light.pose = real.pose;
      light.in_fluid = false;  // a stand-in: its box would drag the body's again
      next = static_cast<int>(model.bodies.size());
      model.bodies.push_back(std::move(light));
      axion_body_frame_.push_back({b, static_cast<int>(i) + 1});
    }
    record(j, static_cast<int>(model.joints.size()), 0);
    model.joints.push_back(SingleJoint(j, previous, next));
    previous = next;
  }
  warnings_.Add("light-bodies",
                absl::StrCat("joints that cannot form one Axion joint are chained through light "
                             "bodies of ",
                             fraction, " x the body's mass (first: ", body.name, ")"));
  return absl::OkStatus();
}

absl::Status MjcfLoader::Convert() {
  ModelDesc& model = result_.model;
  for (const MjGeom& g : world_geoms_) model.shapes.push_back(MakeShape(g, kWorldBody, Pose{}));
  axion_body_.assign(bodies_.size(), kWorldBody);
  offset_.assign(bodies_.size(), Pose{});
  mocap_of_.assign(bodies_.size(), -1);
  for (size_t b = 0; b < bodies_.size(); ++b) {
    MjBody& body = bodies_[b];
    bool parent_moving = body.parent >= 0 && bodies_[body.parent].moving;
    body.moving = !body.joints.empty() || parent_moving;
    if (body.mocap) {
      // Static geometry and anchors that the user moves (Simulator::SetMocapPoses).
      if (!body.joints.empty())
        return absl::InvalidArgumentError(absl::StrCat(
            body.where, ": a mocap body has no joints (MuJoCo's rule); it is moved by its pose"));
      mocap_of_[b] = static_cast<int>(model.mocap_bodies.size());
      model.mocap_bodies.push_back({body.name, body.world});
      axion_body_[b] = kWorldBody;
      offset_[b] = Pose{};
    } else if (!body.moving && body.parent >= 0 && mocap_of_[body.parent] >= 0) {
      // Welded to a mocap body: rides on it.
      mocap_of_[b] = mocap_of_[body.parent];
      axion_body_[b] = kWorldBody;
      offset_[b] = io::ComposePose(offset_[body.parent], body.local);
    } else if (!body.moving) {
      // Welded to the world: part of the static scene.
      axion_body_[b] = kWorldBody;
      offset_[b] = body.world;
    } else if (body.joints.empty() && (options_.merge_welded_bodies || body.mass <= 0)) {
      // Welded to a moving parent (no joint): one rigid body with it, as in MuJoCo, where such
      // a body has no degrees of freedom of its own. Its geoms move to the parent and its mass
      // and inertia join the parent's: a weld would cost six rows and a body, and a light one
      // (the humanoid's hands) slows Newton down. A massless one (a frame for sites or
      // cameras) is merged whatever the options say.
      const int target = axion_body_[body.parent];
      axion_body_[b] = target;
      offset_[b] = io::ComposePose(offset_[body.parent], body.local);
      BodyDesc& into = model.bodies[target];
      if (body.mass > 0) {
        const MassProperties sum = CombineMassProperties(
            MassProperties{0, into.mass, into.com, into.inertia},
            TransformMassProperties(MassProperties{0, body.mass, body.com, body.inertia},
                                    offset_[b].pos, offset_[b].quat));
        into.mass = sum.mass;
        into.com = sum.com;
        into.inertia = sum.inertia;
      }
      warnings_.Add(absl::StrCat("merged:", body.name),
                    absl::StrCat("body '", body.name, "' has no joint: merged into '", into.name,
                                 "', which it moves with (ImportResult::source_bodies)"));
    } else {
      if (!(body.mass > 0)) {
        return absl::InvalidArgumentError(
            absl::StrCat(body.where,
                         ": mass is zero but the body moves (give it geoms with volume or an "
                         "<inertial> with positive mass)"));
      }
      if (!(det(body.inertia) > 0)) {
        return absl::InvalidArgumentError(absl::StrCat(
            body.where, ": inertia is singular (a point mass); give it a positive diaginertia"));
      }
      BodyDesc d;
      d.name = body.name;
      d.mass = body.mass;
      d.com = body.com;
      d.inertia = body.inertia;
      d.pose = body.world;
      axion_body_[b] = static_cast<int>(model.bodies.size());
      offset_[b] = Pose{};
      model.bodies.push_back(std::move(d));
      axion_body_frame_.push_back({static_cast<int>(b), -1});
      int parent_body = body.parent < 0 ? kWorldBody : axion_body_[body.parent];
      const size_t first_joint = model.joints.size();
      AXION_IO_RETURN_IF_ERROR(ConvertJoints(static_cast<int>(b), parent_body));
      // hinged to a mocap body: the joint's parent side rides on it. Their geoms collide:
      // MuJoCo's mocap bodies belong to the world's weld group, which its parent filter spares.
      const int carrier = body.parent < 0 ? -1 : mocap_of_[body.parent];
      for (size_t j = first_joint; j < model.joints.size(); ++j) {
        if (model.joints[j].parent == kWorldBody) model.joints[j].parent_mocap = carrier;
      }
    }
    file_body_shapes_.emplace_back();
    for (const MjGeom& g : body.geoms) {
      file_body_shapes_.back().push_back(static_cast<int>(model.shapes.size()));
      model.shapes.push_back(MakeShape(g, axion_body_[b], offset_[b]));
      model.shapes.back().mocap = mocap_of_[b];
    }
    result_.source_bodies.push_back({body.name, axion_body_[b], offset_[b], mocap_of_[b]});
  }
  for (const MjBody& body : bodies_) {
    for (const MjJoint& j : body.joints) {
      joint_kind_[j.name] = j.kind;
    }
  }
  // sites in MuJoCo's order (the world's, then body by body), on the bodies that carry them
  auto add_sites = [&](const std::vector<MjSite>& sites, const std::string& owner, int body,
                       const Pose& offset, int mocap, int file_body) {
    for (size_t k = 0; k < sites.size(); ++k) {
      const std::string name =
          sites[k].name.empty() ? absl::StrCat(owner, "_site", k + 1) : sites[k].name;
      result_.source_sites.push_back({name, body, io::ComposePose(offset, sites[k].pose), mocap});
      site_by_name_[name] = {&sites[k], file_body};
    }
  };
  add_sites(world_sites_, "world", kWorldBody, Pose{}, -1, -1);
  for (size_t b = 0; b < bodies_.size(); ++b) {
    add_sites(bodies_[b].sites, bodies_[b].name, axion_body_[b], offset_[b], mocap_of_[b],
              static_cast<int>(b));
  }
  return absl::OkStatus();
}

// MuJoCo's collision filter on Axion's terms. MuJoCo never collides two bodies of one weld
// group (bodies welded together, or to the world), nor a weld group and its parent weld group
// unless one is the world; Axion skips the bodies joined directly by a joint with
// collide_connected = false. The pairs MuJoCo filters and Axion would not (a body and its parent
// across a light-body chain; a welded body and its parent's other children, e.g. the humanoid's
// head and upper arms) go into ModelDesc::exclude_body_pairs, so contype/conaffinity keep their
// meaning as collision groups and masks, and so do the pairs of <contact><exclude>. The geom
// pairs MuJoCo collides and Axion's filter would not (one geom's contype meeting the other's
// conaffinity one way only, or bodies joined by a joint MuJoCo does not filter) become explicit
// contact pairs, with MuJoCo's mixing of the two geoms (the larger friction and condim), up to
// kMaxFilterPairs; past that the rules differ, with a warning.
constexpr size_t kMaxFilterPairs = 4096;

void MjcfLoader::ApplyCollisionRules() {
  // Geoms per MJCF body (-1: the world's own), to reason about body pairs.
  struct GeomRef {
    int body;
    const MjGeom* geom;
  };
  std::vector<GeomRef> geoms;
  for (const MjGeom& g : world_geoms_) geoms.push_back({-1, &g});
  for (size_t b = 0; b < bodies_.size(); ++b) {
    for (const MjGeom& g : bodies_[b].geoms) geoms.push_back({static_cast<int>(b), &g});
  }
  auto mujoco_bits = [](const MjGeom& a, const MjGeom& b) {
    return (a.contype & b.conaffinity) || (b.contype & a.conaffinity);
  };
  auto axion_bits = [](const MjGeom& a, const MjGeom& b) {
    return (a.contype & b.conaffinity) && (b.contype & a.conaffinity);
  };
  // MuJoCo's weld groups: a body without joints moves with its parent.
  std::vector<int> weld(bodies_.size());
  for (size_t b = 0; b < bodies_.size(); ++b) {
    const MjBody& body = bodies_[b];
    weld[b] =
        !body.joints.empty() ? static_cast<int>(b) + 1 : (body.parent < 0 ? 0 : weld[body.parent]);
  }
  auto weld_of = [&](int b) { return b < 0 ? 0 : weld[b]; };
  auto weld_parent = [&](int w) {
    if (w == 0) return 0;
    int parent = bodies_[w - 1].parent;
    return parent < 0 ? 0 : weld[parent];
  };
  // Axion bodies joined directly with collide_connected = false.
  std::set<std::pair<int, int>> joined;
  for (const JointDesc& j : result_.model.joints) {
    if (!j.collide_connected)
      joined.insert({std::min(j.parent, j.child), std::max(j.parent, j.child)});
  }
  std::string asymmetric;
  std::set<std::string> filter_mismatch;
  std::set<std::pair<int, int>> exclude;  // Axion body pairs MuJoCo filters and Axion would not
  // Geom i is shape i (Convert adds the world's geoms, then each body's, one shape each); the
  // pairs of <contact><pair> are already explicit.
  std::set<std::pair<int, int>> explicit_pairs;
  for (const ContactPairDesc& p : result_.model.contact_pairs)
    explicit_pairs.insert({std::min(p.shape_a, p.shape_b), std::max(p.shape_a, p.shape_b)});
  std::vector<ContactPairDesc> added;
  for (size_t i = 0; i < geoms.size(); ++i) {
    for (size_t k = i + 1; k < geoms.size(); ++k) {
      const GeomRef& a = geoms[i];
      const GeomRef& b = geoms[k];
      int wa = weld_of(a.body), wb = weld_of(b.body);
      bool mj_filtered =
          wa == wb || (wa != 0 && wb != 0 && (wa == weld_parent(wb) || wb == weld_parent(wa))) ||
          excluded_bodies_.count({std::min(a.body, b.body), std::max(a.body, b.body)}) > 0;
      int ba = a.body < 0 ? kWorldBody : axion_body_[a.body];
      int bb = b.body < 0 ? kWorldBody : axion_body_[b.body];
      bool ax_filtered = ba == bb || joined.count({std::min(ba, bb), std::max(ba, bb)}) > 0;
      // The body filter comes before the bits in MuJoCo, so it is kept whatever they say.
      if (mj_filtered && !ax_filtered) exclude.insert({std::min(ba, bb), std::max(ba, bb)});
      bool mj_bits = mujoco_bits(*a.geom, *b.geom);
      if (!mj_bits) continue;
      const bool differ = !mj_filtered && (ax_filtered || !axion_bits(*a.geom, *b.geom));
      if (differ && ba != bb && added.size() < kMaxFilterPairs &&
          !explicit_pairs.count({static_cast<int>(i), static_cast<int>(k)})) {
        ContactPairDesc pair;
        auto label = [](const MjGeom& g, size_t index) {
          return g.name.empty() ? absl::StrCat("#", index) : g.name;
        };
        pair.name = absl::StrCat("filter:", label(*a.geom, i), "-", label(*b.geom, k));
        pair.shape_a = static_cast<int>(i);
        pair.shape_b = static_cast<int>(k);
        // MuJoCo's mixing: the higher-priority geom's, else the larger of each
        const MjGeom* first = a.geom->priority > b.geom->priority   ? a.geom
                              : b.geom->priority > a.geom->priority ? b.geom
                                                                    : nullptr;
        pair.friction = first ? first->friction : std::max(a.geom->friction, b.geom->friction);
        pair.torsional_friction =
            first ? first->torsional_friction
                  : std::max(a.geom->torsional_friction, b.geom->torsional_friction);
        pair.rolling_friction = first
                                    ? first->rolling_friction
                                    : std::max(a.geom->rolling_friction, b.geom->rolling_friction);
        pair.contact_dim = first ? first->condim : std::max(a.geom->condim, b.geom->condim);
        added.push_back(std::move(pair));
        continue;
      }
      if (mj_bits != axion_bits(*a.geom, *b.geom) && !mj_filtered && asymmetric.empty()) {
        asymmetric = absl::StrCat(a.geom->where, " and ", b.geom->where);
      }
      if (!mj_filtered && ax_filtered) {
        auto name = [&](int body) { return body < 0 ? std::string("world") : bodies_[body].name; };
        filter_mismatch.insert(absl::StrCat(name(a.body), "-", name(b.body)));
      }
    }
  }
  for (const auto& [a, b] : exclude) result_.model.exclude_body_pairs.push_back({a, b});
  if (collision_ == "predefined") {
    // only the <pair>s collide: no group meets any mask, and the filter's own pairs stay out
    for (ShapeDesc& shape : result_.model.shapes) shape.collision_group = shape.collision_mask = 0;
    return;
  }
  for (ContactPairDesc& pair : added) result_.model.contact_pairs.push_back(std::move(pair));
  if (!asymmetric.empty()) {
    warnings_.Add("contype-asymmetric",
                  absl::StrCat("contype/conaffinity: MuJoCo collides a pair when either geom's "
                               "contype meets the other's conaffinity, Axion only when both do; "
                               "past ",
                               kMaxFilterPairs,
                               " such pairs made explicit, this model relies on the difference "
                               "(e.g. ",
                               asymmetric, ")"));
  }
  if (!filter_mismatch.empty()) {
    warnings_.Add("filter-mismatch",
                  absl::StrCat("body pairs MuJoCo collides but Axion's joint filter skips: ",
                               absl::StrJoin(filter_mismatch, ", ")));
  }
}

// The model's explicit contact pairs, each as (lower shape, higher shape).
std::set<std::pair<int, int>> ExplicitShapePairs(const ModelDesc& model) {
  std::set<std::pair<int, int>> pairs;
  for (const ContactPairDesc& pair : model.contact_pairs)
    pairs.insert({std::min(pair.shape_a, pair.shape_b), std::max(pair.shape_a, pair.shape_b)});
  return pairs;
}

// Geoms that overlap across a joint's anchor whatever the joint does (AnchorOverlapPairs, which
// Model::Compile leaves out): named, as MuJoCo computes their contacts (softly, with the world).
void MjcfLoader::WarnAnchorOverlaps() {
  const ModelDesc& model = result_.model;
  const std::set<std::pair<int, int>> explicit_pairs = ExplicitShapePairs(model);
  std::vector<int> joint_of;
  const std::vector<std::array<int, 2>> pairs = AnchorOverlapPairs(model, &joint_of);
  std::set<std::pair<int, int>> excluded_bodies;
  for (const auto& [x, y] : model.exclude_body_pairs)
    excluded_bodies.insert({std::min(x, y), std::max(x, y)});
  for (size_t i = 0; i < pairs.size(); ++i) {
    const auto [a, b] = pairs[i];
    const JointDesc& joint = model.joints[joint_of[i]];
    // (bodies a joint joins do not collide anyway, but with the world)
    const bool joined = !joint.collide_connected && joint.parent != kWorldBody;
    const int body_a = model.shapes[a].body, body_b = model.shapes[b].body;
    if (joined || excluded_bodies.count({std::min(body_a, body_b), std::max(body_a, body_b)}) ||
        !ShapesPassFilter(model.shapes[a], model.shapes[b]) ||
        explicit_pairs.count({std::min(a, b), std::max(a, b)}))
      continue;
    auto label = [&](int s) {
      const std::string& name = model.shapes[s].name;
      return name.empty() ? absl::StrCat("geom #", s) : absl::StrCat("geom '", name, "'");
    };
    warnings_.Add("anchor-overlap",
                  absl::StrCat(label(a), " and ", label(b), " overlap about the anchor of joint '",
                               model.joints[joint_of[i]].name,
                               "' whatever its angle: Axion leaves their contacts out (they "
                               "could only push against the joint; MuJoCo computes them, "
                               "softly)"));
  }
}

// A body whose joints hold its rotation and its height over a plane (slides in the plane) never
// touches it in Axion (Model::pair_rules); MuJoCo computes those contacts, which can push only
// against the joints (and, with condim 3, add friction along the slides).
void MjcfLoader::WarnHeldOffPlanes() {
  const ModelDesc& model = result_.model;
  const std::set<std::pair<int, int>> explicit_pairs = ExplicitShapePairs(model);
  auto collide = [&](int a, int b) {
    return ShapesPassFilter(model.shapes[a], model.shapes[b]) ||
           explicit_pairs.count({std::min(a, b), std::max(a, b)}) > 0;
  };
  std::vector<std::vector<int>> body_shapes(model.bodies.size());
  std::vector<int> planes;
  for (size_t s = 0; s < model.shapes.size(); ++s) {
    const ShapeDesc& shape = model.shapes[s];
    if (shape.body >= 0) body_shapes[shape.body].push_back(static_cast<int>(s));
    if (shape.body == kWorldBody && shape.type == ShapeType::kPlane)
      planes.push_back(static_cast<int>(s));
  }
  for (const JointDesc& joint : model.joints) {
    for (int p : planes) {
      if (!JointHoldsChildOffPlane(model, joint, model.shapes[p])) continue;
      for (int s : body_shapes[joint.child]) {
        if (!collide(p, s)) continue;
        const std::string& plane = model.shapes[p].name;
        warnings_.Add(
            "held-off-plane",
            absl::StrCat("body '", model.bodies[joint.child].name, "' slides in the plane of geom ",
                         plane.empty() ? std::string("(unnamed)") : "'" + plane + "'",
                         ", its height held by joint '", joint.name,
                         "': Axion leaves their contacts out (they could only push against the "
                         "joint; MuJoCo computes them)"));
        break;
      }
    }
  }
}

// Bodies far lighter than the model's heaviest: Gym's thrower, pusher and striker hang links of
// 1e-7 kg on 0.75 kg m^2 rotors. MuJoCo's generalised coordinates do not feel the ratio; Axion's
// maximal ones solve such worlds slowly (thrower: 9-90 Newton iterations per step against 2.2
// with boundmass 1e-4), so the warning names the bound that helps.
inline constexpr Real kLightBodyRatio = Real(1e-4);
void MjcfLoader::WarnLightBodies() {
  const std::vector<BodyDesc>& bodies = result_.model.bodies;
  Real heaviest = 0;
  for (const BodyDesc& b : bodies) heaviest = std::max(heaviest, b.mass);
  for (const BodyDesc& b : bodies) {
    if (!(b.mass < kLightBodyRatio * heaviest)) continue;
    warnings_.Add(
        "light-body",
        absl::StrCat("body '", b.name, "' weighs ", b.mass, " kg, ", b.mass / heaviest,
                     " of the heaviest body: worlds with such mass ratios can solve slowly "
                     "in maximal coordinates; <compiler boundmass boundinertia> "
                     "(MjcfOptions::bound_mass, bound_inertia) raises light bodies"));
  }
}

absl::StatusOr<ImportResult> MjcfLoader::Load(std::string_view xml, const std::string& file,
                                              const std::string& base_dir) {
  absl::StatusOr<ImportResult> result = LoadModel(xml, file, base_dir);
  if (result.ok() || unsupported_elements_.empty()) return result;
  return absl::Status(result.status().code(),
                      absl::StrCat(result.status().message(),
                                   " (unsupported elements were ignored before this error: ",
                                   absl::StrJoin(unsupported_elements_, ", "), ")"));
}

absl::StatusOr<ImportResult> MjcfLoader::LoadModel(std::string_view xml, const std::string& file,
                                                   const std::string& base_dir) {
  base_dir_ = base_dir;
  AXION_IO_ASSIGN_OR_RETURN(XMLDocument * doc, Parse(xml, file));
  const XMLElement* root = doc->RootElement();
  if (!root || std::string(root->Name()) != "mujoco") {
    return absl::InvalidArgumentError(
        absl::StrCat(file, ":", root ? root->GetLineNum() : 1, ": root element must be <mujoco>"));
  }
  result_.model.name = root->Attribute("model") ? root->Attribute("model") : "";
  // MuJoCo's own default time step; <option> overrides it. Touching geoms of equal priority
  // take the larger friction coefficient (of different priorities, the higher one's).
  result_.model.options.timestep = Real(0.002);
  result_.model.options.friction_combine = FrictionCombine::kMax;
  std::vector<const XMLElement*> sections;
  AXION_IO_RETURN_IF_ERROR(Children(root, &sections, 0));
  // Compiler settings and default classes apply to the whole file, wherever they appear.
  for (const XMLElement* s : sections) {
    if (std::string(s->Name()) == "compiler") AXION_IO_RETURN_IF_ERROR(ParseCompiler(s));
  }
  // Assets too: geoms name meshes defined anywhere in the file.
  for (const XMLElement* s : sections) {
    if (std::string(s->Name()) == "asset") AXION_IO_RETURN_IF_ERROR(ParseAssets(s));
  }
  classes_["main"] = DefaultClass{};
  for (const XMLElement* s : sections) {
    if (std::string(s->Name()) != "default") continue;
    const char* cls = s->Attribute("class");
    std::string name = cls ? cls : "main";
    if (name == "main") {
      AXION_IO_RETURN_IF_ERROR(ParseDefault(s, "main", ""));
    } else {
      AXION_IO_RETURN_IF_ERROR(ParseDefault(s, name, "main"));
    }
  }
  for (const XMLElement* s : sections) {
    std::string tag = s->Name();
    if (tag == "compiler" || tag == "default" || tag == "asset") continue;
    if (tag == "option") {
      AXION_IO_RETURN_IF_ERROR(ParseOption(s));
    } else if (tag == "worldbody") {
      AXION_IO_RETURN_IF_ERROR(ParseWorld(s));
    } else if (tag == "actuator") {
      actuator_sections_.push_back(s);
    } else if (tag == "equality") {
      equality_sections_.push_back(s);
    } else if (tag == "tendon") {
      tendon_sections_.push_back(s);
    } else if (tag == "contact") {
      contact_sections_.push_back(s);
    } else if (tag == "keyframe") {
      keyframe_sections_.push_back(s);
    } else if (tag == "sensor") {
      sensor_sections_.push_back(s);
    } else if (tag == "visual" || tag == "statistic") {
      WarnElement(s, "mujoco", "only affects rendering and was ignored");
    } else {
      WarnElement(s, "mujoco", "is not supported and was ignored");
    }
  }
  AXION_IO_RETURN_IF_ERROR(ComputeMass());
  AXION_IO_RETURN_IF_ERROR(ApplyCompositePins());
  AXION_IO_RETURN_IF_ERROR(ApplySpringDampers());
  AXION_IO_RETURN_IF_ERROR(Convert());
  if (flags_.equality) {
    for (const XMLElement* s : equality_sections_) AXION_IO_RETURN_IF_ERROR(ParseEquality(s));
  }
  for (const XMLElement* s : contact_sections_) AXION_IO_RETURN_IF_ERROR(ParseContact(s));
  for (const XMLElement* s : tendon_sections_) AXION_IO_RETURN_IF_ERROR(ParseTendons(s));
  for (const Elem& e : tendon_equalities_) AXION_IO_RETURN_IF_ERROR(EqualityTendon(e));
  for (const XMLElement* s : actuator_sections_) AXION_IO_RETURN_IF_ERROR(ParseActuators(s));
  for (const XMLElement* s : keyframe_sections_) AXION_IO_RETURN_IF_ERROR(ParseKeyframes(s));
  for (const XMLElement* s : sensor_sections_) AXION_IO_RETURN_IF_ERROR(ParseSensors(s));
  ApplyCollisionRules();
  ApplyFlags();
  AXION_IO_RETURN_IF_ERROR(ResolveMuscles());
  WarnHeldOffPlanes();
  WarnAnchorOverlaps();
  WarnLightBodies();
  result_.warnings = warnings_.Lines();
  return std::move(result_);
}

}  // namespace

absl::StatusOr<ImportResult> LoadMjcfFile(const std::string& path, const MjcfOptions& options) {
  absl::StatusOr<std::string> text = io::ReadFile(path);
  if (!text.ok()) return text.status();
  MjcfLoader loader(options);
  return loader.Load(*text, path, io::DirName(path));
}

absl::StatusOr<ImportResult> LoadMjcfString(std::string_view xml, const std::string& base_dir,
                                            const MjcfOptions& options) {
  MjcfLoader loader(options);
  return loader.Load(xml, "<string>", base_dir);
}

}  // namespace axion
