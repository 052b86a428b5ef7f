//! What the webhook checks of a write need: the settings, and the names of
//! the types written to.

use dashmap::DashMap;
use diesel_async::AsyncPgConnection;

use crate::config::WebhookSettings;
use crate::db::webhooks;
use crate::error::ApiError;

/// The webhook settings and what the checks learned: the names of types
/// written to (a type's id never changes; names looked up are cached, up to
/// a bound).
pub struct WebhookRules {
    pub settings: WebhookSettings,
    type_names: DashMap<(String, String), Option<String>>,
}

/// Type names remembered at most; beyond, they are looked up again.
const KNOWN_TYPE_NAMES: usize = 10_000;

impl WebhookRules {
    pub fn new(settings: WebhookSettings) -> WebhookRules {
        WebhookRules {
            settings,
            type_names: DashMap::new(),
        }
    }

    /// The name of type `type_id` of database `db`.
    pub(super) async fn type_name(
        &self,
        conn: &mut AsyncPgConnection,
        db: &str,
        type_id: &str,
    ) -> Result<Option<String>, ApiError> {
        let key = (db.to_owned(), type_id.to_owned());
        if let Some(name) = self.type_names.get(&key) {
            return Ok(name.clone());
        }
        let name = webhooks::name_of(conn, db, type_id).await?;
        if self.type_names.len() >= KNOWN_TYPE_NAMES {
            self.type_names.clear();
        }
        self.type_names.insert(key, name.clone());
        Ok(name)
    }
}
