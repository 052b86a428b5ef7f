//! Invitations: writing a `string` to `service_user` stores a pending
//! invitation (24 hours); on an existing entity its link is mailed to the
//! entity's `email`. A provider login presenting the token is linked to the
//! invited person.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use diesel_async::AsyncPgConnection;

use super::SignIn;
use crate::actors::db_writer::Writers;
use crate::auth::jwt::{Claims, JwtKeys};
use crate::auth::login::Login;
use crate::db::placement::Clusters;
use crate::db::{sign_in, values};
use crate::error::{ApiError, ErrorCode};
use crate::mail::{self, Mail};
use crate::model::LOGIN_PROPERTY;
use crate::write::login::invalid_invite;
use crate::write::{WriteOp, WriteOutcome, WriteRequest};

/// What presenting an invitation came to.
#[derive(Debug, PartialEq, Eq)]
pub enum Accepted {
    /// The login is (now, or was already) the invited person: the token
    /// reaches that person only.
    Person { db: String, person: String },
    /// The login is another person in that database: not accepted.
    Conflict,
}

/// Accepts invitation `token` for `login`. `wanted`: the `db` the exchange
/// names, which must be the invitation's. 400 `Invalid or expired invite`
/// for a malformed, expired or used invitation (a used one still admits the
/// person it linked), or one for another database. The connection of the
/// look-ups is given back before the write waits for its turn.
pub async fn accept(
    clusters: &Clusters,
    writers: &Writers,
    jwt: &JwtKeys,
    token: &str,
    wanted: Option<&str>,
    login: &Login,
    now: DateTime<Utc>,
) -> Result<Accepted, ApiError> {
    let claims = jwt.verify_invite(token, now).map_err(|_| invalid_invite())?;
    let (db, value_id) = claims.invitation().ok_or_else(invalid_invite)?;
    if wanted.is_some_and(|wanted| wanted != db) {
        return Err(invalid_invite());
    }
    let mut conn = clusters.pool_for(db)?.get().await?;
    let invitation = values::find_value(&mut conn, db, value_id)
        .await?
        .filter(|value| value.prop == LOGIN_PROPERTY)
        .ok_or_else(invalid_invite)?;
    let person = invitation.entity_id.clone();
    let linked_to = sign_in::persons_of_login(&mut conn, &login.identity())
        .await?
        .into_iter()
        .find_map(|(in_db, person)| (in_db == db).then_some(person));
    drop(conn);
    let admitted = Accepted::Person {
        db: db.to_owned(),
        person: person.clone(),
    };
    let pending = invitation.deleted_at.is_none() && invitation.login_provider.is_none();
    match linked_to {
        Some(other) if other != person => return Ok(Accepted::Conflict),
        Some(_) if !pending => return Ok(admitted),
        None if !pending => return Err(invalid_invite()),
        _ => {}
    }
    let request = WriteRequest {
        db: db.to_owned(),
        actor: person.clone(),
        op: WriteOp::LinkLogin {
            entity_id: person,
            invitation: Some(invitation.id),
            // a login already on the person only uses the invitation up
            login: linked_to.is_none().then(|| login.clone()),
        },
        idempotency: None,
    };
    writers.write(request, Vec::new()).await?;
    Ok(admitted)
}

/// The accounts a token for an accepted invitation reaches.
pub fn accounts(db: String, person: String) -> BTreeMap<String, String> {
    BTreeMap::from([(db, person)])
}

impl SignIn {
    /// Mails the invitation link of every pending invitation `outcome`
    /// wrote on an existing entity to that entity's `email` (the write
    /// checked it has one).
    pub async fn mail_invitations(
        &self,
        conn: &mut AsyncPgConnection,
        jwt: &JwtKeys,
        db: &str,
        outcome: &WriteOutcome,
        now: DateTime<Utc>,
    ) -> Result<(), ApiError> {
        let WriteOutcome::Written { entity_id, values } = outcome else {
            return Ok(());
        };
        let invitations: Vec<&str> = values
            .iter()
            .filter(|value| value.row.prop == LOGIN_PROPERTY && value.row.login_provider.is_none())
            .map(|value| value.row.id.as_str())
            .collect();
        if invitations.is_empty() {
            return Ok(());
        }
        let email = values::live_values(conn, db, entity_id)
            .await?
            .into_iter()
            .find_map(|value| (value.prop == "email").then_some(value.string).flatten())
            .ok_or_else(|| ApiError::new(ErrorCode::NoEmail, "No email"))?;
        let to = mail::address(&email)?;
        for value_id in invitations {
            let token = jwt.sign(&Claims::invite(db, value_id, now))?;
            let link = format!("{}/api/auth/choose?invite={token}", self.public_url);
            self.mailer
                .send(Mail {
                    to: to.clone(),
                    subject: format!("Invitation to {db}"),
                    body: format!(
                        "You are invited to the database {db}. Open this link within 24 hours to sign in and accept:\n\n{link}\n"
                    ),
                })
                .await?;
        }
        Ok(())
    }
}
