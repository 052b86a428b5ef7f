//! The databases a token's login reaches, the person it is in each, and
//! where a sign-in lands.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};

use super::invite::{self, Accepted};
use crate::actors::db_writer::Writers;
use crate::auth::jwt::JwtKeys;
use crate::auth::login::Login;
use crate::auth::subject::Subject;
use crate::db::placement::Clusters;
use crate::db::sign_in::AddUserTarget;
use crate::db::{databases, placement_reads, sign_in, values};
use crate::error::{ApiError, ErrorCode};
use crate::metrics;
use crate::model::ids::new_id;
use crate::write::{WriteOp, WriteRequest};

/// The databases `subject` reaches now, with its person in each: an API
/// key reaches its entity's database while the key and the entity live; a
/// provider login, every database where a live person holds it.
pub async fn accounts_of(clusters: &Clusters, subject: &Subject) -> Result<BTreeMap<String, String>, ApiError> {
    let mut accounts = BTreeMap::new();
    match subject {
        Subject::ApiKey { db, value_id } => {
            let conn = &mut *clusters.pool_for(db)?.get().await?;
            if let Some(key) = values::find_value(conn, db, value_id).await?
                && key.deleted_at.is_none()
                && values::entity_exists(conn, db, &key.entity_id).await?
            {
                accounts.insert(db.clone(), key.entity_id);
            }
        }
        Subject::Login { .. } => {
            let identity = subject.login_identity().unwrap_or_default();
            accounts.extend(placement_reads::persons_of_login(clusters, &identity).await?);
        }
        Subject::Invite { .. } => {}
    }
    Ok(accounts)
}

/// The databases a token's `sub` reaches now: none when it names no subject.
pub async fn accounts_of_sub(clusters: &Clusters, sub: &str) -> Result<BTreeMap<String, String>, ApiError> {
    match sub.parse::<Subject>() {
        Ok(subject) => accounts_of(clusters, &subject).await,
        Err(_) => Ok(BTreeMap::new()),
    }
}

/// Where a provider login signs in, and what reads and writes that.
pub struct SignInTo<'a> {
    pub clusters: &'a Clusters,
    pub writers: &'a Writers,
    pub jwt: &'a JwtKeys,
    pub now: DateTime<Utc>,
}

/// The databases a sign-in reaches, with the login's person in each;
/// `conflict`: the login is another person where the invitation led.
pub struct SignedIn {
    pub accounts: BTreeMap<String, String>,
    pub conflict: bool,
}

impl SignInTo<'_> {
    /// The databases `login` signs in to: with `invite`, the invited person
    /// only (accepting it); with `wanted`, that database only, a person made
    /// there where its `add_user` says if the login is none yet (401 `No
    /// accessible accounts` when neither is so); else every database where a
    /// person holds the login.
    pub async fn sign_in_to(
        &self,
        login: &Login,
        wanted: Option<&str>,
        invite: Option<&str>,
    ) -> Result<SignedIn, ApiError> {
        // no connection is held while a write waits for its turn
        let mut accounts = accounts_of(self.clusters, &login.subject()).await?;
        let mut conflict = false;
        if let Some(token) = invite {
            match invite::accept(self.clusters, self.writers, self.jwt, token, wanted, login, self.now).await? {
                Accepted::Person { db, person } => accounts = invite::accounts(db, person),
                Accepted::Conflict => conflict = true,
            }
        } else if let Some(wanted) = wanted {
            accounts.retain(|db, _| db == wanted);
            if accounts.is_empty()
                && databases::exists(&mut *self.clusters.pool_for(wanted)?.get().await?, wanted).await?
                && let Some(person) = add_user(self.clusters, self.writers, wanted, login).await?
            {
                accounts.insert(wanted.to_owned(), person);
            }
            if accounts.is_empty() {
                metrics::token_refused("login", "no_accounts");
                return Err(ApiError::unauthorized("No accessible accounts"));
            }
        }
        Ok(SignedIn { accounts, conflict })
    }
}

/// The login's person in `db`: the one holding it, else one made where
/// the database's `add_user` says (with no connection held meanwhile).
pub async fn person_for(
    clusters: &Clusters,
    writers: &Writers,
    db: &str,
    login: &Login,
) -> Result<Option<String>, ApiError> {
    let mut accounts = accounts_of(clusters, &login.subject()).await?;
    if let Some(person) = accounts.remove(db) {
        return Ok(Some(person));
    }
    add_user(clusters, writers, db, login).await
}

/// A person for `login` in `db`, which it is not yet in, when the database
/// names where new persons go (its `add_user`, [`sign_in::add_user_target`]):
/// created and answered, or `None` when it names no such place. The place
/// is looked up on a connection given back before the write waits for its
/// turn, and checked again in the write.
pub async fn add_user(
    clusters: &Clusters,
    writers: &Writers,
    db: &str,
    login: &Login,
) -> Result<Option<String>, ApiError> {
    let target = sign_in::add_user_target(&mut *clusters.pool_for(db)?.get().await?, db).await?;
    let Some(AddUserTarget { parent, person_type }) = target else {
        return Ok(None);
    };
    let person = new_id();
    let request = WriteRequest {
        db: db.to_owned(),
        actor: person.clone(),
        op: WriteOp::AddUser {
            parent,
            person_type,
            login: login.clone(),
        },
        idempotency: None,
    };
    match writers.write(request, Vec::new()).await {
        Ok(_) => Ok(Some(person)),
        // the place changed between the look-up and the write
        Err(error) if error.code == ErrorCode::Unauthorized => Ok(None),
        Err(error) => Err(error),
    }
}

/// Stores `login` on `person` in `db`: a signed-in person adding a login
/// method (a new passkey) to themselves.
pub async fn add_login(writers: &Writers, db: &str, person: &str, login: &Login) -> Result<(), ApiError> {
    let request = WriteRequest {
        db: db.to_owned(),
        actor: person.to_owned(),
        op: WriteOp::LinkLogin {
            entity_id: person.to_owned(),
            invitation: None,
            login: Some(login.clone()),
        },
        idempotency: None,
    };
    writers.write(request, Vec::new()).await.map(drop)
}
