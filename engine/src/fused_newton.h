// One world's remaining Newton iterations, alone on its team (pipeline.h includes this for
// device code; fused_newton.cc compiles the host's copy).
#pragma once

#include "pipeline.h"

namespace axion::pipeline {

/// Newton iterations of world w alone, on its team, until it stops or `max_trips` were taken:
/// the batch passes of newton_iteration, in the same order over the same elements, so a world
/// gets the same bits either way. Once most worlds are done, the batch's trips cost a launch
/// per pass over every world for the few still iterating (LoopBounds::batched_newton_trips).
AXION_FUSED_HD void world_finish_newton(const BatchView& v, Team team, int w, int max_trips,
                                        int max_trials) {
  const int row0 = v.world_row_offset[w];
  const int b0 = v.world_body_offset[w], b1 = v.world_body_offset[w + 1];
  const int row_end = row0 + world_live_rows(v, w);
  auto rows = [&](auto f) {
    for (int r = row0 + team.lane; r < row_end; r += team.size) f(r);
    team_sync(team);
  };
  auto bodies = [&](auto f) {
    for (int i = b0 + team.lane; i < b1; i += team.size) f(i);
    team_sync(team);
  };
  auto alone = [&](auto f) {
    if (team.lane == 0) f();
    team_sync(team);
  };
  for (int trip = 0; trip < max_trips && iterating(v, w); ++trip) {
    rows([&](int r) {
      row_take_friction_newton(v, r);
      row_take_hold_out(v, r);
    });
    bodies([&](int i) { body_take_inv_mass_g(v, i); });
    rows([&](int r) { row_take_precondition(v, r); });
    if (world_uses_tree(v, w)) {
      alone([&] { world_tree_build_once(v, w); });
      world_tree_factor(v, team, w);
      team_sync(team);
      world_loop_precondition(v, team, w);
      team_sync(team);
    }
    world_cr_solve(v, team, w);
    team_sync(team);
    world_apply_jt(v, team, w, v.row_dlambda, v.body_jt);
    team_sync(team);
    bodies([&](int i) { body_recover_du(v, i); });
    alone([&] { world_begin_line_search(v, w); });
    for (int trial = 0; trial < max_trials && searching(v, w); ++trial) {
      world_trial(v, team, w);
      world_evaluate_kinematics(v, team, w, Mask::kSearching);
      world_evaluate_tendons(v, team, w, Mask::kSearching);
      rows([&](int r) {
        if (island_in_mask(v, row_island(v, r), Mask::kSearching)) row_evaluate(v, r);
      });
      world_evaluate_dynamics(v, team, w, Mask::kSearching);
      team_sync(team);
      alone([&] { world_judge_trial(v, w); });
    }
    world_accept(v, team, w);
    world_keep_best(v, team, w, false);
    team_sync(team);
    alone([&] { world_converge(v, w); });
  }
}

}  // namespace axion::pipeline
