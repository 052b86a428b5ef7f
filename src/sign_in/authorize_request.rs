//! An authorization request from its query to the sign-in it goes to: the
//! client looked up, the request checked ([`check_authorize_request`]), its
//! database found and the authorization recorded. Every refusal is typed, so
//! the handler only says it to whom it names.

use chrono::{DateTime, Utc};

use super::SignIn;
use super::authorize::{
    AuthorizeContext, AuthorizeParams, AuthorizeRefusal, Checked, ClientRefusal, check_authorize_request,
};
use super::oauth::digest;
use crate::auth::jwt::JwtKeys;
use crate::auth::oauth::{self, Client};
use crate::error::ApiError;

impl SignIn {
    /// Where the browser goes for an authorization request from
    /// `client_ip`: the sign-in of its provider (or the method chooser),
    /// which returns to its completion. `client_id` is the URL of a client
    /// metadata document, fetched, or is looked up among the clients `jwt`
    /// signed; `known_database` says whether a database exists.
    pub async fn authorize(
        &self,
        jwt: &JwtKeys,
        client_id: Option<&str>,
        params: AuthorizeParams<'_>,
        known_database: impl AsyncFnOnce(&str) -> Result<bool, ApiError>,
        client_ip: &str,
        now: DateTime<Utc>,
    ) -> Result<String, AuthorizeRefusal> {
        let document = client_id.and_then(|id| self.client_documents.document_url(id));
        let client = match (client_id, &document) {
            (Some(id), Some(url)) => {
                let documents = &self.client_documents;
                let described = documents.client(id, url, client_ip, now).await;
                let described = described.map_err(AuthorizeRefusal::ToPerson)?;
                Some((Client::clone(&described), digest(id)))
            }
            (Some(id), None) => oauth::client(jwt, id, now).map(|client| (client, digest(id))),
            (None, _) => None,
        };
        let hosts = self.own_hosts();
        let hosts: Vec<&str> = hosts.iter().map(String::as_str).collect();
        let offers = |provider: &str| self.offers(provider);
        let context = AuthorizeContext {
            client: client.as_ref().map(|(client, digest)| (client, digest.clone())),
            hosts: &hosts,
            offers: &offers,
        };
        let Checked {
            mut authorization,
            provider,
        } = check_authorize_request(params, &context)?;
        // the consent page names where the client describes itself
        authorization.client_host = document.and_then(|url| url.host_str().map(str::to_owned));
        let to_client = |error, description: std::borrow::Cow<'_, str>| {
            AuthorizeRefusal::ToClient(ClientRefusal::to(&authorization, error, description))
        };
        match known_database(&authorization.db).await {
            Ok(true) => {}
            Ok(false) => return Err(to_client("invalid_request", "Unknown database".into())),
            Err(error) => return Err(to_client("temporarily_unavailable", error.message)),
        }
        // a refusal to record (429 for too many pending states) as well
        let next = self
            .begin_authorization(&authorization, client_ip, now)
            .await
            .map_err(|error| to_client("temporarily_unavailable", error.message))?;
        let query =
            serde_urlencoded::to_string([("next", next.as_str()), ("lang", params.lang.code())]).unwrap_or_default();
        Ok(format!("{}/api/auth/{provider}?{query}", self.public_url))
    }

    /// The hosts a `resource` may name: those of `{api_url}` and `{base_url}`.
    fn own_hosts(&self) -> Vec<String> {
        [&self.api_url, &self.public_url]
            .into_iter()
            .filter_map(|origin| url::Url::parse(origin).ok()?.host_str().map(str::to_owned))
            .collect()
    }
}
