//! The databases a token's login reaches, and the person it is in each.

use std::collections::BTreeMap;

use diesel_async::AsyncPgConnection;

use crate::actors::db_writer::Writers;
use crate::auth::login::{Login, identity_of};
use crate::db::sign_in::AddUserTarget;
use crate::db::{Pool, sign_in, values};
use crate::error::{ApiError, ErrorCode};
use crate::model::ids::new_id;
use crate::write::{WriteOp, WriteRequest};

/// The login an API key stands for, as the token's `sub` names it.
pub fn api_key_login(db: &str, value_id: &str) -> String {
    format!("api_key:{db}:{value_id}")
}

/// The database and value id of the API key a token's `sub` names, if it names one.
pub fn api_key_of(sub: &str) -> Option<(&str, &str)> {
    sub.strip_prefix("api_key:")?.split_once(':')
}

/// The databases login `sub` reaches now, with its person in each: an API
/// key reaches its entity's database while the key and the entity live; a
/// provider login, every database where a live person holds it.
pub async fn accounts_of(conn: &mut AsyncPgConnection, sub: &str) -> Result<BTreeMap<String, String>, ApiError> {
    let mut accounts = BTreeMap::new();
    if let Some((db, value_id)) = api_key_of(sub) {
        if let Some(key) = values::find_value(conn, db, value_id).await?
            && key.deleted_at.is_none()
            && values::entity_exists(conn, db, &key.entity_id).await?
        {
            accounts.insert(db.to_owned(), key.entity_id);
        }
    } else if let Some(identity) = identity_of(sub) {
        accounts.extend(sign_in::persons_of_login(conn, identity).await?);
    }
    Ok(accounts)
}

/// A person for `login` in `db`, which it is not yet in, when the database
/// names where new persons go (its `add_user`, [`sign_in::add_user_target`]):
/// created and answered, or `None` when it names no such place. The place
/// is looked up on a connection given back before the write waits for its
/// turn, and checked again in the write.
pub async fn add_user(pool: &Pool, writers: &Writers, db: &str, login: &Login) -> Result<Option<String>, ApiError> {
    let target = sign_in::add_user_target(&mut *pool.get().await?, db).await?;
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
