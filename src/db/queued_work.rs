//! Whether this process queued background work (formulas to compute, types
//! to re-project): the writer wakes the background worker after the
//! transactions that did, not after every write, whose wake would cost two
//! looks at the queues per commit. A count rather than a flag, since the
//! writers of several databases run at once: a wake too many costs one look
//! at the queues, and none is ever missed (a rolled-back enqueue counts too).

use std::sync::atomic::{AtomicU64, Ordering};

static QUEUED: AtomicU64 = AtomicU64::new(0);

/// Notes that work was queued.
pub(super) fn note() {
    QUEUED.fetch_add(1, Ordering::Relaxed);
}

/// How many times work was queued so far: compare two readings.
pub fn count() -> u64 {
    QUEUED.load(Ordering::Relaxed)
}
