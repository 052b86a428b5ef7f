//! The operator commands behind `eds`: database listing and usage, key
//! revocation, export and import. They act with the operator's authority,
//! without a token; their statements live in `crate::db`.

pub mod admin;
pub mod export;
pub mod import;
pub mod lines;
pub mod move_db;

use std::io::IsTerminal;

use indicatif::{ProgressBar, ProgressStyle};

/// A command's failure: the one line printed on stderr.
#[derive(Debug)]
pub struct Failure(pub String);

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<Failure> for String {
    fn from(failure: Failure) -> String {
        failure.0
    }
}

impl From<diesel::result::Error> for Failure {
    fn from(error: diesel::result::Error) -> Failure {
        Failure(format!("database error: {error}"))
    }
}

impl From<diesel_async::pooled_connection::deadpool::PoolError> for Failure {
    fn from(error: diesel_async::pooled_connection::deadpool::PoolError) -> Failure {
        Failure(format!("cannot connect to PostgreSQL: {error}"))
    }
}

impl From<std::io::Error> for Failure {
    fn from(error: std::io::Error) -> Failure {
        Failure(error.to_string())
    }
}

/// A progress bar on stderr, drawn only when stderr is a terminal so that
/// scripts and logs never receive its redraws.
fn progress(len: u64, what: &'static str) -> ProgressBar {
    if !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new(len);
    bar.set_style(
        ProgressStyle::with_template("{msg:>10} [{bar:40}] {pos}/{len} ({eta} left)")
            .expect("a valid progress template")
            .progress_chars("=> "),
    );
    bar.set_message(what);
    bar
}
