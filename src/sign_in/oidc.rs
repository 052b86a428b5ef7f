//! OpenID Connect providers (`google`, `apple`, and `smart-id`, `mobile-id`,
//! `id-card` through an eID broker): the authorization code flow with PKCE
//! and a nonce, the ID token verified against the issuer's published keys.
//! The request's state (PKCE verifier, nonce, where to go next) is sign-in
//! state: recorded when the browser is sent off, used once when it returns,
//! from the same address, within 10 minutes.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use openidconnect::core::{CoreAuthenticationFlow, CoreClient, CoreProviderMetadata};
use openidconnect::{
    AuthUrl, AuthorizationCode, ClientId, ClientSecret, CsrfToken, IssuerUrl, Nonce, PkceCodeChallenge,
    PkceCodeVerifier, RedirectUrl, Scope,
};
use serde::Serialize;
use serde_json::json;
use tokio::sync::RwLock;

use super::{Completed, SignIn, refused, state_id, unavailable};
use crate::auth::login::{Login, normalized_email};
use crate::config::AuthSettings;
use crate::db::sign_in::Issued;
use crate::error::{ApiError, ErrorCode};

/// State kind of a request sent to a provider.
const REQUEST: &str = "oidc";
/// How long a person has at the provider.
const REQUEST_LIFETIME_SECONDS: i64 = 10 * 60;
/// Provider metadata (endpoints, keys) is read again after this long.
const METADATA_LIFETIME: Duration = Duration::from_secs(60 * 60);
/// Limit of each call to a provider.
const PROVIDER_TIMEOUT: Duration = Duration::from_secs(10);

/// How a provider's client authenticates at its token endpoint.
enum ClientAuth {
    Secret(String),
    /// Apple: a short-lived ES256 JWT as the secret.
    AppleKey {
        team_id: String,
        key_id: String,
        key: Box<EncodingKey>,
    },
}

struct Provider {
    issuer: String,
    client_id: String,
    auth: ClientAuth,
    /// The authorization URL, when not the issuer's.
    authorize_url: Option<String>,
    /// Apple answers by POSTing a form back.
    form_post: bool,
    metadata: RwLock<Option<(Instant, CoreProviderMetadata)>>,
}

/// The configured providers, by name.
pub struct OidcProviders {
    providers: HashMap<&'static str, Provider>,
    http: openidconnect::reqwest::Client,
}

/// What a request to a provider carries to its return.
#[derive(Serialize, serde::Deserialize)]
struct Pending {
    provider: String,
    verifier: String,
    nonce: String,
    next: Option<String>,
    invite: Option<String>,
}

/// A provider's answer, as the browser brings it back.
pub struct Returned<'a> {
    pub code: Option<&'a str>,
    pub state: Option<&'a str>,
    pub error: Option<&'a str>,
    /// Apple's first answer for a person: `{"name":{"firstName","lastName"}}`.
    pub apple_user: Option<&'a str>,
}

impl OidcProviders {
    pub fn from_settings(auth: &AuthSettings) -> Result<OidcProviders, String> {
        let mut providers = HashMap::new();
        let provider = |issuer: &str, client_id: &str, auth: ClientAuth, authorize_url: Option<String>| Provider {
            issuer: issuer.to_owned(),
            client_id: client_id.to_owned(),
            auth,
            authorize_url,
            form_post: false,
            metadata: RwLock::new(None),
        };
        let google = &auth.google;
        if !google.client_id.is_empty() {
            let secret = ClientAuth::Secret(google.client_secret.clone());
            providers.insert("google", provider(&google.issuer, &google.client_id, secret, None));
        }
        let apple = &auth.apple;
        if !apple.client_id.is_empty() {
            let key = EncodingKey::from_ec_pem(apple.private_key.as_bytes())
                .map_err(|e| format!("auth.apple.private_key is not an EC private key in PEM: {e}"))?;
            let key = ClientAuth::AppleKey {
                team_id: apple.team_id.clone(),
                key_id: apple.key_id.clone(),
                key: Box::new(key),
            };
            let mut apple = provider(&apple.issuer, &apple.client_id, key, None);
            apple.form_post = true;
            providers.insert("apple", apple);
        }
        let eid = &auth.eid;
        if !eid.client_id.is_empty() {
            for name in ["smart-id", "mobile-id", "id-card"] {
                let authorize_url =
                    (!eid.authorize_url.is_empty()).then(|| eid.authorize_url.replace("{provider}", name));
                let secret = ClientAuth::Secret(eid.client_secret.clone());
                providers.insert(name, provider(&eid.issuer, &eid.client_id, secret, authorize_url));
            }
        }
        let http = openidconnect::reqwest::Client::builder()
            // a provider's redirect is never followed (SSRF)
            .redirect(openidconnect::reqwest::redirect::Policy::none())
            .timeout(PROVIDER_TIMEOUT)
            .build()
            .map_err(|e| format!("cannot build the OpenID Connect HTTP client: {e}"))?;
        Ok(OidcProviders { providers, http })
    }

    pub fn is_configured(&self, provider: &str) -> bool {
        self.providers.contains_key(provider)
    }

    fn get(&self, provider: &str) -> Result<&Provider, ApiError> {
        self.providers.get(provider).ok_or_else(|| unavailable(provider))
    }

    /// The provider's metadata, discovered at most an hour ago.
    async fn metadata(&self, provider: &Provider) -> Result<CoreProviderMetadata, ApiError> {
        if let Some((at, metadata)) = &*provider.metadata.read().await
            && at.elapsed() < METADATA_LIFETIME
        {
            return Ok(metadata.clone());
        }
        let issuer = IssuerUrl::new(provider.issuer.clone()).map_err(|e| misconfigured(&provider.issuer, e))?;
        let metadata = CoreProviderMetadata::discover_async(issuer, &self.http)
            .await
            .map_err(|error| {
                tracing::warn!(issuer = %provider.issuer, %error, "OpenID Connect discovery failed");
                ApiError::new(
                    ErrorCode::ProviderUnavailable,
                    "The sign-in provider cannot be reached; retry later",
                )
            })?;
        *provider.metadata.write().await = Some((Instant::now(), metadata.clone()));
        Ok(metadata)
    }

    /// A client of `provider` returning to `redirect`.
    async fn client(
        &self,
        provider: &Provider,
        redirect: &str,
        now: DateTime<Utc>,
    ) -> Result<
        CoreClient<
            openidconnect::EndpointSet,
            openidconnect::EndpointNotSet,
            openidconnect::EndpointNotSet,
            openidconnect::EndpointNotSet,
            openidconnect::EndpointMaybeSet,
            openidconnect::EndpointMaybeSet,
        >,
        ApiError,
    > {
        let metadata = self.metadata(provider).await?;
        let secret = match &provider.auth {
            ClientAuth::Secret(secret) => secret.clone(),
            ClientAuth::AppleKey { team_id, key_id, key } => apple_secret(provider, team_id, key_id, key, now)?,
        };
        let mut client = CoreClient::from_provider_metadata(
            metadata,
            ClientId::new(provider.client_id.clone()),
            Some(ClientSecret::new(secret)),
        )
        .set_redirect_uri(RedirectUrl::new(redirect.to_owned()).map_err(|e| misconfigured(redirect, e))?);
        if matches!(provider.auth, ClientAuth::AppleKey { .. }) {
            client = client.set_auth_type(openidconnect::AuthType::RequestBody);
        }
        if let Some(url) = &provider.authorize_url {
            client = client.set_auth_uri(AuthUrl::new(url.clone()).map_err(|e| misconfigured(url, e))?);
        }
        Ok(client)
    }
}

/// Apple's client secret: a JWT naming the team, the client and Apple,
/// signed with the team's key, valid 5 minutes.
fn apple_secret(
    provider: &Provider,
    team_id: &str,
    key_id: &str,
    key: &EncodingKey,
    now: DateTime<Utc>,
) -> Result<String, ApiError> {
    let header = Header {
        kid: Some(key_id.to_owned()),
        ..Header::new(Algorithm::ES256)
    };
    let claims = json!({
        "iss": team_id,
        "iat": now.timestamp(),
        "exp": now.timestamp() + 300,
        "aud": provider.issuer,
        "sub": provider.client_id,
    });
    jsonwebtoken::encode(&header, &claims, key).map_err(|e| ApiError::internal("cannot sign Apple's client secret", e))
}

fn misconfigured(what: &str, error: impl std::fmt::Display) -> ApiError {
    ApiError::internal(&format!("a sign-in provider's URL {what:?} is not usable"), error)
}

impl SignIn {
    /// The provider's authorization URL to send the browser to; the request
    /// is recorded first, bound to `client_ip`.
    pub async fn start_oidc(
        &self,
        provider: &str,
        next: Option<String>,
        invite: Option<String>,
        client_ip: &str,
        now: DateTime<Utc>,
    ) -> Result<String, ApiError> {
        let config = self.oidc.get(provider)?;
        let client = self.oidc.client(config, &self.redirect_uri(provider), now).await?;
        let (challenge, verifier) = PkceCodeChallenge::new_random_sha256();
        let mut request = client
            .authorize_url(
                CoreAuthenticationFlow::AuthorizationCode,
                CsrfToken::new_random,
                Nonce::new_random,
            )
            .add_scope(Scope::new("email".to_owned()))
            .add_scope(Scope::new(if config.form_post { "name" } else { "profile" }.to_owned()))
            .set_pkce_challenge(challenge);
        if config.form_post {
            request = request.add_extra_param("response_mode", "form_post");
        }
        let (url, state, nonce) = request.url();
        let pending = Pending {
            provider: provider.to_owned(),
            verifier: verifier.secret().clone(),
            nonce: nonce.secret().clone(),
            next,
            invite,
        };
        self.sessions
            .issue(Issued {
                id: state_id(state.secret()),
                kind: REQUEST,
                client_ip: client_ip.to_owned(),
                data: serde_json::to_value(&pending).map_err(|e| ApiError::internal("sign-in state", e))?,
                expires_at: now + chrono::Duration::seconds(REQUEST_LIFETIME_SECONDS),
            })
            .await?;
        Ok(url.to_string())
    }

    /// Completes a sign-in the browser brings back from `provider`: the
    /// request it answers is used up (400 `invalid_sign_in` when unknown,
    /// used, expired, from another address, or refused by the provider),
    /// the code exchanged, and the ID token verified.
    pub async fn finish_oidc(
        &self,
        provider: &str,
        returned: Returned<'_>,
        client_ip: &str,
        now: DateTime<Utc>,
    ) -> Result<Completed, ApiError> {
        let config = self.oidc.get(provider)?;
        let state = returned.state.ok_or_else(|| refused("no state"))?;
        let unknown = || refused("unknown, used or expired request");
        let pending: Pending = self.take(state, REQUEST, client_ip, now, unknown).await?;
        if pending.provider != provider {
            return Err(refused("answered by another provider"));
        }
        if let Some(error) = returned.error {
            return Err(refused(&format!("the provider answered {:?}", truncate(error))));
        }
        let code = returned.code.ok_or_else(|| refused("no code"))?;
        let client = self.oidc.client(config, &self.redirect_uri(provider), now).await?;
        let exchange = client
            .exchange_code(AuthorizationCode::new(code.to_owned()))
            .map_err(|e| misconfigured(&config.issuer, e))?
            .set_pkce_verifier(PkceCodeVerifier::new(pending.verifier));
        let tokens = exchange.request_async(&self.oidc.http).await.map_err(|error| {
            tracing::info!(%provider, %error, "a sign-in's code exchange failed");
            refused("the provider did not accept the code")
        })?;
        let id_token = openidconnect::TokenResponse::id_token(&tokens).ok_or_else(|| refused("no ID token"))?;
        let claims = id_token
            .claims(&client.id_token_verifier(), &Nonce::new(pending.nonce))
            .map_err(|error| {
                tracing::info!(%provider, %error, "a sign-in's ID token was refused");
                refused("the ID token did not verify")
            })?;
        // an address the provider has not verified may be anyone's
        let email = claims
            .email()
            .filter(|_| claims.email_verified() == Some(true))
            .map(|email| normalized_email(email.as_str()));
        let name = claims
            .name()
            .and_then(|name| name.get(None))
            .map(|name| name.as_str().to_owned())
            .or_else(|| returned.apple_user.and_then(apple_name));
        Ok(Completed {
            login: Login {
                provider: provider.to_owned(),
                uid: claims.subject().as_str().to_owned(),
                email,
                name,
                passkey: None,
            },
            next: pending.next,
            invite: pending.invite,
        })
    }

    fn redirect_uri(&self, provider: &str) -> String {
        format!("{}/api/auth/{provider}", self.public_url)
    }
}

/// The person's name from Apple's `user` form field (sent at their first sign-in only).
fn apple_name(user: &str) -> Option<String> {
    let user: serde_json::Value = serde_json::from_str(user).ok()?;
    let part = |key: &str| user["name"][key].as_str().map(str::trim).filter(|p| !p.is_empty());
    let name = [part("firstName"), part("lastName")]
        .into_iter()
        .flatten()
        .collect::<Vec<_>>()
        .join(" ");
    (!name.is_empty()).then_some(name)
}

fn truncate(text: &str) -> &str {
    text.char_indices().nth(100).map_or(text, |(at, _)| &text[..at])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn apples_user_field_gives_the_name_once_it_has_one() {
        assert_eq!(
            apple_name(r#"{"name":{"firstName":"Ann","lastName":"Lee"},"email":"a@b.c"}"#).as_deref(),
            Some("Ann Lee")
        );
        assert_eq!(apple_name(r#"{"email":"a@b.c"}"#), None);
        assert_eq!(apple_name("not json"), None);
    }
}
