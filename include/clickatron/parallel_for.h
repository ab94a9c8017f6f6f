// ParallelFor: independent tasks numbered 0…N-1 run on a few threads, the
// calling thread among them, and joined before it returns. The rebuild's
// fork-join steps (exports, per-shard builds, block conversion, range
// merges, chunk sorts) all take this shape; one helper keeps the rules for
// handing out work, stopping after a failure and reporting it in one place.
//
// Tasks are handed out in index order and task 0 always runs on the calling
// thread: a task that writes to something only the caller may touch (a sink
// owned by the caller) is given index 0. With one thread the tasks run in
// order on the caller, exactly as a plain loop would.
//
// After the first failure no further task is started; tasks already running
// finish (or give up early by watching their stop token). The error returned
// is the first one recorded. Failures are Status values: a task that throws
// fails with an INTERNAL status naming the exception, so no exception crosses
// a thread or this call.
//
// Thread-safety: ParallelFor may be called from any thread, also from inside
// a task (each call has threads of its own). The tasks run concurrently:
// whatever they share they must guard themselves; each index is given to
// exactly one task run, so state indexed by the task needs no lock.
#pragma once

#include <cstddef>
#include <functional>
#include <stop_token>

#include "clickatron/status.h"

namespace clickatron {

// Runs task(0) … task(tasks - 1), each at most once (every one when none
// fails), on at most `threads` threads at a time (fewer than 1 counts as 1).
Status ParallelFor(size_t tasks, size_t threads, const std::function<Status(size_t task)>& task);

// The same, for tasks long enough to be worth stopping part-way: `stop` is
// requested once a task has failed, after its error is recorded, so a task
// that gives up because of the stop never becomes the error returned.
Status ParallelFor(size_t tasks, size_t threads,
                   const std::function<Status(size_t task, const std::stop_token& stop)>& task);

}  // namespace clickatron
