//! The thumbnail pool: rendering never runs on an HTTP worker. At most
//! `actors.thumbnail_workers` renderings run at once: images on blocking
//! threads, PDFs each in an `eds render-pdf` process (PDFium is not
//! thread-safe and cannot be stopped) killed at `thumbnails.pdf_timeout_ms`.
//! `actors.thumbnail_queue` renderings may wait for a worker, each at most
//! `actors.thumbnail_wait_ms`; beyond either a request is answered 503 with
//! `Retry-After`. Concurrent requests for one file and size share one
//! rendering, a rendered thumbnail is kept in object storage, and a file that
//! failed to render answers the same failure for [`FAILURE_MEMORY`] without
//! being rendered again.

use std::path::PathBuf;
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use dashmap::{DashMap, DashSet};
use futures_util::FutureExt;
use futures_util::future::{BoxFuture, Shared};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::error::{ApiError, ErrorCode};
use crate::metrics;
use crate::storage::thumbnail::{self, Source, ThumbnailError};
use crate::storage::{ObjectKey, ObjectStore, ReadObject};

type Rendering = Shared<BoxFuture<'static, Result<(), ApiError>>>;

/// Thumbnails known to be in storage; past this many the memo starts over.
const MEMO_LIMIT: usize = 100_000;
/// How long a file that failed to render answers that failure at once.
pub const FAILURE_MEMORY: Duration = Duration::from_secs(600);
/// Failed files remembered; past this many the expired ones are forgotten,
/// and all of them if none has expired.
const FAILURE_LIMIT: usize = 10_000;

#[derive(Clone)]
pub struct Thumbnailer {
    inner: Arc<Inner>,
}

struct Inner {
    store: Arc<dyn ObjectStore>,
    /// One permit per rendering running.
    workers: Arc<Semaphore>,
    /// One permit per rendering waiting for a worker.
    queue: Arc<Semaphore>,
    wait: Duration,
    pdf_timeout: Duration,
    pdf_renderer: PathBuf,
    pdfium_library: PathBuf,
    renderings: DashMap<ObjectKey, Rendering>,
    stored: DashSet<ObjectKey>,
    /// Source files whose rendering failed: until when, and how.
    failed: DashMap<ObjectKey, (Instant, ThumbnailError)>,
    /// Whether a missing or unloadable libpdfium was logged: once per process.
    pdfium_reported: AtomicBool,
    pdf_processes: AtomicU64,
}

pub struct ThumbnailerConfig {
    /// Renderings at once; 0 means one per core.
    pub workers: usize,
    pub queue: usize,
    pub wait: Duration,
    pub pdf_timeout: Duration,
    /// The `eds` executable run as `render-pdf`; empty means this one.
    pub pdf_renderer: PathBuf,
    pub pdfium_library: PathBuf,
}

impl Thumbnailer {
    pub fn start(store: Arc<dyn ObjectStore>, config: ThumbnailerConfig) -> Thumbnailer {
        let workers = match config.workers {
            0 => std::thread::available_parallelism().map_or(2, |n| n.get()),
            n => n,
        };
        let pdf_renderer = match config.pdf_renderer {
            // the running binary itself, even after a deployment replaced or removed its file
            path if path.as_os_str().is_empty() => PathBuf::from("/proc/self/exe"),
            path => path,
        };
        // Said once, at start: PDF thumbnails then answer 503 `pdf_unavailable`.
        let pdfium_missing = !config.pdfium_library.exists();
        if pdfium_missing {
            tracing::warn!(library = %config.pdfium_library.display(),
                "libpdfium not found: PDF thumbnails answer 503 pdf_unavailable (thumbnails.pdfium_library)");
        }
        Thumbnailer {
            inner: Arc::new(Inner {
                store,
                workers: Arc::new(Semaphore::new(workers)),
                queue: Arc::new(Semaphore::new(config.queue)),
                wait: config.wait,
                pdf_timeout: config.pdf_timeout,
                pdf_renderer,
                pdfium_library: config.pdfium_library,
                renderings: DashMap::new(),
                stored: DashSet::new(),
                failed: DashMap::new(),
                pdfium_reported: AtomicBool::new(pdfium_missing),
                pdf_processes: AtomicU64::new(0),
            }),
        }
    }

    /// `eds render-pdf` processes started so far (a remembered failure starts none).
    pub fn pdf_processes(&self) -> u64 {
        self.inner.pdf_processes.load(Ordering::Relaxed)
    }

    /// The key of `source`'s thumbnail of side `size`, rendered and stored
    /// first unless it already is.
    pub async fn thumbnail(&self, source: &ObjectKey, size: u32) -> Result<ObjectKey, ApiError> {
        let key = source.thumbnail(size);
        if self.inner.stored.contains(&key) {
            return Ok(key);
        }
        if let Some(error) = self.inner.failure(source) {
            return Err(error.into());
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

    /// The failure `source` rendered with lately, if any.
    fn failure(&self, source: &ObjectKey) -> Option<ThumbnailError> {
        let (until, error) = self.failed.get(source)?.value().clone();
        (Instant::now() < until).then_some(error)
    }

    fn remember_failure(&self, source: &ObjectKey, error: ThumbnailError) {
        if self.failed.len() >= FAILURE_LIMIT {
            let now = Instant::now();
            self.failed.retain(|_, (until, _)| *until > now);
            if self.failed.len() >= FAILURE_LIMIT {
                self.failed.clear();
            }
        }
        self.failed
            .insert(source.clone(), (Instant::now() + FAILURE_MEMORY, error));
    }

    async fn render_and_store(&self, source: &ObjectKey, key: &ObjectKey, size: u32) -> Result<(), ApiError> {
        let bytes = match self.store.read(source, thumbnail::MAX_SOURCE_BYTES).await? {
            ReadObject::Missing => return Err(ApiError::not_found("File not found in storage")),
            ReadObject::TooLarge => return Err(ThumbnailError::TooLarge.into()),
            ReadObject::Bytes(bytes) => bytes,
        };
        let (kind, rendered) = match thumbnail::sniff(&bytes)? {
            Source::Image(format) => {
                let worker = self.worker("image").await?;
                let span = tracing::Span::current();
                let started = Instant::now();
                let rendered = tokio::task::spawn_blocking(move || {
                    let _worker = worker;
                    let _entered = span.enter();
                    thumbnail::render_image(&bytes, format, size)
                })
                .await
                // a panicking decoder: the file could not be decoded
                .unwrap_or(Err(ThumbnailError::Undecodable));
                metrics::observe_render("image", started.elapsed().as_secs_f64());
                ("image", rendered)
            }
            Source::Pdf => {
                let _worker = self.worker("pdf").await?;
                let started = Instant::now();
                let rendered = self.render_pdf(bytes, size).await;
                metrics::observe_render("pdf", started.elapsed().as_secs_f64());
                ("pdf", rendered)
            }
        };
        let jpeg = match rendered {
            Ok(jpeg) => jpeg,
            Err(ThumbnailError::PdfUnavailable) => return Err(ThumbnailError::PdfUnavailable.into()),
            Err(error) => {
                tracing::warn!(%error, source = kind, "a thumbnail failed; the file is not rendered again for a while");
                self.remember_failure(source, error.clone());
                return Err(error.into());
            }
        };
        self.store.write(key, jpeg, "image/jpeg").await?;
        self.remember(key);
        Ok(())
    }

    /// A free worker for a rendering of `kind`, waited for in the queue
    /// (counted in the metrics under `kind`) at most `wait`.
    async fn worker(&self, kind: &'static str) -> Result<OwnedSemaphorePermit, ApiError> {
        if let Ok(worker) = self.workers.clone().try_acquire_owned() {
            return Ok(worker);
        }
        let _waiting = self.queue.clone().try_acquire_owned().map_err(|_| busy())?;
        let _queued = metrics::thumbnail_queued(kind);
        tokio::time::timeout(self.wait, self.workers.clone().acquire_owned())
            .await
            .map_err(|_| busy())?
            .map_err(|error| ApiError::internal("thumbnail pool", error))
    }

    /// Renders a PDF in an `eds render-pdf` process, killed once it has run
    /// `pdf_timeout` (or when the request goes away).
    async fn render_pdf(&self, bytes: Vec<u8>, size: u32) -> Result<Vec<u8>, ThumbnailError> {
        let mut child = tokio::process::Command::new(&self.pdf_renderer)
            .arg("render-pdf")
            .arg("--library")
            .arg(&self.pdfium_library)
            .arg("--size")
            .arg(size.to_string())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .map_err(|error| {
                tracing::error!(%error, renderer = %self.pdf_renderer.display(), "the PDF renderer could not be started");
                ThumbnailError::PdfUnavailable
            })?;
        self.pdf_processes.fetch_add(1, Ordering::Relaxed);
        let started = Instant::now();
        let (Some(mut stdin), Some(mut stdout)) = (child.stdin.take(), child.stdout.take()) else {
            return Err(ThumbnailError::Undecodable);
        };
        let output = async {
            // A worker that stops reading fails on its own: its exit code tells.
            let feed = async move {
                let _ = stdin.write_all(&bytes).await;
            };
            let mut jpeg = Vec::new();
            let (_, read) = tokio::join!(feed, stdout.read_to_end(&mut jpeg));
            let status = child.wait().await;
            (read, status, jpeg)
        };
        let finished = tokio::time::timeout(self.pdf_timeout, output).await;
        // a rendering that ended just as the timer did is still over the limit
        let Some((read, status, jpeg)) = finished.ok().filter(|_| started.elapsed() < self.pdf_timeout) else {
            // Killed and reaped before answering: no rendering outlives its request.
            let _ = child.kill().await;
            return Err(ThumbnailError::PdfTimeout);
        };
        match (read, status) {
            (Ok(_), Ok(status)) if status.success() && !jpeg.is_empty() => Ok(jpeg),
            (_, Ok(status)) if !status.success() => {
                let error = ThumbnailError::from_exit_code(status.code());
                if error == ThumbnailError::PdfUnavailable && !self.pdfium_reported.swap(true, Ordering::Relaxed) {
                    tracing::error!(library = %self.pdfium_library.display(),
                        "libpdfium could not be loaded: PDF thumbnails answer 503 pdf_unavailable");
                }
                Err(error)
            }
            _ => Err(ThumbnailError::Undecodable),
        }
    }
}

fn busy() -> ApiError {
    ApiError::new(
        ErrorCode::ThumbnailsBusy,
        "Too many thumbnails are being rendered; retry later",
    )
}
