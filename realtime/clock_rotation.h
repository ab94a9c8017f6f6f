// The ring following the clock: under the cluster clock "system" the shard
// asks every second (and before an export) whether the clock's UTC date has
// passed the ring's Today, and turns the ring to it. Under "manual" only
// POST /rotate turns it.
//
// Thread-safety: as the Ring's: call on the thread that owns it.
#pragma once

#include <optional>

#include "clickatron/clock.h"
#include "clickatron/status.h"
#include "ring.h"

namespace clickatron::realtime {

// Turns `ring` to `clock`'s UTC date if that date is after the ring's Today
// (straight to it, however many days were missed). Returns the rotation, or
// nullopt when there is none: the date has not moved on, or the clock reads
// an earlier day (stepped back; the ring turns forward only).
Result<std::optional<RotateReport>> RotateToClockDay(Ring& ring, const Clock& clock);

}  // namespace clickatron::realtime
