//! Access tokens: `GET /api/auth` and `GET /api/auth/refresh`.

use serde::Serialize;
use serde_json::{Value as Json, json};
use utoipa::ToSchema;

/// `GET /api/auth` and `GET /api/auth/refresh`.
#[derive(Serialize, ToSchema)]
pub struct TokenResponse<'a> {
    /// The databases the token reaches.
    pub accounts: Vec<Account<'a>>,
    pub user: TokenUser,
    /// The access token (JWT).
    pub token: String,
    /// When the token expires (ISO 8601).
    pub expires: String,
    /// `invite` when an invitation was not accepted: the login is another person in that database.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub conflict: Option<&'static str>,
}

#[derive(Serialize, ToSchema)]
pub struct Account<'a> {
    /// The database name.
    #[serde(rename = "_id")]
    pub id: &'a str,
    /// The database name.
    pub name: &'a str,
    pub user: AccountUser<'a>,
}

/// The caller's person in one database.
#[derive(Serialize, ToSchema)]
pub struct AccountUser<'a> {
    #[serde(rename = "_id")]
    pub id: &'a str,
    pub name: Option<String>,
}

#[derive(Serialize, ToSchema)]
pub struct TokenUser {
    /// The person's name in the first database (by name) that has one.
    pub name: Option<String>,
}

pub fn token_example() -> Json {
    json!({
        "accounts": [{"_id": "demo", "name": "demo", "user": {"_id": "6571f3a4c2b9e8d7f6a5b402", "name": "Demo Owner"}}],
        "user": {"name": "Demo Owner"},
        "token": "eyJhbGciOiJIUzI1NiJ9.eyJ1c2UiOiJhY2Nlc3MifQ.c2lnbmF0dXJl",
        "expires": "2026-11-21T22:00:00.000Z",
    })
}
