//! A stream's queue: the parts of its body the log reader handed it and its
//! client has not taken yet, bounded in bytes per stream and, counting each
//! part once however many streams hold it, for the whole process. A stream
//! whose client falls that far behind is dropped (it resumes by id) rather
//! than holding the reader or the process's memory.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use bytes::Bytes;
use tokio::sync::mpsc;

/// Bytes a stream may have waiting: a whole batch of the log fits many
/// times over.
const LIMIT_BYTES: usize = 512 * 1024;

/// Bytes the parts waiting in a process's queues may hold together before
/// streams already behind are dropped: a thousand streams a batch behind
/// share their parts, a thousand at the per-stream bound would not.
pub(super) const PROCESS_LIMIT_BYTES: usize = 64 * 1024 * 1024;

/// The bytes of the parts some queue of the process still holds.
#[derive(Clone)]
pub(super) struct Budget {
    queued: Arc<AtomicUsize>,
    limit: usize,
}

/// A body part, shared by every stream sent the same events; its bytes
/// count against the process's [`Budget`] until the last queue lets it go.
#[derive(Clone)]
pub(super) struct Part(Arc<Counted>);

struct Counted {
    bytes: Bytes,
    queued: Arc<AtomicUsize>,
}

impl Drop for Counted {
    fn drop(&mut self) {
        self.queued.fetch_sub(self.bytes.len(), Ordering::Relaxed);
    }
}

impl Budget {
    pub(super) fn new(limit: usize) -> Budget {
        Budget {
            queued: Arc::default(),
            limit,
        }
    }

    /// `bytes` as a part, counted from now on.
    pub(super) fn part(&self, bytes: Bytes) -> Part {
        self.queued.fetch_add(bytes.len(), Ordering::Relaxed);
        Part(Arc::new(Counted {
            bytes,
            queued: self.queued.clone(),
        }))
    }

    fn exceeded(&self) -> bool {
        self.queued.load(Ordering::Relaxed) > self.limit
    }
}

impl Part {
    pub(super) fn bytes(&self) -> &Bytes {
        &self.0.bytes
    }

    fn len(&self) -> usize {
        self.0.bytes.len()
    }
}

/// The reader's end.
pub(super) struct Sender {
    parts: mpsc::UnboundedSender<Part>,
    waiting: Arc<AtomicUsize>,
    budget: Budget,
}

/// The stream body's end.
pub(super) struct Receiver {
    parts: mpsc::UnboundedReceiver<Part>,
    waiting: Arc<AtomicUsize>,
}

pub(super) fn queue(budget: &Budget) -> (Sender, Receiver) {
    let (sender, receiver) = mpsc::unbounded_channel();
    let waiting = Arc::new(AtomicUsize::new(0));
    (
        Sender {
            parts: sender,
            waiting: waiting.clone(),
            budget: budget.clone(),
        },
        Receiver {
            parts: receiver,
            waiting,
        },
    )
}

impl Sender {
    /// Queues `part` (nothing when empty); false when the stream is gone,
    /// would have more than [`LIMIT_BYTES`] waiting, or is already behind
    /// while the process's parts exceed its budget: it is then dropped. A
    /// stream with nothing waiting takes its part at once, so it keeps it.
    pub(super) fn send(&self, part: &Part) -> bool {
        if part.len() == 0 {
            return !self.parts.is_closed();
        }
        let behind = self.waiting.load(Ordering::Relaxed) > 0;
        if behind && self.budget.exceeded() {
            return false;
        }
        let waiting = self.waiting.fetch_add(part.len(), Ordering::Relaxed) + part.len();
        waiting <= LIMIT_BYTES && self.parts.send(part.clone()).is_ok()
    }

    pub(super) fn is_closed(&self) -> bool {
        self.parts.is_closed()
    }
}

impl Receiver {
    /// The next part's bytes; `None` once the reader dropped the stream.
    pub(super) async fn recv(&mut self) -> Option<Bytes> {
        let part = self.parts.recv().await?;
        self.waiting.fetch_sub(part.len(), Ordering::Relaxed);
        Some(part.bytes().clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bytes(length: usize) -> Bytes {
        Bytes::from(vec![b'x'; length])
    }

    #[tokio::test]
    async fn a_stream_is_dropped_once_its_client_falls_too_far_behind() {
        let budget = Budget::new(PROCESS_LIMIT_BYTES);
        let (sender, mut receiver) = queue(&budget);
        let part = budget.part(bytes(LIMIT_BYTES / 2));
        assert!(sender.send(&part));
        assert!(sender.send(&part), "up to the limit");
        assert_eq!(receiver.recv().await.map(|p| p.len()), Some(part.len()));
        assert!(sender.send(&part), "what the client took is no longer waiting");
        assert!(!sender.send(&budget.part(bytes(1))), "past the limit");
        assert!(sender.send(&budget.part(Bytes::new())), "nothing to send keeps it");
        drop(receiver);
        assert!(!sender.send(&budget.part(Bytes::new())), "a stream gone");
    }

    #[tokio::test]
    async fn a_part_counts_once_against_the_process_however_many_streams_hold_it() {
        let budget = Budget::new(PROCESS_LIMIT_BYTES);
        let mut queues: Vec<_> = (0..1_000).map(|_| queue(&budget)).collect();
        let part = budget.part(bytes(1_000));
        for (sender, _) in &queues {
            assert!(sender.send(&part));
        }
        drop(part);
        assert_eq!(
            budget.queued.load(Ordering::Relaxed),
            1_000,
            "one copy, held by the queues"
        );
        for (_, receiver) in &mut queues {
            assert_eq!(receiver.recv().await.map(|p| p.len()), Some(1_000));
        }
        assert_eq!(budget.queued.load(Ordering::Relaxed), 0, "every queue let it go");
    }

    #[tokio::test]
    async fn past_the_process_budget_streams_already_behind_are_dropped_and_the_others_kept() {
        let budget = Budget::new(1_500);
        let (behind, behind_client) = queue(&budget);
        let (caught_up, mut client) = queue(&budget);
        let first = budget.part(bytes(1_000));
        assert!(behind.send(&first));
        assert!(caught_up.send(&first));
        assert_eq!(client.recv().await.map(|p| p.len()), Some(1_000));
        let second = budget.part(bytes(1_000));
        assert!(!behind.send(&second), "behind while 2,000 bytes are queued: dropped");
        assert!(caught_up.send(&second), "nothing waiting: it takes its part at once");
        drop((first, second, behind, behind_client));
        assert_eq!(client.recv().await.map(|p| p.len()), Some(1_000));
        assert_eq!(budget.queued.load(Ordering::Relaxed), 0);
    }
}
