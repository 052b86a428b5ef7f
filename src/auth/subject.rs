//! What a token's `sub` names: a provider login, an API key or an
//! invitation, written `kind:<first>:<rest>` (the rest may hold colons).

use std::fmt;
use std::str::FromStr;

const LOGIN: &str = "login";
const API_KEY: &str = "api_key";
const INVITE: &str = "invite";

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Subject {
    /// `login:<provider>:<uid>`: a login an identity provider vouched for.
    Login { provider: String, uid: String },
    /// `api_key:<db>:<value id>`: the API key stored as that value.
    ApiKey { db: String, value_id: String },
    /// `invite:<db>:<value id>`: an invitation to the person holding that value.
    Invite { db: String, value_id: String },
}

impl Subject {
    /// What a provider login's stored login method is found by
    /// (`<provider>:<uid>`); `None` for other subjects.
    pub fn login_identity(&self) -> Option<String> {
        match self {
            Subject::Login { provider, uid } => Some(format!("{provider}:{uid}")),
            Subject::ApiKey { .. } | Subject::Invite { .. } => None,
        }
    }
}

impl fmt::Display for Subject {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (kind, first, rest) = match self {
            Subject::Login { provider, uid } => (LOGIN, provider, uid),
            Subject::ApiKey { db, value_id } => (API_KEY, db, value_id),
            Subject::Invite { db, value_id } => (INVITE, db, value_id),
        };
        write!(f, "{kind}:{first}:{rest}")
    }
}

/// A `sub` that names no known kind of subject.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MalformedSubject;

impl fmt::Display for MalformedSubject {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a token subject is `login:`, `api_key:` or `invite:` and two parts")
    }
}

impl std::error::Error for MalformedSubject {}

impl FromStr for Subject {
    type Err = MalformedSubject;

    fn from_str(sub: &str) -> Result<Subject, MalformedSubject> {
        let (kind, first, rest) = split(sub)?;
        let (first, rest) = (first.to_owned(), rest.to_owned());
        match kind {
            LOGIN => Ok(Subject::Login {
                provider: first,
                uid: rest,
            }),
            API_KEY => Ok(Subject::ApiKey {
                db: first,
                value_id: rest,
            }),
            INVITE => Ok(Subject::Invite {
                db: first,
                value_id: rest,
            }),
            _ => Err(MalformedSubject),
        }
    }
}

/// `sub`'s kind and its two parts, borrowed from it.
fn split(sub: &str) -> Result<(&str, &str, &str), MalformedSubject> {
    let (kind, parts) = sub.split_once(':').ok_or(MalformedSubject)?;
    let (first, rest) = parts.split_once(':').ok_or(MalformedSubject)?;
    Ok((kind, first, rest))
}

/// The database and value id an invitation's `sub` names, borrowed from it.
pub fn invitation_of(sub: &str) -> Option<(&str, &str)> {
    match split(sub).ok()? {
        (INVITE, db, value_id) => Some((db, value_id)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn both_ways(subject: Subject, written: &str) {
        assert_eq!(subject.to_string(), written);
        assert_eq!(written.parse::<Subject>(), Ok(subject));
    }

    #[test]
    fn a_login_subject_is_written_and_read_with_colons_kept_in_its_uid() {
        let subject = Subject::Login {
            provider: "passkey".into(),
            uid: "a:b".into(),
        };
        assert_eq!(subject.login_identity().as_deref(), Some("passkey:a:b"));
        both_ways(subject, "login:passkey:a:b");
    }

    #[test]
    fn an_api_key_subject_is_written_and_read() {
        let subject = Subject::ApiKey {
            db: "demo".into(),
            value_id: "v1".into(),
        };
        assert_eq!(subject.login_identity(), None);
        both_ways(subject, "api_key:demo:v1");
    }

    #[test]
    fn an_invite_subject_is_written_and_read() {
        let subject = Subject::Invite {
            db: "demo".into(),
            value_id: "v2".into(),
        };
        assert_eq!(subject.login_identity(), None);
        assert_eq!(invitation_of("invite:demo:v2"), Some(("demo", "v2")));
        assert_eq!(invitation_of("api_key:demo:v2"), None);
        both_ways(subject, "invite:demo:v2");
    }

    #[test]
    fn a_malformed_subject_is_refused() {
        for sub in [
            "",
            "x",
            "login",
            "login:e-mail",
            "api_key:demo",
            "person:demo:v1",
            "oauth",
        ] {
            assert_eq!(sub.parse::<Subject>(), Err(MalformedSubject), "{sub}");
        }
    }
}
