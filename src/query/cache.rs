//! List answers kept per process and reused while their database's
//! generation (`databases.generation`, changed by every committed transaction
//! that changes the database's entities) stays the same. An answer is only
//! ever served for the generation it was computed at, so a cached answer is
//! exactly what the query would return now: a write committed by any process
//! changes the generation, and the next request computes afresh.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use moka::future::Cache;

use crate::error::ApiError;
use crate::metrics;

/// Answers no request has asked for this long are dropped, freeing their
/// memory even when the cache is not full.
const IDLE: Duration = Duration::from_secs(600);

/// What one answer depends on: the database and its generation, the caller
/// (the view rules decide what each person sees) and the query string.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct AnswerKey {
    pub db: String,
    pub generation: i64,
    pub person: Option<String>,
    pub query: String,
}

/// A bounded cache of serialized list answers.
pub struct AnswerCache {
    answers: Cache<AnswerKey, Bytes>,
}

impl AnswerCache {
    /// A cache holding up to `max_bytes` of answers and keys; `None` for 0
    /// (caching turned off).
    pub fn new(max_bytes: u64) -> Option<AnswerCache> {
        (max_bytes > 0).then(|| AnswerCache {
            answers: Cache::builder()
                .max_capacity(max_bytes)
                .weigher(|key: &AnswerKey, answer: &Bytes| {
                    let size =
                        key.db.len() + key.query.len() + key.person.as_ref().map_or(0, String::len) + answer.len();
                    u32::try_from(size).unwrap_or(u32::MAX)
                })
                .time_to_idle(IDLE)
                .build(),
        })
    }

    /// The answer for `key`: cached, or computed by `compute`. Callers that
    /// miss on the same key at the same time share one computation. Errors
    /// are never cached.
    pub async fn get_or_compute(
        &self,
        key: AnswerKey,
        compute: impl Future<Output = Result<Bytes, ApiError>>,
    ) -> Result<Bytes, ApiError> {
        let mut computed = false;
        let answer = self
            .answers
            .try_get_with(key, async {
                computed = true;
                compute.await
            })
            .await
            .map_err(|error: Arc<ApiError>| (*error).clone());
        metrics::answer_cache(if computed { "miss" } else { "hit" });
        answer
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(generation: i64, person: Option<&str>) -> AnswerKey {
        AnswerKey {
            db: "demo".into(),
            generation,
            person: person.map(str::to_owned),
            query: "limit=1".into(),
        }
    }

    #[test]
    fn a_zero_size_turns_the_cache_off() {
        assert!(AnswerCache::new(0).is_none());
        assert!(AnswerCache::new(1024).is_some());
    }

    #[actix_rt::test]
    async fn an_answer_is_reused_only_for_the_same_generation_and_caller() {
        let cache = AnswerCache::new(1 << 20).unwrap();
        let first = cache
            .get_or_compute(key(1, Some("p")), async { Ok(Bytes::from_static(b"first")) })
            .await
            .unwrap();
        assert_eq!(first, "first");
        let reused = cache
            .get_or_compute(key(1, Some("p")), async { Ok(Bytes::from_static(b"second")) })
            .await
            .unwrap();
        assert_eq!(reused, "first");
        for other in [key(2, Some("p")), key(1, Some("q")), key(1, None)] {
            let fresh = cache
                .get_or_compute(other, async { Ok(Bytes::from_static(b"fresh")) })
                .await
                .unwrap();
            assert_eq!(fresh, "fresh");
        }
    }

    #[actix_rt::test]
    async fn an_error_is_not_cached() {
        let cache = AnswerCache::new(1 << 20).unwrap();
        let failed = cache
            .get_or_compute(key(1, None), async {
                Err(ApiError::new(crate::error::ErrorCode::InvalidRegex, "Invalid regex"))
            })
            .await;
        assert_eq!(failed.unwrap_err().message, "Invalid regex");
        let answer = cache
            .get_or_compute(key(1, None), async { Ok(Bytes::from_static(b"ok")) })
            .await
            .unwrap();
        assert_eq!(answer, "ok");
    }

    #[actix_rt::test]
    async fn callers_missing_at_once_share_one_computation() {
        let cache = Arc::new(AnswerCache::new(1 << 20).unwrap());
        let computations = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let callers: Vec<_> = (0..8)
            .map(|_| {
                let (cache, computations) = (cache.clone(), computations.clone());
                tokio::spawn(async move {
                    cache
                        .get_or_compute(key(1, None), async {
                            computations.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                            tokio::time::sleep(Duration::from_millis(50)).await;
                            Ok(Bytes::from_static(b"once"))
                        })
                        .await
                        .unwrap()
                })
            })
            .collect();
        for caller in callers {
            assert_eq!(caller.await.unwrap(), "once");
        }
        assert_eq!(computations.load(std::sync::atomic::Ordering::SeqCst), 1);
    }
}
