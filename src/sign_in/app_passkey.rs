//! The original's JSON passkey ceremony, as apps run it: the options are
//! `publicKey`'s fields with the ceremony's token beside them as
//! `challengeToken`, and the answer is the credential's fields with that
//! token (and, registering, a `deviceName`) beside them.

use serde_json::Value as Json;

use super::SignIn;
use super::passkey::{Begun, PasskeyAsked};
use crate::auth::login::PASSKEY_PROVIDER;
use crate::error::{ApiError, ErrorCode};

/// An app's answer, taken apart.
pub struct AppAnswer {
    pub challenge_token: String,
    pub device_name: Option<String>,
    /// The `PublicKeyCredential`'s own fields.
    pub credential: Json,
}

impl AppAnswer {
    /// 400 `bad_request` for a body that is not an object with a `challengeToken`.
    pub fn read(body: Json) -> Result<AppAnswer, ApiError> {
        let bad = |message: &'static str| ApiError::new(ErrorCode::BadRequest, message);
        let Json::Object(mut fields) = body else {
            return Err(bad("The body must be the credential as a JSON object"));
        };
        let Some(Json::String(challenge_token)) = fields.remove("challengeToken") else {
            return Err(bad("challengeToken is required: the one the options came with"));
        };
        let device_name = match fields.remove("deviceName") {
            None | Some(Json::Null) => None,
            Some(Json::String(name)) => Some(name),
            Some(_) => return Err(bad("deviceName must be a string")),
        };
        Ok(AppAnswer {
            challenge_token,
            device_name,
            credential: Json::Object(fields),
        })
    }
}

impl Begun {
    /// The options as an app hands them on, with `challengeToken`.
    pub fn app_options(self) -> Json {
        let mut options = self.options["publicKey"].clone();
        options["challengeToken"] = self.token.into();
        options
    }
}

/// A ceremony an app asks for from `client_ip`; a registration's passkey
/// listed on the device as `listed_as`.
pub fn app_asked(client_ip: String, listed_as: Option<String>) -> PasskeyAsked {
    PasskeyAsked {
        device: None,
        listed_as,
        next: None,
        invite: None,
        client_ip,
    }
}

impl SignIn {
    /// 503 `provider_unavailable` when passkeys are not offered.
    pub fn require_passkeys(&self) -> Result<(), ApiError> {
        if self.passkeys.is_configured() {
            Ok(())
        } else {
            Err(super::unavailable(PASSKEY_PROVIDER))
        }
    }
}
