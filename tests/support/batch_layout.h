// Helpers for tests that pack worlds into a batch themselves (they include engine/src).
#pragma once

#include <memory>
#include <utility>

#include "axion/model.h"
#include "batch_storage.h"
#include "gtest/gtest.h"

namespace axion::test_batch {

// The model, or nullptr with the compile error reported as a test failure.
inline std::shared_ptr<const Model> MustCompile(ModelDesc desc) {
  absl::StatusOr<std::shared_ptr<const Model>> m = Model::Compile(std::move(desc));
  EXPECT_TRUE(m.ok()) << m.status();
  return m.ok() ? *m : nullptr;
}

// A world of `model` with its own options and contact capacity.
inline WorldLayout LayoutOf(std::shared_ptr<const Model> model) {
  WorldLayout layout;
  layout.model = model;
  layout.params = MakeWorldParams(model->desc().options);
  layout.contact_capacity = model->contact_capacity();
  layout.pair_capacity = model->pair_capacity();
  return layout;
}

}  // namespace axion::test_batch
