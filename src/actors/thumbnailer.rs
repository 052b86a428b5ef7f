//! The thumbnail pool: rendering never runs on an HTTP worker. Images go to
//! `actors.thumbnail_workers` threads, PDFs to a dedicated PDFium thread
//! (PDFium is not thread-safe) with a time limit per document. Both queues
//! hold `actors.thumbnail_queue` waiting renderings; beyond that a request is
//! answered 503 with `Retry-After`. Concurrent requests for one file and size
//! share one rendering, and a rendered thumbnail is kept in object storage.

use std::path::PathBuf;
use std::sync::mpsc::{Receiver, SyncSender, TrySendError, sync_channel};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use actix_web::http::StatusCode;
use dashmap::{DashMap, DashSet};
use futures_util::FutureExt;
use futures_util::future::{BoxFuture, Shared};
use tokio::sync::oneshot;

use crate::http::error::ApiError;
use crate::metrics;
use crate::storage::{ObjectKey, ObjectStore, ReadObject};
use crate::thumbnail::{self, Source, ThumbnailError};

type Job = Box<dyn FnOnce() + Send>;
type Rendering = Shared<BoxFuture<'static, Result<(), ApiError>>>;

/// Thumbnails known to be in storage; past this many the memo starts over.
const MEMO_LIMIT: usize = 100_000;

#[derive(Clone)]
pub struct Thumbnailer {
    inner: Arc<Inner>,
}

struct Inner {
    store: Arc<dyn ObjectStore>,
    images: SyncSender<Job>,
    pdfs: SyncSender<Job>,
    pdf_timeout: Duration,
    pdfium_library: PathBuf,
    renderings: DashMap<ObjectKey, Rendering>,
    stored: DashSet<ObjectKey>,
}

pub struct ThumbnailerConfig {
    /// Image threads; 0 means one per core.
    pub workers: usize,
    pub queue: usize,
    pub pdf_timeout: Duration,
    pub pdfium_library: PathBuf,
}

impl Thumbnailer {
    pub fn start(store: Arc<dyn ObjectStore>, config: ThumbnailerConfig) -> Thumbnailer {
        let workers = match config.workers {
            0 => std::thread::available_parallelism().map_or(2, |n| n.get()),
            n => n,
        };
        let images = spawn_threads("eds-thumbnail", workers, config.queue);
        let pdfs = spawn_threads("eds-pdfium", 1, config.queue);
        Thumbnailer {
            inner: Arc::new(Inner {
                store,
                images,
                pdfs,
                pdf_timeout: config.pdf_timeout,
                pdfium_library: config.pdfium_library,
                renderings: DashMap::new(),
                stored: DashSet::new(),
            }),
        }
    }

    /// The key of `source`'s thumbnail of side `size`, rendered and stored
    /// first unless it already is.
    pub async fn thumbnail(&self, source: &ObjectKey, size: u32) -> Result<ObjectKey, ApiError> {
        let key = source.thumbnail(size);
        if self.inner.stored.contains(&key) {
            return Ok(key);
        }
        if self.inner.store.exists(&key).await? {
            self.inner.remember(&key);
            return Ok(key);
        }
        let rendering = self
            .inner
            .renderings
            .entry(key.clone())
            .or_insert_with(|| {
                let inner = self.inner.clone();
                let (source, key) = (source.clone(), key.clone());
                async move { inner.render_and_store(&source, &key, size).await }
                    .boxed()
                    .shared()
            })
            .clone();
        let result = rendering.clone().await;
        self.inner
            .renderings
            .remove_if(&key, |_, current| current.ptr_eq(&rendering));
        result.map(|()| key)
    }
}

impl Inner {
    fn remember(&self, key: &ObjectKey) {
        if self.stored.len() >= MEMO_LIMIT {
            self.stored.clear();
        }
        self.stored.insert(key.clone());
    }

    async fn render_and_store(&self, source: &ObjectKey, key: &ObjectKey, size: u32) -> Result<(), ApiError> {
        let bytes = match self.store.read(source, thumbnail::MAX_SOURCE_BYTES).await? {
            ReadObject::Missing => return Err(ApiError::not_found("File not found in storage")),
            ReadObject::TooLarge => return Err(ThumbnailError::TooLarge.into()),
            ReadObject::Bytes(bytes) => bytes,
        };
        let jpeg = match thumbnail::sniff(&bytes)? {
            Source::Image(format) => {
                run(&self.images, "image", None, move || {
                    thumbnail::render_image(&bytes, format, size)
                })
                .await?
            }
            Source::Pdf => {
                let library = self.pdfium_library.clone();
                run(&self.pdfs, "pdf", Some(self.pdf_timeout), move || {
                    thumbnail::render_pdf(thumbnail::pdfium(&library)?, &bytes, size)
                })
                .await?
            }
        };
        self.store.write(key, jpeg, "image/jpeg").await?;
        self.remember(key);
        Ok(())
    }
}

fn busy() -> ApiError {
    ApiError::new(
        StatusCode::SERVICE_UNAVAILABLE,
        "thumbnails_busy",
        "Too many thumbnails are being rendered; retry later",
    )
}

/// Runs `render` on a thread of `queue` (named `kind` in the metrics); with
/// `limit`, gives up once the rendering has run that long (the time spent
/// waiting in the queue is not counted). The thread logs under the caller's span.
async fn run(
    queue: &SyncSender<Job>,
    kind: &'static str,
    limit: Option<Duration>,
    render: impl FnOnce() -> Result<Vec<u8>, ThumbnailError> + Send + 'static,
) -> Result<Vec<u8>, ApiError> {
    let (started_tx, started_rx) = oneshot::channel::<()>();
    let (done_tx, done_rx) = oneshot::channel();
    let span = tracing::Span::current();
    let queued = metrics::thumbnail_queued(kind);
    let job: Job = Box::new(move || {
        drop(queued);
        let _entered = span.enter();
        // Nobody waits any more (the request timed out or went away): skip it.
        if started_tx.send(()).is_err() {
            return;
        }
        let started = Instant::now();
        let rendered = render();
        metrics::observe_render(kind, started.elapsed().as_secs_f64());
        let _ = done_tx.send(rendered);
    });
    queue.try_send(job).map_err(|error| match error {
        TrySendError::Full(_) => busy(),
        TrySendError::Disconnected(_) => ApiError::internal("thumbnail pool", "threads stopped"),
    })?;
    // A panicking decoder drops the sender: the file could not be decoded.
    let undecodable = |_| ApiError::from(ThumbnailError::Undecodable);
    started_rx.await.map_err(undecodable)?;
    let started = Instant::now();
    let result = match limit {
        None => done_rx.await.map_err(undecodable)?,
        Some(limit) => {
            let over = || ApiError::from(ThumbnailError::PdfTimeout);
            let done = tokio::time::timeout(limit, done_rx).await.map_err(|_| over())?;
            // a rendering that ended just as the timer did is still over the limit
            if started.elapsed() >= limit {
                return Err(over());
            }
            done.map_err(undecodable)?
        }
    };
    Ok(result?)
}

fn spawn_threads(name: &str, count: usize, queue: usize) -> SyncSender<Job> {
    let (sender, receiver) = sync_channel::<Job>(queue);
    let receiver = Arc::new(Mutex::new(receiver));
    for index in 0..count {
        let receiver = receiver.clone();
        std::thread::Builder::new()
            .name(format!("{name}-{index}"))
            .spawn(move || work(&receiver))
            .expect("start a thumbnail thread");
    }
    sender
}

fn work(receiver: &Mutex<Receiver<Job>>) {
    loop {
        let job = match receiver.lock() {
            Ok(receiver) => receiver.recv(),
            Err(_) => return,
        };
        let Ok(job) = job else { return };
        if std::panic::catch_unwind(std::panic::AssertUnwindSafe(job)).is_err() {
            tracing::warn!("a thumbnail rendering panicked");
        }
    }
}
