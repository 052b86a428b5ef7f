//! The sign-in state actor: short-lived state (e-mail links, OpenID Connect
//! requests, passkey challenges, session tokens, OAuth requests and codes)
//! is written to PostgreSQL when issued and used once. PostgreSQL makes the
//! single use hold across processes (one conditional UPDATE); this actor
//! serialises the uses within a process, remembers what it has seen used (a
//! replay is refused without a query), and sweeps expired state — its own,
//! and the idempotency records of writes past their 24 hours.

use std::collections::HashMap;
use std::sync::OnceLock;
use std::time::Duration;

use actix::prelude::*;
use chrono::{DateTime, Utc};
use serde_json::Value as Json;

use super::home::ActorHome;
use crate::db::sign_in::{self, Issued};
use crate::db::{Pool, consents, idempotency};
use crate::error::{ApiError, ErrorCode};

/// How often expired state is deleted.
const SWEEP_EVERY: Duration = Duration::from_secs(60);

pub struct Sessions {
    pool: Pool,
    /// Pending states one client address may hold; `None`: no bound.
    max_pending: Option<u32>,
    /// Ids this process saw used, until they expire.
    used: HashMap<String, DateTime<Utc>>,
}

impl Actor for Sessions {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        ctx.run_interval(SWEEP_EVERY, |sessions, ctx| {
            let now = Utc::now();
            sessions.used.retain(|_, expires| *expires > now);
            let pool = sessions.pool.clone();
            ctx.spawn(
                async move {
                    if let Err(error) = sweep(&pool, now).await {
                        tracing::warn!(%error, "sweeping expired state failed");
                    }
                }
                .into_actor(sessions),
            );
        });
    }
}

/// Deletes the sign-in state, remembered consents and the idempotency
/// records expired at `now`.
async fn sweep(pool: &Pool, now: DateTime<Utc>) -> Result<(), ApiError> {
    let mut conn = pool.get().await?;
    sign_in::sweep(&mut conn, now).await?;
    consents::sweep(&mut conn, now).await?;
    idempotency::sweep(&mut conn, now).await?;
    Ok(())
}

#[derive(Message)]
#[rtype(result = "Result<(), ApiError>")]
struct Issue(Issued);

impl Handler<Issue> for Sessions {
    type Result = ResponseFuture<Result<(), ApiError>>;

    fn handle(&mut self, Issue(issued): Issue, _: &mut Context<Self>) -> Self::Result {
        let (pool, max_pending) = (self.pool.clone(), self.max_pending);
        Box::pin(async move {
            let mut conn = pool.get().await?;
            if sign_in::issue(&mut conn, &issued, max_pending).await? {
                Ok(())
            } else {
                // the oldest of them expires within minutes
                Err(ApiError {
                    retry_after: Some(60),
                    ..ApiError::new(
                        ErrorCode::RateLimited,
                        "Too many sign-ins are pending from this address; retry later",
                    )
                })
            }
        })
    }
}

/// Uses state `id` of `kind`, issued to `client_ip`, once.
#[derive(Message)]
#[rtype(result = "Result<Option<Json>, ApiError>")]
struct Consume {
    id: String,
    kind: &'static str,
    client_ip: String,
    now: DateTime<Utc>,
}

impl Handler<Consume> for Sessions {
    // atomic: one use at a time in this process, so a replay racing the
    // first use finds its mark
    type Result = AtomicResponse<Self, Result<Option<Json>, ApiError>>;

    fn handle(&mut self, consume: Consume, _: &mut Context<Self>) -> Self::Result {
        if self.used.contains_key(&consume.id) {
            return AtomicResponse::new(Box::pin(fut::ready(Ok(None))));
        }
        let pool = self.pool.clone();
        let id = consume.id.clone();
        AtomicResponse::new(Box::pin(
            async move {
                let mut conn = pool.get().await?;
                let taken =
                    sign_in::consume(&mut conn, &consume.id, consume.kind, &consume.client_ip, consume.now).await?;
                Ok(taken)
            }
            .into_actor(self)
            .map(
                move |taken: Result<Option<(Json, DateTime<Utc>)>, ApiError>, sessions, _| {
                    let (data, expires) = match taken? {
                        Some(taken) => taken,
                        None => return Ok(None),
                    };
                    sessions.used.insert(id, expires);
                    Ok(Some(data))
                },
            ),
        ))
    }
}

/// The process's sign-in state actor, started on first use.
pub struct SessionStore {
    pool: Pool,
    max_pending: Option<u32>,
    actor: OnceLock<Addr<Sessions>>,
    home: ActorHome,
}

impl SessionStore {
    /// `max_pending`: the pending states one client address may hold
    /// (each holds a row for up to 15 minutes before anyone signs in).
    pub fn new(pool: Pool, max_pending: Option<u32>) -> SessionStore {
        SessionStore {
            pool,
            max_pending,
            actor: OnceLock::new(),
            home: ActorHome::default(),
        }
    }

    fn actor(&self) -> &Addr<Sessions> {
        self.actor.get_or_init(|| {
            let (pool, max_pending) = (self.pool.clone(), self.max_pending);
            Sessions::start_in_arbiter(&self.home.handle(), move |_| Sessions {
                pool,
                max_pending,
                used: HashMap::new(),
            })
        })
    }

    /// Writes state to PostgreSQL; it is usable once it is written. 429
    /// `rate_limited` when its address holds too many pending states.
    pub async fn issue(&self, issued: Issued) -> Result<(), ApiError> {
        self.actor()
            .send(Issue(issued))
            .await
            .map_err(|e| ApiError::internal("sign-in state actor unavailable", e))?
    }

    /// The data of state `id` of `kind`, if it was issued to `client_ip`,
    /// has not expired at `now`, and no one (in any process) used it before.
    pub async fn consume(
        &self,
        id: &str,
        kind: &'static str,
        client_ip: &str,
        now: DateTime<Utc>,
    ) -> Result<Option<Json>, ApiError> {
        self.actor()
            .send(Consume {
                id: id.to_owned(),
                kind,
                client_ip: client_ip.to_owned(),
                now,
            })
            .await
            .map_err(|e| ApiError::internal("sign-in state actor unavailable", e))?
    }

    /// The data [`SessionStore::consume`] would answer, leaving the state unused.
    pub async fn peek(
        &self,
        id: &str,
        kind: &'static str,
        client_ip: &str,
        now: DateTime<Utc>,
    ) -> Result<Option<Json>, ApiError> {
        let mut conn = self.pool.get().await?;
        Ok(sign_in::peek(&mut conn, id, kind, client_ip, now).await?)
    }

    /// Forgets state that must not stay usable (its mail could not be sent).
    pub async fn discard(&self, id: &str) -> Result<(), ApiError> {
        let mut conn = self.pool.get().await?;
        sign_in::discard(&mut conn, id).await?;
        Ok(())
    }
}
