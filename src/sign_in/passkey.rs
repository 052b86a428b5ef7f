//! Passkeys (WebAuthn, through webauthn-rs). Registration makes a
//! discoverable credential on the person's device and signs in with it;
//! sign-in lets the device offer one of its passkeys for this relying party
//! and finds that passkey's login method in every database that holds it.
//! Each ceremony's challenge is sign-in state: 5 minutes, single use, bound
//! to the address that began it.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use chrono::{DateTime, Utc};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value as Json;
use sha2::{Digest, Sha256};
use webauthn_rs::prelude::{
    DiscoverableAuthentication, Passkey, PasskeyRegistration, PublicKeyCredential, RegisterPublicKeyCredential, Url,
    Uuid, Webauthn, WebauthnBuilder,
};

use super::{Completed, SignIn, random_token, refused, state_id, unavailable};
use crate::auth::login::{Login, PASSKEY_PROVIDER, StoredPasskey};
use crate::config::WebauthnSettings;
use crate::db::placement::Clusters;
use crate::db::placement_reads::on_every_cluster;
use crate::db::sign_in::{self, Issued};
use crate::error::ApiError;

/// State kinds of the two ceremonies.
const REGISTRATION: &str = "passkey_registration";
const SIGN_IN: &str = "passkey_sign_in";
const CEREMONY_LIFETIME_SECONDS: i64 = 5 * 60;
/// The longest device name kept (characters); a longer one is cut.
const MAX_DEVICE_CHARS: usize = 100;
/// The device name of a passkey registered without one.
const UNNAMED_DEVICE: &str = "Passkey";

/// The relying party passkeys are made for; `None` when the configuration
/// names none this server can be (passkeys are then not offered).
pub struct Passkeys {
    relying_party: Option<Webauthn>,
}

impl Passkeys {
    /// The relying party of `settings`, its origins `public_url` unless set.
    /// An unusable one (an IP address, an RP ID that is not every origin's
    /// host or a parent of it) is logged, and passkeys are not offered.
    pub fn from_settings(settings: &WebauthnSettings, public_url: &str) -> Passkeys {
        let origins: Vec<&str> = match settings.origin.as_slice() {
            [] => vec![public_url],
            origins => origins.iter().map(String::as_str).collect(),
        };
        match relying_party(&settings.rp_id, &origins) {
            Ok(relying_party) => Passkeys {
                relying_party: Some(relying_party),
            },
            Err(error) => {
                tracing::warn!(rp_id = %settings.rp_id, ?origins, %error,
                    "passkeys are not offered: auth.webauthn names no usable relying party");
                Passkeys { relying_party: None }
            }
        }
    }

    pub fn is_configured(&self) -> bool {
        self.relying_party.is_some()
    }

    fn relying_party(&self) -> Result<&Webauthn, ApiError> {
        self.relying_party.as_ref().ok_or_else(|| unavailable(PASSKEY_PROVIDER))
    }
}

/// The relying party `rp_id` answering ceremonies run at any of `origins`.
fn relying_party(rp_id: &str, origins: &[&str]) -> Result<Webauthn, String> {
    let origins = origins
        .iter()
        .map(|origin| Url::parse(origin).map_err(|error| format!("{origin}: {error}")))
        .collect::<Result<Vec<Url>, String>>()?;
    let (first, others) = origins.split_first().ok_or("no origin")?;
    let mut builder = WebauthnBuilder::new(rp_id, first).map_err(|error| error.to_string())?;
    for origin in others {
        // the builder checks only its first origin against the RP ID
        WebauthnBuilder::new(rp_id, origin).map_err(|error| format!("{origin}: {error}"))?;
        builder = builder.append_allowed_origin(origin);
    }
    builder.rp_name("eds").build().map_err(|error| error.to_string())
}

/// A ceremony asked for by a sign-in page.
pub struct PasskeyAsked {
    /// The name of the device a registration is made on.
    pub device: Option<String>,
    /// The name the device lists a new passkey under; default the device's.
    pub listed_as: Option<String>,
    /// Where the browser goes once signed in (checked already).
    pub next: Option<String>,
    /// An invitation to accept once signed in.
    pub invite: Option<String>,
    pub client_ip: String,
}

/// A ceremony begun: the token naming it, and the options the page hands to
/// `navigator.credentials` (`{publicKey: ...}`).
pub struct Begun {
    pub token: String,
    pub options: Json,
}

/// What a ceremony keeps between its challenge and the answer.
#[derive(Serialize, Deserialize)]
struct Ceremony<S> {
    state: S,
    device: Option<String>,
    next: Option<String>,
    invite: Option<String>,
}

impl SignIn {
    /// Begins registering a new passkey: the browser is asked for a
    /// discoverable credential (one it can later offer unasked).
    pub async fn start_passkey_registration(&self, asked: PasskeyAsked, now: DateTime<Utc>) -> Result<Begun, ApiError> {
        let relying_party = self.passkeys.relying_party()?;
        let device = device_name(asked.device.as_deref());
        let listed_as = asked.listed_as.unwrap_or_else(|| device.clone());
        // The user handle names no one: a passkey's person is found by its credential.
        let (options, state) = relying_party
            .start_passkey_registration(Uuid::new_v4(), &listed_as, &listed_as, None)
            .map_err(|error| ApiError::internal("cannot begin a passkey registration", error))?;
        let mut options = to_json(&options)?;
        // Discoverable, or the device could not offer it at sign-in unasked
        // (`residentKey` rules over the older `requireResidentKey`).
        options["publicKey"]["authenticatorSelection"]["residentKey"] = "required".into();
        let ceremony = Ceremony {
            state,
            device: Some(device),
            next: asked.next,
            invite: asked.invite,
        };
        let token = self.begin(REGISTRATION, &asked.client_ip, &ceremony, now).await?;
        Ok(Begun { token, options })
    }

    /// Completes registration `token` with the browser's new credential:
    /// the passkey's login, carrying the credential to store. A `device`
    /// name given only now (an app's) takes the place of the ceremony's.
    pub async fn finish_passkey_registration(
        &self,
        token: &str,
        credential: Json,
        device: Option<&str>,
        client_ip: &str,
        now: DateTime<Utc>,
    ) -> Result<Completed, ApiError> {
        let relying_party = self.passkeys.relying_party()?;
        let ceremony: Ceremony<PasskeyRegistration> = self.take_ceremony(token, REGISTRATION, client_ip, now).await?;
        let credential: RegisterPublicKeyCredential = from_browser(credential)?;
        let passkey = relying_party
            .finish_passkey_registration(&credential, &ceremony.state)
            .map_err(|error| {
                tracing::info!(%error, "a passkey registration was refused");
                refused("the new passkey did not verify")
            })?;
        let stored = StoredPasskey {
            device: device
                .map(|device| device_name(Some(device)))
                .or(ceremony.device)
                .unwrap_or_else(|| UNNAMED_DEVICE.to_owned()),
            credential: to_json(&passkey)?,
        };
        let uid = passkey_uid(passkey.cred_id().as_ref(), &to_json(passkey.get_public_key())?);
        Ok(Completed {
            login: passkey_login(uid, stored),
            next: ceremony.next,
            invite: ceremony.invite,
        })
    }

    /// Begins a sign-in with a passkey the device holds for this relying party.
    pub async fn start_passkey_sign_in(&self, asked: PasskeyAsked, now: DateTime<Utc>) -> Result<Begun, ApiError> {
        let relying_party = self.passkeys.relying_party()?;
        let (options, state) = relying_party
            .start_discoverable_authentication()
            .map_err(|error| ApiError::internal("cannot begin a passkey sign-in", error))?;
        let ceremony = Ceremony {
            state,
            device: None,
            next: asked.next,
            invite: asked.invite,
        };
        let token = self.begin(SIGN_IN, &asked.client_ip, &ceremony, now).await?;
        Ok(Begun {
            token,
            options: to_json(&options)?,
        })
    }

    /// Completes sign-in `token` with the browser's signed answer, checked
    /// against the credential its login method stores; a moved signature
    /// counter is stored back.
    pub async fn finish_passkey_sign_in(
        &self,
        clusters: &Clusters,
        token: &str,
        credential: Json,
        client_ip: &str,
        now: DateTime<Utc>,
    ) -> Result<Completed, ApiError> {
        let relying_party = self.passkeys.relying_party()?;
        let ceremony: Ceremony<DiscoverableAuthentication> = self.take_ceremony(token, SIGN_IN, client_ip, now).await?;
        let credential: PublicKeyCredential = from_browser(credential)?;
        let credential_id = URL_SAFE_NO_PAD.encode(credential.get_credential_id());
        // Normally one; more only if someone registered another key under
        // this id: the one whose key verifies the answer is the login.
        // the passkey may be stored in databases on any cluster
        let found = on_every_cluster(clusters, "stored passkeys", |pool| {
            let credential_id = &credential_id;
            async move {
                let stored = sign_in::stored_passkeys(&mut *pool.get().await?, credential_id).await?;
                Ok((pool, stored))
            }
        })
        .await?;
        let candidates = found
            .into_iter()
            .flat_map(|(_, (pool, stored))| stored.into_iter().map(move |one| (pool.clone(), one)));
        for (pool, (identity, mut stored)) in candidates {
            let mut passkey: Passkey = serde_json::from_value(stored.credential.clone())
                .map_err(|error| ApiError::internal("a stored passkey does not read", error))?;
            let Ok(verified) =
                relying_party.finish_discoverable_authentication_v2(&credential, ceremony.state.clone(), &passkey)
            else {
                continue;
            };
            if passkey.update_credential(&verified) == Some(true) {
                stored.credential = to_json(&passkey)?;
                sign_in::update_passkey(&mut *pool.get().await?, &identity, &stored.credential).await?;
            }
            let uid = identity
                .strip_prefix(&format!("{PASSKEY_PROVIDER}:"))
                .unwrap_or_default()
                .to_owned();
            return Ok(Completed {
                login: passkey_login(uid, stored),
                next: ceremony.next,
                invite: ceremony.invite,
            });
        }
        tracing::info!("a passkey sign-in matched no stored passkey");
        Err(refused(
            "this passkey belongs to no person here, or its answer did not verify",
        ))
    }

    /// Records `ceremony` as state of `kind` for `client_ip`; answers its token.
    async fn begin<S: Serialize>(
        &self,
        kind: &'static str,
        client_ip: &str,
        ceremony: &Ceremony<S>,
        now: DateTime<Utc>,
    ) -> Result<String, ApiError> {
        let token = random_token();
        self.sessions
            .issue(Issued {
                id: state_id(&token),
                kind,
                client_ip: client_ip.to_owned(),
                data: to_json(ceremony)?,
                expires_at: now + chrono::Duration::seconds(CEREMONY_LIFETIME_SECONDS),
            })
            .await?;
        Ok(token)
    }

    /// Uses up the ceremony `token` names: 400 `invalid_sign_in` when it is
    /// unknown, used, expired, of another kind, or from another address.
    async fn take_ceremony<S: DeserializeOwned>(
        &self,
        token: &str,
        kind: &'static str,
        client_ip: &str,
        now: DateTime<Utc>,
    ) -> Result<Ceremony<S>, ApiError> {
        let expired = || refused("unknown, used or expired passkey request");
        self.take(token, kind, client_ip, now, expired).await
    }
}

/// A passkey's login id: its credential id (base64url) and a digest of its
/// public key, so that another key registered under the same credential id
/// is another login, never the first one's.
fn passkey_uid(credential_id: &[u8], public_key: &Json) -> String {
    let digest = Sha256::digest(public_key.to_string().as_bytes());
    format!(
        "{}.{}",
        URL_SAFE_NO_PAD.encode(credential_id),
        hex::encode(&digest[..16])
    )
}

fn passkey_login(uid: String, stored: StoredPasskey) -> Login {
    Login {
        provider: PASSKEY_PROVIDER.to_owned(),
        uid,
        email: None,
        name: None,
        passkey: Some(stored),
    }
}

/// `device` trimmed and cut to its first 100 characters; unnamed, "Passkey".
fn device_name(device: Option<&str>) -> String {
    let device: String = device
        .unwrap_or_default()
        .trim()
        .chars()
        .filter(|c| !c.is_control())
        .take(MAX_DEVICE_CHARS)
        .collect();
    if device.is_empty() {
        UNNAMED_DEVICE.to_owned()
    } else {
        device
    }
}

/// A credential as the browser sent it: 400 `invalid_sign_in` when malformed.
fn from_browser<T: DeserializeOwned>(credential: Json) -> Result<T, ApiError> {
    serde_json::from_value(credential).map_err(|_| refused("the browser's answer is malformed"))
}

fn to_json(value: &impl Serialize) -> Result<Json, ApiError> {
    serde_json::to_value(value).map_err(|error| ApiError::internal("cannot write a passkey ceremony", error))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn another_key_under_the_same_credential_id_is_another_login() {
        let first = passkey_uid(b"credential", &serde_json::json!({"x": "AQ", "y": "Ag"}));
        let other = passkey_uid(b"credential", &serde_json::json!({"x": "Aw", "y": "BA"}));
        assert!(first.starts_with("Y3JlZGVudGlhbA."), "{first}");
        assert_ne!(first, other);
        assert_eq!(
            first,
            passkey_uid(b"credential", &serde_json::json!({"x": "AQ", "y": "Ag"}))
        );
    }

    #[test]
    fn a_device_name_is_trimmed_cut_and_never_empty() {
        assert_eq!(device_name(Some("  Work laptop \n")), "Work laptop");
        assert_eq!(device_name(None), "Passkey");
        assert_eq!(device_name(Some(" \t")), "Passkey");
        assert_eq!(device_name(Some(&"x".repeat(300))).chars().count(), 100);
    }

    fn settings(rp_id: &str, origins: &[&str]) -> WebauthnSettings {
        WebauthnSettings {
            rp_id: rp_id.to_owned(),
            origin: origins.iter().map(|origin| (*origin).to_owned()).collect(),
        }
    }

    #[test]
    fn an_ip_address_cannot_be_the_relying_party() {
        assert!(Passkeys::from_settings(&settings("localhost", &[]), "http://localhost:8080").is_configured());
        assert!(!Passkeys::from_settings(&settings("127.0.0.1", &[]), "http://127.0.0.1:8080").is_configured());
        assert!(!Passkeys::from_settings(&settings("localhost", &[]), "http://127.0.0.1:8080").is_configured());
        assert!(Passkeys::from_settings(&settings("example.com", &["https://eds.example.com"]), "").is_configured());
    }

    #[test]
    fn every_configured_origin_must_be_on_the_relying_party() {
        let both = ["https://eds.example.com", "https://app.example.com"];
        let passkeys = Passkeys::from_settings(&settings("example.com", &both), "");
        let origins: Vec<&str> = passkeys
            .relying_party()
            .unwrap()
            .get_allowed_origins()
            .iter()
            .map(Url::as_str)
            .collect();
        assert_eq!(origins, ["https://eds.example.com/", "https://app.example.com/"]);
        let foreign = ["https://eds.example.com", "https://app.example.org"];
        assert!(!Passkeys::from_settings(&settings("example.com", &foreign), "").is_configured());
    }
}
