//! A stream's queue: the parts of its body the log reader handed it and its
//! client has not taken yet, bounded in bytes. A stream whose client falls
//! that far behind is dropped (it resumes by id) rather than holding the
//! reader or the process's memory.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use bytes::Bytes;
use tokio::sync::mpsc;

/// Bytes a stream may have waiting: a whole batch of the log fits many
/// times over.
const LIMIT_BYTES: usize = 512 * 1024;

/// The reader's end.
pub(super) struct Sender {
    parts: mpsc::UnboundedSender<Bytes>,
    waiting: Arc<AtomicUsize>,
}

/// The stream body's end.
pub(super) struct Receiver {
    parts: mpsc::UnboundedReceiver<Bytes>,
    waiting: Arc<AtomicUsize>,
}

pub(super) fn queue() -> (Sender, Receiver) {
    let (sender, receiver) = mpsc::unbounded_channel();
    let waiting = Arc::new(AtomicUsize::new(0));
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
    /// Queues `part` (nothing when empty); false when the stream is gone or
    /// would have more than [`LIMIT_BYTES`] waiting: it is then dropped.
    pub(super) fn send(&self, part: Bytes) -> bool {
        if part.is_empty() {
            return !self.parts.is_closed();
        }
        let waiting = self.waiting.fetch_add(part.len(), Ordering::Relaxed) + part.len();
        waiting <= LIMIT_BYTES && self.parts.send(part).is_ok()
    }

    pub(super) fn is_closed(&self) -> bool {
        self.parts.is_closed()
    }
}

impl Receiver {
    /// The next part; `None` once the reader dropped the stream.
    pub(super) async fn recv(&mut self) -> Option<Bytes> {
        let part = self.parts.recv().await?;
        self.waiting.fetch_sub(part.len(), Ordering::Relaxed);
        Some(part)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_stream_is_dropped_once_its_client_falls_too_far_behind() {
        let (sender, mut receiver) = queue();
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
}
