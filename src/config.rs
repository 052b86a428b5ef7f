//! Layered configuration: `config/default.toml`, the file named by `EDS_CONFIG`,
//! then `EDS__SECTION__KEY` environment variables (and `DATABASE_URL`).

use std::path::PathBuf;

use serde::Deserialize;

pub mod docs;
mod lists;
mod maps;
use lists::list_or_comma_separated;

#[derive(Debug, Clone, Deserialize)]
pub struct Settings {
    pub http: HttpSettings,
    pub database: DatabaseSettings,
    pub data: DataSettings,
    pub auth: AuthSettings,
    pub actors: ActorSettings,
    pub storage: StorageSettings,
    pub thumbnails: ThumbnailSettings,
    pub log: LogSettings,
    pub limits: LimitSettings,
    pub metrics: MetricsSettings,
    pub mail: MailSettings,
    pub mcp: McpSettings,
    pub oauth: OAuthSettings,
    pub webhooks: WebhookSettings,
    pub changes: ChangeSettings,
    pub graphql: GraphqlSettings,
    pub docs: docs::DocsSettings,
}

#[derive(Debug, Clone, Deserialize)]
pub struct HttpSettings {
    pub bind: String,
    pub public_url: String,
    pub api_url: String,
    #[serde(deserialize_with = "list_or_comma_separated")]
    pub trusted_proxies: Vec<String>,
    pub workers: usize,
    pub json_body_limit_bytes: usize,
    pub shutdown_grace_seconds: u64,
}

impl HttpSettings {
    /// The HTTP worker threads: `workers`, or one per core when 0.
    pub fn worker_count(&self) -> usize {
        match self.workers {
            0 => std::thread::available_parallelism().map_or(2, std::num::NonZeroUsize::get),
            workers => workers,
        }
    }

    /// `{api_url}`, the OAuth issuer: `api_url`, else `public_url`; no trailing slash.
    pub fn oauth_issuer(&self) -> String {
        let issuer = if self.api_url.is_empty() {
            &self.public_url
        } else {
            &self.api_url
        };
        issuer.trim_end_matches('/').to_owned()
    }
}

#[derive(Debug, Clone, Deserialize)]
pub struct DatabaseSettings {
    pub url: String,
    pub migrate_on_start: bool,
    pub statement_timeout_ms: u64,
    pub pool_size: usize,
    pub expensive_queries: usize,
    pub answer_cache_bytes: u64,
    /// A direct (not pooled) URL for migrations and `LISTEN`; empty: `url`.
    pub direct_url: String,
    #[serde(deserialize_with = "maps::map_or_json")] // database name → cluster URL: seeds the placement table
    pub placement: std::collections::BTreeMap<String, String>,
    /// Streaming replicas that serve reads.
    #[serde(deserialize_with = "list_or_comma_separated")]
    pub replica_urls: Vec<String>,
    /// Skipped: a replica behind the primary whose last replayed commit is older.
    pub replica_max_lag_ms: u64,
}

/// GraphQL's bounds of one document (`max_depth`: introspection not counted).
#[derive(Debug, Clone, Deserialize)]
pub struct GraphqlSettings {
    pub max_depth: usize,
    /// Highest cost: a field 1 plus its selection, a type's list its `limit` times that.
    pub max_complexity: u64,
}

/// The change feed (`GET /api/{db}/changes`).
#[derive(Debug, Clone, Deserialize)]
pub struct ChangeSettings {
    pub retention_hours: u64,
    pub max_streams: usize,
    pub max_streams_per_caller: usize,
}

#[derive(Debug, Clone, Deserialize)]
pub struct DataSettings {
    pub dir: PathBuf,
}

#[derive(Clone, Deserialize)]
pub struct AuthSettings {
    pub jwt_secret: String,
    #[serde(deserialize_with = "list_or_comma_separated")]
    pub previous_jwt_secrets: Vec<String>,
    pub untyped_tokens_until: chrono::NaiveDate,
    pub revocation_check_seconds: u64,
    pub google: OidcClientSettings,
    pub apple: AppleSettings,
    pub eid: EidSettings,
    pub webauthn: WebauthnSettings,
    /// Origins a sign-in's `next` may be on; empty: any https origin and the loopback http ones.
    #[serde(deserialize_with = "list_or_comma_separated")]
    pub allowed_next_origins: Vec<String>,
}

impl AuthSettings {
    /// `allowed_next_origins` as browsers write origins (`scheme://host[:port]`).
    pub fn next_origins(&self) -> Result<Vec<String>, String> {
        origins("auth.allowed_next_origins", &self.allowed_next_origins)
    }
}

/// `list`'s URLs as origins (`scheme://host[:port]`, as sent in `Origin`); one naming none is an error of `key`.
fn origins(key: &str, list: &[String]) -> Result<Vec<String>, String> {
    list.iter()
        .map(|origin| {
            url::Url::parse(origin)
                .ok()
                .map(|url| url.origin())
                .filter(url::Origin::is_tuple)
                .map(|origin| origin.ascii_serialization())
                .ok_or_else(|| format!("{key}: {origin:?} is not an http(s) origin"))
        })
        .collect()
}

/// The passkeys' relying party.
#[derive(Clone, Deserialize)]
pub struct WebauthnSettings {
    pub rp_id: String,
    /// Where ceremonies run: the passkey pages' origin and the JSON ceremony's apps'. Empty: `http.public_url`.
    #[serde(deserialize_with = "list_or_comma_separated")]
    pub origin: Vec<String>,
}

/// An OpenID Connect provider to sign people in with; without a `client_id` it is not offered.
#[derive(Clone, Deserialize)]
pub struct OidcClientSettings {
    pub issuer: String,
    pub client_id: String,
    pub client_secret: String,
}

/// Sign in with Apple: its client secret is a JWT signed (ES256) with the team's key, made fresh for each use.
#[derive(Clone, Deserialize)]
pub struct AppleSettings {
    pub issuer: String,
    pub client_id: String,
    pub team_id: String,
    pub key_id: String,
    pub private_key: String,
}

/// An OpenID Connect eID broker, for `smart-id`, `mobile-id` and `id-card`.
#[derive(Clone, Deserialize)]
pub struct EidSettings {
    pub issuer: String,
    pub client_id: String,
    pub client_secret: String,
    /// The broker's authorization URL for one method (`{provider}` replaced); empty: the issuer's.
    pub authorize_url: String,
}

/// Secrets stay out of debug output (and so out of logs).
impl std::fmt::Debug for AuthSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AuthSettings")
            .field("untyped_tokens_until", &self.untyped_tokens_until)
            .field("revocation_check_seconds", &self.revocation_check_seconds)
            .finish_non_exhaustive()
    }
}

#[derive(Debug, Clone, Deserialize)]
pub struct ActorSettings {
    pub writer_mailbox: usize,
    pub writer_batch: usize,
    pub formula_poll_ms: u64,
    pub formula_attempts: u32,
    pub formula_retry_ms: u64,
    pub thumbnail_workers: usize,
    pub thumbnail_queue: usize,
    pub thumbnail_wait_ms: u64,
}

#[derive(Debug, Clone, Deserialize)]
pub struct StorageSettings {
    pub backend: StorageBackend,
    pub local: LocalStorageSettings,
    pub s3: S3Settings,
}

#[derive(Debug, Clone, Copy, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum StorageBackend {
    Local,
    S3,
}

#[derive(Debug, Clone, Deserialize)]
pub struct LocalStorageSettings {
    pub path: PathBuf,
    pub upload_limit_bytes: u64,
}

#[derive(Clone, Deserialize)]
pub struct S3Settings {
    pub endpoint: String,
    pub bucket: String,
    pub region: String,
    pub access_key: String,
    pub secret_key: String,
    pub path_style: bool,
    pub timeout_ms: u64,
}

/// Credentials stay out of debug output (and so out of logs).
impl std::fmt::Debug for S3Settings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("S3Settings")
            .field("endpoint", &self.endpoint)
            .field("bucket", &self.bucket)
            .field("region", &self.region)
            .field("path_style", &self.path_style)
            .field("timeout_ms", &self.timeout_ms)
            .finish_non_exhaustive()
    }
}

#[derive(Debug, Clone, Deserialize)]
pub struct ThumbnailSettings {
    pub pdfium_library: PathBuf,
    pub pdf_timeout_ms: u64,
    pub pdf_renderer: PathBuf,
}

#[derive(Debug, Clone, Deserialize)]
pub struct LogSettings {
    pub format: LogFormat,
    pub level: String,
}

#[derive(Debug, Clone, Copy, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    Pretty,
    Json,
}

#[derive(Debug, Clone, Deserialize)]
pub struct LimitSettings {
    pub enabled: bool,
    pub requests_per_minute: u32,
    pub auth_per_minute: u32,
    pub max_values_per_write: usize,
    /// Most operations one batch may hold.
    pub max_batch_operations: usize,
    pub mails_per_hour_per_recipient: u32,
    pub mails_per_hour_per_address: u32,
    pub new_databases_per_day: u32,
    /// Seconds between two invitation mails for one entity; 0 means no wait.
    pub invitation_cooldown_seconds: u64,
    pub pending_sign_ins_per_address: u32,
}

impl LimitSettings {
    /// The pending sign-in states one address may hold, `None` for no bound.
    pub fn pending_sign_ins(&self) -> Option<u32> {
        (self.enabled && self.pending_sign_ins_per_address > 0).then_some(self.pending_sign_ins_per_address)
    }
}

#[derive(Clone, Deserialize)]
pub struct MailSettings {
    pub smtp_url: String,
    pub from: String,
    pub timeout_ms: u64,
}

/// The SMTP URL may carry a password: it stays out of debug output (and so out of logs).
impl std::fmt::Debug for MailSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MailSettings")
            .field("smtp_url_set", &!self.smtp_url.is_empty())
            .field("from", &self.from)
            .field("timeout_ms", &self.timeout_ms)
            .finish()
    }
}

#[derive(Debug, Clone, Deserialize)]
pub struct McpSettings {
    /// Browser origins the MCP endpoint accepts besides the service's own.
    #[serde(deserialize_with = "list_or_comma_separated")]
    pub allowed_origins: Vec<String>,
}

impl McpSettings {
    /// Every origin the MCP endpoint accepts: the service's own (its public and API URLs) and `mcp.allowed_origins`.
    pub fn origins(&self, http: &HttpSettings) -> Result<Vec<String>, String> {
        let own = origins("http.public_url", &[http.public_url.clone(), http.oauth_issuer()])?;
        Ok([own, origins("mcp.allowed_origins", &self.allowed_origins)?].concat())
    }
}

#[derive(Debug, Clone, Deserialize)]
pub struct OAuthSettings {
    /// Client metadata documents may be on private and loopback addresses, and plain http on loopback (tests).
    pub allow_private_client_metadata: bool,
    /// PEM roots trusted beside the public ones when fetching client metadata documents; empty: none.
    pub client_metadata_ca_file: String,
}

#[derive(Debug, Clone, Deserialize)]
pub struct WebhookSettings {
    /// How long an event is retried before its webhook is parked (a fraction in tests).
    pub retry_hours: f64,
    /// Limit of one delivery attempt, connection included.
    pub timeout_ms: u64,
    /// Webhooks one database may hold.
    pub max_per_database: usize,
    /// Targets on loopback, private and other internal addresses allowed (tests, closed networks).
    pub allow_private_targets: bool,
    /// The first retry's delay; each further one doubles it.
    pub retry_base_ms: u64,
    /// How often an idle delivery worker looks for due events.
    pub poll_ms: u64,
    /// How long delivery attempts stay readable at `/deliveries`.
    pub attempt_retention_hours: u64,
}

#[derive(Clone, Deserialize)]
pub struct MetricsSettings {
    pub token: String,
}

/// The token stays out of debug output (and so out of logs).
impl std::fmt::Debug for MetricsSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MetricsSettings")
            .field("token_set", &!self.token.is_empty())
            .finish()
    }
}

impl Settings {
    /// Reads the layers from the working directory and the process environment.
    pub fn load() -> Result<Settings, config::ConfigError> {
        Self::load_with(std::iter::empty())
    }

    /// As [`Settings::load`], with explicit overrides applied last (dotted keys).
    pub fn load_with<'a>(
        overrides: impl IntoIterator<Item = (&'a str, String)>,
    ) -> Result<Settings, config::ConfigError> {
        let mut builder =
            config::Config::builder().add_source(config::File::with_name("config/default.toml").required(true));
        if let Ok(path) = std::env::var("EDS_CONFIG") {
            builder = builder.add_source(config::File::with_name(&path).required(true));
        }
        builder = builder.add_source(
            config::Environment::with_prefix("EDS")
                .prefix_separator("__")
                .separator("__")
                .try_parsing(true),
        );
        if let Ok(url) = std::env::var("DATABASE_URL") {
            builder = builder.set_override("database.url", url)?;
        }
        for (key, value) in overrides {
            builder = builder.set_override(key, value)?;
        }
        builder.build()?.try_deserialize()
    }
}
