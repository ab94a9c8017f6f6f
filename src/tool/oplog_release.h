// `clickatron oplog release`: the way out of a "watermark ahead" hold.
//
// An API node holds a realtime shard when the shard's watermark for it is
// above every seq the node ever wrote (a second node under the same name, an
// oplog restored from an old copy or cut short, a forged batch): every new
// batch would be dropped as a duplicate, so the node sends nothing and keeps
// it all in its oplog. Its /stats shows, for that shard, "state": "held" and
// "held": {"applied": A, "shard_watermark": W}: A is how far the shard really
// applied this node's batches.
//
// release asks the API node for A and W, lowers the shard's watermark from W
// to A (POST /watermark/reset, an admin endpoint), and waits until the API
// node has seen it and re-sends its oplog above A: every acknowledged
// increment then counts once. Fix the cause first (rename the second node,
// rotate a leaked secret), or the hold comes back.
#pragma once

#include "clickatron/command_line.h"

namespace clickatron::tool {

void AddOplogReleaseCommand(Command& oplog);

}  // namespace clickatron::tool
