//! After an authorization's sign-in: its completion (a code at once when
//! the person allowed this client before, else the consent page) and the
//! consent page's answers. Each step answers where the browser goes next,
//! or a typed refusal the handler only says to whom it names.

use chrono::{DateTime, Utc};

use super::SignIn;
use super::accounts::{accounts_of, person_for};
use super::authorize::{AuthorizeRefusal, ClientRefusal};
use super::consent::{self, PendingConsent};
use super::oauth::Authorization;
use crate::actors::db_writer::Writers;
use crate::auth::jwt::JwtKeys;
use crate::auth::login::Login;
use crate::db::placement::Clusters;
use crate::error::ApiError;

/// A code issued: the browser goes back to `redirect_uri` with it and the
/// client's `state`.
pub struct CodeForClient {
    pub redirect_uri: String,
    pub code: String,
    pub state: Option<String>,
}

/// Where an authorization goes once its sign-in completed.
pub enum AfterSignIn {
    /// The person allowed this before: back to the client with a code.
    Code(CodeForClient),
    /// The person is asked on the consent page, whose answers carry `token`.
    AskConsent {
        pending: Box<PendingConsent>,
        token: String,
    },
}

/// `temporarily_unavailable` for the client: the step could not be done now.
fn unavailable(authorization: &Authorization, error: ApiError) -> AuthorizeRefusal {
    AuthorizeRefusal::ToClient(ClientRefusal::to(
        authorization,
        "temporarily_unavailable",
        error.message,
    ))
}

impl SignIn {
    /// The authorization `request` names, completed by the sign-in whose
    /// session token is `key`, both from the browser at `client_ip`.
    pub async fn complete_authorization(
        &self,
        jwt: &JwtKeys,
        clusters: &Clusters,
        request: &str,
        key: &str,
        client_ip: &str,
        now: DateTime<Utc>,
    ) -> Result<AfterSignIn, AuthorizeRefusal> {
        let authorization = self
            .take_authorization(request, client_ip, now)
            .await
            .map_err(AuthorizeRefusal::ToPerson)?;
        let Ok((login, _)) = self.exchange_session(jwt, key, client_ip, now).await else {
            let refusal = ClientRefusal::to(&authorization, "access_denied", "The sign-in did not complete");
            return Err(AuthorizeRefusal::ToClient(refusal));
        };
        match remembered_person(clusters, &authorization, &login, now).await {
            Ok(Some(person)) => {
                return self
                    .code_for(authorization, &login, person, now)
                    .await
                    .map(AfterSignIn::Code);
            }
            Ok(None) => {}
            Err(error) => return Err(unavailable(&authorization, error)),
        }
        let pending = PendingConsent { authorization, login };
        match self.ask_consent(&pending, client_ip, now).await {
            Ok(token) => Ok(AfterSignIn::AskConsent {
                pending: Box::new(pending),
                token,
            }),
            Err(error) => Err(unavailable(&pending.authorization, error)),
        }
    }

    /// The consent page's yes: the person made where the database's
    /// `add_user` says if the login is none yet, the consent remembered,
    /// and a code issued.
    pub async fn allow(
        &self,
        clusters: &Clusters,
        writers: &Writers,
        consent: &str,
        client_ip: &str,
        now: DateTime<Utc>,
    ) -> Result<CodeForClient, AuthorizeRefusal> {
        let PendingConsent { authorization, login } = self
            .take_consent(consent, client_ip, now)
            .await
            .map_err(AuthorizeRefusal::ToPerson)?;
        let person = match person_for(clusters, writers, &authorization.db, &login).await {
            Ok(Some(person)) => person,
            Ok(None) => {
                let refusal = ClientRefusal::to(
                    &authorization,
                    "access_denied",
                    "This login is no person in the database",
                );
                return Err(AuthorizeRefusal::ToClient(refusal));
            }
            Err(error) => return Err(unavailable(&authorization, error)),
        };
        // consents are sign-in state: the home cluster's
        let remembered = match clusters.home().get().await {
            Ok(mut conn) => consent::remember(&mut conn, &authorization, &person, now).await,
            Err(error) => Err(error.into()),
        };
        if let Err(error) = remembered {
            return Err(unavailable(&authorization, error));
        }
        self.code_for(authorization, &login, person, now).await
    }

    /// The consent page's no: always a refusal, to the client when the
    /// consent was pending.
    pub async fn deny(&self, consent: &str, client_ip: &str, now: DateTime<Utc>) -> AuthorizeRefusal {
        match self.take_consent(consent, client_ip, now).await {
            Ok(pending) => AuthorizeRefusal::ToClient(ClientRefusal::to(
                &pending.authorization,
                "access_denied",
                "The person denied access",
            )),
            Err(error) => AuthorizeRefusal::ToPerson(error),
        }
    }

    /// Issues the code for `login`, signed in as `person`.
    async fn code_for(
        &self,
        authorization: Authorization,
        login: &Login,
        person: String,
        now: DateTime<Utc>,
    ) -> Result<CodeForClient, AuthorizeRefusal> {
        let redirect_uri = authorization.redirect_uri.clone();
        let state = authorization.state.clone();
        match self.issue_code(authorization.clone(), login, person, now).await {
            Ok(code) => Ok(CodeForClient {
                redirect_uri,
                code,
                state,
            }),
            Err(error) => Err(unavailable(&authorization, error)),
        }
    }
}

/// The login's person in the authorization's database, if they allowed
/// this authorization within 30 days (no person is made here).
async fn remembered_person(
    clusters: &Clusters,
    authorization: &Authorization,
    login: &Login,
    now: DateTime<Utc>,
) -> Result<Option<String>, ApiError> {
    let Some(person) = accounts_of(clusters, &login.subject()).await?.remove(&authorization.db) else {
        return Ok(None);
    };
    let remembered = consent::is_remembered(&mut *clusters.home().get().await?, authorization, &person, now).await?;
    Ok(remembered.then_some(person))
}
