//! A login an identity provider vouched for, and how tokens and stored login
//! methods name it.

use serde::{Deserialize, Serialize};

use super::subject::Subject;

/// Every sign-in provider of the API (`GET /api/auth/{provider}`).
pub const PROVIDERS: [&str; 7] = [
    "passkey",
    "apple",
    "google",
    "e-mail",
    "smart-id",
    "mobile-id",
    "id-card",
];
/// The provider that signs in by a link mailed to the address.
pub const EMAIL_PROVIDER: &str = "e-mail";
/// The eID provider whose e-mail is shown without the national mail domain.
const ID_CARD_PROVIDER: &str = "id-card";
const NATIONAL_MAIL_DOMAIN: &str = "@eesti.ee";
/// The provider whose logins are passkeys (WebAuthn credentials).
pub const PASSKEY_PROVIDER: &str = "passkey";

/// A passkey as its login method stores it: the name of the device it was
/// made on (what the login method shows: a passkey knows no person's name)
/// and the credential (webauthn-rs's `Passkey`: public key, signature counter).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StoredPasskey {
    pub device: String,
    pub credential: serde_json::Value,
}

/// A person as a provider knows them: the provider's name and its id for
/// them (`uid`), with what it tells of them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Login {
    pub provider: String,
    pub uid: String,
    pub email: Option<String>,
    pub name: Option<String>,
    /// A passkey login carries its credential, to be stored wherever the
    /// login is linked (signed into its tokens, so no caller can swap it).
    pub passkey: Option<StoredPasskey>,
}

/// An e-mail address as every part of sign-in compares it: trimmed, ASCII
/// letters lower-cased, nothing else. Unicode case folding would make
/// addresses that mail servers deliver apart (`ß`, dotless `ı`...) one login.
pub fn normalized_email(address: &str) -> String {
    address.trim().to_ascii_lowercase()
}

impl Login {
    /// A login by a link mailed to `address`: the address, normalised, is the id.
    pub fn by_email(address: &str) -> Login {
        let address = normalized_email(address);
        Login {
            provider: EMAIL_PROVIDER.to_owned(),
            uid: address.clone(),
            email: Some(address),
            name: None,
            passkey: None,
        }
    }

    /// What the tokens' `sub` names for this login.
    pub fn subject(&self) -> Subject {
        Subject::Login {
            provider: self.provider.clone(),
            uid: self.uid.clone(),
        }
    }

    /// The tokens' `sub` for this login.
    pub fn sub(&self) -> String {
        self.subject().to_string()
    }

    /// What the stored login method is found by (`secret_lookup` of its
    /// `service_user` value).
    pub fn identity(&self) -> String {
        format!("{}:{}", self.provider, self.uid)
    }

    /// What the stored login method shows (its `string`): a passkey's
    /// device name, else the e-mail, else the id.
    pub fn shown(&self) -> &str {
        match &self.passkey {
            Some(passkey) => &passkey.device,
            None => {
                let email = self.email.as_deref().unwrap_or(&self.uid);
                // an ID card's address is the personal code at the national mail domain
                match self.provider.as_str() {
                    ID_CARD_PROVIDER => email.strip_suffix(NATIONAL_MAIL_DOMAIN).unwrap_or(email),
                    _ => email,
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_passkey_login_shows_its_device_and_keeps_colons_in_its_id() {
        let login = Login {
            provider: "passkey".into(),
            uid: "a:b".into(),
            email: Some("ann@example.com".into()),
            name: None,
            passkey: Some(StoredPasskey {
                device: "Laptop".into(),
                credential: serde_json::json!({"cred": {}}),
            }),
        };
        assert_eq!(login.sub(), "login:passkey:a:b");
        assert_eq!(login.subject().login_identity(), Some(login.identity()));
        assert_eq!(login.shown(), "Laptop");
    }

    #[test]
    fn an_id_card_login_shows_its_address_without_the_national_mail_domain() {
        let login = |provider: &str| Login {
            provider: provider.into(),
            uid: "EE38001010000".into(),
            email: Some("38001010000@eesti.ee".into()),
            name: None,
            passkey: None,
        };
        assert_eq!(login("id-card").shown(), "38001010000");
        assert_eq!(login("smart-id").shown(), "38001010000@eesti.ee");
    }

    #[test]
    fn an_email_login_is_the_address_normalised() {
        let login = Login::by_email(" Ann@Example.COM ");
        assert_eq!(login.identity(), "e-mail:ann@example.com");
        assert_eq!(login.shown(), "ann@example.com");
    }

    #[test]
    fn addresses_are_normalised_by_trimming_and_ascii_lower_casing_only() {
        assert_eq!(normalized_email("\t Bob@Example.ORG\n"), "bob@example.org");
        // no Unicode case folding: these stay apart from their lower-case forms
        assert_eq!(normalized_email("ÄNN@Ex.EE"), "Änn@ex.ee");
        assert_ne!(normalized_email("İ@x.tr"), normalized_email("i@x.tr"));
    }
}
