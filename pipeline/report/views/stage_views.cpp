// The one list of views, one per stage. A stage whose group reads well as stored is
// `StageView{"name"}` below; one that shows more has a file here defining `StageView
// name_view()`.
#include "pipeline/report/views/stage_views.h"

namespace perfsift::pipeline {

StageView profile_view();
StageView dissimilarity_view();
StageView disparity_view();
StageView rootcause_view();
StageView waitstates_view();
StageView classify_view();
StageView diagnosis_view();
StageView whatif_view();
StageView bounds_view();
StageView domino_view();
StageView efficiency_view();

const std::vector<StageView> &stage_views() {
  static const std::vector<StageView> views = {
      profile_view(),   dissimilarity_view(), disparity_view(), rootcause_view(), waitstates_view(), classify_view(),
      diagnosis_view(), whatif_view(),        bounds_view(),    domino_view(),    efficiency_view()};
  return views;
}

const StageView *find_view(const std::string &group) {
  for (const auto &v : stage_views())
    if (v.group == group) return &v;
  return nullptr;
}

}  // namespace perfsift::pipeline
