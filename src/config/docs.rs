//! The `[docs]` section: where the built guide is.

use std::path::PathBuf;

use serde::Deserialize;

#[derive(Debug, Clone, Deserialize)]
pub struct DocsSettings {
    /// The guide as `make docs` builds it, served at `/guide/`.
    pub guide_dir: PathBuf,
}
