#include "io/collada.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <unordered_map>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "tinyxml2.h"

namespace axion::io {
namespace {

using tinyxml2::XMLDocument;
using tinyxml2::XMLElement;

constexpr Real kPi = Real(3.14159265358979323846);
// Deeper nesting than this only comes from <instance_node> cycles.
constexpr int kMaxNodeDepth = 64;
// Instancing multiplies what a file holds: nodes instanced twice over 64 levels would place
// 2^64 copies. These bound the work and the mesh (a robot part's collision mesh has far fewer).
constexpr int kMaxNodeVisits = 1 << 20;
constexpr size_t kMaxTriangles = size_t{1} << 22;
// Corners of more indices than this are not a real file's (and offset + 1 must not overflow).
constexpr int kMaxInputOffset = 1 << 16;

// x -> linear x + offset: a node's transform (COLLADA's 4x4 matrices are affine).
struct Affine {
  Mat33 linear = mat33_identity();
  Vec3 offset{0, 0, 0};
};

// a after b: x -> a(b(x)).
Affine Compose(const Affine& a, const Affine& b) {
  return {a.linear * b.linear, a.linear * b.offset + a.offset};
}

// A 4x4 matrix as COLLADA writes one (row-major; its last row 0 0 0 1).
Affine FromRowMajor(const std::vector<Real>& m) {
  Affine a;
  for (int r = 0; r < 3; ++r)
    for (int c = 0; c < 3; ++c) a.linear(r, c) = m[4 * r + c];
  a.offset = {m[3], m[7], m[11]};
  return a;
}

Real Determinant(const Mat33& a) {
  return a(0, 0) * (a(1, 1) * a(2, 2) - a(1, 2) * a(2, 1)) -
         a(0, 1) * (a(1, 0) * a(2, 2) - a(1, 2) * a(2, 0)) +
         a(0, 2) * (a(1, 0) * a(2, 1) - a(1, 1) * a(2, 0));
}

// Rotation by `degrees` about `axis` (Rodrigues).
Mat33 AxisAngleMatrix(Vec3 axis, Real degrees) {
  const Real length = norm(axis);
  Mat33 r = mat33_identity();
  if (!(length > 0)) return r;
  const Vec3 u = (Real(1) / length) * axis;
  const Real angle = degrees * kPi / 180, c = std::cos(angle), s = std::sin(angle);
  const Real uu[3] = {u.x, u.y, u.z};
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) r(i, j) = (1 - c) * uu[i] * uu[j] + (i == j ? c : 0);
  r(0, 1) -= s * u.z;
  r(0, 2) += s * u.y;
  r(1, 0) += s * u.z;
  r(1, 2) -= s * u.x;
  r(2, 0) -= s * u.y;
  r(2, 1) += s * u.x;
  return r;
}

// Whitespace-separated non-negative integers (a primitive's <p>, a polylist's <vcount>).
bool ParseIndices(absl::string_view text, std::vector<int>* values) {
  values->clear();
  size_t i = 0;
  auto space = [](char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; };
  while (i < text.size()) {
    while (i < text.size() && space(text[i])) ++i;
    if (i == text.size()) break;
    int value = 0;
    auto [end, ec] = std::from_chars(text.data() + i, text.data() + text.size(), value);
    if (ec != std::errc() || value < 0 || (end != text.data() + text.size() && !space(*end)))
      return false;
    values->push_back(value);
    i = static_cast<size_t>(end - text.data());
  }
  return true;
}

class ColladaReader {
 public:
  explicit ColladaReader(const std::string& path) : path_(path) {}

  absl::StatusOr<TriangleMesh> Read(const std::string& bytes) {
    XMLDocument doc;
    if (doc.Parse(bytes.data(), bytes.size()) != tinyxml2::XML_SUCCESS) {
      return absl::InvalidArgumentError(absl::StrCat("mesh '", path_, "' line ", doc.ErrorLineNum(),
                                                     ": malformed XML (", doc.ErrorStr(), ")"));
    }
    const XMLElement* root = doc.RootElement();
    if (!root || absl::string_view(root->Name()) != "COLLADA") {
      return absl::InvalidArgumentError(
          absl::StrCat("mesh '", path_, "' is not a COLLADA document (its root element is <",
                       root ? root->Name() : "", ">, not <COLLADA>)"));
    }
    IndexIds(root);

    // The file's unit, applied before every node's transform. Its <up_axis> is not applied:
    // see collada.h.
    Affine file_frame;
    Real meter = 1;
    const XMLElement* asset = root->FirstChildElement("asset");
    if (const XMLElement* unit = asset ? asset->FirstChildElement("unit") : nullptr) {
      if (unit->Attribute("meter") &&
          (unit->QueryDoubleAttribute("meter", &meter) != tinyxml2::XML_SUCCESS || !(meter > 0) ||
           !std::isfinite(meter))) {
        return Error(unit, "attribute 'meter' must be a positive number");
      }
    }
    file_frame.linear = mat33_diag({meter, meter, meter});

    // The scene's visual scene, or the first one, or (with none) every geometry unplaced.
    const XMLElement* visual_scene = nullptr;
    if (const XMLElement* scene = root->FirstChildElement("scene")) {
      if (const XMLElement* instance = scene->FirstChildElement("instance_visual_scene")) {
        AXION_IO_ASSIGN_OR_RETURN(visual_scene, Target(instance, "url", "visual_scene"));
      }
    }
    if (!visual_scene) {
      if (const XMLElement* library = root->FirstChildElement("library_visual_scenes"))
        visual_scene = library->FirstChildElement("visual_scene");
    }
    if (visual_scene) {
      for (const XMLElement* node = visual_scene->FirstChildElement("node"); node;
           node = node->NextSiblingElement("node")) {
        AXION_IO_RETURN_IF_ERROR(AddNode(node, file_frame, 0));
      }
    } else {
      for (const XMLElement* library = root->FirstChildElement("library_geometries"); library;
           library = library->NextSiblingElement("library_geometries")) {
        for (const XMLElement* g = library->FirstChildElement("geometry"); g;
             g = g->NextSiblingElement("geometry")) {
          AXION_IO_RETURN_IF_ERROR(AddGeometry(g, file_frame));
        }
      }
    }
    if (mesh_.triangles.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("mesh '", path_, "': its scene places no triangles"));
    }
    return std::move(mesh_);
  }

 private:
  absl::Status Error(const XMLElement* e, absl::string_view what) const {
    return absl::InvalidArgumentError(
        absl::StrCat("mesh '", path_, "' line ", e->GetLineNum(), ": <", e->Name(), ">: ", what));
  }

  // Every element with an id, for the '#id' references between the libraries.
  void IndexIds(const XMLElement* root) {
    std::vector<const XMLElement*> stack = {root};
    while (!stack.empty()) {
      const XMLElement* e = stack.back();
      stack.pop_back();
      if (const char* id = e->Attribute("id")) ids_.emplace(id, e);
      for (const XMLElement* c = e->FirstChildElement(); c; c = c->NextSiblingElement())
        stack.push_back(c);
    }
  }

  // The element `e`'s attribute `attribute` ("#id") refers to, which must be a <kind>.
  absl::StatusOr<const XMLElement*> Target(const XMLElement* e, const char* attribute,
                                           absl::string_view kind) const {
    const char* url = e->Attribute(attribute);
    if (!url || url[0] != '#') {
      return Error(e, absl::StrCat("attribute '", attribute, "' must name a <", kind,
                                   "> of this file as '#id'"));
    }
    auto found = ids_.find(url + 1);
    if (found == ids_.end() || absl::string_view(found->second->Name()) != kind) {
      return Error(e, absl::StrCat("attribute '", attribute, "': no <", kind, "> with id '",
                                   url + 1, "' in this file"));
    }
    return found->second;
  }

  absl::StatusOr<std::vector<Real>> Numbers(const XMLElement* e, size_t count) const {
    std::vector<Real> values;
    if (!ParseReals(e->GetText() ? e->GetText() : "", &values))
      return Error(e, "holds something that is not a finite number");
    if (count != 0 && values.size() != count)
      return Error(e, absl::StrCat("needs ", count, " numbers, has ", values.size()));
    return values;
  }

  // A node's own transform: its transform elements composed in document order.
  absl::StatusOr<Affine> NodeTransform(const XMLElement* node) const {
    Affine total;
    for (const XMLElement* e = node->FirstChildElement(); e; e = e->NextSiblingElement()) {
      const absl::string_view name = e->Name();
      Affine step;
      if (name == "matrix") {
        AXION_IO_ASSIGN_OR_RETURN(std::vector<Real> m, Numbers(e, 16));
        step = FromRowMajor(m);
      } else if (name == "translate") {
        AXION_IO_ASSIGN_OR_RETURN(std::vector<Real> t, Numbers(e, 3));
        step.offset = {t[0], t[1], t[2]};
      } else if (name == "rotate") {
        AXION_IO_ASSIGN_OR_RETURN(std::vector<Real> r, Numbers(e, 4));  // axis, degrees
        step.linear = AxisAngleMatrix({r[0], r[1], r[2]}, r[3]);
      } else if (name == "scale") {
        AXION_IO_ASSIGN_OR_RETURN(std::vector<Real> s, Numbers(e, 3));
        step.linear = mat33_diag({s[0], s[1], s[2]});
      } else if (name == "lookat" || name == "skew") {
        return Error(e,
                     "this transform is not supported (matrix, translate, rotate and scale are)");
      } else {
        continue;
      }
      total = Compose(total, step);
    }
    return total;
  }

  absl::Status AddNode(const XMLElement* node, const Affine& parent, int depth) {
    if (depth > kMaxNodeDepth) {
      return Error(node, absl::StrCat("nodes nest more than ", kMaxNodeDepth,
                                      " deep (an <instance_node> that reaches itself?)"));
    }
    if (++node_visits_ > kMaxNodeVisits) {
      return Error(node, absl::StrCat("the scene instances more than ", kMaxNodeVisits, " nodes"));
    }
    AXION_IO_ASSIGN_OR_RETURN(Affine local, NodeTransform(node));
    const Affine place = Compose(parent, local);
    for (const XMLElement* e = node->FirstChildElement(); e; e = e->NextSiblingElement()) {
      const absl::string_view name = e->Name();
      if (name == "node") {
        AXION_IO_RETURN_IF_ERROR(AddNode(e, place, depth + 1));
      } else if (name == "instance_node") {
        AXION_IO_ASSIGN_OR_RETURN(const XMLElement* target, Target(e, "url", "node"));
        AXION_IO_RETURN_IF_ERROR(AddNode(target, place, depth + 1));
      } else if (name == "instance_geometry") {
        AXION_IO_ASSIGN_OR_RETURN(const XMLElement* geometry, Target(e, "url", "geometry"));
        AXION_IO_RETURN_IF_ERROR(AddGeometry(geometry, place));
      } else if (name == "instance_controller") {
        // A skinned mesh rests in its bind shape: the skin's geometry under its matrix.
        AXION_IO_ASSIGN_OR_RETURN(const XMLElement* controller, Target(e, "url", "controller"));
        const XMLElement* skin = controller->FirstChildElement("skin");
        if (!skin) return Error(controller, "only skins are supported (no <skin>)");
        AXION_IO_ASSIGN_OR_RETURN(const XMLElement* geometry, Target(skin, "source", "geometry"));
        Affine bind;
        if (const XMLElement* m = skin->FirstChildElement("bind_shape_matrix")) {
          AXION_IO_ASSIGN_OR_RETURN(std::vector<Real> v, Numbers(m, 16));
          bind = FromRowMajor(v);
        }
        AXION_IO_RETURN_IF_ERROR(AddGeometry(geometry, Compose(place, bind)));
      }
    }
    return absl::OkStatus();
  }

  // The points of a <source>: its float array read through its accessor's offset and stride.
  absl::StatusOr<std::vector<Vec3>> SourcePoints(const XMLElement* source) const {
    const XMLElement* array = source->FirstChildElement("float_array");
    if (!array) return Error(source, "has no <float_array>");
    AXION_IO_ASSIGN_OR_RETURN(std::vector<Real> values, Numbers(array, 0));
    int stride = 3, offset = 0, count = static_cast<int>(values.size()) / 3;
    const XMLElement* common = source->FirstChildElement("technique_common");
    if (const XMLElement* accessor = common ? common->FirstChildElement("accessor") : nullptr) {
      if (accessor->QueryIntAttribute("count", &count) != tinyxml2::XML_SUCCESS) {
        return Error(accessor, "needs an integer 'count'");
      }
      accessor->QueryIntAttribute("stride", &stride);
      accessor->QueryIntAttribute("offset", &offset);
    }
    // the last point's three numbers end at offset + (count - 1) stride + 3
    if (stride < 3 || offset < 0 || count < 0 ||
        (count > 0 && static_cast<size_t>(offset) +
                              static_cast<size_t>(count - 1) * static_cast<size_t>(stride) + 3 >
                          values.size())) {
      return Error(source, absl::StrCat("its accessor (count ", count, ", stride ", stride,
                                        ", offset ", offset, ") reads past its ", values.size(),
                                        " numbers, or reads fewer than 3 a point"));
    }
    std::vector<Vec3> points(static_cast<size_t>(count));
    for (int i = 0; i < count; ++i) {
      const size_t k = static_cast<size_t>(offset) + static_cast<size_t>(i) * stride;
      points[i] = {values[k], values[k + 1], values[k + 2]};
    }
    return points;
  }

  absl::Status AddGeometry(const XMLElement* geometry, const Affine& place) {
    const XMLElement* mesh = geometry->FirstChildElement("mesh");
    if (!mesh) {
      return Error(geometry, "has no <mesh> (of COLLADA's geometries only meshes are supported)");
    }
    const XMLElement* vertices = mesh->FirstChildElement("vertices");
    if (!vertices) return Error(mesh, "has no <vertices>");
    const XMLElement* position_source = nullptr;
    for (const XMLElement* input = vertices->FirstChildElement("input"); input;
         input = input->NextSiblingElement("input")) {
      const char* semantic = input->Attribute("semantic");
      if (semantic && absl::string_view(semantic) == "POSITION") {
        AXION_IO_ASSIGN_OR_RETURN(position_source, Target(input, "source", "source"));
      }
    }
    if (!position_source) return Error(vertices, "has no POSITION input");
    AXION_IO_ASSIGN_OR_RETURN(std::vector<Vec3> positions, SourcePoints(position_source));

    // Each position enters the mesh once, placed, when a primitive first names it.
    std::vector<int> placed_index(positions.size(), -1);
    const bool mirrored = Determinant(place.linear) < 0;
    auto corner = [&](int i) {
      if (placed_index[i] < 0) {
        placed_index[i] = static_cast<int>(mesh_.vertices.size());
        mesh_.vertices.push_back(place.linear * positions[i] + place.offset);
      }
      return placed_index[i];
    };
    auto triangle = [&](int a, int b, int c) {
      if (a == b || b == c || a == c) return;  // strips' degenerate joints
      const int pa = corner(a), pb = corner(b), pc = corner(c);
      mesh_.triangles.push_back(mirrored ? std::array<int, 3>{pa, pc, pb}
                                         : std::array<int, 3>{pa, pb, pc});
    };

    for (const XMLElement* primitive = mesh->FirstChildElement(); primitive;
         primitive = primitive->NextSiblingElement()) {
      const absl::string_view kind = primitive->Name();
      if (kind != "triangles" && kind != "polylist" && kind != "polygons" && kind != "trifans" &&
          kind != "tristrips") {
        continue;  // sources, vertices, and lines (no surface)
      }
      // Each corner is `stride` indices in <p>, its position at the VERTEX input's offset.
      int stride = 1, vertex_offset = -1;
      for (const XMLElement* input = primitive->FirstChildElement("input"); input;
           input = input->NextSiblingElement("input")) {
        int offset = 0;
        if (input->QueryIntAttribute("offset", &offset) != tinyxml2::XML_SUCCESS || offset < 0 ||
            offset > kMaxInputOffset) {
          return Error(input,
                       absl::StrCat("needs an integer 'offset' in [0, ", kMaxInputOffset, "]"));
        }
        stride = std::max(stride, offset + 1);
        const char* semantic = input->Attribute("semantic");
        if (semantic && absl::string_view(semantic) == "VERTEX") vertex_offset = offset;
      }
      if (vertex_offset < 0) return Error(primitive, "has no VERTEX input");
      // A list of corners (the positions' indices) from one <p>.
      std::vector<int> raw, corners;
      auto read_corners = [&](const XMLElement* p) -> absl::Status {
        if (mesh_.triangles.size() > kMaxTriangles) {
          return Error(p, absl::StrCat("the scene places more than ", kMaxTriangles, " triangles"));
        }
        if (!ParseIndices(p->GetText() ? p->GetText() : "", &raw))
          return Error(p, "holds something that is not a non-negative integer");
        if (raw.size() % static_cast<size_t>(stride) != 0) {
          return Error(p, absl::StrCat(raw.size(), " indices are not whole corners of ", stride,
                                       " indices each"));
        }
        corners.clear();
        for (size_t k = vertex_offset; k < raw.size(); k += stride) {
          if (raw[k] >= static_cast<int>(positions.size())) {
            return Error(p, absl::StrCat("names position ", raw[k], " (the geometry has ",
                                         positions.size(), ")"));
          }
          corners.push_back(raw[k]);
        }
        return absl::OkStatus();
      };
      auto fan = [&](size_t first, size_t count) {
        for (size_t k = 1; k + 1 < count; ++k)
          triangle(corners[first], corners[first + k], corners[first + k + 1]);
      };

      if (kind == "triangles") {
        const XMLElement* p = primitive->FirstChildElement("p");
        if (!p) continue;  // a primitive of no triangles
        AXION_IO_RETURN_IF_ERROR(read_corners(p));
        if (corners.size() % 3 != 0)
          return Error(p, absl::StrCat(corners.size(), " corners are not whole triangles"));
        for (size_t k = 0; k < corners.size(); k += 3) fan(k, 3);
      } else if (kind == "polylist") {
        const XMLElement* p = primitive->FirstChildElement("p");
        const XMLElement* vcount = primitive->FirstChildElement("vcount");
        if (!p) continue;
        if (!vcount) return Error(primitive, "has no <vcount>");
        std::vector<int> counts;
        if (!ParseIndices(vcount->GetText() ? vcount->GetText() : "", &counts))
          return Error(vcount, "holds something that is not a non-negative integer");
        AXION_IO_RETURN_IF_ERROR(read_corners(p));
        size_t first = 0;
        for (int count : counts) {
          if (first + static_cast<size_t>(count) > corners.size()) {
            return Error(vcount,
                         absl::StrCat("counts more corners than <p> has (", corners.size(), ")"));
          }
          fan(first, static_cast<size_t>(count));
          first += static_cast<size_t>(count);
        }
      } else {
        // <polygons> (one polygon a <p>, holes in <ph> skipped: the outer boundary bounds the
        // surface), <trifans> and <tristrips> (one fan or strip a <p>).
        for (const XMLElement* e = primitive->FirstChildElement(); e; e = e->NextSiblingElement()) {
          const absl::string_view name = e->Name();
          const XMLElement* p = name == "p"    ? e
                                : name == "ph" ? e->FirstChildElement("p")
                                               : nullptr;
          if (!p) continue;
          AXION_IO_RETURN_IF_ERROR(read_corners(p));
          if (kind != "tristrips") {
            fan(0, corners.size());
          } else {
            // every other triangle of a strip turns the other way
            for (size_t k = 0; k + 2 < corners.size(); ++k) {
              if (k % 2 == 0) {
                triangle(corners[k], corners[k + 1], corners[k + 2]);
              } else {
                triangle(corners[k + 1], corners[k], corners[k + 2]);
              }
            }
          }
        }
      }
    }
    return absl::OkStatus();
  }

  std::string path_;
  int node_visits_ = 0;
  std::unordered_map<std::string, const XMLElement*> ids_;
  TriangleMesh mesh_;
};

}  // namespace

absl::StatusOr<TriangleMesh> ParseCollada(const std::string& path, const std::string& bytes) {
  return ColladaReader(path).Read(bytes);
}

}  // namespace axion::io
