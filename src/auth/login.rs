//! A login an identity provider vouched for, and how tokens and stored login
//! methods name it.

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

/// A person as a provider knows them: the provider's name and its id for
/// them (`uid`), with what it tells of them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Login {
    pub provider: String,
    pub uid: String,
    pub email: Option<String>,
    pub name: Option<String>,
}

impl Login {
    /// A login by a link mailed to `address`: the address, case folded, is the id.
    pub fn by_email(address: &str) -> Login {
        let address = address.trim().to_lowercase();
        Login {
            provider: EMAIL_PROVIDER.to_owned(),
            uid: address.clone(),
            email: Some(address),
            name: None,
        }
    }

    /// The tokens' `sub` for this login.
    pub fn sub(&self) -> String {
        format!("login:{}:{}", self.provider, self.uid)
    }

    /// What the stored login method is found by (`secret_lookup` of its
    /// `service_user` value).
    pub fn identity(&self) -> String {
        format!("{}:{}", self.provider, self.uid)
    }

    /// What the stored login method shows (its `string`): the e-mail, else the id.
    pub fn shown(&self) -> &str {
        self.email.as_deref().unwrap_or(&self.uid)
    }

    /// The login a token's `sub` names, with the profile the token carries;
    /// `None` for an API key's token.
    pub fn from_sub(sub: &str, email: Option<String>, name: Option<String>) -> Option<Login> {
        let (provider, uid) = sub.strip_prefix("login:")?.split_once(':')?;
        Some(Login {
            provider: provider.to_owned(),
            uid: uid.to_owned(),
            email,
            name,
        })
    }
}

/// The identity a token's `sub` stands for, if it names a provider login.
pub fn identity_of(sub: &str) -> Option<&str> {
    sub.strip_prefix("login:")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_login_round_trips_through_its_sub_and_keeps_colons_in_its_id() {
        let login = Login {
            provider: "google".into(),
            uid: "a:b".into(),
            email: None,
            name: Some("Ann".into()),
        };
        assert_eq!(login.sub(), "login:google:a:b");
        assert_eq!(
            Login::from_sub(&login.sub(), None, Some("Ann".into())),
            Some(login.clone())
        );
        assert_eq!(identity_of(&login.sub()), Some(login.identity().as_str()));
        assert_eq!(Login::from_sub("api_key:demo:v1", None, None), None);
    }

    #[test]
    fn an_email_login_is_the_address_case_folded() {
        let login = Login::by_email(" Ann@Example.COM ");
        assert_eq!(login.identity(), "e-mail:ann@example.com");
        assert_eq!(login.shown(), "ann@example.com");
    }
}
