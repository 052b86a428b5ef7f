//! A stream's queue: the parts of its body the log reader handed it and its
//! client has not taken yet, bounded in bytes per stream and for all the
//! streams of the process. A stream whose client falls that far behind is
//! dropped (it resumes by id) rather than holding the reader or the
//! process's memory.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use bytes::Bytes;
use tokio::sync::mpsc;

/// Bytes a stream may have waiting: a whole batch of the log fits many
/// times over.
const LIMIT_BYTES: usize = 512 * 1024;

/// Bytes all the streams of a process may have waiting: well inside the
/// process's memory, where a thousand streams at their own bound would
/// hold half a gigabyte.
pub(super) const PROCESS_LIMIT_BYTES: usize = 64 * 1024 * 1024;

/// What the streams of a process have waiting, and their bound.
pub(super) struct Budget {
    waiting: AtomicUsize,
    limit: usize,
}

impl Budget {
    pub(super) fn new(limit: usize) -> Arc<Budget> {
        Arc::new(Budget {
            waiting: AtomicUsize::new(0),
            limit,
        })
    }
}

/// Bytes waiting, counted for one stream and for the process at once.
struct Waiting {
    stream: AtomicUsize,
    process: Arc<Budget>,
}

impl Waiting {
    /// Counts `bytes` more; answers the stream's and the process's totals.
    fn add(&self, bytes: usize) -> (usize, usize) {
        (
            self.stream.fetch_add(bytes, Ordering::Relaxed) + bytes,
            self.process.waiting.fetch_add(bytes, Ordering::Relaxed) + bytes,
        )
    }

    fn remove(&self, bytes: usize) {
        self.stream.fetch_sub(bytes, Ordering::Relaxed);
        self.process.waiting.fetch_sub(bytes, Ordering::Relaxed);
    }
}

/// The reader's end.
pub(super) struct Sender {
    parts: mpsc::UnboundedSender<Bytes>,
    waiting: Arc<Waiting>,
}

/// The stream body's end.
pub(super) struct Receiver {
    parts: mpsc::UnboundedReceiver<Bytes>,
    waiting: Arc<Waiting>,
}

pub(super) fn queue(process: Arc<Budget>) -> (Sender, Receiver) {
    let (sender, receiver) = mpsc::unbounded_channel();
    let waiting = Arc::new(Waiting {
        stream: AtomicUsize::new(0),
        process,
    });
    (
        Sender {
            parts: sender,
            waiting: waiting.clone(),
        },
        Receiver {
            parts: receiver,
            waiting,
        },
    )
}

impl Sender {
    /// Queues `part` (nothing when empty); false when the stream is gone,
    /// would have more than [`LIMIT_BYTES`] waiting, or is behind already
    /// while the process has more than its bound waiting: it is then
    /// dropped. A client that keeps up has nothing waiting, and is never
    /// dropped for the others.
    pub(super) fn send(&self, part: Bytes) -> bool {
        if part.is_empty() {
            return !self.parts.is_closed();
        }
        let bytes = part.len();
        let (stream, process) = self.waiting.add(bytes);
        let behind = stream > bytes;
        let kept = stream <= LIMIT_BYTES && !(behind && process > self.waiting.process.limit);
        if kept && self.parts.send(part).is_ok() {
            return true;
        }
        self.waiting.remove(bytes);
        false
    }

    pub(super) fn is_closed(&self) -> bool {
        self.parts.is_closed()
    }
}

impl Receiver {
    /// The next part; `None` once the reader dropped the stream.
    pub(super) async fn recv(&mut self) -> Option<Bytes> {
        let part = self.parts.recv().await?;
        self.waiting.remove(part.len());
        Some(part)
    }
}

impl Drop for Receiver {
    /// What the client never took no longer counts against the process.
    fn drop(&mut self) {
        self.parts.close();
        while let Ok(part) = self.parts.try_recv() {
            self.waiting.remove(part.len());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn waiting(budget: &Budget) -> usize {
        budget.waiting.load(Ordering::Relaxed)
    }

    #[tokio::test]
    async fn a_stream_is_dropped_once_its_client_falls_too_far_behind() {
        let (sender, mut receiver) = queue(Budget::new(PROCESS_LIMIT_BYTES));
        let part = Bytes::from(vec![b'x'; LIMIT_BYTES / 2]);
        assert!(sender.send(part.clone()));
        assert!(sender.send(part.clone()), "up to the limit");
        assert_eq!(receiver.recv().await.map(|p| p.len()), Some(part.len()));
        assert!(sender.send(part.clone()), "what the client took is no longer waiting");
        assert!(!sender.send(Bytes::from_static(b"x")), "past the limit");
        assert!(sender.send(Bytes::new()), "nothing to send keeps it");
        drop(receiver);
        assert!(!sender.send(Bytes::new()), "a stream gone");
    }

    #[tokio::test]
    async fn past_the_process_bound_a_stream_behind_is_dropped_and_one_keeping_up_is_not() {
        let budget = Budget::new(1000);
        let (slow, slow_end) = queue(budget.clone());
        let (fast, mut fast_end) = queue(budget.clone());
        let part = Bytes::from(vec![b'x'; 600]);
        assert!(slow.send(part.clone()));
        // over the process's bound now, but nothing of its own was waiting
        assert!(fast.send(part.clone()), "a stream that keeps up");
        assert_eq!(waiting(&budget), 1200);
        assert!(
            !slow.send(Bytes::from_static(b"x")),
            "a stream behind, the process over its bound"
        );
        assert_eq!(waiting(&budget), 1200, "the part refused is not counted");
        assert_eq!(fast_end.recv().await.map(|p| p.len()), Some(600));
        assert_eq!(waiting(&budget), 600);
        drop(slow_end);
        assert_eq!(waiting(&budget), 0, "what a dropped stream held no longer counts");
        assert!(fast.send(part), "under the bound again");
        assert_eq!(waiting(&budget), 600);
    }
}
