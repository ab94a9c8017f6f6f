#include "clock_rotation.h"

namespace clickatron::realtime {

Result<std::optional<RotateReport>> RotateToClockDay(Ring& ring, const Clock& clock) {
  const int64_t today = clock.TodayUtc();
  if (today <= ring.today()) return std::optional<RotateReport>();
  Result<RotateReport> report = ring.RotateTo(today);
  if (!report.ok()) return report.status();
  return std::optional<RotateReport>(std::move(report).value());
}

}  // namespace clickatron::realtime
